// Package generation is copydesk's one way of running a model call as
// background work: agent runs (server/agent), archetype generations
// (server/cie), chat replies (server/chat) and live generations
// (server/live) are each a Kind, which supplies only what differs — its
// rows, its call, its words — while this package owns the life of the
// job:
//
//   - the job kinds: queued (background work nobody watches; a provider
//     failure that may pass is tried again) and streamed (watched as it
//     happens; tried once, never behind its requester's back);
//   - the start: the row is read from the job's payload and marked
//     running; one that finished meanwhile (cancelled) needs no work;
//   - the events of a streamed one, on its topic of the event-stream
//     broker (server/stream): the row as it starts, `delta` pieces of
//     text, then the final event; a late watcher gets one `snapshot`
//     (Snapshot). It first waits, up to RequesterWait, for its requester
//     to subscribe, so that they get every event;
//   - the ending, recorded once (the first ending recorded is kept) with
//     the usage of the calls made, however it ended: succeeded, failed,
//     cancelled, stopped by the server, or cut off by a database restore
//     (which writes nothing: the restored database says what the row is);
//   - the row of a job that ended without ending it (cancelled while
//     queued, failed for good): closed by the job's OnFinish, which ends
//     its stream and lets the kind tell the requester.
//
// A kind that publishes elsewhere than on a topic of its own (a live
// session's room) supplies its Watchers.
package generation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/copydesk/copydesk/server/ai"
	"github.com/copydesk/copydesk/server/engine"
	"github.com/copydesk/copydesk/server/jobs"
	"github.com/copydesk/copydesk/server/stream"
	"github.com/copydesk/copydesk/store"
)

// Events of a generation's topic, besides the kind's first event (Kind.Begin)
// and its own.
const (
	EventDelta    = "delta"
	EventDone     = "done"
	EventError    = "error"
	EventSnapshot = "snapshot"
)

// Delta is the data of a `delta` event.
type Delta struct {
	Text string `json:"text"`
}

// Failure is the data of an `error` event.
type Failure struct {
	Detail string `json:"detail"`
}

// RequesterWait bounds how long a streamed generation waits for its
// requester to subscribe before its first event. The request subscribes as
// soon as the row is recorded, so this is reached only when it died in
// between.
const RequesterWait = 5 * time.Second

// ErrStopped is what a Feed's Delta answers once the generation was
// cancelled and its ending recorded: the call stops there, and its usage
// is recorded with the ending the cancel kept.
var ErrStopped = engine.ErrStopped

// Why a generation ended early: the error of its ending.
const (
	Cancelled     = "cancelled"          // its job was cancelled (whoever did has recorded why, which is kept)
	ServerStopped = "the server stopped" // the server stopped under it
)

// Row is a generation's record.
type Row interface {
	Finished() bool
}

// Runner is the job runner (server/jobs) that carries generations out.
type Runner = jobs.Queue

// Feed is where a running generation's events go.
type Feed interface {
	// Delta publishes a piece of text; an error (ErrStopped) stops the
	// call.
	Delta(text string) error
	// Send publishes an event of the kind's own.
	Send(name string, data any)
	// Abort ends the events of a generation whose ending is not recorded
	// (a restore, a failed write), with detail.
	Abort(detail string)
	// Close ends the feed; the row's ending is published already, or
	// never will be.
	Close()
}

// Watchers is how a kind's generations are watched: by default on a topic
// of each generation's own (Kind.Topic).
type Watchers[R Row] interface {
	// Begin is a generation's start in its job's handler: it returns the
	// feed its events go to. streamed: its job is the streamed kind;
	// wait: its requester is to be waited for.
	Begin(ctx context.Context, r R, wait bool) Feed
	// End publishes a recorded ending (by the handler, or by the job's
	// OnFinish) and ends the generation's events.
	End(ctx context.Context, r R)
}

// Kind is one kind of generation: what differs between agent runs,
// archetype generations, chat replies and live generations.
type Kind[R Row] struct {
	// Name is what a generation is called in the details of its events
	// and in logs: "run", "generation", "reply".
	Name string
	// Queued and Streamed are the job kinds. Queued jobs are background
	// work without events, tried again on a failure that may pass (when
	// Requeue is set); streamed ones publish their events and run once.
	// Either may be empty.
	Queued, Streamed string
	// Key is the payload's field holding the row's id ("run_id").
	Key string
	// Wait bounds the wait for a requester to subscribe (RequesterWait
	// when 0).
	Wait time.Duration
	// AskWait makes the payload say whether a requester waits for the
	// streamed job (chat replies, whose one job kind serves both); without
	// it, a streamed job always waits for its requester.
	AskWait bool

	// The store.
	Load   func(ctx context.Context, id int64) (R, error)
	Start  func(ctx context.Context, id int64) (bool, error)
	Finish func(ctx context.Context, id int64, o store.Outcome) (R, error)
	// Requeue puts a row back to queued after a failure that may pass; nil
	// when the kind is never tried again.
	Requeue func(ctx context.Context, id int64, reason string) error
	// ID is a row's id.
	ID func(R) int64

	// Call makes the model call(s) of a started row and says how it ended:
	// the outcome holds the text so far and the usage even with an error.
	// f is nil for a queued job (no events: call engine.Generate).
	Call func(ctx context.Context, r R, f Feed) (store.Outcome, error)
	// After, when set, runs in the handler once a generation's ending is
	// recorded and before it is published, unless the job was stopped
	// (a chat's automatic title).
	After func(ctx context.Context, f Feed, r R)
	// Notify, when set, tells whoever asked for a generation how it
	// ended, once its job ended (so an attempt the runner retries says
	// nothing). job.Kind says whether it was streamed: the API tells of a
	// streamed agent run, and not of a streamed archetype generation.
	Notify func(ctx context.Context, job *store.Job, r R)
	// Released, when set, is called once a generation's handler or its
	// job's end is done with it.
	Released func(id int64)

	// CancelledStatus is the status of a generation cancelled or stopped
	// (store.RunCancelled when empty; a chat reply is incomplete).
	CancelledStatus string
	// CancelledWord is the error of a generation whose job was cancelled
	// (Cancelled when empty); NotBegun that of one cancelled before it
	// began (CancelledWord when empty).
	CancelledWord, NotBegun string
	// Deleted is the detail of the `error` event of a generation whose row
	// went while it ran ("the <Name> was deleted" when empty).
	Deleted string

	// The events on a topic of each generation's own, when Watchers is
	// nil.
	Topic func(id int64) string
	// Begin is the first event: the row as it starts.
	Begin func(ctx context.Context, r R) (stream.Event, bool)
	// Final is the last event of a recorded ending (see Ended).
	Final func(ctx context.Context, r R) stream.Event
	// Snapshot makes what a late watcher gets (NewSnapshot), and Replay is
	// how many events the topic keeps for Last-Event-ID.
	Snapshot func() stream.Snapshot
	Replay   int
	// Watchers replaces the topic (a live session's room).
	Watchers Watchers[R]
	// Decode, on another instance, reads the data of an event of the
	// kind's own (Feed.Send) relayed to it, when ok; the other events are
	// decoded as Delta or Failure.
	Decode func(name string, data []byte) (v any, ok bool, err error)

	Jobs   Runner
	Events *stream.Broker
	Log    *slog.Logger
}

// Register registers the kind's job kinds with its runner. Queued
// generations are background work, which together never take the last
// worker: a streamed one, which someone watches, never waits behind them.
func (k *Kind[R]) Register() {
	if k.Log == nil {
		k.Log = slog.New(slog.DiscardHandler)
	}
	if k.Watchers == nil {
		k.Watchers = topicWatchers[R]{k}
		if k.Events != nil {
			k.mirror()
		}
	}
	if k.Queued != "" {
		k.Jobs.Register(k.Queued, jobs.Kind{Handle: k.run, OnFinish: k.jobFinished, Background: true})
	}
	if k.Streamed != "" {
		k.Jobs.Register(k.Streamed, jobs.Kind{Handle: k.run, OnFinish: k.jobFinished})
	}
}

// Job is the job that carries out a new row, for the store's
// Create...WithJob: streamed or queued.
func (k *Kind[R]) Job(streamed bool) store.RunJob {
	j := store.RunJob{Kind: k.Queued, Payload: func(id int64) any { return map[string]any{k.Key: id} }}
	if streamed || k.Queued == "" {
		j.Kind, j.MaxAttempts = k.Streamed, 1
	}
	if k.AskWait {
		j.Payload = func(id int64) any { return map[string]any{k.Key: id, "stream": streamed} }
	}
	return j
}

// Enqueue records a new row with the job that carries it out, streamed or
// queued (create is the store's Create...WithJob, given Job), and wakes the
// runner for it once it is committed.
func (k *Kind[R]) Enqueue(streamed bool, create func(store.RunJob) (R, error)) (R, error) {
	r, err := create(k.Job(streamed))
	if err != nil {
		return r, err
	}
	k.Jobs.Signal()
	return r, nil
}

// Cancel records a generation's ending o (cancelled by someone), then
// cancels its job: the handler, if running, stops, records the usage of
// its call and keeps this ending; a queued job ends at once.
func (k *Kind[R]) Cancel(ctx context.Context, id int64, jobID *int64, o store.Outcome) (R, error) {
	if o.StopReason == "" {
		o.StopReason = ai.StopCancelled
	}
	finished, err := k.Finish(ctx, id, o)
	if err != nil {
		return finished, err
	}
	if err := jobs.Stop(ctx, k.Jobs, jobID); err != nil {
		var zero R
		return zero, err
	}
	// Read again: a handler that was running has recorded its call's
	// model and usage by now.
	if again, err := k.Load(ctx, id); err == nil {
		return again, nil
	}
	return finished, nil
}

// Ended is the default final event of a recorded ending: `done` with the
// row when it succeeded, `error` with the detail otherwise.
func (k *Kind[R]) Ended(status, errText string, r R) stream.Event {
	switch status {
	case store.RunSucceeded:
		return stream.Event{Name: EventDone, Data: r}
	case store.RunCancelled:
		return stream.Event{Name: EventError, Data: Failure{Detail: "the " + k.Name + " was cancelled: " + errText}}
	}
	return stream.Event{Name: EventError, Data: Failure{Detail: errText}}
}

// payload is a job's, read with the kind's Key.
type payload struct {
	id   int64
	wait bool
}

func (k *Kind[R]) payload(job *store.Job) (payload, error) {
	var m map[string]json.RawMessage
	p := payload{wait: !k.AskWait}
	if err := json.Unmarshal(job.Payload, &m); err != nil {
		return p, fmt.Errorf("%s job %d: bad payload: %w", k.Name, job.ID, err)
	}
	if err := json.Unmarshal(m[k.Key], &p.id); err != nil {
		return p, fmt.Errorf("%s job %d: bad payload: %s: %w", k.Name, job.ID, k.Key, err)
	}
	if raw, ok := m["stream"]; ok && k.AskWait {
		if err := json.Unmarshal(raw, &p.wait); err != nil {
			return p, fmt.Errorf("%s job %d: bad payload: stream: %w", k.Name, job.ID, err)
		}
	}
	return p, nil
}

// run carries out a generation's job. The runner holds the database for
// it and ends ctx when it is cancelled (context.Cause: jobs.ErrCancelled),
// the server stops, or a restore waits (store.ErrReplacing).
func (k *Kind[R]) run(ctx context.Context, job *store.Job) error {
	p, err := k.payload(job)
	if err != nil {
		return jobs.Permanent(err)
	}
	if k.Released != nil {
		defer k.Released(p.id)
	}
	r, err := k.Load(ctx, p.id)
	if store.IsNotFound(err) {
		return nil // deleted (with what holds it) before it began
	}
	if err != nil {
		return err
	}
	if r.Finished() {
		return nil // cancelled before it began
	}
	if ok, err := k.Start(ctx, p.id); err != nil || !ok {
		return err
	}
	if r, err = k.Load(ctx, p.id); err != nil {
		return err
	}
	streamed := job.Kind != k.Queued
	var f Feed
	if streamed {
		// A later attempt has nobody waiting for it.
		f = k.Watchers.Begin(ctx, r, p.wait && job.Attempts == 1)
		defer f.Close()
	}
	var o store.Outcome
	if ctx.Err() == nil {
		o, err = k.Call(ctx, r, f)
	}
	if err != nil && o.StopReason == "" {
		o.StopReason = ai.StopError // it failed before its call, or between calls
	}
	wctx := context.WithoutCancel(ctx) // the ending is recorded even if the job was cancelled meanwhile
	switch cause := context.Cause(ctx); {
	case ctx.Err() != nil && errors.Is(cause, store.ErrReplacing):
		// The database is about to be replaced: write nothing. The row is
		// taken up from what the restored database says.
		if f != nil {
			f.Abort("the " + k.Name + " was interrupted by a database restore")
		}
		return ctx.Err()
	case ctx.Err() != nil && errors.Is(cause, jobs.ErrCancelled), errors.Is(err, ErrStopped):
		// Whoever cancelled it has recorded why, which is kept; the usage
		// of the call is recorded with it.
		o.Status, o.Error, o.StopReason, err = k.cancelledStatus(), k.cancelledWord(), ai.StopCancelled, nil
	case ctx.Err() != nil && !streamed:
		if err != nil {
			return ctx.Err() // stopped: it runs again
		}
	case ctx.Err() != nil:
		o.Status, o.Error, o.StopReason = k.cancelledStatus(), ServerStopped, ai.StopCancelled
	case err != nil && !streamed && k.Requeue != nil && engine.Retryable(err) && job.Attempts < job.MaxAttempts:
		if rerr := k.Requeue(wctx, p.id, store.Message(err)); rerr != nil {
			return rerr
		}
		return jobs.Retry(err)
	}
	finished, ferr := k.Finish(wctx, p.id, o)
	if ferr != nil {
		detail := "the " + k.Name + " could not be recorded"
		if store.IsNotFound(ferr) {
			detail, ferr = k.deleted(), nil
		}
		if f != nil {
			f.Abort(detail)
		}
		return errors.Join(err, ferr, ctx.Err())
	}
	if f != nil {
		if ctx.Err() == nil && k.After != nil {
			k.After(ctx, f, finished)
		}
		k.Watchers.End(wctx, finished)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return jobs.Permanent(err)
}

// jobFinished closes the row of a job that ended without ending it
// (failed for good, cancelled, or interrupted too often), publishes its
// ending if nobody did, and tells the requester how it went.
func (k *Kind[R]) jobFinished(ctx context.Context, job *store.Job) {
	p, err := k.payload(job)
	if err != nil {
		k.Log.Error(k.Name+" job with a bad payload", "job", job.ID, "err", err)
		return
	}
	if k.Released != nil {
		defer k.Released(p.id)
	}
	ctx = context.WithoutCancel(ctx) // it runs under its caller's hold: the runner's or a cancel request's
	r, err := k.Load(ctx, p.id)
	if store.IsNotFound(err) {
		return
	}
	if err != nil {
		k.Log.Error("the "+k.Name+" of a finished job", "id", p.id, "job", job.ID, "err", err)
		return
	}
	if !r.Finished() {
		o := store.Outcome{Status: store.RunFailed, Error: job.LastError, Usage: store.Usage{StopReason: ai.StopError}}
		if job.Status == store.JobCancelled {
			o = store.Outcome{Status: k.cancelledStatus(), Error: k.notBegun(), Usage: store.Usage{StopReason: ai.StopCancelled}}
		}
		if r, err = k.Finish(ctx, p.id, o); err != nil {
			k.Log.Error("finish "+k.Name, "id", p.id, "err", err)
			return
		}
	}
	// The handler has published the ending if it ran; if not, a requester
	// may be waiting.
	k.Watchers.End(ctx, r)
	if k.Notify != nil {
		k.Notify(ctx, job, r)
	}
}

func (k *Kind[R]) cancelledStatus() string {
	if k.CancelledStatus != "" {
		return k.CancelledStatus
	}
	return store.RunCancelled
}

func (k *Kind[R]) cancelledWord() string {
	if k.CancelledWord != "" {
		return k.CancelledWord
	}
	return Cancelled
}

func (k *Kind[R]) notBegun() string {
	if k.NotBegun != "" {
		return k.NotBegun
	}
	return k.cancelledWord()
}

func (k *Kind[R]) deleted() string {
	if k.Deleted != "" {
		return k.Deleted
	}
	return "the " + k.Name + " was deleted"
}

// Usage copies an engine result's model and usage into o.
func Usage(o *store.Outcome, res *engine.Result) {
	if res == nil {
		return
	}
	if res.Model != "" {
		o.Model = res.Model
	}
	o.InputTokens, o.OutputTokens, o.Cost, o.UsageEstimated = res.Usage.InputTokens, res.Usage.OutputTokens, res.Cost, res.UsageEstimated
	o.StopReason = res.StopReason
}

// Outcome is how a single call ended: its text and usage, succeeded or
// failed with the error's message.
func Outcome(res *engine.Result, err error) store.Outcome {
	o := store.Outcome{Status: store.RunSucceeded, Attempts: 1}
	if res != nil {
		o.Output = res.Text
		Usage(&o, res)
	}
	if err != nil {
		o.Status, o.Error = store.RunFailed, store.Message(err)
	}
	return o
}

// AsAgent makes c a call of agent a, as every kind's call with an agent
// is: the agent's credential, model and parameters win over the AI
// settings, and the usage counts as the agent's. Where the agent's system
// prompt goes is the kind's to say.
func AsAgent(c *engine.Call, a *store.Agent) {
	c.AgentID, c.CredentialID, c.Model, c.Temperature = &a.ID, a.CredentialID, a.Model, a.Temperature
	if a.MaxTokens != nil {
		c.MaxTokens = *a.MaxTokens
	}
}
