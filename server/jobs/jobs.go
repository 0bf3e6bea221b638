// Package jobs runs copydesk's background work (executions, autopilot and
// scout runs, publishing, scheduled backups, housekeeping) from the
// persistent queue in the jobs table: a bounded pool of workers claims due
// jobs, runs the handler registered for each kind, and records the outcome;
// failed jobs that ask for it are retried with a backoff; jobs can be
// cancelled, queued or running; and no job is left "running" after a crash,
// a restart or a database restore.
//
// Each service registers its own kinds (Register): the handler, the hook
// that hears a job's end, and how many of the kind may run at once.
// Recurring work is a kind with a Schedule: the runner keeps one job of it
// queued for the next time and plans again after each run.
//
// The runner is, with the request middleware, the only holder of the
// restore gate (store.DB.Hold): it holds the database for the whole of a
// job, from the claim to the recorded outcome, and yields it to a restore
// (see Handler).
//
// Jobs are claimed under a lease that the runner renews while they run
// (Options.Lease). On SQLite one Runner serves a database (the data
// directory's lock proves it): it takes any job it finds running that is
// not its own for the leftover of a process that stopped. On PostgreSQL
// several instances share the database: a runner takes over only the
// running jobs whose lease has expired, an instance that died.
package jobs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/copydesk/copydesk/store"
)

// Handler does one job's work. ctx holds the database (the runner took
// store.DB.HoldYielding for the job): a handler never holds it itself, and
// may call code that does, which the hold makes a no-op.
//
// It stops soon after ctx ends, returning an error (ctx.Err() will do).
// ctx ends when the job is cancelled (context.Cause(ctx) is ErrCancelled),
// when the runner stops, or when a restore waits for the database
// (store.ErrReplacing): the runner then records nothing, since the
// database is about to be replaced, and whatever the restored database
// says is running is recovered after the swap. So a handler does not go on
// writing once ctx has ended, and the restore waits for it only as long as
// it takes to notice. A handler that returns nil is taken at its word that
// the work is done. A handler may run again after a crash, a shutdown or a
// restore interrupted it, so it copes with finding its work half done.
//
// An error is retried only if it says so (see IsRetryable); a panic is
// recovered and fails the job.
type Handler func(ctx context.Context, job *store.Job) error

// Schedule tells when a recurring kind runs next, given now on the store's
// clock (store.DB.Now): next may be in the past (a run was missed, and is
// owed at once); ok false means the kind is off and nothing is planned. It
// is asked at the start, after each run, at each sweep, and on Replan, and
// must give the same answer until what it depends on changes. Every and a
// cron expression (see backup.Manager.Next) are two ways to write one.
type Schedule func(ctx context.Context, now time.Time) (next time.Time, ok bool, err error)

// Every is the Schedule of work done every d, at the multiples of d since
// the zero time: on the hour for time.Hour, at midnight UTC for 24 hours.
// Asked again at any moment, it gives the same time until that time passes.
func Every(d time.Duration) Schedule {
	if d <= 0 {
		panic("jobs: Every needs a positive interval")
	}
	return func(_ context.Context, now time.Time) (time.Time, bool, error) {
		return now.Truncate(d).Add(d), true, nil
	}
}

// Kind is how a service's kind of job is run.
type Kind struct {
	// Handle does a job's work (required).
	Handle Handler
	// OnFinish, when set, is called after a job of the kind reaches a
	// final status (succeeded, failed or cancelled), with the job as
	// stored, still under the database hold of whoever finished it: the
	// runner's, or the caller's of Cancel. A panic in it is logged.
	OnFinish func(ctx context.Context, job *store.Job)
	// Limit bounds how many jobs of the kind run at once: 0 means up to
	// the worker count, or 1 for a recurring kind.
	Limit int
	// Background marks work nobody is waiting for. Background kinds
	// together take at most max(1, Workers-1) workers, so that with two
	// workers or more one is always left for interactive work (agent
	// runs). Recurring kinds are background.
	Background bool
	// Next, when set, makes the kind recurring: the runner keeps one job
	// of it queued for the time Next gives (see Schedule and Replan). Such
	// a job carries no payload, is tried once per planned time, and
	// cannot be enqueued by hand.
	Next Schedule
}

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
	// that no worker runs, as a database restore can leave them, and plans
	// the recurring kinds again (default 1m).
	SweepInterval time.Duration
	// OnAttempt, when set, is told each attempt whose outcome was
	// recorded: its kind, the outcome (succeeded, failed, cancelled,
	// retried, or interrupted by a shutdown) and how long it ran
	// (server/metrics counts them).
	OnAttempt func(kind string, outcome Outcome, took time.Duration)
	// Lease is how long a claimed job is this runner's without a renewal
	// (default store.DefaultJobLease); it renews the leases of the jobs
	// it runs every third of it. On a shared database another instance
	// takes a job over once its lease has expired.
	Lease time.Duration
}

// Outcome is how one attempt of a job ended.
type Outcome string

// The outcomes of an attempt.
const (
	Succeeded   Outcome = "succeeded"
	Failed      Outcome = "failed"
	Cancelled   Outcome = "cancelled"
	Retried     Outcome = "retried"     // failed, and queued again after a backoff
	Interrupted Outcome = "interrupted" // stopped by a shutdown, queued again
)

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
	reasonRestore   = "interrupted by a database restore"
	reasonExpired   = "interrupted: its instance stopped renewing the lease (did it die?)"
)

// bookkeeping bounds the store calls that record a job's outcome; they run
// even while the runner stops.
const bookkeeping = 10 * time.Second

// Runner runs jobs. Register every kind before Run.
type Runner struct {
	db  *store.DB
	log *slog.Logger
	opt Options

	wake    chan struct{} // a job may be due: one token per worker, at most
	running atomic.Bool   // Run is under way

	// swept is closed when Run's first sweep is over (see Swept).
	swept     chan struct{}
	sweptOnce sync.Once

	// mu guards kinds and active. It is also held across the store call
	// that claims, finishes or cancels a job and the matching change to
	// active, so that a job is running in the database exactly while it
	// is in active (see sweep and Cancel). Taken after db.Hold, never
	// before.
	mu     sync.Mutex
	kinds  map[string]*Kind
	active map[int64]*activeJob

	// planMu makes reading a schedule and planning by it one step, so
	// that a plan from an older reading never lands after a newer one.
	planMu sync.Mutex

	// owner names this runner in the leases of the jobs it claims.
	owner string
	// shared says other instances may run jobs from the same database:
	// only jobs whose lease expired are recovered.
	shared bool
}

// instanceName is a name for this runner's leases: the host, the process
// and a random part, so that a restarted process is another owner.
func instanceName() string {
	host, _ := os.Hostname()
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// activeJob is a job a worker is running.
type activeJob struct {
	job    *store.Job
	kind   *Kind
	ctx    context.Context // the handler's
	cancel context.CancelCauseFunc
	// cancelled says Cancel (not a shutdown) ended ctx; guarded by mu.
	cancelled bool
	// returned is closed when the handler has returned (Wait).
	returned chan struct{}
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
	if opt.Lease <= 0 {
		opt.Lease = store.DefaultJobLease
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Runner{
		db: db, log: log, opt: opt,
		owner:  instanceName(),
		shared: db.Dialect().Name() != "sqlite",
		wake:   make(chan struct{}, opt.Workers),
		swept:  make(chan struct{}),
		kinds:  map[string]*Kind{},
		active: map[int64]*activeJob{},
	}
}

// Register sets how jobs of a kind are run; each service registers its
// own. Registering a kind twice, an empty kind, a Kind without Handle or
// with a negative Limit is a bug and panics.
func (r *Runner) Register(kind string, k Kind) {
	if kind == "" || k.Handle == nil || k.Limit < 0 {
		panic("jobs: Register needs a kind, a handler and a limit of 0 or more")
	}
	if k.Next != nil {
		k.Background = true
		if k.Limit == 0 {
			k.Limit = 1
		}
	}
	if k.Limit == 0 || k.Limit > r.opt.Workers {
		k.Limit = r.opt.Workers
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.kinds[kind]; dup {
		panic("jobs: kind " + kind + " registered twice")
	}
	r.kinds[kind] = &k
}

// Kinds lists the registered kinds, sorted.
func (r *Runner) Kinds() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Sorted(maps.Keys(r.kinds))
}

// kind returns a registered kind, or nil.
func (r *Runner) kind(name string) *Kind {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.kinds[name]
}

// claimable lists the kinds a worker may claim now: those under their
// limit, and background ones only while background work leaves a worker
// for the rest. The caller holds mu.
func (r *Runner) claimable() []string {
	running := make(map[string]int, len(r.kinds))
	background := 0
	for _, a := range r.active {
		running[a.job.Kind]++
		if a.kind.Background {
			background++
		}
	}
	backgroundFree := background < max(1, r.opt.Workers-1)
	out := make([]string, 0, len(r.kinds))
	for name, k := range r.kinds {
		if running[name] < k.Limit && (backgroundFree || !k.Background) {
			out = append(out, name)
		}
	}
	return out
}

// Enqueue queues a job of a registered kind and wakes a worker for it (or
// sets a timer to, for a delayed one). Its payload is stored as JSON.
// Recurring kinds are planned, not enqueued (see Replan).
func (r *Runner) Enqueue(ctx context.Context, kind string, payload any, opt EnqueueOptions) (*store.Job, error) {
	k := r.kind(kind)
	if k == nil {
		return nil, fmt.Errorf("jobs: enqueue: no handler for kind %q", kind)
	}
	if k.Next != nil {
		return nil, fmt.Errorf("jobs: enqueue: kind %q is recurring: its runs are planned by its schedule", kind)
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

// Signal wakes one idle worker to look for due jobs at once, if one is
// waiting for work. Enqueue does it itself; code that queues a job in a
// transaction of its own (with the rows the job works on) calls it after
// the commit, or the job waits for a worker's next poll.
func (r *Runner) Signal() {
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
		r.Signal()
		return
	}
	if d < r.opt.PollInterval { // farther out, the poll is soon enough
		time.AfterFunc(d+time.Millisecond, r.Signal)
	}
}

// Replan plans a recurring kind's next run again at once: for the service
// whose schedule just changed, so that the change takes effect now (an
// earlier run, a later one, or none) rather than at the next sweep.
func (r *Runner) Replan(ctx context.Context, kind string) error {
	k := r.kind(kind)
	if k == nil || k.Next == nil {
		return fmt.Errorf("jobs: replan: %q is not a registered recurring kind", kind)
	}
	ctx, release := r.db.Hold(ctx) // a no-op inside a request, which holds already
	defer release()
	return r.plan(ctx, kind, k)
}

// plan keeps the one queued job of a recurring kind in step with its
// schedule (see store.DB.PlanJob). ctx holds the database.
func (r *Runner) plan(ctx context.Context, name string, k *Kind) error {
	r.planMu.Lock()
	defer r.planMu.Unlock()
	next, ok, err := k.Next(ctx, r.db.Now())
	if err != nil {
		return fmt.Errorf("jobs: schedule of %s: %w", name, err)
	}
	var at *time.Time
	if ok {
		at = &next
	}
	job, err := r.db.PlanJob(ctx, name, at)
	if err != nil {
		return err
	}
	if job != nil {
		r.wakeAt(job.RunAfter)
	}
	return nil
}

// planAll plans every recurring kind. ctx holds the database.
func (r *Runner) planAll(ctx context.Context) {
	r.mu.Lock()
	kinds := maps.Clone(r.kinds)
	r.mu.Unlock()
	for name, k := range kinds {
		if k.Next == nil {
			continue
		}
		if err := r.plan(ctx, name, k); err != nil && ctx.Err() == nil {
			r.log.Error("jobs: plan a recurring kind", "kind", name, "err", err)
		}
	}
}

// Cancel cancels a job. A queued job is cancelled at once. A running job's
// handler has its context cancelled and the job ends cancelled when the
// handler returns; the job is returned still running. A finished job is a
// store.KindConflict error, an unknown one store.KindNotFound. Cancelling
// the queued job of a recurring kind cancels that run, not the schedule:
// the next one is planned at once.
func (r *Runner) Cancel(ctx context.Context, id int64) (*store.Job, error) {
	ctx, release := r.db.Hold(ctx) // a no-op inside a request, which holds already
	defer release()
	job, ended, err := r.cancel(ctx, id)
	if ended {
		r.ended(ctx, job)
	}
	return job, err
}

// Wait waits until the handler of a job running here has returned, at
// most max or until ctx ends; for any other job it returns at once. A
// cancelled handler records what its work used before it returns, so a
// caller that waits answers with that.
func (r *Runner) Wait(ctx context.Context, id int64, max time.Duration) {
	r.mu.Lock()
	a, ok := r.active[id]
	r.mu.Unlock()
	if !ok {
		return
	}
	t := time.NewTimer(max)
	defer t.Stop()
	select {
	case <-a.returned:
	case <-t.C:
	case <-ctx.Done():
	}
}

// Canceller is the part of a Runner that Stop needs.
type Canceller interface {
	Cancel(ctx context.Context, id int64) (*store.Job, error)
	Wait(ctx context.Context, id int64, max time.Duration)
}

// Queue is what a service whose records are each carried out by one job
// (a run, a generation, a build) needs of the Runner: its job kinds
// registered, a new job signalled, a job cancelled (Stop, Owned.Cancel).
type Queue interface {
	Register(kind string, k Kind)
	Signal()
	Canceller
}

// Scheduled is what a service with a scheduled job kind needs of the
// Runner: its kinds registered, and the schedule asked again when what it
// depends on changed.
type Scheduled interface {
	Register(kind string, k Kind)
	Replanner
}

// stopWait bounds how long Stop waits for a cancelled handler: a provider
// call is cut at once, so this is only reached by a handler that ignores
// its context, and the answer then shows the record as it is.
const stopWait = 5 * time.Second

// Stop cancels the job, if any (id nil: none), of a record whose end its
// service has just recorded (a run, generation or reply cancelled): a
// running handler stops and finds the end already recorded, which it
// keeps; a queued job ends at once. A job that ended already (conflict)
// or was cleaned up (not found) has nothing left to stop. Stop returns
// once a running handler has returned (at most stopWait), so the record
// read next holds the usage of the call it cut.
func Stop(ctx context.Context, c Canceller, id *int64) error {
	if id == nil {
		return nil
	}
	job, err := c.Cancel(ctx, *id)
	if err != nil && store.KindOf(err) != store.KindConflict && !store.IsNotFound(err) {
		return err
	}
	if err == nil && job.Status == store.JobRunning {
		c.Wait(ctx, *id, stopWait)
	}
	return nil
}

// cancel is Cancel under mu; ended says the job is now cancelled.
func (r *Runner) cancel(ctx context.Context, id int64) (job *store.Job, ended bool, err error) {
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
	// not swept yet, or run by another instance on a shared database. It
	// ends now, as its lease owner of the moment (a takeover since then
	// makes this a conflict); another instance running it finds its lease
	// gone at its next renewal and stops the handler.
	job, err = r.db.FinishJob(ctx, id, job.LeaseOwner, store.JobCancelled, reasonCancelled)
	if err != nil {
		return nil, false, err
	}
	if err := r.db.AnnounceJobCancelled(ctx, id); err != nil {
		r.log.Warn("jobs: a cancel not announced to the other instances; the one running the job stops it at its next lease renewal", "job", id, "err", err)
	}
	return job, true, nil
}

// CancelledElsewhere stops the handler of job id if it runs here: another
// instance cancelled the job (store.AnnouncedJobCancelled) and recorded
// its ending.
func (r *Runner) CancelledElsewhere(id int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if a, ok := r.active[id]; ok && a.ctx.Err() == nil {
		a.cancelled = true
		a.cancel(ErrCancelled)
	}
}

// Run recovers the jobs a previous process left running and plans the
// recurring kinds, then runs jobs with Options.Workers workers until ctx
// ends. Then it stops claiming, cancels the running handlers' contexts,
// waits for them to return, puts the jobs they did not finish back in the
// queue, and returns nil. It returns an error at once if the recovery
// fails for another reason than ctx ending (the runner then does not
// start: a job it did not recover would look running forever) or if Run is
// already under way.
func (r *Runner) Run(ctx context.Context) error {
	if !r.running.CompareAndSwap(false, true) {
		return errors.New("jobs: the runner is already running")
	}
	defer r.running.Store(false)
	endSweep := func() { r.sweptOnce.Do(func() { close(r.swept) }) }
	defer endSweep() // a failed or stopped start ends it too
	if err := r.sweep(ctx, store.JobInterrupted); err != nil {
		if ctx.Err() != nil {
			return nil // stopped while starting: nothing ran
		}
		return fmt.Errorf("jobs: recover interrupted jobs: %w", err)
	}
	endSweep()
	var wg sync.WaitGroup
	for i := range r.opt.Workers {
		wg.Go(func() { r.work(ctx, i+1) })
	}
	wg.Go(func() { r.sweepEvery(ctx) })
	wg.Go(func() { r.renewEvery(ctx) })
	wg.Wait()
	return nil
}

// Swept is closed when the first Run's first sweep is over, done or failed
// (Run then returns the failure): after a sweep that worked, the jobs a
// stopped process left are recovered and every recurring kind has its
// queued job. The server waits for it before it serves, so that a request
// never sees the queue as it was before.
func (r *Runner) Swept() <-chan struct{} { return r.swept }

// sweep recovers the jobs marked running that no worker of this runner
// runs, giving reason as their last error, and plans the recurring kinds:
// it sets right whatever a stopped process or a restored database left.
// Only a failed recovery is returned; a failed plan is logged.
func (r *Runner) sweep(ctx context.Context, reason string) error {
	hctx, release := r.db.Hold(ctx)
	defer release()
	r.mu.Lock()
	except := make([]int64, 0, len(r.active))
	for id := range r.active {
		except = append(except, id)
	}
	rec, err := r.db.RecoverJobs(hctx, store.RecoverPolicy{Reason: reason, Except: except, Expired: r.shared})
	r.mu.Unlock()
	if err != nil {
		return err
	}
	if rec.Requeued+rec.Failed > 0 {
		r.log.Warn("jobs left running recovered", "reason", reason, "requeued", rec.Requeued, "failed", rec.Failed)
		r.Signal()
	}
	for _, j := range rec.FailedJobs {
		r.ended(hctx, j)
	}
	r.planAll(hctx)
	return nil
}

// sweepEvery sweeps every SweepInterval; on a shared database, it also
// looks for expired leases at every poll, so that the job of an instance
// that died is taken over within a lease and a poll.
func (r *Runner) sweepEvery(ctx context.Context) {
	t := time.NewTicker(r.opt.SweepInterval)
	defer t.Stop()
	var poll <-chan time.Time
	if r.shared {
		p := time.NewTicker(r.opt.PollInterval)
		defer p.Stop()
		poll = p.C
	}
	for {
		reason := reasonOrphan
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-poll:
			if err := r.recoverExpired(ctx); err != nil && ctx.Err() == nil {
				r.log.Error("jobs: take over expired leases", "err", err)
			}
			continue
		}
		if r.shared {
			reason = reasonExpired
		}
		if err := r.sweep(ctx, reason); err != nil && ctx.Err() == nil {
			r.log.Error("jobs: sweep for abandoned jobs", "err", err)
		}
	}
}

// recoverExpired requeues the running jobs whose lease expired (their
// instance died), without planning the recurring kinds as sweep does.
func (r *Runner) recoverExpired(ctx context.Context) error {
	hctx, release := r.db.Hold(ctx)
	defer release()
	r.mu.Lock()
	except := slices.Collect(maps.Keys(r.active))
	rec, err := r.db.RecoverJobs(hctx, store.RecoverPolicy{Reason: reasonExpired, Except: except, Expired: true})
	r.mu.Unlock()
	if err != nil {
		return err
	}
	if rec.Requeued+rec.Failed > 0 {
		r.log.Warn("jobs whose lease expired taken over", "requeued", rec.Requeued, "failed", rec.Failed)
		r.Signal()
	}
	for _, j := range rec.FailedJobs {
		r.ended(hctx, j)
	}
	return nil
}

// renewEvery renews the leases of the jobs this runner runs, every third
// of the lease, until ctx ends. A job whose lease could not be renewed
// (another instance took it over, having found it expired: this process
// stalled longer than the lease) has its handler cancelled.
func (r *Runner) renewEvery(ctx context.Context) {
	t := time.NewTicker(r.opt.Lease / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		r.mu.Lock()
		ids := slices.Sorted(maps.Keys(r.active))
		r.mu.Unlock()
		if len(ids) == 0 {
			continue
		}
		renewed, err := r.db.RenewJobLeases(ctx, r.owner, ids, r.db.Now().Add(r.opt.Lease))
		if err != nil {
			if ctx.Err() == nil {
				r.log.Error("jobs: renew leases", "err", err)
			}
			continue
		}
		if len(renewed) == len(ids) {
			continue
		}
		r.mu.Lock()
		for _, id := range ids {
			if a, ok := r.active[id]; ok && !slices.Contains(renewed, id) && a.ctx.Err() == nil {
				r.log.Warn("jobs: lost the lease of a running job; stopping it", "job", id)
				a.cancel(ErrLeaseLost)
			}
		}
		r.mu.Unlock()
	}
}

// work is one worker: it runs due jobs one at a time until ctx ends.
func (r *Runner) work(ctx context.Context, worker int) {
	t := time.NewTicker(r.opt.PollInterval)
	defer t.Stop()
	for ctx.Err() == nil {
		ran, err := r.runNext(ctx)
		if ran {
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

// runNext claims the next due job and runs it, holding the database from
// the claim to the recorded outcome, yielding it to a restore. It reports
// whether it did anything worth looking for more work at once.
func (r *Runner) runNext(ctx context.Context) (bool, error) {
	hctx, release := r.db.HoldYielding(ctx)
	defer release()
	a, err := r.claim(hctx)
	switch {
	case a != nil:
		if r.execute(ctx, hctx, a) {
			return true, nil
		}
	case errors.Is(context.Cause(hctx), store.ErrReplacing):
		// A restore came in while claiming.
	default:
		return false, err
	}
	// The database is being replaced. Once it is, recover what it says is
	// running (the job that yielded too, if the snapshot has it so, or
	// if the restore gave up) and plan the recurring kinds it has.
	release()
	if err := r.sweep(ctx, reasonRestore); err != nil && ctx.Err() == nil {
		r.log.Error("jobs: recover jobs after a restore", "err", err)
	}
	return true, nil
}

// claim takes the next due job a worker may run and records it active.
// ctx holds the database; the handler's context derives from it.
func (r *Runner) claim(ctx context.Context) (*activeJob, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	job, err := r.db.ClaimJobLeased(ctx, r.claimable(), store.JobLease{Owner: r.owner, For: r.opt.Lease})
	if err != nil {
		return nil, err
	}
	a := &activeJob{job: job, kind: r.kinds[job.Kind], returned: make(chan struct{})}
	a.ctx, a.cancel = context.WithCancelCause(ctx)
	r.active[job.ID] = a
	return a, nil
}

// execute runs a claimed job's handler and records the outcome, under the
// hold hctx. It reports false when the job yielded to a restore: then
// nothing is recorded, since the database is about to be replaced.
func (r *Runner) execute(ctx, hctx context.Context, a *activeJob) bool {
	job := a.job
	log := r.log.With("job", job.ID, "kind", job.Kind, "attempt", job.Attempts)
	start := time.Now()
	err := call(a.ctx, a.kind.Handle, job)
	close(a.returned)
	interrupted := a.ctx.Err() != nil // before the handler returned
	cause := context.Cause(a.ctx)
	a.cancel(nil)
	took := time.Since(start)

	var pe *panicError
	if errors.As(err, &pe) {
		log.Error("jobs: handler panicked", "panic", pe.value, "stack", string(pe.stack))
	}
	var errText string
	if err != nil {
		errText = err.Error()
	}
	if err != nil && errors.Is(cause, store.ErrReplacing) {
		r.mu.Lock()
		delete(r.active, job.ID)
		r.mu.Unlock()
		log.Warn("jobs: job stopped for a database restore; its outcome is not recorded", "handler_err", errText, "took", took)
		return false
	}

	if errors.Is(cause, ErrLeaseLost) {
		r.mu.Lock()
		delete(r.active, job.ID)
		r.mu.Unlock()
		log.Warn("jobs: job stopped, its lease lost; its outcome is another instance's to record", "handler_err", errText, "took", took)
		return true
	}

	// Record the outcome even if the runner is stopping or a restore
	// waits: the hold is still ours until it is recorded.
	bctx, cancel := context.WithTimeout(context.WithoutCancel(hctx), bookkeeping)
	defer cancel()
	r.mu.Lock()
	delete(r.active, job.ID)
	var (
		done    *store.Job
		dbErr   error
		retryAt time.Time
		outcome Outcome
	)
	switch {
	case err == nil:
		outcome = Succeeded
		done, dbErr = r.db.FinishJob(bctx, job.ID, r.owner, store.JobSucceeded, "")
	case a.cancelled:
		outcome = Cancelled
		done, dbErr = r.db.FinishJob(bctx, job.ID, r.owner, store.JobCancelled, reasonCancelled)
	case interrupted && ctx.Err() != nil && pe == nil:
		// Stopped by the shutdown, not by its own failure: it runs again
		// after the restart, the interrupted attempt counted.
		outcome = Interrupted
		_, dbErr = r.db.RetryJob(bctx, job.ID, r.owner, reasonShutdown, r.db.Now())
	case IsRetryable(err) && job.Attempts < job.MaxAttempts:
		outcome = Retried
		retryAt = r.db.Now().Add(r.opt.Backoff(job.Attempts))
		_, dbErr = r.db.RetryJob(bctx, job.ID, r.owner, errText, retryAt)
	default:
		outcome = Failed
		done, dbErr = r.db.FinishJob(bctx, job.ID, r.owner, store.JobFailed, errText)
	}
	r.mu.Unlock()
	r.Signal() // a worker that a limit kept idle may go on

	if errors.Is(dbErr, store.ErrJobLeaseLost) {
		// This process stalled past its lease and another instance took
		// the job over before the renewal noticed: the outcome is the new
		// owner's to record.
		log.Warn("jobs: the job's lease was lost before its outcome was recorded; another instance runs it", "outcome", outcome,
			"handler_err", errText, "took", took)
		return true
	}
	if dbErr != nil {
		// The job stays running in the database; the sweep recovers it.
		log.Error("jobs: cannot record the outcome", "outcome", outcome, "handler_err", errText, "err", dbErr)
		return true
	}
	if r.opt.OnAttempt != nil {
		r.opt.OnAttempt(job.Kind, outcome, took)
	}
	switch outcome {
	case Succeeded:
		log.Info("job succeeded", "took", took)
	case Retried:
		log.Warn("job failed, will retry", "err", errText, "retry_at", retryAt, "took", took)
		r.wakeAt(retryAt)
	case Failed:
		log.Error("job failed", "err", errText, "took", took)
	case Interrupted:
		log.Info("job requeued after shutdown", "took", took)
	default:
		log.Info("job "+string(outcome), "took", took)
	}
	if done != nil {
		r.ended(context.WithoutCancel(hctx), done)
	}
	return true
}

// call runs h, turning a panic into an error.
func call(ctx context.Context, h Handler, job *store.Job) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &panicError{value: v, stack: debug.Stack()}
		}
	}()
	return h(ctx, job)
}

// ended tells a job's kind that the job reached a final status (OnFinish)
// and, for a recurring kind, plans its next run. ctx holds the database.
func (r *Runner) ended(ctx context.Context, job *store.Job) {
	k := r.kind(job.Kind)
	if k == nil {
		return // a kind this runner does not run, swept
	}
	if k.OnFinish != nil {
		r.onFinish(ctx, k, job)
	}
	if k.Next != nil {
		if err := r.plan(ctx, job.Kind, k); err != nil {
			r.log.Error("jobs: plan the next run", "kind", job.Kind, "err", err)
		}
	}
}

// onFinish calls k.OnFinish, logging a panic.
func (r *Runner) onFinish(ctx context.Context, k *Kind, job *store.Job) {
	defer func() {
		if v := recover(); v != nil {
			r.log.Error("jobs: OnFinish panicked", "job", job.ID, "kind", job.Kind, "panic", v, "stack", string(debug.Stack()))
		}
	}()
	k.OnFinish(ctx, job)
}
