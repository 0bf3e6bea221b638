package server

import (
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/copydesk/copydesk/server/autopilot"
	"github.com/copydesk/copydesk/store"
)

// The AutoPilot group (/api/autopilot): per environment, the pipeline that
// turns the keywords of active SEO campaigns into posts. Every route takes
// environment_id, in the query for GET and in the body otherwise. Editors
// and up control it; whoever sees the environment reads it. The rules are
// server/autopilot's.
func (s *Server) registerAutopilotRoutes() {
	const tag = "AutoPilot"
	s.handle(Route{Method: "GET", Path: "/api/autopilot/status", Tag: tag, Access: signedIn, Query: autopilotEnvQuery{},
		Errors: []int{404}, Data: autopilotStatusResponse{}, Summary: "The autopilot's state, the run under way, today's posts and spend, the next run",
		Notes: "Days and months count in the environment's time zone. next_run_at is set while it runs with no run under way."}, s.autopilotStatus)
	for _, c := range []struct {
		verb, summary, notes string
		do                   func(c *gin.Context, envID int64) (*autopilot.Status, error)
	}{
		{"start", "Start the autopilot", "From stopped. Runs start when due: inside the window, spread over it by max_posts_per_day, " +
			"each campaign at most its cadence a day. 409 when it is not stopped, or when a budget is reached.",
			func(c *gin.Context, envID int64) (*autopilot.Status, error) {
				return s.autopilot.Start(c.Request.Context(), scope(c), principal(c).User.ID, envID)
			}},
		{"pause", "Pause the autopilot", "From running: no run starts, and the run under way pauses at its next step. 409 when it is not running.",
			func(c *gin.Context, envID int64) (*autopilot.Status, error) {
				return s.autopilot.Pause(c.Request.Context(), scope(c), principal(c).User.ID, envID)
			}},
		{"resume", "Resume the autopilot", "From paused (by hand, or by itself for a budget, the daily limit or failures): it runs again and " +
			"a paused run goes on from its first unfinished step. 409 when it is not paused, or when a budget is still reached.",
			func(c *gin.Context, envID int64) (*autopilot.Status, error) {
				return s.autopilot.Resume(c.Request.Context(), scope(c), principal(c).User.ID, envID)
			}},
		{"stop", "Stop the autopilot", "From any state: no run starts; a queued or paused run is cancelled at once and a running one at its " +
			"next step. A cancelled run that made no post gives its keyword back.",
			func(c *gin.Context, envID int64) (*autopilot.Status, error) {
				return s.autopilot.Stop(c.Request.Context(), scope(c), principal(c).User.ID, envID)
			}},
	} {
		s.handle(Route{Method: "POST", Path: "/api/autopilot/" + c.verb, Tag: tag, Access: editorOnly, Body: autopilotEnvRequest{},
			Data: autopilotStatusResponse{}, Errors: []int{404, 409}, Summary: c.summary, Notes: c.notes}, s.autopilotControl(c.verb, c.do))
	}
	s.handle(Route{Method: "GET", Path: "/api/autopilot/config", Tag: tag, Access: signedIn, Query: autopilotEnvQuery{},
		Errors: []int{404}, Data: autopilotConfigResponse{}, Summary: "The autopilot's config"}, s.getAutopilotConfig)
	s.handle(Route{Method: "PUT", Path: "/api/autopilot/config", Tag: tag, Access: editorOnly, Body: autopilotConfigRequest{},
		Errors: []int{404}, Data: autopilotConfigResponse{}, Summary: "Replace the autopilot's config",
		Notes: "The whole config: a field left out takes its default (every active campaign, the whole day, 1 post a day, no budgets, " +
			"each campaign's post status, auto_resume true, no variables). The window is HH:MM in the environment's time zone, " +
			"[window_start, window_end); an end before the start spans midnight. Budgets are over every usage of the environment (every " +
			"source) today and this month: *_budget_usd in US dollars (kept to the millionth; calls of a model without a price cost " +
			"nothing known), *_budget_tokens in input and output tokens (every call, priced or not). variables are given to every generation beside the keyword's own " +
			"(keyword, campaign, cluster, parent_keyword, intent, target_url): the built-in archetypes need audience."}, s.putAutopilotConfig)
	s.handle(Route{Method: "GET", Path: "/api/autopilot/runs", Tag: tag, Access: signedIn, Query: autopilotRunsQuery{}, List: true, Errors: []int{404},
		Data: autopilotRunResponse{}, Summary: "List the autopilot's runs with their steps, newest first"}, s.listAutopilotRuns)
	s.handle(Route{Method: "GET", Path: "/api/autopilot/runs/{id}", Tag: tag, Access: signedIn, Query: autopilotRunQuery{},
		Data: autopilotRunResponse{}, Summary: "Get a run with its steps (pick_keyword, generate, create_post, publish)",
		Notes: "Each step has its outcome, timings, attempts, usage and error; a step not begun is pending."}, s.getAutopilotRun)
	s.handle(Route{Method: "POST", Path: "/api/autopilot/run-now", Tag: tag, Access: editorOnly, Body: autopilotEnvRequest{},
		Status: http.StatusAccepted, Data: autopilotRunResponse{}, Errors: []int{404, 409}, Summary: "Start a run now",
		Notes: "Whatever the state, window, spacing, cadences and daily limit say (the run counts toward them); follow it with " +
			"GET /api/autopilot/runs/{id} or the stream. 409 when a run is under way, a budget is reached, or no campaign has a keyword left."},
		s.autopilotRunNow)
	s.handle(Route{Method: "GET", Path: "/api/autopilot/stream", Tag: tag, Access: signedIn, Query: autopilotEnvQuery{},
		Binary: "text/event-stream", Errors: []int{404}, Summary: "Server-Sent Events of the autopilot's state and runs", Events: autopilotEvents,
		Notes: "`event: snapshot` first, with {autopilot, run} (the state and the latest run as last published), then `event: status` " +
			"with the state when it changes and `event: run` with the run and its steps each time a step begins or ends. " +
			"A comment line is a heartbeat every 15 seconds. Reconnect with Last-Event-ID (a gap the server no longer remembers is " +
			"bridged by a new snapshot); `event: lagged` and `event: end` end it as on the other streams."}, s.autopilotStream)
}

type autopilotEnvQuery struct {
	EnvironmentID int64 `form:"environment_id" binding:"required,gt=0"`
}

type autopilotEnvRequest struct {
	EnvironmentID int64 `json:"environment_id" binding:"required,gt=0"`
}

type autopilotRunsQuery struct {
	pageQuery
	EnvironmentID int64  `form:"environment_id" binding:"required,gt=0"`
	Status        string `form:"status" binding:"omitempty,oneof=queued running paused succeeded failed cancelled"`
	Sort          string `form:"sort" binding:"omitempty,oneof=created_at -created_at" doc:"-created_at (the default) or created_at"`
}

type autopilotRunQuery struct {
	EnvironmentID *int64 `form:"environment_id" binding:"omitempty,gt=0" doc:"when given, the run must be of this environment"`
}

type autopilotConfigRequest struct {
	EnvironmentID       int64             `json:"environment_id" binding:"required,gt=0"`
	CampaignIDs         []int64           `json:"campaign_ids" binding:"max=100,dive,gt=0" doc:"the campaigns it works on, in this order; empty: every active campaign"`
	WindowStart         string            `json:"window_start" binding:"max=5" doc:"HH:MM, default 00:00"`
	WindowEnd           string            `json:"window_end" binding:"max=5" doc:"HH:MM up to 24:00, default 24:00"`
	MaxPostsPerDay      int               `json:"max_posts_per_day" binding:"omitempty,gte=1,lte=100" doc:"default 1"`
	DailyBudgetUSD      *float64          `json:"daily_budget_usd" binding:"omitempty,gt=0" doc:"null: none"`
	MonthlyBudgetUSD    *float64          `json:"monthly_budget_usd" binding:"omitempty,gt=0" doc:"null: none"`
	DailyBudgetTokens   *int64            `json:"daily_budget_tokens" binding:"omitempty,gt=0" doc:"input and output tokens of every usage of the environment today, priced or not (a local model's too); null: none"`
	MonthlyBudgetTokens *int64            `json:"monthly_budget_tokens" binding:"omitempty,gt=0" doc:"the same over the month; null: none"`
	PostStatus          string            `json:"post_status" binding:"omitempty,oneof=campaign draft publish" doc:"campaign (the default): each campaign's own"`
	AutoResume          *bool             `json:"auto_resume" doc:"resume by itself the next day or month after a budget or daily limit pause; default true"`
	Variables           map[string]string `json:"variables" binding:"max=20,dive,max=5000" doc:"values for every generation, such as audience"`
}

type autopilotConfigResponse struct {
	EnvironmentID       int64             `json:"environment_id"`
	CampaignIDs         []int64           `json:"campaign_ids" doc:"empty: every active campaign of the environment"`
	WindowStart         string            `json:"window_start"`
	WindowEnd           string            `json:"window_end"`
	Timezone            string            `json:"timezone" doc:"the environment's: the window's and the days'"`
	MaxPostsPerDay      int               `json:"max_posts_per_day"`
	DailyBudgetUSD      *float64          `json:"daily_budget_usd"`
	MonthlyBudgetUSD    *float64          `json:"monthly_budget_usd"`
	DailyBudgetTokens   *int64            `json:"daily_budget_tokens"`
	MonthlyBudgetTokens *int64            `json:"monthly_budget_tokens"`
	PostStatus          string            `json:"post_status" enum:"campaign,draft,publish"`
	AutoResume          bool              `json:"auto_resume"`
	Variables           map[string]string `json:"variables"`
	UpdatedAt           *Timestamp        `json:"updated_at" doc:"null: never configured (the defaults)"`
}

func autopilotConfigJSON(ap *store.Autopilot, tz string) autopilotConfigResponse {
	c := ap.Config
	return autopilotConfigResponse{EnvironmentID: ap.EnvironmentID, CampaignIDs: c.CampaignIDs, WindowStart: autopilot.FormatClock(c.WindowStart),
		WindowEnd: autopilot.FormatClock(c.WindowEnd), Timezone: tz, MaxPostsPerDay: c.MaxPostsPerDay, DailyBudgetUSD: store.USDOf(c.DailyBudget),
		MonthlyBudgetUSD: store.USDOf(c.MonthlyBudget), DailyBudgetTokens: c.DailyBudgetTokens, MonthlyBudgetTokens: c.MonthlyBudgetTokens, PostStatus: c.PostStatus, AutoResume: c.AutoResume, Variables: c.Variables,
		UpdatedAt: (*Timestamp)(ap.UpdatedAt)}
}

// autopilotStateResponse is an autopilot's state and config: the status's
// first part, and the data of the stream's status events.
type autopilotStateResponse struct {
	EnvironmentID  int64                   `json:"environment_id"`
	State          string                  `json:"state" enum:"stopped,running,paused"`
	PauseReason    string                  `json:"pause_reason" enum:",manual,daily_budget,monthly_budget,daily_limit,failures" doc:"empty unless paused"`
	PauseDetail    string                  `json:"pause_detail"`
	ResumeAt       *Timestamp              `json:"resume_at" doc:"when a pause ends by itself; null: only by hand"`
	Failures       int                     `json:"failures" doc:"runs failed in a row; 3 pause it"`
	Note           string                  `json:"note" doc:"why the scheduler found nothing to write when it last looked"`
	IdleUntil      *Timestamp              `json:"idle_until" doc:"when it looks again"`
	ChangedBy      *int64                  `json:"changed_by"`
	StateChangedAt *Timestamp              `json:"state_changed_at"`
	Config         autopilotConfigResponse `json:"config"`
}

func autopilotStateJSON(ap *store.Autopilot, tz string) autopilotStateResponse {
	return autopilotStateResponse{EnvironmentID: ap.EnvironmentID, State: ap.State, PauseReason: ap.PauseReason, PauseDetail: ap.PauseDetail,
		ResumeAt: (*Timestamp)(ap.ResumeAt), Failures: ap.Failures, Note: ap.Note, IdleUntil: (*Timestamp)(ap.IdleUntil), ChangedBy: ap.ChangedBy,
		StateChangedAt: (*Timestamp)(ap.StateChangedAt), Config: autopilotConfigJSON(ap, tz)}
}

type autopilotStatusResponse struct {
	Autopilot     autopilotStateResponse `json:"autopilot"`
	ActiveRun     *autopilotRunResponse  `json:"active_run" doc:"the run queued, running or paused; null when none is"`
	PostsToday    int                    `json:"posts_today" doc:"runs of today that count toward max_posts_per_day"`
	SpentTodayUSD float64                `json:"spent_today_usd" doc:"every usage of the environment today"`
	SpentMonthUSD float64                `json:"spent_month_usd" doc:"every usage of the environment this month"`
	TokensToday   int64                  `json:"tokens_today" doc:"input and output tokens of every usage of the environment today"`
	TokensMonth   int64                  `json:"tokens_month" doc:"the same this month"`
	NextRunAt     *Timestamp             `json:"next_run_at" doc:"when the next run is due; null unless running with no run under way"`
}

func autopilotStatusJSON(st *autopilot.Status) autopilotStatusResponse {
	out := autopilotStatusResponse{Autopilot: autopilotStateJSON(st.Autopilot, st.Timezone), PostsToday: st.PostsToday,
		SpentTodayUSD: st.SpentToday.Cost.USD(), SpentMonthUSD: st.SpentMonth.Cost.USD(),
		TokensToday: st.SpentToday.Tokens, TokensMonth: st.SpentMonth.Tokens, NextRunAt: (*Timestamp)(st.NextRunAt)}
	if st.ActiveRun != nil {
		r := autopilotRunJSON(st.ActiveRun)
		out.ActiveRun = &r
	}
	return out
}

type autopilotStepResponse struct {
	Step         string     `json:"step" enum:"pick_keyword,generate,create_post,publish"`
	Status       string     `json:"status" enum:"pending,running,succeeded,failed,skipped"`
	Detail       string     `json:"detail" doc:"what it did"`
	Error        string     `json:"error"`
	Attempts     int        `json:"attempts" doc:"how often it began (a retry, a restart); 0 while pending"`
	InputTokens  int64      `json:"input_tokens"`
	OutputTokens int64      `json:"output_tokens"`
	CostUSD      *float64   `json:"cost_usd"`
	StartedAt    *Timestamp `json:"started_at" doc:"of its latest attempt"`
	FinishedAt   *Timestamp `json:"finished_at"`
	DurationMS   *int64     `json:"duration_ms" doc:"of its latest attempt, once finished"`
	CIERunID     *int64     `json:"cie_run_id,omitempty" doc:"the generate step's generation, with its raw output (GET /api/cie/runs/{run_id})"`
}

type autopilotPostRef struct {
	Kind string `json:"kind" enum:"wordpress,astro"`
	ID   int64  `json:"id"`
}

type autopilotRunResponse struct {
	ID            int64                   `json:"id"`
	EnvironmentID int64                   `json:"environment_id"`
	Trigger       string                  `json:"trigger" enum:"schedule,manual"`
	Status        string                  `json:"status" enum:"queued,running,paused,succeeded,failed,cancelled"`
	Control       string                  `json:"control" enum:",pause,stop" doc:"what its owner asked of it, done at its next step"`
	CampaignID    *int64                  `json:"campaign_id"`
	KeywordID     *int64                  `json:"keyword_id"`
	Keyword       string                  `json:"keyword"`
	Target        string                  `json:"target" enum:"wordpress,astro"`
	PostStatus    string                  `json:"post_status" enum:"draft,publish"`
	CIERunID      *int64                  `json:"cie_run_id" doc:"its generation (GET /api/cie/runs/{run_id})"`
	Post          *autopilotPostRef       `json:"post"`
	PauseReason   string                  `json:"pause_reason"`
	Error         string                  `json:"error"`
	RequestedBy   *int64                  `json:"requested_by" doc:"who asked for it with run-now; null for the scheduler"`
	CostUSD       *float64                `json:"cost_usd" doc:"its generation's"`
	CreatedAt     Timestamp               `json:"created_at"`
	StartedAt     *Timestamp              `json:"started_at"`
	FinishedAt    *Timestamp              `json:"finished_at"`
	Steps         []autopilotStepResponse `json:"steps" doc:"the four steps in order"`
}

func autopilotRunJSON(r *store.AutopilotRun) autopilotRunResponse {
	out := autopilotRunResponse{ID: r.ID, EnvironmentID: r.EnvironmentID, Trigger: r.Trigger, Status: r.Status, Control: r.Control,
		CampaignID: r.CampaignID, KeywordID: r.KeywordID, Keyword: r.Keyword, Target: r.Target, PostStatus: r.PostStatus, CIERunID: r.CIERunID,
		PauseReason: r.PauseReason, Error: r.Error, RequestedBy: r.RequestedBy, CreatedAt: Timestamp(r.CreatedAt),
		StartedAt: (*Timestamp)(r.StartedAt), FinishedAt: (*Timestamp)(r.FinishedAt), Steps: make([]autopilotStepResponse, 0, len(store.AutopilotSteps))}
	if r.Post != nil {
		out.Post = &autopilotPostRef{Kind: r.Post.Kind, ID: r.Post.ID}
	}
	var cost *store.Micros // the steps' together
	for _, name := range store.AutopilotSteps {
		st := r.Step(name)
		if st == nil {
			out.Steps = append(out.Steps, autopilotStepResponse{Step: name, Status: "pending"})
			continue
		}
		js := autopilotStepResponse{Step: name, Status: st.Status, Detail: st.Detail, Error: st.Error, Attempts: st.Attempts,
			InputTokens: st.InputTokens, OutputTokens: st.OutputTokens, CostUSD: store.USDOf(st.Cost), StartedAt: (*Timestamp)(&st.StartedAt),
			FinishedAt: (*Timestamp)(st.FinishedAt)}
		if name == store.StepGenerate {
			js.CIERunID = r.CIERunID
		}
		if st.FinishedAt != nil {
			ms := st.FinishedAt.Sub(st.StartedAt).Milliseconds()
			js.DurationMS = &ms
		}
		cost = store.AddCost(cost, st.Cost)
		out.Steps = append(out.Steps, js)
	}
	out.CostUSD = store.USDOf(cost)
	return out
}

func (s *Server) autopilotStatus(c *gin.Context) {
	var q autopilotEnvQuery
	if err := bindQuery(c, &q); err != nil {
		fail(c, err)
		return
	}
	st, err := s.autopilot.Status(c.Request.Context(), scope(c), q.EnvironmentID)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, autopilotStatusJSON(st), "autopilot "+st.Autopilot.State)
}

// autopilotControl is the handler of start, pause, resume and stop.
func (s *Server) autopilotControl(verb string, do func(c *gin.Context, envID int64) (*autopilot.Status, error)) gin.HandlerFunc {
	return func(c *gin.Context) {
		var req autopilotEnvRequest
		if err := decodeJSON(c, &req); err != nil {
			fail(c, err)
			return
		}
		st, err := do(c, req.EnvironmentID)
		if err != nil {
			fail(c, err)
			return
		}
		respond(c, http.StatusOK, autopilotStatusJSON(st), "autopilot "+verb+" done: "+st.Autopilot.State)
	}
}

func (s *Server) getAutopilotConfig(c *gin.Context) {
	var q autopilotEnvQuery
	if err := bindQuery(c, &q); err != nil {
		fail(c, err)
		return
	}
	ap, tz, err := s.autopilot.Config(c.Request.Context(), scope(c), q.EnvironmentID)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, autopilotConfigJSON(ap, tz), "autopilot config")
}

func (s *Server) putAutopilotConfig(c *gin.Context) {
	var req autopilotConfigRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	ap, tz, err := s.autopilot.PutConfig(c.Request.Context(), scope(c), principal(c).User.ID, req.EnvironmentID, autopilot.ConfigInput{
		CampaignIDs: req.CampaignIDs, WindowStart: req.WindowStart, WindowEnd: req.WindowEnd, MaxPostsPerDay: req.MaxPostsPerDay,
		DailyBudgetUSD: req.DailyBudgetUSD, MonthlyBudgetUSD: req.MonthlyBudgetUSD, DailyBudgetTokens: req.DailyBudgetTokens,
		MonthlyBudgetTokens: req.MonthlyBudgetTokens, PostStatus: req.PostStatus, AutoResume: req.AutoResume,
		Variables: req.Variables})
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, autopilotConfigJSON(ap, tz), "autopilot config saved")
}

func (s *Server) listAutopilotRuns(c *gin.Context) {
	var q autopilotRunsQuery
	if err := bindQuery(c, &q); err != nil {
		fail(c, err)
		return
	}
	pg := q.page()
	list, total, err := s.autopilot.Runs(c.Request.Context(), scope(c), autopilot.RunsQuery{EnvironmentID: q.EnvironmentID, Status: q.Status,
		Sort: sortOf(q.Sort), Page: pg})
	if err != nil {
		fail(c, err)
		return
	}
	respondList(c, list, total, pg, autopilotRunJSON, "autopilot runs")
}

func (s *Server) getAutopilotRun(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	var q autopilotRunQuery
	if err := bindQuery(c, &q); err != nil {
		fail(c, err)
		return
	}
	var envID int64
	if q.EnvironmentID != nil {
		envID = *q.EnvironmentID
	}
	r, err := s.autopilot.Run(c.Request.Context(), scope(c), envID, id)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, autopilotRunJSON(r), "autopilot run "+r.Status)
}

func (s *Server) autopilotRunNow(c *gin.Context) {
	var req autopilotEnvRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	r, err := s.autopilot.RunNow(c.Request.Context(), scope(c), principal(c).User.ID, req.EnvironmentID)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusAccepted, autopilotRunJSON(r), fmt.Sprintf("autopilot run %d queued; follow it with GET /api/autopilot/runs/%d", r.ID, r.ID))
}

// autopilotStream serves the environment's autopilot topic. The topic is
// readied (opened, with the state in its snapshot) under the request's
// hold; the stream itself holds nothing (see serve).
func (s *Server) autopilotStream(c *gin.Context) {
	var q autopilotEnvQuery
	if err := bindQuery(c, &q); err != nil {
		fail(c, err)
		return
	}
	topic, tz, err := s.autopilot.Watch(c.Request.Context(), scope(c), q.EnvironmentID)
	if err != nil {
		fail(c, err)
		return
	}
	o := s.streamOptions(c)
	o.Encode = func(v any) any { return encodeAutopilotEvent(v, tz) }
	s.serve(c, topic, o)
}

// encodeAutopilotEvent renders the autopilot's stream events as the API
// does.
func encodeAutopilotEvent(v any, tz string) any {
	switch d := v.(type) {
	case *store.Autopilot:
		return autopilotStateJSON(d, tz)
	case *store.AutopilotRun:
		return autopilotRunJSON(d)
	case autopilot.Snapshot:
		out := autopilotSnapshotResponse{Autopilot: autopilotStateJSON(d.Autopilot, tz)}
		if d.Run != nil {
			r := autopilotRunJSON(d.Run)
			out.Run = &r
		}
		return out
	}
	return v
}

// autopilotSnapshotResponse is what a watcher gets first.
type autopilotSnapshotResponse struct {
	Autopilot autopilotStateResponse `json:"autopilot"`
	Run       *autopilotRunResponse  `json:"run"`
}
