package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/copydesk/copydesk/server"
	"github.com/copydesk/copydesk/server/notify"
	"github.com/copydesk/copydesk/server/publish/wordpress/wptest"
	"github.com/copydesk/copydesk/store"
)

// Background work tells whoever asked for it how it ended, once: queued
// WordPress publishes, queued archetype generations and scout runs. These
// tests count the notifications that link to the thing, so a second one
// (a retry that notified, a cancel that did) fails them.

// myNotes is tok's user's notifications, newest first (up to 200).
func myNotes(t *testing.T, e *env, tok string) []map[string]any {
	t.Helper()
	r := e.do(t, "GET", "/api/notifications?per_page=200", tok, nil)
	if r.Code != 200 {
		t.Fatalf("notifications: %d %s", r.Code, r.Body)
	}
	return agItems(r.Data())
}

// notesLinked is every notification of tok's user that links to link,
// newest first.
func notesLinked(t *testing.T, e *env, tok, link string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, n := range myNotes(t, e, tok) {
		if n["link"] == link {
			out = append(out, n)
		}
	}
	return out
}

// noteOnce waits for the notification that links to link and checks that
// it is the only one and of kind, and that its link answers tok.
func noteOnce(t *testing.T, e *env, tok, link, kind string) map[string]any {
	t.Helper()
	var got []map[string]any
	agWaitFor(t, "a notification linking to "+link, func() bool {
		got = notesLinked(t, e, tok, link)
		return len(got) > 0
	})
	if len(got) != 1 || got[0]["kind"] != kind {
		t.Fatalf("notifications linking to %s: %v; want one %s", link, got, kind)
	}
	if r := e.do(t, "GET", link, tok, nil); r.Code != 200 {
		t.Errorf("the notification's link %s: %d %s", link, r.Code, r.Body)
	}
	return got[0]
}

// noNotes checks that tok's user has no notification linking to link.
func noNotes(t *testing.T, e *env, tok, link, when string) {
	t.Helper()
	if got := notesLinked(t, e, tok, link); len(got) != 0 {
		t.Fatalf("%s: notifications %v", when, got)
	}
}

func TestQueuedPublishNotifies(t *testing.T) {
	t.Parallel()
	postFailing := func(on *atomic.Bool, status int) func(r *http.Request) (int, string, string, bool) {
		return func(r *http.Request) (int, string, string, bool) {
			return status, "rest_error", "WordPress says: not now", r.Method == "POST" && on.Load()
		}
	}
	cases := []struct {
		name string
		// failFor is how many attempts of the job the site refuses with
		// status (then answers); -1: every one.
		failFor, status int
		kind, body      string
		job             store.JobStatus
	}{
		{name: "Published", kind: notify.PostPublished, body: "On WordPress as draft: http", job: store.JobSucceeded},
		{name: "Refused", failFor: -1, status: 400, kind: notify.PostFailed, body: "WordPress says: not now", job: store.JobFailed},
		{name: "RetriedThenPublished", failFor: 1, status: 503, kind: notify.PostPublished, body: "On WordPress as draft:", job: store.JobSucceeded},
		{name: "RetriedOutOfAttempts", failFor: -1, status: 503, kind: notify.PostFailed, body: "WordPress says: not now", job: store.JobFailed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w := newWPJobEnv(t)
			var failing atomic.Bool
			failing.Store(c.failFor != 0)
			w.site.Set(func(s *wptest.Site) { s.Fail = postFailing(&failing, c.status) })
			p := w.post(t, map[string]any{"title": "Queued " + c.name})
			link := fmt.Sprintf("/api/wordpress-posts/%v", p["id"])
			startJobs(t, w.env)
			id := w.queuePublish(t, p["id"])
			if c.status >= 500 {
				// Each attempt the runner retries ends quietly.
				for attempt := 1; attempt < store.DefaultJobMaxAttempts && (c.failFor < 0 || attempt <= c.failFor); attempt++ {
					waitJob(t, w.env, id, fmt.Sprintf("attempt %d retried", attempt), func(j *store.Job) bool {
						return j.Attempts == attempt && j.Status == store.JobQueued
					})
					noNotes(t, w.env, w.editor, link, fmt.Sprintf("after attempt %d", attempt))
					if attempt == c.failFor {
						failing.Store(false)
					}
					w.clock.Advance(jobBackoff)
				}
			}
			if job := waitJob(t, w.env, id, "a final status", finished); job.Status != c.job {
				t.Fatalf("job: %+v", job)
			}
			n := noteOnce(t, w.env, w.editor, link, c.kind)
			if n["title"] != "Queued "+c.name || !strings.Contains(n["body"].(string), c.body) || n["environment_id"] != float64(w.envA) {
				t.Errorf("notification: %v", n)
			}
			// Told to whoever queued it, not to everyone who sees the post.
			noNotes(t, w.env, w.viewer, link, "the viewer")
		})
	}

	// A publish answered in the request tells nobody: the caller has it.
	t.Run("AnsweredInTheRequest", func(t *testing.T) {
		t.Parallel()
		w := newWPJobEnv(t)
		startJobs(t, w.env)
		for _, fail := range []bool{false, true} {
			w.site.Set(func(s *wptest.Site) {
				s.Fail = func(r *http.Request) (int, string, string, bool) {
					return 400, "rest_error", "no", fail && r.Method == "POST"
				}
			})
			p := w.post(t, map[string]any{"title": fmt.Sprintf("Now %v", fail)})
			if r := w.action(t, p["id"], "publish", nil); (r.Code == 200) == fail {
				t.Fatalf("publish (failing %v): %d %s", fail, r.Code, r.Body)
			}
			noNotes(t, w.env, w.editor, fmt.Sprintf("/api/wordpress-posts/%v", p["id"]), fmt.Sprintf("a publish in the request (failing %v)", fail))
		}
	})
}

func TestQueuedGenerationNotifies(t *testing.T) {
	t.Parallel()
	fastRetries := func(c *server.Config) { c.JobBackoff = func(int) time.Duration { return 10 * time.Millisecond } }
	noSDKRetries := func(c *server.Config) { c.ProviderRetries = -1 }
	cases := []struct {
		name     string
		reply    func(n int) (int, string)
		kind     string
		title    string
		body     string
		attempts int
	}{
		{"Succeeded", func(int) (int, string) { return 200, goodArticle }, notify.RunSucceeded,
			"Listicle generation finished: Sourdough for beginners", "How to bake your first loaf.", 1},
		{"RetriedThenSucceeded", func(n int) (int, string) {
			if n == 1 {
				return 429, "Rate limit reached"
			}
			return 200, goodArticle
		}, notify.RunSucceeded, "Listicle generation finished: Sourdough for beginners", "How to bake your first loaf.", 2},
		{"FailedOutOfAttempts", func(int) (int, string) { return 500, "The server had an error" }, notify.RunFailed,
			"Listicle generation failed", "The server had an error", store.DefaultJobMaxAttempts},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := agSetup(t, fastRetries, noSDKRetries)
			fake := fakeOpenAI(t, func(n int, _ map[string]any) (int, string) { return c.reply(n) })
			agConfigure(t, f.e, fake.URL+"/v1")
			agRunJobs(t, f.e)
			r := f.e.do(t, "POST", fmt.Sprintf("/api/cie/archetypes/%d/generate", cieBuiltin(t, f.e, f.edATok, "listicle")), f.edATok,
				map[string]any{"variables": map[string]any{"keyword": "sourdough", "audience": "beginners"}, "environment_id": f.envA})
			if r.Code != 202 {
				t.Fatalf("generate: %d %s", r.Code, r.Body)
			}
			id := agID(r.Data())
			link := fmt.Sprintf("/api/cie/runs/%d", id)
			n := noteOnce(t, f.e, f.edATok, link, c.kind)
			if n["title"] != c.title || !strings.Contains(n["body"].(string), c.body) {
				t.Errorf("notification: %v", n)
			}
			if got := len(fake.Requests()); got != c.attempts {
				t.Errorf("provider calls: %d, want %d", got, c.attempts)
			}
			noNotes(t, f.e, f.viewATok, link, "the viewer")
		})
	}

	// A streamed generation tells nobody: its requester watched it end.
	t.Run("Streamed", func(t *testing.T) {
		t.Parallel()
		f := agSetup(t)
		llm := newCIELLM(t, func(int) (string, bool) { return goodArticle, false })
		agConfigure(t, f.e, llm.srv.URL+"/v1")
		stop := startJobs(t, f.e)
		srv := httptest.NewServer(f.e.h)
		defer srv.Close()
		res, body, evs := agPostStream(t, fmt.Sprintf("%s/api/cie/archetypes/%d/generate", srv.URL, cieBuiltin(t, f.e, f.edATok, "review")), f.edATok,
			map[string]any{"variables": map[string]any{"keyword": "a stand mixer", "audience": "home bakers"}, "environment_id": f.envA, "stream": true})
		if res.StatusCode != 200 || len(evs) == 0 || evs[len(evs)-1].name != "done" {
			t.Fatalf("%d %s", res.StatusCode, body)
		}
		var done struct{ ID int64 }
		if err := json.Unmarshal([]byte(evs[len(evs)-1].data), &done); err != nil {
			t.Fatal(err)
		}
		run, err := f.e.app.DB.CIERunByID(context.Background(), done.ID)
		if err != nil || run.JobID == nil {
			t.Fatalf("run %+v %v", run, err)
		}
		waitJob(t, f.e, *run.JobID, "a final status", finished)
		stop() // the job's OnFinish has returned
		noNotes(t, f.e, f.edATok, fmt.Sprintf("/api/cie/runs/%d", done.ID), "a streamed generation")
	})
}

func TestScoutRunNotifies(t *testing.T) {
	t.Parallel()

	// A run cancelled while queued tells nobody; one that ends does, once.
	t.Run("Ended", func(t *testing.T) {
		t.Parallel()
		f := agSetup(t)
		scoutSeed(t, f)
		llm := newScoutLLM(t, func(int) string { return "no JSON here" })
		agConfigure(t, f.e, llm.url)
		start := func(body map[string]any) int64 {
			t.Helper()
			body["environment_id"] = f.envA
			r := f.e.do(t, "POST", "/api/seo/scout/runs", f.edATok, body)
			if r.Code != 202 {
				t.Fatalf("start: %d %s", r.Code, r.Body)
			}
			return agID(r.Data())
		}
		link := func(id int64) string { return fmt.Sprintf("/api/seo/scout/runs/%d", id) }
		cancelled := start(map[string]any{"sources": []string{"ideas"}})
		if r := f.e.do(t, "POST", link(cancelled)+"/cancel", f.edATok, nil); r.Code != 200 {
			t.Fatalf("cancel: %d %s", r.Code, r.Body)
		}
		// A queued job's cancel ends it, OnFinish included, in the request.
		noNotes(t, f.e, f.edATok, link(cancelled), "a run cancelled while queued")

		agRunJobs(t, f.e)
		ok := start(map[string]any{"sources": []string{"ideas"}})
		n := noteOnce(t, f.e, f.edATok, link(ok), notify.RunSucceeded)
		if n["title"] != "Keyword scout finished" || n["body"] != "1 candidate keyword (2 found, 1 already keywords)" {
			t.Errorf("notification: %v", n)
		}
		failed := start(map[string]any{"seeds": []string{"tea"}, "sources": []string{"ai"}})
		n = noteOnce(t, f.e, f.edATok, link(failed), notify.RunFailed)
		if n["title"] != "Keyword scout failed" || !strings.Contains(n["body"].(string), "not the JSON asked for") {
			t.Errorf("notification: %v", n)
		}
		noNotes(t, f.e, f.edATok, link(cancelled), "the cancelled run, later")
		noNotes(t, f.e, f.viewATok, link(ok), "the viewer")
	})

	// A run cancelled while it runs tells nobody either.
	t.Run("CancelledRunning", func(t *testing.T) {
		t.Parallel()
		f := agSetup(t)
		b := agBlockingOpenAI(t)
		agConfigure(t, f.e, b.srv.URL+"/v1")
		stop := startJobs(t, f.e)
		r := f.e.do(t, "POST", "/api/seo/scout/runs", f.edATok, map[string]any{"environment_id": f.envA, "seeds": []string{"tea"},
			"sources": []string{"ai"}})
		if r.Code != 202 {
			t.Fatalf("start: %d %s", r.Code, r.Body)
		}
		id := agID(r.Data())
		agWaitChan(t, b.started, "the model call")
		if r := f.e.do(t, "POST", fmt.Sprintf("/api/seo/scout/runs/%d/cancel", id), f.edATok, nil); r.Code != 200 {
			t.Fatalf("cancel: %d %s", r.Code, r.Body)
		}
		job := scoutJobOf(t, f.e, id)
		waitJob(t, f.e, job.ID, "a final status", finished)
		stop() // the job's OnFinish has returned
		noNotes(t, f.e, f.edATok, fmt.Sprintf("/api/seo/scout/runs/%d", id), "a run cancelled while running")
	})
}
