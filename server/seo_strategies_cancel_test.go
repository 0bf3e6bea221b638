package server_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/copydesk/copydesk/server"
	"github.com/copydesk/copydesk/server/notify"
	"github.com/copydesk/copydesk/store"
)

// Tests of cancelling and deleting strategies, of the notification a
// build's end raises, and of a strategy a dead process left building.

// stratBlockingSERP is a local SerpApi whose searches block until
// released or until the caller gives up, as agBlocking does for a model.
type stratBlockingSERP struct {
	srv      *httptest.Server
	started  chan struct{} // a token per search that arrived
	gone     chan struct{} // a token per search whose caller went away
	release  chan struct{}
	requests atomic.Int32
}

func newStratBlockingSERP(t *testing.T) *stratBlockingSERP {
	t.Helper()
	b := &stratBlockingSERP{started: make(chan struct{}, 16), gone: make(chan struct{}, 16), release: make(chan struct{})}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/search.json" {
			w.WriteHeader(404)
			return
		}
		b.requests.Add(1)
		b.started <- struct{}{}
		select {
		case <-b.release:
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"search_metadata":{"id":"1","status":"Success"},"organic_results":[{"position":1,"link":"https://a.example/1"}]}`)
		case <-r.Context().Done():
			b.gone <- struct{}{}
		}
	}))
	t.Cleanup(b.srv.Close)
	var once sync.Once
	// Registered after srv.Close, so it runs before it: Close waits for
	// the blocked handlers.
	t.Cleanup(func() { once.Do(func() { close(b.release) }) })
	return b
}

// stratJobOf is the job of a strategy, as the store has it.
func stratJobOf(t *testing.T, e *env, id int64) *store.Job {
	t.Helper()
	ctx := context.Background()
	st, err := e.app.DB.StrategyByID(ctx, id)
	if err != nil || st.JobID == nil {
		t.Fatalf("strategy %d: %+v %v", id, st, err)
	}
	job, err := e.app.DB.JobByID(ctx, *st.JobID)
	if err != nil {
		t.Fatal(err)
	}
	return job
}

// stratNotification returns the user's notification that links to a
// strategy, or nil.
func stratNotification(t *testing.T, e *env, tok string, id int64) map[string]any {
	t.Helper()
	if ns := notesLinked(t, e, tok, fmt.Sprintf("/api/seo/strategies/%d", id)); len(ns) > 0 {
		return ns[0]
	}
	return nil
}

// TestStrategyCancel: a queued or building strategy is cancelled by an
// editor of its environment, at once; a build's SerpApi or model call is
// cut, and the job's ending turns it neither into failed nor into a
// notification. Deleting it while it builds is refused.
func TestStrategyCancel(t *testing.T) {
	t.Parallel()
	cancelPath := func(id int64) string { return fmt.Sprintf("/api/seo/strategies/%d/cancel", id) }
	path := func(id int64) string { return fmt.Sprintf("/api/seo/strategies/%d", id) }

	t.Run("Queued", func(t *testing.T) {
		t.Parallel()
		f := agSetup(t)
		stratKeywords(t, f.e, f.envA, stratShoes)
		// No runner yet: the strategy waits in the queue.
		r := f.e.do(t, "POST", "/api/seo/strategies", f.edATok, map[string]any{"environment_id": f.envA, "name": "Shoes"})
		if r.Code != 202 {
			t.Fatalf("create: %d %s", r.Code, r.Body)
		}
		id := agID(r.Data())
		for _, c := range []struct {
			name, tok string
			code      int
		}{{"Viewer", f.viewATok, 403}, {"AnotherEnvironment", f.edBTok, 404}} {
			if r := f.e.do(t, "POST", cancelPath(id), c.tok, nil); r.Code != c.code {
				t.Errorf("%s: %d %s; want %d", c.name, r.Code, r.Body, c.code)
			}
		}
		if r := f.e.do(t, "DELETE", path(id), f.edATok, nil); r.Code != 409 ||
			r.Detail() != fmt.Sprintf("strategy %d is queued: cancel it first (POST /api/seo/strategies/%d/cancel)", id, id) {
			t.Errorf("delete a queued strategy: %d %s", r.Code, r.Body)
		}
		r = f.e.do(t, "POST", cancelPath(id), f.edATok, nil)
		if d := r.Data(); r.Code != 200 || d["status"] != "cancelled" || d["error"] != "cancelled by alice" || d["built_at"] != nil {
			t.Fatalf("cancel: %d %s", r.Code, r.Body)
		}
		// A queued job is cancelled, and its OnFinish run, within the
		// request.
		if job := stratJobOf(t, f.e, id); job.Status != store.JobCancelled {
			t.Errorf("job %+v", job)
		}
		if n := stratNotification(t, f.e, f.edATok, id); n != nil {
			t.Errorf("a cancelled strategy raised %v", n)
		}
		if r := f.e.do(t, "POST", cancelPath(id), f.edATok, nil); r.Code != 409 || !strings.Contains(r.Detail(), "already cancelled") {
			t.Errorf("cancel twice: %d %s", r.Code, r.Body)
		}
		// Started later, the runner skips it: one queued after it is built.
		agRunJobs(t, f.e)
		next := stratCreate(t, f.e, f.edATok, map[string]any{"environment_id": f.envA, "name": "Shoes 2"})
		if next["status"] != "ready" {
			t.Fatalf("next strategy: %v", next)
		}
		if st := stratWait(t, f.e, f.edATok, id); st["status"] != "cancelled" || st["error"] != "cancelled by alice" || len(st["clusters"].([]any)) != 0 {
			t.Errorf("the cancelled strategy was built: %v", st)
		}
		// Cancelled, it can be deleted.
		if r := f.e.do(t, "DELETE", path(id), f.edATok, nil); r.Code != 200 {
			t.Errorf("delete: %d %s", r.Code, r.Body)
		}
	})

	// Running: the build holds in a SerpApi search (method serp) or in the
	// model's refining (refine), and the cancel cuts it.
	for _, c := range []struct {
		name string
		body map[string]any
		stub func(t *testing.T, f *agFixture) (started, gone <-chan struct{}, requests func() int32)
	}{
		{"RunningSERP", map[string]any{"method": "serp"}, func(t *testing.T, f *agFixture) (<-chan struct{}, <-chan struct{}, func() int32) {
			b := newStratBlockingSERP(t)
			f.e.credential(t, "serp", b.srv.URL, "", &f.envA)
			return b.started, b.gone, b.requests.Load
		}},
		{"RunningModel", map[string]any{"method": "lexical", "refine": true}, func(t *testing.T, f *agFixture) (<-chan struct{}, <-chan struct{}, func() int32) {
			b := agBlockingOpenAI(t)
			agConfigure(t, f.e, b.srv.URL+"/v1")
			return b.started, b.gone, b.requests.Load
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := agSetup(t)
			ids := stratKeywords(t, f.e, f.envA, stratShoes)
			started, gone, requests := c.stub(t, f)
			agRunJobs(t, f.e)
			body := map[string]any{"environment_id": f.envA, "name": "Shoes"}
			for k, v := range c.body {
				body[k] = v
			}
			r := f.e.do(t, "POST", "/api/seo/strategies", f.edATok, body)
			if r.Code != 202 {
				t.Fatalf("create: %d %s", r.Code, r.Body)
			}
			id := agID(r.Data())
			agWaitChan(t, started, "the call under way")
			if r := f.e.do(t, "GET", path(id), f.viewATok, nil); r.Data()["status"] != "running" {
				t.Fatalf("while the call holds: %s", r.Body)
			}
			if r := f.e.do(t, "DELETE", path(id), f.edATok, nil); r.Code != 409 || !strings.Contains(r.Detail(), "is running: cancel it first") {
				t.Errorf("delete a running strategy: %d %s", r.Code, r.Body)
			}
			if r := f.e.do(t, "POST", cancelPath(id), f.viewATok, nil); r.Code != 403 {
				t.Errorf("viewer cancels: %d", r.Code)
			}
			if r := f.e.do(t, "POST", cancelPath(id), f.edBTok, nil); r.Code != 404 {
				t.Errorf("another environment's editor cancels: %d", r.Code)
			}
			r = f.e.do(t, "POST", cancelPath(id), f.edATok, nil)
			if d := r.Data(); r.Code != 200 || d["status"] != "cancelled" || d["error"] != "cancelled by alice" {
				t.Fatalf("cancel: %d %s", r.Code, r.Body)
			}
			agWaitChan(t, gone, "the call being cut")
			var job *store.Job
			agWaitFor(t, "the strategy's job ends", func() bool {
				job = stratJobOf(t, f.e, id)
				return job.Status.Final()
			})
			if job.Status != store.JobCancelled {
				t.Errorf("job %+v", job)
			}
			// A strategy built after it (lexical, no provider) raises its
			// note: by then the cancelled job's OnFinish has long run.
			next := stratCreate(t, f.e, f.edATok, map[string]any{"environment_id": f.envA, "name": "Next", "method": "lexical"})
			if next["status"] != "ready" {
				t.Fatalf("next strategy: %v", next)
			}
			agWaitFor(t, "the next strategy's note", func() bool { return stratNotification(t, f.e, f.edATok, agID(next)) != nil })
			st := stratWait(t, f.e, f.edATok, id)
			if st["status"] != "cancelled" || st["error"] != "cancelled by alice" || st["built_at"] != nil || len(st["clusters"].([]any)) != 0 {
				t.Errorf("after the job ended: %v", st)
			}
			if n := stratNotification(t, f.e, f.edATok, id); n != nil {
				t.Errorf("a cancelled strategy raised %v", n)
			}
			if n := requests(); n != 1 {
				t.Errorf("calls: %d", n)
			}
			var kwIDs []int64
			for _, id := range ids {
				kwIDs = append(kwIDs, id)
			}
			if serps, err := f.e.app.DB.KeywordSERPs(context.Background(), kwIDs); err != nil || len(serps) != 0 {
				t.Errorf("SERP data from a cut search: %v %v", serps, err)
			}
			if r := f.e.do(t, "POST", cancelPath(id), f.edATok, nil); r.Code != 409 {
				t.Errorf("cancel twice: %d %s", r.Code, r.Body)
			}
			if r := f.e.do(t, "DELETE", path(id), f.edATok, nil); r.Code != 200 {
				t.Errorf("delete: %d %s", r.Code, r.Body)
			}
		})
	}

	t.Run("Finished", func(t *testing.T) {
		t.Parallel()
		f := agSetup(t)
		stratKeywords(t, f.e, f.envA, stratShoes)
		agRunJobs(t, f.e)
		st := stratCreate(t, f.e, f.edATok, map[string]any{"environment_id": f.envA, "name": "Shoes"})
		id := agID(st)
		if st["status"] != "ready" {
			t.Fatalf("strategy %v", st)
		}
		r := f.e.do(t, "POST", cancelPath(id), f.edATok, nil)
		if r.Code != 409 || r.Detail() != fmt.Sprintf("strategy %d already ready: only a queued or running strategy can be cancelled", id) {
			t.Fatalf("cancel a ready strategy: %d %s", r.Code, r.Body)
		}
		for _, p := range []string{"/api/seo/strategies/999999/cancel", "/api/seo/strategies/0/cancel", "/api/seo/strategies/abc/cancel"} {
			if r := f.e.do(t, "POST", p, f.edATok, nil); r.Code != 404 && r.Code != 422 {
				t.Errorf("%s: %d %s", p, r.Code, r.Body)
			}
		}
		if r := f.e.do(t, "DELETE", path(id), f.edATok, nil); r.Code != 200 || r.Data()["deleted"] != true {
			t.Errorf("delete a ready strategy: %d %s", r.Code, r.Body)
		}
	})
}

// TestStrategyNotifications: whoever created a strategy is told when its
// build is ready (the number of clusters) or failed (why); nobody else is.
func TestStrategyNotifications(t *testing.T) {
	t.Parallel()
	f := agSetup(t)
	stratKeywords(t, f.e, f.envA, stratShoes)
	serp := newSERPFake(t)
	serp.Fail(true)
	f.e.credential(t, "serp", serp.srv.URL, "", &f.envA)
	agRunJobs(t, f.e)

	ready := stratCreate(t, f.e, f.edATok, map[string]any{"environment_id": f.envA, "name": "Shoes", "method": "lexical"})
	failed := stratCreate(t, f.e, f.edATok, map[string]any{"environment_id": f.envA, "name": "Shoes SERP", "method": "serp"})
	if ready["status"] != "ready" || ready["cluster_count"] != 3.0 || failed["status"] != "failed" ||
		!strings.Contains(failed["error"].(string), "no SERP data could be had") {
		t.Fatalf("strategies: %v\n%v", ready, failed)
	}
	for _, c := range []struct {
		st                map[string]any
		kind, title, body string
	}{
		{ready, "run.succeeded", "Strategy Shoes is ready", "3 clusters"},
		// The error as every note gives one: a preview.
		{failed, "run.failed", "Strategy Shoes SERP failed", notify.Preview(failed["error"].(string), 200)},
	} {
		id := agID(c.st)
		var n map[string]any
		agWaitFor(t, fmt.Sprintf("the note of strategy %d", id), func() bool {
			n = stratNotification(t, f.e, f.edATok, id)
			return n != nil
		})
		if n["kind"] != c.kind || n["title"] != c.title || n["body"] != c.body || n["environment_id"] != float64(f.envA) {
			t.Errorf("note of strategy %d: %v; want %s %q %q", id, n, c.kind, c.title, c.body)
		}
		// Only its creator: not a viewer of the environment, not an admin.
		for _, tok := range []string{f.viewATok, f.adminTok} {
			if n := stratNotification(t, f.e, tok, id); n != nil {
				t.Errorf("another user got %v", n)
			}
		}
	}
}

// A strategy a dead process left queued, with no job to build it, fails
// when the server starts; a cancelled one stays cancelled.
func TestStrategyOrphanFailsAtStart(t *testing.T) {
	t.Parallel()
	f := agSetup(t, func(c *server.Config) { c.HTTPAddr = "127.0.0.1:0"; c.NoScheduler = true })
	ctx := context.Background()
	db := f.e.app.DB
	var sts [2]*store.Strategy
	for i := range sts {
		st, err := db.CreateStrategyWithJob(ctx, store.NewStrategy{EnvironmentID: f.envA, Name: "Plan", CreatedBy: &f.edA.ID,
			StrategyParams: store.StrategyParams{Method: "lexical", MinShared: 3, Similarity: 0.5}},
			store.RunJob{Kind: "seo.strategy", MaxAttempts: 1, Payload: func(id int64) any { return map[string]int64{"strategy_id": id} }})
		if err != nil {
			t.Fatal(err)
		}
		sts[i] = st
	}
	orphan, cancelled := sts[0], sts[1]
	if _, err := db.FinishStrategy(ctx, cancelled.ID, store.StrategyOutcome{Status: store.StrategyCancelled, Error: "cancelled by alice"}); err != nil {
		t.Fatal(err)
	}
	for _, st := range sts { // their jobs gone, as after a crash mid-way
		if _, err := db.CancelJob(ctx, *st.JobID); err != nil {
			t.Fatal(err)
		}
	}
	serveApp(t, f.e)
	var m map[string]any
	agWaitFor(t, "the orphan strategy to fail", func() bool {
		m = f.e.do(t, "GET", fmt.Sprintf("/api/seo/strategies/%d", orphan.ID), f.edATok, nil).Data()
		return m["status"] == "failed"
	})
	if m["error"] != "interrupted by a restart" || m["built_at"] != nil {
		t.Errorf("orphan strategy: %v", m)
	}
	if m := f.e.do(t, "GET", fmt.Sprintf("/api/seo/strategies/%d", cancelled.ID), f.edATok, nil).Data(); m["status"] != "cancelled" ||
		m["error"] != "cancelled by alice" {
		t.Errorf("cancelled strategy: %v", m)
	}
	// Failed, it can be deleted.
	if r := f.e.do(t, "DELETE", fmt.Sprintf("/api/seo/strategies/%d", orphan.ID), f.edATok, nil); r.Code != 200 {
		t.Errorf("delete: %d %s", r.Code, r.Body)
	}
}
