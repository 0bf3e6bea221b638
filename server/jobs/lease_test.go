package jobs_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/copydesk/copydesk/server/jobs"
	"github.com/copydesk/copydesk/store"
)

// TestRunnerRenewsLeases: a running job's lease is claimed for
// Options.Lease and renewed while its handler runs, past the first lease.
func TestRunnerRenewsLeases(t *testing.T) {
	h := newHarness(t, jobs.Options{Lease: 300 * time.Millisecond})
	started, release := newSignal(), newSignal()
	h.register("slow", func(ctx context.Context, _ *store.Job) error {
		started.fire()
		<-release.c
		return nil
	})
	h.start(t)
	job := h.enqueue(t, "slow", nil, jobs.EnqueueOptions{})
	started.wait(t, "the handler to start")
	first := h.job(t, job.ID)
	if first.LeaseOwner == "" || first.LeaseUntil == nil {
		t.Fatalf("running job has no lease: %q %v", first.LeaseOwner, first.LeaseUntil)
	}
	deadline := time.Now().Add(wait)
	for {
		j := h.job(t, job.ID)
		if j.LeaseUntil != nil && j.LeaseUntil.After(*first.LeaseUntil) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("lease not renewed within %v: until %v", wait, j.LeaseUntil)
		}
		time.Sleep(20 * time.Millisecond)
	}
	release.fire()
	if j := h.next(t); j.Status != store.JobSucceeded || j.LeaseOwner != "" || j.LeaseUntil != nil {
		t.Fatalf("finished job = %s with lease %q %v, want succeeded without a lease", j.Status, j.LeaseOwner, j.LeaseUntil)
	}
}

// TestRunnerLostLease: when a job is taken from the runner (as another
// instance takes a job whose lease expired), the next renewal stops its
// handler with ErrLeaseLost, and the runner records nothing for it.
func TestRunnerLostLease(t *testing.T) {
	h := newHarness(t, jobs.Options{Lease: 300 * time.Millisecond})
	started := newSignal()
	causes := make(chan error, 2)
	h.register("slow", func(ctx context.Context, _ *store.Job) error {
		started.fire()
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return ctx.Err()
	})
	stop := h.start(t)
	job := h.enqueue(t, "slow", nil, jobs.EnqueueOptions{})
	started.wait(t, "the handler to start")
	// Taken away: requeued by a recovery that does not know it runs here.
	if rec, err := h.db.RecoverJobs(context.Background(), store.RecoverPolicy{Reason: "taken over", RunAfter: time.Now().Add(time.Hour)}); err != nil || rec.Requeued != 1 {
		t.Fatalf("RecoverJobs = %+v, %v", rec, err)
	}
	select {
	case cause := <-causes:
		if !errors.Is(cause, jobs.ErrLeaseLost) {
			t.Fatalf("handler stopped by %v, want ErrLeaseLost", cause)
		}
	case <-time.After(wait):
		t.Fatalf("handler not stopped within %v of losing its lease", wait)
	}
	stop()
	if j := h.job(t, job.ID); j.Status != store.JobQueued || j.LastError != "taken over" {
		t.Fatalf("job = %s (%q), want queued as the recovery left it", j.Status, j.LastError)
	}
}

// TestRunnerStalledOutcomeNotRecorded: a handler that returns after its
// job was taken over by another owner, before any renewal noticed (the
// process stalled past its lease), records nothing: the job stays the new
// owner's, running.
func TestRunnerStalledOutcomeNotRecorded(t *testing.T) {
	// No renewal within the test; one worker, busy with the stalled
	// handler, so that this runner cannot claim the job back once it is
	// requeued (the other instance must).
	h := newHarness(t, jobs.Options{Lease: time.Hour, Workers: 1})
	started, release := newSignal(), newSignal()
	h.register("stalls", func(ctx context.Context, _ *store.Job) error {
		started.fire()
		<-release.c
		return nil
	})
	stop := h.start(t)
	job := h.enqueue(t, "stalls", nil, jobs.EnqueueOptions{})
	started.wait(t, "the handler to start")
	ctx := context.Background()
	if rec, err := h.db.RecoverJobs(ctx, store.RecoverPolicy{Reason: "taken over"}); err != nil || rec.Requeued != 1 {
		t.Fatalf("RecoverJobs = %+v, %v", rec, err)
	}
	if _, err := h.db.ClaimJobLeased(ctx, []string{"stalls"}, store.JobLease{Owner: "other instance", For: time.Hour}); err != nil {
		t.Fatal(err)
	}
	release.fire()
	stop() // Run returns once the handler's return is dealt with
	select {
	case j := <-h.finished:
		t.Fatalf("the stalled runner finished job %d as %s", j.ID, j.Status)
	default:
	}
	if j := h.job(t, job.ID); j.Status != store.JobRunning || j.LeaseOwner != "other instance" || j.Attempts != 2 {
		t.Fatalf("job = %s under %q, attempt %d; want running under the other instance, attempt 2", j.Status, j.LeaseOwner, j.Attempts)
	}
}

// TestRunnerCancelledElsewhere: a job another instance cancelled (it
// recorded the ending and announced it) has its handler stopped here at
// once, with ErrCancelled, long before the next lease renewal; a job not
// running here is left alone.
func TestRunnerCancelledElsewhere(t *testing.T) {
	h := newHarness(t, jobs.Options{Lease: time.Hour})
	started := newSignal()
	causes := make(chan error, 1)
	h.register("slow", func(ctx context.Context, _ *store.Job) error {
		started.fire()
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return ctx.Err()
	})
	h.start(t)
	h.r.CancelledElsewhere(424242) // not here: nothing
	job := h.enqueue(t, "slow", nil, jobs.EnqueueOptions{})
	started.wait(t, "the handler to start")
	h.r.CancelledElsewhere(job.ID)
	select {
	case err := <-causes:
		if !errors.Is(err, jobs.ErrCancelled) {
			t.Fatalf("the handler stopped with %v", err)
		}
	case <-time.After(wait):
		t.Fatal("the handler was not stopped")
	}
	if j := h.next(t); j.Status != store.JobCancelled {
		t.Fatalf("the job: %s", j.Status)
	}
}
