// Package aisetting holds the rules of the AI content settings: the
// generation defaults saved globally and overridden per environment, what a
// level may hold, and the view of a level beside the global one and the
// effective result. Only admins read and change them.
package aisetting

import (
	"context"
	"math"
	"strings"
	"time"

	"github.com/copydesk/copydesk/server/engine"
	"github.com/copydesk/copydesk/server/environment"
	"github.com/copydesk/copydesk/server/valid"
	"github.com/copydesk/copydesk/store"
)

// Store is what the service needs of the store.
type Store interface {
	AISettingsFor(ctx context.Context, envID *int64) (*store.AISettings, error)
	PutAISettings(ctx context.Context, s store.AISettings) (*store.AISettings, error)
}

// Credentials holds the rule for a credential to generate with
// (server/credential).
type Credentials interface {
	CheckAI(ctx context.Context, credID, envID *int64) error
}

// Resolver merges the levels over the built-in defaults (server/engine),
// the same way a generation does.
type Resolver interface {
	Effective(ctx context.Context, envID *int64) (engine.Effective, error)
}

// Service implements the AI content settings rules.
type Service struct {
	db    Store
	envs  environment.Getter
	creds Credentials
	eff   Resolver
}

// New returns the service.
func New(db Store, envs environment.Getter, creds Credentials, eff Resolver) *Service {
	return &Service{db: db, envs: envs, creds: creds, eff: eff}
}

// Level is one level's saved settings; a nil field inherits (an
// environment from the global level, the global level from the built-in
// defaults).
type Level struct {
	CredentialID        *int64
	Model               *string
	Temperature         *float64
	MaxOutputTokens     *int
	Tone                *string
	Language            *string
	TargetWordCount     *int
	MonthlyBudgetUSD    *float64
	MonthlyBudgetTokens *int64
	PriceOverrides      map[string]store.Price
	ContextWindows      map[string]int
}

// View shows one level: the global settings, the environment's own (nil
// for the global level) and what a generation there would use.
type View struct {
	EnvironmentID *int64
	Global        Level
	Override      *Level
	Effective     engine.Effective
	UpdatedAt     *time.Time // of the level asked for; nil while never saved
}

// Get returns the view of the global level (envID nil) or of an
// environment's.
func (s *Service) Get(ctx context.Context, sc store.Scope, envID *int64) (*View, error) {
	if err := sc.RequireAdmin(); err != nil {
		return nil, err
	}
	global, err := s.db.AISettingsFor(ctx, nil)
	if err != nil {
		return nil, err
	}
	v := &View{EnvironmentID: envID, Global: levelOf(global), UpdatedAt: global.UpdatedAt}
	if envID != nil {
		if _, err := s.envs.Get(ctx, sc, *envID); err != nil {
			return nil, err
		}
		own, err := s.db.AISettingsFor(ctx, envID)
		if err != nil {
			return nil, err
		}
		lvl := levelOf(own)
		v.Override, v.UpdatedAt = &lvl, own.UpdatedAt
	}
	if v.Effective, err = s.eff.Effective(ctx, envID); err != nil {
		return nil, err
	}
	return v, nil
}

// Fields names the fields of a Level a caller set, by their JSON names
// (those the errors name).
type Fields map[string]bool

// AllFields sets every field of a level: what lvl leaves nil inherits.
var AllFields = Fields{"credential_id": true, "model": true, "temperature": true, "max_output_tokens": true,
	"tone": true, "language": true, "target_word_count": true, "monthly_budget_usd": true, "monthly_budget_tokens": true,
	"price_overrides": true, "context_windows": true}

// Put changes a level, global (envID nil) or an environment's, and returns
// its view. The fields in given take lvl's values (nil: inherit again); the
// others keep what was saved, so a client that leaves a field out never
// resets it.
func (s *Service) Put(ctx context.Context, sc store.Scope, envID *int64, lvl Level, given Fields) (*View, error) {
	if err := sc.RequireAdmin(); err != nil {
		return nil, err
	}
	if envID != nil {
		if _, err := s.envs.Get(ctx, sc, *envID); err != nil {
			return nil, err
		}
	}
	saved, err := s.db.AISettingsFor(ctx, envID)
	if err != nil {
		return nil, err
	}
	lvl.keepUnset(levelOf(saved), given)
	if err := lvl.normalize(); err != nil {
		return nil, err
	}
	// The credential must be usable at this level: a global one anywhere,
	// an environment's only in its own override.
	if err := s.creds.CheckAI(ctx, lvl.CredentialID, envID); err != nil {
		return nil, err
	}
	if _, err := s.db.PutAISettings(ctx, store.AISettings{EnvironmentID: envID, CredentialID: lvl.CredentialID,
		Model: lvl.Model, Temperature: lvl.Temperature, MaxOutputTokens: lvl.MaxOutputTokens, Tone: lvl.Tone,
		Language: lvl.Language, TargetWordCount: lvl.TargetWordCount, MonthlyBudget: store.MicrosOfUSD(lvl.MonthlyBudgetUSD),
		MonthlyBudgetTokens: lvl.MonthlyBudgetTokens,
		PriceOverrides:      lvl.PriceOverrides, ContextWindows: lvl.ContextWindows}); err != nil {
		return nil, err
	}
	return s.Get(ctx, sc, envID)
}

// keepUnset gives the fields not in given their saved values.
func (l *Level) keepUnset(saved Level, given Fields) {
	keep(given, "credential_id", &l.CredentialID, saved.CredentialID)
	keep(given, "model", &l.Model, saved.Model)
	keep(given, "temperature", &l.Temperature, saved.Temperature)
	keep(given, "max_output_tokens", &l.MaxOutputTokens, saved.MaxOutputTokens)
	keep(given, "tone", &l.Tone, saved.Tone)
	keep(given, "language", &l.Language, saved.Language)
	keep(given, "target_word_count", &l.TargetWordCount, saved.TargetWordCount)
	keep(given, "monthly_budget_usd", &l.MonthlyBudgetUSD, saved.MonthlyBudgetUSD)
	keep(given, "monthly_budget_tokens", &l.MonthlyBudgetTokens, saved.MonthlyBudgetTokens)
	keep(given, "price_overrides", &l.PriceOverrides, saved.PriceOverrides)
	keep(given, "context_windows", &l.ContextWindows, saved.ContextWindows)
}

func keep[T any](given Fields, field string, dst *T, saved T) {
	if !given[field] {
		*dst = saved
	}
}

func levelOf(s *store.AISettings) Level {
	return Level{CredentialID: s.CredentialID, Model: s.Model, Temperature: s.Temperature, MaxOutputTokens: s.MaxOutputTokens,
		Tone: s.Tone, Language: s.Language, TargetWordCount: s.TargetWordCount, MonthlyBudgetUSD: store.USDOf(s.MonthlyBudget),
		MonthlyBudgetTokens: s.MonthlyBudgetTokens,
		PriceOverrides:      s.PriceOverrides, ContextWindows: s.ContextWindows}
}

// Limits of a level, the same as the request binding's.
const (
	maxTemperature  = 2.0
	maxOutputTokens = 200000
	minWordCount    = 50
	maxWordCount    = 20000
	maxModel        = 200
	maxTone         = 100
	maxLanguage     = 35
	maxPriceModels  = 500
	// maxPrice (USD per million tokens) is far above any list price, and
	// small enough that no token count makes a cost overflow to +Inf,
	// which JSON cannot hold.
	maxPrice = 10000
	// maxBudget (USD a month) keeps a budget a finite, sane number.
	maxBudget = 1e9
	// maxBudgetTokens (tokens a month) is far above any use and far below
	// an overflow.
	maxBudgetTokens = 1e15
)

// normalize applies the rules of one level: ranges, one-line texts, a
// language tag, and price overrides keyed by trimmed model ids.
func (l *Level) normalize() error {
	if err := l.checkRanges(); err != nil {
		return err
	}
	for _, t := range []struct {
		field string
		v     *string
		max   int
	}{{"model", l.Model, maxModel}, {"tone", l.Tone, maxTone}} {
		if t.v == nil {
			continue
		}
		*t.v = strings.TrimSpace(*t.v)
		if err := valid.Line(t.field, *t.v); err != nil {
			return err
		}
		if err := valid.MaxLen(t.field, *t.v, t.max); err != nil {
			return err
		}
	}
	if l.Language != nil {
		if err := valid.MaxLen("language", *l.Language, maxLanguage); err != nil {
			return err
		}
		if err := valid.Language("language", *l.Language); err != nil {
			return err
		}
	}
	if err := l.normalizePrices(); err != nil {
		return err
	}
	return l.normalizeContextWindows()
}

func (l *Level) checkRanges() error {
	switch {
	case l.CredentialID != nil && *l.CredentialID <= 0:
		return store.Invalid("credential_id: must be greater than 0")
	case l.Temperature != nil && math.IsNaN(*l.Temperature):
		return store.Invalid("temperature: must be a number")
	case l.Temperature != nil && *l.Temperature < 0:
		return store.Invalid("temperature: must be at least 0")
	case l.Temperature != nil && *l.Temperature > maxTemperature:
		return store.Invalid("temperature: must be at most %g", maxTemperature)
	case l.MaxOutputTokens != nil && *l.MaxOutputTokens < 1:
		return store.Invalid("max_output_tokens: must be at least 1")
	case l.MaxOutputTokens != nil && *l.MaxOutputTokens > maxOutputTokens:
		return store.Invalid("max_output_tokens: must be at most %d", maxOutputTokens)
	case l.TargetWordCount != nil && *l.TargetWordCount < minWordCount:
		return store.Invalid("target_word_count: must be at least %d", minWordCount)
	case l.TargetWordCount != nil && *l.TargetWordCount > maxWordCount:
		return store.Invalid("target_word_count: must be at most %d", maxWordCount)
	case l.MonthlyBudgetUSD != nil && *l.MonthlyBudgetUSD < 0:
		return store.Invalid("monthly_budget_usd: must be at least 0")
	case l.MonthlyBudgetUSD != nil && !(*l.MonthlyBudgetUSD <= maxBudget):
		return store.Invalid("monthly_budget_usd: must be at most %g", float64(maxBudget))
	case l.MonthlyBudgetTokens != nil && *l.MonthlyBudgetTokens < 0:
		return store.Invalid("monthly_budget_tokens: must be at least 0")
	case l.MonthlyBudgetTokens != nil && *l.MonthlyBudgetTokens > maxBudgetTokens:
		return store.Invalid("monthly_budget_tokens: must be at most %d", int64(maxBudgetTokens))
	case l.MonthlyBudgetUSD != nil && *l.MonthlyBudgetUSD > 0 && store.MicrosOf(*l.MonthlyBudgetUSD) == 0:
		return store.Invalid("monthly_budget_usd: must be 0 or at least 0.000001 (budgets are counted in millionths of a dollar)")
	}
	return nil
}

func (l *Level) normalizePrices() error {
	if len(l.PriceOverrides) > maxPriceModels {
		return store.Invalid("price_overrides: at most %d models", maxPriceModels)
	}
	prices := make(map[string]store.Price, len(l.PriceOverrides))
	for model, p := range l.PriceOverrides {
		model = strings.TrimSpace(model)
		if model == "" || len(model) > maxModel || valid.Line("model", model) != nil {
			return store.Invalid("price_overrides: model ids must be 1 to %d printable characters", maxModel)
		}
		if p.Input < 0 || p.Output < 0 || (p.CachedInput != nil && *p.CachedInput < 0) {
			return store.Invalid("price_overrides.%s: prices must not be negative", model)
		}
		if !(p.Input <= maxPrice && p.Output <= maxPrice && (p.CachedInput == nil || *p.CachedInput <= maxPrice)) {
			return store.Invalid("price_overrides.%s: prices must be at most %d USD per million tokens", model, maxPrice)
		}
		prices[model] = p
	}
	l.PriceOverrides = prices
	return nil
}

// maxContextWindow bounds a context window override: above any model's.
const maxContextWindow = 100_000_000

func (l *Level) normalizeContextWindows() error {
	if len(l.ContextWindows) > maxPriceModels {
		return store.Invalid("context_windows: at most %d models", maxPriceModels)
	}
	windows := make(map[string]int, len(l.ContextWindows))
	for model, n := range l.ContextWindows {
		model = strings.TrimSpace(model)
		if model == "" || len(model) > maxModel || valid.Line("model", model) != nil {
			return store.Invalid("context_windows: model ids must be 1 to %d printable characters", maxModel)
		}
		if n < 1 || n > maxContextWindow {
			return store.Invalid("context_windows.%s: must be 1 to %d tokens", model, maxContextWindow)
		}
		windows[model] = n
	}
	l.ContextWindows = windows
	return nil
}
