package jobs_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/copydesk/copydesk/server/jobs"
	"github.com/copydesk/copydesk/store"
)

// gauge counts handlers running at once and remembers the most.
type gauge struct{ now, most atomic.Int32 }

func (g *gauge) enter() {
	c := g.now.Add(1)
	for m := g.most.Load(); c > m && !g.most.CompareAndSwap(m, c); m = g.most.Load() {
	}
}

func (g *gauge) leave() { g.now.Add(-1) }

// waitFor polls cond until it holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, wait)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A kind's limit bounds how many of its jobs run at once; other kinds
// still get the free workers.
func TestKindLimit(t *testing.T) {
	t.Parallel()
	h := newHarness(t, jobs.Options{Workers: 3})
	var g gauge
	proceed := newSignal()
	h.registerKind("one", jobs.Kind{Limit: 1, Handle: func(ctx context.Context, j *store.Job) error {
		g.enter()
		defer g.leave()
		<-proceed.c
		return nil
	}})
	h.register("other", succeed)
	h.start(t)
	for range 3 {
		h.enqueue(t, "one", nil, jobs.EnqueueOptions{})
	}
	waitFor(t, "a job of the limited kind runs", func() bool { return g.now.Load() == 1 })
	other := h.enqueue(t, "other", nil, jobs.EnqueueOptions{})
	if j := h.next(t); j.ID != other.ID {
		t.Fatalf("finished %+v, want the other kind's job", j)
	}
	time.Sleep(60 * time.Millisecond) // several polls with two idle workers
	proceed.fire()
	for range 3 {
		if j := h.next(t); j.Kind != "one" || j.Status != store.JobSucceeded {
			t.Fatalf("finished %+v", j)
		}
	}
	if m := g.most.Load(); m != 1 {
		t.Fatalf("%d jobs of a kind limited to 1 ran at once", m)
	}
}

// Background kinds together take at most all workers but one: an
// interactive job starts at once however much background work waits.
func TestBackgroundLeavesAWorker(t *testing.T) {
	t.Parallel()
	h := newHarness(t, jobs.Options{Workers: 3})
	var g gauge
	proceed := newSignal()
	block := func(ctx context.Context, j *store.Job) error {
		g.enter()
		defer g.leave()
		<-proceed.c
		return nil
	}
	h.registerKind("fetch", jobs.Kind{Background: true, Handle: block})
	// A recurring kind is background work too; it is due once.
	var ticked atomic.Bool
	h.registerKind("tick", jobs.Kind{Handle: func(ctx context.Context, j *store.Job) error {
		ticked.Store(true)
		return block(ctx, j)
	}, Next: func(context.Context, time.Time) (time.Time, bool, error) {
		if ticked.Load() {
			return time.Now().Add(time.Hour), true, nil
		}
		return time.Now().Add(-time.Minute), true, nil
	}})
	h.register("run", succeed)
	for range 4 {
		h.enqueue(t, "fetch", nil, jobs.EnqueueOptions{})
	}
	h.start(t)
	waitFor(t, "background jobs run", func() bool { return g.now.Load() == 2 })
	time.Sleep(60 * time.Millisecond) // several polls
	if n := g.now.Load(); n != 2 {
		t.Fatalf("%d background jobs run at once on 3 workers, want 2", n)
	}
	begin := time.Now()
	run := h.enqueue(t, "run", nil, jobs.EnqueueOptions{})
	if j := h.next(t); j.ID != run.ID || j.Status != store.JobSucceeded {
		t.Fatalf("finished %+v, want the interactive job", j)
	}
	if took := time.Since(begin); took > time.Second {
		t.Fatalf("the interactive job waited %v", took)
	}
	proceed.fire()
	kinds := map[string]int{}
	for range 5 {
		kinds[h.next(t).Kind]++
	}
	if kinds["fetch"] != 4 || kinds["tick"] != 1 {
		t.Fatalf("finished %v, want 4 fetch and 1 tick", kinds)
	}
	if m := g.most.Load(); m != 2 {
		t.Fatalf("at most %d background jobs ran at once, want 2", m)
	}
}

// With one worker, background work still runs: it has the worker when
// nothing else is due.
func TestBackgroundWithOneWorker(t *testing.T) {
	t.Parallel()
	h := newHarness(t, jobs.Options{Workers: 1})
	h.registerKind("fetch", jobs.Kind{Background: true, Handle: succeed})
	h.start(t)
	h.enqueue(t, "fetch", nil, jobs.EnqueueOptions{})
	if j := h.next(t); j.Status != store.JobSucceeded {
		t.Fatalf("finished %+v", j)
	}
}

func TestRegisterRefusesBadKinds(t *testing.T) {
	t.Parallel()
	r := jobs.New(openDB(t), nil, jobs.Options{})
	r.Register("ok", jobs.Kind{Handle: succeed})
	for name, reg := range map[string]func(){
		"NoHandler":     func() { r.Register("x", jobs.Kind{}) },
		"NoName":        func() { r.Register("", jobs.Kind{Handle: succeed}) },
		"NegativeLimit": func() { r.Register("y", jobs.Kind{Handle: succeed, Limit: -1}) },
		"Twice":         func() { r.Register("ok", jobs.Kind{Handle: succeed}) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: Register did not panic", name)
				}
			}()
			reg()
		}()
	}
}
