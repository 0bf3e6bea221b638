package server_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
)

// Access removed is access removed (issue 9, item 8): what a user may no
// longer see is neither delivered to them nor shown to them.

// A requester removed from the run's environment while it runs does not get
// the run's notification (with its output); a run in an environment they
// still have notifies them as usual.
func TestRunNotificationNeedsTheEnvironmentAtDelivery(t *testing.T) {
	t.Parallel()
	f := agSetup(t)
	e := f.e
	started, release := make(chan struct{}, 4), make(chan struct{})
	srv := agOpenAI(t, func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		select {
		case <-release:
			agCompletion(w, "the secret output")
		case <-r.Context().Done():
		}
	})
	agConfigure(t, e, srv.URL+"/v1")
	agRunJobs(t, e)
	inA := agID(agCreate(t, e, f.edATok, map[string]any{"environment_id": f.envA, "name": "In A", "kind": "writer"}))
	inC := agID(agCreate(t, e, f.edATok, map[string]any{"environment_id": f.envC, "name": "In C", "kind": "writer"}))
	runA := agID(agExecute(t, e, f.edATok, inA, map[string]any{"input": "write"}))
	agWaitChan(t, started, "the run in A reaching the provider")
	if _, err := e.app.DB.SetUserEnvironments(context.Background(), f.edA.ID, []int64{f.envC}); err != nil {
		t.Fatal(err)
	}
	runC := agID(agExecute(t, e, f.edATok, inC, map[string]any{"input": "write"}))
	close(release)
	agWaitJob(t, e, runA)
	agWaitJob(t, e, runC)
	agWaitNotification(t, e, f.edATok, runC, "run.succeeded")
	if n := agNotification(t, e, f.edATok, runA); n != nil {
		t.Fatalf("BUG: removed from A mid-run, the requester still got the run's notification: %v", n)
	}
	if r := e.do(t, "GET", fmt.Sprintf("/api/agents/runs/%d", runA), f.edATok, nil); r.Code != 404 {
		t.Errorf("the run in A after losing A: %d (want 404)", r.Code)
	}
}

// Editors see and change only the assignments to environments they see;
// the others are kept.
func TestAssignmentsOutsideTheScopeAreHiddenAndKept(t *testing.T) {
	t.Parallel()
	f := agSetup(t)
	e := f.e
	id := agID(agCreate(t, e, f.edATok, map[string]any{"environment_id": f.envA, "name": "Shared", "kind": "writer"}))
	p := fmt.Sprintf("/api/agents/%d/assignments", id)
	ids := func(v any) string { return fmt.Sprint(v) }
	want := func(envs ...int64) string {
		out := []any{}
		for _, id := range envs {
			out = append(out, float64(id))
		}
		return fmt.Sprint(out)
	}
	if r := e.do(t, "PUT", p, f.adminTok, map[string]any{"environment_ids": []int64{f.envB, f.envC}}); r.Code != 200 ||
		ids(r.Data()["environment_ids"]) != want(f.envB, f.envC) {
		t.Fatalf("admin assigns to B and C: %d %s", r.Code, r.Body)
	}
	// A's editor (A and C) sees only C, everywhere the agent is shown.
	if r := e.do(t, "GET", p, f.edATok, nil); r.Code != 200 || ids(r.Data()["environment_ids"]) != want(f.envC) {
		t.Errorf("BUG: editor reads assignments: %d %s (want only C)", r.Code, r.Body)
	}
	if r := e.do(t, "GET", fmt.Sprintf("/api/agents/%d", id), f.edATok, nil); r.Code != 200 || ids(r.Data()["assignments"]) != want(f.envC) {
		t.Errorf("BUG: editor reads the agent: %d %s (want only C)", r.Code, r.Body)
	}
	for _, it := range agItems(e.do(t, "GET", "/api/agents?per_page=100", f.edATok, nil).Data()) {
		if agID(it) == id && ids(it["assignments"]) != want(f.envC) {
			t.Errorf("BUG: editor lists the agent with assignments %v (want only C)", it["assignments"])
		}
	}
	if r := e.do(t, "PUT", fmt.Sprintf("/api/agents/%d", id), f.edATok, map[string]any{"description": "d"}); r.Code != 200 ||
		ids(r.Data()["assignments"]) != want(f.envC) {
		t.Errorf("BUG: editor updates the agent: %d %s (want only C)", r.Code, r.Body)
	}
	// Clearing clears the visible part only.
	if r := e.do(t, "PUT", p, f.edATok, map[string]any{"environment_ids": []int64{}}); r.Code != 200 ||
		ids(r.Data()["environment_ids"]) != want() {
		t.Fatalf("editor clears: %d %s", r.Code, r.Body)
	}
	if r := e.do(t, "GET", p, f.adminTok, nil); ids(r.Data()["environment_ids"]) != want(f.envB) {
		t.Errorf("BUG: the editor's clear removed B, which they cannot see: %s", r.Body)
	}
	if r := e.do(t, "GET", fmt.Sprintf("/api/agents/%d", id), f.edBTok, nil); r.Code != 200 || ids(r.Data()["assignments"]) != want(f.envB) {
		t.Errorf("B's editor after A's editor cleared: %d %s", r.Code, r.Body)
	}
	if r := e.do(t, "PUT", p, f.edATok, map[string]any{"environment_ids": []int64{f.envC}}); r.Code != 200 ||
		ids(r.Data()["environment_ids"]) != want(f.envC) {
		t.Fatalf("editor assigns to C: %d %s", r.Code, r.Body)
	}
	if r := e.do(t, "GET", p, f.adminTok, nil); ids(r.Data()["environment_ids"]) != want(f.envB, f.envC) {
		t.Errorf("admin sees every assignment: %s", r.Body)
	}
}
