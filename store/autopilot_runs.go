package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Autopilot runs (migration 0018): one keyword taken through the steps,
// each step written when it begins and when it ends.

// The steps of a run, in their order.
const (
	StepPickKeyword = "pick_keyword"
	StepGenerate    = "generate"
	StepCreatePost  = "create_post"
	StepPublish     = "publish"
)

// AutopilotSteps are the steps in the order a run takes them.
var AutopilotSteps = []string{StepPickKeyword, StepGenerate, StepCreatePost, StepPublish}

// Step statuses; a step not begun has none (it is pending).
const (
	StepRunning   = "running"
	StepSucceeded = "succeeded"
	StepFailed    = "failed"
	StepSkipped   = "skipped"
)

// RunPaused is the status of an autopilot run that waits for its
// autopilot to resume; the others are the agent runs' (RunQueued...).
const RunPaused = "paused"

// Controls: what the owner asked of a run under way.
const (
	ControlPause = "pause"
	ControlStop  = "stop"
)

// AutopilotStep is one step of a run.
type AutopilotStep struct {
	Step         string
	Status       string
	Detail       string
	Error        string
	Attempts     int
	InputTokens  int64
	OutputTokens int64
	Cost         *Micros
	StartedAt    time.Time
	FinishedAt   *time.Time
}

// Done reports whether the step need not be done again.
func (s *AutopilotStep) Done() bool {
	return s != nil && (s.Status == StepSucceeded || s.Status == StepSkipped)
}

// AutopilotRun is one run of an autopilot.
type AutopilotRun struct {
	ID            int64
	EnvironmentID int64
	Trigger       string // "schedule" or "manual"
	Status        string
	Control       string
	CampaignID    *int64
	KeywordID     *int64
	Keyword       string
	KeywordStatus string // before the claim
	Target        string // PostWordPress or PostAstro
	PostStatus    string // "draft" or "publish"
	CIERunID      *int64
	Post          *PostRef
	JobID         *int64
	PauseReason   string
	Error         string
	RequestedBy   *int64
	CreatedAt     time.Time
	StartedAt     *time.Time
	FinishedAt    *time.Time
	// Steps are those begun, in the run's order.
	Steps []*AutopilotStep
}

// Step returns the named step, nil when it has not begun.
func (r *AutopilotRun) Step(name string) *AutopilotStep {
	for _, s := range r.Steps {
		if s.Step == name {
			return s
		}
	}
	return nil
}

// Finished reports whether the run reached a final status.
func (r *AutopilotRun) Finished() bool {
	return finalStatus(r.Status)
}

const autopilotRunColumns = `r.id, r.environment_id, r.trigger, r.status, r.control, r.campaign_id, r.keyword_id, r.keyword, r.keyword_status,
	r.target, r.post_status, r.cie_run_id, r.wordpress_post_id, r.astro_post_id, r.job_id, r.pause_reason, r.error, r.requested_by,
	r.created_at, r.started_at, r.finished_at`

func scanAutopilotRun(row rowScanner) (*AutopilotRun, error) {
	var r AutopilotRun
	var campaign, keyword, gen, wp, astro, job, by sql.NullInt64
	var created string
	var started, finished sql.NullString
	if err := row.Scan(&r.ID, &r.EnvironmentID, &r.Trigger, &r.Status, &r.Control, &campaign, &keyword, &r.Keyword, &r.KeywordStatus,
		&r.Target, &r.PostStatus, &gen, &wp, &astro, &job, &r.PauseReason, &r.Error, &by, &created, &started, &finished); err != nil {
		return nil, err
	}
	r.CampaignID, r.KeywordID, r.CIERunID, r.JobID, r.RequestedBy = nullID(campaign), nullID(keyword), nullID(gen), nullID(job), nullID(by)
	switch {
	case wp.Valid:
		r.Post = &PostRef{Kind: PostWordPress, ID: wp.Int64}
	case astro.Valid:
		r.Post = &PostRef{Kind: PostAstro, ID: astro.Int64}
	}
	r.CreatedAt, r.StartedAt, r.FinishedAt = parseTime(created), parseNullTime(started), parseNullTime(finished)
	return &r, nil
}

const autopilotStepColumns = `s.run_id, s.step, s.status, s.detail, s.error, s.attempts, s.input_tokens, s.output_tokens, s.cost_micros,
	s.started_at, s.finished_at`

// fillSteps reads (run_id, step...) rows into the runs' Steps, in the
// steps' order, and closes rows.
func fillSteps(rows *sql.Rows, runs []*AutopilotRun) error {
	defer rows.Close()
	byID := make(map[int64]*AutopilotRun, len(runs))
	for _, r := range runs {
		r.Steps = []*AutopilotStep{}
		byID[r.ID] = r
	}
	for rows.Next() {
		var s AutopilotStep
		var runID int64
		var cost sql.NullInt64
		var started string
		var finished sql.NullString
		if err := rows.Scan(&runID, &s.Step, &s.Status, &s.Detail, &s.Error, &s.Attempts, &s.InputTokens, &s.OutputTokens, &cost,
			&started, &finished); err != nil {
			return fmt.Errorf("store: autopilot steps: %w", err)
		}
		s.Cost = nullMicros(cost)
		s.StartedAt, s.FinishedAt = parseTime(started), parseNullTime(finished)
		if r := byID[runID]; r != nil {
			r.Steps = append(r.Steps, &s)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("store: autopilot steps: %w", err)
	}
	for _, r := range runs {
		slices.SortFunc(r.Steps, func(a, b *AutopilotStep) int {
			return slices.Index(AutopilotSteps, a.Step) - slices.Index(AutopilotSteps, b.Step)
		})
	}
	return nil
}

// autopilotRunByID reads a run with its steps through q: the writer after
// a write.
func (db *DB) autopilotRunByID(ctx context.Context, q querier, id int64) (*AutopilotRun, error) {
	r, err := findIn(ctx, q, scanAutopilotRun, "autopilot run", `SELECT `+autopilotRunColumns+` FROM autopilot_runs r WHERE r.id = ?`, id)
	if err != nil {
		return nil, err
	}
	rows, err := q.QueryContext(ctx, `SELECT `+autopilotStepColumns+` FROM autopilot_steps s WHERE s.run_id = ?`, id)
	if err != nil {
		return nil, fmt.Errorf("store: autopilot steps: %w", err)
	}
	if err := fillSteps(rows, []*AutopilotRun{r}); err != nil {
		return nil, err
	}
	return r, nil
}

// AutopilotRunByID finds a run with its steps.
func (db *DB) AutopilotRunByID(ctx context.Context, id int64) (*AutopilotRun, error) {
	return db.autopilotRunByID(ctx, db.r, id)
}

// ActiveAutopilotRun is an environment's run that is queued, running or
// paused; nil when it has none.
func (db *DB) ActiveAutopilotRun(ctx context.Context, envID int64) (*AutopilotRun, error) {
	var id int64
	err := db.r.QueryRowContext(ctx, `SELECT id FROM autopilot_runs WHERE environment_id = ? AND status IN ('queued', 'running', 'paused')`,
		envID).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: active autopilot run: %w", err)
	}
	return db.autopilotRunByID(ctx, db.r, id)
}

// AutopilotCandidate is a campaign a new run may take its keyword from,
// with what its post will be.
type AutopilotCandidate struct {
	CampaignID int64
	Target     string // PostWordPress or PostAstro
	PostStatus string // "draft" or "publish"
}

// NewAutopilotRun is what CreateAutopilotRun needs.
type NewAutopilotRun struct {
	EnvironmentID int64
	Trigger       string
	// Candidates are tried in order: the run takes the next keyword of the
	// first that has one left.
	Candidates  []AutopilotCandidate
	RequestedBy *int64
	// PickStarted is when choosing began, the pick step's start.
	PickStarted time.Time
	Job         RunJob
}

// ErrNoKeyword is the error of CreateAutopilotRun when no candidate has a
// keyword left to write.
var ErrNoKeyword = NotFound("no campaign the autopilot works on has a keyword left to write (status new or planned)")

// CreateAutopilotRun starts a run in one transaction: it claims the next
// keyword (new or planned → in_progress, in the campaign's order) of the
// first candidate that has one, records the run with its pick_keyword
// step done, and the job that carries it on. Two runs never claim one
// keyword, and an environment has one active run at most: a second is a
// conflict. With no keyword left it returns ErrNoKeyword and writes
// nothing.
func (db *DB) CreateAutopilotRun(ctx context.Context, n NewAutopilotRun) (*AutopilotRun, error) {
	var run *AutopilotRun
	err := db.tx(ctx, func(tx *sql.Tx) error {
		var active int64
		err := tx.QueryRowContext(ctx, `SELECT id FROM autopilot_runs WHERE environment_id = ? AND status IN ('queued', 'running', 'paused')`,
			n.EnvironmentID).Scan(&active)
		if err == nil {
			return Conflict("autopilot run %d of this environment is not finished: one run at a time", active)
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		now := db.now()
		for _, c := range n.Candidates {
			var kwID int64
			var kw, status string
			err := tx.QueryRowContext(ctx, `SELECT id, keyword, status FROM seo_keywords WHERE campaign_id = ? AND status IN ('new', 'planned')
				ORDER BY campaign_position, id LIMIT 1`, c.CampaignID).Scan(&kwID, &kw, &status)
			if errors.Is(err, sql.ErrNoRows) {
				continue
			}
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `UPDATE seo_keywords SET status = 'in_progress', updated_at = ? WHERE id = ?`, now, kwID); err != nil {
				return err
			}
			var id int64
			if err := tx.QueryRowContext(ctx, `INSERT INTO autopilot_runs (environment_id, trigger, status, campaign_id, keyword_id, keyword,
				keyword_status, target, post_status, requested_by, created_at) VALUES (?, ?, 'queued', ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
				n.EnvironmentID, n.Trigger, c.CampaignID, kwID, kw, status, c.Target, c.PostStatus, n.RequestedBy, now).Scan(&id); err != nil {
				return translate(err, "autopilot run")
			}
			started := now
			if !n.PickStarted.IsZero() {
				started = fmtTime(n.PickStarted)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO autopilot_steps (run_id, step, status, detail, started_at, finished_at)
				VALUES (?, 'pick_keyword', 'succeeded', ?, ?, ?)`, id, fmt.Sprintf("keyword %d %q of campaign %d", kwID, kw, c.CampaignID),
				started, now); err != nil {
				return err
			}
			if _, err := db.insertRunJobTx(ctx, tx, "autopilot_runs", id, n.Job); err != nil {
				return err
			}
			run, err = db.autopilotRunByID(ctx, tx, id)
			return err
		}
		return ErrNoKeyword
	})
	if err != nil {
		if errors.Is(err, ErrNoKeyword) {
			return nil, ErrNoKeyword
		}
		return nil, fmt.Errorf("store: create autopilot run: %w", err)
	}
	return run, nil
}

// AutopilotRunFilter narrows ListAutopilotRuns.
type AutopilotRunFilter struct {
	EnvironmentID int64
	Status        string
	Sort          Sort // created_at; newest first by default
	Page
}

var autopilotRunSorts = map[string]string{"created_at": "r.created_at"}

func (AutopilotRunFilter) sortColumns() map[string]string { return autopilotRunSorts }

// ListAutopilotRuns lists an environment's runs with their steps, newest
// first unless sorted otherwise.
func (db *DB) ListAutopilotRuns(ctx context.Context, f AutopilotRunFilter) ([]*AutopilotRun, int, error) {
	order, err := f.Sort.orderBy(autopilotRunSorts, "r.created_at DESC, r.id DESC", "r.id")
	if err != nil {
		return nil, 0, err
	}
	where, args := []string{"r.environment_id = ?"}, []any{f.EnvironmentID}
	index := "autopilot_runs_env"
	if f.Status != "" {
		where, args = append(where, "r.status = ?"), append(args, f.Status)
		index = "autopilot_runs_env_status"
	}
	out, total, err := listPage(ctx, db, listQuery{from: "autopilot_runs r INDEXED BY " + index, where: where, args: args,
		columns: autopilotRunColumns, order: order, what: "autopilot runs"}, f.Page, scanAutopilotRun)
	if err != nil || len(out) == 0 {
		return out, total, err
	}
	ids := make([]int64, len(out))
	for i, r := range out {
		ids[i] = r.ID
	}
	cond, idArgs := idList("s.run_id", ids)
	rows, err := db.listRows(ctx, `SELECT `+autopilotStepColumns+` FROM autopilot_steps s WHERE `+cond, idArgs...)
	if err != nil {
		return nil, 0, fmt.Errorf("store: autopilot steps: %w", err)
	}
	if err := fillSteps(rows, out); err != nil {
		return nil, 0, err
	}
	return out, total, nil
}

// StartAutopilotRun marks a queued run running (a running one stays so:
// its job runs again); false when it is neither.
func (db *DB) StartAutopilotRun(ctx context.Context, id int64) (bool, error) {
	return db.startRun(ctx, "autopilot_runs", "autopilot run", id, false)
}

// BeginAutopilotStep records that a step begins (again: one more attempt).
func (db *DB) BeginAutopilotStep(ctx context.Context, runID int64, step string) error {
	_, err := db.exec(ctx, `INSERT INTO autopilot_steps (run_id, step, status, started_at) VALUES (?, ?, 'running', ?)
		ON CONFLICT (run_id, step) DO UPDATE SET status = 'running', attempts = autopilot_steps.attempts + 1, error = '', started_at = excluded.started_at,
		finished_at = NULL`, runID, step, db.now())
	if err != nil {
		return fmt.Errorf("store: begin autopilot step: %w", translate(err, "step"))
	}
	return nil
}

// StepEnd is how a step ended.
type StepEnd struct {
	Status       string
	Detail       string
	Error        string
	InputTokens  int64
	OutputTokens int64
	Cost         *Micros
}

// FinishAutopilotStep records a step's end; a step that never began (one
// skipped) is recorded begun and ended at once.
func (db *DB) FinishAutopilotStep(ctx context.Context, runID int64, step string, e StepEnd) error {
	now := db.now()
	_, err := db.exec(ctx, `INSERT INTO autopilot_steps (run_id, step, status, detail, error, input_tokens, output_tokens, cost_micros,
		started_at, finished_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (run_id, step) DO UPDATE SET status = excluded.status, detail = excluded.detail, error = excluded.error,
		input_tokens = excluded.input_tokens, output_tokens = excluded.output_tokens, cost_micros = excluded.cost_micros, finished_at = excluded.finished_at`,
		runID, step, e.Status, e.Detail, e.Error, e.InputTokens, e.OutputTokens, e.Cost, now, now)
	if err != nil {
		return fmt.Errorf("store: finish autopilot step: %w", translate(err, "step"))
	}
	return nil
}

// BeginAutopilotGeneration begins a run's generate step with the
// generation it makes, in one transaction: the run's first generation is
// recorded from n and linked to the run; a later attempt (after a failure
// or a restart) takes the run's own generation again, unless it
// succeeded, rather than making a second one (n is then not used). The
// generation is queued under jobID, the job that carries the run, so that
// it counts as that job's work (FailOrphanCIERuns). It returns the
// generation's id.
func (db *DB) BeginAutopilotGeneration(ctx context.Context, runID int64, n *NewCIERun, jobID int64) (int64, error) {
	var genID int64
	err := db.tx(ctx, func(tx *sql.Tx) error {
		var have sql.NullInt64
		if err := tx.QueryRowContext(ctx, `SELECT cie_run_id FROM autopilot_runs WHERE id = ?`, runID).Scan(&have); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return NotFound("autopilot run not found")
			}
			return err
		}
		now := db.now()
		switch {
		case have.Valid:
			genID = have.Int64
			res, err := tx.ExecContext(ctx, `UPDATE cie_runs SET status = 'queued', error = '', finished_at = NULL, job_id = ?
				WHERE id = ? AND status != 'succeeded'`, jobID, genID)
			if err != nil {
				return err
			}
			if k, _ := res.RowsAffected(); k == 0 {
				return Conflict("the generation %d of autopilot run %d succeeded already", genID, runID)
			}
		case n == nil:
			return Invalid("autopilot run %d has no generation to take again", runID)
		default:
			if n.Variables == nil {
				n.Variables = map[string]string{}
			}
			vars, err := json.Marshal(n.Variables)
			if err != nil {
				return &Error{Kind: KindInvalid, Message: "the generation's variables cannot be encoded as JSON", Err: err}
			}
			if err := tx.QueryRowContext(ctx, `INSERT INTO cie_runs (archetype_id, agent_id, environment_id, user_id, job_id, variables,
				system_prompt, user_prompt, status, queued_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'queued', ?) RETURNING id`,
				n.ArchetypeID, n.AgentID, n.EnvironmentID, n.UserID, jobID, string(vars), n.SystemPrompt, n.UserPrompt, now).Scan(&genID); err != nil {
				return translate(err, "generation")
			}
			if _, err := tx.ExecContext(ctx, `UPDATE autopilot_runs SET cie_run_id = ? WHERE id = ?`, genID, runID); err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO autopilot_steps (run_id, step, status, detail, started_at) VALUES (?, 'generate', 'running', ?, ?)
			ON CONFLICT (run_id, step) DO UPDATE SET status = 'running', attempts = autopilot_steps.attempts + 1, error = '', detail = excluded.detail,
			started_at = excluded.started_at, finished_at = NULL`, runID, fmt.Sprintf("generation %d", genID), now)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("store: begin autopilot generation: %w", err)
	}
	return genID, nil
}

// PostOfGeneration finds the post of a kind that was made from a
// generation: how a run that stopped between making its post and
// recording it finds the post again. nil when there is none.
func (db *DB) PostOfGeneration(ctx context.Context, kind string, cieRunID int64) (*PostRef, error) {
	table := map[string]string{PostWordPress: "wordpress_posts", PostAstro: "astro_posts"}[kind]
	if table == "" {
		return nil, Invalid("%q is not a post kind", kind)
	}
	var id int64
	err := db.r.QueryRowContext(ctx, `SELECT id FROM `+table+` WHERE cie_run_id = ? ORDER BY id LIMIT 1`, cieRunID).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: post of generation: %w", err)
	}
	return &PostRef{Kind: kind, ID: id}, nil
}

// LinkAutopilotPost records the post a run made, in one transaction: on
// the run, on its keyword (unless the keyword links another post
// already), and as the end of its create_post step.
func (db *DB) LinkAutopilotPost(ctx context.Context, runID int64, p PostRef, detail string) (*AutopilotRun, error) {
	wp, astro := postColumns(&p)
	var run *AutopilotRun
	err := db.tx(ctx, func(tx *sql.Tx) error {
		now := db.now()
		res, err := tx.ExecContext(ctx, `UPDATE autopilot_runs SET wordpress_post_id = ?, astro_post_id = ? WHERE id = ?`, wp, astro, runID)
		if err != nil {
			return translate(err, "autopilot run")
		}
		if k, _ := res.RowsAffected(); k == 0 {
			return NotFound("autopilot run not found")
		}
		if _, err := tx.ExecContext(ctx, `UPDATE seo_keywords SET wordpress_post_id = ?, astro_post_id = ?, updated_at = ?
			WHERE id = (SELECT keyword_id FROM autopilot_runs WHERE id = ?) AND wordpress_post_id IS NULL AND astro_post_id IS NULL`,
			wp, astro, now, runID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO autopilot_steps (run_id, step, status, detail, started_at, finished_at)
			VALUES (?, 'create_post', 'succeeded', ?, ?, ?) ON CONFLICT (run_id, step) DO UPDATE SET status = 'succeeded', detail = excluded.detail,
			error = '', finished_at = excluded.finished_at`, runID, detail, now, now); err != nil {
			return err
		}
		run, err = db.autopilotRunByID(ctx, tx, runID)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: link autopilot post: %w", err)
	}
	return run, nil
}

// AutopilotRunEnd is how a run ends.
type AutopilotRunEnd struct {
	Status string // RunSucceeded, RunFailed or RunCancelled
	Error  string
	// KeywordStatus is the keyword's status after a run that made its post
	// (published, or in_progress for a draft); "" leaves it.
	KeywordStatus string
	// OnlyIf, when set, ends the run only while it has this status (a
	// queued run that its job has not taken yet).
	OnlyIf string
}

// FinishAutopilotRun ends a run that is not finished, in one transaction
// with what goes with it: the keyword gets end.KeywordStatus, or, when
// the run made no post, goes back to the status it had before the claim
// (so a later run may write it); and the autopilot's count of failed runs
// in a row starts again after a success and grows after a failure. It
// returns the run as it is after, and false when it had finished already
// (nothing is changed then).
func (db *DB) FinishAutopilotRun(ctx context.Context, runID int64, end AutopilotRunEnd) (*AutopilotRun, bool, error) {
	if end.Status != RunSucceeded && end.Status != RunFailed && end.Status != RunCancelled {
		return nil, false, Invalid("%q is not a final run status", end.Status)
	}
	var run *AutopilotRun
	changed := false
	err := db.tx(ctx, func(tx *sql.Tx) error {
		now := db.now()
		res, err := tx.ExecContext(ctx, `UPDATE autopilot_runs SET status = ?, error = ?, control = '', finished_at = ?
			WHERE id = ? AND status IN ('queued', 'running', 'paused') AND (? = '' OR status = ?)`, end.Status, end.Error, now, runID,
			end.OnlyIf, end.OnlyIf)
		if err != nil {
			return err
		}
		if run, err = db.autopilotRunByID(ctx, tx, runID); err != nil {
			return err
		}
		if k, _ := res.RowsAffected(); k == 0 {
			return nil
		}
		changed = true
		if run.KeywordID != nil {
			switch {
			case run.Post == nil:
				_, err = tx.ExecContext(ctx, `UPDATE seo_keywords SET status = ?, updated_at = ? WHERE id = ? AND status = 'in_progress'
					AND wordpress_post_id IS NULL AND astro_post_id IS NULL`, run.KeywordStatus, now, *run.KeywordID)
			case end.KeywordStatus != "":
				_, err = tx.ExecContext(ctx, `UPDATE seo_keywords SET status = ?, updated_at = ? WHERE id = ?`, end.KeywordStatus, now, *run.KeywordID)
			}
			if err != nil {
				return translate(err, "keyword")
			}
		}
		switch end.Status {
		case RunSucceeded:
			_, err = tx.ExecContext(ctx, `UPDATE autopilots SET failures = 0 WHERE environment_id = ?`, run.EnvironmentID)
		case RunFailed:
			_, err = tx.ExecContext(ctx, `UPDATE autopilots SET failures = failures + 1 WHERE environment_id = ?`, run.EnvironmentID)
		}
		return err
	})
	if err != nil {
		return nil, false, fmt.Errorf("store: finish autopilot run: %w", err)
	}
	return run, changed, nil
}

// PauseAutopilotRun makes a queued or running run wait, saying why;
// false when it was neither.
func (db *DB) PauseAutopilotRun(ctx context.Context, runID int64, reason string) (bool, error) {
	res, err := db.exec(ctx, `UPDATE autopilot_runs SET status = 'paused', control = '', pause_reason = ?
		WHERE id = ? AND status IN ('queued', 'running')`, reason, runID)
	if err != nil {
		return false, fmt.Errorf("store: pause autopilot run: %w", err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// ResumeAutopilotRun queues a paused run again with a new job, in one
// transaction (insertRunJobTx, as a new run's job), and answers the job's
// id; nil when the run is not paused.
func (db *DB) ResumeAutopilotRun(ctx context.Context, runID int64, j RunJob) (*int64, error) {
	var jobID *int64
	err := db.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE autopilot_runs SET status = 'queued', pause_reason = '', control = '' WHERE id = ? AND status = 'paused'`, runID)
		if err != nil {
			return err
		}
		if k, _ := res.RowsAffected(); k == 0 {
			return nil
		}
		jobID, err = db.insertRunJobTx(ctx, tx, "autopilot_runs", runID, j)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: resume autopilot run: %w", err)
	}
	return jobID, nil
}

// ControlAutopilotRun asks a run under way (queued or running) to pause
// or stop at its next step; false when it is neither.
func (db *DB) ControlAutopilotRun(ctx context.Context, runID int64, control string) (bool, error) {
	res, err := db.exec(ctx, `UPDATE autopilot_runs SET control = ? WHERE id = ? AND status IN ('queued', 'running')`, control, runID)
	if err != nil {
		return false, fmt.Errorf("store: control autopilot run: %w", translate(err, "autopilot run"))
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// countsToward is the condition of the runs that count toward a day's
// posts: those under way or done, and failed ones that made a post.
const countsToward = `(status IN ('queued', 'running', 'paused', 'succeeded') OR wordpress_post_id IS NOT NULL OR astro_post_id IS NOT NULL)`

// AutopilotRunsSince counts an environment's runs made since t that count
// toward its posts of the day, and tells when its latest run was made
// (nil: never).
func (db *DB) AutopilotRunsSince(ctx context.Context, envID int64, t time.Time) (int, *time.Time, error) {
	var n int
	if err := db.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM autopilot_runs WHERE environment_id = ? AND created_at >= ? AND `+countsToward,
		envID, fmtTime(t)).Scan(&n); err != nil {
		return 0, nil, fmt.Errorf("store: count autopilot runs: %w", err)
	}
	var last sql.NullString
	if err := db.r.QueryRowContext(ctx, `SELECT MAX(created_at) FROM autopilot_runs WHERE environment_id = ?`, envID).Scan(&last); err != nil {
		return 0, nil, fmt.Errorf("store: last autopilot run: %w", err)
	}
	return n, parseNullTime(last), nil
}

// CampaignRunsSince counts a campaign's autopilot runs made since t that
// count toward its cadence.
func (db *DB) CampaignRunsSince(ctx context.Context, campaignID int64, t time.Time) (int, error) {
	var n int
	if err := db.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM autopilot_runs WHERE campaign_id = ? AND created_at >= ? AND `+countsToward,
		campaignID, fmtTime(t)).Scan(&n); err != nil {
		return 0, fmt.Errorf("store: count campaign runs: %w", err)
	}
	return n, nil
}

// OrphanAutopilotRuns fails the runs that are queued or running with no
// job to carry them on: none queued or running, nor one that finished
// after settled (whose end hook may not have closed the run yet). A
// database restored from before their job was, or a job pruned, leaves
// such runs. Their keywords go back as FinishAutopilotRun puts them; the
// runs are returned.
func (db *DB) OrphanAutopilotRuns(ctx context.Context, reason string, settled time.Time) ([]*AutopilotRun, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT id FROM autopilot_runs WHERE status IN ('queued', 'running')
		AND (job_id IS NULL OR job_id NOT IN (SELECT id FROM jobs WHERE status IN ('queued', 'running') OR finished_at > ?))`, fmtTime(settled))
	if err != nil {
		return nil, fmt.Errorf("store: orphan autopilot runs: %w", err)
	}
	ids, err := scanIDs(rows)
	if err != nil {
		return nil, fmt.Errorf("store: orphan autopilot runs: %w", err)
	}
	var out []*AutopilotRun
	for _, id := range ids {
		run, changed, err := db.FinishAutopilotRun(ctx, id, AutopilotRunEnd{Status: RunFailed, Error: reason})
		if err != nil {
			return out, err
		}
		if changed {
			out = append(out, run)
		}
	}
	return out, nil
}
