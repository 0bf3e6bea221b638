package live

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/copydesk/copydesk/server/agent"
	"github.com/copydesk/copydesk/server/ai"
	"github.com/copydesk/copydesk/server/engine"
	"github.com/copydesk/copydesk/server/jobs"
	"github.com/copydesk/copydesk/server/valid"
	"github.com/copydesk/copydesk/store"
)

// Generations. POST .../generate records the generation and its job in
// one transaction and answers at once; the job runner carries it out,
// publishing its text on the session's topic as it comes. Nobody waits on
// a connection for it, so neither a watcher nor the one who asked can slow
// it or stop it by going away: only a cancel, the session's closing or
// deletion, or the server stopping end it early, and each keeps the text
// so far.

// GenerateJob is the job kind of a generation. It runs once: a generation
// someone watches is not tried again behind their back.
const GenerateJob = "live.generate"

// payload is a generation job's.
type payload struct {
	GenerationID int64 `json:"generation_id"`
}

// GenerateInput is what an editor asks for.
type GenerateInput struct {
	Prompt    string
	Variables map[string]string // {{name}} in the prompt and the agent's system prompt
}

// Generate starts a generation in a session the scope sees: it checks the
// session can generate (open, its agent there and active, a usable
// provider) and records the generation, queued, with its job. A second
// generation while one is under way is a conflict.
func (s *Service) Generate(ctx context.Context, sc store.Scope, sessionID int64, in GenerateInput) (*store.LiveGeneration, error) {
	sess, err := s.Session(ctx, sc, sessionID)
	if err != nil {
		return nil, err
	}
	if sess.Status != store.LiveOpen {
		return nil, store.Conflict("live session %d is closed: it takes no more generations; create a new session", sess.ID)
	}
	if strings.TrimSpace(in.Prompt) == "" {
		return nil, store.Invalid("prompt: must not be empty")
	}
	if err := valid.MaxLen("prompt", in.Prompt, maxPrompt); err != nil {
		return nil, err
	}
	if err := agent.CheckVariables(in.Variables); err != nil {
		return nil, err
	}
	a, err := s.sessionAgent(ctx, sess)
	if err != nil {
		return nil, err
	}
	if !a.IsActive {
		return nil, store.Conflict("the session's agent %d is not active: set is_active to generate with it", a.ID)
	}
	// A 409 now (no provider, no model) beats a failed generation later.
	if _, _, err := s.engine.Plan(ctx, baseCall(sess, a, nil, in.Variables)); err != nil {
		return nil, err
	}
	n := store.NewLiveGeneration{SessionID: sess.ID, Prompt: in.Prompt, Variables: in.Variables, MaxPerSession: s.max}
	if sc.UserID != 0 {
		n.UserID = &sc.UserID
	}
	g, err := s.db.CreateLiveGenerationWithJob(ctx, n, store.RunJob{Kind: GenerateJob, MaxAttempts: 1,
		Payload: func(id int64) any { return payload{GenerationID: id} }})
	if err != nil {
		return nil, err
	}
	s.queued(g)
	s.jobs.Signal()
	return g, nil
}

// sessionAgent is the agent of a session; a conflict when it was deleted.
func (s *Service) sessionAgent(ctx context.Context, sess *store.LiveSession) (*store.Agent, error) {
	if sess.AgentID == nil {
		return nil, store.Conflict("the agent of live session %d was deleted: create a new session with another agent", sess.ID)
	}
	a, err := s.db.AgentByID(ctx, *sess.AgentID)
	if store.IsNotFound(err) {
		return nil, store.Conflict("the agent of live session %d was deleted: create a new session with another agent", sess.ID)
	}
	return a, err
}

// Cancel stops the generation under way in a session the scope sees,
// saying who did; its text so far is kept as its output, and it is
// returned as recorded. With none under way it is a conflict.
func (s *Service) Cancel(ctx context.Context, sc store.Scope, sessionID int64, by string) (*store.LiveGeneration, error) {
	sess, err := s.Session(ctx, sc, sessionID)
	if err != nil {
		return nil, err
	}
	g, err := s.db.ActiveLiveGeneration(ctx, sess.ID)
	if store.IsNotFound(err) {
		return nil, store.Conflict("no generation is under way in live session %d", sess.ID)
	}
	if err != nil {
		return nil, err
	}
	return s.cancelGeneration(ctx, g, "cancelled by "+by)
}

// stopActive cancels a session's generation under way, if any.
func (s *Service) stopActive(ctx context.Context, sessionID int64, reason string) error {
	g, err := s.db.ActiveLiveGeneration(ctx, sessionID)
	if store.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = s.cancelGeneration(ctx, g, reason)
	return err
}

// cancelGeneration records a generation's end as cancelled with the text
// its watchers got, then cancels its job: a running handler stops its call
// (its deltas are refused from now on) and records the call's usage. One
// not running yet ends here.
func (s *Service) cancelGeneration(ctx context.Context, g *store.LiveGeneration, reason string) (*store.LiveGeneration, error) {
	text, running := s.cancel(g.SessionID, g.ID)
	finished, err := s.db.FinishLiveGeneration(ctx, g.ID, store.LiveOutcome{Status: store.RunCancelled, Output: text, Error: reason})
	if err != nil {
		return nil, err
	}
	if err := jobs.Stop(ctx, s.jobs, g.JobID); err != nil {
		return nil, err
	}
	if !running {
		s.end(finished)
	}
	return finished, nil
}

// ---- the job ----

// runGeneration carries out a generation: it sends the session's history
// and the prompt, publishes each piece of text, and records the output.
// The runner holds the database for it and ends ctx when the generation
// is cancelled, the server stops or a restore waits.
func (s *Service) runGeneration(ctx context.Context, job *store.Job) error {
	var p payload
	if err := json.Unmarshal(job.Payload, &p); err != nil {
		return jobs.Permanent(fmt.Errorf("live generation job %d: bad payload: %w", job.ID, err))
	}
	g, err := s.db.LiveGenerationByID(ctx, p.GenerationID)
	if store.IsNotFound(err) || (err == nil && g.Finished()) {
		return nil // deleted with its session, or cancelled before it started
	} else if err != nil {
		return err
	}
	if ok, err := s.db.StartLiveGeneration(ctx, g.ID); err != nil || !ok {
		return err
	}
	if g, err = s.db.LiveGenerationByID(ctx, g.ID); err != nil {
		return err
	}
	c := s.begin(g)
	call, dropped, err := s.call(ctx, g)
	var res *engine.Result
	if err == nil {
		res, err = s.engine.Stream(ctx, call, func(text string) error { return s.delta(c, text) })
	}
	text, cancelled := s.stop(c)
	if errors.Is(context.Cause(ctx), store.ErrReplacing) {
		// The database is about to be replaced: write nothing. The
		// generation is taken up from what the restored database says.
		s.abort(g.SessionID, g.ID, "the generation was interrupted by a database restore")
		return ctx.Err()
	}
	o := outcome(res, err, text, dropped)
	switch {
	case cancelled: // recorded by the cancel; the usage is the call's
		o.Status, err = store.RunCancelled, nil
	case ctx.Err() != nil:
		o.Status, o.Error = store.RunCancelled, "the server stopped"
		if errors.Is(context.Cause(ctx), jobs.ErrCancelled) {
			o.Error = "cancelled"
		}
	}
	finished, ferr := s.db.FinishLiveGeneration(context.WithoutCancel(ctx), g.ID, o)
	if ferr != nil {
		s.abort(g.SessionID, g.ID, "the generation could not be recorded")
		if store.IsNotFound(ferr) {
			return nil // its session was deleted meanwhile
		}
		return errors.Join(err, ferr)
	}
	s.end(finished)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return jobs.Permanent(err)
}

// outcome is how a generation's call ended: its text as published, the
// call's usage, and the error's message when it failed.
func outcome(res *engine.Result, err error, text string, dropped int) store.LiveOutcome {
	o := store.LiveOutcome{Status: store.RunSucceeded, Output: text, HistoryDropped: dropped}
	if res != nil {
		o.Model, o.InputTokens, o.OutputTokens, o.CostUSD, o.UsageEstimated = res.Model, res.Usage.InputTokens, res.Usage.OutputTokens,
			res.CostUSD, res.UsageEstimated
	}
	if err != nil {
		o.Status, o.Error = store.RunFailed, store.Message(err)
	}
	return o
}

// jobFinished closes the generation of a job that ended without finishing
// it (cancelled while queued, failed for good, or left by a restore) and
// tells the watchers.
func (s *Service) jobFinished(ctx context.Context, job *store.Job) {
	var p payload
	if err := json.Unmarshal(job.Payload, &p); err != nil {
		s.log.Error("live generation job with a bad payload", "job", job.ID, "err", err)
		return
	}
	ctx = context.WithoutCancel(ctx) // under its caller's hold: the runner's or a cancel request's
	g, err := s.db.LiveGenerationByID(ctx, p.GenerationID)
	if store.IsNotFound(err) {
		return
	}
	if err != nil {
		s.log.Error("the generation of a finished job", "generation", p.GenerationID, "job", job.ID, "err", err)
		return
	}
	if !g.Finished() {
		o := store.LiveOutcome{Status: store.RunFailed, Error: job.LastError}
		if job.Status == store.JobCancelled {
			o = store.LiveOutcome{Status: store.RunCancelled, Error: "cancelled"}
		}
		if g, err = s.db.FinishLiveGeneration(ctx, g.ID, o); err != nil {
			s.log.Error("finish live generation", "generation", p.GenerationID, "err", err)
			return
		}
	}
	s.end(g)
}

// ---- the engine call ----

// baseCall is the engine call of a session's agent, without its messages.
func baseCall(sess *store.LiveSession, a *store.Agent, userID *int64, vars map[string]string) engine.Call {
	c := engine.Call{Source: "live", UserID: userID, EnvironmentID: &sess.EnvironmentID, AgentID: &a.ID,
		CredentialID: a.CredentialID, Model: a.Model, Temperature: a.Temperature, System: agent.FillVariables(a.SystemPrompt, vars)}
	if a.MaxTokens != nil {
		c.MaxTokens = *a.MaxTokens
	}
	return c
}

// call is the engine call of a generation: the session's earlier
// exchanges that succeeded, then its prompt, trimmed oldest first to the
// model's context window; dropped counts the messages left out.
func (s *Service) call(ctx context.Context, g *store.LiveGeneration) (c engine.Call, dropped int, err error) {
	sess, err := s.db.LiveSessionByID(ctx, g.SessionID)
	if err != nil {
		return c, 0, err
	}
	a, err := s.sessionAgent(ctx, sess)
	if err != nil {
		return c, 0, err
	}
	c = baseCall(sess, a, g.UserID, g.Variables)
	earlier, err := s.db.ListLiveGenerations(ctx, sess.ID)
	if err != nil {
		return c, 0, err
	}
	var msgs []ai.Message
	for _, e := range earlier {
		if e.ID < g.ID && e.Status == store.RunSucceeded && e.Output != "" {
			msgs = append(msgs, ai.Message{Role: "user", Content: agent.FillVariables(e.Prompt, e.Variables)},
				ai.Message{Role: "assistant", Content: e.Output})
		}
	}
	msgs = append(msgs, ai.Message{Role: "user", Content: agent.FillVariables(g.Prompt, g.Variables)})
	eff, err := s.engine.Effective(ctx, &sess.EnvironmentID)
	if err != nil {
		return c, 0, err
	}
	_, model, err := s.engine.Plan(ctx, c)
	if err != nil {
		return c, 0, err
	}
	maxOut := eff.MaxOutputTokens
	if c.MaxTokens > 0 {
		maxOut = c.MaxTokens
	}
	c.Messages, dropped = engine.Trim(c.System, msgs, engine.PromptBudget(eff.ContextWindow(model), maxOut))
	return c, dropped, nil
}
