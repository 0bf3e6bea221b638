package server

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/copydesk/copydesk/server/agent"
	"github.com/copydesk/copydesk/server/ai"
	"github.com/copydesk/copydesk/store"
)

// Agent runs: execution, queued or streamed (server/agent carries both out
// on the job runner), the runs' views and cancellation.

type executeRequest struct {
	Input         string            `json:"input" binding:"required,max=100000"`
	Variables     map[string]string `json:"variables" binding:"max=100,dive,max=20000"`
	EnvironmentID *int64            `json:"environment_id" binding:"omitempty,gt=0" doc:"where the run counts; default: the agent's environment"`
	Stream        bool              `json:"stream"`
}

type runResponse struct {
	ID            int64             `json:"id"`
	AgentID       int64             `json:"agent_id"`
	EnvironmentID *int64            `json:"environment_id"`
	UserID        *int64            `json:"user_id"`
	Status        string            `json:"status" enum:"queued,running,succeeded,failed,cancelled"`
	Input         string            `json:"input"`
	Variables     map[string]string `json:"variables"`
	Output        string            `json:"output"`
	outcomeResponse
	QueuedAt   Timestamp  `json:"queued_at"`
	StartedAt  *Timestamp `json:"started_at"`
	FinishedAt *Timestamp `json:"finished_at"`
	DurationMS *int64     `json:"duration_ms"`
}

// outcomeResponse is how a generation ended and what it cost, as every
// kind of generation shows it (an agent run, a chat reply, a live
// generation and its transcript entry; an archetype generation has its
// own, its tokens being over every attempt). Embedded, its fields are the
// answer's own.
type outcomeResponse struct {
	Error        string   `json:"error"`
	Model        string   `json:"model"`
	InputTokens  int64    `json:"input_tokens"`
	OutputTokens int64    `json:"output_tokens"`
	CostUSD      *float64 `json:"cost_usd"`
	StopReason   *string  `json:"stop_reason" enum:"stop,length,content_filter,tool_calls,cancelled,error,other" doc:"why the model stopped: stop (finished), length (cut off at the max tokens limit), content_filter, tool_calls, cancelled (stopped or cancelled), error (the call failed), other; null while it runs, and for generations made before it was recorded"`
	Truncated    bool     `json:"truncated" doc:"the answer was cut off at the max tokens limit (stop_reason length)"`
}

// outcomeJSON is the outcome of a generation from its error and usage.
func outcomeJSON(errText string, u store.Usage) outcomeResponse {
	return outcomeResponse{Error: errText, Model: u.Model, InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
		CostUSD: store.USDOf(u.Cost), StopReason: stopReason(u.StopReason), Truncated: truncated(u.StopReason)}
}

// stopReason is a generation's stop reason as the API shows it: null when
// unknown.
func stopReason(reason string) *string {
	if reason == "" {
		return nil
	}
	return &reason
}

// truncated says whether a generation's answer was cut off at the max
// tokens limit.
func truncated(reason string) bool { return reason == ai.StopLength }

func runJSON(r *store.AgentRun) runResponse {
	out := runResponse{ID: r.ID, AgentID: r.AgentID, EnvironmentID: r.EnvironmentID, UserID: r.UserID, Status: r.Status, Input: r.Input,
		Variables: r.Variables, Output: r.Output, outcomeResponse: outcomeJSON(r.Error, r.Usage),
		QueuedAt: Timestamp(r.QueuedAt), StartedAt: (*Timestamp)(r.StartedAt), FinishedAt: (*Timestamp)(r.FinishedAt)}
	if out.Variables == nil {
		out.Variables = map[string]string{}
	}
	if r.StartedAt != nil && r.FinishedAt != nil {
		d := r.FinishedAt.Sub(*r.StartedAt).Milliseconds()
		out.DurationMS = &d
	}
	return out
}

type runListQuery struct {
	pageQuery
	Status string `form:"status" binding:"omitempty,oneof=queued running succeeded failed cancelled"`
}

func (s *Server) getRun(c *gin.Context) {
	oneSaying(c, "run_id", s.agents.Run, runJSON, func(r *store.AgentRun) string { return "run " + r.Status })
}

func (s *Server) listAgentRuns(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	var q runListQuery
	if err := bindQuery(c, &q); err != nil {
		fail(c, err)
		return
	}
	pg := q.page()
	list, total, err := s.agents.Runs(c.Request.Context(), scope(c), id, q.Status, pg)
	if err != nil {
		fail(c, err)
		return
	}
	respondList(c, list, total, pg, runJSON, "runs")
}

func (s *Server) cancelRun(c *gin.Context) {
	oneSaying(c, "run_id", byCaller(c, s.agents.Cancel), runJSON, func(r *store.AgentRun) string { return "run " + r.Status })
}

// executeAgent records a run with its job: queued, it answers 202 with the
// run; streamed, it serves the run's events as its job publishes them.
func (s *Server) executeAgent(c *gin.Context) {
	var req executeRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	run, err := s.agents.Execute(c.Request.Context(), scope(c), id,
		agent.RunInput{Input: req.Input, Variables: req.Variables, EnvironmentID: req.EnvironmentID, Stream: req.Stream})
	if err != nil {
		fail(c, err)
		return
	}
	if req.Stream {
		s.serveRun(c, run)
		return
	}
	respond(c, http.StatusAccepted, runJSON(run), fmt.Sprintf("run %d queued; follow it with GET /api/agents/runs/%d", run.ID, run.ID))
}

// runEndGrace is how long a run's stream goes on after its session failed
// the re-check, for the run's own final event to end it. The run ends at
// once; this only bounds a job slow to say so. Real time, as the stream's
// own deadlines.
const runEndGrace = 10 * time.Second

// serveRun serves a streamed run's topic to its requester. The run goes
// with its stream: when the session fails the heartbeat's re-check the run
// fails (and the stream ends with the run's `error` event), and when the
// client goes away the run is cancelled.
func (s *Server) serveRun(c *gin.Context, run *store.AgentRun) {
	o := s.streamOptions(c)
	o.Encode = encodeRun
	recheck := o.Recheck
	var failedAt time.Time
	o.Recheck = func(ctx context.Context) error {
		err := recheck(ctx)
		switch {
		case err == nil:
			return nil
		case failedAt.IsZero():
			failedAt = time.Now()
			if endErr := s.agents.End(ctx, run.ID, store.RunFailed, "the session ended"); endErr != nil {
				logger(c).Error("end a streamed run whose session ended", "run", run.ID, "err", endErr)
				return err
			}
			return nil
		case time.Since(failedAt) < runEndGrace:
			return nil
		}
		return err
	}
	s.serve(c, agent.Topic(run.ID), o)
	if c.Request.Context().Err() == nil {
		return // the run ended, or the stream did (restore, shutdown): the run goes on or is dealt with by its job
	}
	err := s.held(context.WithoutCancel(c.Request.Context()), func(ctx context.Context) error {
		return s.agents.End(ctx, run.ID, store.RunCancelled, "the client disconnected")
	})
	if err != nil {
		logger(c).Error("cancel a streamed run whose client went away", "run", run.ID, "err", err)
	}
}

// encodeRun renders a run's stream events as the API does.
func encodeRun(v any) any {
	switch d := v.(type) {
	case *store.AgentRun:
		return runJSON(d)
	case agent.Snapshot:
		return runSnapshotResponse{Run: runJSON(d.Run), Text: d.Text, Detail: d.Detail}
	}
	return v
}

// runSnapshotResponse is what a watcher that joins a streamed run late gets
// instead of the events it missed.
type runSnapshotResponse struct {
	Run    runResponse `json:"run"`
	Text   string      `json:"text"`
	Detail string      `json:"detail,omitempty"`
}
