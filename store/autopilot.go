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

// The autopilot of an environment (migration 0018): its state and config.
// Its runs are in autopilot_runs.go.

// Autopilot states.
const (
	AutopilotStopped = "stopped"
	AutopilotRunning = "running"
	AutopilotPaused  = "paused"
)

// Why an autopilot is paused.
const (
	PauseManual        = "manual"
	PauseDailyBudget   = "daily_budget"
	PauseMonthlyBudget = "monthly_budget"
	PauseDailyLimit    = "daily_limit"
	PauseFailures      = "failures"
)

// AutopilotConfig is what an autopilot works on and within.
type AutopilotConfig struct {
	// CampaignIDs are the campaigns it takes keywords from, in this
	// order; none means every active campaign of the environment.
	CampaignIDs []int64
	// WindowStart and WindowEnd bound when runs start, in minutes after
	// midnight in the environment's time zone: [start, end), 0 to 1440;
	// an end before the start spans midnight.
	WindowStart, WindowEnd int
	MaxPostsPerDay         int
	// DailyBudget and MonthlyBudget bound the spend of the environment
	// (every usage source); nil is no bound.
	DailyBudget, MonthlyBudget *Micros
	// DailyBudgetTokens and MonthlyBudgetTokens bound its tokens (input
	// and output, priced or not); nil is no bound.
	DailyBudgetTokens, MonthlyBudgetTokens *int64
	// PostStatus is "campaign" (each campaign's own), "draft" or
	// "publish".
	PostStatus string
	// AutoResume resumes a budget or limit pause at the next day or
	// month.
	AutoResume bool
	// Variables are given to every generation, beside the keyword's.
	Variables map[string]string
}

// DefaultAutopilotConfig is the config of an autopilot nobody set up: the
// whole day, one post a day, no budget, each campaign's post status.
func DefaultAutopilotConfig() AutopilotConfig {
	return AutopilotConfig{CampaignIDs: []int64{}, WindowEnd: 1440, MaxPostsPerDay: 1, PostStatus: "campaign", AutoResume: true,
		Variables: map[string]string{}}
}

// Autopilot is an environment's autopilot.
type Autopilot struct {
	EnvironmentID int64
	State         string
	PauseReason   string
	PauseDetail   string
	// ResumeAt is when a pause ends by itself; nil: only by hand.
	ResumeAt *time.Time
	// Failures counts the runs that failed in a row.
	Failures int
	// IdleUntil is when the scheduler looks again after it found nothing
	// to do, and Note says what it found.
	IdleUntil      *time.Time
	Note           string
	ChangedBy      *int64
	StateChangedAt *time.Time
	UpdatedAt      *time.Time // nil: never configured nor started
	Config         AutopilotConfig
}

const autopilotColumns = `a.environment_id, a.state, a.pause_reason, a.pause_detail, a.resume_at, a.window_start, a.window_end,
	a.max_posts_per_day, a.daily_budget_micros, a.monthly_budget_micros, a.daily_budget_tokens, a.monthly_budget_tokens, a.post_status, a.auto_resume, a.variables, a.failures,
	a.idle_until, a.note, a.changed_by, a.state_changed_at, a.updated_at`

func scanAutopilot(row rowScanner) (*Autopilot, error) {
	var a Autopilot
	var resume, idle, changedAt sql.NullString
	var daily, monthly, dailyTokens, monthlyTokens, by sql.NullInt64
	var vars, updated string
	c := &a.Config
	if err := row.Scan(&a.EnvironmentID, &a.State, &a.PauseReason, &a.PauseDetail, &resume, &c.WindowStart, &c.WindowEnd,
		&c.MaxPostsPerDay, &daily, &monthly, &dailyTokens, &monthlyTokens, &c.PostStatus, &c.AutoResume, &vars, &a.Failures, &idle, &a.Note, &by, &changedAt,
		&updated); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(vars), &c.Variables); err != nil {
		return nil, fmt.Errorf("autopilot %d variables: %w", a.EnvironmentID, err)
	}
	c.DailyBudget, c.MonthlyBudget = nullMicros(daily), nullMicros(monthly)
	c.DailyBudgetTokens, c.MonthlyBudgetTokens = nullID(dailyTokens), nullID(monthlyTokens)
	a.ResumeAt, a.IdleUntil, a.StateChangedAt = parseNullTime(resume), parseNullTime(idle), parseNullTime(changedAt)
	a.ChangedBy = nullID(by)
	u := parseTime(updated)
	a.UpdatedAt = &u
	c.CampaignIDs = []int64{}
	return &a, nil
}

// AutopilotOf returns an environment's autopilot: as stored, or stopped
// with the default config when it was never set up. It does not check
// that the environment exists.
func (db *DB) AutopilotOf(ctx context.Context, envID int64) (*Autopilot, error) {
	return db.autopilotOf(ctx, db.r, envID)
}

func (db *DB) autopilotOf(ctx context.Context, q querier, envID int64) (*Autopilot, error) {
	a, err := scanAutopilot(q.QueryRowContext(ctx, `SELECT `+autopilotColumns+` FROM autopilots a WHERE a.environment_id = ?`, envID))
	if errors.Is(err, sql.ErrNoRows) {
		return &Autopilot{EnvironmentID: envID, State: AutopilotStopped, Config: DefaultAutopilotConfig()}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: find autopilot: %w", err)
	}
	if err := autopilotCampaigns(ctx, q, []*Autopilot{a}); err != nil {
		return nil, err
	}
	return a, nil
}

// autopilotCampaigns fills the campaigns of autopilots, in their order.
func autopilotCampaigns(ctx context.Context, q querier, as []*Autopilot) error {
	if len(as) == 0 {
		return nil
	}
	byEnv := make(map[int64]*Autopilot, len(as))
	ids := make([]int64, len(as))
	for i, a := range as {
		byEnv[a.EnvironmentID], ids[i] = a, a.EnvironmentID
	}
	cond, args := idList("environment_id", ids)
	rows, err := q.QueryContext(ctx, `SELECT environment_id, campaign_id FROM autopilot_campaigns WHERE `+cond+` ORDER BY environment_id, position`, args...)
	if err != nil {
		return fmt.Errorf("store: autopilot campaigns: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var env, campaign int64
		if err := rows.Scan(&env, &campaign); err != nil {
			return fmt.Errorf("store: autopilot campaigns: %w", err)
		}
		if a := byEnv[env]; a != nil {
			a.Config.CampaignIDs = append(a.Config.CampaignIDs, campaign)
		}
	}
	return rows.Err()
}

// ensureAutopilot makes an environment's autopilot row, with the
// defaults, if it has none.
func (db *DB) ensureAutopilot(ctx context.Context, tx *sql.Tx, envID int64) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO autopilots (environment_id, updated_at) VALUES (?, ?) ON CONFLICT DO NOTHING`, envID, db.now())
	return translate(err, "autopilot")
}

// PutAutopilotConfig replaces an autopilot's config. Each campaign must be
// one of the environment's (invalid otherwise). A new config clears what
// the scheduler noted when it last found nothing to do.
func (db *DB) PutAutopilotConfig(ctx context.Context, envID int64, c AutopilotConfig, by *int64) (*Autopilot, error) {
	if c.Variables == nil {
		c.Variables = map[string]string{}
	}
	vars, err := json.Marshal(c.Variables)
	if err != nil {
		return nil, &Error{Kind: KindInvalid, Message: "the variables cannot be encoded as JSON", Err: err}
	}
	var out *Autopilot
	err = db.tx(ctx, func(tx *sql.Tx) error {
		if err := db.ensureAutopilot(ctx, tx, envID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE autopilots SET window_start = ?, window_end = ?, max_posts_per_day = ?, daily_budget_micros = ?,
			monthly_budget_micros = ?, daily_budget_tokens = ?, monthly_budget_tokens = ?, post_status = ?, auto_resume = ?, variables = ?, idle_until = NULL, note = '', changed_by = ?, updated_at = ?
			WHERE environment_id = ?`, c.WindowStart, c.WindowEnd, c.MaxPostsPerDay, c.DailyBudget, c.MonthlyBudget, c.DailyBudgetTokens, c.MonthlyBudgetTokens, c.PostStatus,
			c.AutoResume, string(vars), by, db.now(), envID); err != nil {
			return translate(err, "autopilot config")
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM autopilot_campaigns WHERE environment_id = ?`, envID); err != nil {
			return err
		}
		for i, id := range firstOfEach(c.CampaignIDs) {
			var env int64
			err := tx.QueryRowContext(ctx, `SELECT environment_id FROM seo_campaigns WHERE id = ?`, id).Scan(&env)
			if errors.Is(err, sql.ErrNoRows) || err == nil && env != envID {
				return Invalid("campaign_ids: no campaign with id %d in this environment", id)
			}
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO autopilot_campaigns (environment_id, campaign_id, position) VALUES (?, ?, ?)`,
				envID, id, i+1); err != nil {
				return err
			}
		}
		var err error
		out, err = db.autopilotOf(ctx, tx, envID)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: put autopilot config: %w", err)
	}
	return out, nil
}

// AutopilotState is a change of an autopilot's state.
type AutopilotState struct {
	// From lists the states the change applies to; from any other it is
	// not made.
	From        []string
	State       string
	PauseReason string
	PauseDetail string
	ResumeAt    *time.Time
	By          *int64
	// ResetFailures starts the count of failed runs in a row again.
	ResetFailures bool
}

// SetAutopilotState changes an autopilot's state when it is in one of
// ch.From, and clears what the scheduler noted. It returns the autopilot
// as it is after, and whether it changed it.
func (db *DB) SetAutopilotState(ctx context.Context, envID int64, ch AutopilotState) (*Autopilot, bool, error) {
	var out *Autopilot
	changed := false
	err := db.tx(ctx, func(tx *sql.Tx) error {
		if err := db.ensureAutopilot(ctx, tx, envID); err != nil {
			return err
		}
		var state string
		if err := tx.QueryRowContext(ctx, `SELECT state FROM autopilots WHERE environment_id = ?`, envID).Scan(&state); err != nil {
			return err
		}
		if slices.Contains(ch.From, state) {
			var resume any
			if ch.ResumeAt != nil {
				resume = fmtTime(*ch.ResumeAt)
			}
			now := db.now()
			if _, err := tx.ExecContext(ctx, `UPDATE autopilots SET state = ?, pause_reason = ?, pause_detail = ?, resume_at = ?,
				idle_until = NULL, note = '', changed_by = ?, state_changed_at = ?, updated_at = ?,
				failures = CASE WHEN ? THEN 0 ELSE failures END WHERE environment_id = ?`,
				ch.State, ch.PauseReason, ch.PauseDetail, resume, ch.By, now, now, ch.ResetFailures, envID); err != nil {
				return translate(err, "autopilot")
			}
			changed = true
		}
		var err error
		out, err = db.autopilotOf(ctx, tx, envID)
		return err
	})
	if err != nil {
		return nil, false, fmt.Errorf("store: set autopilot state: %w", err)
	}
	return out, changed, nil
}

// SetAutopilotIdle records that the scheduler found nothing to do for an
// autopilot, why, and when it looks again.
func (db *DB) SetAutopilotIdle(ctx context.Context, envID int64, until time.Time, note string) error {
	if _, err := db.exec(ctx, `UPDATE autopilots SET idle_until = ?, note = ? WHERE environment_id = ?`, fmtTime(until), note, envID); err != nil {
		return fmt.Errorf("store: autopilot idle: %w", err)
	}
	return nil
}

// ScheduledAutopilots are the autopilots the scheduler looks after: those
// running, and those paused that resume by themselves.
func (db *DB) ScheduledAutopilots(ctx context.Context) ([]*Autopilot, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT `+autopilotColumns+` FROM autopilots a
		WHERE a.state = 'running' OR (a.state = 'paused' AND a.resume_at IS NOT NULL) ORDER BY a.environment_id`)
	if err != nil {
		return nil, fmt.Errorf("store: scheduled autopilots: %w", err)
	}
	var out []*Autopilot
	for rows.Next() {
		a, err := scanAutopilot(rows)
		if err != nil {
			rows.Close()
			return nil, fmt.Errorf("store: scheduled autopilots: %w", err)
		}
		out = append(out, a)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: scheduled autopilots: %w", err)
	}
	if err := autopilotCampaigns(ctx, db.r, out); err != nil {
		return nil, err
	}
	return out, nil
}
