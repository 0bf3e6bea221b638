package jobs_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/copydesk/copydesk/server/jobs"
	"github.com/copydesk/copydesk/store"
)

// fakeClock is a settable store clock.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

var t0 = time.Date(2026, 3, 1, 10, 30, 0, 0, time.UTC)

// onClock puts the store of h on a fake clock at t0.
func onClock(h *harness) *fakeClock {
	c := &fakeClock{now: t0}
	h.db.Now = c.Now
	return c
}

// queued lists the queued jobs of a kind.
func queued(t *testing.T, db *store.DB, kind string) []*store.Job {
	t.Helper()
	list, _, err := db.ListJobs(context.Background(), store.JobFilter{Kind: kind, Status: store.JobQueued, Page: store.Page{Page: 1, PerPage: 50}})
	if err != nil {
		t.Fatal(err)
	}
	return list
}

// pendingAt waits until the kind has exactly one queued job, due at at.
func pendingAt(t *testing.T, db *store.DB, kind string, at time.Time) *store.Job {
	t.Helper()
	var list []*store.Job
	deadline := time.Now().Add(wait)
	for {
		list = queued(t, db, kind)
		if len(list) == 1 && list[0].RunAfter.Equal(at) {
			return list[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("queued jobs of %s: %+v, want one at %v", kind, list, at)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestEvery(t *testing.T) {
	t.Parallel()
	hourly := jobs.Every(time.Hour)
	for now, want := range map[time.Time]time.Time{
		t0:                       t0.Add(30 * time.Minute),
		t0.Add(30 * time.Minute): t0.Add(90 * time.Minute), // the slot's own time is past
		t0.Add(29 * time.Minute): t0.Add(30 * time.Minute),
	} {
		next, ok, err := hourly(context.Background(), now)
		if !ok || err != nil || !next.Equal(want) {
			t.Errorf("Every(1h) at %v = %v %v %v, want %v", now, next, ok, err, want)
		}
	}
}

// A recurring kind has one job queued for its next time; after it runs,
// the next one is planned; a restart finds it and plans no second one.
func TestRecurringKeepsOneJobQueued(t *testing.T) {
	t.Parallel()
	h := newHarness(t, jobs.Options{})
	clock := onClock(h)
	var ran []time.Time
	var mu sync.Mutex
	hourly := jobs.Kind{Next: jobs.Every(time.Hour), Handle: func(ctx context.Context, j *store.Job) error {
		mu.Lock()
		ran = append(ran, h.db.Now())
		mu.Unlock()
		return nil
	}}
	h.registerKind("tidy", hourly)
	stop := h.start(t)
	first := pendingAt(t, h.db, "tidy", t0.Add(30*time.Minute))
	if first.MaxAttempts != 1 {
		t.Fatalf("a recurring job is tried %d times, want once", first.MaxAttempts)
	}
	if _, err := h.r.Enqueue(context.Background(), "tidy", nil, jobs.EnqueueOptions{}); err == nil {
		t.Fatal("Enqueue accepted a recurring kind")
	}
	h.quiet(t, 50*time.Millisecond) // not due on the store's clock

	clock.Set(t0.Add(31 * time.Minute))
	if j := h.next(t); j.ID != first.ID || j.Status != store.JobSucceeded {
		t.Fatalf("finished %+v", j)
	}
	second := pendingAt(t, h.db, "tidy", t0.Add(90*time.Minute))
	stop()

	h2 := newHarnessOn(t, h.db, jobs.Options{})
	h2.registerKind("tidy", hourly)
	h2.start(t)
	time.Sleep(50 * time.Millisecond) // the start plans, a few polls
	if again := pendingAt(t, h.db, "tidy", t0.Add(90*time.Minute)); again.ID != second.ID {
		t.Fatalf("the restart planned job %d, want the queued %d", again.ID, second.ID)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(ran) != 1 || !ran[0].Equal(t0.Add(31*time.Minute)) {
		t.Fatalf("ran at %v", ran)
	}
}

// Swept closes once Run's first sweep has planned the recurring kinds, so
// that a server waiting for it serves no request before the queue is set
// (two instances that answer have each planned: one queued job between
// them, which internal/clustertest checks on PostgreSQL).
func TestSweptAfterThePlan(t *testing.T) {
	t.Parallel()
	h := newHarness(t, jobs.Options{})
	onClock(h)
	h.registerKind("tidy", jobs.Kind{Next: jobs.Every(time.Hour), Handle: func(context.Context, *store.Job) error { return nil }})
	select {
	case <-h.r.Swept():
		t.Fatal("Swept is closed before Run")
	default:
	}
	h.start(t)
	select {
	case <-h.r.Swept():
	case <-time.After(wait):
		t.Fatalf("Swept not closed %v after Run began", wait)
	}
	if list := queued(t, h.db, "tidy"); len(list) != 1 || !list[0].RunAfter.Equal(t0.Add(30*time.Minute)) {
		t.Fatalf("queued when Swept closed: %+v, want one job at %v", list, t0.Add(30*time.Minute))
	}
}

// schedule is a Schedule a test changes.
type schedule struct {
	mu sync.Mutex
	at time.Time
	on bool
}

func (s *schedule) set(at time.Time, on bool) {
	s.mu.Lock()
	s.at, s.on = at, on
	s.mu.Unlock()
}

func (s *schedule) next(context.Context, time.Time) (time.Time, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.at, s.on, nil
}

// Replan moves the queued job when the schedule changes, removes it when
// the schedule is off, and plans one when it is on again.
func TestRecurringReplan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHarness(t, jobs.Options{SweepInterval: time.Hour})
	onClock(h)
	s := &schedule{at: t0.Add(time.Hour), on: true}
	h.registerKind("backup", jobs.Kind{Handle: succeed, Next: s.next})
	h.register("plain", succeed)
	h.start(t)
	first := pendingAt(t, h.db, "backup", t0.Add(time.Hour))

	s.set(t0.Add(6*time.Hour), true)
	if err := h.r.Replan(ctx, "backup"); err != nil {
		t.Fatal(err)
	}
	if j := pendingAt(t, h.db, "backup", t0.Add(6*time.Hour)); j.ID != first.ID {
		t.Fatalf("Replan made job %d, want %d moved", j.ID, first.ID)
	}
	s.set(time.Time{}, false)
	if err := h.r.Replan(ctx, "backup"); err != nil {
		t.Fatal(err)
	}
	if list := queued(t, h.db, "backup"); len(list) != 0 {
		t.Fatalf("off, yet queued: %+v", list)
	}
	s.set(t0.Add(2*time.Hour), true)
	if err := h.r.Replan(ctx, "backup"); err != nil {
		t.Fatal(err)
	}
	pendingAt(t, h.db, "backup", t0.Add(2*time.Hour))

	for _, kind := range []string{"plain", "unknown"} {
		if err := h.r.Replan(ctx, kind); err == nil {
			t.Errorf("Replan(%q) did not fail", kind)
		}
	}
}

// Cancelling the queued run of a recurring kind skips that run, not the
// schedule: the next one is planned at once.
func TestRecurringCancelPlansTheNext(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHarness(t, jobs.Options{SweepInterval: time.Hour})
	onClock(h)
	s := &schedule{at: t0.Add(time.Hour), on: true}
	h.registerKind("backup", jobs.Kind{Handle: succeed, Next: s.next})
	h.start(t)
	first := pendingAt(t, h.db, "backup", t0.Add(time.Hour))
	s.set(t0.Add(2*time.Hour), true)
	if _, err := h.r.Cancel(ctx, first.ID); err != nil {
		t.Fatal(err)
	}
	if j := h.next(t); j.ID != first.ID || j.Status != store.JobCancelled {
		t.Fatalf("finished %+v", j)
	}
	if j := pendingAt(t, h.db, "backup", t0.Add(2*time.Hour)); j.ID == first.ID {
		t.Fatal("the cancelled job is still queued")
	}
}
