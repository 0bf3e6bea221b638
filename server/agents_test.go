package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/copydesk/copydesk/server"
	"github.com/copydesk/copydesk/server/agent"
	"github.com/copydesk/copydesk/server/notify"
	"github.com/copydesk/copydesk/store"
	"github.com/copydesk/copydesk/store/storetest"
)

// Tests of /api/agents: CRUD, assignments, tenancy, and runs executed by the
// job runner (or streamed) against local fake providers. Identifiers are
// prefixed "ag" to keep clear of the other test files of the package.

// agBound bounds every wait for background work; it is generous on purpose:
// nothing here asserts how fast anything happens.
const agBound = 20 * time.Second

// agFixture is an app with two environments and a few users.
type agFixture struct {
	e                      *env
	envA, envB, envC       int64
	admin, edA, edB, viewA *store.User
	adminTok, edATok       string
	edBTok, viewATok       string
}

// agSetup builds an app on the real clock (the job runner's retries and
// delayed jobs compare run_after with DB.Now), with environments A, B and C:
// editor edA has A and C, editor edB has B, viewer viewA has A.
func agSetup(t *testing.T, opts ...envOption) *agFixture {
	t.Helper()
	e := newEnv(t, opts...)
	e.app.DB.Now = func() time.Time { return time.Now().UTC() }
	ctx := context.Background()
	f := &agFixture{e: e}
	for _, p := range []struct {
		id   *int64
		name string
	}{{&f.envA, "A"}, {&f.envB, "B"}, {&f.envC, "C"}} {
		env, err := e.app.DB.CreateEnvironment(ctx, store.NewEnvironment{Name: "Site " + p.name, Slug: "site-" + strings.ToLower(p.name)})
		if err != nil {
			t.Fatal(err)
		}
		*p.id = env.ID
	}
	f.admin, f.adminTok = e.user(t, "root", store.RoleAdmin)
	f.edA, f.edATok = e.user(t, "alice", store.RoleEditor)
	f.edB, f.edBTok = e.user(t, "bob", store.RoleEditor)
	f.viewA, f.viewATok = e.user(t, "victor", store.RoleViewer)
	for u, envs := range map[*store.User][]int64{f.edA: {f.envA, f.envC}, f.edB: {f.envB}, f.viewA: {f.envA}} {
		if _, err := e.app.DB.SetUserEnvironments(ctx, u.ID, envs); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// agConfigure makes a global OpenAI credential pointing at baseURL (a
// local fake) the AI content settings' default, with model gpt-4o-mini.
func agConfigure(t *testing.T, e *env, baseURL string) *store.Credential {
	t.Helper()
	cred := e.credential(t, "openai", baseURL, "gpt-4o-mini", nil)
	model := "gpt-4o-mini"
	if _, err := e.app.DB.PutAISettings(context.Background(), store.AISettings{CredentialID: &cred.ID, Model: &model}); err != nil {
		t.Fatal(err)
	}
	return cred
}

// agRunJobs starts the app's job runner until the test ends.
func agRunJobs(t *testing.T, e *env) {
	t.Helper()
	startJobs(t, e)
}

func agID(m map[string]any) int64 {
	v, ok := m["id"].(float64)
	if !ok {
		panic(fmt.Sprintf("no id in %v", m))
	}
	return int64(v)
}

func agItems(m map[string]any) []map[string]any {
	raw, _ := m["items"].([]any)
	out := make([]map[string]any, 0, len(raw))
	for _, it := range raw {
		out = append(out, it.(map[string]any))
	}
	return out
}

func agNum(v any) float64 {
	f, _ := v.(float64)
	return f
}

// agCreate creates an agent and expects 201.
func agCreate(t *testing.T, e *env, tok string, body map[string]any) map[string]any {
	t.Helper()
	r := e.do(t, "POST", "/api/agents", tok, body)
	if r.Code != 201 {
		t.Fatalf("create agent %v: %d %s", body, r.Code, r.Body)
	}
	return r.Data()
}

// agExecute asks for a run and expects 202 with a queued run.
func agExecute(t *testing.T, e *env, tok string, agentID int64, body map[string]any) map[string]any {
	t.Helper()
	r := e.do(t, "POST", fmt.Sprintf("/api/agents/%d/execute", agentID), tok, body)
	if r.Code != 202 {
		t.Fatalf("execute agent %d: %d %s", agentID, r.Code, r.Body)
	}
	run := r.Data()
	if run["status"] != "queued" {
		t.Fatalf("execute answered a run that is not queued: %v", run)
	}
	return run
}

// agWaitRun polls a run until it reaches a final status.
func agWaitRun(t *testing.T, e *env, tok string, runID int64) map[string]any {
	t.Helper()
	deadline := time.Now().Add(agBound)
	var last string
	for time.Now().Before(deadline) {
		r := e.do(t, "GET", fmt.Sprintf("/api/agents/runs/%d", runID), tok, nil)
		if r.Code != 200 {
			t.Fatalf("get run %d: %d %s", runID, r.Code, r.Body)
		}
		switch d := r.Data(); d["status"] {
		case "succeeded", "failed", "cancelled":
			return d
		default:
			last = r.Body
		}
		time.Sleep(15 * time.Millisecond)
	}
	t.Fatalf("run %d did not finish within %s (stuck?): %s", runID, agBound, last)
	return nil
}

// agWaitFor polls cond until it holds.
func agWaitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(agBound)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(15 * time.Millisecond)
	}
	t.Fatalf("%s: not within %s", what, agBound)
}

// agNotification returns the user's notification that links to a run, or nil.
func agNotification(t *testing.T, e *env, tok string, runID int64) map[string]any {
	t.Helper()
	if ns := notesLinked(t, e, tok, fmt.Sprintf("/api/agents/runs/%d", runID)); len(ns) > 0 {
		return ns[0]
	}
	return nil
}

// agWaitNotification waits for the run's notification and checks its kind.
func agWaitNotification(t *testing.T, e *env, tok string, runID int64, kind string) map[string]any {
	t.Helper()
	var n map[string]any
	agWaitFor(t, fmt.Sprintf("a notification for run %d", runID), func() bool {
		n = agNotification(t, e, tok, runID)
		return n != nil
	})
	if n["kind"] != kind {
		t.Errorf("notification of run %d: kind %v, want %s: %v", runID, n["kind"], kind, n)
	}
	return n
}

// agUsage lists usage events as seen by tok.
func agUsage(t *testing.T, e *env, tok, query string) (int, []map[string]any) {
	t.Helper()
	r := e.do(t, "GET", "/api/token-analytics/usage?per_page=200"+query, tok, nil)
	if r.Code != 200 {
		t.Fatalf("usage%s: %d %s", query, r.Code, r.Body)
	}
	return int(agNum(r.Data()["total"])), agItems(r.Data())
}

// agJobOfRun returns the job that executes a run.
func agJobOfRun(t *testing.T, e *env, runID int64) *store.Job {
	t.Helper()
	ctx := context.Background()
	run, err := e.app.DB.RunByID(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	if run.JobID == nil {
		t.Fatalf("run %d has no job", runID)
	}
	job, err := e.app.DB.JobByID(ctx, *run.JobID)
	if err != nil {
		t.Fatal(err)
	}
	return job
}

// agWaitJob waits for the job of a run to reach a final status: a run
// finishes a little before its job does.
func agWaitJob(t *testing.T, e *env, runID int64) *store.Job {
	t.Helper()
	var job *store.Job
	agWaitFor(t, fmt.Sprintf("the job of run %d ends", runID), func() bool {
		job = agJobOfRun(t, e, runID)
		return job.Status.Final()
	})
	return job
}

// agOpenAI is a local server speaking OpenAI's chat completions wire format
// with a handler the test writes; anything else is 404.
func agOpenAI(t *testing.T, chat http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "POST" && strings.HasSuffix(r.URL.Path, "/chat/completions") {
			// Read the body first: the server notices a client that goes
			// away (and cancels r.Context()) only once it has.
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			chat(w, r)
			return
		}
		w.WriteHeader(404)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// agCompletion writes a non-streamed chat completion.
func agCompletion(w http.ResponseWriter, text string) {
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`, text)
}

// agBlocking is a provider whose calls block until released or until the
// caller gives up.
type agBlocking struct {
	srv      *httptest.Server
	started  chan struct{} // a token per call that arrived
	gone     chan struct{} // a token per call whose caller went away
	release  chan struct{}
	requests atomic.Int32
}

func agBlockingOpenAI(t *testing.T) *agBlocking {
	t.Helper()
	b := &agBlocking{started: make(chan struct{}, 16), gone: make(chan struct{}, 16), release: make(chan struct{})}
	b.srv = agOpenAI(t, func(w http.ResponseWriter, r *http.Request) {
		b.requests.Add(1)
		b.started <- struct{}{}
		select {
		case <-b.release:
			agCompletion(w, "released")
		case <-r.Context().Done():
			b.gone <- struct{}{}
		}
	})
	var once sync.Once
	// Registered after srv.Close, so it runs before it: Close waits for
	// the blocked handlers.
	t.Cleanup(func() { once.Do(func() { close(b.release) }) })
	return b
}

func agWaitChan(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(agBound):
		t.Fatalf("%s: not within %s", what, agBound)
	}
}

// ---- CRUD ----

func TestAgentCRUD(t *testing.T) {
	t.Parallel()
	f := agSetup(t)
	e := f.e
	globalCred := e.credential(t, "openai", "http://127.0.0.1:1/v1", "gpt-4o-mini", nil)
	credB := e.credential(t, "openai", "http://127.0.0.1:1/v1", "gpt-4o-mini", &f.envB)
	credA := e.credential(t, "openai", "http://127.0.0.1:1/v1", "gpt-4o", &f.envA)
	wp := e.credential(t, "wordpress", "http://127.0.0.1:1", "", nil)

	writer := agCreate(t, e, f.edATok, map[string]any{"environment_id": f.envA, "name": "  Blog writer ", "description": "Writes posts",
		"kind": "writer", "credential_id": credA.ID, "model": "gpt-4o", "system_prompt": "You write.", "temperature": 0.4, "max_tokens": 800})
	if writer["name"] != "Blog writer" || agNum(writer["environment_id"]) != float64(f.envA) || writer["kind"] != "writer" ||
		agNum(writer["credential_id"]) != float64(credA.ID) || writer["model"] != "gpt-4o" || writer["system_prompt"] != "You write." ||
		agNum(writer["temperature"]) != 0.4 || agNum(writer["max_tokens"]) != 800 || writer["is_active"] != true ||
		writer["description"] != "Writes posts" {
		t.Fatalf("created agent: %v", writer)
	}
	if as, ok := writer["assignments"].([]any); !ok || len(as) != 0 {
		t.Fatalf("a new agent has no assignments ([]): %v", writer["assignments"])
	}
	writerID := agID(writer)

	global := agCreate(t, e, f.adminTok, map[string]any{"name": "House editor", "kind": "editor", "credential_id": globalCred.ID})
	if global["environment_id"] != nil {
		t.Fatalf("an admin's agent without environment_id is global: %v", global)
	}
	globalID := agID(global)

	t.Run("CreateRefused", func(t *testing.T) {
		cases := []struct {
			name  string
			tok   string
			body  map[string]any
			code  int
			field string
		}{
			{"editor without environment", f.edATok, map[string]any{"name": "X", "kind": "writer"}, 422, "environment_id"},
			{"editor in an environment not granted", f.edATok, map[string]any{"environment_id": f.envB, "name": "X", "kind": "writer"}, 422, "environment_id"},
			{"unknown environment", f.adminTok, map[string]any{"environment_id": 99999, "name": "X", "kind": "writer"}, 422, "environment_id"},
			{"credential of another environment", f.edATok, map[string]any{"environment_id": f.envA, "name": "X", "kind": "writer", "credential_id": credB.ID}, 422, "credential_id"},
			{"environment credential on a global agent", f.adminTok, map[string]any{"name": "X", "kind": "writer", "credential_id": credB.ID}, 422, "credential_id"},
			{"wordpress credential", f.edATok, map[string]any{"environment_id": f.envA, "name": "X", "kind": "writer", "credential_id": wp.ID}, 422, "credential_id"},
			{"unknown credential", f.edATok, map[string]any{"environment_id": f.envA, "name": "X", "kind": "writer", "credential_id": 99999}, 422, "credential_id"},
			{"invalid kind", f.edATok, map[string]any{"environment_id": f.envA, "name": "X", "kind": "poet"}, 422, "kind"},
			{"temperature 3", f.edATok, map[string]any{"environment_id": f.envA, "name": "X", "kind": "writer", "temperature": 3}, 422, "temperature"},
			{"max_tokens 0", f.edATok, map[string]any{"environment_id": f.envA, "name": "X", "kind": "writer", "max_tokens": 0}, 422, "max_tokens"},
			{"blank name", f.edATok, map[string]any{"environment_id": f.envA, "name": "   ", "kind": "writer"}, 422, "name"},
			{"no name", f.edATok, map[string]any{"environment_id": f.envA, "kind": "writer"}, 422, "name"},
			{"unknown field", f.edATok, map[string]any{"environment_id": f.envA, "name": "X", "kind": "writer", "colour": "red"}, 422, "colour"},
			{"viewer", f.viewATok, map[string]any{"environment_id": f.envA, "name": "X", "kind": "writer"}, 403, ""},
			{"anonymous", "", map[string]any{"environment_id": f.envA, "name": "X", "kind": "writer"}, 401, ""},
		}
		for _, c := range cases {
			r := e.do(t, "POST", "/api/agents", c.tok, c.body)
			if r.Code != c.code || (c.field != "" && !strings.Contains(r.Detail(), c.field)) {
				t.Errorf("%s: %d %s (want %d naming %q)", c.name, r.Code, r.Body, c.code, c.field)
			}
		}
	})

	t.Run("Get", func(t *testing.T) {
		for _, tok := range []string{f.edATok, f.viewATok, f.adminTok} {
			r := e.do(t, "GET", fmt.Sprintf("/api/agents/%d", writerID), tok, nil)
			if r.Code != 200 || r.Data()["name"] != "Blog writer" {
				t.Errorf("get: %d %s", r.Code, r.Body)
			}
		}
		// A global agent is visible to everyone.
		if r := e.do(t, "GET", fmt.Sprintf("/api/agents/%d", globalID), f.edBTok, nil); r.Code != 200 {
			t.Errorf("global agent for an editor: %d %s", r.Code, r.Body)
		}
		// A's agent does not exist for B's editor.
		for _, p := range []string{"", "/assignments", "/runs"} {
			if r := e.do(t, "GET", fmt.Sprintf("/api/agents/%d%s", writerID, p), f.edBTok, nil); r.Code != 404 {
				t.Errorf("GET agent%s of another environment: %d %s", p, r.Code, r.Body)
			}
		}
	})

	t.Run("ListFilters", func(t *testing.T) {
		agCreate(t, e, f.edATok, map[string]any{"environment_id": f.envA, "name": "SEO helper", "description": "keywords and titles", "kind": "seo"})
		agCreate(t, e, f.edATok, map[string]any{"environment_id": f.envA, "name": "Archived researcher", "kind": "researcher", "is_active": false})
		agCreate(t, e, f.edBTok, map[string]any{"environment_id": f.envB, "name": "B writer", "kind": "writer"})
		names := func(tok, q string) (int, []string) {
			t.Helper()
			r := e.do(t, "GET", "/api/agents"+q, tok, nil)
			if r.Code != 200 {
				t.Fatalf("list %s: %d %s", q, r.Code, r.Body)
			}
			var out []string
			for _, it := range agItems(r.Data()) {
				out = append(out, it["name"].(string))
			}
			return int(agNum(r.Data()["total"])), out
		}
		check := func(tok, q string, want ...string) {
			t.Helper()
			total, got := names(tok, q)
			if total != len(want) || strings.Join(got, "|") != strings.Join(want, "|") {
				t.Errorf("list%s: total %d %q, want %q", q, total, got, want)
			}
		}
		// Sorted by name; A's editor sees A's agents and the global one.
		check(f.edATok, "", "Archived researcher", "Blog writer", "House editor", "SEO helper")
		check(f.edBTok, "", "B writer", "House editor")
		check(f.adminTok, "", "Archived researcher", "B writer", "Blog writer", "House editor", "SEO helper")
		check(f.edATok, fmt.Sprintf("?environment_id=%d", f.envA), "Archived researcher", "Blog writer", "SEO helper")
		check(f.adminTok, fmt.Sprintf("?environment_id=%d", f.envB), "B writer")
		check(f.edATok, "?kind=seo", "SEO helper")
		check(f.edATok, "?is_active=false", "Archived researcher")
		check(f.edATok, "?is_active=true", "Blog writer", "House editor", "SEO helper")
		check(f.edATok, "?q=keyword", "SEO helper") // description
		check(f.edATok, "?q=WRITER", "Blog writer")
		check(f.edATok, "?q=100%25")
		check(f.edATok, fmt.Sprintf("?environment_id=%d&kind=writer&is_active=true&q=blog", f.envA), "Blog writer")
		total, page2 := names(f.edATok, "?per_page=3&page=2")
		if total != 4 || len(page2) != 1 || page2[0] != "SEO helper" {
			t.Errorf("page 2 of 3: total %d %q", total, page2)
		}
		if r := e.do(t, "GET", "/api/agents?per_page=3&page=2", f.edATok, nil); agNum(r.Data()["page"]) != 2 || agNum(r.Data()["per_page"]) != 3 {
			t.Errorf("pagination fields: %s", r.Body)
		}
		for _, q := range []string{"?kind=poet", "?is_active=maybe", "?environment_id=0", "?environment_id=x", "?per_page=0", "?per_page=201", "?page=0"} {
			if r := e.do(t, "GET", "/api/agents"+q, f.edATok, nil); r.Code != 422 {
				t.Errorf("list%s: %d %s", q, r.Code, r.Body)
			}
		}
	})

	t.Run("UpdatePartial", func(t *testing.T) {
		p := fmt.Sprintf("/api/agents/%d", writerID)
		r := e.do(t, "PUT", p, f.edATok, map[string]any{"description": "Long-form posts", "is_active": false})
		d := r.Data()
		if r.Code != 200 || d["description"] != "Long-form posts" || d["is_active"] != false || d["name"] != "Blog writer" ||
			d["kind"] != "writer" || d["model"] != "gpt-4o" || d["system_prompt"] != "You write." || agNum(d["temperature"]) != 0.4 ||
			agNum(d["max_tokens"]) != 800 || agNum(d["credential_id"]) != float64(credA.ID) || agNum(d["environment_id"]) != float64(f.envA) {
			t.Fatalf("partial update: %d %s", r.Code, r.Body)
		}
		if r := e.do(t, "PUT", p, f.edATok, map[string]any{"credential_id": 0}); r.Code != 200 || r.Data()["credential_id"] != nil {
			t.Fatalf("credential_id 0 goes back to the settings' credential: %d %s", r.Code, r.Body)
		}
		if r := e.do(t, "GET", p, f.edATok, nil); r.Data()["credential_id"] != nil || r.Data()["model"] != "gpt-4o" {
			t.Fatalf("after reset: %s", r.Body)
		}
		for _, c := range []struct {
			body  map[string]any
			field string
		}{
			{map[string]any{"credential_id": credB.ID}, "credential_id"},
			{map[string]any{"credential_id": wp.ID}, "credential_id"},
			{map[string]any{"temperature": 2.5}, "temperature"},
			{map[string]any{"kind": "poet"}, "kind"},
			{map[string]any{"name": ""}, "name"},
			{map[string]any{"environment_id": f.envC}, "environment_id"}, // not a field of an update
		} {
			if r := e.do(t, "PUT", p, f.edATok, c.body); r.Code != 422 || !strings.Contains(r.Detail(), c.field) {
				t.Errorf("update %v: %d %s", c.body, r.Code, r.Body)
			}
		}
		if r := e.do(t, "PUT", p, f.edATok, map[string]any{"name": "Blog writer", "is_active": true, "temperature": 0}); r.Code != 200 ||
			r.Data()["is_active"] != true || agNum(r.Data()["temperature"]) != 0 || r.Data()["temperature"] == nil {
			t.Fatalf("update back: %d %s", r.Code, r.Body)
		}
		if r := e.do(t, "PUT", p, f.viewATok, map[string]any{"name": "Hijacked"}); r.Code != 403 {
			t.Errorf("viewer update: %d", r.Code)
		}
		if r := e.do(t, "PUT", p, f.edBTok, map[string]any{"name": "Hijacked"}); r.Code != 404 {
			t.Errorf("update by an editor of another environment: %d %s", r.Code, r.Body)
		}
		if r := e.do(t, "DELETE", p, f.edBTok, nil); r.Code != 404 {
			t.Errorf("delete by an editor of another environment: %d %s", r.Code, r.Body)
		}
	})

	t.Run("GlobalAgentsAreForAdmins", func(t *testing.T) {
		p := fmt.Sprintf("/api/agents/%d", globalID)
		if r := e.do(t, "PUT", p, f.edATok, map[string]any{"name": "Mine now"}); r.Code != 403 {
			t.Errorf("editor changes a global agent: %d %s", r.Code, r.Body)
		}
		if r := e.do(t, "PUT", p+"/assignments", f.edATok, map[string]any{"environment_ids": []int64{f.envA}}); r.Code != 403 {
			t.Errorf("editor assigns a global agent: %d %s", r.Code, r.Body)
		}
		if r := e.do(t, "DELETE", p, f.edATok, nil); r.Code != 403 {
			t.Errorf("editor deletes a global agent: %d %s", r.Code, r.Body)
		}
		if r := e.do(t, "PUT", p, f.adminTok, map[string]any{"description": "shared"}); r.Code != 200 || r.Data()["environment_id"] != nil {
			t.Errorf("admin changes a global agent: %d %s", r.Code, r.Body)
		}
	})

	t.Run("Assignments", func(t *testing.T) {
		p := fmt.Sprintf("/api/agents/%d/assignments", writerID)
		r := e.do(t, "GET", p, f.viewATok, nil)
		if r.Code != 200 || agNum(r.Data()["agent_id"]) != float64(writerID) || agNum(r.Data()["environment_id"]) != float64(f.envA) ||
			len(r.Data()["environment_ids"].([]any)) != 0 {
			t.Fatalf("get assignments: %d %s", r.Code, r.Body)
		}
		// The editor assigns to environments they can see, and only those.
		if r := e.do(t, "PUT", p, f.edATok, map[string]any{"environment_ids": []int64{f.envB}}); r.Code != 422 || !strings.Contains(r.Detail(), "environment_ids") {
			t.Errorf("editor assigns to an environment not granted: %d %s", r.Code, r.Body)
		}
		for _, tok := range []string{f.edATok, f.adminTok} {
			if r := e.do(t, "PUT", p, tok, map[string]any{"environment_ids": []int64{99999}}); r.Code != 422 || !strings.Contains(r.Detail(), "environment_ids") {
				t.Errorf("assign to an unknown environment: %d %s", r.Code, r.Body)
			}
		}
		for _, body := range []any{map[string]any{}, map[string]any{"environment_ids": []int64{0}}, map[string]any{"environment_ids": "x"}} {
			if r := e.do(t, "PUT", p, f.edATok, body); r.Code != 422 {
				t.Errorf("assign %v: %d %s", body, r.Code, r.Body)
			}
		}
		if r := e.do(t, "PUT", p, f.viewATok, map[string]any{"environment_ids": []int64{f.envC}}); r.Code != 403 {
			t.Errorf("viewer assigns: %d", r.Code)
		}
		r = e.do(t, "PUT", p, f.edATok, map[string]any{"environment_ids": []int64{f.envC, f.envC}})
		if r.Code != 200 || fmt.Sprint(r.Data()["environment_ids"]) != fmt.Sprint([]any{float64(f.envC)}) {
			t.Fatalf("editor assigns to C: %d %s", r.Code, r.Body)
		}
		// B's editor does not see A's agent until it is assigned to B.
		if r := e.do(t, "GET", fmt.Sprintf("/api/agents/%d", writerID), f.edBTok, nil); r.Code != 404 {
			t.Fatalf("before the assignment: %d", r.Code)
		}
		r = e.do(t, "PUT", p, f.adminTok, map[string]any{"environment_ids": []int64{f.envB, f.envC}})
		if r.Code != 200 || fmt.Sprint(r.Data()["environment_ids"]) != fmt.Sprint([]any{float64(f.envB), float64(f.envC)}) {
			t.Fatalf("admin assigns to B and C: %d %s", r.Code, r.Body)
		}
		r = e.do(t, "GET", fmt.Sprintf("/api/agents/%d", writerID), f.edBTok, nil)
		if r.Code != 200 || fmt.Sprint(r.Data()["assignments"]) != fmt.Sprint([]any{float64(f.envB)}) {
			t.Fatalf("an agent assigned to B is visible to B's editor, with the assignments B's editor sees: %d %s", r.Code, r.Body)
		}
		found := false
		for _, it := range agItems(e.do(t, "GET", fmt.Sprintf("/api/agents?environment_id=%d", f.envB), f.edBTok, nil).Data()) {
			found = found || agID(it) == writerID
		}
		if !found {
			t.Errorf("B's list (environment_id=B) lacks the agent assigned to B")
		}
		if r := e.do(t, "GET", p, f.edBTok, nil); r.Code != 200 {
			t.Errorf("B's editor reads the assignments: %d", r.Code)
		}
		// Using an agent is not owning it: B's editor may not change A's agent.
		if r := e.do(t, "PUT", fmt.Sprintf("/api/agents/%d", writerID), f.edBTok, map[string]any{"name": "Taken over"}); r.Code != 403 {
			t.Errorf("B's editor changes A's agent assigned to B: %d %s (want 403)", r.Code, r.Body)
		}
		if r := e.do(t, "PUT", p, f.edBTok, map[string]any{"environment_ids": []int64{f.envB}}); r.Code != 403 {
			t.Errorf("BUG: B's editor rewrites the assignments of A's agent assigned to B: %d %s (want 403)", r.Code, r.Body)
		}
		if r := e.do(t, "DELETE", fmt.Sprintf("/api/agents/%d", writerID), f.edBTok, nil); r.Code != 403 {
			t.Errorf("BUG: B's editor deletes A's agent merely assigned to B: %d %s (want 403)", r.Code, r.Body)
		}
		// Back to none (if the agent survived).
		if r := e.do(t, "GET", fmt.Sprintf("/api/agents/%d", writerID), f.adminTok, nil); r.Code == 200 {
			if r := e.do(t, "PUT", p, f.adminTok, map[string]any{"environment_ids": []int64{}}); r.Code != 200 || len(r.Data()["environment_ids"].([]any)) != 0 {
				t.Errorf("clear assignments: %d %s", r.Code, r.Body)
			}
			if r := e.do(t, "GET", fmt.Sprintf("/api/agents/%d", writerID), f.edBTok, nil); r.Code != 404 {
				t.Errorf("after the assignment is gone: %d", r.Code)
			}
		}
	})

	t.Run("Delete", func(t *testing.T) {
		a := agCreate(t, e, f.edATok, map[string]any{"environment_id": f.envA, "name": "Disposable", "kind": "editor"})
		p := fmt.Sprintf("/api/agents/%d", agID(a))
		if r := e.do(t, "DELETE", p, f.viewATok, nil); r.Code != 403 {
			t.Errorf("viewer delete: %d", r.Code)
		}
		r := e.do(t, "DELETE", p, f.edATok, nil)
		if r.Code != 200 || r.Data()["deleted"] != true || agNum(r.Data()["id"]) != float64(agID(a)) {
			t.Fatalf("delete: %d %s", r.Code, r.Body)
		}
		for _, c := range []struct{ method, path string }{{"GET", p}, {"DELETE", p}, {"PUT", p}, {"GET", p + "/assignments"}, {"GET", p + "/runs"}} {
			var body any
			if c.method == "PUT" {
				body = map[string]any{"name": "again"}
			}
			if r := e.do(t, c.method, c.path, f.adminTok, body); r.Code != 404 {
				t.Errorf("%s %s after delete: %d", c.method, c.path, r.Code)
			}
		}
	})
}

// ---- tenancy ----

func TestAgentTenancy(t *testing.T) {
	t.Parallel()
	f := agSetup(t)
	e := f.e
	fake := fakeOpenAI(t, nil)
	agConfigure(t, e, fake.URL+"/v1")
	agRunJobs(t, e)

	agentA := agID(agCreate(t, e, f.edATok, map[string]any{"environment_id": f.envA, "name": "A writer", "kind": "writer"}))
	agentB := agID(agCreate(t, e, f.edBTok, map[string]any{"environment_id": f.envB, "name": "B writer", "kind": "writer"}))
	runA := agID(agExecute(t, e, f.edATok, agentA, map[string]any{"input": "for A"}))
	runB := agID(agExecute(t, e, f.edBTok, agentB, map[string]any{"input": "for B"}))
	if r := agWaitRun(t, e, f.edATok, runA); r["status"] != "succeeded" {
		t.Fatalf("run A: %v", r)
	}
	if r := agWaitRun(t, e, f.edBTok, runB); r["status"] != "succeeded" {
		t.Fatalf("run B: %v", r)
	}

	t.Run("Agents", func(t *testing.T) {
		for _, c := range []struct{ method, path string }{
			{"GET", fmt.Sprintf("/api/agents/%d", agentB)},
			{"PUT", fmt.Sprintf("/api/agents/%d", agentB)},
			{"DELETE", fmt.Sprintf("/api/agents/%d", agentB)},
			{"GET", fmt.Sprintf("/api/agents/%d/assignments", agentB)},
			{"PUT", fmt.Sprintf("/api/agents/%d/assignments", agentB)},
			{"GET", fmt.Sprintf("/api/agents/%d/runs", agentB)},
			{"POST", fmt.Sprintf("/api/agents/%d/execute", agentB)},
		} {
			var body any
			switch {
			case strings.HasSuffix(c.path, "/assignments") && c.method == "PUT":
				body = map[string]any{"environment_ids": []int64{f.envA}}
			case c.method == "PUT":
				body = map[string]any{"name": "mine"}
			case c.method == "POST":
				body = map[string]any{"input": "x", "environment_id": f.envA}
			}
			if r := e.do(t, c.method, c.path, f.edATok, body); r.Code != 404 {
				t.Errorf("A's editor %s %s: %d %s", c.method, c.path, r.Code, r.Body)
			}
		}
		for _, it := range agItems(e.do(t, "GET", "/api/agents", f.edATok, nil).Data()) {
			if agID(it) == agentB {
				t.Errorf("A's editor lists B's agent")
			}
		}
		// Filtering by an environment not granted reveals nothing; 404 as
		// in /api/token-analytics/usage (the response must be documented).
		if r := e.do(t, "GET", fmt.Sprintf("/api/agents?environment_id=%d", f.envB), f.edATok, nil); r.Code != 404 && (r.Code != 200 || agNum(r.Data()["total"]) != 0) {
			t.Errorf("A's editor lists agents of B: %d %s", r.Code, r.Body)
		}
	})

	t.Run("Runs", func(t *testing.T) {
		for _, c := range []struct{ method, path string }{
			{"GET", fmt.Sprintf("/api/agents/runs/%d", runB)},
			{"POST", fmt.Sprintf("/api/agents/runs/%d/cancel", runB)},
		} {
			if r := e.do(t, c.method, c.path, f.edATok, nil); r.Code != 404 {
				t.Errorf("A's editor %s %s: %d %s", c.method, c.path, r.Code, r.Body)
			}
		}
		if r := e.do(t, "GET", fmt.Sprintf("/api/agents/runs/%d", runA), f.viewATok, nil); r.Code != 200 {
			t.Errorf("A's viewer reads A's run: %d", r.Code)
		}
		if r := e.do(t, "GET", fmt.Sprintf("/api/agents/runs/%d", runB), f.adminTok, nil); r.Code != 200 {
			t.Errorf("admin reads B's run: %d", r.Code)
		}
		// A global agent's runs: each editor sees those of their environments.
		global := agID(agCreate(t, e, f.adminTok, map[string]any{"name": "Shared", "kind": "seo"}))
		gA := agID(agExecute(t, e, f.edATok, global, map[string]any{"input": "a", "environment_id": f.envA}))
		gB := agID(agExecute(t, e, f.edBTok, global, map[string]any{"input": "b", "environment_id": f.envB}))
		agWaitRun(t, e, f.edATok, gA)
		agWaitRun(t, e, f.edBTok, gB)
		list := e.do(t, "GET", fmt.Sprintf("/api/agents/%d/runs", global), f.edATok, nil).Data()
		if items := agItems(list); agNum(list["total"]) != 1 || len(items) != 1 || agID(items[0]) != gA {
			t.Errorf("A's editor lists the global agent's runs: %v", list)
		}
		if list := e.do(t, "GET", fmt.Sprintf("/api/agents/%d/runs", global), f.adminTok, nil).Data(); agNum(list["total"]) != 2 {
			t.Errorf("admin lists the global agent's runs: %v", list)
		}
		if r := e.do(t, "GET", fmt.Sprintf("/api/agents/runs/%d", gB), f.edATok, nil); r.Code != 404 {
			t.Errorf("A's editor reads B's run of a global agent: %d", r.Code)
		}
	})

	t.Run("Usage", func(t *testing.T) {
		var total int
		var events []map[string]any
		agWaitFor(t, "usage events of both runs", func() bool {
			total, _ = agUsage(t, e, f.adminTok, fmt.Sprintf("&agent_id=%d", agentB))
			return total == 1
		})
		total, events = agUsage(t, e, f.edATok, "")
		if total == 0 {
			t.Errorf("A's editor sees no usage at all")
		}
		for _, ev := range events {
			if agNum(ev["environment_id"]) == float64(f.envB) || agNum(ev["agent_id"]) == float64(agentB) {
				t.Errorf("A's editor sees B's usage: %v", ev)
			}
		}
		if total, _ := agUsage(t, e, f.edATok, fmt.Sprintf("&agent_id=%d", agentB)); total != 0 {
			t.Errorf("A's editor sees B's agent's usage: %d events", total)
		}
		if r := e.do(t, "GET", fmt.Sprintf("/api/token-analytics/usage?environment_id=%d", f.envB), f.edATok, nil); r.Code != 404 {
			t.Errorf("A's editor asks for B's usage: %d %s", r.Code, r.Body)
		}
		if total, _ := agUsage(t, e, f.edBTok, fmt.Sprintf("&environment_id=%d", f.envB)); total != 2 {
			t.Errorf("B's editor sees B's usage: %d events", total)
		}
	})
}

// ---- execution ----

func TestAgentRunSucceeds(t *testing.T) {
	t.Parallel()
	f := agSetup(t)
	e := f.e
	fake := fakeOpenAI(t, func(n int, req map[string]any) (int, string) { return 200, "Tea is a drink made from leaves." })
	agConfigure(t, e, fake.URL+"/v1")
	agRunJobs(t, e)

	agent := agCreate(t, e, f.edATok, map[string]any{"environment_id": f.envA, "name": "Tea writer", "kind": "writer",
		"system_prompt": "You write for {{brand}} in a {{ tone }} tone.", "temperature": 0.3, "max_tokens": 256})
	agentID := agID(agent)
	vars := map[string]string{"topic": "green tea", "brand": "Acme", "tone": "warm"}
	queued := agExecute(t, e, f.edATok, agentID, map[string]any{"input": "Write about {{topic}} for {{brand}}; keep {{unknown}}.", "variables": vars})
	runID := agID(queued)
	if agNum(queued["agent_id"]) != float64(agentID) || agNum(queued["environment_id"]) != float64(f.envA) ||
		agNum(queued["user_id"]) != float64(f.edA.ID) || queued["input"] != "Write about {{topic}} for {{brand}}; keep {{unknown}}." ||
		fmt.Sprint(queued["variables"]) != fmt.Sprint(map[string]any{"topic": "green tea", "brand": "Acme", "tone": "warm"}) ||
		queued["started_at"] != nil || queued["finished_at"] != nil || queued["output"] != "" {
		t.Fatalf("queued run: %v", queued)
	}

	run := agWaitRun(t, e, f.edATok, runID)
	if run["status"] != "succeeded" || run["output"] != "Tea is a drink made from leaves." || run["error"] != "" ||
		agNum(run["input_tokens"]) != 1000 || agNum(run["output_tokens"]) != 500 || run["model"] != "gpt-4o-mini" {
		t.Fatalf("finished run: %v", run)
	}
	// gpt-4o-mini: $0.15 / $0.075 cached / $0.60 per million; 200 of the
	// 1000 input tokens were cached.
	wantCost := (800*0.15 + 200*0.075 + 500*0.60) / 1e6
	if c, ok := run["cost_usd"].(float64); !ok || math.Abs(c-wantCost) > 1e-12 {
		t.Errorf("cost_usd %v, want %v", run["cost_usd"], wantCost)
	}
	if run["started_at"] == nil || run["finished_at"] == nil || run["duration_ms"] == nil || agNum(run["duration_ms"]) < 0 {
		t.Errorf("times: %v", run)
	} else {
		queuedAt, _ := time.Parse(time.RFC3339Nano, run["queued_at"].(string))
		started, _ := time.Parse(time.RFC3339Nano, run["started_at"].(string))
		finished, _ := time.Parse(time.RFC3339Nano, run["finished_at"].(string))
		if started.Before(queuedAt) || finished.Before(started) || int64(agNum(run["duration_ms"])) != finished.Sub(started).Milliseconds() {
			t.Errorf("queued %v started %v finished %v duration %v", queuedAt, started, finished, run["duration_ms"])
		}
	}

	// What the provider was asked.
	reqs := fake.Requests()
	if len(reqs) != 1 {
		t.Fatalf("provider calls: %d", len(reqs))
	}
	req := reqs[0]
	msgs, _ := req["messages"].([]any)
	if req["model"] != "gpt-4o-mini" || len(msgs) != 2 {
		t.Fatalf("provider request: %v", req)
	}
	sys, user := msgs[0].(map[string]any), msgs[1].(map[string]any)
	if sys["role"] != "system" || sys["content"] != "You write for Acme in a warm tone." {
		t.Errorf("system message: %v", sys)
	}
	if user["role"] != "user" || user["content"] != "Write about green tea for Acme; keep {{unknown}}." {
		t.Errorf("user message: %v", user)
	}
	if agNum(req["temperature"]) != 0.3 {
		t.Errorf("the agent's temperature is not sent: %v", req["temperature"])
	}
	if agNum(req["max_completion_tokens"]) != 256 && agNum(req["max_tokens"]) != 256 {
		t.Errorf("the agent's max tokens are not sent: %v", req)
	}

	// One usage event, attributed.
	total, events := agUsage(t, e, f.adminTok, fmt.Sprintf("&agent_id=%d", agentID))
	if total != 1 {
		t.Fatalf("usage events: %d %v", total, events)
	}
	ev := events[0]
	if ev["source"] != "execution" || agNum(ev["agent_id"]) != float64(agentID) || agNum(ev["environment_id"]) != float64(f.envA) ||
		agNum(ev["user_id"]) != float64(f.edA.ID) || ev["status"] != "ok" || agNum(ev["input_tokens"]) != 1000 ||
		agNum(ev["output_tokens"]) != 500 || agNum(ev["cached_tokens"]) != 200 || ev["provider"] != "openai" || ev["model"] != "gpt-4o-mini" {
		t.Errorf("usage event: %v", ev)
	}
	if c, ok := ev["cost_usd"].(float64); !ok || math.Abs(c-wantCost) > 1e-12 {
		t.Errorf("usage cost %v, want %v", ev["cost_usd"], wantCost)
	}
	if n, _ := agUsage(t, e, f.edATok, fmt.Sprintf("&source=execution&environment_id=%d", f.envA)); n != 1 {
		t.Errorf("A's editor sees the run's usage: %d", n)
	}

	// The user who started it is told, with a link to the run.
	n := agWaitNotification(t, e, f.edATok, runID, notify.RunSucceeded)
	if !strings.Contains(fmt.Sprint(n["title"]), "Tea writer") || !strings.Contains(fmt.Sprint(n["body"]), "Tea is a drink") {
		t.Errorf("notification: %v", n)
	}
	if agNotification(t, e, f.viewATok, runID) != nil || agNotification(t, e, f.adminTok, runID) != nil {
		t.Errorf("the run's notification went to someone who did not start it")
	}
	if r := e.do(t, "GET", n["link"].(string), f.edATok, nil); r.Code != 200 || agID(r.Data()) != runID {
		t.Errorf("the notification's link: %d %s", r.Code, r.Body)
	}

	// The runs list, newest first, with its status filter.
	second := agID(agExecute(t, e, f.edATok, agentID, map[string]any{"input": "again"}))
	agWaitRun(t, e, f.edATok, second)
	list := e.do(t, "GET", fmt.Sprintf("/api/agents/%d/runs", agentID), f.viewATok, nil).Data()
	if items := agItems(list); agNum(list["total"]) != 2 || len(items) != 2 || agID(items[0]) != second || agID(items[1]) != runID {
		t.Errorf("runs: %v", list)
	}
	if list := e.do(t, "GET", fmt.Sprintf("/api/agents/%d/runs?status=succeeded&per_page=1&page=2", agentID), f.edATok, nil).Data(); agNum(list["total"]) != 2 ||
		len(agItems(list)) != 1 || agID(agItems(list)[0]) != runID {
		t.Errorf("runs page 2: %v", list)
	}
	if list := e.do(t, "GET", fmt.Sprintf("/api/agents/%d/runs?status=failed", agentID), f.edATok, nil).Data(); agNum(list["total"]) != 0 {
		t.Errorf("failed runs: %v", list)
	}
	if job := agWaitJob(t, e, runID); job.Status != store.JobSucceeded || job.Attempts != 1 {
		t.Errorf("job: %+v", job)
	}
}

func TestAgentRunWithoutProvider(t *testing.T) {
	t.Parallel()
	f := agSetup(t)
	e := f.e
	agRunJobs(t, e)
	agentID := agID(agCreate(t, e, f.edATok, map[string]any{"environment_id": f.envA, "name": "Idle", "kind": "writer"}))
	r := e.do(t, "POST", fmt.Sprintf("/api/agents/%d/execute", agentID), f.edATok, map[string]any{"input": "hello"})
	if r.Code != 409 || !strings.Contains(r.Detail(), "/api/configurations") {
		t.Fatalf("execute without a provider: %d %s", r.Code, r.Body)
	}
	list := e.do(t, "GET", fmt.Sprintf("/api/agents/%d/runs", agentID), f.edATok, nil).Data()
	items := agItems(list)
	if len(items) != 1 || items[0]["status"] != "failed" || !strings.Contains(items[0]["error"].(string), "/api/configurations") ||
		items[0]["finished_at"] == nil {
		t.Fatalf("the refused run is recorded failed: %v", list)
	}
	if jobs, total, err := e.app.DB.ListJobs(context.Background(), store.JobFilter{Kind: agent.RunJob}); err != nil || total != 0 {
		t.Errorf("a job was queued for a run that cannot run: %v %v", jobs, err)
	}
}

func TestAgentRunProviderErrors(t *testing.T) {
	t.Parallel()
	fastRetries := func(c *server.Config) {
		c.JobBackoff = func(int) time.Duration { return 10 * time.Millisecond }
	}
	noSDKRetries := func(c *server.Config) { c.ProviderRetries = -1 }

	t.Run("Unauthorized", func(t *testing.T) {
		t.Parallel()
		f := agSetup(t, fastRetries)
		e := f.e
		fake := fakeOpenAI(t, func(int, map[string]any) (int, string) {
			return 401, "Incorrect API key provided: sk-wrong***0000"
		})
		agConfigure(t, e, fake.URL+"/v1")
		agRunJobs(t, e)
		agentID := agID(agCreate(t, e, f.edATok, map[string]any{"environment_id": f.envA, "name": "Locked out", "kind": "writer"}))
		runID := agID(agExecute(t, e, f.edATok, agentID, map[string]any{"input": "hello"}))
		run := agWaitRun(t, e, f.edATok, runID)
		msg := run["error"].(string)
		if run["status"] != "failed" || !strings.Contains(msg, "Incorrect API key provided") || !strings.Contains(msg, "401") || run["finished_at"] == nil {
			t.Fatalf("run: %v", run)
		}
		if strings.Contains(msg, "sk-test-good-key-0001") {
			t.Errorf("the API key leaks into the run's error: %q", msg)
		}
		if c := strings.Count(msg, "Incorrect API key provided"); c != 1 {
			t.Errorf("BUG: the provider's message appears %d times in the run's error: %q", c, msg)
		}
		if n := len(fake.Requests()); n != 1 {
			t.Errorf("a 401 is not retried, yet the provider was called %d times", n)
		}
		if job := agWaitJob(t, e, runID); job.Status != store.JobFailed || job.Attempts != 1 {
			t.Errorf("job: %+v", job)
		}
		n := agWaitNotification(t, e, f.edATok, runID, notify.RunFailed)
		if !strings.Contains(fmt.Sprint(n["body"]), "Incorrect API key provided") {
			t.Errorf("the failure notification does not say why: %v", n)
		}
		total, events := agUsage(t, e, f.adminTok, fmt.Sprintf("&agent_id=%d", agentID))
		if total != 1 || events[0]["status"] != "error" || !strings.Contains(events[0]["error"].(string), "Incorrect API key") {
			t.Errorf("a failed call records a usage event with its error: %v", events)
		}
	})

	t.Run("RateLimitedOnceProviderRetries", func(t *testing.T) {
		t.Parallel()
		f := agSetup(t, fastRetries)
		e := f.e
		fake := fakeOpenAI(t, func(n int, _ map[string]any) (int, string) {
			if n == 1 {
				return 429, "Rate limit reached"
			}
			return 200, "after the wait"
		})
		agConfigure(t, e, fake.URL+"/v1")
		agRunJobs(t, e)
		agentID := agID(agCreate(t, e, f.edATok, map[string]any{"environment_id": f.envA, "name": "Patient", "kind": "writer"}))
		runID := agID(agExecute(t, e, f.edATok, agentID, map[string]any{"input": "hello"}))
		run := agWaitRun(t, e, f.edATok, runID)
		if run["status"] != "succeeded" || run["output"] != "after the wait" || run["error"] != "" {
			t.Fatalf("run: %v", run)
		}
		if n := len(fake.Requests()); n != 2 {
			t.Errorf("provider calls: %d, want 2", n)
		}
		agWaitNotification(t, e, f.edATok, runID, notify.RunSucceeded)
	})

	t.Run("RateLimitedOnceJobRetries", func(t *testing.T) {
		t.Parallel()
		f := agSetup(t, fastRetries, noSDKRetries)
		e := f.e
		fake := fakeOpenAI(t, func(n int, _ map[string]any) (int, string) {
			if n == 1 {
				return 429, "Rate limit reached"
			}
			return 200, "second attempt"
		})
		agConfigure(t, e, fake.URL+"/v1")
		agRunJobs(t, e)
		agentID := agID(agCreate(t, e, f.edATok, map[string]any{"environment_id": f.envA, "name": "Patient", "kind": "writer"}))
		runID := agID(agExecute(t, e, f.edATok, agentID, map[string]any{"input": "hello"}))
		run := agWaitRun(t, e, f.edATok, runID)
		if run["status"] != "succeeded" || run["output"] != "second attempt" || run["error"] != "" || agNum(run["input_tokens"]) != 1000 {
			t.Fatalf("run: %v", run)
		}
		if n := len(fake.Requests()); n != 2 {
			t.Errorf("provider calls: %d, want 2", n)
		}
		if job := agWaitJob(t, e, runID); job.Status != store.JobSucceeded || job.Attempts != 2 {
			t.Errorf("job: %+v", job)
		}
		_, events := agUsage(t, e, f.adminTok, fmt.Sprintf("&agent_id=%d", agentID))
		statuses := []string{}
		for _, ev := range events {
			statuses = append(statuses, ev["status"].(string))
		}
		if strings.Join(statuses, ",") != "ok,error" {
			t.Errorf("usage events, newest first: %v", statuses)
		}
		agWaitNotification(t, e, f.edATok, runID, notify.RunSucceeded)
	})

	t.Run("ServerErrorsUntilOutOfAttempts", func(t *testing.T) {
		t.Parallel()
		f := agSetup(t, fastRetries, noSDKRetries)
		e := f.e
		fake := fakeOpenAI(t, func(int, map[string]any) (int, string) { return 500, "The server had an error" })
		agConfigure(t, e, fake.URL+"/v1")
		agRunJobs(t, e)
		agentID := agID(agCreate(t, e, f.edATok, map[string]any{"environment_id": f.envA, "name": "Unlucky", "kind": "writer"}))
		runID := agID(agExecute(t, e, f.edATok, agentID, map[string]any{"input": "hello"}))
		run := agWaitRun(t, e, f.edATok, runID)
		msg, _ := run["error"].(string)
		if run["status"] != "failed" || !strings.Contains(msg, "The server had an error") || run["finished_at"] == nil {
			t.Fatalf("run: %v", run)
		}
		if c := strings.Count(msg, "The server had an error"); c != 1 {
			t.Errorf("BUG: the provider's message appears %d times in the run's error: %q", c, msg)
		}
		if n := len(fake.Requests()); n != store.DefaultJobMaxAttempts {
			t.Errorf("provider calls: %d, want %d (one per job attempt)", n, store.DefaultJobMaxAttempts)
		}
		if job := agWaitJob(t, e, runID); job.Status != store.JobFailed || job.Attempts != store.DefaultJobMaxAttempts {
			t.Errorf("job: %+v", job)
		}
		agWaitNotification(t, e, f.edATok, runID, notify.RunFailed)
		if total, _ := agUsage(t, e, f.adminTok, fmt.Sprintf("&agent_id=%d&status=error", agentID)); total != store.DefaultJobMaxAttempts {
			t.Errorf("error usage events: %d", total)
		}
	})
}

// ---- cancellation ----

func TestAgentRunCancel(t *testing.T) {
	t.Parallel()

	t.Run("Running", func(t *testing.T) {
		t.Parallel()
		f := agSetup(t)
		e := f.e
		b := agBlockingOpenAI(t)
		agConfigure(t, e, b.srv.URL+"/v1")
		agRunJobs(t, e)
		agentID := agID(agCreate(t, e, f.edATok, map[string]any{"environment_id": f.envA, "name": "Slow", "kind": "writer"}))
		runID := agID(agExecute(t, e, f.edATok, agentID, map[string]any{"input": "take your time"}))
		agWaitChan(t, b.started, "the provider call")
		if r := e.do(t, "GET", fmt.Sprintf("/api/agents/runs/%d", runID), f.edATok, nil); r.Data()["status"] != "running" || r.Data()["started_at"] == nil {
			t.Fatalf("while the provider works: %s", r.Body)
		}
		if r := e.do(t, "POST", fmt.Sprintf("/api/agents/runs/%d/cancel", runID), f.viewATok, nil); r.Code != 403 {
			t.Errorf("viewer cancels: %d", r.Code)
		}
		r := e.do(t, "POST", fmt.Sprintf("/api/agents/runs/%d/cancel", runID), f.edATok, nil)
		if r.Code != 200 || r.Data()["status"] != "cancelled" || r.Data()["finished_at"] == nil {
			t.Fatalf("cancel: %d %s", r.Code, r.Body)
		}
		agWaitChan(t, b.gone, "the provider call being cancelled")
		if job := agWaitJob(t, e, runID); job.Status != store.JobCancelled {
			t.Errorf("job: %+v", job)
		}
		if r := e.do(t, "GET", fmt.Sprintf("/api/agents/runs/%d", runID), f.edATok, nil); r.Data()["status"] != "cancelled" || r.Data()["output"] != "" ||
			r.Data()["stop_reason"] != "cancelled" {
			t.Errorf("after the handler returned: %s", r.Body)
		}
		if r := e.do(t, "POST", fmt.Sprintf("/api/agents/runs/%d/cancel", runID), f.edATok, nil); r.Code != 409 {
			t.Errorf("cancel twice: %d %s", r.Code, r.Body)
		}
		if n := agNotification(t, e, f.edATok, runID); n != nil {
			t.Errorf("a cancelled run raised %v", n)
		}
		if n := b.requests.Load(); n != 1 {
			t.Errorf("a cancelled call was retried: %d calls", n)
		}
		// The call that was cut short is accounted for too, as cancelled.
		var usage []map[string]any
		agWaitFor(t, "a usage event for the cancelled call", func() bool {
			var total int
			total, usage = agUsage(t, e, f.adminTok, fmt.Sprintf("&agent_id=%d", agentID))
			return total == 1
		})
		if usage[0]["status"] != "cancelled" {
			t.Errorf("usage of the cancelled call: %v", usage[0])
		}
	})

	t.Run("Queued", func(t *testing.T) {
		t.Parallel()
		f := agSetup(t)
		e := f.e
		fake := fakeOpenAI(t, nil)
		agConfigure(t, e, fake.URL+"/v1")
		agentID := agID(agCreate(t, e, f.edATok, map[string]any{"environment_id": f.envA, "name": "Later", "kind": "writer"}))
		// No runner yet: the run waits in the queue.
		runID := agID(agExecute(t, e, f.edATok, agentID, map[string]any{"input": "never mind"}))
		r := e.do(t, "POST", fmt.Sprintf("/api/agents/runs/%d/cancel", runID), f.edATok, nil)
		if r.Code != 200 || r.Data()["status"] != "cancelled" || r.Data()["started_at"] != nil {
			t.Fatalf("cancel a queued run: %d %s", r.Code, r.Body)
		}
		if job := agWaitJob(t, e, runID); job.Status != store.JobCancelled {
			t.Errorf("job: %+v", job)
		}
		if r := e.do(t, "POST", fmt.Sprintf("/api/agents/runs/%d/cancel", runID), f.edATok, nil); r.Code != 409 {
			t.Errorf("cancel twice: %d", r.Code)
		}
		// Started later, the runner skips it: a run queued after it runs,
		// and the provider only ever sees that one.
		agRunJobs(t, e)
		next := agID(agExecute(t, e, f.edATok, agentID, map[string]any{"input": "this one"}))
		if run := agWaitRun(t, e, f.edATok, next); run["status"] != "succeeded" {
			t.Fatalf("next run: %v", run)
		}
		reqs := fake.Requests()
		if len(reqs) != 1 || !strings.Contains(fmt.Sprint(reqs[0]["messages"]), "this one") {
			t.Errorf("provider calls: %v", reqs)
		}
		if r := e.do(t, "GET", fmt.Sprintf("/api/agents/runs/%d", runID), f.edATok, nil); r.Data()["status"] != "cancelled" || r.Data()["started_at"] != nil {
			t.Errorf("the cancelled run ran: %s", r.Body)
		}
		if n := agNotification(t, e, f.edATok, runID); n != nil {
			t.Errorf("a cancelled run raised %v", n)
		}
	})
}

// ---- streaming ----

type agEvent struct{ name, data string }

// agPostStream posts an execute request to a real server and reads the
// whole answer; for an event stream, its events.
func agPostStream(t *testing.T, url, tok string, body any) (*http.Response, string, []agEvent) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", url, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+tok)
	client := &http.Client{Timeout: agBound}
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		var buf bytes.Buffer
		buf.ReadFrom(res.Body)
		return res, buf.String(), nil
	}
	var events []agEvent
	var cur agEvent
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.name != "" || cur.data != "" {
				events = append(events, cur)
			}
			cur = agEvent{}
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "event:"):
			cur.name = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			cur.data += strings.TrimSpace(strings.TrimPrefix(line, "data:"))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading the stream: %v", err)
	}
	return res, "", events
}

func agEventNames(evs []agEvent) string {
	var out []string
	for _, ev := range evs {
		out = append(out, ev.name)
	}
	return strings.Join(out, ",")
}

func TestAgentRunStream(t *testing.T) {
	t.Parallel()

	t.Run("Succeeds", func(t *testing.T) {
		t.Parallel()
		f := agSetup(t)
		e := f.e
		const text = "Green tea is steamed, never roasted, before drying."
		fake := fakeOpenAI(t, func(int, map[string]any) (int, string) { return 200, text })
		agConfigure(t, e, fake.URL+"/v1")
		agRunJobs(t, e) // streamed runs are carried out by the job runner too
		srv := httptest.NewServer(e.h)
		t.Cleanup(srv.Close)
		agentID := agID(agCreate(t, e, f.edATok, map[string]any{"environment_id": f.envA, "name": "Live writer", "kind": "writer", "system_prompt": "Brand: {{brand}}"}))
		res, body, evs := agPostStream(t, fmt.Sprintf("%s/api/agents/%d/execute", srv.URL, agentID), f.edATok,
			map[string]any{"input": "About {{topic}}", "variables": map[string]string{"topic": "tea", "brand": "Acme"}, "stream": true})
		if res.StatusCode != 200 || len(evs) < 3 {
			t.Fatalf("stream: %d %s %v", res.StatusCode, body, evs)
		}
		var first map[string]any
		if evs[0].name != "run" || json.Unmarshal([]byte(evs[0].data), &first) != nil || agNum(first["agent_id"]) != float64(agentID) {
			t.Fatalf("first event: %v", evs[0])
		}
		runID := agID(first)
		var got strings.Builder
		deltas := 0
		for _, ev := range evs[1 : len(evs)-1] {
			var d map[string]string
			if ev.name != "delta" || json.Unmarshal([]byte(ev.data), &d) != nil {
				t.Fatalf("events: %s; bad %v", agEventNames(evs), ev)
			}
			got.WriteString(d["text"])
			deltas++
		}
		if deltas < 3 || got.String() != text {
			t.Errorf("%d deltas making %q, want several making %q", deltas, got.String(), text)
		}
		last := evs[len(evs)-1]
		var done map[string]any
		if last.name != "done" || json.Unmarshal([]byte(last.data), &done) != nil {
			t.Fatalf("last event: %v", last)
		}
		if agID(done) != runID || done["status"] != "succeeded" || done["output"] != text || agNum(done["input_tokens"]) != 1000 ||
			agNum(done["output_tokens"]) != 500 || done["cost_usd"] == nil || done["finished_at"] == nil {
			t.Errorf("done: %v", done)
		}
		if r := e.do(t, "GET", fmt.Sprintf("/api/agents/runs/%d", runID), f.edATok, nil); r.Data()["status"] != "succeeded" || r.Data()["output"] != text {
			t.Errorf("the streamed run as stored: %s", r.Body)
		}
		reqs := fake.Requests()
		if len(reqs) != 1 || reqs[0]["stream"] != true || !strings.Contains(fmt.Sprint(reqs[0]["messages"]), "About tea") ||
			!strings.Contains(fmt.Sprint(reqs[0]["messages"]), "Brand: Acme") {
			t.Errorf("provider request: %v", reqs)
		}
		if total, events := agUsage(t, e, f.adminTok, fmt.Sprintf("&agent_id=%d", agentID)); total != 1 || events[0]["source"] != "execution" {
			t.Errorf("usage of a streamed run: %v", events)
		}
		agWaitNotification(t, e, f.edATok, runID, notify.RunSucceeded)
	})

	t.Run("ProviderFailsMidway", func(t *testing.T) {
		t.Parallel()
		f := agSetup(t)
		e := f.e
		fake := agOpenAI(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			for _, word := range []string{"Half ", "an "} {
				fmt.Fprintf(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"delta\":{\"content\":%q},\"finish_reason\":null}]}\n\n", word)
				w.(http.Flusher).Flush()
			}
			fmt.Fprint(w, "data: {\"error\":{\"message\":\"The model crashed mid-answer\",\"type\":\"server_error\"}}\n\n")
		})
		agConfigure(t, e, fake.URL+"/v1")
		agRunJobs(t, e) // streamed runs are carried out by the job runner too
		srv := httptest.NewServer(e.h)
		t.Cleanup(srv.Close)
		agentID := agID(agCreate(t, e, f.edATok, map[string]any{"environment_id": f.envA, "name": "Fragile", "kind": "writer"}))
		res, body, evs := agPostStream(t, fmt.Sprintf("%s/api/agents/%d/execute", srv.URL, agentID), f.edATok, map[string]any{"input": "go", "stream": true})
		if res.StatusCode != 200 || len(evs) < 2 {
			t.Fatalf("stream: %d %s %v", res.StatusCode, body, evs)
		}
		if names := agEventNames(evs); names != "run,delta,delta,error" {
			t.Errorf("events: %s", names)
		}
		var first map[string]any
		json.Unmarshal([]byte(evs[0].data), &first)
		runID := agID(first)
		last := evs[len(evs)-1]
		var detail map[string]any
		if last.name != "error" || json.Unmarshal([]byte(last.data), &detail) != nil || len(detail) != 1 ||
			!strings.Contains(fmt.Sprint(detail["detail"]), "The model crashed mid-answer") {
			t.Fatalf("last event: %v", last)
		}
		run := agWaitRun(t, e, f.edATok, runID)
		if run["status"] != "failed" || !strings.Contains(run["error"].(string), "The model crashed mid-answer") || run["finished_at"] == nil {
			t.Errorf("run: %v", run)
		}
		agWaitNotification(t, e, f.edATok, runID, notify.RunFailed)
		if total, _ := agUsage(t, e, f.adminTok, fmt.Sprintf("&agent_id=%d&status=error", agentID)); total != 1 {
			t.Errorf("error usage events: %d", total)
		}
	})

	t.Run("WithoutProvider", func(t *testing.T) {
		t.Parallel()
		f := agSetup(t)
		e := f.e
		srv := httptest.NewServer(e.h)
		t.Cleanup(srv.Close)
		agentID := agID(agCreate(t, e, f.edATok, map[string]any{"environment_id": f.envA, "name": "Unplugged", "kind": "writer"}))
		res, body, evs := agPostStream(t, fmt.Sprintf("%s/api/agents/%d/execute", srv.URL, agentID), f.edATok, map[string]any{"input": "go", "stream": true})
		// As without stream: a 409 that says how to add a provider, not a
		// 200 stream that then fails.
		if res.StatusCode != 409 || !strings.Contains(body, "/api/configurations") {
			t.Errorf("BUG: stream without a provider: %d %s %v (want 409 naming /api/configurations)", res.StatusCode, body, evs)
		}
		list := e.do(t, "GET", fmt.Sprintf("/api/agents/%d/runs", agentID), f.edATok, nil).Data()
		if items := agItems(list); len(items) != 1 || items[0]["status"] != "failed" {
			t.Errorf("the run is recorded failed: %v", list)
		}
	})
}

// ---- restart recovery ----

func TestAgentRunRestartRecovery(t *testing.T) {
	t.Parallel()
	f := agSetup(t)
	e := f.e
	ctx := context.Background()
	fake := fakeOpenAI(t, func(int, map[string]any) (int, string) { return 200, "survived" })
	agConfigure(t, e, fake.URL+"/v1")
	agentID := agID(agCreate(t, e, f.edATok, map[string]any{"environment_id": f.envA, "name": "Durable", "kind": "writer"}))

	// Two queued runs; no runner yet.
	retried := agID(agExecute(t, e, f.edATok, agentID, map[string]any{"input": "first"}))
	exhausted := agID(agExecute(t, e, f.edATok, agentID, map[string]any{"input": "second"}))

	// A process claimed the first job and crashed mid-call (through the
	// store, as the runner does; its lease expires at once, as it has by
	// the time another instance looks on PostgreSQL) ...
	job, err := e.app.DB.ClaimJobLeased(ctx, []string{agent.RunJob}, store.JobLease{Owner: "crashed", For: time.Millisecond})
	if err != nil || job.ID != *agMustRun(t, e, retried).JobID {
		t.Fatalf("claim: %+v %v", job, err)
	}
	if ok, err := e.app.DB.StartRun(ctx, retried); !ok || err != nil {
		t.Fatalf("start run: %v %v", ok, err)
	}
	// ... and the second one was on its last attempt (written directly, as a
	// crash leaves the row).
	jobID := *agMustRun(t, e, exhausted).JobID
	raw := storetest.Raw(t, e.app.DB)
	now := time.Now().UTC().Format(store.TimeFormat)
	if _, err := raw.Exec(`UPDATE jobs SET status = 'running', attempts = max_attempts, started_at = ?, updated_at = ? WHERE id = ?`, now, now, jobID); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`UPDATE agent_runs SET status = 'running', started_at = ? WHERE id = ?`, now, exhausted); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	for _, id := range []int64{retried, exhausted} {
		if r := e.do(t, "GET", fmt.Sprintf("/api/agents/runs/%d", id), f.edATok, nil); r.Data()["status"] != "running" {
			t.Fatalf("before the restart: %s", r.Body)
		}
	}

	// The restart.
	time.Sleep(5 * time.Millisecond) // the crashed claim's lease is over
	agRunJobs(t, e)
	run := agWaitRun(t, e, f.edATok, retried)
	if run["status"] != "succeeded" || run["output"] != "survived" {
		t.Errorf("the interrupted run with attempts left: %v", run)
	}
	if j := agWaitJob(t, e, retried); j.Status != store.JobSucceeded || j.Attempts != 2 {
		t.Errorf("its job: %+v", j)
	}
	run = agWaitRun(t, e, f.edATok, exhausted)
	if run["status"] != "failed" || !strings.Contains(run["error"].(string), "interrupted") || run["finished_at"] == nil {
		t.Errorf("the interrupted run out of attempts: %v", run)
	}
	if j := agWaitJob(t, e, exhausted); j.Status != store.JobFailed {
		t.Errorf("its job: %+v", j)
	}
	agWaitNotification(t, e, f.edATok, exhausted, notify.RunFailed)
	agWaitNotification(t, e, f.edATok, retried, notify.RunSucceeded)
	if reqs := fake.Requests(); len(reqs) != 1 || !strings.Contains(fmt.Sprint(reqs[0]["messages"]), "first") {
		t.Errorf("provider calls: %v", reqs)
	}
	// Nothing is left running.
	if list := e.do(t, "GET", fmt.Sprintf("/api/agents/%d/runs?status=running", agentID), f.adminTok, nil).Data(); agNum(list["total"]) != 0 {
		t.Errorf("runs left running: %v", list)
	}
}

func agMustRun(t *testing.T, e *env, id int64) *store.AgentRun {
	t.Helper()
	r, err := e.app.DB.RunByID(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if r.JobID == nil {
		t.Fatalf("run %d has no job", id)
	}
	return r
}

// ---- bad input ----

func TestAgentRunBadInput(t *testing.T) {
	t.Parallel()
	f := agSetup(t)
	e := f.e
	fake := fakeOpenAI(t, nil)
	agConfigure(t, e, fake.URL+"/v1")
	// No runner: accepted runs stay queued.
	agentID := agID(agCreate(t, e, f.edATok, map[string]any{"environment_id": f.envA, "name": "Picky", "kind": "writer"}))
	exec := fmt.Sprintf("/api/agents/%d/execute", agentID)
	vars := func(n int) map[string]string {
		m := map[string]string{}
		for i := range n {
			m[fmt.Sprintf("v%d", i)] = "x"
		}
		return m
	}

	for _, c := range []struct {
		name  string
		tok   string
		body  any
		code  int
		field string
	}{
		{"empty input", f.edATok, map[string]any{"input": ""}, 422, "input"},
		{"blank input", f.edATok, map[string]any{"input": "  \n "}, 422, "input"},
		{"no input", f.edATok, map[string]any{"variables": map[string]string{"a": "b"}}, 422, "input"},
		{"input over 100000 characters", f.edATok, map[string]any{"input": strings.Repeat("é", 100001)}, 422, "input"},
		{"101 variables", f.edATok, map[string]any{"input": "x", "variables": vars(101)}, 422, "variables"},
		{"empty variable name", f.edATok, map[string]any{"input": "x", "variables": map[string]string{"": "y"}}, 422, "variables"},
		{"variable value too long", f.edATok, map[string]any{"input": "x", "variables": map[string]string{"a": strings.Repeat("y", 20001)}}, 422, "variables"},
		{"variables not strings", f.edATok, `{"input":"x","variables":{"a":1}}`, 422, "variables"},
		{"unknown field", f.edATok, map[string]any{"input": "x", "temperature": 1}, 422, "temperature"},
		{"stream not a boolean", f.edATok, map[string]any{"input": "x", "stream": "yes"}, 422, "stream"},
		{"environment not granted", f.edATok, map[string]any{"input": "x", "environment_id": f.envB}, 422, "environment_id"},
		{"environment not assigned", f.edATok, map[string]any{"input": "x", "environment_id": f.envC}, 422, "environment_id"},
		{"environment 0", f.edATok, map[string]any{"input": "x", "environment_id": 0}, 422, "environment_id"},
		{"not JSON", f.edATok, "{input", 400, ""},
		{"viewer", f.viewATok, map[string]any{"input": "x"}, 403, ""},
		{"editor of another environment", f.edBTok, map[string]any{"input": "x"}, 404, ""},
	} {
		if r := e.do(t, "POST", exec, c.tok, c.body); r.Code != c.code || !strings.Contains(r.Detail(), c.field) {
			t.Errorf("%s: %d %s (want %d naming %q)", c.name, r.Code, truncate(r.Body, 300), c.code, c.field)
		}
	}
	// The limits themselves are fine.
	agExecute(t, e, f.edATok, agentID, map[string]any{"input": strings.Repeat("é", 100000), "variables": vars(100)})

	// An agent assigned to C may run there, with the run counted in C.
	if r := e.do(t, "PUT", fmt.Sprintf("/api/agents/%d/assignments", agentID), f.edATok, map[string]any{"environment_ids": []int64{f.envC}}); r.Code != 200 {
		t.Fatalf("assign: %d %s", r.Code, r.Body)
	}
	if run := agExecute(t, e, f.edATok, agentID, map[string]any{"input": "x", "environment_id": f.envC}); agNum(run["environment_id"]) != float64(f.envC) {
		t.Errorf("run in an assigned environment: %v", run)
	}

	// A global agent needs an environment for an editor; an admin may run
	// it outside any.
	global := agID(agCreate(t, e, f.adminTok, map[string]any{"name": "Global", "kind": "editor"}))
	if r := e.do(t, "POST", fmt.Sprintf("/api/agents/%d/execute", global), f.edATok, map[string]any{"input": "x"}); r.Code != 422 || !strings.Contains(r.Detail(), "environment_id") {
		t.Errorf("editor runs a global agent without environment: %d %s", r.Code, r.Body)
	}
	if run := agExecute(t, e, f.adminTok, global, map[string]any{"input": "x"}); run["environment_id"] != nil {
		t.Errorf("admin's run of a global agent: %v", run)
	}

	// An inactive agent does not run.
	if r := e.do(t, "PUT", fmt.Sprintf("/api/agents/%d", agentID), f.edATok, map[string]any{"is_active": false}); r.Code != 200 {
		t.Fatalf("deactivate: %d", r.Code)
	}
	if r := e.do(t, "POST", exec, f.edATok, map[string]any{"input": "x"}); r.Code != 409 || !strings.Contains(r.Detail(), "is_active") {
		t.Errorf("inactive agent: %d %s", r.Code, r.Body)
	}

	// Ids in paths.
	for _, c := range []struct{ method, path string }{
		{"GET", "/api/agents/abc"}, {"GET", "/api/agents/0"}, {"GET", "/api/agents/-1"}, {"GET", "/api/agents/99999"},
		{"PUT", "/api/agents/abc"}, {"DELETE", "/api/agents/0"},
		{"GET", "/api/agents/abc/assignments"}, {"PUT", "/api/agents/0/assignments"},
		{"GET", "/api/agents/abc/runs"}, {"GET", "/api/agents/0/runs"},
		{"POST", "/api/agents/abc/execute"}, {"POST", "/api/agents/0/execute"}, {"POST", "/api/agents/99999/execute"},
		{"GET", "/api/agents/runs/abc"}, {"GET", "/api/agents/runs/0"}, {"GET", "/api/agents/runs/99999"},
		{"POST", "/api/agents/runs/abc/cancel"}, {"POST", "/api/agents/runs/0/cancel"}, {"POST", "/api/agents/runs/99999/cancel"},
	} {
		var body any
		switch {
		case strings.HasSuffix(c.path, "/assignments"):
			body = map[string]any{"environment_ids": []int64{}}
		case strings.HasSuffix(c.path, "/execute"):
			body = map[string]any{"input": "x"}
		case c.method == "PUT":
			body = map[string]any{"name": "x"}
		}
		if r := e.do(t, c.method, c.path, f.adminTok, body); r.Code != 404 {
			t.Errorf("%s %s: %d %s", c.method, c.path, r.Code, r.Body)
		}
	}

	// The runs list's filters.
	for _, q := range []string{"?status=done", "?status=QUEUED", "?per_page=500", "?page=-1"} {
		if r := e.do(t, "GET", fmt.Sprintf("/api/agents/%d/runs%s", agentID, q), f.edATok, nil); r.Code != 422 {
			t.Errorf("runs%s: %d %s", q, r.Code, r.Body)
		}
	}
	if list := e.do(t, "GET", fmt.Sprintf("/api/agents/%d/runs?status=queued", agentID), f.edATok, nil).Data(); agNum(list["total"]) != 2 {
		t.Errorf("queued runs: %v", list)
	}
	if len(fake.Requests()) != 0 {
		t.Errorf("the provider was called without a runner")
	}
}

// A runner that stops (a shutdown) while a run is with the provider
// abandons the call and puts the job back in the queue; the next runner
// finishes the run.
func TestAgentRunSurvivesShutdown(t *testing.T) {
	t.Parallel()
	f := agSetup(t)
	e := f.e
	started, gone := make(chan struct{}, 4), make(chan struct{}, 4)
	var calls atomic.Int32
	fake := agOpenAI(t, func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			started <- struct{}{}
			<-r.Context().Done()
			gone <- struct{}{}
			return
		}
		agCompletion(w, "after the restart")
	})
	agConfigure(t, e, fake.URL+"/v1")
	agentID := agID(agCreate(t, e, f.edATok, map[string]any{"environment_id": f.envA, "name": "Resilient", "kind": "writer"}))
	runID := agID(agExecute(t, e, f.edATok, agentID, map[string]any{"input": "hello"}))

	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.app.Jobs.Run(ctx) }()
	agWaitChan(t, started, "the provider call")
	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("runner: %v", err)
		}
	case <-time.After(agBound):
		t.Fatal("the runner did not stop while a run was with the provider")
	}
	agWaitChan(t, gone, "the provider call being abandoned")
	job := agJobOfRun(t, e, runID)
	if job.Status != store.JobQueued || job.Attempts != 1 || !strings.Contains(job.LastError, "shutdown") {
		t.Errorf("job after the shutdown: %+v", job)
	}
	if r := e.do(t, "GET", fmt.Sprintf("/api/agents/runs/%d", runID), f.edATok, nil); r.Data()["finished_at"] != nil ||
		(r.Data()["status"] != "queued" && r.Data()["status"] != "running") {
		t.Errorf("run after the shutdown: %s", r.Body)
	}

	agRunJobs(t, e)
	run := agWaitRun(t, e, f.edATok, runID)
	if run["status"] != "succeeded" || run["output"] != "after the restart" {
		t.Errorf("run after the restart: %v", run)
	}
	if job := agWaitJob(t, e, runID); job.Status != store.JobSucceeded || job.Attempts != 2 {
		t.Errorf("job after the restart: %+v", job)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("provider calls: %d", n)
	}
}

// A run whose answer the provider cut off at max_tokens (finish_reason
// length, and no usage: a server that ignores include_usage) says so:
// stop_reason length, truncated, usage estimated; one that finished says
// stop.
func TestAgentRunTruncated(t *testing.T) {
	t.Parallel()
	f := agSetup(t)
	fake := fakeOpenAI(t, func(n int, req map[string]any) (int, string) { return 200, "Tea is a drink made" })
	fake.finish, fake.noUsage = "length", true
	agConfigure(t, f.e, fake.URL+"/v1")
	agRunJobs(t, f.e)
	agentID := agID(agCreate(t, f.e, f.edATok, map[string]any{"environment_id": f.envA, "name": "Tea writer", "kind": "writer",
		"system_prompt": "You write.", "max_tokens": 4}))
	run := agWaitRun(t, f.e, f.edATok, agID(agExecute(t, f.e, f.edATok, agentID, map[string]any{"input": "Write about tea."})))
	if run["status"] != "succeeded" || run["stop_reason"] != "length" || run["truncated"] != true || agNum(run["output_tokens"]) == 0 {
		t.Fatalf("cut-off run: %v", run)
	}
	fake.finish, fake.noUsage = "", false
	run = agWaitRun(t, f.e, f.edATok, agID(agExecute(t, f.e, f.edATok, agentID, map[string]any{"input": "Write about tea."})))
	if run["status"] != "succeeded" || run["stop_reason"] != "stop" || run["truncated"] != false {
		t.Fatalf("finished run: %v", run)
	}
}

// GET /api/agents/credentials: an editor lists the AI credentials an agent
// of their environment may use, without secrets or addresses; another
// environment is 404, a viewer 403, a missing environment_id 422.
func TestAgentCredentials(t *testing.T) {
	t.Parallel()
	f := agSetup(t)
	e := f.e
	global := e.credential(t, "openai", "", "gpt-4o-mini", nil)
	ownA := e.credential(t, "anthropic", "", "claude-sonnet", &f.envA)
	e.credential(t, "openai", "", "", &f.envB)
	e.credential(t, "wordpress", "https://site.example", "", nil)

	r := e.do(t, "GET", fmt.Sprintf("/api/agents/credentials?environment_id=%d", f.envA), f.edATok, nil)
	if r.Code != http.StatusOK {
		t.Fatalf("list: %d %s", r.Code, r.Body)
	}
	items, _ := r.Data()["items"].([]any)
	if len(items) != 2 {
		t.Fatalf("want environment A's and the global AI credential: %s", r.Body)
	}
	ids := []int64{}
	for _, it := range items {
		m := it.(map[string]any)
		ids = append(ids, int64(m["id"].(float64)))
		for _, k := range []string{"secret_hint", "base_url", "username"} {
			if _, ok := m[k]; ok {
				t.Errorf("an editor sees %s: %v", k, m)
			}
		}
	}
	if !(ids[0] == global.ID && ids[1] == ownA.ID || ids[0] == ownA.ID && ids[1] == global.ID) {
		t.Fatalf("ids %v, want %d and %d", ids, global.ID, ownA.ID)
	}
	if m := items[0].(map[string]any); m["provider"] == "" || m["name"] == "" {
		t.Fatalf("no name or provider: %v", m)
	}

	for _, c := range []struct {
		tok, query string
		want       int
	}{
		{f.edATok, fmt.Sprintf("environment_id=%d", f.envB), http.StatusNotFound},
		{f.viewATok, fmt.Sprintf("environment_id=%d", f.envA), http.StatusForbidden},
		{f.edATok, "", http.StatusUnprocessableEntity},
		{f.edATok, "environment_id=abc", http.StatusUnprocessableEntity},
	} {
		if r := e.do(t, "GET", "/api/agents/credentials?"+c.query, c.tok, nil); r.Code != c.want || r.Detail() == "" {
			t.Errorf("%q: %d %s, want %d", c.query, r.Code, r.Body, c.want)
		}
	}
}
