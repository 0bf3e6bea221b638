package jobs_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/copydesk/copydesk/server/jobs"
	"github.com/copydesk/copydesk/store"
)

// snapshot writes a snapshot of db as it is now and returns its path.
func snapshot(t *testing.T, db *store.DB) string {
	t.Helper()
	ctx, release := db.Hold(context.Background())
	defer release()
	src := filepath.Join(t.TempDir(), "snapshot.db")
	if err := db.SnapshotTo(ctx, src); err != nil {
		t.Fatal(err)
	}
	return src
}

// restore replaces db with the snapshot src in the background; the
// returned channel gives Replace's result.
func restore(db *store.DB, src string) <-chan error {
	done := make(chan error, 1)
	restoreInto(db, src, done)
	return done
}

func restoreInto(db *store.DB, src string, done chan<- error) {
	go func() {
		done <- db.Replace(context.Background(), src, filepath.Join(filepath.Dir(src), "safety.db"))
	}()
}

// restoreBound is how long a restore may take before the test says it
// waited for a running job. Those jobs block until their context ends, so
// a restore that waited for one would never finish: the bound only has to
// be longer than the slowest honest restore (it checks the file's schema
// by building one from the migrations), which on a loaded machine under
// the race detector passed the 5 s the other waits use.
const restoreBound = time.Minute

func restored(t *testing.T, done <-chan error) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(restoreBound):
		t.Fatal("the restore waited for a running job")
	}
}

// A job that waits on a slow provider does not hold up a restore: its
// context ends with store.ErrReplacing, and its outcome is not recorded
// over whatever the restored database holds under its id.
func TestRunnerYieldsToRestore(t *testing.T) {
	t.Parallel()
	h := newHarness(t, jobs.Options{Workers: 2})
	src := snapshot(t, h.db) // no jobs in it
	started := newSignal()
	var cause atomic.Value
	h.register("long", func(ctx context.Context, j *store.Job) error {
		started.fire()
		<-ctx.Done() // the provider call, cut short
		cause.Store(context.Cause(ctx))
		return ctx.Err()
	})
	h.register("after", succeed)
	h.start(t)
	long := h.enqueue(t, "long", nil, jobs.EnqueueOptions{})
	started.wait(t, "the handler's start")
	restored(t, restore(h.db, src))
	if c, _ := cause.Load().(error); !errors.Is(c, store.ErrReplacing) {
		t.Fatalf("the handler's context ended with %v, want store.ErrReplacing", c)
	}

	// The restored database gives the next job the running one's id.
	after := h.enqueue(t, "after", nil, jobs.EnqueueOptions{})
	if after.ID != long.ID {
		t.Fatalf("the new job has id %d, want %d (the running one's)", after.ID, long.ID)
	}
	if j := h.next(t); j.Kind != "after" || j.Status != store.JobSucceeded {
		t.Fatalf("after the restore: %+v", j)
	}
	h.quiet(t, 50*time.Millisecond)
	if j := h.job(t, after.ID); j.Kind != "after" || j.Status != store.JobSucceeded || j.Attempts != 1 {
		t.Fatalf("the long job's end was recorded over the new one: %+v", j)
	}
}

// A job the restored database says is running (the snapshot was taken
// while it ran) is recovered right after the swap and runs again.
func TestRunnerRecoversWhatARestoreLeftRunning(t *testing.T) {
	t.Parallel()
	h := newHarness(t, jobs.Options{SweepInterval: time.Hour}) // no periodic sweep to help
	started := newSignal()
	var second atomic.Pointer[store.Job]
	h.register("gen", func(ctx context.Context, j *store.Job) error {
		if j.Attempts == 1 {
			started.fire()
			<-ctx.Done()
			return ctx.Err()
		}
		second.Store(j)
		return nil
	})
	h.start(t)
	job := h.enqueue(t, "gen", nil, jobs.EnqueueOptions{})
	started.wait(t, "the first attempt")
	src := snapshot(t, h.db) // the job is running in it
	restored(t, restore(h.db, src))
	j := h.next(t)
	if j.ID != job.ID || j.Status != store.JobSucceeded || j.Attempts != 2 {
		t.Fatalf("finished %+v", j)
	}
	if s := second.Load(); s == nil || s.LastError != "interrupted by a database restore" {
		t.Fatalf("the second attempt saw %+v", s)
	}
}

// A handler runs under the runner's hold: store calls that hold are
// no-ops inside it, so they go through even while a restore waits, and the
// restore waits until the handler returns.
func TestHandlerContextHoldsTheDatabase(t *testing.T) {
	t.Parallel()
	h := newHarness(t, jobs.Options{})
	src := snapshot(t, h.db)
	started := newSignal()
	done := make(chan error, 1)
	checked := make(chan error, 1)
	h.register("check", func(ctx context.Context, j *store.Job) error {
		started.fire()
		<-ctx.Done() // the restore waits
		held := make(chan error, 1)
		go func() {
			hctx, release := h.db.Hold(context.WithoutCancel(ctx))
			defer release()
			_, err := h.db.JobByID(hctx, j.ID)
			held <- err
		}()
		select {
		case err := <-held:
			checked <- err
		case <-time.After(wait):
			checked <- errors.New("Hold inside the handler waited for the restore: the handler's context does not hold")
		}
		select {
		case <-done:
			checked <- errors.New("the restore went ahead while the handler ran")
		default:
		}
		return ctx.Err()
	})
	h.start(t)
	h.enqueue(t, "check", nil, jobs.EnqueueOptions{})
	started.wait(t, "the handler's start")
	restoreInto(h.db, src, done)
	if err := <-checked; err != nil {
		t.Fatal(err)
	}
	restored(t, done)
	select {
	case err := <-checked:
		t.Fatal(err)
	default:
	}
}
