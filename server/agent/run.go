package agent

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/copydesk/copydesk/server/ai"
	"github.com/copydesk/copydesk/server/engine"
	"github.com/copydesk/copydesk/server/environment"
	"github.com/copydesk/copydesk/server/generation"
	"github.com/copydesk/copydesk/server/notify"
	"github.com/copydesk/copydesk/server/stream"
	"github.com/copydesk/copydesk/server/webhook"
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

// EventRun starts a run's topic with the run as it starts; the rest are
// server/generation's: `delta` pieces of text, then `done` with the
// finished run or `error` with its detail. A watcher that joins late gets
// `snapshot` (Snapshot) instead of what it missed.
const EventRun = "run"

// Topic is the event-stream topic of a run.
func Topic(runID int64) string { return "runs/" + strconv.FormatInt(runID, 10) }

// Snapshot is the data of a run's `snapshot` event.
type Snapshot = generation.Snapshot[*store.AgentRun]

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
	return s.runs.Enqueue(in.Stream, func(j store.RunJob) (*store.AgentRun, error) { return s.db.CreateRunWithJob(ctx, n, j) })
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
	if _, err := environment.For(ctx, s.envs, sc, *envID); err != nil {
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
	return store.Seen(ctx, id, s.db.RunByID, func(r *store.AgentRun) bool { return sc.SeesOwned(r.EnvironmentID, r.UserID) }, "run")
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
	return s.runs.Cancel(ctx, r.ID, r.JobID, store.RunOutcome{Status: store.RunCancelled, Error: "cancelled by " + by})
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
	_, err = s.runs.Cancel(ctx, r.ID, r.JobID, store.RunOutcome{Status: status, Error: reason})
	return err
}

// ---- the jobs ----

// runs is the kind of generation agent runs are (server/generation): a
// queued run is background work, polled or notified; a streamed one is
// served from its topic (Topic) to the request that started it.
func (s *Service) registerJobs() {
	s.runs = &generation.Kind[*store.AgentRun]{Name: "run", Queued: RunJob, Streamed: StreamJob, Key: "run_id",
		Load: s.db.RunByID, Start: s.db.StartRun, Finish: s.db.FinishRun, Requeue: s.db.RequeueRun,
		ID:   func(r *store.AgentRun) int64 { return r.ID },
		Call: s.generate,
		Notify: func(ctx context.Context, _ *store.Job, r *store.AgentRun) {
			if r.EnvironmentID != nil {
				if e, ok := webhook.RunEnded(webhook.RunAgent, *r.EnvironmentID, r.ID, r.Status, r.Error,
					map[string]any{"agent_id": r.AgentID}); ok {
					s.hooks.Emit(ctx, e)
				}
			}
			a, err := s.db.AgentByID(ctx, r.AgentID)
			if err != nil {
				s.log.Error("the agent of a finished run", "run", r.ID, "err", err)
				return
			}
			s.notifyRun(ctx, a, r)
		},
		Topic: Topic,
		Begin: func(_ context.Context, r *store.AgentRun) (stream.Event, bool) {
			return stream.Event{Name: EventRun, Data: r}, true
		},
		Final:    func(_ context.Context, r *store.AgentRun) stream.Event { return s.runs.Ended(r.Status, r.Error, r) },
		Snapshot: func() stream.Snapshot { return generation.NewSnapshot[*store.AgentRun]("") },
		Jobs:     s.jobs, Events: s.events, Log: s.log}
	s.runs.Register()
}

// generate makes a run's call: streamed to f when it is watched.
func (s *Service) generate(ctx context.Context, run *store.AgentRun, f generation.Feed) (store.Outcome, error) {
	a, err := s.db.AgentByID(ctx, run.AgentID)
	if err != nil {
		return generation.Outcome(nil, err), err
	}
	var res *engine.Result
	if f == nil {
		res, err = s.engine.Generate(ctx, call(a, run))
	} else {
		res, err = s.engine.Stream(ctx, call(a, run), f.Delta)
	}
	return generation.Outcome(res, err), err
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

// ---- the engine call ----

// call is the engine call of a run.
func call(a *store.Agent, r *store.AgentRun) engine.Call {
	c := engine.Call{Source: "execution", UserID: r.UserID, EnvironmentID: r.EnvironmentID,
		System:   FillVariables(a.SystemPrompt, r.Variables),
		Messages: []ai.Message{{Role: "user", Content: FillVariables(r.Input, r.Variables)}}}
	generation.AsAgent(&c, a)
	return c
}
