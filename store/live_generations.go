package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// LiveGeneration is one generation of a live session: a prompt and, once
// it ended, its output. Its statuses are the agent runs' (RunQueued...).
type LiveGeneration struct {
	ID        int64
	SessionID int64
	UserID    *int64
	JobID     *int64
	Prompt    string
	Variables map[string]string
	Status    string
	Output    string // as far as it got, for a cancelled or cut-off one
	Error     string
	Usage
	UsageEstimated bool
	// HistoryDropped counts the earlier messages of the session left out
	// of the call to fit the model's context window.
	HistoryDropped int
	QueuedAt       time.Time
	StartedAt      *time.Time
	FinishedAt     *time.Time
}

// Finished reports whether the generation reached a final status.
func (g *LiveGeneration) Finished() bool {
	return finalStatus(g.Status)
}

const liveGenerationColumns = `g.id, g.session_id, g.user_id, g.job_id, g.prompt, g.variables, g.status, g.output, g.error, g.model,
	g.input_tokens, g.output_tokens, g.stop_reason, g.cost_micros, g.usage_estimated, g.history_dropped, g.queued_at, g.started_at, g.finished_at`

func scanLiveGeneration(row rowScanner) (*LiveGeneration, error) {
	var g LiveGeneration
	var rr runRow
	if err := row.Scan(&g.ID, &g.SessionID, &rr.user, &rr.job, &g.Prompt, &rr.vars, &g.Status, &g.Output, &g.Error, &g.Model,
		&g.InputTokens, &g.OutputTokens, &g.StopReason, &rr.cost, &g.UsageEstimated, &g.HistoryDropped, &rr.queued, &rr.started, &rr.finished); err != nil {
		return nil, err
	}
	if err := rr.into("live generation", g.ID, &g.UserID, &g.JobID, &g.Variables, &g.Cost, &g.QueuedAt, &g.StartedAt, &g.FinishedAt); err != nil {
		return nil, err
	}
	return &g, nil
}

// NewLiveGeneration is what CreateLiveGenerationWithJob needs.
type NewLiveGeneration struct {
	SessionID int64
	UserID    *int64
	Prompt    string
	Variables map[string]string
	// MaxPerSession bounds the session's generations (its transcript);
	// 0 for no bound.
	MaxPerSession int
}

// CreateLiveGenerationWithJob records a queued generation and the job that
// carries it out, in one transaction. The session must be open, hold fewer
// than MaxPerSession generations and have none queued or running: each is
// a conflict that says so.
func (db *DB) CreateLiveGenerationWithJob(ctx context.Context, n NewLiveGeneration, j RunJob) (*LiveGeneration, error) {
	vars := variablesJSON(n.Variables)
	var gen *LiveGeneration
	err := db.tx(ctx, func(tx *sql.Tx) error {
		var status string
		var count int
		err := tx.QueryRowContext(ctx, `SELECT s.status, (SELECT COUNT(*) FROM live_generations g WHERE g.session_id = s.id)
			FROM live_sessions s WHERE s.id = ?`, n.SessionID).Scan(&status, &count)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return NotFound("live session not found")
		case err != nil:
			return err
		case status != LiveOpen:
			return Conflict("the live session is closed: it takes no more generations; create a new session")
		case n.MaxPerSession > 0 && count >= n.MaxPerSession:
			return Conflict("the live session holds %d generations, the most one may: create a new session", count)
		}
		now := db.now()
		g, err := scanLiveGeneration(tx.QueryRowContext(ctx, `INSERT INTO live_generations (session_id, user_id, prompt, variables, status, queued_at)
			VALUES (?, ?, ?, ?, 'queued', ?) RETURNING `+returning(liveGenerationColumns), n.SessionID, n.UserID, n.Prompt, vars, now))
		if err != nil {
			if KindOf(translate(err, "generation")) == KindConflict {
				return Conflict("a generation is already under way in this live session: wait for it to end, or cancel it")
			}
			return translate(err, "generation")
		}
		if g.JobID, err = db.insertRunJobTx(ctx, tx, "live_generations", g.ID, j); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE live_sessions SET updated_at = ? WHERE id = ?`, now, n.SessionID); err != nil {
			return err
		}
		gen = g
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: create live generation: %w", err)
	}
	return gen, nil
}

// LiveGenerationByID finds a generation.
func (db *DB) LiveGenerationByID(ctx context.Context, id int64) (*LiveGeneration, error) {
	return db.oneLiveGeneration(ctx, db.r, `g.id = ?`, id)
}

// ActiveLiveGeneration is a session's queued or running generation; not
// found when there is none.
func (db *DB) ActiveLiveGeneration(ctx context.Context, sessionID int64) (*LiveGeneration, error) {
	return db.oneLiveGeneration(ctx, db.r, `g.session_id = ? AND g.status IN ('queued', 'running')`, sessionID)
}

// LastLiveOutput is a session's newest succeeded generation; not found
// when there is none.
func (db *DB) LastLiveOutput(ctx context.Context, sessionID int64) (*LiveGeneration, error) {
	return db.oneLiveGeneration(ctx, db.r, `g.session_id = ? AND g.status = 'succeeded' ORDER BY g.id DESC LIMIT 1`, sessionID)
}

func (db *DB) oneLiveGeneration(ctx context.Context, q rowQuerier, cond string, args ...any) (*LiveGeneration, error) {
	return findIn(ctx, q, scanLiveGeneration, "generation", `SELECT `+liveGenerationColumns+` FROM live_generations g WHERE `+cond, args...)
}

// ListLiveGenerations is a session's transcript: its generations, oldest
// first.
func (db *DB) ListLiveGenerations(ctx context.Context, sessionID int64) ([]*LiveGeneration, error) {
	rows, err := db.listRows(ctx, `SELECT `+liveGenerationColumns+` FROM live_generations g WHERE g.session_id = ? ORDER BY g.id`, sessionID)
	if err != nil {
		return nil, fmt.Errorf("store: list live generations: %w", err)
	}
	defer rows.Close()
	out := []*LiveGeneration{}
	for rows.Next() {
		g, err := scanLiveGeneration(rows)
		if err != nil {
			return nil, fmt.Errorf("store: list live generations: %w", err)
		}
		out = append(out, g)
	}
	return out, rows.Err()
}

// StartLiveGeneration marks a queued generation running; false if it is no
// longer queued.
func (db *DB) StartLiveGeneration(ctx context.Context, id int64) (bool, error) {
	return db.startRun(ctx, "live_generations", "live generation", id, false)
}

// FinishLiveGeneration records how a generation ended; one already ended
// keeps its first ending (and takes the usage, see finishTx).
func (db *DB) FinishLiveGeneration(ctx context.Context, id int64, o LiveOutcome) (*LiveGeneration, error) {
	var gen *LiveGeneration
	err := db.tx(ctx, func(tx *sql.Tx) error {
		ended, err := db.finishTx(ctx, tx, liveGenerationTable, id, o)
		if err != nil {
			return err
		}
		if ended {
			if _, err := tx.ExecContext(ctx, `UPDATE live_sessions SET updated_at = ?
				WHERE id = (SELECT session_id FROM live_generations WHERE id = ?)`, db.now(), id); err != nil {
				return err
			}
		}
		gen, err = db.oneLiveGeneration(ctx, tx, `g.id = ?`, id)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: finish live generation: %w", err)
	}
	return gen, nil
}

var liveGenerationTable = generationTable{table: "live_generations", unfinished: runUnfinished,
	ending: func(o Outcome) []column { return []column{{"output", o.Output}} },
	usage: func(o Outcome) []column {
		return []column{{"usage_estimated", o.UsageEstimated}, {"history_dropped", o.Trimmed}}
	}}

// FailOrphanLiveGenerations is FailOrphanRuns for live generations.
func (db *DB) FailOrphanLiveGenerations(ctx context.Context, reason string) (int64, error) {
	return db.failOrphans(ctx, "live_generations", runUnfinished, "live generations", reason)
}
