package store_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/copydesk/copydesk/store"
	"github.com/copydesk/copydesk/store/storetest"
)

// TestJobLeases: a claim records its owner and lease; a renewal extends
// only the owner's running jobs; a recovery limited to expired leases
// leaves a live one alone and takes an expired one, clearing the lease.
func TestJobLeases(t *testing.T) {
	ctx := context.Background()
	db, clk := storetest.OpenDB(t)
	mustEnqueueJob(t, db, store.NewJob{Kind: "k"})
	job, err := db.ClaimJobLeased(ctx, []string{"k"}, store.JobLease{Owner: "a", For: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if job.LeaseOwner != "a" || job.LeaseUntil == nil || !job.LeaseUntil.Equal(clk.Now().Add(2*time.Second)) {
		t.Fatalf("claimed job's lease = %q until %v, want a until %v", job.LeaseOwner, job.LeaseUntil, clk.Now().Add(2*time.Second))
	}
	if got, err := db.RenewJobLeases(ctx, "b", []int64{job.ID}, clk.Now().Add(time.Minute)); err != nil || len(got) != 0 {
		t.Fatalf("another owner renewed %v (%v), want nothing", got, err)
	}
	clk.Advance(time.Second)
	if got, err := db.RenewJobLeases(ctx, "a", []int64{job.ID}, clk.Now().Add(2*time.Second)); err != nil || !slices.Equal(got, []int64{job.ID}) {
		t.Fatalf("the owner's renewal = %v (%v), want [%d]", got, err, job.ID)
	}
	clk.Advance(1500 * time.Millisecond) // past the first lease, within the renewed one
	if rec, err := db.RecoverJobs(ctx, store.RecoverPolicy{Expired: true}); err != nil || rec.Requeued+rec.Failed != 0 {
		t.Fatalf("recovery of expired leases took a live one: %+v (%v)", rec, err)
	}
	clk.Advance(time.Second)
	if rec, err := db.RecoverJobs(ctx, store.RecoverPolicy{Expired: true}); err != nil || rec.Requeued != 1 {
		t.Fatalf("recovery of expired leases = %+v (%v), want 1 requeued", rec, err)
	}
	got, err := db.JobByID(ctx, job.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != store.JobQueued || got.LeaseOwner != "" || got.LeaseUntil != nil {
		t.Fatalf("recovered job = %s, lease %q %v; want queued without a lease", got.Status, got.LeaseOwner, got.LeaseUntil)
	}
	if got, err := db.RenewJobLeases(ctx, "a", []int64{job.ID}, clk.Now().Add(2*time.Second)); err != nil || len(got) != 0 {
		t.Fatalf("the old owner renewed a job taken from it: %v (%v)", got, err)
	}
}

// TestPlanJobConcurrent: planners racing on one recurring kind leave one
// queued job (on PostgreSQL through separate pools, as instances do).
func TestPlanJobConcurrent(t *testing.T) {
	ctx := context.Background()
	db, clk := storetest.OpenDB(t)
	next := clk.Now().Add(time.Hour)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if _, err := db.PlanJob(ctx, "tick", &next); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	jobs, _, err := db.ListJobs(ctx, store.JobFilter{Kind: "tick", Status: store.JobQueued})
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 1 {
		t.Fatalf("%d queued jobs after 8 planners, want 1", len(jobs))
	}
}

// TestStalledOwnerCannotRecord: an owner that stalled past its lease,
// while the job was recovered and claimed by another, can neither finish
// nor retry it (ErrJobLeaseLost, a conflict); the new owner's outcome is
// the one recorded.
func TestStalledOwnerCannotRecord(t *testing.T) {
	ctx := context.Background()
	db, clk := storetest.OpenDB(t)
	mustEnqueueJob(t, db, store.NewJob{Kind: "k", MaxAttempts: 5})
	job, err := db.ClaimJobLeased(ctx, []string{"k"}, store.JobLease{Owner: "a", For: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(3 * time.Second) // a stalls past its lease
	if rec, err := db.RecoverJobs(ctx, store.RecoverPolicy{Expired: true}); err != nil || rec.Requeued != 1 {
		t.Fatalf("recovery = %+v (%v), want 1 requeued", rec, err)
	}
	if _, err := db.ClaimJobLeased(ctx, []string{"k"}, store.JobLease{Owner: "b", For: 2 * time.Second}); err != nil {
		t.Fatal(err)
	}
	for name, record := range map[string]func() error{
		"finish": func() error { _, err := db.FinishJob(ctx, job.ID, "a", store.JobSucceeded, ""); return err },
		"retry":  func() error { _, err := db.RetryJob(ctx, job.ID, "a", "flaky", clk.Now()); return err },
	} {
		err := record()
		if !errors.Is(err, store.ErrJobLeaseLost) || !(store.KindOf(err) == store.KindConflict) {
			t.Fatalf("the stalled owner's %s = %v, want a conflict for ErrJobLeaseLost", name, err)
		}
	}
	got, err := db.JobByID(ctx, job.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != store.JobRunning || got.LeaseOwner != "b" || got.Attempts != 2 {
		t.Fatalf("job after the stalled owner tried = %s, owner %q, attempt %d; want running under b, attempt 2", got.Status, got.LeaseOwner, got.Attempts)
	}
	done, err := db.FinishJob(ctx, job.ID, "b", store.JobFailed, "boom")
	if err != nil || done.Status != store.JobFailed || done.LastError != "boom" {
		t.Fatalf("the new owner's finish = %+v (%v), want failed with its error", done, err)
	}
	// Once finished, the stalled owner's answer is the plain conflict.
	if _, err := db.FinishJob(ctx, job.ID, "a", store.JobSucceeded, ""); errors.Is(err, store.ErrJobLeaseLost) || !(store.KindOf(err) == store.KindConflict) {
		t.Fatalf("finishing a finished job = %v, want a conflict that is not about a lease", err)
	}
}
