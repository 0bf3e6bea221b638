package webhook

import (
	"context"
	"encoding/json"
	"time"

	"github.com/copydesk/copydesk/store"
)

// The event types a webhook may want (docs/webhooks.md says what each
// one's data holds).
const (
	PostPublished    = "post.published"
	PostFailed       = "post.failed"
	RunSucceeded     = "run.succeeded"
	RunFailed        = "run.failed"
	AutopilotPaused  = "autopilot.paused"
	BudgetReached    = "budget.reached"
	KeywordsImported = "keywords.imported"
	// Ping is the test event POST /api/webhooks/{id}/ping sends to one
	// webhook, whatever events it wants; it cannot be subscribed to.
	Ping = "webhook.ping"
)

// Events are the types a webhook may subscribe to, in the order the
// documentation lists them.
var Events = []string{PostPublished, PostFailed, RunSucceeded, RunFailed, AutopilotPaused, BudgetReached, KeywordsImported}

// Kinds of run in the data of run.succeeded and run.failed.
const (
	RunAgent     = "agent"
	RunArchetype = "archetype"
	RunScout     = "scout"
	RunAutopilot = "autopilot"
)

// Event is something that happened in an environment. Data holds the ids
// a receiver needs (post_id, run_id, ...); environment_id is added.
type Event struct {
	Type          string
	EnvironmentID int64
	Data          map[string]any
}

// Emitter is how the services say that an event happened: the one way
// events reach webhooks. Emit never fails the work that emitted it (a
// failure is logged) and never waits for a receiver: it only persists a
// delivery for each webhook that wants the event.
type Emitter interface {
	Emit(ctx context.Context, e Event)
}

// Discard is the Emitter of services built without webhooks (tests).
var Discard Emitter = discard{}

type discard struct{}

func (discard) Emit(context.Context, Event) {}

// Or returns e, or Discard when e is nil.
func Or(e Emitter) Emitter {
	if e == nil {
		return Discard
	}
	return e
}

// Body is the JSON body of a delivery, as the Standard Webhooks
// specification recommends.
type Body struct {
	Type      string         `json:"type"`
	Timestamp string         `json:"timestamp"`
	Data      map[string]any `json:"data"`
}

func body(e Event, at time.Time) (string, error) {
	data := map[string]any{}
	for k, v := range e.Data {
		data[k] = v
	}
	data["environment_id"] = e.EnvironmentID
	b, err := json.Marshal(Body{Type: e.Type, Timestamp: at.UTC().Format(time.RFC3339), Data: data})
	return string(b), err
}

// Emit persists a delivery of e for every enabled webhook of its
// environment that wants it, and has the sender plan its next run. It
// outlives the caller's cancellation (the event happened), for at most 10
// seconds.
func (s *Service) Emit(ctx context.Context, e Event) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if _, err := s.emit(ctx, e, nil); err != nil {
		s.log.Error("webhook event not recorded", "type", e.Type, "environment", e.EnvironmentID, "err", err)
	}
}

func (s *Service) emit(ctx context.Context, e Event, only *int64) ([]*store.WebhookDelivery, error) {
	payload, err := body(e, s.now())
	if err != nil {
		return nil, err
	}
	ds, err := s.db.CreateWebhookDeliveries(ctx, store.NewWebhookEvent{EnvironmentID: e.EnvironmentID, Type: e.Type, Payload: payload,
		WebhookID: only})
	if err != nil {
		return nil, err
	}
	if len(ds) > 0 {
		s.plan.Now(ctx)
	}
	return ds, nil
}

// RunEnded is the event of a run that ended: run.succeeded or run.failed
// (with its error), of kind (RunAgent, ...) and id, and the further ids a
// receiver needs. Another status (cancelled) is no event: ok is false.
func RunEnded(kind string, envID, runID int64, status, errText string, ids map[string]any) (e Event, ok bool) {
	data := map[string]any{"kind": kind, "run_id": runID}
	for k, v := range ids {
		data[k] = v
	}
	switch status {
	case store.RunSucceeded:
		return Event{Type: RunSucceeded, EnvironmentID: envID, Data: data}, true
	case store.RunFailed:
		data["error"] = errText
		return Event{Type: RunFailed, EnvironmentID: envID, Data: data}, true
	}
	return Event{}, false
}
