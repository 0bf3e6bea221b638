package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Agent kinds.
var AgentKinds = []string{"writer", "editor", "researcher", "seo"}

// Agent is a configured AI worker: a model, a system prompt and parameters,
// in an environment (or global when EnvironmentID is nil).
type Agent struct {
	ID int64
	AgentInput
	CreatedBy *int64
	CreatedAt time.Time
	UpdatedAt time.Time
	// Assignments are the environments, beyond its own, that may use it.
	Assignments []int64
}

const agentColumns = `a.id, a.environment_id, a.name, a.description, a.kind, a.credential_id, a.model, a.system_prompt,
	a.temperature, a.max_tokens, a.is_active, a.created_by, a.created_at, a.updated_at`

func scanAgent(row rowScanner) (*Agent, error) {
	var a Agent
	var env, cred, maxTok, by sql.NullInt64
	var temp sql.NullFloat64
	var created, updated string
	if err := row.Scan(&a.ID, &env, &a.Name, &a.Description, &a.Kind, &cred, &a.Model, &a.SystemPrompt, &temp, &maxTok,
		&a.IsActive, &by, &created, &updated); err != nil {
		return nil, err
	}
	a.EnvironmentID, a.CredentialID, a.CreatedBy = nullID(env), nullID(cred), nullID(by)
	if temp.Valid {
		a.Temperature = &temp.Float64
	}
	if maxTok.Valid {
		v := int(maxTok.Int64)
		a.MaxTokens = &v
	}
	a.CreatedAt, a.UpdatedAt = parseTime(created), parseTime(updated)
	return &a, nil
}

// AgentInput is an agent's editable fields.
type AgentInput struct {
	EnvironmentID *int64
	Name          string
	Description   string
	Kind          string
	CredentialID  *int64
	Model         string
	SystemPrompt  string
	Temperature   *float64
	MaxTokens     *int
	IsActive      bool
}

// CreateAgent inserts an agent: one statement, which returns the agent as
// stored (a new agent has no assignments).
func (db *DB) CreateAgent(ctx context.Context, in AgentInput, createdBy int64) (*Agent, error) {
	now := db.now()
	a, err := insertRow(ctx, db, scanAgent, `INSERT INTO agents (environment_id, name, description, kind, credential_id, model,
		system_prompt, temperature, max_tokens, is_active, created_by, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		RETURNING `+returning(agentColumns),
		in.EnvironmentID, in.Name, in.Description, in.Kind, in.CredentialID, in.Model, in.SystemPrompt, in.Temperature, in.MaxTokens,
		boolInt(in.IsActive), createdBy, now, now)
	if err != nil {
		return nil, translate(err, "agent")
	}
	a.Assignments = []int64{}
	return a, nil
}

// ReplaceAgent overwrites an agent's editable fields.
func (db *DB) ReplaceAgent(ctx context.Context, id int64, in AgentInput) (*Agent, error) {
	res, err := db.exec(ctx, `UPDATE agents SET environment_id = ?, name = ?, description = ?, kind = ?, credential_id = ?, model = ?,
		system_prompt = ?, temperature = ?, max_tokens = ?, is_active = ?, updated_at = ? WHERE id = ?`,
		in.EnvironmentID, in.Name, in.Description, in.Kind, in.CredentialID, in.Model, in.SystemPrompt, in.Temperature, in.MaxTokens,
		boolInt(in.IsActive), db.now(), id)
	if err != nil {
		return nil, translate(err, "agent")
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil, NotFound("agent not found")
	}
	return db.AgentByID(ctx, id)
}

// AgentByID finds an agent with its assignments.
func (db *DB) AgentByID(ctx context.Context, id int64) (*Agent, error) {
	a, err := findRow(ctx, db, scanAgent, "agent", `SELECT `+agentColumns+` FROM agents a WHERE a.id = ?`, id)
	if err != nil {
		return nil, err
	}
	if err := db.loadAssignments(ctx, []*Agent{a}); err != nil {
		return nil, err
	}
	return a, nil
}

// loadAssignments fills in the assignments of agents, a page of them at
// most, with one query for all.
func (db *DB) loadAssignments(ctx context.Context, agents []*Agent) error {
	if len(agents) == 0 {
		return nil
	}
	byID := make(map[int64]*Agent, len(agents))
	args := make([]any, len(agents))
	for i, a := range agents {
		a.Assignments = []int64{}
		byID[a.ID] = a
		args[i] = a.ID
	}
	rows, err := db.listRows(ctx, `SELECT agent_id, environment_id FROM agent_assignments
		WHERE agent_id IN (?`+strings.Repeat(", ?", len(agents)-1)+`) ORDER BY agent_id, environment_id`, args...)
	if err != nil {
		return fmt.Errorf("store: agent assignments: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var agentID, envID int64
		if err := rows.Scan(&agentID, &envID); err != nil {
			return fmt.Errorf("store: agent assignments: %w", err)
		}
		a := byID[agentID]
		a.Assignments = append(a.Assignments, envID)
	}
	return rows.Err()
}

// agentInScope renders, for a query over agents a, the rule of who sees an
// agent: every scope with a caller sees the global agents, and a scope sees
// the agents of its environments and those assigned to one of them.
// Agent.VisibleIn is the same rule for one agent.
func agentInScope(sc Scope) (string, []any) {
	if sc.Admin {
		return "", nil
	}
	if sc.UserID == 0 {
		return "1 = 0", nil // the zero Scope sees nothing
	}
	own, args := sc.envIn("a.environment_id")
	assigned, more := sc.envIn("environment_id")
	return "(a.environment_id IS NULL OR " + own + " OR a.id IN (SELECT agent_id FROM agent_assignments WHERE " + assigned + "))",
		append(args, more...)
}

// VisibleIn reports whether a scope sees the agent (see agentInScope).
func (a *Agent) VisibleIn(sc Scope) bool {
	switch {
	case sc.Admin:
		return true
	case sc.UserID == 0:
		return false
	case a.EnvironmentID == nil || sc.Sees(*a.EnvironmentID):
		return true
	}
	return slices.ContainsFunc(a.Assignments, sc.Sees)
}

// SeenBy is the agent as a scope sees it: the same agent with only the
// assignments to environments the scope sees. Others are none of the
// caller's business, not even their ids.
func (a *Agent) SeenBy(sc Scope) *Agent {
	if sc.Admin {
		return a
	}
	c := *a
	c.Assignments = []int64{}
	for _, id := range a.Assignments {
		if sc.Sees(id) {
			c.Assignments = append(c.Assignments, id)
		}
	}
	return &c
}

// AgentNamed is the agent a request names in its agent_id field, as the
// scope sees it: one that does not exist, or that the scope does not see,
// is bad input (422), as the same id would be for any caller. byID is
// the service's AgentByID.
func AgentNamed(ctx context.Context, byID func(context.Context, int64) (*Agent, error), sc Scope, id int64) (*Agent, error) {
	ag, err := byID(ctx, id)
	if IsNotFound(err) || err == nil && !ag.VisibleIn(sc) {
		return nil, Invalid("agent_id: no agent with id %d", id)
	}
	if err != nil {
		return nil, err
	}
	return ag, nil
}

// RequireIn is UsableIn as the refusal of an agent named for work in
// envID, where it may not run.
func (a *Agent) RequireIn(envID int64) error {
	if a.UsableIn(envID) {
		return nil
	}
	return Invalid("agent_id: agent %d is not assigned to environment %d: assign it there first (PUT /api/agents/%d/assignments)",
		a.ID, envID, a.ID)
}

// UsableIn reports whether the agent may run in an environment: its own,
// one it is assigned to, or any for a global agent.
func (a *Agent) UsableIn(envID int64) bool {
	if a.EnvironmentID == nil || *a.EnvironmentID == envID {
		return true
	}
	for _, id := range a.Assignments {
		if id == envID {
			return true
		}
	}
	return false
}

// AgentFilter narrows ListAgents.
type AgentFilter struct {
	Scope         Scope  // only the agents it sees
	EnvironmentID *int64 // its own agents and those assigned to it
	Kind          string
	Active        *bool
	Q             string
	Page
}

// ListAgents lists agents by name.
func (db *DB) ListAgents(ctx context.Context, f AgentFilter) ([]*Agent, int, error) {
	var where []string
	var args []any
	if cond, scopeArgs := agentInScope(f.Scope); cond != "" {
		where, args = append(where, cond), append(args, scopeArgs...)
	}
	if f.EnvironmentID != nil {
		where = append(where, `(a.environment_id = ? OR a.id IN (SELECT agent_id FROM agent_assignments WHERE environment_id = ?))`)
		args = append(args, *f.EnvironmentID, *f.EnvironmentID)
	}
	if f.Kind != "" {
		where, args = append(where, "a.kind = ?"), append(args, f.Kind)
	}
	if f.Active != nil {
		where, args = append(where, "a.is_active = ?"), append(args, boolInt(*f.Active))
	}
	if q := strings.TrimSpace(f.Q); q != "" {
		where, args = append(where, `(a.name LIKE ? ESCAPE '\' OR a.description LIKE ? ESCAPE '\')`), append(args, likePattern(q), likePattern(q))
	}
	out, total, err := listPage(ctx, db, listQuery{from: "agents a INDEXED BY agents_list", count: "agents a", where: where, args: args,
		columns: agentColumns, order: "a.name COLLATE NOCASE, a.id", what: "agents"}, f.Page, scanAgent)
	if err != nil {
		return nil, 0, err
	}
	if err := db.loadAssignments(ctx, out); err != nil {
		return nil, 0, err
	}
	return out, total, nil
}

// DeleteAgent deletes an agent and its runs.
func (db *DB) DeleteAgent(ctx context.Context, id int64) error {
	return db.deleteByID(ctx, "agents", "agent", id)
}

// SetAgentAssignments replaces the part of an agent's assignments that a
// scope sees with envIDs (each one the scope must see), and keeps the
// assignments to environments it does not see: a caller changes only what
// they can see. It returns every assignment the agent has afterwards;
// SeenBy narrows them for the caller.
func (db *DB) SetAgentAssignments(ctx context.Context, agentID int64, sc Scope, envIDs []int64) ([]int64, error) {
	ids := dedupe(envIDs)
	var out []int64
	err := db.tx(ctx, func(tx *sql.Tx) error {
		var missing []string
		for _, id := range ids {
			var one int
			err := tx.QueryRowContext(ctx, `SELECT 1 FROM environments WHERE id = ?`, id).Scan(&one)
			switch {
			case errors.Is(err, sql.ErrNoRows) || err == nil && !sc.Sees(id):
				missing = append(missing, fmt.Sprint(id))
			case err != nil:
				return err
			}
		}
		if len(missing) > 0 {
			return Invalid("environment_ids: no environment with id %s", strings.Join(missing, ", "))
		}
		del, args := `DELETE FROM agent_assignments WHERE agent_id = ?`, []any{agentID}
		if cond, more := sc.envIn("environment_id"); cond != "" {
			del, args = del+" AND "+cond, append(args, more...)
		}
		if _, err := tx.ExecContext(ctx, del, args...); err != nil {
			return err
		}
		for _, id := range ids {
			if _, err := tx.ExecContext(ctx, `INSERT INTO agent_assignments (agent_id, environment_id) VALUES (?, ?)`, agentID, id); err != nil {
				return translate(err, "assignment")
			}
		}
		if err := campaignsKeepAgent(ctx, tx, agentID); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT environment_id FROM agent_assignments WHERE agent_id = ? ORDER BY environment_id`, agentID)
		if err != nil {
			return err
		}
		out, err = scanIDs(rows)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: set agent assignments: %w", err)
	}
	return out, nil
}

// campaignsKeepAgent refuses, within the transaction that changes an
// agent's assignments, to take away an environment where a campaign has
// the agent: a campaign's agent is always one it may use.
func campaignsKeepAgent(ctx context.Context, tx *sql.Tx, agentID int64) error {
	var campaign string
	var envID int64
	err := tx.QueryRowContext(ctx, `SELECT c.name, c.environment_id FROM seo_campaigns c JOIN agents a ON a.id = c.agent_id
		WHERE c.agent_id = ? AND a.environment_id IS NOT NULL AND c.environment_id != a.environment_id
		AND c.environment_id NOT IN (SELECT environment_id FROM agent_assignments WHERE agent_id = ?) LIMIT 1`, agentID, agentID).
		Scan(&campaign, &envID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	return Conflict("environment_ids: campaign %q of environment %d has this agent; keep that environment, or give the campaign another agent first",
		campaign, envID)
}

// Run statuses.
const (
	RunQueued    = "queued"
	RunRunning   = "running"
	RunSucceeded = "succeeded"
	RunFailed    = "failed"
	RunCancelled = "cancelled"
)

// AgentRun is one execution of an agent.
type AgentRun struct {
	ID            int64
	AgentID       int64
	EnvironmentID *int64
	UserID        *int64
	JobID         *int64
	Input         string
	Variables     map[string]string
	Status        string
	Output        string
	Error         string
	Usage
	QueuedAt   time.Time
	StartedAt  *time.Time
	FinishedAt *time.Time
}

// Finished reports whether the run reached a final status.
func (r *AgentRun) Finished() bool {
	return finalStatus(r.Status)
}

const runColumns = `r.id, r.agent_id, r.environment_id, r.user_id, r.job_id, r.input, r.variables, r.status, r.output, r.error,
	r.model, r.input_tokens, r.output_tokens, r.stop_reason, r.cost_micros, r.queued_at, r.started_at, r.finished_at`

func scanRun(row rowScanner) (*AgentRun, error) {
	var r AgentRun
	var env sql.NullInt64
	var rr runRow
	if err := row.Scan(&r.ID, &r.AgentID, &env, &rr.user, &rr.job, &r.Input, &rr.vars, &r.Status, &r.Output, &r.Error, &r.Model,
		&r.InputTokens, &r.OutputTokens, &r.StopReason, &rr.cost, &rr.queued, &rr.started, &rr.finished); err != nil {
		return nil, err
	}
	r.EnvironmentID = nullID(env)
	if err := rr.into("run", r.ID, &r.UserID, &r.JobID, &r.Variables, &r.Cost, &r.QueuedAt, &r.StartedAt, &r.FinishedAt); err != nil {
		return nil, err
	}
	return &r, nil
}

// NewRun is what CreateRun needs.
type NewRun struct {
	AgentID       int64
	EnvironmentID *int64
	UserID        *int64
	Input         string
	Variables     map[string]string
	// Refused, when set, records the run failed at once with this error: an
	// attempt that could not start, kept so the runs list shows it.
	Refused string
}

// CreateRun records a queued run (or a refused one, see NewRun.Refused).
func (db *DB) CreateRun(ctx context.Context, n NewRun) (*AgentRun, error) {
	var run *AgentRun
	err := db.tx(ctx, func(tx *sql.Tx) error {
		var err error
		run, err = db.insertRunTx(ctx, tx, n)
		return err
	})
	if err != nil {
		return nil, err
	}
	return run, nil
}

// CreateRunWithJob records a queued run and queues the job that carries it
// out, in one transaction: there is never a run without its job, nor a job
// without its run. The caller tells the job runner (jobs.Runner.Signal).
func (db *DB) CreateRunWithJob(ctx context.Context, n NewRun, j RunJob) (*AgentRun, error) {
	if n.Refused != "" {
		return nil, Invalid("a refused run has no job")
	}
	var run *AgentRun
	err := db.tx(ctx, func(tx *sql.Tx) error {
		r, err := db.insertRunTx(ctx, tx, n)
		if err != nil {
			return err
		}
		r.JobID, err = db.insertRunJobTx(ctx, tx, "agent_runs", r.ID, j)
		run = r
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: create run: %w", err)
	}
	return run, nil
}

// insertRunTx inserts a run inside tx and returns it as stored.
func (db *DB) insertRunTx(ctx context.Context, tx *sql.Tx, n NewRun) (*AgentRun, error) {
	vars := variablesJSON(n.Variables)
	now := db.now()
	status, finished := RunQueued, any(nil)
	if n.Refused != "" {
		status, finished = RunFailed, now
	}
	r, err := scanRun(tx.QueryRowContext(ctx, `INSERT INTO agent_runs (agent_id, environment_id, user_id, input, variables, status, error,
		queued_at, finished_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING `+returning(runColumns),
		n.AgentID, n.EnvironmentID, n.UserID, n.Input, vars, status, n.Refused, now, finished))
	if err != nil {
		return nil, translate(err, "run")
	}
	return r, nil
}

// RunByID finds a run.
func (db *DB) RunByID(ctx context.Context, id int64) (*AgentRun, error) {
	return findRow(ctx, db, scanRun, "run", `SELECT `+runColumns+` FROM agent_runs r WHERE r.id = ?`, id)
}

// StartRun marks a queued run running; false if it is no longer queued
// (cancelled meanwhile).
func (db *DB) StartRun(ctx context.Context, id int64) (bool, error) {
	return db.startRun(ctx, "agent_runs", "run", id, true)
}

// FinishRun records a run's end. A run already finished keeps its first
// ending (a cancel that raced with completion), and takes the usage (see
// finishTx).
func (db *DB) FinishRun(ctx context.Context, id int64, o RunOutcome) (*AgentRun, error) {
	err := db.tx(ctx, func(tx *sql.Tx) error {
		_, err := db.finishTx(ctx, tx, agentRunTable, id, o)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: finish run: %w", err)
	}
	return db.runByIDWriter(ctx, id)
}

var agentRunTable = generationTable{table: "agent_runs", unfinished: runUnfinished,
	ending: func(o Outcome) []column { return []column{{"output", o.Output}} }}

// RequeueRun puts a run back to queued after a retryable failure.
func (db *DB) RequeueRun(ctx context.Context, id int64, errText string) error {
	if _, err := db.exec(ctx, `UPDATE agent_runs SET status = 'queued', error = ? WHERE id = ? AND status = 'running'`, errText, id); err != nil {
		return fmt.Errorf("store: requeue run: %w", err)
	}
	return nil
}

func (db *DB) runByIDWriter(ctx context.Context, id int64) (*AgentRun, error) {
	return findIn(ctx, db.w, scanRun, "run", `SELECT `+runColumns+` FROM agent_runs r WHERE r.id = ?`, id)
}

// RunFilter narrows ListRuns.
type RunFilter struct {
	AgentID *int64
	Status  string
	Scope   Scope // only runs in its environments, and its caller's own outside any
	Page
}

// ListRuns lists runs, newest first.
func (db *DB) ListRuns(ctx context.Context, f RunFilter) ([]*AgentRun, int, error) {
	var where []string
	var args []any
	if f.AgentID != nil {
		where, args = append(where, "r.agent_id = ?"), append(args, *f.AgentID)
	}
	if f.Status != "" {
		where, args = append(where, "r.status = ?"), append(args, f.Status)
	}
	if cond, scopeArgs := f.Scope.ownedIn("r.environment_id", "r.user_id"); cond != "" {
		where, args = append(where, cond), append(args, scopeArgs...)
	}
	return listPage(ctx, db, listQuery{from: "agent_runs r", where: where, args: args, columns: runColumns,
		order: "r.id DESC", what: "runs"}, f.Page, scanRun)
}

// FailOrphanRuns ends the runs left queued or running with no live job to
// finish them (their job ended while the hook that closes its run could not
// write, or the run predates runs and jobs being created together): they
// fail with reason. Runs whose
// job is still queued or running are left to the job. It runs at start-up,
// before the server serves, and says how many it ended.
func (db *DB) FailOrphanRuns(ctx context.Context, reason string) (int64, error) {
	return db.failOrphans(ctx, "agent_runs", runUnfinished, "runs", reason)
}
