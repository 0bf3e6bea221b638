package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Runs. Every kind of background work that has a row of its own (agent
// runs, archetype generations, chat replies, live generations, scout runs,
// strategies, autopilot runs) is recorded the same way: the row and the
// job that carries it out are created in one transaction (insertRunJobTx),
// the job marks the row running (startRun), records its ending once
// (finishTx for the generations), and a row left unfinished with no job
// to finish it fails at start-up (failOrphans). A finished row may be
// deleted; one under way may not (deleteFinished).

// finalStatus reports whether a run's status is one it ends in
// (succeeded, failed, cancelled): the Finished of every kind of run.
func finalStatus(status string) bool {
	return status == RunSucceeded || status == RunFailed || status == RunCancelled
}

// runRow holds the columns every generation's row (agent runs, archetype
// generations, live generations) scans alike — who asked, its job, its
// variables, its cost and times — until into puts them in the row's
// fields.
type runRow struct {
	user, job, cost   sql.NullInt64
	vars, queued      string
	started, finished sql.NullString
}

// into sets a run's fields from the scanned columns; what and id name the
// row when its variables are not JSON.
func (rr *runRow) into(what string, id int64, user, job **int64, vars *map[string]string, cost **Micros,
	queued *time.Time, started, finished **time.Time) error {
	if err := json.Unmarshal([]byte(rr.vars), vars); err != nil {
		return fmt.Errorf("%s %d variables: %w", what, id, err)
	}
	*user, *job, *cost = nullID(rr.user), nullID(rr.job), nullMicros(rr.cost)
	*queued, *started, *finished = parseTime(rr.queued), parseNullTime(rr.started), parseNullTime(rr.finished)
	return nil
}

// RunJob is the job that carries out a new row of some kind
// (CreateRunWithJob, CreateCIERunWithJob, ...).
type RunJob struct {
	Kind        string
	MaxAttempts int // 0: DefaultJobMaxAttempts
	// Payload is the job's payload, made from the row's id.
	Payload func(id int64) any
	// Limit, when above 0, refuses the run (409) when its environment
	// has this many of its kind queued or running already (the scout's
	// runs and the strategies' builds: serve --max-queued).
	Limit int
}

// underLimitTx refuses a run of table when environment envID has
// limit (above 0) queued or running already, naming them.
func underLimitTx(ctx context.Context, tx *sql.Tx, table, what string, envID int64, limit int) error {
	if limit <= 0 {
		return nil
	}
	rows, err := tx.QueryContext(ctx, `SELECT id FROM `+table+` WHERE environment_id = ? AND status IN ('queued', 'running') ORDER BY id`, envID)
	if err != nil {
		return err
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return err
		}
		ids = append(ids, strconv.FormatInt(id, 10))
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(ids) >= limit {
		return Conflict("%s %s of this environment are queued or running, the most it may have: wait for one to end or cancel it (serve --max-queued sets the limit)",
			what, strings.Join(ids, ", "))
	}
	return nil
}

// insertRunJobTx queues, inside tx, the job that carries out row id of
// table, and records it as the row's job_id: there is never a row without
// its job, nor a job without its row. The caller tells the job runner
// (jobs.Runner.Signal) once tx is committed.
func (db *DB) insertRunJobTx(ctx context.Context, tx *sql.Tx, table string, id int64, j RunJob) (*int64, error) {
	job, err := db.insertJobTx(ctx, tx, NewJob{Kind: j.Kind, Payload: j.Payload(id), MaxAttempts: j.MaxAttempts})
	if err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE `+table+` SET job_id = ? WHERE id = ?`, job.ID, id); err != nil {
		return nil, err
	}
	return &job.ID, nil
}

// Usage is what a generation's model calls cost and how the last one
// stopped: the columns every kind of generation keeps (agent runs,
// archetype generations, chat replies, live generations), each embedding
// it.
type Usage struct {
	Model        string
	InputTokens  int64
	OutputTokens int64
	StopReason   string // why the model stopped (ai.Stop): "" when unknown
	Cost         *Micros
}

// Outcome is how a model-backed generation ended, whatever its kind
// (agent run, archetype generation, chat reply, live generation): its
// status, its text as far as it got, the error, and the usage of the
// calls made for it.
type Outcome struct {
	Status string
	// Output is the text: an agent run's or live generation's output, a
	// chat reply's content, an archetype generation's raw answer (kept
	// when it did not parse).
	Output string
	Error  string
	// Usage is recorded with the ending; its StopReason is why the model
	// stopped (ai.Stop's words: stop, length, cancelled, error, ...).
	Usage
	UsageEstimated bool
	// Attempts is how many calls the generation made (an archetype
	// generation asks again once when the answer does not parse).
	Attempts int
	// Trimmed counts the earlier messages left out of the prompt to fit
	// the model's context window (chat replies, live generations).
	Trimmed int
	// The article parsed from the answer (archetype generations).
	Title, Description, Body string
}

// The names each kind of generation gives its outcome: the same type.
type (
	RunOutcome  = Outcome
	CIEOutcome  = Outcome
	ChatOutcome = Outcome
	LiveOutcome = Outcome
)

// generationTable says how a kind of generation stores its ending
// (finishTx).
type generationTable struct {
	table      string
	unfinished string // SQL literals of the statuses of a row not finished
	ending     func(o Outcome) []column
	usage      func(o Outcome) []column // besides model, tokens and cost
}

type column struct {
	name  string
	value any
}

// finishTx records how a generation ended, unless its ending is recorded
// already (a cancel that raced with the end): the first ending recorded
// is kept. The usage of its calls (when o.Model is set) is recorded either
// way: a cancel records the ending at once, the call's usage comes when it
// stops. It says whether it recorded the ending.
func (db *DB) finishTx(ctx context.Context, tx *sql.Tx, g generationTable, id int64, o Outcome) (bool, error) {
	set, args := "status = ?, error = ?, stop_reason = ?, finished_at = ?", []any{o.Status, o.Error, o.StopReason, db.now()}
	for _, c := range g.ending(o) {
		set, args = set+", "+c.name+" = ?", append(args, c.value)
	}
	res, err := tx.ExecContext(ctx, `UPDATE `+g.table+` SET `+set+` WHERE id = ? AND status IN (`+g.unfinished+`)`, append(args, id)...)
	if err != nil {
		return false, err
	}
	if o.Model != "" {
		set, args = "model = ?, input_tokens = ?, output_tokens = ?, cost_micros = ?", []any{o.Model, o.InputTokens, o.OutputTokens, o.Cost}
		if g.usage != nil {
			for _, c := range g.usage(o) {
				set, args = set+", "+c.name+" = ?", append(args, c.value)
			}
		}
		if _, err := tx.ExecContext(ctx, `UPDATE `+g.table+` SET `+set+` WHERE id = ?`, append(args, id)...); err != nil {
			return false, err
		}
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// runUnfinished are the statuses of a run not finished, for failOrphans.
const runUnfinished = "'queued', 'running'"

// failOrphans fails, with reason, the rows of table (one with status,
// error, finished_at and job_id columns: a run of some kind) whose status
// is one of unfinished (SQL literals) and whose job is neither queued nor
// running; what names them in an error.
func (db *DB) failOrphans(ctx context.Context, table, unfinished, what, reason string) (int64, error) {
	return db.failOrphansAt(ctx, table, "finished_at", unfinished, what, reason)
}

// failOrphansAt is failOrphans for a table whose time of ending is the
// column ended rather than finished_at.
func (db *DB) failOrphansAt(ctx context.Context, table, ended, unfinished, what, reason string) (int64, error) {
	res, err := db.exec(ctx, `UPDATE `+table+` SET status = 'failed', error = ?, `+ended+` = ?
		WHERE status IN (`+unfinished+`)
		AND (job_id IS NULL OR job_id NOT IN (SELECT id FROM jobs WHERE status IN ('queued', 'running')))`, reason, db.now())
	if err != nil {
		return 0, fmt.Errorf("store: fail orphan %s: %w", what, err)
	}
	return res.RowsAffected()
}

// startRun marks row id of table (a run of some kind) running, with the
// time it first started; a running one stays so (its job runs again after
// a restart). False when it is neither queued nor running: cancelled or
// finished meanwhile, or gone. clearError empties the error an earlier
// attempt left. what names the row in errors.
func (db *DB) startRun(ctx context.Context, table, what string, id int64, clearError bool) (bool, error) {
	set := ""
	if clearError {
		set = ", error = ''"
	}
	res, err := db.exec(ctx, `UPDATE `+table+` SET status = 'running', started_at = COALESCE(started_at, ?)`+set+`
		WHERE id = ? AND status IN ('queued', 'running')`, db.now(), id)
	if err != nil {
		return false, fmt.Errorf("store: start %s: %w", what, err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// deleteFinished deletes row id of table (a run of some kind, with a
// status) unless it is still queued or running, which is a conflict: its
// job would go on, paying for calls, for a row that is gone. The status is
// read in the transaction that deletes. what names the row in errors.
func (db *DB) deleteFinished(ctx context.Context, table, what string, id int64) error {
	err := db.tx(ctx, func(tx *sql.Tx) error {
		var status string
		err := tx.QueryRowContext(ctx, `SELECT status FROM `+table+` WHERE id = ?`, id).Scan(&status)
		if errors.Is(err, sql.ErrNoRows) {
			return NotFound("%s not found", what)
		}
		if err != nil {
			return err
		}
		if status == RunQueued || status == RunRunning {
			return Conflict("%s %d is %s: cancel it first", what, id, status)
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM `+table+` WHERE id = ?`, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: delete %s: %w", what, err)
	}
	return nil
}
