package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/copydesk/copydesk/store"
)

func mustEnqueueJob(t testing.TB, db *store.DB, n store.NewJob) *store.Job {
	t.Helper()
	j, err := db.EnqueueJob(context.Background(), n)
	if err != nil {
		t.Fatalf("EnqueueJob %s: %v", n.Kind, err)
	}
	return j
}

func mustClaimJob(t testing.TB, db *store.DB, kinds ...string) *store.Job {
	t.Helper()
	j, err := db.ClaimJob(context.Background(), kinds)
	if err != nil {
		t.Fatalf("ClaimJob %v: %v", kinds, err)
	}
	return j
}

func TestEnqueueJob(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("OK", func(t *testing.T) {
		db, _ := openDB(t)
		j := mustEnqueueJob(t, db, store.NewJob{Kind: "publish", Payload: map[string]int{"post": 7}})
		if j.ID == 0 || j.Kind != "publish" || j.Status != store.JobQueued || j.Attempts != 0 ||
			j.MaxAttempts != store.DefaultJobMaxAttempts || string(j.Payload) != `{"post":7}` {
			t.Fatalf("job = %+v", j)
		}
		if !j.RunAfter.Equal(t0) || !j.CreatedAt.Equal(t0) || !j.UpdatedAt.Equal(t0) || j.StartedAt != nil || j.FinishedAt != nil {
			t.Fatalf("times = %+v", j)
		}
		got, err := db.JobByID(ctx, j.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, j) {
			t.Fatalf("JobByID = %+v, want %+v", got, j)
		}
	})
	t.Run("Defaults", func(t *testing.T) {
		db, _ := openDB(t)
		later := t0.Add(time.Hour)
		j := mustEnqueueJob(t, db, store.NewJob{Kind: "scout", MaxAttempts: 5, RunAfter: later})
		if string(j.Payload) != `{}` || j.MaxAttempts != 5 || !j.RunAfter.Equal(later) {
			t.Fatalf("job = %+v", j)
		}
		raw := mustEnqueueJob(t, db, store.NewJob{Kind: "scout", Payload: json.RawMessage(`{"a": [1, 2]}`)})
		if string(raw.Payload) != `{"a":[1,2]}` {
			t.Fatalf("payload = %s", raw.Payload)
		}
	})
	t.Run("Invalid", func(t *testing.T) {
		db, _ := openDB(t)
		for name, n := range map[string]store.NewJob{
			"NoKind":           {Kind: "  "},
			"NegativeAttempts": {Kind: "x", MaxAttempts: -1},
			"BadPayload":       {Kind: "x", Payload: func() {}},
			"BadRawPayload":    {Kind: "x", Payload: json.RawMessage(`{`)},
		} {
			t.Run(name, func(t *testing.T) {
				_, err := db.EnqueueJob(ctx, n)
				wantKind(t, err, store.KindInvalid)
			})
		}
	})
}

func TestJobByIDNotFound(t *testing.T) {
	t.Parallel()
	db, _ := openDB(t)
	_, err := db.JobByID(context.Background(), 42)
	wantKind(t, err, store.KindNotFound)
}

func TestClaimJob(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("OldestDueFirst", func(t *testing.T) {
		db, clk := openDB(t)
		late := mustEnqueueJob(t, db, store.NewJob{Kind: "a", RunAfter: t0.Add(time.Minute)})
		first := mustEnqueueJob(t, db, store.NewJob{Kind: "a"})
		second := mustEnqueueJob(t, db, store.NewJob{Kind: "a"})
		clk.Advance(time.Second)
		j := mustClaimJob(t, db, "a")
		if j.ID != first.ID || j.Status != store.JobRunning || j.Attempts != 1 || j.StartedAt == nil ||
			!j.StartedAt.Equal(t0.Add(time.Second)) || !j.UpdatedAt.Equal(t0.Add(time.Second)) {
			t.Fatalf("claimed %+v, want job %d running", j, first.ID)
		}
		if j := mustClaimJob(t, db, "a"); j.ID != second.ID {
			t.Fatalf("claimed %d, want %d", j.ID, second.ID)
		}
		// The delayed job is not due yet.
		_, err := db.ClaimJob(ctx, []string{"a"})
		wantKind(t, err, store.KindNotFound)
		clk.Advance(time.Minute)
		if j := mustClaimJob(t, db, "a"); j.ID != late.ID {
			t.Fatalf("claimed %d, want %d", j.ID, late.ID)
		}
	})
	t.Run("OnlyGivenKinds", func(t *testing.T) {
		db, _ := openDB(t)
		mustEnqueueJob(t, db, store.NewJob{Kind: "other"})
		b := mustEnqueueJob(t, db, store.NewJob{Kind: "b"})
		_, err := db.ClaimJob(ctx, []string{"a"})
		wantKind(t, err, store.KindNotFound)
		_, err = db.ClaimJob(ctx, nil)
		wantKind(t, err, store.KindNotFound)
		if j := mustClaimJob(t, db, "a", "b"); j.ID != b.ID {
			t.Fatalf("claimed %d, want %d", j.ID, b.ID)
		}
	})
	t.Run("NothingDueIsNoWrite", func(t *testing.T) {
		db, _ := openDB(t)
		mark := db.ChangeMark()
		_, err := db.ClaimJob(ctx, []string{"a"})
		wantKind(t, err, store.KindNotFound)
		if db.ChangeMark() != mark {
			t.Fatal("an empty claim changed the change mark")
		}
		mustEnqueueJob(t, db, store.NewJob{Kind: "a"})
		mark = db.ChangeMark()
		mustClaimJob(t, db, "a")
		if db.ChangeMark() == mark {
			t.Fatal("a claim did not change the change mark")
		}
	})
}

// Many claimers at once never get the same job, and get every job.
func TestClaimJobConcurrent(t *testing.T) {
	t.Parallel()
	db, _ := openDB(t)
	ctx := context.Background()
	const jobs, claimers = 60, 8
	for i := range jobs {
		mustEnqueueJob(t, db, store.NewJob{Kind: "k", Payload: i})
	}
	var mu sync.Mutex
	seen := map[int64]int{}
	var wg sync.WaitGroup
	for range claimers {
		wg.Go(func() {
			for {
				j, err := db.ClaimJob(ctx, []string{"k"})
				if store.IsNotFound(err) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				seen[j.ID]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(seen) != jobs {
		t.Fatalf("claimed %d distinct jobs, want %d", len(seen), jobs)
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("job %d claimed %d times", id, n)
		}
	}
}

func TestFinishJob(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, st := range []store.JobStatus{store.JobSucceeded, store.JobFailed, store.JobCancelled} {
		t.Run(string(st), func(t *testing.T) {
			db, clk := openDB(t)
			j := mustEnqueueJob(t, db, store.NewJob{Kind: "a"})
			mustClaimJob(t, db, "a")
			clk.Advance(time.Second)
			got, err := db.FinishJob(ctx, j.ID, "", st, "why")
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != st || got.LastError != "why" || got.FinishedAt == nil || !got.FinishedAt.Equal(t0.Add(time.Second)) {
				t.Fatalf("finished = %+v", got)
			}
			// Finished is final.
			_, err = db.FinishJob(ctx, j.ID, "", store.JobFailed, "again")
			wantKind(t, err, store.KindConflict)
		})
	}
	t.Run("NotRunning", func(t *testing.T) {
		db, _ := openDB(t)
		j := mustEnqueueJob(t, db, store.NewJob{Kind: "a"})
		mark := db.ChangeMark()
		_, err := db.FinishJob(ctx, j.ID, "", store.JobSucceeded, "")
		wantKind(t, err, store.KindConflict)
		if db.ChangeMark() != mark {
			t.Fatal("a refused finish changed the change mark")
		}
	})
	t.Run("NotFound", func(t *testing.T) {
		db, _ := openDB(t)
		_, err := db.FinishJob(ctx, 9, "", store.JobSucceeded, "")
		wantKind(t, err, store.KindNotFound)
	})
	t.Run("NotFinal", func(t *testing.T) {
		db, _ := openDB(t)
		j := mustEnqueueJob(t, db, store.NewJob{Kind: "a"})
		mustClaimJob(t, db, "a")
		for _, st := range []store.JobStatus{store.JobQueued, store.JobRunning, "weird"} {
			_, err := db.FinishJob(ctx, j.ID, "", st, "")
			wantKind(t, err, store.KindInvalid)
		}
	})
	t.Run("SuccessClearsError", func(t *testing.T) {
		db, _ := openDB(t)
		j := mustEnqueueJob(t, db, store.NewJob{Kind: "a"})
		mustClaimJob(t, db, "a")
		if _, err := db.RetryJob(ctx, j.ID, "", "flaky", t0); err != nil {
			t.Fatal(err)
		}
		mustClaimJob(t, db, "a")
		got, err := db.FinishJob(ctx, j.ID, "", store.JobSucceeded, "")
		if err != nil {
			t.Fatal(err)
		}
		if got.LastError != "" || got.Attempts != 2 {
			t.Fatalf("finished = %+v", got)
		}
	})
}

func TestRetryJob(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, clk := openDB(t)
	j := mustEnqueueJob(t, db, store.NewJob{Kind: "a"})
	mustClaimJob(t, db, "a")
	clk.Advance(time.Second)
	retryAt := t0.Add(time.Minute)
	got, err := db.RetryJob(ctx, j.ID, "", "timeout", retryAt)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != store.JobQueued || got.LastError != "timeout" || !got.RunAfter.Equal(retryAt) || got.Attempts != 1 || got.FinishedAt != nil {
		t.Fatalf("retried = %+v", got)
	}
	_, err = db.ClaimJob(ctx, []string{"a"})
	wantKind(t, err, store.KindNotFound) // not yet
	clk.Advance(time.Minute)
	if again := mustClaimJob(t, db, "a"); again.ID != j.ID || again.Attempts != 2 {
		t.Fatalf("claimed %+v", again)
	}
	t.Run("NotRunning", func(t *testing.T) {
		q := mustEnqueueJob(t, db, store.NewJob{Kind: "b"})
		_, err := db.RetryJob(ctx, q.ID, "", "x", t0)
		wantKind(t, err, store.KindConflict)
		_, err = db.RetryJob(ctx, 999, "", "x", t0)
		wantKind(t, err, store.KindNotFound)
	})
}

func TestCancelJob(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("Queued", func(t *testing.T) {
		db, clk := openDB(t)
		j := mustEnqueueJob(t, db, store.NewJob{Kind: "a"})
		clk.Advance(time.Second)
		got, err := db.CancelJob(ctx, j.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != store.JobCancelled || got.FinishedAt == nil || !got.FinishedAt.Equal(t0.Add(time.Second)) {
			t.Fatalf("cancelled = %+v", got)
		}
		_, err = db.ClaimJob(ctx, []string{"a"})
		wantKind(t, err, store.KindNotFound)
	})
	t.Run("RunningUnchanged", func(t *testing.T) {
		db, _ := openDB(t)
		j := mustEnqueueJob(t, db, store.NewJob{Kind: "a"})
		running := mustClaimJob(t, db, "a")
		mark := db.ChangeMark()
		got, err := db.CancelJob(ctx, j.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, running) {
			t.Fatalf("CancelJob = %+v, want unchanged %+v", got, running)
		}
		if db.ChangeMark() != mark {
			t.Fatal("cancelling a running job wrote")
		}
	})
	t.Run("Finished", func(t *testing.T) {
		db, _ := openDB(t)
		j := mustEnqueueJob(t, db, store.NewJob{Kind: "a"})
		mustClaimJob(t, db, "a")
		if _, err := db.FinishJob(ctx, j.ID, "", store.JobSucceeded, ""); err != nil {
			t.Fatal(err)
		}
		_, err := db.CancelJob(ctx, j.ID)
		wantKind(t, err, store.KindConflict)
	})
	t.Run("NotFound", func(t *testing.T) {
		db, _ := openDB(t)
		_, err := db.CancelJob(ctx, 5)
		wantKind(t, err, store.KindNotFound)
	})
}

func TestRecoverJobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("RequeueOrFail", func(t *testing.T) {
		db, clk := openDB(t)
		retry := mustEnqueueJob(t, db, store.NewJob{Kind: "a", MaxAttempts: 3})
		spent := mustEnqueueJob(t, db, store.NewJob{Kind: "a", MaxAttempts: 1})
		queued := mustEnqueueJob(t, db, store.NewJob{Kind: "b"})
		mustClaimJob(t, db, "a")
		mustClaimJob(t, db, "a")
		clk.Advance(time.Second)
		rec, err := db.RecoverJobs(ctx, store.RecoverPolicy{})
		if err != nil {
			t.Fatal(err)
		}
		if rec.Requeued != 1 || rec.Failed != 1 || len(rec.FailedJobs) != 1 || rec.FailedJobs[0].ID != spent.ID {
			t.Fatalf("recovery = %+v", rec)
		}
		r, _ := db.JobByID(ctx, retry.ID)
		if r.Status != store.JobQueued || r.LastError != store.JobInterrupted || r.Attempts != 1 || !r.RunAfter.Equal(t0.Add(time.Second)) {
			t.Fatalf("requeued = %+v", r)
		}
		s, _ := db.JobByID(ctx, spent.ID)
		if s.Status != store.JobFailed || s.LastError != store.JobInterrupted || s.FinishedAt == nil {
			t.Fatalf("failed = %+v", s)
		}
		if q, _ := db.JobByID(ctx, queued.ID); q.Status != store.JobQueued || q.LastError != "" {
			t.Fatalf("untouched = %+v", q)
		}
	})
	t.Run("NothingToDoIsNoWrite", func(t *testing.T) {
		db, _ := openDB(t)
		mustEnqueueJob(t, db, store.NewJob{Kind: "a"})
		mark := db.ChangeMark()
		rec, err := db.RecoverJobs(ctx, store.RecoverPolicy{})
		if err != nil || rec.Requeued+rec.Failed != 0 {
			t.Fatalf("recovery = %+v, %v", rec, err)
		}
		if db.ChangeMark() != mark {
			t.Fatal("an empty recovery wrote")
		}
	})
	t.Run("PolicyReasonRunAfterExcept", func(t *testing.T) {
		db, _ := openDB(t)
		mine := mustEnqueueJob(t, db, store.NewJob{Kind: "a"})
		lost := mustEnqueueJob(t, db, store.NewJob{Kind: "a"})
		mustClaimJob(t, db, "a")
		mustClaimJob(t, db, "a")
		later := t0.Add(time.Hour)
		rec, err := db.RecoverJobs(ctx, store.RecoverPolicy{Reason: "lost", RunAfter: later, Except: []int64{mine.ID}})
		if err != nil || rec.Requeued != 1 || rec.Failed != 0 {
			t.Fatalf("recovery = %+v, %v", rec, err)
		}
		if m, _ := db.JobByID(ctx, mine.ID); m.Status != store.JobRunning {
			t.Fatalf("excepted job = %+v", m)
		}
		if l, _ := db.JobByID(ctx, lost.ID); l.Status != store.JobQueued || l.LastError != "lost" || !l.RunAfter.Equal(later) {
			t.Fatalf("recovered job = %+v", l)
		}
		// Only the excepted job is running: nothing to do.
		mark := db.ChangeMark()
		if rec, err := db.RecoverJobs(ctx, store.RecoverPolicy{Except: []int64{mine.ID}}); err != nil || rec.Requeued != 0 {
			t.Fatalf("recovery = %+v, %v", rec, err)
		}
		if db.ChangeMark() != mark {
			t.Fatal("an empty recovery wrote")
		}
	})
}

func TestListJobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := openDB(t)
	var ids []int64
	for i := range 7 {
		kind := "a"
		if i%2 == 1 {
			kind = "b"
		}
		ids = append(ids, mustEnqueueJob(t, db, store.NewJob{Kind: kind}).ID)
	}
	mustClaimJob(t, db, "a") // ids[0] runs

	list := func(f store.JobFilter) ([]int64, int) {
		t.Helper()
		jobs, total, err := db.ListJobs(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		var got []int64
		for _, j := range jobs {
			got = append(got, j.ID)
		}
		return got, total
	}
	for _, tc := range []struct {
		name  string
		f     store.JobFilter
		want  []int64
		total int
	}{
		{"FirstPage", store.JobFilter{Page: store.Page{Page: 1, PerPage: 3}}, []int64{ids[6], ids[5], ids[4]}, 7},
		{"LastPage", store.JobFilter{Page: store.Page{Page: 3, PerPage: 3}}, []int64{ids[0]}, 7},
		{"PastTheEnd", store.JobFilter{Page: store.Page{Page: 4, PerPage: 3}}, nil, 7},
		{"DefaultPerPage", store.JobFilter{}, []int64{ids[6], ids[5], ids[4], ids[3], ids[2], ids[1], ids[0]}, 7},
		{"Kind", store.JobFilter{Kind: "b", Page: store.Page{Page: 1, PerPage: 2}}, []int64{ids[5], ids[3]}, 3},
		{"Status", store.JobFilter{Status: store.JobRunning}, []int64{ids[0]}, 1},
		{"KindAndStatus", store.JobFilter{Kind: "a", Status: store.JobQueued}, []int64{ids[6], ids[4], ids[2]}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, total := list(tc.f)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) || total != tc.total {
				t.Fatalf("got %v (total %d), want %v (total %d)", got, total, tc.want, tc.total)
			}
		})
	}
	t.Run("EmptyIsNotNil", func(t *testing.T) {
		jobs, total, err := db.ListJobs(ctx, store.JobFilter{Kind: "none"})
		if err != nil || jobs == nil || len(jobs) != 0 || total != 0 {
			t.Fatalf("got %v, %d, %v", jobs, total, err)
		}
	})
	t.Run("BadStatus", func(t *testing.T) {
		_, _, err := db.ListJobs(ctx, store.JobFilter{Status: "done"})
		wantKind(t, err, store.KindInvalid)
	})
}

func TestPruneJobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, clk := openDB(t)
	finish := func(kind string, st store.JobStatus) *store.Job {
		t.Helper()
		j := mustEnqueueJob(t, db, store.NewJob{Kind: kind})
		mustClaimJob(t, db, kind)
		if _, err := db.FinishJob(ctx, j.ID, "", st, ""); err != nil {
			t.Fatal(err)
		}
		return j
	}
	oldOK := finish("a", store.JobSucceeded)
	oldFailed := finish("b", store.JobFailed)
	oldQueued := mustEnqueueJob(t, db, store.NewJob{Kind: "c"})
	oldCancelled, err := db.CancelJob(ctx, mustEnqueueJob(t, db, store.NewJob{Kind: "d"}).ID)
	if err != nil {
		t.Fatal(err)
	}
	oldRunning := mustEnqueueJob(t, db, store.NewJob{Kind: "e"})
	mustClaimJob(t, db, "e")
	clk.Advance(48 * time.Hour)
	recent := finish("f", store.JobSucceeded)

	n, err := db.PruneJobs(ctx, t0.Add(24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Fatalf("pruned %d, want 3", n)
	}
	for _, id := range []int64{oldOK.ID, oldFailed.ID, oldCancelled.ID} {
		_, err := db.JobByID(ctx, id)
		wantKind(t, err, store.KindNotFound)
	}
	for _, id := range []int64{oldQueued.ID, oldRunning.ID, recent.ID} {
		if _, err := db.JobByID(ctx, id); err != nil {
			t.Errorf("job %d: %v", id, err)
		}
	}
}

// A job row written by another hand (a crash leaves it like this) reads
// back whole.
func TestJobRowWrittenDirectly(t *testing.T) {
	t.Parallel()
	db, _ := openDB(t)
	conn, err := store.RawConn(db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var id int64
	err = conn.QueryRow(`INSERT INTO jobs (kind, payload, status, attempts, max_attempts, run_after, created_at, started_at, updated_at)
		VALUES ('a', '{"x":1}', 'running', 2, 2, ?, ?, ?, ?) RETURNING id`,
		"2025-06-01T11:00:00.000Z", "2025-06-01T11:00:00.000Z", "2025-06-01T11:30:00.000Z", "2025-06-01T11:30:00.000Z").Scan(&id)
	if err != nil {
		t.Fatal(err)
	}
	j, err := db.JobByID(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if j.Status != store.JobRunning || j.Attempts != 2 || j.StartedAt == nil || !j.StartedAt.Equal(t0.Add(-30*time.Minute)) ||
		string(j.Payload) != `{"x":1}` {
		t.Fatalf("job = %+v", j)
	}
	rec, err := db.RecoverJobs(context.Background(), store.RecoverPolicy{})
	if err != nil || rec.Failed != 1 || rec.FailedJobs[0].ID != id {
		t.Fatalf("recovery = %+v, %v", rec, err)
	}
}

// The claim's choice walks the queue index: finished jobs piling up until
// they are pruned do not slow it down. (The text is ClaimJob's subquery.)
func TestClaimJobUsesIndex(t *testing.T) {
	t.Parallel()
	db, _ := openDB(t)
	for i := range 50 {
		j := mustEnqueueJob(t, db, store.NewJob{Kind: fmt.Sprint("k", i%3)})
		if i%2 == 0 {
			if _, err := db.CancelJob(context.Background(), j.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	conn, err := store.PlanConn(t, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.Exec(`ANALYZE`)
	rows, err := conn.Query(`EXPLAIN QUERY PLAN SELECT id FROM jobs WHERE status = 'queued' AND run_after <= ? AND kind IN (?, ?)
		ORDER BY run_after, id LIMIT 1`, "2030-01-01T00:00:00.000Z", "k0", "k1")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		rows.Scan(&id, &parent, &notused, &detail)
		plan = append(plan, detail)
	}
	joined := strings.Join(plan, " | ")
	t.Logf("plan: %s", joined)
	if !strings.Contains(joined, "USING INDEX jobs_queue") || strings.Contains(joined, "TEMP B-TREE") {
		t.Errorf("the claim does not walk jobs_queue in order: %s", joined)
	}
}

func queuedOf(t *testing.T, db *store.DB, kind string) []*store.Job {
	t.Helper()
	list, _, err := db.ListJobs(context.Background(), store.JobFilter{Kind: kind, Status: store.JobQueued, Page: store.Page{Page: 1, PerPage: 50}})
	if err != nil {
		t.Fatal(err)
	}
	return list
}

func mustPlan(t *testing.T, db *store.DB, kind string, next *time.Time) *store.Job {
	t.Helper()
	j, err := db.PlanJob(context.Background(), kind, next)
	if err != nil {
		t.Fatalf("PlanJob %s: %v", kind, err)
	}
	return j
}

// PlanJob keeps exactly one queued job of a kind, at the planned time
// unless it is due already, and none when the schedule is off.
func TestPlanJob(t *testing.T) {
	t.Parallel()
	db, clk := openDB(t)
	at := t0.Add(time.Hour)
	first := mustPlan(t, db, "backup", &at)
	if first.Status != store.JobQueued || !first.RunAfter.Equal(at) || first.MaxAttempts != 1 || string(first.Payload) != "{}" {
		t.Fatalf("planned %+v", first)
	}
	mark := db.ChangeMark()
	if again := mustPlan(t, db, "backup", &at); !reflect.DeepEqual(again, first) {
		t.Fatalf("planning again gave %+v, want %+v", again, first)
	}
	if db.ChangeMark() != mark {
		t.Error("planning what is planned wrote")
	}
	later := t0.Add(3 * time.Hour)
	if moved := mustPlan(t, db, "backup", &later); moved.ID != first.ID || !moved.RunAfter.Equal(later) {
		t.Fatalf("moved %+v", moved)
	}

	// Due: it stays, to run soon.
	clk.Advance(4 * time.Hour)
	if due := mustPlan(t, db, "backup", &at); due.ID != first.ID || !due.RunAfter.Equal(later) {
		t.Fatalf("a due job was moved: %+v", due)
	}

	// Duplicates (written by hand) are reduced to the oldest.
	mustEnqueueJob(t, db, store.NewJob{Kind: "backup"})
	if kept := mustPlan(t, db, "backup", &at); kept.ID != first.ID {
		t.Fatalf("kept %+v", kept)
	}
	if list := queuedOf(t, db, "backup"); len(list) != 1 {
		t.Fatalf("queued after planning: %d", len(list))
	}

	// A running job of the kind is left alone; off removes the queued one.
	mustClaimJob(t, db, "backup")
	mustPlan(t, db, "backup", &at)
	if j := mustPlan(t, db, "backup", nil); j != nil {
		t.Fatalf("off returned %+v", j)
	}
	if list := queuedOf(t, db, "backup"); len(list) != 0 {
		t.Fatalf("queued while off: %+v", list)
	}
	if running, total, err := db.ListJobs(context.Background(), store.JobFilter{Kind: "backup", Status: store.JobRunning}); err != nil || total != 1 || running[0].ID != first.ID {
		t.Fatalf("the running job: %v %d %v", running, total, err)
	}
	other := mustEnqueueJob(t, db, store.NewJob{Kind: "other"})
	mustPlan(t, db, "backup", nil)
	if j, err := db.JobByID(context.Background(), other.ID); err != nil || j.Status != store.JobQueued {
		t.Fatalf("another kind's job: %+v %v", j, err)
	}
}

// JobQueue counts queued jobs due and for later, and running ones, by
// kind; finished jobs are not counted.
func TestJobQueue(t *testing.T) {
	t.Parallel()
	db, clk := openDB(t)
	ctx := context.Background()
	mustEnqueueJob(t, db, store.NewJob{Kind: "a"})
	t0 := db.Now()
	clk.Advance(time.Minute)
	mustEnqueueJob(t, db, store.NewJob{Kind: "a"})
	mustEnqueueJob(t, db, store.NewJob{Kind: "a", RunAfter: db.Now().Add(time.Hour)})
	mustEnqueueJob(t, db, store.NewJob{Kind: "b"})
	done := mustEnqueueJob(t, db, store.NewJob{Kind: "c"})
	if _, err := db.CancelJob(ctx, done.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ClaimJob(ctx, []string{"b"}); err != nil {
		t.Fatal(err)
	}
	got, err := db.JobQueue(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []store.JobQueueStat{{Kind: "a", Due: 2, Later: 1, OldestDue: t0}, {Kind: "b", Running: 1}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("JobQueue: %+v, want %+v", got, want)
	}
}
