package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/copydesk/copydesk/server/ai"
	"github.com/copydesk/copydesk/server/engine"
	"github.com/copydesk/copydesk/server/jobs"
	"github.com/copydesk/copydesk/server/notify"
	"github.com/copydesk/copydesk/server/stream"
	"github.com/copydesk/copydesk/store"
)

// Runs. Executing an agent records the run and queues its job in one
// transaction; the job runner carries it out. A queued run is background
// work: nobody waits on the connection for it, it is polled or notified. A
// streamed run is interactive: its job publishes the run's events on the
// run's topic (Topic) of the event-stream broker while the request that
// started it serves that topic, and the runner always keeps a worker for
// it (jobs.Kind.Background).

// Job kinds of runs.
const (
	// RunJob carries out a queued run; retryable provider failures are
	// tried again.
	RunJob = "agent.run"
	// StreamJob carries out a streamed run, once: its requester watches it
	// happen, so it is never tried again behind their back.
	StreamJob = "agent.run.stream"
)

// Events of a run's topic: `run` with the run as it starts, `delta` pieces
// of text, then `done` with the finished run or `error` with its detail.
// A watcher that joins late gets `snapshot` instead of what it missed.
const (
	EventRun      = "run"
	EventDelta    = "delta"
	EventDone     = "done"
	EventError    = "error"
	EventSnapshot = "snapshot"
)

// Topic is the event-stream topic of a run.
func Topic(runID int64) string { return "runs/" + strconv.FormatInt(runID, 10) }

// Delta is the data of a `delta` event.
type Delta struct {
	Text string `json:"text"`
}

// Failure is the data of an `error` event.
type Failure struct {
	Detail string `json:"detail"`
}

// Snapshot is the data of a `snapshot` event: the run as last published,
// the text so far, and the detail of the `error` that ended it, if one did.
type Snapshot struct {
	Run    *store.AgentRun
	Text   string
	Detail string
}

// requesterWait bounds how long a streamed run waits for its requester to
// subscribe before its first event. The request subscribes as soon as the
// run is recorded, so this is reached only when it died in between.
const requesterWait = 5 * time.Second

// RunInput is what a caller asks an agent to do.
type RunInput struct {
	Input     string
	Variables map[string]string // {{name}} in the input and the system prompt
	// EnvironmentID is where the run counts; nil: the agent's own.
	EnvironmentID *int64
	// Stream makes the run interactive: served from its topic (Topic) to
	// the caller as it happens.
	Stream bool
}

// Execute checks a run and records it with the job that carries it out,
// queued or streamed. When nothing could run it (no usable provider) the
// attempt is recorded as a failed run and the error returned: a 409 now
// beats a failed run later.
func (s *Service) Execute(ctx context.Context, sc store.Scope, agentID int64, in RunInput) (*store.AgentRun, error) {
	a, err := s.get(ctx, sc, agentID)
	if err != nil {
		return nil, err
	}
	if !a.IsActive {
		return nil, store.Conflict("the agent is not active: set is_active to run it")
	}
	if err := checkRunInput(in); err != nil {
		return nil, err
	}
	envID, err := s.runEnvironment(ctx, sc, a, in.EnvironmentID)
	if err != nil {
		return nil, err
	}
	n := store.NewRun{AgentID: a.ID, EnvironmentID: envID, Input: in.Input, Variables: in.Variables}
	if sc.UserID != 0 {
		n.UserID = &sc.UserID
	}
	planned := &store.AgentRun{AgentID: a.ID, EnvironmentID: n.EnvironmentID, UserID: n.UserID, Input: n.Input, Variables: n.Variables}
	if _, _, err := s.engine.Plan(ctx, call(a, planned)); err != nil {
		n.Refused = store.Message(err)
		if _, rerr := s.db.CreateRun(ctx, n); rerr != nil {
			return nil, rerr
		}
		return nil, err
	}
	j := store.RunJob{Kind: RunJob, Payload: func(id int64) any { return payload{RunID: id} }}
	if in.Stream {
		j.Kind, j.MaxAttempts = StreamJob, 1
	}
	run, err := s.db.CreateRunWithJob(ctx, n, j)
	if err != nil {
		return nil, err
	}
	s.jobs.Signal()
	return run, nil
}

// runEnvironment is where a run counts: the one asked for, which the scope
// sees and the agent may be used in, or the agent's own. Others than
// admins run a global agent in one of their environments.
func (s *Service) runEnvironment(ctx context.Context, sc store.Scope, a *store.Agent, asked *int64) (*int64, error) {
	envID := asked
	if envID == nil {
		envID = a.EnvironmentID
	}
	if envID == nil {
		if !sc.Admin {
			return nil, store.Invalid("environment_id: is required to run a global agent")
		}
		return nil, nil
	}
	if _, err := s.envs.Get(ctx, sc, *envID); store.IsNotFound(err) {
		return nil, store.Invalid("environment_id: no environment with id %d", *envID)
	} else if err != nil {
		return nil, err
	}
	if !a.UsableIn(*envID) {
		return nil, store.Invalid("environment_id: the agent is not assigned to environment %d", *envID)
	}
	return envID, nil
}

// Run returns a run the scope sees: one in its environments, or the
// caller's own outside any. Any other is not found.
func (s *Service) Run(ctx context.Context, sc store.Scope, id int64) (*store.AgentRun, error) {
	r, err := s.db.RunByID(ctx, id)
	if err != nil {
		return nil, err
	}
	if !sc.SeesOwned(r.EnvironmentID, r.UserID) {
		return nil, store.NotFound("run not found")
	}
	return r, nil
}

var runStatuses = []string{store.RunQueued, store.RunRunning, store.RunSucceeded, store.RunFailed, store.RunCancelled}

// Runs lists the runs of an agent the scope sees, newest first: those the
// scope sees (Run), of one status when asked.
func (s *Service) Runs(ctx context.Context, sc store.Scope, agentID int64, status string, page store.Page) ([]*store.AgentRun, int, error) {
	a, err := s.get(ctx, sc, agentID)
	if err != nil {
		return nil, 0, err
	}
	if status != "" && !slices.Contains(runStatuses, status) {
		return nil, 0, store.Invalid("status: must be one of: queued, running, succeeded, failed, cancelled")
	}
	return s.db.ListRuns(ctx, store.RunFilter{AgentID: &a.ID, Status: status, Scope: sc, Page: page})
}

// Cancel cancels a queued or running run the scope sees, saying who did;
// a finished one is a conflict. A running run's provider call is cut.
func (s *Service) Cancel(ctx context.Context, sc store.Scope, id int64, by string) (*store.AgentRun, error) {
	r, err := s.Run(ctx, sc, id)
	if err != nil {
		return nil, err
	}
	if r.Finished() {
		return nil, store.Conflict("the run already %s", r.Status)
	}
	return s.end(ctx, r, store.RunOutcome{Status: store.RunCancelled, Error: "cancelled by " + by})
}

// End ends a streamed run, unless it has finished, because its stream
// ended under it: status failed when the requester's session ended,
// cancelled when the requester went away; reason says which. The caller is
// the request that started the run.
func (s *Service) End(ctx context.Context, runID int64, status, reason string) error {
	r, err := s.db.RunByID(ctx, runID)
	if err != nil || r.Finished() {
		return err
	}
	_, err = s.end(ctx, r, store.RunOutcome{Status: status, Error: reason})
	return err
}

// end records how a run ends, then cancels its job: the handler, if
// running, stops and finds the ending already recorded (the first ending
// recorded is kept), and a queued job ends at once.
func (s *Service) end(ctx context.Context, r *store.AgentRun, o store.RunOutcome) (*store.AgentRun, error) {
	finished, err := s.db.FinishRun(ctx, r.ID, o)
	if err != nil {
		return nil, err
	}
	if err := jobs.Stop(ctx, s.jobs, r.JobID); err != nil {
		return nil, err
	}
	return finished, nil
}

// ---- the jobs ----

// payload is a run job's.
type payload struct {
	RunID int64 `json:"run_id"`
}

// registerJobs registers the run kinds. Queued runs are background work,
// which together never take the last worker: a streamed run, which someone
// watches, never waits behind them. Neither kind needs a limit of its own.
func (s *Service) registerJobs() {
	s.jobs.Register(RunJob, jobs.Kind{Handle: s.runQueued, OnFinish: s.jobFinished, Background: true})
	s.jobs.Register(StreamJob, jobs.Kind{Handle: s.runStreamed, OnFinish: s.jobFinished})
}

// runQueued carries out a queued run. The runner holds the database for
// it, and ends ctx when a restore waits: then the provider call stops and
// nothing more is written.
func (s *Service) runQueued(ctx context.Context, job *store.Job) error {
	run, a, err := s.start(ctx, job)
	if err != nil || run == nil {
		return err
	}
	res, err := s.engine.Generate(ctx, call(a, run))
	wctx := context.WithoutCancel(ctx) // the outcome is recorded even if the job was cancelled meanwhile
	switch {
	case err != nil && ctx.Err() != nil:
		return ctx.Err() // cancelled (jobFinished closes the run), or stopped: it runs again
	case err != nil && engine.Retryable(err) && job.Attempts < job.MaxAttempts:
		if rerr := s.db.RequeueRun(wctx, run.ID, store.Message(err)); rerr != nil {
			return rerr
		}
		return jobs.Retry(err)
	}
	if _, ferr := s.db.FinishRun(wctx, run.ID, outcome(res, err)); ferr != nil {
		return errors.Join(err, ferr)
	}
	return jobs.Permanent(err)
}

// runStreamed carries out a streamed run: it publishes the run, each piece
// of text and the ending on the run's topic, which its requester serves.
func (s *Service) runStreamed(ctx context.Context, job *store.Job) error {
	run, a, err := s.start(ctx, job)
	if err != nil || run == nil {
		return err
	}
	topic := Topic(run.ID)
	if job.Attempts == 1 { // a later attempt has nobody waiting for it
		wait, cancel := context.WithTimeout(ctx, requesterWait)
		s.events.WaitSubscriber(wait, topic)
		cancel()
	}
	s.events.Open(topic, stream.TopicOptions{Snapshot: &snapshot{}})
	defer s.events.Finish(topic)
	s.publish(topic, EventRun, run)
	var res *engine.Result
	if ctx.Err() == nil {
		res, err = s.engine.Stream(ctx, call(a, run), func(text string) error {
			s.publish(topic, EventDelta, Delta{Text: text})
			return nil
		})
	}
	if ctx.Err() != nil {
		return s.interrupted(ctx, run)
	}
	finished, ferr := s.db.FinishRun(context.WithoutCancel(ctx), run.ID, outcome(res, err))
	if ferr != nil {
		s.publish(topic, EventError, Failure{Detail: "the run could not be recorded"})
		return errors.Join(err, ferr)
	}
	s.publishEnd(finished)
	return jobs.Permanent(err)
}

// interrupted ends a streamed run whose job's context ended, and returns
// why for the runner.
func (s *Service) interrupted(ctx context.Context, run *store.AgentRun) error {
	o := store.RunOutcome{Status: store.RunCancelled, Error: "the server stopped"}
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, store.ErrReplacing):
		// The database is about to be replaced: write nothing. The run is
		// taken up from what the restored database says.
		s.publish(Topic(run.ID), EventError, Failure{Detail: "the run was interrupted by a database restore"})
		return ctx.Err()
	case errors.Is(cause, jobs.ErrCancelled):
		o.Error = "cancelled" // whoever cancelled it has recorded why, which is kept
	}
	finished, err := s.db.FinishRun(context.WithoutCancel(ctx), run.ID, o)
	if err != nil {
		s.publish(Topic(run.ID), EventError, Failure{Detail: "the run could not be recorded"})
		return errors.Join(ctx.Err(), err)
	}
	s.publishEnd(finished)
	return ctx.Err()
}

// start marks a job's run running and returns it with its agent; nil when
// it needs no work (it finished before it started: cancelled).
func (s *Service) start(ctx context.Context, job *store.Job) (*store.AgentRun, *store.Agent, error) {
	var p payload
	if err := json.Unmarshal(job.Payload, &p); err != nil {
		return nil, nil, jobs.Permanent(fmt.Errorf("agent run job %d: bad payload: %w", job.ID, err))
	}
	run, err := s.db.RunByID(ctx, p.RunID)
	if err != nil {
		return nil, nil, jobs.Permanent(err)
	}
	if run.Finished() {
		return nil, nil, nil
	}
	if ok, err := s.db.StartRun(ctx, run.ID); err != nil || !ok {
		return nil, nil, err
	}
	if run, err = s.db.RunByID(ctx, run.ID); err != nil {
		return nil, nil, err
	}
	a, err := s.db.AgentByID(ctx, run.AgentID)
	if err != nil {
		return nil, nil, jobs.Permanent(err)
	}
	return run, a, nil
}

// jobFinished closes the run of a job that ended without finishing it
// (failed for good, cancelled, or interrupted too often), ends its stream
// if one is open or awaited, and tells the requester how it went.
func (s *Service) jobFinished(ctx context.Context, job *store.Job) {
	var p payload
	if err := json.Unmarshal(job.Payload, &p); err != nil {
		s.log.Error("agent run job with a bad payload", "job", job.ID, "err", err)
		return
	}
	ctx = context.WithoutCancel(ctx) // it runs under its caller's hold: the runner's or a cancel request's
	run, err := s.db.RunByID(ctx, p.RunID)
	if err != nil {
		s.log.Error("the run of a finished job", "run", p.RunID, "job", job.ID, "err", err)
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
	// The handler has ended the stream if it ran; if not, a requester may
	// be waiting on the topic.
	s.publishEnd(run)
	s.events.Finish(Topic(run.ID))
	a, err := s.db.AgentByID(ctx, run.AgentID)
	if err != nil {
		s.log.Error("the agent of a finished run", "run", run.ID, "err", err)
		return
	}
	s.notifyRun(ctx, a, run)
}

// notifyRun tells whoever started a run how it ended; a cancelled run
// needs no word. The note is tagged with the run's environment, so it
// reaches the requester only if they still see it when it is delivered
// (store.CreateNotifications decides, in the insert).
func (s *Service) notifyRun(ctx context.Context, a *store.Agent, r *store.AgentRun) {
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

// ---- events ----

// publish sends one event of a run. An event the broker refuses because
// the server is stopping, or because the stream already ended, is not
// missed by anyone: the run's outcome is stored.
func (s *Service) publish(topic, name string, data any) {
	if _, err := s.events.Publish(topic, stream.Event{Name: name, Data: data}); err != nil && !stream.Gone(err) {
		s.log.Error("run event not published", "topic", topic, "event", name, "err", err)
	}
}

// publishEnd publishes the final event of a finished run.
func (s *Service) publishEnd(r *store.AgentRun) {
	topic := Topic(r.ID)
	switch r.Status {
	case store.RunSucceeded:
		s.publish(topic, EventDone, r)
	case store.RunCancelled:
		s.publish(topic, EventError, Failure{Detail: "the run was cancelled: " + r.Error})
	default:
		s.publish(topic, EventError, Failure{Detail: r.Error})
	}
}

// snapshot folds a run's events into what a late watcher needs (see
// stream.Snapshot): the run as last published, the text so far, and the
// detail of the error that ended it.
type snapshot struct {
	run    *store.AgentRun
	text   []byte
	detail string
}

func (x *snapshot) Apply(ev stream.Event) {
	switch d := ev.Data.(type) {
	case *store.AgentRun:
		x.run = d
	case Delta:
		x.text = append(x.text, d.Text...)
	case Failure:
		x.detail = d.Detail
	}
}

func (x *snapshot) Event() (stream.Event, bool) {
	if x.run == nil {
		return stream.Event{}, false
	}
	return stream.Event{Name: EventSnapshot, Data: Snapshot{Run: x.run, Text: string(x.text), Detail: x.detail}}, true
}

// ---- the engine call ----

// call is the engine call of a run.
func call(a *store.Agent, r *store.AgentRun) engine.Call {
	c := engine.Call{Source: "execution", UserID: r.UserID, EnvironmentID: r.EnvironmentID, AgentID: &a.ID,
		CredentialID: a.CredentialID, Model: a.Model, Temperature: a.Temperature,
		System:   FillVariables(a.SystemPrompt, r.Variables),
		Messages: []ai.Message{{Role: "user", Content: FillVariables(r.Input, r.Variables)}}}
	if a.MaxTokens != nil {
		c.MaxTokens = *a.MaxTokens
	}
	return c
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
