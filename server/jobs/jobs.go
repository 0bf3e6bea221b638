// Package jobs runs copydesk's background work (executions, autopilot and
// scout runs, publishing, scheduled backups) from the persistent queue in
// the jobs table: a bounded pool of workers claims due jobs, runs the
// handler registered for each kind, and records the outcome; failed jobs
// that ask for it are retried with a backoff; jobs can be cancelled, queued
// or running; and no job is left "running" after a crash, a restart or a
// database restore.
//
// One Runner serves a database: it takes any job it finds running that is
// not its own for the leftover of a process that stopped.
package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/copydesk/copydesk/store"
)

// Handler does one job's work. It stops soon after ctx ends, returning an
// error (ctx.Err() will do): ctx ends when the job is cancelled (then
// context.Cause(ctx) is ErrCancelled) or the runner stops. A handler that
// returns nil is taken at its word that the work is done. ctx does not hold
// the database: a handler holds it (db.Hold(ctx)) around its own store
// calls only, so that a restore need not wait for a long job. A handler may
// run again after a crash or a shutdown interrupted it, so it copes with
// finding its work half done.
//
// An error is retried only if it says so (see IsRetryable); a panic is
// recovered and fails the job.
type Handler func(ctx context.Context, job *store.Job) error

// Options tunes a Runner.
type Options struct {
	// Workers is how many jobs run at once, at most (default 2).
	Workers int
	// PollInterval is how often an idle worker looks for due jobs it was
	// not told about, such as delayed ones (default 1s). Enqueue wakes a
	// worker at once.
	PollInterval time.Duration
	// Backoff is how long to wait before retrying a job whose attempt
	// (counted from 1) failed (default DefaultBackoff).
	Backoff func(attempt int) time.Duration
	// SweepInterval is how often the runner looks for jobs marked running
	// that no worker runs, as a database restore can leave them (default
	// 1m).
	SweepInterval time.Duration
}

// DefaultBackoff waits 2s after the first attempt, then 4s, 8s, ...,
// at most 5 minutes.
func DefaultBackoff(attempt int) time.Duration {
	const limit = 5 * time.Minute
	if attempt < 1 {
		attempt = 1
	}
	if attempt > 9 { // 2s << 8 is past the limit already
		return limit
	}
	return min(2*time.Second<<(attempt-1), limit)
}

// EnqueueOptions tunes one Enqueue.
type EnqueueOptions struct {
	// MaxAttempts bounds how often the job is tried (default
	// store.DefaultJobMaxAttempts).
	MaxAttempts int
	// RunAfter delays the job; zero means now.
	RunAfter time.Time
}

// Reasons recorded as a job's last error by the runner itself.
const (
	reasonCancelled = "cancelled"
	reasonShutdown  = "interrupted by a shutdown"
	reasonOrphan    = "interrupted: no worker was running it (was the database restored?)"
)

// bookkeeping bounds the store calls that record a job's outcome; they run
// even while the runner stops.
const bookkeeping = 10 * time.Second

// Runner runs jobs. Register every kind and set OnFinish before Run.
type Runner struct {
	db  *store.DB
	log *slog.Logger
	opt Options

	// OnFinish, when set, is called after a job reaches a final status
	// (succeeded, failed or cancelled), with the job as stored, in the
	// goroutine that finished it. A panic in it is logged.
	// ctx is the caller's for a cancel (so a request's hold on the
	// database carries over; see store.DB.Hold) and the runner's otherwise.
	OnFinish func(ctx context.Context, job *store.Job)

	wake    chan struct{} // a job may be due: one token per worker, at most
	running atomic.Bool   // Run is under way

	// mu guards handlers and active. It is also held across the store
	// call that claims, finishes or cancels a job and the matching change
	// to active, so that a job is running in the database exactly while
	// it is in active (see sweep and Cancel). Taken after db.Hold, never
	// before.
	mu       sync.Mutex
	handlers map[string]Handler
	active   map[int64]*activeJob
}

// activeJob is a job a worker is running.
type activeJob struct {
	job     *store.Job
	handler Handler
	ctx     context.Context // the handler's
	cancel  context.CancelCauseFunc
	// cancelled says Cancel (not a shutdown) ended ctx; guarded by mu.
	cancelled bool
}

// New returns a Runner over db.
func New(db *store.DB, log *slog.Logger, opt Options) *Runner {
	if opt.Workers <= 0 {
		opt.Workers = 2
	}
	if opt.PollInterval <= 0 {
		opt.PollInterval = time.Second
	}
	if opt.Backoff == nil {
		opt.Backoff = DefaultBackoff
	}
	if opt.SweepInterval <= 0 {
		opt.SweepInterval = time.Minute
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Runner{
		db: db, log: log, opt: opt,
		wake:     make(chan struct{}, opt.Workers),
		handlers: map[string]Handler{},
		active:   map[int64]*activeJob{},
	}
}

// Register sets the handler of a kind of job. Registering a kind twice, an
// empty kind or a nil handler is a bug and panics.
func (r *Runner) Register(kind string, h Handler) {
	if kind == "" || h == nil {
		panic("jobs: Register needs a kind and a handler")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.handlers[kind]; dup {
		panic("jobs: kind " + kind + " registered twice")
	}
	r.handlers[kind] = h
}

// kinds lists the registered kinds; the caller holds mu.
func (r *Runner) kinds() []string {
	out := make([]string, 0, len(r.handlers))
	for k := range r.handlers {
		out = append(out, k)
	}
	return out
}

// Enqueue queues a job of a registered kind and wakes a worker for it (or
// sets a timer to, for a delayed one). Its payload is stored as JSON.
func (r *Runner) Enqueue(ctx context.Context, kind string, payload any, opt EnqueueOptions) (*store.Job, error) {
	r.mu.Lock()
	_, ok := r.handlers[kind]
	r.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("jobs: enqueue: no handler for kind %q", kind)
	}
	ctx, release := r.db.Hold(ctx) // a no-op inside a request, which holds already
	job, err := r.db.EnqueueJob(ctx, store.NewJob{Kind: kind, Payload: payload, MaxAttempts: opt.MaxAttempts, RunAfter: opt.RunAfter})
	release()
	if err != nil {
		return nil, err
	}
	r.wakeAt(job.RunAfter)
	return job, nil
}

// signal wakes one idle worker, if one is waiting for work.
func (r *Runner) signal() {
	select {
	case r.wake <- struct{}{}:
	default: // every worker already has a wake-up coming
	}
}

// wakeAt wakes a worker when a job becomes due at t: now, or by a timer
// (which a stopped runner ignores). The poll is the fallback.
func (r *Runner) wakeAt(t time.Time) {
	d := t.Sub(r.db.Now())
	if d <= 0 {
		r.signal()
		return
	}
	if d < r.opt.PollInterval { // farther out, the poll is soon enough
		time.AfterFunc(d+time.Millisecond, r.signal)
	}
}

// Cancel cancels a job. A queued job is cancelled at once. A running job's
// handler has its context cancelled and the job ends cancelled when the
// handler returns; the job is returned still running. A finished job is a
// store.KindConflict error, an unknown one store.KindNotFound.
func (r *Runner) Cancel(ctx context.Context, id int64) (*store.Job, error) {
	job, ended, err := r.cancel(ctx, id)
	if ended {
		r.finished(ctx, job) // outside the runner's hold: OnFinish may take its own
	}
	return job, err
}

// cancel is Cancel under the hold and mu; ended says the job is now
// cancelled.
func (r *Runner) cancel(ctx context.Context, id int64) (job *store.Job, ended bool, err error) {
	ctx, release := r.db.Hold(ctx) // a no-op inside a request, which holds already
	defer release()
	r.mu.Lock()
	defer r.mu.Unlock()
	job, err = r.db.CancelJob(ctx, id)
	if err != nil {
		return nil, false, err
	}
	if job.Status != store.JobRunning {
		return job, true, nil
	}
	if a, ok := r.active[id]; ok {
		a.cancelled = true
		a.cancel(ErrCancelled)
		return job, false, nil
	}
	// Running in the database but not here: left by a stopped process and
	// not swept yet. Nothing runs it, so it ends now.
	job, err = r.db.FinishJob(ctx, id, store.JobCancelled, reasonCancelled)
	if err != nil {
		return nil, false, err
	}
	return job, true, nil
}

// Run recovers the jobs a previous process left running, then runs jobs
// with Options.Workers workers until ctx ends. Then it stops claiming,
// cancels the running handlers' contexts, waits for them to return, puts
// the jobs they did not finish back in the queue, and returns nil. It
// returns an error at once if the recovery fails for another reason than
// ctx ending (the runner then does not start: a job it did not recover
// would look running forever) or if Run is already under way.
func (r *Runner) Run(ctx context.Context) error {
	if !r.running.CompareAndSwap(false, true) {
		return errors.New("jobs: the runner is already running")
	}
	defer r.running.Store(false)
	if err := r.sweep(ctx, store.JobInterrupted); err != nil {
		if ctx.Err() != nil {
			return nil // stopped while starting: nothing ran
		}
		return fmt.Errorf("jobs: recover interrupted jobs: %w", err)
	}
	var wg sync.WaitGroup
	for i := range r.opt.Workers {
		wg.Go(func() { r.work(ctx, i+1) })
	}
	wg.Go(func() { r.sweepEvery(ctx) })
	wg.Wait()
	return nil
}

// sweep recovers the jobs marked running that no worker of this runner
// runs, giving reason as their last error.
func (r *Runner) sweep(ctx context.Context, reason string) error {
	hctx, release := r.db.Hold(ctx)
	r.mu.Lock()
	except := make([]int64, 0, len(r.active))
	for id := range r.active {
		except = append(except, id)
	}
	rec, err := r.db.RecoverJobs(hctx, store.RecoverPolicy{Reason: reason, Except: except})
	r.mu.Unlock()
	release()
	if err != nil {
		return err
	}
	if rec.Requeued+rec.Failed > 0 {
		r.log.Warn("jobs left running recovered", "reason", reason, "requeued", rec.Requeued, "failed", rec.Failed)
		r.signal()
	}
	for _, j := range rec.FailedJobs {
		r.finished(ctx, j)
	}
	return nil
}

func (r *Runner) sweepEvery(ctx context.Context) {
	t := time.NewTicker(r.opt.SweepInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := r.sweep(ctx, reasonOrphan); err != nil && ctx.Err() == nil {
			r.log.Error("jobs: sweep for abandoned jobs", "err", err)
		}
	}
}

// work is one worker: it runs due jobs one at a time until ctx ends.
func (r *Runner) work(ctx context.Context, worker int) {
	t := time.NewTicker(r.opt.PollInterval)
	defer t.Stop()
	for ctx.Err() == nil {
		a, err := r.claim(ctx)
		if a != nil {
			r.execute(ctx, a)
			continue // there may be more
		}
		if err != nil && !store.IsNotFound(err) && ctx.Err() == nil {
			r.log.Error("jobs: claim", "worker", worker, "err", err)
		}
		select {
		case <-ctx.Done():
		case <-r.wake:
		case <-t.C:
		}
	}
}

// claim takes the next due job of a registered kind and records it active.
func (r *Runner) claim(ctx context.Context) (*activeJob, error) {
	hctx, release := r.db.Hold(ctx)
	defer release()
	r.mu.Lock()
	defer r.mu.Unlock()
	// The handler's context derives from ctx, not hctx: a handler holds
	// the database itself, only while it uses it.
	job, err := r.db.ClaimJob(hctx, r.kinds())
	if err != nil {
		return nil, err
	}
	a := &activeJob{job: job, handler: r.handlers[job.Kind]}
	a.ctx, a.cancel = context.WithCancelCause(ctx)
	r.active[job.ID] = a
	return a, nil
}

// execute runs a claimed job's handler and records the outcome.
func (r *Runner) execute(ctx context.Context, a *activeJob) {
	job := a.job
	log := r.log.With("job", job.ID, "kind", job.Kind, "attempt", job.Attempts)
	start := time.Now()
	err := call(a.ctx, a.handler, job)
	interrupted := a.ctx.Err() != nil // before the handler returned
	a.cancel(nil)
	took := time.Since(start)

	var pe *panicError
	if errors.As(err, &pe) {
		log.Error("jobs: handler panicked", "panic", pe.value, "stack", string(pe.stack))
	}

	// Record the outcome even if the runner is stopping.
	bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bookkeeping)
	defer cancel()
	bctx, release := r.db.Hold(bctx)
	r.mu.Lock()
	var (
		done    *store.Job
		dbErr   error
		retryAt time.Time
		outcome string
		errText string
	)
	if err != nil {
		errText = err.Error()
	}
	current := r.current(bctx, a)
	switch {
	case !current:
		outcome = "lost to a database restore"
	case err == nil:
		outcome = "succeeded"
		done, dbErr = r.db.FinishJob(bctx, job.ID, store.JobSucceeded, "")
	case a.cancelled:
		outcome = "cancelled"
		done, dbErr = r.db.FinishJob(bctx, job.ID, store.JobCancelled, reasonCancelled)
	case interrupted && ctx.Err() != nil && pe == nil:
		// Stopped by the shutdown, not by its own failure: it runs again
		// after the restart, the interrupted attempt counted.
		outcome = "requeued after shutdown"
		_, dbErr = r.db.RetryJob(bctx, job.ID, reasonShutdown, r.db.Now())
	case IsRetryable(err) && job.Attempts < job.MaxAttempts:
		outcome = "retrying"
		retryAt = r.db.Now().Add(r.opt.Backoff(job.Attempts))
		_, dbErr = r.db.RetryJob(bctx, job.ID, errText, retryAt)
	default:
		outcome = "failed"
		done, dbErr = r.db.FinishJob(bctx, job.ID, store.JobFailed, errText)
	}
	r.mu.Unlock()
	release()

	if !current {
		log.Warn("jobs: the database was replaced while the job ran: its outcome is not recorded", "handler_err", errText, "took", took)
		return
	}
	if dbErr != nil {
		// The job stays running in the database; the sweep recovers it.
		log.Error("jobs: cannot record the outcome", "outcome", outcome, "handler_err", errText, "err", dbErr)
		return
	}
	switch outcome {
	case "succeeded":
		log.Info("job succeeded", "took", took)
	case "retrying":
		log.Warn("job failed, will retry", "err", errText, "retry_at", retryAt, "took", took)
		r.wakeAt(retryAt)
	case "failed":
		log.Error("job failed", "err", errText, "took", took)
	default:
		log.Info("job "+outcome, "took", took)
	}
	if done != nil {
		r.finished(context.WithoutCancel(ctx), done)
	}
}

// current reports whether a's job is still the one in the database, and
// forgets it as active. A restore can replace the database under a running
// job: the job may then be gone, or its id may belong to another job, which
// this one's outcome must not overwrite. The caller holds the database and
// mu, under which every change to a running job in this process is made.
func (r *Runner) current(ctx context.Context, a *activeJob) bool {
	if r.active[a.job.ID] != a {
		return false // another job with this id was claimed since
	}
	delete(r.active, a.job.ID)
	cur, err := r.db.JobByID(ctx, a.job.ID)
	if err != nil {
		return !store.IsNotFound(err) // on a failed read, let the write decide
	}
	return cur.Status == store.JobRunning && cur.Attempts == a.job.Attempts &&
		cur.StartedAt != nil && a.job.StartedAt != nil && cur.StartedAt.Equal(*a.job.StartedAt)
}

// call runs h, turning a panic into an error.
func call(ctx context.Context, h Handler, job *store.Job) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &panicError{value: v, stack: debug.Stack()}
		}
	}()
	if h == nil {
		return Permanent(fmt.Errorf("jobs: no handler for kind %q", job.Kind))
	}
	return h(ctx, job)
}

// finished tells OnFinish that job reached a final status.
func (r *Runner) finished(ctx context.Context, job *store.Job) {
	if r.OnFinish == nil {
		return
	}
	defer func() {
		if v := recover(); v != nil {
			r.log.Error("jobs: OnFinish panicked", "job", job.ID, "panic", v, "stack", string(debug.Stack()))
		}
	}()
	r.OnFinish(ctx, job)
}
