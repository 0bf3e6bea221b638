package server

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/copydesk/copydesk/server/aisetting"
	"github.com/copydesk/copydesk/server/engine"
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
		Summary: "Change the global AI content settings, or an environment's override", Query: aiSettingsQuery{},
		Body: aiSettingsLevel{}, Data: aiSettingsResponse{},
		Notes: "The fields the body holds replace their saved values; a field left out keeps its value, and a field set to null inherits " +
			"again (an environment from the global settings, global from the built-in defaults). Temperature 0 to 2; max_output_tokens 1 to 200000; the credential must be an AI provider " +
			"usable at that level. price_overrides maps a model id (or id prefix) to prices in USD per million tokens; " +
			"context_windows maps one to its context window in tokens (1 to 100000000), by the same lookup."}, s.putAISettings)
}

type aiSettingsQuery struct {
	EnvironmentID *int64 `form:"environment_id" binding:"omitempty,gt=0" doc:"the environment whose override to read or write; left out: global"`
}

// aiSettingsLevel is one level's saved settings; null fields inherit.
type aiSettingsLevel struct {
	CredentialID        *int64                 `json:"credential_id" binding:"omitempty,gt=0"`
	Model               *string                `json:"model" binding:"omitempty,max=200"`
	Temperature         *float64               `json:"temperature" binding:"omitempty,gte=0,lte=2"`
	MaxOutputTokens     *int                   `json:"max_output_tokens" binding:"omitempty,gte=1,lte=200000"`
	Tone                *string                `json:"tone" binding:"omitempty,max=100"`
	Language            *string                `json:"language" binding:"omitempty,max=35"`
	TargetWordCount     *int                   `json:"target_word_count" binding:"omitempty,gte=50,lte=20000"`
	MonthlyBudgetUSD    *float64               `json:"monthly_budget_usd" binding:"omitempty,gte=0" doc:"each environment's monthly budget in US dollars, kept to the millionth (global: the default of every environment); crossing 80% and 100% notifies its users once a month; calls of a model without a price count nothing toward it"`
	MonthlyBudgetTokens *int64                 `json:"monthly_budget_tokens" binding:"omitempty,gte=0" doc:"each environment's monthly budget in tokens (input and output, every call, priced or not); notifies as monthly_budget_usd does"`
	PriceOverrides      map[string]store.Price `json:"price_overrides"`
	ContextWindows      map[string]int         `json:"context_windows" doc:"model id (or family) to its context window in tokens, over the built-in table; a model found nowhere is assumed to have 8192"`
}

type aiSettingsEffective struct {
	CredentialID        *int64                 `json:"credential_id" doc:"chosen by a level, or, when none chooses one, the only AI credential usable here; null: none, or several and none chosen"`
	Model               string                 `json:"model"`
	Temperature         float64                `json:"temperature"`
	MaxOutputTokens     int                    `json:"max_output_tokens"`
	Tone                string                 `json:"tone"`
	Language            string                 `json:"language"`
	TargetWordCount     int                    `json:"target_word_count"`
	MonthlyBudgetUSD    *float64               `json:"monthly_budget_usd"`
	MonthlyBudgetTokens *int64                 `json:"monthly_budget_tokens"`
	PriceOverrides      map[string]store.Price `json:"price_overrides"`
	ContextWindows      map[string]int         `json:"context_windows" doc:"model id (or family) to its context window in tokens, over the built-in table; a model found nowhere is assumed to have 8192"`
}

type aiSettingsResponse struct {
	EnvironmentID *int64              `json:"environment_id"`
	Global        aiSettingsLevel     `json:"global"`
	Override      *aiSettingsLevel    `json:"override" doc:"the environment's own settings; null without environment_id"`
	Effective     aiSettingsEffective `json:"effective"`
	UpdatedAt     *Timestamp          `json:"updated_at"`
}

// aiSettingsLevel and aiSettingsEffective are the wire forms of
// aisetting.Level and engine.Effective: the same fields in the same order,
// so one converts to the other.
func aiSettingsJSON(v *aisetting.View) aiSettingsResponse {
	out := aiSettingsResponse{EnvironmentID: v.EnvironmentID, Global: aiSettingsLevel(v.Global),
		Effective: aiSettingsEffectiveJSON(v.Effective), UpdatedAt: (*Timestamp)(v.UpdatedAt)}
	if v.Override != nil {
		own := aiSettingsLevel(*v.Override)
		out.Override = &own
	}
	return out
}

func aiSettingsEffectiveJSON(e engine.Effective) aiSettingsEffective {
	return aiSettingsEffective{CredentialID: e.CredentialID, Model: e.Model, Temperature: e.Temperature, MaxOutputTokens: e.MaxOutputTokens,
		Tone: e.Tone, Language: e.Language, TargetWordCount: e.TargetWordCount, MonthlyBudgetUSD: store.USDOf(e.MonthlyBudget),
		MonthlyBudgetTokens: e.MonthlyBudgetTokens,
		PriceOverrides:      e.PriceOverrides, ContextWindows: e.ContextWindows}
}

func (s *Server) getAISettings(c *gin.Context) {
	var q aiSettingsQuery
	if err := bindQuery(c, &q); err != nil {
		fail(c, err)
		return
	}
	view, err := s.aiSettings.Get(c.Request.Context(), scope(c), q.EnvironmentID)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, aiSettingsJSON(view), "AI content settings")
}

func (s *Server) putAISettings(c *gin.Context) {
	var q aiSettingsQuery
	if err := bindQuery(c, &q); err != nil {
		fail(c, err)
		return
	}
	var req aiSettingsLevel
	given, err := decodeJSONFields(c, &req)
	if err != nil {
		fail(c, err)
		return
	}
	view, err := s.aiSettings.Put(c.Request.Context(), scope(c), q.EnvironmentID, aisetting.Level(req), given)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, aiSettingsJSON(view), "AI content settings saved")
}
