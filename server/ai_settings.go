package server

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/copydesk/copydesk/store"
)

// AI content settings (/api/settings/ai-content): the generation defaults,
// global and overridden per environment (?environment_id=). Admins only.
func (s *Server) registerAISettingsRoutes() {
	const tag = "Settings"
	s.handle(Route{Method: "GET", Path: "/api/settings/ai-content", Tag: tag, Access: adminOnly, Errors: []int{404},
		Summary: "AI content settings: global, an environment's override, and the effective result", Query: aiSettingsQuery{},
		Data: aiSettingsResponse{}}, s.getAISettings)
	s.handle(Route{Method: "PUT", Path: "/api/settings/ai-content", Tag: tag, Access: adminOnly, Errors: []int{404},
		Summary: "Replace the global AI content settings, or an environment's override", Query: aiSettingsQuery{},
		Body: aiSettingsLevel{}, Data: aiSettingsResponse{},
		Notes: "The body replaces the whole level: a field left out or null inherits (an environment from the global settings, " +
			"global from the built-in defaults). Temperature 0 to 2; max_output_tokens 1 to 200000; the credential must be an AI provider " +
			"usable at that level. price_overrides maps a model id (or id prefix) to prices in USD per million tokens."}, s.putAISettings)
}

type aiSettingsQuery struct {
	EnvironmentID *int64 `form:"environment_id" binding:"omitempty,gt=0" doc:"the environment whose override to read or write; left out: global"`
}

// aiSettingsLevel is one level's saved settings; null fields inherit.
type aiSettingsLevel struct {
	CredentialID     *int64                 `json:"credential_id" binding:"omitempty,gt=0"`
	Model            *string                `json:"model" binding:"omitempty,max=200"`
	Temperature      *float64               `json:"temperature" binding:"omitempty,gte=0,lte=2"`
	MaxOutputTokens  *int                   `json:"max_output_tokens" binding:"omitempty,gte=1,lte=200000"`
	Tone             *string                `json:"tone" binding:"omitempty,max=100"`
	Language         *string                `json:"language" binding:"omitempty,max=35"`
	TargetWordCount  *int                   `json:"target_word_count" binding:"omitempty,gte=50,lte=20000"`
	MonthlyBudgetUSD *float64               `json:"monthly_budget_usd" binding:"omitempty,gte=0" doc:"each environment's monthly budget (global: the default of every environment); crossing 80% and 100% notifies its users once a month"`
	PriceOverrides   map[string]store.Price `json:"price_overrides"`
}

type aiSettingsEffective struct {
	CredentialID     *int64                 `json:"credential_id"`
	Model            string                 `json:"model"`
	Temperature      float64                `json:"temperature"`
	MaxOutputTokens  int                    `json:"max_output_tokens"`
	Tone             string                 `json:"tone"`
	Language         string                 `json:"language"`
	TargetWordCount  int                    `json:"target_word_count"`
	MonthlyBudgetUSD *float64               `json:"monthly_budget_usd"`
	PriceOverrides   map[string]store.Price `json:"price_overrides"`
}

type aiSettingsResponse struct {
	EnvironmentID *int64              `json:"environment_id"`
	Global        aiSettingsLevel     `json:"global"`
	Override      *aiSettingsLevel    `json:"override" doc:"the environment's own settings; null without environment_id"`
	Effective     aiSettingsEffective `json:"effective"`
	UpdatedAt     *time.Time          `json:"updated_at"`
}

func levelJSON(s *store.AISettings) aiSettingsLevel {
	return aiSettingsLevel{CredentialID: s.CredentialID, Model: s.Model, Temperature: s.Temperature, MaxOutputTokens: s.MaxOutputTokens,
		Tone: s.Tone, Language: s.Language, TargetWordCount: s.TargetWordCount, MonthlyBudgetUSD: s.MonthlyBudgetUSD,
		PriceOverrides: s.PriceOverrides}
}

func (s *Server) aiSettingsView(ctx context.Context, envID *int64) (*aiSettingsResponse, error) {
	global, err := s.db.AISettingsFor(ctx, nil)
	if err != nil {
		return nil, err
	}
	out := &aiSettingsResponse{EnvironmentID: envID, Global: levelJSON(global), UpdatedAt: global.UpdatedAt}
	if envID != nil {
		if _, err := s.db.EnvironmentByID(ctx, *envID); err != nil {
			return nil, err
		}
		own, err := s.db.AISettingsFor(ctx, envID)
		if err != nil {
			return nil, err
		}
		lvl := levelJSON(own)
		out.Override, out.UpdatedAt = &lvl, own.UpdatedAt
	}
	eff, err := s.engine.Effective(ctx, envID)
	if err != nil {
		return nil, err
	}
	out.Effective = aiSettingsEffective{CredentialID: eff.CredentialID, Model: eff.Model, Temperature: eff.Temperature,
		MaxOutputTokens: eff.MaxOutputTokens, Tone: eff.Tone, Language: eff.Language, TargetWordCount: eff.TargetWordCount,
		MonthlyBudgetUSD: eff.MonthlyBudgetUSD, PriceOverrides: eff.PriceOverrides}
	return out, nil
}

func (s *Server) getAISettings(c *gin.Context) {
	var q aiSettingsQuery
	if err := bindQuery(c, &q); err != nil {
		fail(c, err)
		return
	}
	view, err := s.aiSettingsView(c.Request.Context(), q.EnvironmentID)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, view, "AI content settings")
}

func (s *Server) putAISettings(c *gin.Context) {
	var q aiSettingsQuery
	if err := bindQuery(c, &q); err != nil {
		fail(c, err)
		return
	}
	var req aiSettingsLevel
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	ctx := c.Request.Context()
	if q.EnvironmentID != nil {
		if _, err := s.db.EnvironmentByID(ctx, *q.EnvironmentID); err != nil {
			fail(c, err)
			return
		}
	}
	if err := s.checkAISettings(ctx, q.EnvironmentID, &req); err != nil {
		fail(c, err)
		return
	}
	if _, err := s.db.PutAISettings(ctx, store.AISettings{EnvironmentID: q.EnvironmentID, CredentialID: req.CredentialID,
		Model: req.Model, Temperature: req.Temperature, MaxOutputTokens: req.MaxOutputTokens, Tone: req.Tone,
		Language: req.Language, TargetWordCount: req.TargetWordCount, MonthlyBudgetUSD: req.MonthlyBudgetUSD,
		PriceOverrides: req.PriceOverrides}); err != nil {
		fail(c, err)
		return
	}
	view, err := s.aiSettingsView(ctx, q.EnvironmentID)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, view, "AI content settings saved")
}

// checkAICredential is the one rule for choosing a credential to generate
// with (in settings or on an agent): it exists, it is an AI provider, and it
// is global or belongs to the environment envID (nil: global only).
func (s *Server) checkAICredential(ctx context.Context, credID, envID *int64) error {
	if credID == nil {
		return nil
	}
	cred, err := s.db.CredentialByID(ctx, *credID)
	if store.IsNotFound(err) {
		return store.Invalid("credential_id: no credential with id %d", *credID)
	}
	if err != nil {
		return err
	}
	if !store.IsAIProvider(cred.Provider) {
		return store.Invalid("credential_id: credential %d is a %s credential, not an AI provider", cred.ID, cred.Provider)
	}
	if cred.EnvironmentID != nil && (envID == nil || *cred.EnvironmentID != *envID) {
		return store.Invalid("credential_id: credential %d belongs to environment %d and cannot be used here", cred.ID, *cred.EnvironmentID)
	}
	return nil
}

// checkAISettings applies the rules the binding tags cannot express.
func (s *Server) checkAISettings(ctx context.Context, envID *int64, req *aiSettingsLevel) error {
	if err := s.checkAICredential(ctx, req.CredentialID, envID); err != nil {
		return err
	}
	if req.Language != nil {
		cfg := store.EnvironmentConfig{Language: *req.Language}
		if err := cfg.Normalize(); err != nil || *req.Language == "" {
			return store.Invalid("language: must be a language tag like en, de or pt-BR")
		}
	}
	for field, p := range map[string]*string{"model": req.Model, "tone": req.Tone} {
		if p != nil {
			*p = strings.TrimSpace(*p)
			if err := noControl(field, *p); err != nil {
				return err
			}
		}
	}
	prices := make(map[string]store.Price, len(req.PriceOverrides))
	for model, p := range req.PriceOverrides {
		model = strings.TrimSpace(model)
		if model == "" || len(model) > 200 || noControl("model", model) != nil {
			return store.Invalid("price_overrides: model ids must be 1 to 200 printable characters")
		}
		if p.Input < 0 || p.Output < 0 || (p.CachedInput != nil && *p.CachedInput < 0) {
			return store.Invalid("price_overrides.%s: prices must not be negative", model)
		}
		prices[model] = p
	}
	req.PriceOverrides = prices
	if len(req.PriceOverrides) > 500 {
		return store.Invalid("price_overrides: at most 500 models")
	}
	return nil
}
