package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// JobStatus is where a job is in its life: queued → running → succeeded,
// failed or cancelled; a retried or interrupted job goes back to queued.
type JobStatus string

const (
	JobQueued    JobStatus = "queued"
	JobRunning   JobStatus = "running"
	JobSucceeded JobStatus = "succeeded"
	JobFailed    JobStatus = "failed"
	JobCancelled JobStatus = "cancelled"
)

// Final reports whether s is an end state.
func (s JobStatus) Final() bool {
	return s == JobSucceeded || s == JobFailed || s == JobCancelled
}

func (s JobStatus) valid() bool { return s == JobQueued || s == JobRunning || s.Final() }

// DefaultJobMaxAttempts is a job's MaxAttempts when NewJob leaves it 0.
const DefaultJobMaxAttempts = 3

// JobInterrupted is the reason RecoverJobs records by default.
const JobInterrupted = "interrupted by a restart"

// Job is one piece of background work in the persistent queue.
type Job struct {
	ID          int64
	Kind        string
	Payload     json.RawMessage
	Status      JobStatus
	Attempts    int // attempts started so far, the running one included
	MaxAttempts int
	RunAfter    time.Time // not claimed before this
	LastError   string
	CreatedAt   time.Time
	StartedAt   *time.Time // start of the latest attempt
	FinishedAt  *time.Time // when it reached a final status
	UpdatedAt   time.Time
	// LeaseOwner is the instance running the job, until LeaseUntil
	// (renewed while it runs); both are empty when it is not running.
	LeaseOwner string
	LeaseUntil *time.Time
}

// DefaultJobLease is how long a claimed job's lease lasts when the claimer
// names none.
const DefaultJobLease = 30 * time.Second

// JobLease is who claims a job and for how long.
type JobLease struct {
	Owner string        // the instance; "" is allowed (one instance)
	For   time.Duration // 0 means DefaultJobLease
}

// NewJob is a job to enqueue.
type NewJob struct {
	Kind string
	// Payload is stored as JSON; nil is {}. A json.RawMessage is stored as
	// it is (once checked to be JSON).
	Payload any
	// MaxAttempts bounds how often the job is tried; 0 means
	// DefaultJobMaxAttempts.
	MaxAttempts int
	// RunAfter delays the job; zero means now.
	RunAfter time.Time
}

const jobColumns = `id, kind, payload, status, attempts, max_attempts, run_after, last_error, created_at, started_at, finished_at, updated_at, lease_owner, lease_until`

func scanJob(row rowScanner) (*Job, error) {
	var j Job
	var payload, status, runAfter, created, updated string
	var started, finished, leaseUntil sql.NullString
	if err := row.Scan(&j.ID, &j.Kind, &payload, &status, &j.Attempts, &j.MaxAttempts, &runAfter, &j.LastError,
		&created, &started, &finished, &updated, &j.LeaseOwner, &leaseUntil); err != nil {
		return nil, err
	}
	j.Payload = json.RawMessage(payload)
	j.Status = JobStatus(status)
	j.RunAfter = parseTime(runAfter)
	j.CreatedAt = parseTime(created)
	j.StartedAt = parseNullTime(started)
	j.FinishedAt = parseNullTime(finished)
	j.UpdatedAt = parseTime(updated)
	j.LeaseUntil = parseNullTime(leaseUntil)
	return &j, nil
}

// errJobNoWrite makes db.tx roll back a transaction that turned out to have
// nothing to write, so that it does not count as a write (see ChangeMark).
var errJobNoWrite = errors.New("store: nothing to write")

// EnqueueJob adds a job to the queue.
func (db *DB) EnqueueJob(ctx context.Context, n NewJob) (*Job, error) {
	var job *Job
	err := db.tx(ctx, func(tx *sql.Tx) error {
		var err error
		job, err = db.insertJobTx(ctx, tx, n)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: enqueue job %s: %w", n.Kind, err)
	}
	return job, nil
}

// insertJobTx adds a job to the queue inside tx, so that a use case can
// write its own rows and the job that carries on the work in one commit.
// Whoever does tells the job runner afterwards (jobs.Runner.Signal), or the
// job waits for a worker's next poll.
func (db *DB) insertJobTx(ctx context.Context, tx *sql.Tx, n NewJob) (*Job, error) {
	kind := strings.TrimSpace(n.Kind)
	if kind == "" {
		return nil, Invalid("a job needs a kind")
	}
	if n.MaxAttempts < 0 {
		return nil, Invalid("a job's max attempts cannot be negative")
	}
	if n.MaxAttempts == 0 {
		n.MaxAttempts = DefaultJobMaxAttempts
	}
	payload := []byte("{}")
	if n.Payload != nil {
		b, err := json.Marshal(n.Payload)
		if err != nil {
			return nil, &Error{Kind: KindInvalid, Message: "the job payload cannot be encoded as JSON", Err: err}
		}
		payload = b
	}
	now := db.now()
	runAfter := now
	if !n.RunAfter.IsZero() {
		runAfter = fmtTime(n.RunAfter)
	}
	job, err := scanJob(tx.QueryRowContext(ctx, `INSERT INTO jobs (kind, payload, status, max_attempts, run_after, created_at, updated_at)
		VALUES (?, ?, 'queued', ?, ?, ?, ?) RETURNING `+jobColumns, kind, string(payload), n.MaxAttempts, runAfter, now, now))
	if err != nil {
		return nil, translate(err, "job")
	}
	return job, nil
}

// PlanJob keeps the one queued job of a recurring kind in step with its
// schedule, in one transaction: with next nil (the schedule is off) it
// deletes the kind's queued jobs, which never started; otherwise it makes
// sure exactly one is queued, created for next if there is none, and moved
// to next if it is not due yet. A job already due stays as it is, to run
// soon: its handler decides whether there is work, so moving it would only
// delay a run that was owed. A recurring job is tried once (a failure waits
// for the next planned time). It returns the queued job, nil when off.
// Running jobs of the kind are not touched.
func (db *DB) PlanJob(ctx context.Context, kind string, next *time.Time) (*Job, error) {
	var job *Job
	err := db.tx(ctx, func(tx *sql.Tx) error {
		job = nil
		// Instances sharing a database plan one kind one after another,
		// so that each sees the job the other queued.
		if err := db.d.lockKey(ctx, tx, "copydesk.plan:"+kind); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT `+jobColumns+` FROM jobs WHERE status = 'queued' AND kind = ? ORDER BY id`, kind)
		if err != nil {
			return err
		}
		var queued []*Job
		for rows.Next() {
			j, err := scanJob(rows)
			if err != nil {
				rows.Close()
				return err
			}
			queued = append(queued, j)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		keep := 0 // how many queued jobs stay: the first, when on
		if next != nil {
			keep = 1
		}
		wrote := false
		for _, extra := range queued[min(keep, len(queued)):] {
			if _, err := tx.ExecContext(ctx, `DELETE FROM jobs WHERE id = ?`, extra.ID); err != nil {
				return err
			}
			wrote = true
		}
		switch {
		case next == nil:
		case len(queued) == 0:
			job, err = db.insertJobTx(ctx, tx, NewJob{Kind: kind, MaxAttempts: 1, RunAfter: *next})
			if err != nil {
				return err
			}
			wrote = true
		default:
			job = queued[0]
			due := fmtTime(job.RunAfter) <= db.now()
			if !due && fmtTime(job.RunAfter) != fmtTime(*next) {
				job, err = scanJob(tx.QueryRowContext(ctx, `UPDATE jobs SET run_after = ?, updated_at = ? WHERE id = ? RETURNING `+jobColumns,
					fmtTime(*next), db.now(), job.ID))
				if err != nil {
					return err
				}
				wrote = true
			}
		}
		if !wrote {
			return errJobNoWrite
		}
		return nil
	})
	if err != nil && !errors.Is(err, errJobNoWrite) {
		return nil, fmt.Errorf("store: plan job %s: %w", kind, err)
	}
	return job, nil
}

// JobByID returns one job.
func (db *DB) JobByID(ctx context.Context, id int64) (*Job, error) {
	j, err := scanJob(db.r.QueryRowContext(ctx, `SELECT `+jobColumns+` FROM jobs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, NotFound("job %d not found", id)
	}
	if err != nil {
		return nil, fmt.Errorf("store: find job %d: %w", id, err)
	}
	return j, nil
}

// jobPlaceholders returns "?, ?, ?" for n values.
func jobPlaceholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

// ClaimJob takes the next due job of one of kinds: the queued job whose
// run_after has passed longest ago (then the lowest id), which it marks
// running, with one more attempt and a new start time. The choice and the
// change are one UPDATE through the single writer, so no two callers ever
// claim the same job. With nothing due, or no kinds, it returns a
// KindNotFound error, and takes no write lock: a cheap read on the pool
// looks first, so idle workers polling do not queue behind other writers.
// The job is leased to nobody for DefaultJobLease (see ClaimJobLeased).
func (db *DB) ClaimJob(ctx context.Context, kinds []string) (*Job, error) {
	return db.ClaimJobLeased(ctx, kinds, JobLease{})
}

// ClaimJobLeased is ClaimJob under a lease: the job records l.Owner and
// holds it until now + l.For, which the owner renews while it runs
// (RenewJobLeases). On PostgreSQL, several instances claim at once: the
// row is chosen FOR UPDATE SKIP LOCKED, so each takes a different job
// without waiting on the others (on SQLite the single writer already
// serialises claims).
func (db *DB) ClaimJobLeased(ctx context.Context, kinds []string, l JobLease) (*Job, error) {
	if l.For <= 0 {
		l.For = DefaultJobLease
	}
	none := NotFound("no job is due")
	if len(kinds) == 0 {
		return nil, none
	}
	now := db.now()
	cond := `status = 'queued' AND run_after <= ? AND kind IN (` + jobPlaceholders(len(kinds)) + `)`
	args := []any{now}
	for _, k := range kinds {
		args = append(args, k)
	}
	var due bool
	if err := db.r.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM jobs WHERE `+cond+`)`, args...).Scan(&due); err != nil {
		return nil, fmt.Errorf("store: claim job: %w", err)
	}
	if !due {
		return nil, none
	}
	until := fmtTime(db.Now().Add(l.For))
	var job *Job
	err := db.tx(ctx, func(tx *sql.Tx) error {
		var err error
		job, err = scanJob(tx.QueryRowContext(ctx, `UPDATE jobs
			SET status = 'running', attempts = attempts + 1, started_at = ?, finished_at = NULL, updated_at = ?,
				lease_owner = ?, lease_until = ?
			WHERE id = (SELECT id FROM jobs WHERE `+cond+` ORDER BY run_after, id LIMIT 1`+db.d.skipLocked()+`)
			RETURNING `+jobColumns, append([]any{now, now, l.Owner, until}, args...)...))
		if errors.Is(err, sql.ErrNoRows) { // another worker took it meanwhile
			return errJobNoWrite
		}
		return err
	})
	if errors.Is(err, errJobNoWrite) {
		return nil, none
	}
	if err != nil {
		return nil, fmt.Errorf("store: claim job: %w", err)
	}
	return job, nil
}

// ErrJobLeaseLost is the cause of a KindConflict error from FinishJob or
// RetryJob when the job runs under another owner's lease: the caller
// stalled past its lease and another instance took the job over, so the
// outcome is the new owner's to record.
var ErrJobLeaseLost = errors.New("the job's lease is another owner's")

// whyNotRunning explains, inside tx, why job id could not be moved out of
// running by owner: it does not exist, it is in another status, or it
// runs under another owner's lease (ErrJobLeaseLost).
func whyNotRunning(ctx context.Context, tx *sql.Tx, id int64, owner, doing string) error {
	var status, holder string
	err := tx.QueryRowContext(ctx, `SELECT status, lease_owner FROM jobs WHERE id = ?`, id).Scan(&status, &holder)
	if errors.Is(err, sql.ErrNoRows) {
		return NotFound("job %d not found", id)
	}
	if err != nil {
		return err
	}
	if status == string(JobRunning) && holder != owner {
		return &Error{Kind: KindConflict, Message: fmt.Sprintf("job %d runs under another lease (%q, not %q): it cannot be %s by this owner",
			id, holder, owner, doing), Err: ErrJobLeaseLost}
	}
	return Conflict("job %d is %s, not running: it cannot be %s", id, status, doing)
}

// FinishJob ends a running job held by owner (the lease owner it was
// claimed with) with a final status (succeeded, failed or cancelled) and
// errText as its last error ("" clears the error of an earlier attempt).
// A job that is not running is a KindConflict error; so is one running
// under another owner's lease (ErrJobLeaseLost), whose outcome is not the
// caller's to record.
func (db *DB) FinishJob(ctx context.Context, id int64, owner string, status JobStatus, errText string) (*Job, error) {
	if !status.Final() {
		return nil, Invalid("%q is not a final job status", status)
	}
	now := db.now()
	var job *Job
	err := db.tx(ctx, func(tx *sql.Tx) error {
		var err error
		job, err = scanJob(tx.QueryRowContext(ctx, `UPDATE jobs SET status = ?, last_error = ?, finished_at = ?, updated_at = ?, lease_owner = '', lease_until = NULL
			WHERE id = ? AND status = 'running' AND lease_owner = ? RETURNING `+jobColumns, string(status), errText, now, now, id, owner))
		if errors.Is(err, sql.ErrNoRows) {
			return whyNotRunning(ctx, tx, id, owner, "finished")
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: finish job %d: %w", id, err)
	}
	return job, nil
}

// RetryJob puts a running job held by owner back in the queue, to be
// claimed again from runAfter, keeping errText as its last error. A job
// that is not running, or runs under another owner's lease, is a
// KindConflict error, as for FinishJob.
func (db *DB) RetryJob(ctx context.Context, id int64, owner, errText string, runAfter time.Time) (*Job, error) {
	now := db.now()
	var job *Job
	err := db.tx(ctx, func(tx *sql.Tx) error {
		var err error
		job, err = scanJob(tx.QueryRowContext(ctx, `UPDATE jobs SET status = 'queued', last_error = ?, run_after = ?, updated_at = ?, lease_owner = '', lease_until = NULL
			WHERE id = ? AND status = 'running' AND lease_owner = ? RETURNING `+jobColumns, errText, fmtTime(runAfter), now, id, owner))
		if errors.Is(err, sql.ErrNoRows) {
			return whyNotRunning(ctx, tx, id, owner, "retried")
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: retry job %d: %w", id, err)
	}
	return job, nil
}

// CancelJob cancels a job. A queued job is cancelled at once and returned
// so. A running job is returned unchanged, still running: only whoever runs
// it can stop it (the job runner cancels the handler and then finishes the
// job as cancelled). A finished job is a KindConflict error.
func (db *DB) CancelJob(ctx context.Context, id int64) (*Job, error) {
	now := db.now()
	var job *Job
	err := db.tx(ctx, func(tx *sql.Tx) error {
		var err error
		job, err = scanJob(tx.QueryRowContext(ctx, `UPDATE jobs SET status = 'cancelled', finished_at = ?, updated_at = ?
			WHERE id = ? AND status = 'queued' RETURNING `+jobColumns, now, now, id))
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		job, err = scanJob(tx.QueryRowContext(ctx, `SELECT `+jobColumns+` FROM jobs WHERE id = ?`, id))
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return NotFound("job %d not found", id)
		case err != nil:
			return err
		case job.Status == JobRunning:
			return errJobNoWrite // nothing written
		}
		return Conflict("job %d has already %s", id, job.Status)
	})
	if errors.Is(err, errJobNoWrite) {
		return job, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: cancel job %d: %w", id, err)
	}
	return job, nil
}

// RecoverPolicy says what RecoverJobs does with jobs found running.
type RecoverPolicy struct {
	// Reason is recorded as each recovered job's last error; "" means
	// JobInterrupted.
	Reason string
	// RunAfter is when requeued jobs may run again; zero means now.
	RunAfter time.Time
	// Except lists jobs that really are running (in this process) and are
	// left alone.
	Except []int64
	// Expired limits the recovery to jobs whose lease has run out: on a
	// database that several instances share, a running job with a live
	// lease is another instance's. Without it, every running job but
	// Except is recovered (one instance, as the data directory's lock
	// proves on SQLite).
	Expired bool
}

// JobRecovery is what RecoverJobs did.
type JobRecovery struct {
	Requeued int // back in the queue
	Failed   int // out of attempts
	// FailedJobs are the jobs it failed, as they now are, so that their
	// end can be announced.
	FailedJobs []*Job
}

// RecoverJobs deals with jobs left running by a process that stopped
// without finishing them (a crash, a kill, a database restore): each is
// requeued if it has attempts left and failed otherwise, with the policy's
// reason as its last error. The attempt that was interrupted counts, so a
// job that brings the process down every time does not do so forever.
// The job runner calls it when it starts, before it claims anything.
func (db *DB) RecoverJobs(ctx context.Context, p RecoverPolicy) (JobRecovery, error) {
	var rec JobRecovery
	reason := p.Reason
	if reason == "" {
		reason = JobInterrupted
	}
	cond := `status = 'running'`
	var except []any
	if p.Expired {
		cond += ` AND (lease_until IS NULL OR lease_until < ?)`
		except = append(except, db.now())
	}
	if len(p.Except) > 0 {
		cond += ` AND id NOT IN (` + jobPlaceholders(len(p.Except)) + `)`
		for _, id := range p.Except {
			except = append(except, id)
		}
	}
	// Nearly always nothing is left running: say so without the writer.
	var stale bool
	if err := db.r.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM jobs WHERE `+cond+`)`, except...).Scan(&stale); err != nil {
		return rec, fmt.Errorf("store: recover jobs: %w", err)
	}
	if !stale {
		return rec, nil
	}
	now := db.now()
	runAfter := now
	if !p.RunAfter.IsZero() {
		runAfter = fmtTime(p.RunAfter)
	}
	err := db.tx(ctx, func(tx *sql.Tx) error {
		rec = JobRecovery{}
		rows, err := tx.QueryContext(ctx, `UPDATE jobs SET status = 'failed', last_error = ?, finished_at = ?, updated_at = ?, lease_owner = '', lease_until = NULL
			WHERE `+cond+` AND attempts >= max_attempts RETURNING `+jobColumns, append([]any{reason, now, now}, except...)...)
		if err != nil {
			return err
		}
		for rows.Next() {
			j, err := scanJob(rows)
			if err != nil {
				rows.Close()
				return err
			}
			rec.FailedJobs = append(rec.FailedJobs, j)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		rec.Failed = len(rec.FailedJobs)
		res, err := tx.ExecContext(ctx, `UPDATE jobs SET status = 'queued', last_error = ?, run_after = ?, updated_at = ?, lease_owner = '', lease_until = NULL
			WHERE `+cond, append([]any{reason, runAfter, now}, except...)...)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		rec.Requeued = int(n)
		if err == nil && rec.Requeued+rec.Failed == 0 {
			return errJobNoWrite
		}
		return err
	})
	if errors.Is(err, errJobNoWrite) {
		return JobRecovery{}, nil
	}
	if err != nil {
		return JobRecovery{}, fmt.Errorf("store: recover jobs: %w", err)
	}
	return rec, nil
}

// RenewJobLeases extends to until the leases that owner holds on the jobs
// ids, which it runs, and returns the ids it renewed: a job missing from
// them is no longer owner's (it ended, or another instance took it over
// after the lease expired).
func (db *DB) RenewJobLeases(ctx context.Context, owner string, ids []int64, until time.Time) ([]int64, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	args := []any{fmtTime(until), owner}
	for _, id := range ids {
		args = append(args, id)
	}
	var renewed []int64
	err := db.tx(ctx, func(tx *sql.Tx) error {
		renewed = renewed[:0]
		rows, err := tx.QueryContext(ctx, `UPDATE jobs SET lease_until = ?
			WHERE status = 'running' AND lease_owner = ? AND id IN (`+jobPlaceholders(len(ids))+`) RETURNING id`, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				return err
			}
			renewed = append(renewed, id)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("store: renew job leases: %w", err)
	}
	return renewed, nil
}

// JobFilter narrows ListJobs; empty fields do not filter.
type JobFilter struct {
	Kind   string
	Status JobStatus
	Page
}

// ListJobs lists jobs, newest first, and counts all that match. PerPage 0
// means 50.
func (db *DB) ListJobs(ctx context.Context, f JobFilter) ([]*Job, int, error) {
	var where []string
	var args []any
	if f.Kind != "" {
		where = append(where, "kind = ?")
		args = append(args, f.Kind)
	}
	if f.Status != "" {
		if !f.Status.valid() {
			return nil, 0, Invalid("%q is not a job status", f.Status)
		}
		where = append(where, "status = ?")
		args = append(args, string(f.Status))
	}
	if f.PerPage <= 0 {
		f.PerPage = 50
	}
	return listPage(ctx, db, listQuery{from: "jobs", where: where, args: args, columns: jobColumns, order: "id DESC", what: "jobs"},
		f.Page, scanJob)
}

// PruneJobs deletes jobs that finished (succeeded, failed or cancelled)
// before cutoff, and says how many. Queued and running jobs are kept however
// old.
func (db *DB) PruneJobs(ctx context.Context, cutoff time.Time) (int64, error) {
	res, err := db.exec(ctx, `DELETE FROM jobs WHERE status IN ('succeeded', 'failed', 'cancelled') AND finished_at < ?`, fmtTime(cutoff))
	if err != nil {
		return 0, fmt.Errorf("store: prune jobs: %w", err)
	}
	return res.RowsAffected()
}

// JobQueueStat is what the queue holds of one kind, for the metrics that
// are read when Prometheus scrapes (server/metrics).
type JobQueueStat struct {
	Kind string
	// Due are queued jobs whose run_after has come: they wait for a
	// worker. Later are queued for a later moment (a retry's backoff, a
	// recurring kind's next run), which is not a backlog.
	Due, Later, Running int
	// OldestDue is the run_after of the due job that has waited longest;
	// zero when none is due.
	OldestDue time.Time
}

// JobQueue counts the queued and running jobs by kind. It reads only the
// queued and running rows, through the jobs_queue index (status, run_after),
// so its cost is the size of the queue, not of the table.
func (db *DB) JobQueue(ctx context.Context) ([]JobQueueStat, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT kind, status, run_after <= ?, count(*), min(run_after)
		FROM jobs INDEXED BY jobs_queue WHERE status IN ('queued', 'running') GROUP BY 1, 2, 3 ORDER BY kind`,
		db.now())
	if err != nil {
		return nil, fmt.Errorf("store: job queue: %w", err)
	}
	defer rows.Close()
	var out []JobQueueStat
	for rows.Next() {
		var kind, status, oldest string
		var due bool
		var n int
		if err := rows.Scan(&kind, &status, &due, &n, &oldest); err != nil {
			return nil, fmt.Errorf("store: job queue: %w", err)
		}
		if len(out) == 0 || out[len(out)-1].Kind != kind {
			out = append(out, JobQueueStat{Kind: kind})
		}
		s := &out[len(out)-1]
		switch {
		case status == string(JobRunning):
			s.Running += n
		case due:
			s.Due, s.OldestDue = n, parseTime(oldest)
		default:
			s.Later = n
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: job queue: %w", err)
	}
	return out, nil
}
