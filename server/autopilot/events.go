package autopilot

import (
	"context"
	"strconv"

	"github.com/copydesk/copydesk/server/stream"
	"github.com/copydesk/copydesk/store"
)

// Live events: each environment's autopilot has a live topic (Topic) on
// the stream broker, open from the first time anything is emitted on
// it or anyone watches it, for as long as the server runs. Its events are
// `status` with the autopilot (state, pause, config) when that changes,
// and `run` with the run and its steps each time a step begins or ends
// and when the run ends. A watcher that joins gets `snapshot` first: the
// autopilot and the latest run as last emitted. What the events say is
// stored (GET /api/autopilot/status and /runs): a watcher that loses the
// stream loses no history.

// Events of an autopilot's topic.
const (
	EventStatus   = "status"
	EventRun      = "run"
	EventSnapshot = "snapshot"
)

// Topic is the event-stream topic of an environment's autopilot.
func Topic(envID int64) string { return topicPrefix + strconv.FormatInt(envID, 10) }

const topicPrefix = "autopilot/"

// Snapshot is the data of a `snapshot` event.
type Snapshot struct {
	Autopilot *store.Autopilot
	Run       *store.AutopilotRun // nil when no run was emitted yet
}

// snapshot folds the topic's events into a Snapshot.
type snapshot struct {
	ap  *store.Autopilot
	run *store.AutopilotRun
}

func (x *snapshot) Apply(ev stream.Event) {
	switch d := ev.Data.(type) {
	case *store.Autopilot:
		x.ap = d
	case *store.AutopilotRun:
		x.run = d
	}
}

func (x *snapshot) Event() (stream.Event, bool) {
	if x.ap == nil {
		return stream.Event{}, false
	}
	return stream.Event{Name: EventSnapshot, Data: Snapshot{Autopilot: x.ap, Run: x.run}}, true
}

// Watch checks that the scope sees the environment and readies its topic
// for a watcher: open, with the autopilot's state in its snapshot. It
// returns the topic and the environment's time zone.
func (s *Service) Watch(ctx context.Context, sc store.Scope, envID int64) (topic, timezone string, err error) {
	env, err := s.env(ctx, sc, envID)
	if err != nil {
		return "", "", err
	}
	if err := s.openTopic(ctx, env.ID); err != nil {
		return "", "", err
	}
	return Topic(env.ID), zone(env).String(), nil
}

// openTopic opens an environment's topic if this process has not, and
// emits the autopilot's state as its first event.
func (s *Service) openTopic(ctx context.Context, envID int64) error {
	if s.events == nil {
		return nil
	}
	s.topicsMu.Lock()
	defer s.topicsMu.Unlock()
	if s.topics[envID] {
		return nil
	}
	ap, err := s.db.AutopilotOf(ctx, envID)
	if err != nil {
		return err
	}
	s.events.Open(Topic(envID), stream.TopicOptions{Snapshot: &snapshot{}})
	s.topics[envID] = true
	s.send(envID, EventStatus, ap)
	return nil
}

// emit sends an event on an environment's topic, opening it first, and
// tells the other instances sharing the database (PostgreSQL) that it
// changed (see mirror). Failing to send it never fails the work: what the
// event says is stored.
func (s *Service) emit(ctx context.Context, envID int64, name string, data any) {
	if s.events == nil {
		return
	}
	if err := s.openTopic(context.WithoutCancel(ctx), envID); err != nil {
		s.log.Error("autopilot: open the event topic", "environment", envID, "err", err)
		return
	}
	s.send(envID, name, data)
	ref := ""
	if run, ok := data.(*store.AutopilotRun); ok {
		ref = strconv.FormatInt(run.ID, 10)
	}
	s.events.Announce(stream.Relayed{Topic: Topic(envID), Name: name, Ref: ref})
}

// mirror registers the autopilots' topics with the broker as states:
// every instance produces them (any request may pause an autopilot, any
// instance may run it), so each publishes under its own ids what another
// instance announces, read from the database; an instance where nobody
// has opened the environment's topic skips it (its first watcher reads
// the state). Each event is the whole state; each instance numbers the
// topic from a random start, so a client that resumes on another instance
// gets the snapshot.
func (s *Service) mirror() {
	if s.events == nil {
		return
	}
	s.events.Mirror(topicPrefix, stream.Mirror{State: func(ctx context.Context, r stream.Relayed) error {
		envID, err := stream.TopicID(r.Topic, topicPrefix)
		if err != nil {
			return err
		}
		s.topicsMu.Lock()
		open := s.topics[envID]
		s.topicsMu.Unlock()
		if !open {
			return nil
		}
		switch r.Name {
		case EventStatus:
			ap, err := s.db.AutopilotOf(ctx, envID)
			if err != nil {
				return err
			}
			s.send(envID, EventStatus, ap)
		case EventRun:
			id, err := strconv.ParseInt(r.Ref, 10, 64)
			if err != nil {
				return err
			}
			run, err := s.db.AutopilotRunByID(ctx, id)
			if err != nil {
				return err
			}
			s.send(envID, EventRun, run)
		}
		return nil
	}})
}

func (s *Service) send(envID int64, name string, data any) {
	if _, err := s.events.Publish(Topic(envID), stream.Event{Name: name, Data: data}); err != nil && !stream.Gone(err) {
		s.log.Error("autopilot event not sent", "environment", envID, "event", name, "err", err)
	}
}

// emitRun emits a run as it is stored now.
func (s *Service) emitRun(ctx context.Context, runID int64) {
	if s.events == nil {
		return
	}
	run, err := s.db.AutopilotRunByID(context.WithoutCancel(ctx), runID)
	if err != nil {
		s.log.Error("autopilot: read a run for its event", "run", runID, "err", err)
		return
	}
	s.emit(ctx, run.EnvironmentID, EventRun, run)
}
