package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Price is what a model costs, in US dollars per million tokens.
type Price struct {
	Input       float64  `json:"input"`
	Output      float64  `json:"output"`
	CachedInput *float64 `json:"cached_input"` // nil: cached input costs Input
}

// AISettings are the generation defaults of one level: global
// (EnvironmentID nil) or one environment. A nil field inherits from the
// level above (the environment from global, global from built-in defaults).
type AISettings struct {
	EnvironmentID   *int64
	CredentialID    *int64
	Model           *string
	Temperature     *float64
	MaxOutputTokens *int
	Tone            *string
	Language        *string
	TargetWordCount *int
	MonthlyBudget   *Micros // each environment's monthly budget
	// MonthlyBudgetTokens is each environment's monthly budget in tokens
	// (input and output).
	MonthlyBudgetTokens *int64
	PriceOverrides      map[string]Price
	// ContextWindows overrides the engine's built-in context windows:
	// model id or family to tokens.
	ContextWindows map[string]int
	UpdatedAt      *time.Time
}

// AISettingsFor returns the settings row of a level; an empty one (all
// inherited) when none was saved.
func (db *DB) AISettingsFor(ctx context.Context, envID *int64) (*AISettings, error) {
	q := `SELECT credential_id, model, temperature, max_output_tokens, tone, language, target_word_count,
		monthly_budget_micros, monthly_budget_tokens, price_overrides, context_windows, updated_at FROM ai_settings WHERE `
	var row *sql.Row
	if envID == nil {
		row = db.r.QueryRowContext(ctx, q+`environment_id IS NULL`)
	} else {
		row = db.r.QueryRowContext(ctx, q+`environment_id = ?`, *envID)
	}
	s := &AISettings{EnvironmentID: envID, PriceOverrides: map[string]Price{}, ContextWindows: map[string]int{}}
	var cred, maxTok, words sql.NullInt64
	var model, tone, lang sql.NullString
	var temp sql.NullFloat64
	var budget, budgetTokens sql.NullInt64
	var prices, windows, updated string
	err := row.Scan(&cred, &model, &temp, &maxTok, &tone, &lang, &words, &budget, &budgetTokens, &prices, &windows, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: read ai settings: %w", err)
	}
	if cred.Valid {
		s.CredentialID = &cred.Int64
	}
	if model.Valid {
		s.Model = &model.String
	}
	if temp.Valid {
		s.Temperature = &temp.Float64
	}
	if maxTok.Valid {
		v := int(maxTok.Int64)
		s.MaxOutputTokens = &v
	}
	if tone.Valid {
		s.Tone = &tone.String
	}
	if lang.Valid {
		s.Language = &lang.String
	}
	if words.Valid {
		v := int(words.Int64)
		s.TargetWordCount = &v
	}
	if budget.Valid {
		s.MonthlyBudget = nullMicros(budget)
	}
	if budgetTokens.Valid {
		s.MonthlyBudgetTokens = &budgetTokens.Int64
	}
	if err := json.Unmarshal([]byte(prices), &s.PriceOverrides); err != nil {
		return nil, fmt.Errorf("store: ai settings price overrides: %w", err)
	}
	if err := json.Unmarshal([]byte(windows), &s.ContextWindows); err != nil {
		return nil, fmt.Errorf("store: ai settings context windows: %w", err)
	}
	t := parseTime(updated)
	s.UpdatedAt = &t
	return s, nil
}

// PutAISettings replaces the settings row of s's level.
func (db *DB) PutAISettings(ctx context.Context, s AISettings) (*AISettings, error) {
	if s.PriceOverrides == nil {
		s.PriceOverrides = map[string]Price{}
	}
	if s.ContextWindows == nil {
		s.ContextWindows = map[string]int{}
	}
	prices, err := json.Marshal(s.PriceOverrides)
	if err != nil {
		return nil, err
	}
	windows, err := json.Marshal(s.ContextWindows)
	if err != nil {
		return nil, err
	}
	err = db.tx(ctx, func(tx *sql.Tx) error {
		if s.EnvironmentID == nil {
			_, err = tx.ExecContext(ctx, `DELETE FROM ai_settings WHERE environment_id IS NULL`)
		} else {
			_, err = tx.ExecContext(ctx, `DELETE FROM ai_settings WHERE environment_id = ?`, *s.EnvironmentID)
		}
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO ai_settings (environment_id, credential_id, model, temperature, max_output_tokens,
			tone, language, target_word_count, monthly_budget_micros, monthly_budget_tokens, price_overrides, context_windows, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			s.EnvironmentID, s.CredentialID, s.Model, s.Temperature, s.MaxOutputTokens, s.Tone, s.Language, s.TargetWordCount,
			s.MonthlyBudget, s.MonthlyBudgetTokens, string(prices), string(windows), db.now())
		return translate(err, "AI content setting")
	})
	if err != nil {
		return nil, err
	}
	return db.AISettingsFor(ctx, s.EnvironmentID)
}
