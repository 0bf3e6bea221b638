package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/copydesk/copydesk/server/ai"
	"github.com/copydesk/copydesk/server/auth"
	"github.com/copydesk/copydesk/server/engine"
	"github.com/copydesk/copydesk/server/jobs"
	"github.com/copydesk/copydesk/server/notify"
	"github.com/copydesk/copydesk/store"
)

// Agent runs: execution (queued through the job runner, or streamed inside
// the request), the runs' views, cancellation, and the job handler.

type executeRequest struct {
	Input         string            `json:"input" binding:"required,max=100000"`
	Variables     map[string]string `json:"variables" binding:"max=100"`
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
	Error         string            `json:"error"`
	Model         string            `json:"model"`
	InputTokens   int64             `json:"input_tokens"`
	OutputTokens  int64             `json:"output_tokens"`
	CostUSD       *float64          `json:"cost_usd"`
	QueuedAt      time.Time         `json:"queued_at"`
	StartedAt     *time.Time        `json:"started_at"`
	FinishedAt    *time.Time        `json:"finished_at"`
	DurationMS    *int64            `json:"duration_ms"`
}

func runJSON(r *store.AgentRun) runResponse {
	out := runResponse{ID: r.ID, AgentID: r.AgentID, EnvironmentID: r.EnvironmentID, UserID: r.UserID, Status: r.Status, Input: r.Input,
		Variables: r.Variables, Output: r.Output, Error: r.Error, Model: r.Model, InputTokens: r.InputTokens, OutputTokens: r.OutputTokens,
		CostUSD: r.CostUSD, QueuedAt: r.QueuedAt, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt}
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

// runFor returns a run the caller may see: a run in a granted environment,
// or the caller's own run outside any environment.
func (s *Server) runFor(ctx context.Context, p *auth.Principal, id int64) (*store.AgentRun, error) {
	r, err := s.db.RunByID(ctx, id)
	if err != nil {
		return nil, err
	}
	if isAdmin(p) {
		return r, nil
	}
	if r.EnvironmentID == nil {
		if r.UserID != nil && *r.UserID == p.User.ID {
			return r, nil
		}
		return nil, store.NotFound("run not found")
	}
	if _, err := s.environments.Get(ctx, p.Scope, *r.EnvironmentID); err != nil {
		return nil, store.NotFound("run not found")
	}
	return r, nil
}

func (s *Server) getRun(c *gin.Context) {
	id, err := pathID(c, "run_id")
	if err != nil {
		fail(c, err)
		return
	}
	r, err := s.runFor(c.Request.Context(), principal(c), id)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, runJSON(r), "run "+r.Status)
}

func (s *Server) listAgentRuns(c *gin.Context) {
	a, err := s.agentFromPath(c)
	if err != nil {
		fail(c, err)
		return
	}
	var q runListQuery
	if err := bindQuery(c, &q); err != nil {
		fail(c, err)
		return
	}
	p := principal(c)
	f := store.RunFilter{AgentID: &a.ID, Status: q.Status, Page: q.page()}
	if !isAdmin(p) {
		f.VisibleTo = p.User.ID
	}
	list, total, err := s.db.ListRuns(c.Request.Context(), f)
	if err != nil {
		fail(c, err)
		return
	}
	items := make([]runResponse, 0, len(list))
	for _, r := range list {
		items = append(items, runJSON(r))
	}
	respond(c, http.StatusOK, listData[runResponse]{Items: items, Total: total, Page: f.Page.Page, PerPage: f.Page.PerPage}, "runs")
}

func (s *Server) cancelRun(c *gin.Context) {
	id, err := pathID(c, "run_id")
	if err != nil {
		fail(c, err)
		return
	}
	ctx := c.Request.Context()
	r, err := s.runFor(ctx, principal(c), id)
	if err != nil {
		fail(c, err)
		return
	}
	if r.Finished() {
		fail(c, store.Conflict("the run already %s", r.Status))
		return
	}
	by := principal(c).User.Username
	if stop, ok := s.streams.Load(r.ID); ok { // a streamed run: end its provider call
		stop.(context.CancelCauseFunc)(runCancelled{by: by})
	}
	if r.JobID != nil {
		if _, err := s.jobs.Cancel(ctx, *r.JobID); err != nil && store.KindOf(err) != store.KindConflict && !store.IsNotFound(err) {
			fail(c, err)
			return
		}
	}
	r, err = s.db.FinishRun(ctx, r.ID, store.RunOutcome{Status: store.RunCancelled, Error: "cancelled by " + by})
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, runJSON(r), "run "+r.Status)
}

// ---- execution ----

// AgentRunJob is the job kind that executes a queued agent run.
const AgentRunJob = "agent.run"

// registerAgentJobs registers the agent run job with the job runner.
func (s *Server) registerAgentJobs() {
	s.jobs.Register(AgentRunJob, jobs.Kind{Handle: s.runAgentJob, OnFinish: s.agentJobFinished})
}

type agentRunPayload struct {
	RunID int64 `json:"run_id"`
}

// fillVariables replaces {{name}} with its value.
func fillVariables(text string, vars map[string]string) string {
	if len(vars) == 0 {
		return text
	}
	pairs := make([]string, 0, 2*len(vars))
	for k, v := range vars {
		pairs = append(pairs, "{{"+k+"}}", v, "{{ "+k+" }}", v)
	}
	return strings.NewReplacer(pairs...).Replace(text)
}

// prepareRun checks an execution request and records the queued run.
func (s *Server) prepareRun(c *gin.Context, req *executeRequest) (*store.Agent, *store.AgentRun, error) {
	a, err := s.agentFromPath(c)
	if err != nil {
		return nil, nil, err
	}
	p := principal(c)
	ctx := c.Request.Context()
	if !a.IsActive {
		return nil, nil, store.Conflict("the agent is not active: set is_active to run it")
	}
	if strings.TrimSpace(req.Input) == "" {
		return nil, nil, store.Invalid("input: must not be empty")
	}
	for k, v := range req.Variables {
		if k == "" || utf8.RuneCountInString(k) > 100 || utf8.RuneCountInString(v) > 20000 {
			return nil, nil, store.Invalid("variables: names must be 1 to 100 characters and values at most 20000")
		}
	}
	envID := req.EnvironmentID
	if envID == nil {
		envID = a.EnvironmentID
	}
	if envID != nil {
		if _, err := s.environments.Get(ctx, p.Scope, *envID); store.IsNotFound(err) {
			return nil, nil, store.Invalid("environment_id: no environment with id %d", *envID)
		} else if err != nil {
			return nil, nil, err
		}
		if !a.UsableIn(*envID) {
			return nil, nil, store.Invalid("environment_id: the agent is not assigned to environment %d", *envID)
		}
	} else if !isAdmin(p) {
		return nil, nil, store.Invalid("environment_id: is required to run a global agent")
	}
	uid := p.User.ID
	r, err := s.db.CreateRun(ctx, store.NewRun{AgentID: a.ID, EnvironmentID: envID, UserID: &uid, Input: req.Input, Variables: req.Variables})
	return a, r, err
}

// executeAgent is an exclusive route (see Route.Exclusive): it holds the
// database for its bookkeeping but not while a streamed generation runs, so
// a restore need not wait for the stream.
func (s *Server) executeAgent(c *gin.Context) {
	var req executeRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	base := c.Request.Context()
	ctx, release := s.db.Hold(base)
	defer release()
	c.Request = c.Request.WithContext(ctx)
	a, run, err := s.prepareRun(c, &req)
	if err != nil {
		fail(c, err)
		return
	}
	// Fail fast when nothing could run it: a 409 now beats a failed run later.
	if _, _, err := s.engine.Plan(ctx, agentCall(a, run)); err != nil {
		s.db.FinishRun(ctx, run.ID, store.RunOutcome{Status: store.RunFailed, Error: store.Message(err)})
		fail(c, err)
		return
	}
	if req.Stream {
		release()
		c.Request = c.Request.WithContext(base)
		s.streamRun(c, a, run)
		return
	}
	job, err := s.jobs.Enqueue(ctx, AgentRunJob, agentRunPayload{RunID: run.ID}, jobs.EnqueueOptions{})
	if err != nil {
		fail(c, err)
		return
	}
	if err := s.db.SetRunJob(ctx, run.ID, job.ID); err != nil {
		fail(c, err)
		return
	}
	run.JobID = &job.ID
	respond(c, http.StatusAccepted, runJSON(run), "run queued")
}

// agentCall is the engine call of a run.
func agentCall(a *store.Agent, r *store.AgentRun) engine.Call {
	return engine.Call{Source: "execution", UserID: r.UserID, EnvironmentID: r.EnvironmentID, AgentID: &a.ID,
		CredentialID: a.CredentialID, Model: a.Model, Temperature: a.Temperature, MaxTokens: derefInt(a.MaxTokens),
		System:   fillVariables(a.SystemPrompt, r.Variables),
		Messages: []ai.Message{{Role: "user", Content: fillVariables(r.Input, r.Variables)}}}
}

func derefInt(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

// outcome turns an engine result into a run's ending.
func outcome(res *engine.Result, err error) store.RunOutcome {
	o := store.RunOutcome{Status: store.RunSucceeded}
	if res != nil {
		o.Output, o.Model, o.InputTokens, o.OutputTokens, o.CostUSD = res.Text, res.Model, res.Usage.InputTokens, res.Usage.OutputTokens, res.CostUSD
	}
	if err != nil {
		o.Status, o.Error = store.RunFailed, store.Message(err)
	}
	return o
}

// streamRun executes a run inside the request, streaming the text as
// Server-Sent Events.
func (s *Server) streamRun(c *gin.Context, a *store.Agent, run *store.AgentRun) {
	// The run can be ended from outside: a cancel request, the server
	// stopping, or its session being revoked (see the heartbeat below).
	ctx, cancel := context.WithCancelCause(c.Request.Context())
	defer cancel(nil)
	s.streams.Store(run.ID, cancel)
	defer s.streams.Delete(run.ID)

	hctx, release := s.db.Hold(ctx)
	_, err := s.db.StartRun(hctx, run.ID)
	if err == nil {
		run, err = s.db.RunByID(hctx, run.ID)
	}
	release()
	if err != nil {
		fail(c, err)
		return
	}
	_ = http.NewResponseController(c.Writer).SetReadDeadline(time.Time{})
	h := c.Writer.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	c.Status(http.StatusOK)
	var mu sync.Mutex // the heartbeat and the deltas share the writer
	w := c.Writer
	write := func(text string) error {
		mu.Lock()
		defer mu.Unlock()
		_, err := io.WriteString(w, text)
		w.Flush()
		return err
	}
	event := func(name string, v any) error {
		b, _ := json.Marshal(v)
		return write("event: " + name + "\ndata: " + string(b) + "\n\n")
	}
	event("run", runJSON(run))

	// Heartbeat: keeps proxies from closing a quiet stream (a slow first
	// token) and ends the run when its session is revoked.
	beat := make(chan struct{})
	defer close(beat)
	token := bearerToken(c)
	go func() {
		t := time.NewTicker(s.opts.StreamHeartbeat)
		defer t.Stop()
		for {
			select {
			case <-beat:
				return
			case <-t.C:
				hctx, release := s.db.Hold(ctx)
				_, err := s.auth.Authenticate(hctx, token)
				release()
				if err != nil {
					cancel(errStreamSessionEnded)
					return
				}
				if write(": heartbeat\n\n") != nil {
					cancel(errStreamClientGone)
					return
				}
			}
		}
	}()

	res, err := s.engine.Stream(ctx, agentCall(a, run), func(text string) error {
		return event("delta", map[string]string{"text": text})
	})
	o := outcome(res, err)
	if ctx.Err() != nil {
		o.Status, o.Error = store.RunCancelled, streamEndReason(ctx)
		if errors.Is(context.Cause(ctx), errStreamSessionEnded) {
			o.Status = store.RunFailed
		}
	}
	hctx, release = s.db.Hold(context.WithoutCancel(ctx))
	defer release()
	finished, ferr := s.db.FinishRun(hctx, run.ID, o)
	if ferr != nil {
		event("error", errorBody{Detail: "the run could not be recorded"})
		return
	}
	s.notifyRun(hctx, a, finished)
	switch {
	case finished.Status == store.RunCancelled:
		event("error", errorBody{Detail: "the run was cancelled: " + finished.Error})
	case err != nil:
		event("error", errorBody{Detail: store.Message(err)})
	default:
		event("done", runJSON(finished))
	}
}

// Why a streamed run's context ended, beyond the client going away.
var (
	errStreamSessionEnded = errors.New("the session ended")
	errStreamClientGone   = errors.New("the client disconnected")
	errServerStopping     = errors.New("the server stopped")
)

// runCancelled is the cause a cancel request gives a streamed run.
type runCancelled struct{ by string }

func (r runCancelled) Error() string { return "cancelled by " + r.by }

func streamEndReason(ctx context.Context) string {
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return cause.Error()
	}
	return errStreamClientGone.Error()
}

// StopStreams ends every streamed run (on shutdown), so none outlives the
// server or keeps it from stopping.
func (s *Server) StopStreams() {
	s.streams.Range(func(_, v any) bool {
		v.(context.CancelCauseFunc)(errServerStopping)
		return true
	})
}

// runAgentJob is the job handler for queued runs. The runner holds the
// database for it, and ends ctx when a restore waits: then the provider
// call stops and nothing more is written.
func (s *Server) runAgentJob(ctx context.Context, job *store.Job) error {
	var p agentRunPayload
	if err := json.Unmarshal(job.Payload, &p); err != nil {
		return jobs.Permanent(fmt.Errorf("agent run job %d: bad payload: %w", job.ID, err))
	}
	run, a, err := s.startQueuedRun(ctx, p.RunID)
	if err != nil || run == nil {
		return err
	}
	res, err := s.engine.Generate(ctx, agentCall(a, run))
	wctx := context.WithoutCancel(ctx) // the outcome is recorded even if the job was cancelled meanwhile
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if engine.Retryable(err) && job.Attempts < job.MaxAttempts {
			s.db.RequeueRun(wctx, run.ID, store.Message(err))
			return jobs.Retry(err)
		}
		s.db.FinishRun(wctx, run.ID, outcome(res, err))
		return jobs.Permanent(err)
	}
	_, err = s.db.FinishRun(wctx, run.ID, outcome(res, nil))
	return err
}

// startQueuedRun marks a queued run running; nil when it needs no work
// (cancelled before it started).
func (s *Server) startQueuedRun(ctx context.Context, runID int64) (*store.AgentRun, *store.Agent, error) {
	run, err := s.db.RunByID(ctx, runID)
	if err != nil {
		return nil, nil, jobs.Permanent(err)
	}
	if run.Finished() {
		return nil, nil, nil
	}
	if ok, err := s.db.StartRun(ctx, run.ID); err != nil || !ok {
		return nil, nil, err
	}
	a, err := s.db.AgentByID(ctx, run.AgentID)
	if err != nil {
		return nil, nil, jobs.Permanent(err)
	}
	return run, a, nil
}

// agentJobFinished closes the run of a job that ended without finishing it
// (failed for good, cancelled, or interrupted) and tells the user.
func (s *Server) agentJobFinished(ctx context.Context, job *store.Job) {
	var p agentRunPayload
	if json.Unmarshal(job.Payload, &p) != nil {
		return
	}
	ctx = context.WithoutCancel(ctx) // it runs under its caller's hold: the runner's or a cancel request's
	run, err := s.db.RunByID(ctx, p.RunID)
	if err != nil {
		return
	}
	if !run.Finished() {
		o := store.RunOutcome{Status: store.RunFailed, Error: job.LastError}
		if job.Status == store.JobCancelled {
			o = store.RunOutcome{Status: store.RunCancelled, Error: "cancelled"}
		}
		if run, err = s.db.FinishRun(ctx, run.ID, o); err != nil {
			s.log.Error("finish run", "run", p.RunID, "err", err)
			return
		}
	}
	a, err := s.db.AgentByID(ctx, run.AgentID)
	if err != nil {
		return
	}
	s.notifyRun(ctx, a, run)
}

// notifyRun tells whoever started a run how it ended.
func (s *Server) notifyRun(ctx context.Context, a *store.Agent, r *store.AgentRun) {
	if r.UserID == nil || r.Status == store.RunCancelled {
		return
	}
	note := notify.Note{Kind: notify.RunSucceeded, Title: fmt.Sprintf("%s finished", a.Name),
		Body: notify.Preview(r.Output, 140), Link: fmt.Sprintf("/api/agents/runs/%d", r.ID), EnvironmentID: r.EnvironmentID}
	if r.Status == store.RunFailed {
		note.Kind, note.Title, note.Body = notify.RunFailed, fmt.Sprintf("%s failed", a.Name), r.Error
	}
	s.notify.User(ctx, *r.UserID, note)
}
