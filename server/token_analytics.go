package server

import (
	"encoding/csv"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/copydesk/copydesk/store"
)

// Token analytics (/api/token-analytics): every provider call is a usage
// event; these endpoints list, total, group and export them. Non-admins see
// the events of their environments and their own events outside any
// environment.
func (s *Server) registerTokenAnalyticsRoutes() {
	const tag = "Token Analytics"
	s.handle(Route{Method: "GET", Path: "/api/token-analytics/usage", Tag: tag, Access: signedIn, List: true, Errors: []int{404},
		Summary: "Usage events, newest first", Query: usageListQuery{}, Data: usageEventResponse{}}, s.listUsage)
	s.handle(Route{Method: "GET", Path: "/api/token-analytics/summary", Tag: tag, Access: signedIn, Errors: []int{404},
		Summary: "Totals over a range", Query: usageQuery{}, Data: usageSummaryResponse{}}, s.usageSummary)
	s.handle(Route{Method: "GET", Path: "/api/token-analytics/series", Tag: tag, Access: signedIn, Errors: []int{404},
		Summary: "Totals grouped by day, model, agent, environment or user", Query: usageSeriesQuery{}, Data: usageSeriesResponse{},
		Notes: "Without from and to: the last 30 days."}, s.usageSeries)
	s.handle(Route{Method: "GET", Path: "/api/token-analytics/costs", Tag: tag, Access: signedIn, Errors: []int{404},
		Summary: "Cost by model and by environment", Query: usageQuery{}, Data: usageCostsResponse{},
		Notes: "Without from and to: the current month (UTC)."}, s.usageCosts)
	s.handle(Route{Method: "GET", Path: "/api/token-analytics/export.csv", Tag: tag, Access: signedIn, Binary: "text/csv", Errors: []int{404},
		Summary: "Usage events as CSV", Query: usageQuery{}}, s.exportUsage)
}

// usageQuery holds the filters every analytics endpoint takes.
type usageQuery struct {
	From          string `form:"from" doc:"start, inclusive: RFC 3339 or YYYY-MM-DD (UTC)"`
	To            string `form:"to" doc:"end, exclusive: RFC 3339, or YYYY-MM-DD for the end of that day"`
	UserID        *int64 `form:"user_id" binding:"omitempty,gt=0"`
	EnvironmentID *int64 `form:"environment_id" binding:"omitempty,gt=0"`
	AgentID       *int64 `form:"agent_id" binding:"omitempty,gt=0"`
	Model         string `form:"model" binding:"max=200"`
	Source        string `form:"source" binding:"omitempty,oneof=execution chat live scout autopilot test"`
	Status        string `form:"status" binding:"omitempty,oneof=ok error"`
}

type usageListQuery struct {
	pageQuery
	usageQuery
}

type usageSeriesQuery struct {
	usageQuery
	GroupBy string `form:"group_by" binding:"omitempty,oneof=day model agent environment user" doc:"day (default), model, agent, environment or user"`
}

func parseDay(field, v string, endOfDay bool) (*time.Time, error) {
	if v == "" {
		return nil, nil
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		t = t.UTC()
		return &t, nil
	}
	t, err := time.Parse("2006-01-02", v)
	if err != nil {
		return nil, store.Invalid("%s: must be a date (YYYY-MM-DD) or an RFC 3339 time", field)
	}
	if endOfDay {
		t = t.AddDate(0, 0, 1)
	}
	return &t, nil
}

// usageFilter turns the query into a store filter that respects tenancy: a
// non-admin asking for an environment not granted to them gets 404.
func (s *Server) usageFilter(c *gin.Context, q usageQuery, defaultFrom func(now time.Time) time.Time) (store.UsageFilter, error) {
	f := store.UsageFilter{UserID: q.UserID, EnvironmentID: q.EnvironmentID, AgentID: q.AgentID, Model: q.Model, Source: q.Source, Status: q.Status}
	var err error
	if f.From, err = parseDay("from", q.From, false); err != nil {
		return f, err
	}
	if f.To, err = parseDay("to", q.To, true); err != nil {
		return f, err
	}
	if f.From == nil && f.To == nil && defaultFrom != nil {
		from := defaultFrom(s.db.Now().UTC())
		f.From = &from
	}
	if f.From != nil && f.To != nil && !f.From.Before(*f.To) {
		return f, store.Invalid("to: must be after from")
	}
	p := principal(c)
	if !p.User.Role.AtLeast(store.RoleAdmin) {
		f.VisibleTo = p.User.ID
		if q.EnvironmentID != nil {
			if _, err := s.environments.Get(c.Request.Context(), p.Scope, *q.EnvironmentID); err != nil {
				return f, err
			}
		}
	}
	return f, nil
}

type usageEventResponse struct {
	ID            int64     `json:"id"`
	CreatedAt     time.Time `json:"created_at"`
	Provider      string    `json:"provider"`
	Model         string    `json:"model"`
	InputTokens   int64     `json:"input_tokens"`
	OutputTokens  int64     `json:"output_tokens"`
	CachedTokens  int64     `json:"cached_tokens"`
	CostUSD       *float64  `json:"cost_usd" doc:"null when the model's price is unknown"`
	LatencyMS     int64     `json:"latency_ms"`
	Status        string    `json:"status" enum:"ok,error"`
	Error         string    `json:"error"`
	Source        string    `json:"source"`
	UserID        *int64    `json:"user_id"`
	EnvironmentID *int64    `json:"environment_id"`
	AgentID       *int64    `json:"agent_id"`
	CredentialID  *int64    `json:"credential_id"`
}

func usageJSON(e *store.UsageEvent) usageEventResponse {
	return usageEventResponse{ID: e.ID, CreatedAt: e.CreatedAt, Provider: e.Provider, Model: e.Model, InputTokens: e.InputTokens,
		OutputTokens: e.OutputTokens, CachedTokens: e.CachedTokens, CostUSD: e.CostUSD, LatencyMS: e.LatencyMS, Status: e.Status,
		Error: e.Error, Source: e.Source, UserID: e.UserID, EnvironmentID: e.EnvironmentID, AgentID: e.AgentID, CredentialID: e.CredentialID}
}

type usageTotalsResponse struct {
	Calls         int64   `json:"calls"`
	Errors        int64   `json:"errors"`
	InputTokens   int64   `json:"input_tokens"`
	OutputTokens  int64   `json:"output_tokens"`
	CachedTokens  int64   `json:"cached_tokens"`
	CostUSD       float64 `json:"cost_usd" doc:"sum of the known costs"`
	UnpricedCalls int64   `json:"unpriced_calls" doc:"calls whose cost is unknown (not in cost_usd)"`
	AvgLatencyMS  float64 `json:"avg_latency_ms"`
}

func totalsJSON(t *store.UsageTotals) usageTotalsResponse {
	return usageTotalsResponse{Calls: t.Calls, Errors: t.Errors, InputTokens: t.InputTokens, OutputTokens: t.OutputTokens,
		CachedTokens: t.CachedTokens, CostUSD: t.CostUSD, UnpricedCalls: t.UnpricedCalls, AvgLatencyMS: t.AvgLatencyMS}
}

type usageSummaryResponse struct {
	From   *time.Time          `json:"from"`
	To     *time.Time          `json:"to"`
	Totals usageTotalsResponse `json:"totals"`
}

type usagePointResponse struct {
	Key   string `json:"key" doc:"the day (YYYY-MM-DD), model, or id of the agent, environment or user; empty for none"`
	Label string `json:"label" doc:"the name of the agent, environment or user"`
	usageTotalsResponse
}

type usageSeriesResponse struct {
	GroupBy string               `json:"group_by"`
	From    *time.Time           `json:"from"`
	To      *time.Time           `json:"to"`
	Points  []usagePointResponse `json:"points"`
}

type usageCostsResponse struct {
	From          *time.Time           `json:"from"`
	To            *time.Time           `json:"to"`
	TotalCostUSD  float64              `json:"total_cost_usd"`
	ByModel       []usagePointResponse `json:"by_model"`
	ByEnvironment []usagePointResponse `json:"by_environment"`
}

func pointsJSON(list []*store.UsageTotals) []usagePointResponse {
	out := make([]usagePointResponse, 0, len(list))
	for _, t := range list {
		out = append(out, usagePointResponse{Key: t.Key, Label: t.Label, usageTotalsResponse: totalsJSON(t)})
	}
	return out
}

func (s *Server) listUsage(c *gin.Context) {
	var q usageListQuery
	if err := bindQuery(c, &q); err != nil {
		fail(c, err)
		return
	}
	f, err := s.usageFilter(c, q.usageQuery, nil)
	if err != nil {
		fail(c, err)
		return
	}
	pg := q.page()
	list, total, err := s.db.ListUsage(c.Request.Context(), f, pg)
	if err != nil {
		fail(c, err)
		return
	}
	items := make([]usageEventResponse, 0, len(list))
	for _, e := range list {
		items = append(items, usageJSON(e))
	}
	respond(c, http.StatusOK, listData[usageEventResponse]{Items: items, Total: total, Page: pg.Page, PerPage: pg.PerPage}, "usage events")
}

func (s *Server) usageSummary(c *gin.Context) {
	var q usageQuery
	if err := bindQuery(c, &q); err != nil {
		fail(c, err)
		return
	}
	f, err := s.usageFilter(c, q, nil)
	if err != nil {
		fail(c, err)
		return
	}
	t, err := s.db.UsageSummary(c.Request.Context(), f)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, usageSummaryResponse{From: f.From, To: f.To, Totals: totalsJSON(t)}, "usage summary")
}

func last30Days(now time.Time) time.Time {
	return time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC).AddDate(0, 0, -29)
}

func monthStart(now time.Time) time.Time {
	return time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
}

func (s *Server) usageSeries(c *gin.Context) {
	var q usageSeriesQuery
	if err := bindQuery(c, &q); err != nil {
		fail(c, err)
		return
	}
	if q.GroupBy == "" {
		q.GroupBy = store.GroupByDay
	}
	f, err := s.usageFilter(c, q.usageQuery, last30Days)
	if err != nil {
		fail(c, err)
		return
	}
	list, err := s.db.UsageSeries(c.Request.Context(), f, q.GroupBy)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, usageSeriesResponse{GroupBy: q.GroupBy, From: f.From, To: f.To, Points: pointsJSON(list)}, "usage series")
}

func (s *Server) usageCosts(c *gin.Context) {
	var q usageQuery
	if err := bindQuery(c, &q); err != nil {
		fail(c, err)
		return
	}
	f, err := s.usageFilter(c, q, monthStart)
	if err != nil {
		fail(c, err)
		return
	}
	ctx := c.Request.Context()
	out := usageCostsResponse{From: f.From, To: f.To}
	for _, g := range []struct {
		by   string
		dest *[]usagePointResponse
	}{{store.GroupByModel, &out.ByModel}, {store.GroupByEnvironment, &out.ByEnvironment}} {
		list, err := s.db.UsageSeries(ctx, f, g.by)
		if err != nil {
			fail(c, err)
			return
		}
		*g.dest = pointsJSON(list)
	}
	for _, p := range out.ByModel {
		out.TotalCostUSD += p.CostUSD
	}
	respond(c, http.StatusOK, out, "costs")
}

func (s *Server) exportUsage(c *gin.Context) {
	var q usageQuery
	if err := bindQuery(c, &q); err != nil {
		fail(c, err)
		return
	}
	f, err := s.usageFilter(c, q, nil)
	if err != nil {
		fail(c, err)
		return
	}
	c.Header("Content-Type", "text/csv; charset=utf-8")
	c.Header("Content-Disposition", `attachment; filename="copydesk-usage.csv"`)
	c.Status(http.StatusOK)
	w := csv.NewWriter(c.Writer)
	w.Write([]string{"id", "created_at", "provider", "model", "input_tokens", "output_tokens", "cached_tokens", "cost_usd",
		"latency_ms", "status", "error", "source", "user_id", "environment_id", "agent_id", "credential_id"})
	err = s.db.EachUsage(c.Request.Context(), f, func(e *store.UsageEvent) error {
		cost := ""
		if e.CostUSD != nil {
			cost = strconv.FormatFloat(*e.CostUSD, 'f', -1, 64)
		}
		return w.Write([]string{strconv.FormatInt(e.ID, 10), e.CreatedAt.Format(time.RFC3339Nano), csvSafe(e.Provider), csvSafe(e.Model),
			itoa(e.InputTokens), itoa(e.OutputTokens), itoa(e.CachedTokens), cost, itoa(e.LatencyMS), e.Status, csvSafe(e.Error), e.Source,
			idText(e.UserID), idText(e.EnvironmentID), idText(e.AgentID), idText(e.CredentialID)})
	})
	w.Flush()
	if err != nil {
		// Headers are sent; all that can be done is to log and stop.
		logger(c).Error("usage export interrupted", "err", err)
	}
}

// csvSafe keeps a text cell from being read as a formula by a spreadsheet
// (provider error messages and model names come from outside).
func csvSafe(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func idText(id *int64) string {
	if id == nil {
		return ""
	}
	return strconv.FormatInt(*id, 10)
}
