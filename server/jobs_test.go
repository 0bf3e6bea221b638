package server_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/copydesk/copydesk/server"
	"github.com/copydesk/copydesk/store"
)

// queuedJobs lists the queued jobs of a kind.
func queuedJobs(t *testing.T, e *env, kind string) []*store.Job {
	t.Helper()
	list, _, err := e.app.DB.ListJobs(context.Background(), store.JobFilter{Kind: kind, Status: store.JobQueued, Page: store.Page{Page: 1, PerPage: 50}})
	if err != nil {
		t.Fatal(err)
	}
	return list
}

// waitNotice waits for the newest notification of tok's user to be of kind.
func waitNotice(t *testing.T, e *env, tok *string, email, kind string) map[string]any {
	t.Helper()
	var last map[string]any
	agWaitFor(t, "a "+kind+" notification", func() bool {
		r := e.do(t, "GET", "/api/notifications?per_page=1", *tok, nil)
		if r.Code == http.StatusUnauthorized { // the clock moved past the token
			*tok = e.login(t, email, "password-root")
			return false
		}
		items := agItems(r.Data())
		if len(items) == 1 {
			last = items[0]
		}
		return last != nil && last["kind"] == kind
	})
	return last
}

// Scheduled backups run as jobs of the runner: the schedule's next run is
// one queued job, planned again at once when the schedule changes and
// after each run; each run tells the super_admins how it went.
func TestScheduledBackupsRunAsJobs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, root := e.user(t, "root", store.RoleSuperAdmin)
	agRunJobs(t, e)
	planned := func() *time.Time {
		list := queuedJobs(t, e, server.BackupJob)
		switch len(list) {
		case 0:
			return nil
		case 1:
			return &list[0].RunAfter
		}
		t.Fatalf("%d scheduled backup jobs queued, want at most one", len(list))
		return nil
	}
	put := func(body map[string]any) map[string]any {
		t.Helper()
		r := e.do(t, "PUT", "/api/backup/schedule", root, body)
		if r.Code != 200 {
			t.Fatalf("put schedule: %d %s", r.Code, r.Body)
		}
		return r.Data()
	}
	sameTime := func(at *time.Time, v any) bool {
		s, _ := v.(string)
		want, err := time.Parse(time.RFC3339, s)
		return at != nil && err == nil && at.Equal(want)
	}

	if at := planned(); at != nil {
		t.Fatalf("off by default, yet planned at %v", at)
	}
	d := put(map[string]any{"enabled": true, "spec": "@every 6h", "retention": 2})
	if at := planned(); !sameTime(at, d["next_run_at"]) {
		t.Fatalf("planned at %v, want next_run_at %v", at, d["next_run_at"])
	}
	put(map[string]any{"enabled": false})
	if at := planned(); at != nil {
		t.Fatalf("off, yet planned at %v", at)
	}
	d = put(map[string]any{"enabled": true})
	if at := planned(); !sameTime(at, d["next_run_at"]) {
		t.Fatalf("planned at %v, want next_run_at %v", at, d["next_run_at"])
	}

	e.clock.Advance(6*time.Hour + time.Minute)
	e.app.Jobs.Signal()
	n := waitNotice(t, e, &root, "root@example.com", "backup.created")
	r := e.do(t, "GET", "/api/backup/schedule", root, nil)
	if r.Data()["last_backup"] == "" || r.Data()["last_error"] != "" || fmt.Sprint(n["link"]) != "/api/backup/"+fmt.Sprint(r.Data()["last_backup"]) {
		t.Fatalf("after the run: %s, notification %v", r.Body, n)
	}
	agWaitFor(t, "the next run planned", func() bool { return sameTime(planned(), r.Data()["next_run_at"]) })

	// A failed run is recorded and told too.
	dir := e.app.Backups.Dir()
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, []byte("a file where the folder should be"), 0o600); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(6*time.Hour + time.Minute)
	e.app.Jobs.Signal()
	waitNotice(t, e, &root, "root@example.com", "backup.failed")
	if r := e.do(t, "GET", "/api/backup/schedule", root, nil); r.Data()["last_error"] == "" {
		t.Fatalf("the failure was not recorded: %s", r.Body)
	}
}

// A restore does not wait for a queued run that waits on its provider: the
// job stops, records nothing, and the run the restored database says is
// running is taken up again after the swap.
func TestRestoreDoesNotWaitForAQueuedRun(t *testing.T) {
	restoresOnSQLite(t)
	t.Parallel()
	f := agSetup(t)
	e := f.e
	_, root := e.user(t, "super", store.RoleSuperAdmin)
	var calls atomic.Int32
	started, gone := make(chan struct{}, 4), make(chan struct{}, 4)
	srv := agOpenAI(t, func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			started <- struct{}{}
			<-r.Context().Done() // a generation that takes minutes
			gone <- struct{}{}
			return
		}
		agCompletion(w, "after the restore")
	})
	agConfigure(t, e, srv.URL+"/v1")
	agRunJobs(t, e)
	agentID := agID(agCreate(t, e, f.edATok, map[string]any{"environment_id": f.envA, "name": "Slow", "kind": "writer"}))
	runID := agID(agExecute(t, e, f.edATok, agentID, map[string]any{"input": "take your time"}))
	agWaitChan(t, started, "the provider call")

	// The snapshot has the run and its job running.
	b := e.do(t, "POST", "/api/backup", root, nil)
	if b.Code != 201 {
		t.Fatalf("backup: %d %s", b.Code, b.Body)
	}
	begin := time.Now()
	r := e.do(t, "POST", "/api/backup/"+b.Data()["name"].(string)+"/restore", root, nil)
	if r.Code != 200 {
		t.Fatalf("restore: %d %s", r.Code, r.Body)
	}
	if took := time.Since(begin); took > 10*time.Second {
		t.Fatalf("the restore took %v", took)
	}
	agWaitChan(t, gone, "the provider call being cut")
	// The restore ended every session: the editor signs in again.
	run := agWaitRun(t, e, e.login(t, "alice@example.com", "password-alice"), runID)
	if run["status"] != "succeeded" || run["output"] != "after the restore" {
		t.Fatalf("the run after the restore: %v", run)
	}
	if n := calls.Load(); n != 2 {
		t.Fatalf("%d provider calls, want 2", n)
	}
}
