package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// CIERun is one generation from an archetype (server/cie): the prompts as
// sent, and the article parsed from the answer, or the raw answer when it
// did not parse. Its statuses are the agent runs' (RunQueued...).
type CIERun struct {
	ID            int64
	ArchetypeID   *int64
	AgentID       *int64
	EnvironmentID int64
	UserID        *int64
	JobID         *int64
	Variables     map[string]string
	SystemPrompt  string
	UserPrompt    string
	Stream        bool
	Status        string
	Title         string
	Description   string
	Body          string
	RawOutput     string
	Error         string
	Attempts      int
	Usage
	UsageEstimated bool
	QueuedAt       time.Time
	StartedAt      *time.Time
	FinishedAt     *time.Time
}

// Finished reports whether the run reached a final status.
func (r *CIERun) Finished() bool {
	return finalStatus(r.Status)
}

const cieRunColumns = `r.id, r.archetype_id, r.agent_id, r.environment_id, r.user_id, r.job_id, r.variables, r.system_prompt,
	r.user_prompt, r.stream, r.status, r.title, r.description, r.body, r.raw_output, r.error, r.attempts, r.model,
	r.input_tokens, r.output_tokens, r.stop_reason, r.cost_micros, r.usage_estimated, r.queued_at, r.started_at, r.finished_at`

func scanCIERun(row rowScanner) (*CIERun, error) {
	var r CIERun
	var arch, agent sql.NullInt64
	var rr runRow
	if err := row.Scan(&r.ID, &arch, &agent, &r.EnvironmentID, &rr.user, &rr.job, &rr.vars, &r.SystemPrompt, &r.UserPrompt, &r.Stream,
		&r.Status, &r.Title, &r.Description, &r.Body, &r.RawOutput, &r.Error, &r.Attempts, &r.Model, &r.InputTokens,
		&r.OutputTokens, &r.StopReason, &rr.cost, &r.UsageEstimated, &rr.queued, &rr.started, &rr.finished); err != nil {
		return nil, err
	}
	r.ArchetypeID, r.AgentID = nullID(arch), nullID(agent)
	if err := rr.into("cie run", r.ID, &r.UserID, &r.JobID, &r.Variables, &r.Cost, &r.QueuedAt, &r.StartedAt, &r.FinishedAt); err != nil {
		return nil, err
	}
	return &r, nil
}

// NewCIERun is what CreateCIERunWithJob needs.
type NewCIERun struct {
	ArchetypeID   int64
	AgentID       *int64
	EnvironmentID int64
	UserID        *int64
	Variables     map[string]string
	SystemPrompt  string
	UserPrompt    string
	Stream        bool
}

// CreateCIERunWithJob records a queued run and the job that carries it
// out, in one transaction: no run without its job.
func (db *DB) CreateCIERunWithJob(ctx context.Context, n NewCIERun, j RunJob) (*CIERun, error) {
	vars := variablesJSON(n.Variables)
	var run *CIERun
	err := db.tx(ctx, func(tx *sql.Tx) error {
		r, err := scanCIERun(tx.QueryRowContext(ctx, `INSERT INTO cie_runs (archetype_id, agent_id, environment_id, user_id, variables,
			system_prompt, user_prompt, stream, status, queued_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'queued', ?) RETURNING `+returning(cieRunColumns),
			n.ArchetypeID, n.AgentID, n.EnvironmentID, n.UserID, vars, n.SystemPrompt, n.UserPrompt, n.Stream, db.now()))
		if err != nil {
			return translate(err, "run")
		}
		r.JobID, err = db.insertRunJobTx(ctx, tx, "cie_runs", r.ID, j)
		run = r
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: create cie run: %w", err)
	}
	return run, nil
}

// CIERunFilter narrows ListCIERuns.
type CIERunFilter struct {
	EnvironmentID *int64
	ArchetypeID   *int64
	Status        string
	Scope         Scope // only runs in its environments
	Page
}

// ListCIERuns lists generations, newest first.
func (db *DB) ListCIERuns(ctx context.Context, f CIERunFilter) ([]*CIERun, int, error) {
	var where []string
	var args []any
	if f.EnvironmentID != nil {
		where, args = append(where, "r.environment_id = ?"), append(args, *f.EnvironmentID)
	}
	if f.ArchetypeID != nil {
		where, args = append(where, "r.archetype_id = ?"), append(args, *f.ArchetypeID)
	}
	if f.Status != "" {
		where, args = append(where, "r.status = ?"), append(args, f.Status)
	}
	if cond, scopeArgs := f.Scope.envIn("r.environment_id"); cond != "" {
		where, args = append(where, cond), append(args, scopeArgs...)
	}
	// The page walks the index of the filter that names one environment or
	// archetype, else the runs themselves newest first, checking the rest
	// on the way: the scope's environments have no order of their own.
	from := "cie_runs r NOT INDEXED"
	switch {
	case f.EnvironmentID != nil:
		from = "cie_runs r INDEXED BY cie_runs_env"
	case f.ArchetypeID != nil:
		from = "cie_runs r INDEXED BY cie_runs_archetype"
	}
	return listPage(ctx, db, listQuery{from: from, count: "cie_runs r", where: where, args: args, columns: cieRunColumns,
		order: "r.id DESC", what: "runs"}, f.Page, scanCIERun)
}

// CIERunByID finds a run.
func (db *DB) CIERunByID(ctx context.Context, id int64) (*CIERun, error) {
	return findRow(ctx, db, scanCIERun, "run", `SELECT `+cieRunColumns+` FROM cie_runs r WHERE r.id = ?`, id)
}

// StartCIERun marks a queued run running; false if it is no longer queued.
func (db *DB) StartCIERun(ctx context.Context, id int64) (bool, error) {
	return db.startRun(ctx, "cie_runs", "cie run", id, true)
}

// FinishCIERun records a run's end; a run already finished keeps its
// first ending, and takes the usage of all its attempts (see finishTx).
func (db *DB) FinishCIERun(ctx context.Context, id int64, o CIEOutcome) (*CIERun, error) {
	err := db.tx(ctx, func(tx *sql.Tx) error {
		_, err := db.finishTx(ctx, tx, cieRunTable, id, o)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: finish cie run: %w", err)
	}
	return findIn(ctx, db.w, scanCIERun, "run", `SELECT `+cieRunColumns+` FROM cie_runs r WHERE r.id = ?`, id)
}

var cieRunTable = generationTable{table: "cie_runs", unfinished: runUnfinished,
	ending: func(o Outcome) []column {
		return []column{{"title", o.Title}, {"description", o.Description}, {"body", o.Body}, {"raw_output", o.Output}, {"attempts", o.Attempts}}
	},
	usage: func(o Outcome) []column {
		return []column{{"usage_estimated", o.UsageEstimated}, {"attempts", o.Attempts}}
	}}

// RequeueCIERun puts a run back to queued after a retryable failure.
func (db *DB) RequeueCIERun(ctx context.Context, id int64, errText string) error {
	if _, err := db.exec(ctx, `UPDATE cie_runs SET status = 'queued', error = ? WHERE id = ? AND status = 'running'`, errText, id); err != nil {
		return fmt.Errorf("store: requeue cie run: %w", err)
	}
	return nil
}

// FailOrphanCIERuns is FailOrphanRuns for generation runs.
func (db *DB) FailOrphanCIERuns(ctx context.Context, reason string) (int64, error) {
	return db.failOrphans(ctx, "cie_runs", runUnfinished, "cie runs", reason)
}
