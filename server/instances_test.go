package server_test

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/copydesk/copydesk/server/agent"
	"github.com/copydesk/copydesk/server/generation"
	"github.com/copydesk/copydesk/server/stream"
	"github.com/copydesk/copydesk/store"
	"github.com/copydesk/copydesk/store/storetest"
)

// Several instances on one PostgreSQL database: the generations one runs
// stream to requesters and watchers connected to another (server/stream's
// relay.go). Jobs run only on the first instance here, so every stream
// below is served by the other from what the first relayed.

// otherInstance opens a second app on e's PostgreSQL database, with a data
// directory of its own, on e's clock; its job runner is not started.
func otherInstance(t *testing.T, e *env) *env {
	t.Helper()
	url, ok := pgDirs.Load(e.app.Config.DataDir)
	if !ok {
		t.Fatal("otherInstance: the first app is not on PostgreSQL")
	}
	dir := t.TempDir()
	pgDirs.Store(dir, url)
	b := openEnv(t, dir)
	b.app.DB.Now = e.app.DB.Now
	return b
}

func requireInstances(t *testing.T) {
	t.Helper()
	if !storetest.Postgres() {
		t.Skip("several instances share a PostgreSQL database: set COPYDESK_TEST_DATABASE")
	}
}

// A chat reply generated on A: its requester on B gets every event, a
// watcher that joins B late gets the text so far and then the rest, a
// client resumes on B from Last-Event-ID with A's ids, and a request on B
// that waits for the stored reply (no stream) is answered when A ends it.
func TestChatReplyAcrossInstances(t *testing.T) {
	requireInstances(t)
	t.Parallel()
	f := chatSetup(t, words("alpha ", "beta ", "gamma ", "delta"))
	b := otherInstance(t, f.e)
	srvB := httptest.NewServer(b.h)
	t.Cleanup(srvB.Close)
	f.llm.hold.Store(2)
	conv := f.chatNew(t, f.edATok, map[string]any{"title": "Letters"})
	s := openChatStream(t, "POST", fmt.Sprintf("%s/api/openchat/conversations/%d/messages", srvB.URL, conv), f.edATok,
		map[string]any{"content": "Greek letters", "stream": true})
	start, _ := s.next(t)
	first, _ := s.next(t)
	second, _ := s.next(t)
	if start.name != "message" || start.id != "1" || first.name != "delta" || first.id != "2" || second.id != "3" {
		t.Fatalf("the requester on B: %v %v %v", start, first, second)
	}
	agWaitChan(t, f.llm.held, "the reply to wait mid-stream")
	id := agID(start.JSON())
	streamURL := fmt.Sprintf("%s/api/openchat/messages/%d/stream", srvB.URL, id)

	late := openChatStream(t, "GET", streamURL, f.edATok, nil)
	snap, _ := late.next(t)
	if snap.name != "snapshot" || snap.id != "3" || snap.JSON()["text"] != "alpha beta " {
		t.Fatalf("the late watcher on B: %v", snap)
	}
	resumed := openChatStream(t, "GET", streamURL, f.edATok, nil, "Last-Event-ID", first.id)
	missed, _ := resumed.next(t)
	if missed.name != "delta" || missed.id != "3" || missed.JSON()["text"] != "beta " {
		t.Fatalf("resumed on B: %v", missed)
	}
	f.llm.releaseOnce()
	rest := s.rest(t)
	if got := names(rest); got != "delta,delta,done" {
		t.Fatalf("the requester's last events: %s", got)
	}
	for i, ev := range rest {
		if ev.id != strconv.Itoa(4+i) {
			t.Fatalf("event %d has id %q", i, ev.id)
		}
	}
	if whole := text([]sse{first, second}) + text(rest); whole != "alpha beta gamma delta" {
		t.Fatalf("the requester put together %q", whole)
	}
	if done := rest[len(rest)-1].JSON()["message"].(map[string]any); done["content"] != "alpha beta gamma delta" || done["status"] != "complete" {
		t.Fatalf("done on B: %v", done)
	}
	if got := names(resumed.rest(t)); got != "delta,delta,done" {
		t.Fatalf("resumed on B, after: %s", got)
	}
	if got := names(late.rest(t)); got != "delta,delta,done" {
		t.Fatalf("the late watcher on B, after: %s", got)
	}

	// Without a stream, the request on B waits for the reply A generates.
	f.llm.hold.Store(0)
	r := b.do(t, "POST", fmt.Sprintf("/api/openchat/conversations/%d/messages", conv), f.edATok, map[string]any{"content": "Again"})
	if r.Code != 201 || r.Data()["status"] != "complete" || r.Data()["content"] != "alpha beta gamma delta" {
		t.Fatalf("a reply awaited on B: %d %s", r.Code, r.Body)
	}
}

// A streamed agent run requested on B runs on A, which waits for the
// requester (connected to B) before its first event: every event reaches
// it, the last one the stored run.
func TestStreamedRunAcrossInstances(t *testing.T) {
	requireInstances(t)
	t.Parallel()
	f := chatSetup(t, words("Sow ", "it ", "warm."))
	b := otherInstance(t, f.e)
	srvB := httptest.NewServer(b.h)
	t.Cleanup(srvB.Close)
	agent := agCreate(t, f.e, f.edATok, map[string]any{"name": "Writer", "kind": "writer", "environment_id": f.envA})
	s := openChatStream(t, "POST", fmt.Sprintf("%s/api/agents/%d/execute", srvB.URL, agID(agent)), f.edATok,
		map[string]any{"input": "basil", "stream": true})
	evs := s.rest(t)
	if got := names(evs); got != "run,delta,delta,delta,done" {
		t.Fatalf("events on B: %s %v", got, evs)
	}
	if text(evs) != "Sow it warm." || evs[4].JSON()["output"] != "Sow it warm." || evs[4].JSON()["status"] != "succeeded" {
		t.Fatalf("events on B: %v", evs)
	}
}

// The latency of a relayed event, written in docs/scaling.md: from its
// Publish on A to its arrival at a subscriber on B (one NOTIFY through the
// database), over 1000 deltas of an agent run's topic. Only when asked.
func TestRelayLatency(t *testing.T) {
	requireInstances(t)
	if os.Getenv("COPYDESK_MEASURE_EVENTS") == "" {
		t.Skip("set COPYDESK_MEASURE_EVENTS=1 to measure")
	}
	a := newEnv(t)
	b := otherInstance(t, a)
	topic := agent.Topic(1 << 40) // no such run: deltas are not read from the database
	sub := b.app.Events.Subscribe(topic, 0)
	defer sub.Close()
	a.app.Events.Open(topic, stream.TopicOptions{Relay: true})
	var took []time.Duration
	for i := range 1000 {
		start := time.Now()
		if _, err := a.app.Events.Publish(topic, stream.Event{Name: generation.EventDelta, Data: generation.Delta{Text: fmt.Sprint("word ", i)}}); err != nil {
			t.Fatal(err)
		}
		select {
		case ev := <-sub.Events():
			if ev.Data != (generation.Delta{Text: fmt.Sprint("word ", i)}) {
				t.Fatalf("got %+v", ev)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no relayed event within 10 s")
		}
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	t.Logf("a delta published on A, at a subscriber on B: p50 %v, p99 %v, max %v (1000 events)",
		took[len(took)/2], took[len(took)*99/100], took[len(took)-1])
}

// An autopilot started and run on A: a watcher of its stream on B gets the
// status and each step of the run, read from the database on B.
func TestAutopilotStreamAcrossInstances(t *testing.T) {
	requireInstances(t)
	t.Parallel()
	a := newAPEnv(t, store.PostWordPress, "publish", "sourdough starter")
	b := otherInstance(t, a.env)
	srvB := httptest.NewServer(b.h)
	t.Cleanup(srvB.Close)
	s := openStream(t, fmt.Sprintf("%s/api/autopilot/stream?environment_id=%d", srvB.URL, a.envA), a.viewer)
	if ev := s.next(t, agBound); ev["event"] != "snapshot" || !strings.Contains(ev["data"], `"state":"stopped"`) {
		t.Fatalf("first event on B: %v", ev)
	}
	startJobs(t, a.env)
	a.control(t, "start", 200)
	if ev := s.next(t, agBound); ev["event"] != "status" || !strings.Contains(ev["data"], `"state":"running"`) {
		t.Fatalf("after the start on A, on B: %v", ev)
	}
	var seen []string
	for {
		ev := s.next(t, agBound)
		if ev["event"] != "run" {
			continue
		}
		var run struct {
			Status string `json:"status"`
			Steps  []struct{ Step, Status string }
		}
		if err := json.Unmarshal([]byte(ev["data"]), &run); err != nil {
			t.Fatal(err)
		}
		for _, st := range run.Steps {
			if mark := st.Step + " " + st.Status; st.Status != "pending" && !slices.Contains(seen, mark) {
				seen = append(seen, mark)
			}
		}
		if run.Status == "succeeded" {
			break
		}
	}
	if !slices.Contains(seen, "generate running") || !slices.Contains(seen, "publish succeeded") {
		t.Fatalf("the steps B saw: %v", seen)
	}
}

// A live session's generation runs on A and is asked for on B: watchers
// on both see its text, who watches is everyone on both, a watcher who
// joins B late gets the text so far, and a cancel through B stops A's
// call and keeps the text.
func TestLiveSessionAcrossInstances(t *testing.T) {
	requireInstances(t)
	t.Parallel()
	r := newLVRig(t) // jobs on A
	b := otherInstance(t, r.e)
	srvB := httptest.NewServer(b.h)
	t.Cleanup(srvB.Close)
	path := r.path(r.session, "/stream")
	onA := lvWatch(t, r.srv.URL+path, r.edATok)
	onA.until(t, "snapshot")
	onB := lvWatch(t, srvB.URL+path, r.viewATok)
	first := onB.next(t)
	if first.name != "snapshot" {
		t.Fatalf("first event on B: %+v", first)
	}
	who := func(ev lvEvent) string {
		var names []string
		for _, w := range ev.data["watchers"].([]any) {
			names = append(names, w.(map[string]any)["username"].(string))
		}
		return strings.Join(names, ",")
	}
	// A hears of the watcher on B.
	agWaitFor(t, "A to list the watcher on B", func() bool {
		ev := onA.next(t)
		return ev.name == "presence" && who(ev) == "alice,victor"
	})

	res := b.do(t, "POST", r.path(r.session, "/generate"), r.edATok, map[string]any{"prompt": "Write."})
	if res.Code != 202 {
		t.Fatalf("generate on B: %d %s", res.Code, res.Body)
	}
	genID := agID(res.Data())
	r.prov.send("one ", "two ")
	var a, bb lvText
	for a.text != "one two " {
		a.apply(onA.next(t))
	}
	for bb.text != "one two " {
		bb.apply(onB.next(t))
	}
	late := lvWatch(t, srvB.URL+path, r.adminTok)
	snap := late.next(t)
	if snap.name != "snapshot" || snap.data["text"] != "one two " || who(snap) != "alice,root,victor" {
		t.Fatalf("a late watcher on B: %+v", snap)
	}
	r.prov.send("three ")
	for bb.text != "one two three " {
		bb.apply(onB.next(t))
	}
	// Cancel through B: A's call stops, the text so far is kept.
	res = b.do(t, "POST", r.path(r.session, "/cancel"), r.edATok, nil)
	if res.Code != 200 || res.Data()["status"] != "cancelled" {
		t.Fatalf("cancel on B: %d %s", res.Code, res.Body)
	}
	agWaitChan(t, r.prov.gone, "A's provider call to stop")
	for _, w := range []*lvWatcher{onA, onB} {
		evs := w.until(t, "done")
		if done := evs[len(evs)-1]; done.data["status"] != "cancelled" || agNum(done.data["id"]) != float64(genID) {
			t.Fatalf("done: %+v", done)
		}
	}
	entries := r.waitIdle(t, r.session)
	if out := entries[len(entries)-1]; out["content"] != "one two three " {
		t.Fatalf("the output kept: %v", out)
	}
}
