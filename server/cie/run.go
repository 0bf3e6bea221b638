package cie

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/copydesk/copydesk/server/ai"
	"github.com/copydesk/copydesk/server/engine"
	"github.com/copydesk/copydesk/server/generation"
	"github.com/copydesk/copydesk/server/notify"
	"github.com/copydesk/copydesk/server/stream"
	"github.com/copydesk/copydesk/server/webhook"
	"github.com/copydesk/copydesk/store"
)

// Generations. POST .../generate records a run with its prompts and the
// job that carries it out, in one transaction, as agent runs do
// (server/agent): queued (202, then polled), or streamed, when the job
// publishes the run's events on its topic (Topic) and the request serves
// them. A streamed generation does not depend on its watcher: a client
// that goes away leaves it to finish and be stored, to be read with GET
// /api/cie/runs/{id}.

// Job kinds of generations.
const (
	// RunJob carries out a queued generation; retryable provider failures
	// are tried again.
	RunJob = "cie.generate"
	// StreamJob carries out a streamed one, once: its requester watches.
	StreamJob = "cie.generate.stream"
)

// Events of a generation's topic of its own: `run` with the run as it
// starts, and `retry` (a generation.Failure) when the answer did not parse
// and the model is asked again (the text so far is to be dropped). The
// rest are server/generation's: `delta` pieces of text, then `done` with
// the finished run, or `error` with its detail. A late watcher gets
// `snapshot` (Snapshot).
const (
	EventRun   = "run"
	EventRetry = "retry"
)

// Topic is the event-stream topic of a generation.
func Topic(runID int64) string { return "cie/runs/" + strconv.FormatInt(runID, 10) }

// Snapshot is the data of a generation's `snapshot` event.
type Snapshot = generation.Snapshot[*store.CIERun]

// GenerateInput is what a caller asks for.
type GenerateInput struct {
	Variables     map[string]string
	AgentID       *int64
	EnvironmentID int64
	Stream        bool
}

// Generate checks a generation, renders its prompts and records it with
// its job. Nothing is recorded when it could not run (bad variables, no
// usable provider): the error says why.
func (s *Service) Generate(ctx context.Context, sc store.Scope, id int64, in GenerateInput) (*store.CIERun, error) {
	a, err := s.Get(ctx, sc, id)
	if err != nil {
		return nil, err
	}
	if err := s.usableIn(ctx, sc, a, in.EnvironmentID); err != nil {
		return nil, err
	}
	var ag *store.Agent
	if in.AgentID != nil {
		if ag, err = s.agent(ctx, sc, *in.AgentID, in.EnvironmentID); err != nil {
			return nil, err
		}
	}
	p, err := s.prompt(ctx, a, in.Variables, &in.EnvironmentID, ag)
	if err != nil {
		return nil, err
	}
	n := store.NewCIERun{ArchetypeID: a.ID, AgentID: in.AgentID, EnvironmentID: in.EnvironmentID, Variables: in.Variables,
		SystemPrompt: p.System, UserPrompt: p.User, Stream: in.Stream}
	if sc.UserID != 0 {
		n.UserID = &sc.UserID
	}
	// A 409 now (no provider, no model) beats a failed run later.
	if _, _, err := s.engine.Plan(ctx, call(&store.CIERun{AgentID: n.AgentID, EnvironmentID: n.EnvironmentID, UserID: n.UserID,
		SystemPrompt: p.System, UserPrompt: p.User}, ag)); err != nil {
		return nil, err
	}
	return s.runs.Enqueue(in.Stream, func(j store.RunJob) (*store.CIERun, error) { return s.db.CreateCIERunWithJob(ctx, n, j) })
}

// Run returns a generation the scope sees (one of its environments); any
// other is not found.
func (s *Service) Run(ctx context.Context, sc store.Scope, id int64) (*store.CIERun, error) {
	return store.Seen(ctx, id, s.db.CIERunByID, func(r *store.CIERun) bool { return sc.SeesOwned(&r.EnvironmentID, r.UserID) }, "run")
}

// RunFilter narrows Runs.
type RunFilter struct {
	EnvironmentID *int64
	ArchetypeID   *int64
	Status        string
}

// Runs lists the generations the scope sees, newest first: those of its
// environments, narrowed by f. Asking for an environment outside the
// scope is not found, as its runs would be.
func (s *Service) Runs(ctx context.Context, sc store.Scope, f RunFilter, page store.Page) ([]*store.CIERun, int, error) {
	if err := sc.RequireFilter(f.EnvironmentID); err != nil {
		return nil, 0, err
	}
	return s.db.ListCIERuns(ctx, store.CIERunFilter{EnvironmentID: f.EnvironmentID, ArchetypeID: f.ArchetypeID, Status: f.Status,
		Scope: sc, Page: page})
}

// Watch is what a watcher who joins a generation the scope sees gets
// (GET /api/cie/runs/{run_id}/events): for one that has ended, its final
// event (`done` with the run, or `error`), which is then the whole stream;
// for a streamed one still queued or running, nothing: its topic is
// served. One queued without stream has no events while it runs: a
// conflict, as there is nothing to watch but the run itself.
func (s *Service) Watch(ctx context.Context, sc store.Scope, id int64) (*stream.Event, error) {
	r, err := s.Run(ctx, sc, id)
	if err != nil {
		return nil, err
	}
	if r.Finished() {
		ev := s.runs.Ended(r.Status, r.Error, r)
		return &ev, nil
	}
	if !r.Stream {
		return nil, store.Conflict("generation %d was not streamed and has no events: follow it with GET /api/cie/runs/%d", id, id)
	}
	return nil, nil
}

// Cancel cancels a queued or running generation the scope sees, saying
// who did; a finished one is a conflict. A running one's provider call is
// cut, and the usage of what it had answered is recorded.
func (s *Service) Cancel(ctx context.Context, sc store.Scope, id int64, by string) (*store.CIERun, error) {
	r, err := s.Run(ctx, sc, id)
	if err != nil {
		return nil, err
	}
	if r.Finished() {
		return nil, store.Conflict("generation %d already %s", r.ID, r.Status)
	}
	return s.runs.Cancel(ctx, r.ID, r.JobID, store.CIEOutcome{Status: store.RunCancelled, Error: "cancelled by " + by})
}

// Succeeded returns a generation the scope sees whose article can be
// saved as a post: one that succeeded (a conflict otherwise), so that its
// title, description and body are the parsed article.
func (s *Service) Succeeded(ctx context.Context, sc store.Scope, id int64) (*store.CIERun, error) {
	r, err := s.Run(ctx, sc, id)
	if err != nil {
		return nil, err
	}
	if r.Status != store.RunSucceeded {
		return nil, store.Conflict("generation %d is %s: only the article of a succeeded generation can be saved as a post", r.ID, r.Status)
	}
	return r, nil
}

// ---- the article ----

// Article is what a generation produces.
type Article struct {
	Title       string
	Description string
	Body        string
}

// maxTitle bounds a parsed title: a longer "title" is the model writing
// its article on the title line.
const maxTitle = 300

// ParseArticle reads an answer in the format systemPrompt asks for:
//
//	TITLE: ...
//	DESCRIPTION: ...
//	---
//	Markdown body
//
// Blank lines around the header lines and a Markdown code fence around
// the whole answer are tolerated; anything else that differs is an error
// that says what, for the model to correct.
func ParseArticle(raw string) (Article, error) {
	text := strings.TrimSpace(strings.ReplaceAll(raw, "\r\n", "\n"))
	if strings.HasPrefix(text, "```") && strings.HasSuffix(text, "```") && len(text) > 6 {
		text = strings.TrimSpace(text[strings.Index(text, "\n")+1 : len(text)-3])
	}
	lines := strings.Split(text, "\n")
	i := 0
	next := func() (string, bool) {
		for i < len(lines) && strings.TrimSpace(lines[i]) == "" {
			i++
		}
		if i == len(lines) {
			return "", false
		}
		i++
		return strings.TrimSpace(lines[i-1]), true
	}
	field := func(name string) (string, error) {
		line, ok := next()
		if !ok {
			return "", fmt.Errorf("the answer ends before its %s: line", name)
		}
		if len(line) < len(name)+1 || !strings.EqualFold(line[:len(name)+1], name+":") {
			return "", fmt.Errorf("expected a line starting with %q, found %q", name+":", truncate(line, 60))
		}
		v := strings.TrimSpace(line[len(name)+1:])
		if v == "" {
			return "", fmt.Errorf("the %s: line is empty", name)
		}
		return v, nil
	}
	var art Article
	var err error
	if art.Title, err = field("TITLE"); err != nil {
		return art, err
	}
	if len([]rune(art.Title)) > maxTitle {
		return art, fmt.Errorf("the title is longer than %d characters", maxTitle)
	}
	if art.Description, err = field("DESCRIPTION"); err != nil {
		return art, err
	}
	if sep, ok := next(); !ok || sep != "---" {
		return art, fmt.Errorf("expected a line \"---\" after the DESCRIPTION: line, found %q", truncate(sep, 60))
	}
	art.Body = strings.TrimSpace(strings.Join(lines[i:], "\n"))
	if art.Body == "" {
		return art, errors.New("the body after the \"---\" line is empty")
	}
	return art, nil
}

// retryPrompt asks the model again after an answer that did not parse.
func retryPrompt(parseErr error) string {
	return "Your answer could not be read: " + parseErr.Error() + ". Write the whole article again. " + formatRule
}

// ---- the jobs ----

// registerJobs registers the generation kinds (server/generation): queued
// ones are background work, streamed ones are watched and never wait
// behind them.
func (s *Service) registerJobs() {
	s.runs = &generation.Kind[*store.CIERun]{Name: "generation", Queued: RunJob, Streamed: StreamJob, Key: "run_id",
		Load: s.db.CIERunByID, Start: s.db.StartCIERun, Finish: s.db.FinishCIERun, Requeue: s.db.RequeueCIERun,
		ID:   func(r *store.CIERun) int64 { return r.ID },
		Call: s.generate,
		Notify: func(ctx context.Context, job *store.Job, r *store.CIERun) {
			// Streamed or queued, a generation's end is an event; one run
			// inside an autopilot run is told of as the autopilot run.
			if e, ok := webhook.RunEnded(webhook.RunArchetype, r.EnvironmentID, r.ID, r.Status, r.Error,
				map[string]any{"archetype_id": r.ArchetypeID}); ok {
				s.hooks.Emit(ctx, e)
			}
			if job.Kind == RunJob {
				s.notifyRun(ctx, r)
			}
		},
		Topic: Topic,
		Begin: func(_ context.Context, r *store.CIERun) (stream.Event, bool) {
			return stream.Event{Name: EventRun, Data: r}, true
		},
		Final:    func(_ context.Context, r *store.CIERun) stream.Event { return s.runs.Ended(r.Status, r.Error, r) },
		Snapshot: func() stream.Snapshot { return generation.NewSnapshot[*store.CIERun](EventRetry) },
		Jobs:     s.jobs, Events: s.events, Log: s.log}
	s.runs.Register()
}

// generate asks for a run's article, once more with the parse error when
// the answer does not parse, and says how the run ends; streamed to f
// when it is watched.
func (s *Service) generate(ctx context.Context, run *store.CIERun, f generation.Feed) (store.CIEOutcome, error) {
	var ag *store.Agent
	if run.AgentID != nil {
		// Deleted meanwhile: the run's agent_id is null, and the settings
		// apply.
		var err error
		if ag, err = s.db.AgentByID(ctx, *run.AgentID); err != nil && !store.IsNotFound(err) {
			return store.CIEOutcome{Status: store.RunFailed, Error: store.Message(err)}, err
		}
	}
	return s.generateAs(ctx, call(run, ag), f)
}

// generateAs is generate with the engine call made: its Source says whom
// the usage is for.
func (s *Service) generateAs(ctx context.Context, c engine.Call, f generation.Feed) (store.CIEOutcome, error) {
	var o store.CIEOutcome
	for attempt := 1; ; attempt++ {
		var res *engine.Result
		var err error
		if f != nil {
			res, err = s.engine.Stream(ctx, c, f.Delta)
		} else {
			res, err = s.engine.Generate(ctx, c)
		}
		o.Attempts = attempt
		if res != nil {
			o.Model, o.Output, o.StopReason = res.Model, res.Text, res.StopReason
			o.InputTokens += res.Usage.InputTokens
			o.OutputTokens += res.Usage.OutputTokens
			o.UsageEstimated = o.UsageEstimated || res.UsageEstimated
			o.Cost = store.AddCost(o.Cost, res.Cost)
		}
		if err != nil {
			o.Status, o.Error = store.RunFailed, store.Message(err)
			return o, err
		}
		art, perr := ParseArticle(res.Text)
		if perr == nil {
			o.Status, o.Title, o.Description, o.Body, o.Output = store.RunSucceeded, art.Title, art.Description, art.Body, ""
			return o, nil
		}
		if res.StopReason == ai.StopLength {
			// Asking again would be cut off again, and paid for twice.
			o.Status, o.Error = store.RunFailed, CutOff(c)
			return o, nil
		}
		if attempt == 2 {
			o.Status = store.RunFailed
			o.Error = "the model's answer did not follow the article format, twice: " + perr.Error() + " (its answer is kept in raw_output)"
			return o, nil
		}
		if f != nil {
			f.Send(EventRetry, generation.Failure{Detail: "the answer could not be read (" + perr.Error() + "): asking the model again"})
		}
		c.Messages = append(c.Messages, ai.Message{Role: "assistant", Content: res.Text}, ai.Message{Role: "user", Content: retryPrompt(perr)})
	}
}

// CutOff is the error of a generation whose answer was cut off at the max
// tokens limit before the article was complete: it names the setting to
// raise, the agent's when the call used the agent's limit.
func CutOff(c engine.Call) string {
	setting := "max_output_tokens in PUT /api/settings/ai-content (the environment's, or the global one)"
	if c.MaxTokens > 0 && c.AgentID != nil {
		setting = fmt.Sprintf("the agent's max_tokens (%d) in PUT /api/agents/%d", c.MaxTokens, *c.AgentID)
	}
	return "the model's answer was cut off at the max tokens limit before the article was complete: raise " + setting +
		" (its answer is kept in raw_output)"
}

// notifyRun tells whoever queued a generation how it ended, as agent runs
// do: once, when its job ends, so an attempt the runner retries says
// nothing; a cancelled one needs no word. A streamed generation is not
// told about: its requester watched it end (as a publish answered in the
// request tells nobody). The note is tagged with the run's environment.
func (s *Service) notifyRun(ctx context.Context, r *store.CIERun) {
	if s.notify == nil || r.UserID == nil || r.Status == store.RunCancelled {
		return
	}
	what := "Article generation"
	if r.ArchetypeID != nil {
		if a, err := s.db.ArchetypeByID(ctx, *r.ArchetypeID); err == nil {
			what = fmt.Sprintf("%s generation", a.Name)
		}
	}
	note := notify.Note{Kind: notify.RunSucceeded, Title: fmt.Sprintf("%s finished: %s", what, r.Title),
		Body: notify.Preview(r.Description, 140), Link: fmt.Sprintf("/api/cie/runs/%d", r.ID), EnvironmentID: &r.EnvironmentID}
	if r.Status == store.RunFailed {
		note.Kind, note.Title, note.Body = notify.RunFailed, what+" failed", notify.Preview(r.Error, 200)
	}
	s.notify.User(ctx, *r.UserID, note)
}

// call is the engine call of a generation: the run's prompts, with the
// agent's credential, model and parameters when it has one.
func call(r *store.CIERun, ag *store.Agent) engine.Call {
	c := engine.Call{Source: "cie", UserID: r.UserID, EnvironmentID: &r.EnvironmentID, System: r.SystemPrompt,
		Messages: []ai.Message{{Role: "user", Content: r.UserPrompt}}}
	if ag != nil {
		generation.AsAgent(&c, ag)
	}
	return c
}
