package live

import (
	"context"
	"strings"

	"github.com/copydesk/copydesk/server/agent"
	"github.com/copydesk/copydesk/server/ai"
	"github.com/copydesk/copydesk/server/engine"
	"github.com/copydesk/copydesk/server/generation"
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
	g, err := s.db.CreateLiveGenerationWithJob(ctx, n, s.gens.Job(true))
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
	finished, err := s.gens.Cancel(ctx, g.ID, g.JobID, store.LiveOutcome{Status: store.RunCancelled, Output: text, Error: reason})
	if err != nil {
		return nil, err
	}
	if !running {
		s.end(finished)
	}
	return finished, nil
}

// ---- the job ----

// registerJobs registers the generation kind (server/generation). Its
// events go to the session's room (room.go), which every watcher shares,
// rather than to a topic of the generation's own; nobody is waited for.
func (s *Service) registerJobs() {
	s.gens = &generation.Kind[*store.LiveGeneration]{Name: "generation", Streamed: GenerateJob, Key: "generation_id",
		Load: s.db.LiveGenerationByID, Start: s.db.StartLiveGeneration, Finish: s.db.FinishLiveGeneration,
		ID:       func(g *store.LiveGeneration) int64 { return g.ID },
		Call:     s.generate,
		Watchers: roomWatchers{s},
		Jobs:     s.jobs, Events: s.events, Log: s.log}
	s.gens.Register()
}

// generate sends the session's history and the prompt, and publishes each
// piece of text in the room. The output kept is the text as published:
// exactly what the watchers got.
func (s *Service) generate(ctx context.Context, g *store.LiveGeneration, f generation.Feed) (store.LiveOutcome, error) {
	c := f.(*roomFeed).cur
	call, dropped, err := s.call(ctx, g)
	var res *engine.Result
	if err == nil {
		res, err = s.engine.Stream(ctx, call, f.Delta)
	}
	text, cancelled := s.stop(c)
	o := generation.Outcome(res, err)
	o.Output, o.Trimmed = text, dropped
	if cancelled { // recorded by the cancel; the usage is the call's
		err = generation.ErrStopped
	}
	return o, err
}

// roomWatchers are the watchers of a session's generations: its room.
type roomWatchers struct{ s *Service }

func (w roomWatchers) Begin(_ context.Context, g *store.LiveGeneration, _ bool) generation.Feed {
	return &roomFeed{s: w.s, cur: w.s.begin(g)}
}

func (w roomWatchers) End(_ context.Context, g *store.LiveGeneration) { w.s.end(g) }

// roomFeed publishes the generation under way in its room.
type roomFeed struct {
	s   *Service
	cur *current
}

func (f *roomFeed) Delta(text string) error {
	return generation.Pieces(text, func(piece string) error { return f.s.delta(f.cur, piece) })
}
func (f *roomFeed) Send(string, any)    {}
func (f *roomFeed) Abort(detail string) { f.s.abort(f.cur.gen.SessionID, f.cur.gen.ID, detail) }
func (f *roomFeed) Close()              {}

// ---- the engine call ----

// baseCall is the engine call of a session's agent, without its messages.
func baseCall(sess *store.LiveSession, a *store.Agent, userID *int64, vars map[string]string) engine.Call {
	c := engine.Call{Source: "live", UserID: userID, EnvironmentID: &sess.EnvironmentID, System: agent.FillVariables(a.SystemPrompt, vars)}
	generation.AsAgent(&c, a)
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
