package server_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/copydesk/copydesk/server"
	"github.com/copydesk/copydesk/server/publish/wordpress/wptest"
	"github.com/copydesk/copydesk/server/wppost"
	"github.com/copydesk/copydesk/store"
)

// jobBackoff is the runner's backoff in these tests: a minute on the
// store's clock, which stands still until a test moves it, so a retry
// runs only when the test says.
const jobBackoff = time.Minute

// newWPJobEnv is a wpEnv whose job runner waits jobBackoff between
// attempts.
func newWPJobEnv(t *testing.T) *wpEnv {
	return newWPEnv(t, func(c *server.Config) { c.JobBackoff = func(int) time.Duration { return jobBackoff } })
}

// queuePublish asks for a queued publish and returns the id of its job.
func (w *wpEnv) queuePublish(t *testing.T, id any) int64 {
	t.Helper()
	r := w.action(t, id, "publish", map[string]any{"queue": true})
	if r.Code != 202 {
		t.Fatalf("queued publish: %d %s", r.Code, r.Body)
	}
	if r.Data()["sync_status"] != "local" {
		t.Errorf("a queued publish changed the sync state at once: %v", r.Data())
	}
	var job int64
	if _, err := fmt.Sscanf(r.JSON()["message"].(string), "publish queued as job %d", &job); err != nil {
		t.Fatalf("message: %s", r.Body)
	}
	return job
}

// waitJob waits (within agBound) until the job satisfies ok.
func waitJob(t *testing.T, e *env, id int64, what string, ok func(*store.Job) bool) *store.Job {
	t.Helper()
	deadline := time.Now().Add(agBound)
	for {
		j, err := e.app.DB.JobByID(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if ok(j) {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %d never got %s: %+v", id, what, j)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func finished(j *store.Job) bool {
	return j.Status == store.JobSucceeded || j.Status == store.JobFailed || j.Status == store.JobCancelled
}

func TestWordPressQueuedPublish(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		fail     func(r *http.Request) (int, string, string, bool)
		job      store.JobStatus
		sync     string
		posts    int
		attempts int
	}{
		{name: "Synced", job: store.JobSucceeded, sync: "synced", posts: 1, attempts: 1},
		// A refusal is not retried: the job fails, the post says why.
		{name: "Refused", fail: func(r *http.Request) (int, string, string, bool) {
			return 400, "rest_invalid_param", "WordPress says: no", r.Method == "POST"
		}, job: store.JobFailed, sync: "failed", posts: 0, attempts: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w := newWPJobEnv(t)
			w.site.Set(func(s *wptest.Site) { s.Fail = c.fail })
			p := w.post(t, map[string]any{"title": "Queued " + c.name})
			startJobs(t, w.env)
			id := w.queuePublish(t, p["id"])
			job := waitJob(t, w.env, id, "a final status", finished)
			if job.Status != c.job || job.Attempts != c.attempts || job.Kind != wppost.PublishJob {
				t.Fatalf("job: %+v", job)
			}
			got := w.do(t, "GET", fmt.Sprintf("/api/wordpress-posts/%v", p["id"]), w.viewer, nil).Data()
			if got["sync_status"] != c.sync || w.site.PostCount() != c.posts {
				t.Fatalf("post after the job: %v; the site has %d posts", got, w.site.PostCount())
			}
			if c.sync == "synced" && (got["remote_id"] == nil || got["remote_status"] != "draft") {
				t.Fatalf("synced post: %v", got)
			}
			if c.sync == "failed" && !strings.Contains(got["last_error"].(string), "WordPress says: no") {
				t.Fatalf("failed post: %v", got)
			}
		})
	}
	t.Run("BadInputAnswersAtOnce", func(t *testing.T) {
		t.Parallel()
		w := newWPJobEnv(t)
		p := w.post(t, map[string]any{"title": "Bad"})
		if r := w.action(t, p["id"], "publish", map[string]any{"queue": true, "status": "future"}); r.Code != 422 {
			t.Fatalf("future without a date: %d %s", r.Code, r.Body)
		}
		other := w.do(t, "POST", "/api/wordpress-posts", w.admin, map[string]any{"environment_id": w.envB, "title": "x"}).Data()
		if r := w.do(t, "POST", fmt.Sprintf("/api/wordpress-posts/%v/publish", other["id"]), w.admin, map[string]any{"queue": true}); r.Code != 409 {
			t.Fatalf("queued publish without WordPress: %d %s", r.Code, r.Body)
		}
		if _, n, err := w.app.DB.ListJobs(context.Background(), store.JobFilter{Kind: wppost.PublishJob}); err != nil || n != 0 {
			t.Fatalf("jobs queued for refused publishes: %d %v", n, err)
		}
	})
}

// A queued publish whose create reached the site but whose answer was
// lost leaves the post marked create-pending; the job's next run, after a
// restart of the runner, adopts the post the create made: one post.
func TestWordPressQueuedPublishAfterLostAnswer(t *testing.T) {
	t.Parallel()
	w := newWPJobEnv(t)
	p := w.post(t, map[string]any{"title": "Lost answer", "status": "publish"})
	w.site.Set(func(s *wptest.Site) {
		s.Hang = func(r *http.Request) bool { return r.Method == "POST" && strings.HasSuffix(r.URL.Path, "/wp/v2/posts") }
	})
	stop := startJobs(t, w.env)
	id := w.queuePublish(t, p["id"])
	job := waitJob(t, w.env, id, "its first attempt over", func(j *store.Job) bool { return j.Attempts == 1 && j.Status == store.JobQueued })
	if !strings.Contains(job.LastError, "no answer in time") {
		t.Fatalf("job after a timeout: %+v", job)
	}
	stop() // the process stops before the retry is due

	post, err := w.app.DB.WordPressPostByID(context.Background(), id64(p["id"]))
	if err != nil {
		t.Fatal(err)
	}
	if !post.CreatePending || post.RemoteID != nil || post.SyncStatus != store.SyncFailed || w.site.PostCount() != 1 {
		t.Fatalf("post after the lost answer: pending %v remote %v sync %s; the site has %d posts",
			post.CreatePending, post.RemoteID, post.SyncStatus, w.site.PostCount())
	}

	w.site.Set(func(s *wptest.Site) { s.Hang = nil })
	w.clock.Advance(jobBackoff)
	startJobs(t, w.env)
	job = waitJob(t, w.env, id, "a final status", finished)
	if job.Status != store.JobSucceeded || job.Attempts != 2 {
		t.Fatalf("job after the restart: %+v", job)
	}
	got := w.do(t, "GET", fmt.Sprintf("/api/wordpress-posts/%v", p["id"]), w.viewer, nil).Data()
	if got["sync_status"] != "synced" || got["remote_id"] == nil || w.site.PostCount() != 1 {
		t.Fatalf("post after the restart: %v; the site has %d posts", got, w.site.PostCount())
	}
	if n := w.site.Requests["POST /wp/v2/posts"]; n != 1 {
		t.Fatalf("%d creates sent, want 1: %v", n, w.site.Requests)
	}
	if w.site.PostStatus(id64(got["remote_id"])) != "publish" {
		t.Fatalf("adopted post's status: %s", w.site.PostStatus(id64(got["remote_id"])))
	}
}
