package server

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/copydesk/copydesk/server/analytics"
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
		Summary: "Totals grouped by day, model, agent, environment, user or source", Query: usageSeriesQuery{}, Data: usageSeriesResponse{},
		Notes: "Without from and to: the last 30 days (of tz). With tz, the days of group_by=day are that zone's (23 or 25 hours across a daylight saving change; at most 1000 of them)."}, s.usageSeries)
	s.handle(Route{Method: "GET", Path: "/api/token-analytics/costs", Tag: tag, Access: signedIn, Errors: []int{404},
		Summary: "Cost by model and by environment", Query: usageQuery{}, Data: usageCostsResponse{},
		Notes: "Without from and to: the current month (of tz; UTC by default)."}, s.usageCosts)
	s.handle(Route{Method: "GET", Path: "/api/token-analytics/export.csv", Tag: tag, Access: signedIn, Binary: "text/csv", Errors: []int{404},
		Summary: "Usage events as CSV", Query: usageQuery{}}, s.exportUsage)
}

// usageQuery holds the filters every analytics endpoint takes.
type usageQuery struct {
	From          string `form:"from" doc:"start, inclusive: RFC 3339 or YYYY-MM-DD (a day of tz)"`
	To            string `form:"to" doc:"end, exclusive: RFC 3339, or YYYY-MM-DD for the end of that day"`
	TZ            string `form:"tz" binding:"max=64" doc:"IANA time zone (e.g. Europe/Berlin) of the days: of from and to, of the default ranges and of a day series; UTC when absent"`
	UserID        *int64 `form:"user_id" binding:"omitempty,gt=0"`
	EnvironmentID *int64 `form:"environment_id" binding:"omitempty,gt=0"`
	AgentID       *int64 `form:"agent_id" binding:"omitempty,gt=0"`
	Model         string `form:"model" binding:"max=200"`
	Source        string `form:"source" binding:"omitempty,oneof=execution chat live scout autopilot cie search test"`
	Status        string `form:"status" binding:"omitempty,oneof=ok error cancelled"`
}

type usageListQuery struct {
	pageQuery
	usageQuery
}

type usageSeriesQuery struct {
	usageQuery
	GroupBy string `form:"group_by" binding:"omitempty,oneof=day model agent environment user source" doc:"day (default), model, agent, environment, user or source"`
}

// query is the service's view of the filters.
func (q usageQuery) query() analytics.Query {
	return analytics.Query{From: q.From, To: q.To, TZ: q.TZ, UsageMatch: store.UsageMatch{UserID: q.UserID, EnvironmentID: q.EnvironmentID,
		AgentID: q.AgentID, Model: q.Model, Source: q.Source, Status: q.Status}}
}

type usageEventResponse struct {
	ID            int64     `json:"id"`
	CreatedAt     Timestamp `json:"created_at"`
	Provider      string    `json:"provider"`
	Model         string    `json:"model"`
	InputTokens   int64     `json:"input_tokens"`
	OutputTokens  int64     `json:"output_tokens"`
	CachedTokens  int64     `json:"cached_tokens"`
	CostUSD       *float64  `json:"cost_usd" doc:"null when the model's price is unknown"`
	LatencyMS     int64     `json:"latency_ms"`
	Status        string    `json:"status" enum:"ok,error,cancelled" doc:"cancelled: stopped or cancelled before it finished; its partial usage and cost count as any other"`
	Error         string    `json:"error"`
	Source        string    `json:"source"`
	UserID        *int64    `json:"user_id"`
	EnvironmentID *int64    `json:"environment_id"`
	AgentID       *int64    `json:"agent_id"`
	CredentialID  *int64    `json:"credential_id"`
	Estimated     bool      `json:"estimated" doc:"the token counts are estimated from characters: the provider's stream was cut off before it reported them"`
}

func usageJSON(e *store.UsageEvent) usageEventResponse {
	return usageEventResponse{ID: e.ID, CreatedAt: Timestamp(e.CreatedAt), Provider: e.Provider, Model: e.Model, InputTokens: e.InputTokens,
		OutputTokens: e.OutputTokens, CachedTokens: e.CachedTokens, CostUSD: store.USDOf(e.Cost), LatencyMS: e.LatencyMS, Status: e.Status,
		Error: e.Error, Source: e.Source, UserID: e.UserID, EnvironmentID: e.EnvironmentID, AgentID: e.AgentID, CredentialID: e.CredentialID,
		Estimated: e.Estimated}
}

type usageTotalsResponse struct {
	Calls         int64    `json:"calls"`
	Errors        int64    `json:"errors"`
	Cancelled     int64    `json:"cancelled" doc:"calls stopped or cancelled before they finished (their tokens and cost are counted)"`
	InputTokens   int64    `json:"input_tokens"`
	OutputTokens  int64    `json:"output_tokens"`
	CachedTokens  int64    `json:"cached_tokens"`
	CostUSD       *float64 `json:"cost_usd" doc:"sum of the known costs, in dollars; null when there were calls and none had a known cost (models without a price)"`
	UnpricedCalls int64    `json:"unpriced_calls" doc:"calls whose cost is unknown (not in cost_usd)"`
	AvgLatencyMS  float64  `json:"avg_latency_ms"`
}

func totalsJSON(t *store.UsageTotals) usageTotalsResponse {
	return usageTotalsResponse{Calls: t.Calls, Errors: t.Errors, Cancelled: t.Cancelled, InputTokens: t.InputTokens, OutputTokens: t.OutputTokens,
		CachedTokens: t.CachedTokens, CostUSD: store.USDOf(t.KnownCost()), UnpricedCalls: t.UnpricedCalls, AvgLatencyMS: t.AvgLatencyMS}
}

type usageSummaryResponse struct {
	From   *Timestamp          `json:"from"`
	To     *Timestamp          `json:"to"`
	Totals usageTotalsResponse `json:"totals"`
}

type usagePointResponse struct {
	Key   string `json:"key" doc:"the day (YYYY-MM-DD), model, source, or id of the agent, environment or user; empty for none"`
	Label string `json:"label" doc:"the name of the agent, environment or user"`
	usageTotalsResponse
}

type usageSeriesResponse struct {
	GroupBy string               `json:"group_by"`
	From    *Timestamp           `json:"from"`
	To      *Timestamp           `json:"to"`
	Points  []usagePointResponse `json:"points"`
}

type usageCostsResponse struct {
	From          *Timestamp           `json:"from"`
	To            *Timestamp           `json:"to"`
	TotalCostUSD  *float64             `json:"total_cost_usd" doc:"null when there were calls and none had a known cost"`
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
	pg := q.page()
	list, total, err := s.analytics.List(c.Request.Context(), scope(c), q.query(), pg)
	if err != nil {
		fail(c, err)
		return
	}
	respondList(c, list, total, pg, usageJSON, "usage events")
}

func (s *Server) usageSummary(c *gin.Context) {
	var q usageQuery
	if err := bindQuery(c, &q); err != nil {
		fail(c, err)
		return
	}
	sum, err := s.analytics.Summary(c.Request.Context(), scope(c), q.query())
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, usageSummaryResponse{From: (*Timestamp)(sum.From), To: (*Timestamp)(sum.To), Totals: totalsJSON(sum.Totals)}, "usage summary")
}

func (s *Server) usageSeries(c *gin.Context) {
	var q usageSeriesQuery
	if err := bindQuery(c, &q); err != nil {
		fail(c, err)
		return
	}
	ser, err := s.analytics.Series(c.Request.Context(), scope(c), q.query(), q.GroupBy)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, usageSeriesResponse{GroupBy: ser.GroupBy, From: (*Timestamp)(ser.From), To: (*Timestamp)(ser.To), Points: pointsJSON(ser.Points)}, "usage series")
}

func (s *Server) usageCosts(c *gin.Context) {
	var q usageQuery
	if err := bindQuery(c, &q); err != nil {
		fail(c, err)
		return
	}
	costs, err := s.analytics.Costs(c.Request.Context(), scope(c), q.query())
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, usageCostsResponse{From: (*Timestamp)(costs.From), To: (*Timestamp)(costs.To), TotalCostUSD: store.USDOf(costs.TotalCost),
		ByModel: pointsJSON(costs.ByModel), ByEnvironment: pointsJSON(costs.ByEnvironment)}, "costs")
}

// exportUsage renders the whole export into a temporary file under the
// request's hold on the database, then sends the file: a client that reads
// slowly, or not at all, holds no database (an export has no page limit,
// so it is not kept in memory). A failed export is a clean error answer,
// not a cut CSV.
func (s *Server) exportUsage(c *gin.Context) {
	var q usageQuery
	if err := bindQuery(c, &q); err != nil {
		fail(c, err)
		return
	}
	f, size, err := s.spool(func(w io.Writer) error {
		return s.analytics.ExportCSV(c.Request.Context(), scope(c), q.query(), func() io.Writer { return w })
	})
	if err != nil {
		fail(c, err)
		return
	}
	sendSpooled(c, f, size, "text/csv; charset=utf-8", "copydesk-usage.csv")
}

// sendSpooled sends a file spool rendered as a download, then removes it.
func sendSpooled(c *gin.Context, f *os.File, size int64, contentType, filename string) {
	defer func() { _ = f.Close(); _ = os.Remove(f.Name()) }() // a scratch file: nothing to report
	c.Header("Content-Type", contentType)
	c.Header("Content-Disposition", `attachment; filename="`+filename+`"`)
	c.Header("Content-Length", strconv.FormatInt(size, 10))
	c.Status(http.StatusOK)
	if _, err := io.Copy(c.Writer, f); err != nil {
		logger(c).Warn("export interrupted", "file", filename, "err", err)
	}
}

// spool renders into a temporary file of the spool folder (Options.SpoolDir,
// under the data directory: a container image has no /tmp, and TMPDIR may
// be anything) and returns it rewound, with its size; the caller closes and
// removes it.
func (s *Server) spool(render func(io.Writer) error) (*os.File, int64, error) {
	f, err := os.CreateTemp(s.opts.SpoolDir, "export-*")
	if err != nil {
		return nil, 0, err
	}
	buf := bufio.NewWriter(f)
	err = render(buf)
	if err == nil {
		err = buf.Flush()
	}
	var size int64
	if err == nil {
		size, err = f.Seek(0, io.SeekCurrent)
	}
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		_ = f.Close()
		_ = os.Remove(f.Name())
		return nil, 0, err
	}
	return f, size, nil
}
