package agent

import (
	"testing"

	"github.com/copydesk/copydesk/server/stream"
	"github.com/copydesk/copydesk/store"
)

func streamEvent(name string, data any) stream.Event { return stream.Event{Name: name, Data: data} }

// A late watcher's snapshot: nothing before the run, then the run with the
// text so far, then how it ended.
func TestSnapshot(t *testing.T) {
	var x snapshot
	if _, ok := x.Event(); ok {
		t.Fatal("a snapshot before the run")
	}
	run := &store.AgentRun{ID: 4, Status: store.RunRunning}
	x.Apply(streamEvent(EventRun, run))
	x.Apply(streamEvent(EventDelta, Delta{Text: "Green "}))
	ev, ok := x.Event()
	x.Apply(streamEvent(EventDelta, Delta{Text: "tea"}))
	if !ok || ev.Name != EventSnapshot || ev.Data.(Snapshot).Text != "Green " || ev.Data.(Snapshot).Run != run {
		t.Fatalf("snapshot: %+v (it must not change once returned)", ev)
	}
	x.Apply(streamEvent(EventError, Failure{Detail: "the model crashed"}))
	ev, _ = x.Event()
	if s := ev.Data.(Snapshot); s.Text != "Green tea" || s.Detail != "the model crashed" {
		t.Fatalf("final snapshot: %+v", s)
	}
}
