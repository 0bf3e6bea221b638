package cie

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/copydesk/copydesk/server/ai"
	"github.com/copydesk/copydesk/server/engine"
	"github.com/copydesk/copydesk/server/jobs"
	"github.com/copydesk/copydesk/server/notify"
	"github.com/copydesk/copydesk/server/stream"
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

// Events of a generation's topic: `run` with the run as it starts,
// `delta` pieces of text, `retry` when the answer did not parse and the
// model is asked again (the text so far is to be dropped), then `done`
// with the finished run, or `error` with its detail. A late watcher gets
// `snapshot`.
const (
	EventRun      = "run"
	EventDelta    = "delta"
	EventRetry    = "retry"
	EventDone     = "done"
	EventError    = "error"
	EventSnapshot = "snapshot"
)

// Topic is the event-stream topic of a generation.
func Topic(runID int64) string { return "cie/runs/" + strconv.FormatInt(runID, 10) }

// Delta is the data of a `delta` event.
type Delta struct {
	Text string `json:"text"`
}

// Failure is the data of an `error` or `retry` event.
type Failure struct {
	Detail string `json:"detail"`
}

// Snapshot is the data of a `snapshot` event: the run as last published,
// the text of the current attempt so far, and the detail of the error
// that ended it, if one did.
type Snapshot struct {
	Run    *store.CIERun
	Text   string
	Detail string
}

// requesterWait bounds how long a streamed generation waits for its
// requester to subscribe (see agent.requesterWait).
const requesterWait = 5 * time.Second

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
	j := store.RunJob{Kind: RunJob, Payload: func(id int64) any { return payload{RunID: id} }}
	if in.Stream {
		j.Kind, j.MaxAttempts = StreamJob, 1
	}
	run, err := s.db.CreateCIERunWithJob(ctx, n, j)
	if err != nil {
		return nil, err
	}
	s.jobs.Signal()
	return run, nil
}

// Run returns a generation the scope sees (one of its environments); any
// other is not found.
func (s *Service) Run(ctx context.Context, sc store.Scope, id int64) (*store.CIERun, error) {
	r, err := s.db.CIERunByID(ctx, id)
	if err != nil {
		return nil, err
	}
	if !sc.SeesOwned(&r.EnvironmentID, r.UserID) {
		return nil, store.NotFound("run not found")
	}
	return r, nil
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

type payload struct {
	RunID int64 `json:"run_id"`
}

// registerJobs registers the generation kinds: queued ones are background
// work, streamed ones are watched and never wait behind them.
func (s *Service) registerJobs() {
	s.jobs.Register(RunJob, jobs.Kind{Handle: s.runQueued, OnFinish: s.jobFinished, Background: true})
	s.jobs.Register(StreamJob, jobs.Kind{Handle: s.runStreamed, OnFinish: s.jobFinished})
}

// runQueued carries out a queued generation.
func (s *Service) runQueued(ctx context.Context, job *store.Job) error {
	run, ag, err := s.start(ctx, job)
	if err != nil || run == nil {
		return err
	}
	o, err := s.generate(ctx, run, ag, nil)
	wctx := context.WithoutCancel(ctx)
	switch {
	case err != nil && ctx.Err() != nil:
		return ctx.Err() // cancelled or stopped: jobFinished closes the run, or it runs again
	case err != nil && engine.Retryable(err) && job.Attempts < job.MaxAttempts:
		if rerr := s.db.RequeueCIERun(wctx, run.ID, store.Message(err)); rerr != nil {
			return rerr
		}
		return jobs.Retry(err)
	}
	if _, ferr := s.db.FinishCIERun(wctx, run.ID, o); ferr != nil {
		return errors.Join(err, ferr)
	}
	return jobs.Permanent(err)
}

// runStreamed carries out a streamed generation, publishing it on its
// topic.
func (s *Service) runStreamed(ctx context.Context, job *store.Job) error {
	run, ag, err := s.start(ctx, job)
	if err != nil || run == nil {
		return err
	}
	topic := Topic(run.ID)
	if job.Attempts == 1 {
		wait, cancel := context.WithTimeout(ctx, requesterWait)
		s.events.WaitSubscriber(wait, topic)
		cancel()
	}
	s.events.Open(topic, stream.TopicOptions{Snapshot: &snapshot{}})
	defer s.events.Finish(topic)
	s.publish(topic, EventRun, run)
	o, err := s.generate(ctx, run, ag, func(name string, data any) { s.publish(topic, name, data) })
	if ctx.Err() != nil {
		if errors.Is(context.Cause(ctx), store.ErrReplacing) {
			// The database is about to be replaced: write nothing.
			s.publish(topic, EventError, Failure{Detail: "the generation was interrupted by a database restore"})
			return ctx.Err()
		}
		o.Status, o.Error = store.RunCancelled, "the server stopped"
		if errors.Is(context.Cause(ctx), jobs.ErrCancelled) {
			o.Error = "cancelled"
		}
	}
	finished, ferr := s.db.FinishCIERun(context.WithoutCancel(ctx), run.ID, o)
	if ferr != nil {
		s.publish(topic, EventError, Failure{Detail: "the generation could not be recorded"})
		return errors.Join(err, ferr)
	}
	s.publishEnd(finished)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return jobs.Permanent(err)
}

// generate asks for the article, once more with the parse error when the
// answer does not parse, and says how the run ends. emit, when set,
// publishes the deltas and the retry.
func (s *Service) generate(ctx context.Context, run *store.CIERun, ag *store.Agent, emit func(name string, data any)) (store.CIEOutcome, error) {
	return s.generateAs(ctx, call(run, ag), emit)
}

// generateAs is generate with the engine call made: its Source says whom
// the usage is for.
func (s *Service) generateAs(ctx context.Context, c engine.Call, emit func(name string, data any)) (store.CIEOutcome, error) {
	var o store.CIEOutcome
	for attempt := 1; ; attempt++ {
		var res *engine.Result
		var err error
		if emit != nil {
			res, err = s.engine.Stream(ctx, c, func(text string) error {
				emit(EventDelta, Delta{Text: text})
				return nil
			})
		} else {
			res, err = s.engine.Generate(ctx, c)
		}
		o.Attempts = attempt
		if res != nil {
			o.Model, o.RawOutput = res.Model, res.Text
			o.InputTokens += res.Usage.InputTokens
			o.OutputTokens += res.Usage.OutputTokens
			o.UsageEstimated = o.UsageEstimated || res.UsageEstimated
			if res.CostUSD != nil {
				sum := *res.CostUSD
				if o.CostUSD != nil {
					sum += *o.CostUSD
				}
				o.CostUSD = &sum
			}
		}
		if err != nil {
			o.Status, o.Error = store.RunFailed, store.Message(err)
			return o, err
		}
		art, perr := ParseArticle(res.Text)
		if perr == nil {
			o.Status, o.Title, o.Description, o.Body, o.RawOutput = store.RunSucceeded, art.Title, art.Description, art.Body, ""
			return o, nil
		}
		if attempt == 2 {
			o.Status = store.RunFailed
			o.Error = "the model's answer did not follow the article format, twice: " + perr.Error() + " (its answer is kept in raw_output)"
			return o, nil
		}
		if emit != nil {
			emit(EventRetry, Failure{Detail: "the answer could not be read (" + perr.Error() + "): asking the model again"})
		}
		c.Messages = append(c.Messages, ai.Message{Role: "assistant", Content: res.Text}, ai.Message{Role: "user", Content: retryPrompt(perr)})
	}
}

// start marks a job's run running and returns it with its agent; nil when
// it needs no work.
func (s *Service) start(ctx context.Context, job *store.Job) (*store.CIERun, *store.Agent, error) {
	var p payload
	if err := json.Unmarshal(job.Payload, &p); err != nil {
		return nil, nil, jobs.Permanent(fmt.Errorf("cie job %d: bad payload: %w", job.ID, err))
	}
	run, err := s.db.CIERunByID(ctx, p.RunID)
	if err != nil {
		return nil, nil, jobs.Permanent(err)
	}
	if run.Finished() {
		return nil, nil, nil
	}
	if ok, err := s.db.StartCIERun(ctx, run.ID); err != nil || !ok {
		return nil, nil, err
	}
	if run, err = s.db.CIERunByID(ctx, run.ID); err != nil {
		return nil, nil, err
	}
	var ag *store.Agent
	if run.AgentID != nil {
		// Deleted meanwhile: the run's agent_id is null, and the settings
		// apply.
		if ag, err = s.db.AgentByID(ctx, *run.AgentID); err != nil && !store.IsNotFound(err) {
			return nil, nil, err
		}
	}
	return run, ag, nil
}

// jobFinished closes the run of a job that ended without finishing it and
// ends its stream.
func (s *Service) jobFinished(ctx context.Context, job *store.Job) {
	var p payload
	if err := json.Unmarshal(job.Payload, &p); err != nil {
		s.log.Error("cie job with a bad payload", "job", job.ID, "err", err)
		return
	}
	ctx = context.WithoutCancel(ctx)
	run, err := s.db.CIERunByID(ctx, p.RunID)
	if err != nil {
		s.log.Error("the run of a finished cie job", "run", p.RunID, "job", job.ID, "err", err)
		return
	}
	if !run.Finished() {
		o := store.CIEOutcome{Status: store.RunFailed, Error: job.LastError}
		if job.Status == store.JobCancelled {
			o = store.CIEOutcome{Status: store.RunCancelled, Error: "cancelled"}
		}
		if run, err = s.db.FinishCIERun(ctx, run.ID, o); err != nil {
			s.log.Error("finish cie run", "run", p.RunID, "err", err)
			return
		}
	}
	s.publishEnd(run)
	s.events.Finish(Topic(run.ID))
	if job.Kind == RunJob {
		s.notifyRun(ctx, run)
	}
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
		c.AgentID, c.CredentialID, c.Model, c.Temperature = &ag.ID, ag.CredentialID, ag.Model, ag.Temperature
		if ag.MaxTokens != nil {
			c.MaxTokens = *ag.MaxTokens
		}
	}
	return c
}

// ---- events ----

func (s *Service) publish(topic, name string, data any) {
	if _, err := s.events.Publish(topic, stream.Event{Name: name, Data: data}); err != nil && !stream.Gone(err) {
		s.log.Error("cie event not published", "topic", topic, "event", name, "err", err)
	}
}

func (s *Service) publishEnd(r *store.CIERun) {
	topic := Topic(r.ID)
	switch r.Status {
	case store.RunSucceeded:
		s.publish(topic, EventDone, r)
	case store.RunCancelled:
		s.publish(topic, EventError, Failure{Detail: "the generation was cancelled: " + r.Error})
	default:
		s.publish(topic, EventError, Failure{Detail: r.Error})
	}
}

// snapshot folds a generation's events into what a late watcher needs.
type snapshot struct {
	run    *store.CIERun
	text   []byte
	detail string
}

func (x *snapshot) Apply(ev stream.Event) {
	switch d := ev.Data.(type) {
	case *store.CIERun:
		x.run = d
	case Delta:
		x.text = append(x.text, d.Text...)
	case Failure:
		if ev.Name == EventRetry {
			x.text = x.text[:0] // the next attempt starts over
			return
		}
		x.detail = d.Detail
	}
}

func (x *snapshot) Event() (stream.Event, bool) {
	if x.run == nil {
		return stream.Event{}, false
	}
	return stream.Event{Name: EventSnapshot, Data: Snapshot{Run: x.run, Text: string(x.text), Detail: x.detail}}, true
}
