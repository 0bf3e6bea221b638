package generation

import (
	"testing"

	"github.com/copydesk/copydesk/server/stream"
	"github.com/copydesk/copydesk/store"
)

func streamEvent(name string, data any) stream.Event { return stream.Event{Name: name, Data: data} }

// A late watcher's snapshot: nothing before the run, then the run with the
// text so far, then how it ended. (Moved from server/agent.)
func TestSnapshot(t *testing.T) {
	x := NewSnapshot[*store.AgentRun]("")
	if _, ok := x.Event(); ok {
		t.Fatal("a snapshot before the run")
	}
	run := &store.AgentRun{ID: 4, Status: store.RunRunning}
	x.Apply(streamEvent("run", run))
	x.Apply(streamEvent(EventDelta, Delta{Text: "Green "}))
	ev, ok := x.Event()
	x.Apply(streamEvent(EventDelta, Delta{Text: "tea"}))
	if !ok || ev.Name != EventSnapshot || ev.Data.(Snapshot[*store.AgentRun]).Text != "Green " || ev.Data.(Snapshot[*store.AgentRun]).Run != run {
		t.Fatalf("snapshot: %+v (it must not change once returned)", ev)
	}
	x.Apply(streamEvent(EventError, Failure{Detail: "the model crashed"}))
	ev, _ = x.Event()
	if s := ev.Data.(Snapshot[*store.AgentRun]); s.Text != "Green tea" || s.Detail != "the model crashed" {
		t.Fatalf("final snapshot: %+v", s)
	}
}

// A restart event (an archetype generation asking the model again) drops
// the text so far; its detail is not the ending's.
func TestSnapshotRestart(t *testing.T) {
	x := NewSnapshot[*store.CIERun]("retry")
	x.Apply(streamEvent("run", &store.CIERun{ID: 1}))
	x.Apply(streamEvent(EventDelta, Delta{Text: "not an article"}))
	x.Apply(streamEvent("retry", Failure{Detail: "asking again"}))
	x.Apply(streamEvent(EventDelta, Delta{Text: "TITLE: x"}))
	ev, _ := x.Event()
	if s := ev.Data.(Snapshot[*store.CIERun]); s.Text != "TITLE: x" || s.Detail != "" {
		t.Fatalf("snapshot after a retry: %+v", s)
	}
}
