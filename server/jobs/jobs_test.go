package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/copydesk/copydesk/server/jobs"
	"github.com/copydesk/copydesk/store"
)

// wait bounds every wait of these tests; they normally take milliseconds.
const wait = 5 * time.Second

func openDB(t *testing.T) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "copydesk.db"), store.Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// harness is a runner over a fresh database whose finished jobs arrive on
// finished.
type harness struct {
	db       *store.DB
	r        *jobs.Runner
	finished chan *store.Job
}

func newHarness(t *testing.T, opt jobs.Options) *harness {
	t.Helper()
	db := openDB(t)
	return newHarnessOn(t, db, opt)
}

func newHarnessOn(t *testing.T, db *store.DB, opt jobs.Options) *harness {
	t.Helper()
	if opt.PollInterval == 0 {
		opt.PollInterval = 20 * time.Millisecond
	}
	if opt.Backoff == nil {
		opt.Backoff = func(int) time.Duration { return time.Millisecond }
	}
	h := &harness{db: db, finished: make(chan *store.Job, 1000)}
	h.r = jobs.New(db, slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug})), opt)
	return h
}

// register registers a kind whose finished jobs arrive on h.finished.
func (h *harness) register(kind string, handle jobs.Handler) {
	h.registerKind(kind, jobs.Kind{Handle: handle})
}

func (h *harness) registerKind(kind string, k jobs.Kind) {
	k.OnFinish = func(_ context.Context, j *store.Job) { h.finished <- j }
	h.r.Register(kind, k)
}

// start runs the runner until the returned stop is called (or the test
// ends); stop returns once Run has.
func (h *harness) start(t *testing.T) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.r.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run: %v", err)
				}
			case <-time.After(wait):
				t.Errorf("Run did not return %v after its context ended", wait)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func (h *harness) enqueue(t *testing.T, kind string, payload any, opt jobs.EnqueueOptions) *store.Job {
	t.Helper()
	j, err := h.r.Enqueue(context.Background(), kind, payload, opt)
	if err != nil {
		t.Fatalf("Enqueue %s: %v", kind, err)
	}
	return j
}

// next waits for the next job to finish.
func (h *harness) next(t *testing.T) *store.Job {
	t.Helper()
	select {
	case j := <-h.finished:
		return j
	case <-time.After(wait):
		t.Fatalf("no job finished within %v", wait)
		return nil
	}
}

// quiet fails if a job finishes within d.
func (h *harness) quiet(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case j := <-h.finished:
		t.Fatalf("job %d (%s) finished %s, want none", j.ID, j.Kind, j.Status)
	case <-time.After(d):
	}
}

func (h *harness) job(t *testing.T, id int64) *store.Job {
	t.Helper()
	j, err := h.db.JobByID(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// signal is a channel closed once.
type signal struct {
	once sync.Once
	c    chan struct{}
}

func newSignal() *signal { return &signal{c: make(chan struct{})} }
func (s *signal) fire()  { s.once.Do(func() { close(s.c) }) }
func (s *signal) wait(t *testing.T, what string) {
	t.Helper()
	select {
	case <-s.c:
	case <-time.After(wait):
		t.Fatalf("%s did not happen within %v", what, wait)
	}
}

func succeed(context.Context, *store.Job) error { return nil }

// Four workers take fifty jobs: each runs exactly once.
func TestRunnerRunsEachJobOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t, jobs.Options{Workers: 4})
	var mu sync.Mutex
	runs := map[int64]int{}
	h.register("count", func(ctx context.Context, j *store.Job) error {
		mu.Lock()
		runs[j.ID]++
		mu.Unlock()
		time.Sleep(time.Millisecond)
		return nil
	})
	const n = 50
	for i := range n {
		h.enqueue(t, "count", map[string]int{"i": i}, jobs.EnqueueOptions{})
	}
	h.start(t)
	for range n {
		if j := h.next(t); j.Status != store.JobSucceeded || j.Attempts != 1 {
			t.Fatalf("finished %+v", j)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(runs) != n {
		t.Fatalf("%d distinct jobs ran, want %d", len(runs), n)
	}
	for id, c := range runs {
		if c != 1 {
			t.Errorf("job %d ran %d times", id, c)
		}
	}
	_, total, err := h.db.ListJobs(context.Background(), store.JobFilter{Status: store.JobSucceeded})
	if err != nil || total != n {
		t.Fatalf("%d succeeded jobs (%v), want %d", total, err, n)
	}
}

// With two workers, never more than two handlers run at once.
func TestRunnerBoundsConcurrency(t *testing.T) {
	t.Parallel()
	h := newHarness(t, jobs.Options{Workers: 2})
	var now, most atomic.Int32
	// The first handler waits for a second beside it (however slow the
	// machine), then every handler runs a while: a third at once would
	// show.
	both := make(chan struct{})
	var once sync.Once
	h.register("slow", func(ctx context.Context, j *store.Job) error {
		c := now.Add(1)
		for {
			m := most.Load()
			if c <= m || most.CompareAndSwap(m, c) {
				break
			}
		}
		if c >= 2 {
			once.Do(func() { close(both) })
		}
		select {
		case <-both:
		case <-time.After(wait):
		}
		time.Sleep(15 * time.Millisecond)
		now.Add(-1)
		return nil
	})
	for range 10 {
		h.enqueue(t, "slow", nil, jobs.EnqueueOptions{})
	}
	h.start(t)
	for range 10 {
		h.next(t)
	}
	if m := most.Load(); m != 2 {
		t.Fatalf("at most %d handlers ran at once, want 2", m)
	}
}

// Enqueue wakes a worker at once: no waiting for the poll.
func TestRunnerEnqueueWakesAWorker(t *testing.T) {
	t.Parallel()
	h := newHarness(t, jobs.Options{PollInterval: time.Hour})
	h.register("now", succeed)
	h.start(t)
	time.Sleep(20 * time.Millisecond) // let the workers go idle
	begin := time.Now()
	h.enqueue(t, "now", nil, jobs.EnqueueOptions{})
	if j := h.next(t); j.Status != store.JobSucceeded {
		t.Fatalf("finished %+v", j)
	}
	if took := time.Since(begin); took > time.Second {
		t.Fatalf("the job took %v to run", took)
	}
}

// A delayed job waits for its time.
func TestRunnerDelayedJob(t *testing.T) {
	t.Parallel()
	h := newHarness(t, jobs.Options{PollInterval: time.Hour})
	h.register("later", succeed)
	h.start(t)
	begin := time.Now()
	h.enqueue(t, "later", nil, jobs.EnqueueOptions{RunAfter: time.Now().Add(60 * time.Millisecond)})
	h.next(t)
	if took := time.Since(begin); took < 50*time.Millisecond {
		t.Fatalf("the delayed job ran after %v", took)
	}
}

type tempErr struct{ retry bool }

func (e tempErr) Error() string   { return fmt.Sprintf("temp error (retry %v)", e.retry) }
func (e tempErr) Retryable() bool { return e.retry }

// A temporary failure is retried after the backoff, until it succeeds.
func TestRunnerRetriesThenSucceeds(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var backoffs []int
	h := newHarness(t, jobs.Options{
		PollInterval: time.Hour, // the retry's own timer wakes a worker
		Backoff: func(attempt int) time.Duration {
			mu.Lock()
			backoffs = append(backoffs, attempt)
			mu.Unlock()
			return 5 * time.Millisecond
		},
	})
	var errs []string
	h.register("flaky", func(ctx context.Context, j *store.Job) error {
		mu.Lock()
		defer mu.Unlock()
		if j.Attempts > 1 {
			cur, err := h.db.JobByID(ctx, j.ID)
			if err == nil {
				errs = append(errs, cur.LastError) // what the last attempt left
			}
		}
		switch j.Attempts {
		case 1:
			return fmt.Errorf("fetch: %w", jobs.ErrRetry)
		case 2:
			return jobs.Retry(errors.New("503 from upstream"))
		}
		return nil
	})
	h.start(t)
	job := h.enqueue(t, "flaky", nil, jobs.EnqueueOptions{MaxAttempts: 5})
	j := h.next(t)
	if j.ID != job.ID || j.Status != store.JobSucceeded || j.Attempts != 3 || j.LastError != "" {
		t.Fatalf("finished %+v", j)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(backoffs, []int{1, 2}) {
		t.Errorf("backoff asked for attempts %v, want [1 2]", backoffs)
	}
	if want := []string{"fetch: temporary failure", "503 from upstream"}; !slices.Equal(errs, want) {
		t.Errorf("last errors seen %q, want %q", errs, want)
	}
	h.quiet(t, 30*time.Millisecond) // finished once
}

// A job that keeps failing temporarily fails for good after its attempts.
func TestRunnerFailsAfterMaxAttempts(t *testing.T) {
	t.Parallel()
	h := newHarness(t, jobs.Options{})
	var runs atomic.Int32
	h.register("down", func(ctx context.Context, j *store.Job) error {
		runs.Add(1)
		return tempErr{retry: true}
	})
	h.start(t)
	h.enqueue(t, "down", nil, jobs.EnqueueOptions{MaxAttempts: 3})
	j := h.next(t)
	if j.Status != store.JobFailed || j.Attempts != 3 || j.LastError != "temp error (retry true)" || j.FinishedAt == nil {
		t.Fatalf("finished %+v", j)
	}
	if n := runs.Load(); n != 3 {
		t.Fatalf("ran %d times, want 3", n)
	}
	h.quiet(t, 50*time.Millisecond)
}

// Errors that do not ask for a retry fail the job at once.
func TestRunnerDoesNotRetry(t *testing.T) {
	t.Parallel()
	for name, err := range map[string]error{
		"Permanent":          jobs.Permanent(fmt.Errorf("bad input: %w", jobs.ErrRetry)),
		"PermanentRetryable": jobs.Permanent(tempErr{retry: true}),
		"PlainError":         errors.New("bad input"),
		"RetryableSaysNo":    fmt.Errorf("wrapped: %w", tempErr{retry: false}),
		"ContextDeadlineOwn": fmt.Errorf("call: %w", context.DeadlineExceeded),
		"PermanentOverRetry": jobs.Permanent(jobs.Retry(errors.New("x"))),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, jobs.Options{})
			var runs atomic.Int32
			h.register("bad", func(ctx context.Context, j *store.Job) error {
				runs.Add(1)
				return err
			})
			h.start(t)
			h.enqueue(t, "bad", nil, jobs.EnqueueOptions{MaxAttempts: 5})
			j := h.next(t)
			if j.Status != store.JobFailed || j.Attempts != 1 || j.LastError != err.Error() {
				t.Fatalf("finished %+v", j)
			}
			if n := runs.Load(); n != 1 {
				t.Fatalf("ran %d times, want 1", n)
			}
		})
	}
}

func TestIsRetryable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{errors.New("x"), false},
		{jobs.ErrRetry, true},
		{fmt.Errorf("a: %w", jobs.ErrRetry), true},
		{fmt.Errorf("a: %w: %w", errors.New("b"), jobs.ErrRetry), true},
		{jobs.Retry(errors.New("x")), true},
		{jobs.Permanent(jobs.ErrRetry), false},
		{fmt.Errorf("outer: %w", jobs.Permanent(jobs.ErrRetry)), false},
		{jobs.Retry(jobs.Permanent(errors.New("x"))), true}, // the outermost verdict wins
		{tempErr{retry: true}, true},
		{tempErr{retry: false}, false},
	} {
		if got := jobs.IsRetryable(tc.err); got != tc.want {
			t.Errorf("IsRetryable(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
	if jobs.Permanent(nil) != nil || jobs.Retry(nil) != nil {
		t.Error("marking nil is not nil")
	}
	inner := errors.New("inner")
	if p := jobs.Permanent(inner); !errors.Is(p, inner) || p.Error() != "inner" {
		t.Errorf("Permanent hides its error: %v", p)
	}
}

func TestDefaultBackoff(t *testing.T) {
	t.Parallel()
	for attempt, want := range map[int]time.Duration{
		0: 2 * time.Second, 1: 2 * time.Second, 2: 4 * time.Second, 3: 8 * time.Second,
		8: 256 * time.Second, 9: 5 * time.Minute, 64: 5 * time.Minute, 1 << 30: 5 * time.Minute,
	} {
		if got := jobs.DefaultBackoff(attempt); got != want {
			t.Errorf("DefaultBackoff(%d) = %v, want %v", attempt, got, want)
		}
	}
}

// A panicking handler fails its job, without a retry, and the runner goes on.
func TestRunnerRecoversPanics(t *testing.T) {
	t.Parallel()
	h := newHarness(t, jobs.Options{Workers: 1})
	var runs atomic.Int32
	h.register("boom", func(ctx context.Context, j *store.Job) error {
		runs.Add(1)
		panic("boom")
	})
	h.register("ok", succeed)
	h.start(t)
	h.enqueue(t, "boom", nil, jobs.EnqueueOptions{MaxAttempts: 3})
	j := h.next(t)
	if j.Status != store.JobFailed || j.Attempts != 1 || j.LastError != "panic: boom" {
		t.Fatalf("finished %+v", j)
	}
	h.enqueue(t, "ok", nil, jobs.EnqueueOptions{})
	if j := h.next(t); j.Kind != "ok" || j.Status != store.JobSucceeded {
		t.Fatalf("after the panic: %+v", j)
	}
	if n := runs.Load(); n != 1 {
		t.Fatalf("the panicking handler ran %d times", n)
	}
}

func TestRunnerCancel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("Queued", func(t *testing.T) {
		h := newHarness(t, jobs.Options{})
		var runs atomic.Int32
		h.register("later", func(context.Context, *store.Job) error { runs.Add(1); return nil })
		h.start(t)
		job := h.enqueue(t, "later", nil, jobs.EnqueueOptions{RunAfter: time.Now().Add(time.Hour)})
		got, err := h.r.Cancel(ctx, job.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != store.JobCancelled || got.FinishedAt == nil {
			t.Fatalf("Cancel = %+v", got)
		}
		if j := h.next(t); j.ID != job.ID || j.Status != store.JobCancelled {
			t.Fatalf("OnFinish got %+v", j)
		}
		_, err = h.r.Cancel(ctx, job.ID)
		if store.KindOf(err) != store.KindConflict {
			t.Fatalf("cancelling again: %v, want a conflict", err)
		}
		if runs.Load() != 0 {
			t.Fatal("a cancelled job ran")
		}
	})
	t.Run("Running", func(t *testing.T) {
		h := newHarness(t, jobs.Options{})
		started := newSignal()
		var cause atomic.Value
		h.register("long", func(ctx context.Context, j *store.Job) error {
			started.fire()
			<-ctx.Done()
			cause.Store(context.Cause(ctx))
			return ctx.Err()
		})
		h.start(t)
		job := h.enqueue(t, "long", nil, jobs.EnqueueOptions{MaxAttempts: 3})
		started.wait(t, "the handler's start")
		got, err := h.r.Cancel(ctx, job.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != store.JobRunning {
			t.Fatalf("Cancel of a running job = %+v, want it still running", got)
		}
		j := h.next(t)
		if j.ID != job.ID || j.Status != store.JobCancelled || j.Attempts != 1 || j.LastError != "cancelled" {
			t.Fatalf("finished %+v", j)
		}
		if c := cause.Load(); c != jobs.ErrCancelled {
			t.Fatalf("the handler's context ended with %v, want ErrCancelled", c)
		}
		h.quiet(t, 30*time.Millisecond) // not retried
	})
	t.Run("FinishedAnyway", func(t *testing.T) {
		// A handler that ignores the cancellation and completes is
		// believed: the work was done.
		h := newHarness(t, jobs.Options{})
		started, proceed := newSignal(), newSignal()
		h.register("stubborn", func(ctx context.Context, j *store.Job) error {
			started.fire()
			<-proceed.c
			return nil
		})
		h.start(t)
		job := h.enqueue(t, "stubborn", nil, jobs.EnqueueOptions{})
		started.wait(t, "the handler's start")
		if _, err := h.r.Cancel(ctx, job.ID); err != nil {
			t.Fatal(err)
		}
		proceed.fire()
		if j := h.next(t); j.Status != store.JobSucceeded {
			t.Fatalf("finished %+v", j)
		}
	})
	t.Run("NotFound", func(t *testing.T) {
		h := newHarness(t, jobs.Options{})
		_, err := h.r.Cancel(ctx, 77)
		if !store.IsNotFound(err) {
			t.Fatalf("got %v, want not found", err)
		}
	})
	t.Run("LeftRunningElsewhere", func(t *testing.T) {
		// Running in the database but by no worker (not yet swept):
		// nothing runs it, so cancelling ends it at once.
		h := newHarness(t, jobs.Options{})
		h.register("x", succeed)
		job, err := h.db.EnqueueJob(ctx, store.NewJob{Kind: "x"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.db.ClaimJob(ctx, []string{"x"}); err != nil {
			t.Fatal(err)
		}
		got, err := h.r.Cancel(ctx, job.ID)
		if err != nil || got.Status != store.JobCancelled {
			t.Fatalf("Cancel = %+v, %v", got, err)
		}
		if j := h.next(t); j.ID != job.ID {
			t.Fatalf("OnFinish got %+v", j)
		}
	})
}

// Jobs a crash left running are requeued (attempts left) or failed (none
// left) when the runner starts: never stuck running.
func TestRunnerRecoversAfterCrash(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openDB(t)
	// The previous process claimed these and died.
	again, err := db.EnqueueJob(ctx, store.NewJob{Kind: "work", MaxAttempts: 3})
	if err != nil {
		t.Fatal(err)
	}
	spent, err := db.EnqueueJob(ctx, store.NewJob{Kind: "work", MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := db.ClaimJob(ctx, []string{"work"}); err != nil {
			t.Fatal(err)
		}
	}

	h := newHarnessOn(t, db, jobs.Options{})
	var mu sync.Mutex
	var ran []*store.Job
	h.register("work", func(ctx context.Context, j *store.Job) error {
		mu.Lock()
		ran = append(ran, j)
		mu.Unlock()
		return nil
	})
	h.start(t)
	got := map[int64]*store.Job{}
	for range 2 {
		j := h.next(t)
		got[j.ID] = j
	}
	if j := got[spent.ID]; j == nil || j.Status != store.JobFailed || j.Attempts != 1 || j.LastError != store.JobInterrupted {
		t.Fatalf("the job out of attempts: %+v", j)
	}
	if j := got[again.ID]; j == nil || j.Status != store.JobSucceeded || j.Attempts != 2 {
		t.Fatalf("the requeued job: %+v", j)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(ran) != 1 || ran[0].ID != again.ID || ran[0].LastError != store.JobInterrupted {
		t.Fatalf("the handler ran %+v", ran)
	}
}

// Run returns only after the running handlers have; their jobs go back in
// the queue and run after the restart.
func TestRunnerStopsCleanly(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	h := newHarnessOn(t, db, jobs.Options{})
	started := newSignal()
	var returned atomic.Bool
	h.register("long", func(ctx context.Context, j *store.Job) error {
		started.fire()
		<-ctx.Done()
		time.Sleep(50 * time.Millisecond) // tidying up
		returned.Store(true)
		return ctx.Err()
	})
	stop := h.start(t)
	job := h.enqueue(t, "long", nil, jobs.EnqueueOptions{MaxAttempts: 1})
	started.wait(t, "the handler's start")
	stop()
	if !returned.Load() {
		t.Fatal("Run returned before the handler did")
	}
	j := h.job(t, job.ID)
	if j.Status != store.JobQueued || j.Attempts != 1 || j.LastError != "interrupted by a shutdown" {
		t.Fatalf("after the stop: %+v", j)
	}
	h.quiet(t, 0)

	// The restart runs it, though its one attempt was spent by the stop.
	h2 := newHarnessOn(t, db, jobs.Options{})
	h2.register("long", succeed)
	h2.start(t)
	if j := h2.next(t); j.ID != job.ID || j.Status != store.JobSucceeded || j.Attempts != 2 {
		t.Fatalf("after the restart: %+v", j)
	}
}

// A runner claims only the kinds it has handlers for.
func TestRunnerSkipsUnknownKinds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHarness(t, jobs.Options{})
	h.register("mine", succeed)
	if _, err := h.r.Enqueue(ctx, "theirs", nil, jobs.EnqueueOptions{}); err == nil {
		t.Fatal("Enqueue accepted a kind without a handler")
	}
	theirs, err := h.db.EnqueueJob(ctx, store.NewJob{Kind: "theirs"})
	if err != nil {
		t.Fatal(err)
	}
	h.start(t)
	mine := h.enqueue(t, "mine", nil, jobs.EnqueueOptions{})
	if j := h.next(t); j.ID != mine.ID {
		t.Fatalf("finished %+v", j)
	}
	h.quiet(t, 60*time.Millisecond) // several polls
	if j := h.job(t, theirs.ID); j.Status != store.JobQueued || j.Attempts != 0 {
		t.Fatalf("the other kind's job: %+v", j)
	}
}

// A job marked running that no worker runs (a database restore can leave
// one) is swept back into the queue; the runner's own are left alone.
func TestRunnerSweepsAbandonedJobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHarness(t, jobs.Options{SweepInterval: 10 * time.Millisecond})
	started, proceed := newSignal(), newSignal()
	h.register("long", func(ctx context.Context, j *store.Job) error {
		started.fire()
		<-proceed.c
		return nil
	})
	h.start(t)
	mine := h.enqueue(t, "long", nil, jobs.EnqueueOptions{})
	started.wait(t, "the handler's start")

	lost, err := h.db.EnqueueJob(ctx, store.NewJob{Kind: "other", MaxAttempts: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.db.ClaimJob(ctx, []string{"other"}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(wait)
	for h.job(t, lost.ID).Status == store.JobRunning {
		if time.Now().After(deadline) {
			t.Fatal("the abandoned job was not swept")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if j := h.job(t, lost.ID); j.Status != store.JobQueued || j.Attempts != 1 {
		t.Fatalf("swept job: %+v", j)
	}
	time.Sleep(30 * time.Millisecond) // a few more sweeps
	if j := h.job(t, mine.ID); j.Status != store.JobRunning {
		t.Fatalf("the runner's own job was swept: %+v", j)
	}
	proceed.fire()
	if j := h.next(t); j.ID != mine.ID || j.Status != store.JobSucceeded || j.Attempts != 1 {
		t.Fatalf("finished %+v", j)
	}
}

func TestRunnerRunsOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t, jobs.Options{})
	h.register("ping", func(context.Context, *store.Job) error { return nil })
	h.start(t)
	// A job that ran proves the first Run is running (a sleep would not:
	// on a loaded machine the second Run could start first, and never end).
	h.enqueue(t, "ping", nil, jobs.EnqueueOptions{})
	h.next(t)
	if err := h.r.Run(context.Background()); err == nil {
		t.Fatal("a second Run started")
	}
}
