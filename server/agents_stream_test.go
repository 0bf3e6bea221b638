package server_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/copydesk/copydesk/server"
	"github.com/copydesk/copydesk/store"
)

// streamAgent starts a streamed execution in the background and returns a
// channel with its events once the stream ends.
func streamAgent(t *testing.T, url, tok string, agentID int64) <-chan []agEvent {
	t.Helper()
	done := make(chan []agEvent, 1)
	go func() {
		_, _, evs := agPostStream(t, fmt.Sprintf("%s/api/agents/%d/execute", url, agentID), tok, map[string]any{"input": "write", "stream": true})
		done <- evs
	}()
	return done
}

func waitEvents(t *testing.T, ch <-chan []agEvent) []agEvent {
	t.Helper()
	select {
	case evs := <-ch:
		return evs
	case <-time.After(agBound):
		t.Fatalf("the stream did not end within %s", agBound)
		return nil
	}
}

// runningRun finds the one running run of an agent.
func runningRun(t *testing.T, e *env, tok string, agentID int64) int64 {
	t.Helper()
	var id int64
	agWaitFor(t, "a running run", func() bool {
		items := agItems(e.do(t, "GET", fmt.Sprintf("/api/agents/%d/runs?status=running", agentID), tok, nil).Data())
		if len(items) == 1 {
			id = agID(items[0])
			return true
		}
		return false
	})
	return id
}

func TestStreamedRunCancel(t *testing.T) {
	t.Parallel()
	f := agSetup(t)
	prov := agBlockingOpenAI(t)
	agConfigure(t, f.e, prov.srv.URL+"/v1")
	agRunJobs(t, f.e) // streamed runs are carried out by the job runner
	srv := httptest.NewServer(f.e.h)
	defer srv.Close()
	agent := agCreate(t, f.e, f.edATok, map[string]any{"name": "Writer", "kind": "writer", "environment_id": f.envA})
	events := streamAgent(t, srv.URL, f.edATok, agID(agent))
	agWaitChan(t, prov.started, "the provider call")
	runID := runningRun(t, f.e, f.edATok, agID(agent))
	if r := f.e.do(t, "POST", fmt.Sprintf("/api/agents/runs/%d/cancel", runID), f.edATok, nil); r.Code != 200 || r.Data()["status"] != "cancelled" {
		t.Fatalf("cancel: %d %s", r.Code, r.Body)
	}
	agWaitChan(t, prov.gone, "the provider call being cancelled")
	evs := waitEvents(t, events)
	if names := agEventNames(evs); names != "run,error" || !strings.Contains(evs[len(evs)-1].data, "cancelled by alice") {
		t.Fatalf("events: %s %v", names, evs)
	}
	run := f.e.do(t, "GET", fmt.Sprintf("/api/agents/runs/%d", runID), f.edATok, nil).Data()
	if run["status"] != "cancelled" || !strings.Contains(run["error"].(string), "alice") {
		t.Fatalf("run: %v", run)
	}
}

func TestStreamedRunEndsWithItsSession(t *testing.T) {
	t.Parallel()
	f := agSetup(t, func(c *server.Config) { c.StreamHeartbeat = 30 * time.Millisecond })
	prov := agBlockingOpenAI(t)
	agConfigure(t, f.e, prov.srv.URL+"/v1")
	agRunJobs(t, f.e) // streamed runs are carried out by the job runner
	srv := httptest.NewServer(f.e.h)
	defer srv.Close()
	agent := agCreate(t, f.e, f.edATok, map[string]any{"name": "Writer", "kind": "writer", "environment_id": f.envA})
	streamTok := f.e.login(t, "alice@example.com", "password-alice")
	events := streamAgent(t, srv.URL, streamTok, agID(agent))
	agWaitChan(t, prov.started, "the provider call")
	runID := runningRun(t, f.e, f.edATok, agID(agent))
	// Revoke the stream's session from another one.
	for _, it := range agItems(f.e.do(t, "GET", "/api/auth/sessions", streamTok, nil).Data()) {
		if it["current"] == true {
			if r := f.e.do(t, "DELETE", fmt.Sprintf("/api/auth/sessions/%d", agID(it)), f.edATok, nil); r.Code != 200 {
				t.Fatalf("revoke: %d %s", r.Code, r.Body)
			}
		}
	}
	agWaitChan(t, prov.gone, "the provider call ending with the session")
	evs := waitEvents(t, events)
	if last := evs[len(evs)-1]; last.name != "error" {
		t.Fatalf("events: %s", agEventNames(evs))
	}
	run := f.e.do(t, "GET", fmt.Sprintf("/api/agents/runs/%d", runID), f.edATok, nil).Data()
	if run["status"] != "failed" || !strings.Contains(run["error"].(string), "session") {
		t.Fatalf("run: %v", run)
	}
}

// Stopping the server ends streamed runs (recorded as interrupted) instead
// of waiting for them; at the next start, runs a dead process left running
// are failed, never left running.
func TestStreamsAndOrphanRunsAcrossStops(t *testing.T) {
	t.Parallel()
	f := agSetup(t, func(c *server.Config) { c.HTTPAddr = "127.0.0.1:0"; c.NoScheduler = true })
	prov := agBlockingOpenAI(t)
	agConfigure(t, f.e, prov.srv.URL+"/v1")
	ctx := context.Background()
	agent := agCreate(t, f.e, f.edATok, map[string]any{"name": "Writer", "kind": "writer", "environment_id": f.envA})

	// A run a crash left running, with no job to finish it.
	orphan, err := f.e.app.DB.CreateRun(ctx, store.NewRun{AgentID: agID(agent), EnvironmentID: &f.envA, UserID: &f.edA.ID, Input: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.e.app.DB.StartRun(ctx, orphan.ID); err != nil {
		t.Fatal(err)
	}

	stop := serveApp(t, f.e)
	url := "http://" + f.e.app.Addr()
	agWaitFor(t, "the server", func() bool {
		r := f.e.do(t, "GET", fmt.Sprintf("/api/agents/runs/%d", orphan.ID), f.edATok, nil)
		return r.Code == 200 && r.Data()["status"] == "failed"
	})
	if r := f.e.do(t, "GET", fmt.Sprintf("/api/agents/runs/%d", orphan.ID), f.edATok, nil).Data(); !strings.Contains(r["error"].(string), "restart") {
		t.Fatalf("orphan run: %v", r)
	}

	events := streamAgent(t, url, f.edATok, agID(agent))
	agWaitChan(t, prov.started, "the provider call")
	runID := runningRun(t, f.e, f.edATok, agID(agent))
	if !stop("the server waited for the stream instead of ending it") {
		t.FailNow()
	}
	waitEvents(t, events)
	run, err := f.e.app.DB.RunByID(ctx, runID)
	if err != nil || run.Status != store.RunCancelled || !strings.Contains(run.Error, "server stopped") {
		t.Fatalf("streamed run after the stop: %+v %v", run, err)
	}
}

// A client that goes away takes its streamed run with it: the run's job is
// cancelled, which cuts the provider call.
func TestStreamedRunEndsWhenItsClientGoes(t *testing.T) {
	f := agSetup(t)
	prov := agBlockingOpenAI(t)
	agConfigure(t, f.e, prov.srv.URL+"/v1")
	agRunJobs(t, f.e)
	srv := httptest.NewServer(f.e.h)
	defer srv.Close()
	agent := agCreate(t, f.e, f.edATok, map[string]any{"name": "Writer", "kind": "writer", "environment_id": f.envA})
	ctx, hangUp := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", fmt.Sprintf("%s/api/agents/%d/execute", srv.URL, agID(agent)),
		strings.NewReader(`{"input":"write","stream":true}`))
	req.Header.Set("Authorization", "Bearer "+f.edATok)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	agWaitChan(t, prov.started, "the provider call")
	runID := runningRun(t, f.e, f.edATok, agID(agent))
	hangUp()
	agWaitChan(t, prov.gone, "the provider call ending with its client")
	run := agWaitRun(t, f.e, f.edATok, runID)
	if run["status"] != "cancelled" || !strings.Contains(run["error"].(string), "client disconnected") {
		t.Fatalf("run: %v", run)
	}
}

// A restore does not wait for a streamed run: the run's job yields, the
// stream ends with an error that says why, and the restore is quick.
func TestRestoreDoesNotWaitForAStreamedRun(t *testing.T) {
	restoresOnSQLite(t)
	f := agSetup(t)
	_, root := f.e.user(t, "super", store.RoleSuperAdmin)
	prov := agBlockingOpenAI(t)
	agConfigure(t, f.e, prov.srv.URL+"/v1")
	agRunJobs(t, f.e)
	srv := httptest.NewServer(f.e.h)
	defer srv.Close()
	b := f.e.do(t, "POST", "/api/backup", root, nil)
	if b.Code != 201 {
		t.Fatalf("backup: %d %s", b.Code, b.Body)
	}
	agent := agCreate(t, f.e, f.edATok, map[string]any{"name": "Writer", "kind": "writer", "environment_id": f.envA})
	events := streamAgent(t, srv.URL, f.edATok, agID(agent))
	agWaitChan(t, prov.started, "the provider call")
	begin := time.Now()
	if r := f.e.do(t, "POST", "/api/backup/"+b.Data()["name"].(string)+"/restore", root, nil); r.Code != 200 {
		t.Fatalf("restore: %d %s", r.Code, r.Body)
	}
	if took := time.Since(begin); took > 10*time.Second {
		t.Fatalf("the restore took %v", took)
	}
	agWaitChan(t, prov.gone, "the provider call being cut")
	evs := waitEvents(t, events)
	if last := evs[len(evs)-1]; agEventNames(evs) != "run,error" || !strings.Contains(last.data, "restore") {
		t.Fatalf("events: %v", evs)
	}
}
