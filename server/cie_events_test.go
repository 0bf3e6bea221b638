package server_test

import (
	"fmt"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// A client whose generation stream was cut joins it again with GET
// .../events: with Last-Event-ID, the events after it and then the live
// ones; without it, a snapshot of the text so far; once the generation
// has ended, its done event alone. The generation itself goes on while
// nobody watches.
func TestCIERunEventsResume(t *testing.T) {
	t.Parallel()
	f := agSetup(t)
	llm := newChatLLM(t, words(strings.SplitAfter(goodArticle, " ")...))
	llm.hold.Store(2)
	agConfigure(t, f.e, llm.srv.URL+"/v1")
	agRunJobs(t, f.e)
	ts := httptest.NewServer(f.e.h)
	defer ts.Close()
	srv := ts.URL
	builtin := cieBuiltin(t, f.e, f.edATok, "how-to")
	s := openChatStream(t, "POST", fmt.Sprintf("%s/api/cie/archetypes/%d/generate", srv, builtin), f.edATok,
		map[string]any{"variables": map[string]any{"keyword": "sourdough", "audience": "beginners"}, "environment_id": f.envA, "stream": true})
	start, _ := s.next(t)
	first, _ := s.next(t)
	if start.name != "run" || first.name != "delta" || first.id != "2" || first.JSON()["text"] != "TITLE: " {
		t.Fatalf("first events %v %v", start, first)
	}
	agWaitChan(t, llm.held, "the generation to wait mid-stream")
	s.hangUp()
	agWaitFor(t, "the stream to end", func() bool { return f.e.app.Events.Subscribers("cie/") == 0 })
	id := agID(start.JSON())
	eventsURL := fmt.Sprintf("%s/api/cie/runs/%d/events", srv, id)

	// A watcher without Last-Event-ID: the text so far, as one snapshot.
	late := openChatStream(t, "GET", eventsURL, f.edATok, nil)
	snap, _ := late.next(t)
	if snap.name != "snapshot" || snap.id != "3" || snap.JSON()["text"] != "TITLE: Sourdough " ||
		snap.JSON()["run"].(map[string]any)["status"] != "running" {
		t.Fatalf("snapshot %v", snap)
	}
	// The cut client resumes from the last event it had.
	resumed := openChatStream(t, "GET", eventsURL, f.edATok, nil, "Last-Event-ID", first.id)
	missed, _ := resumed.next(t)
	if missed.name != "delta" || missed.id != "3" || missed.JSON()["text"] != "Sourdough " {
		t.Fatalf("first resumed event %v", missed)
	}
	llm.releaseOnce()
	rest := resumed.rest(t)
	if len(rest) == 0 || rest[len(rest)-1].name != "done" {
		t.Fatalf("resumed events %s", names(rest))
	}
	for i, ev := range rest {
		if ev.id != strconv.Itoa(4+i) {
			t.Fatalf("resumed event %d has id %q", i, ev.id)
		}
	}
	if whole := text([]sse{first, missed}) + text(rest); whole != goodArticle {
		t.Fatalf("the client put together %q", whole)
	}
	if done := rest[len(rest)-1].JSON(); done["status"] != "succeeded" || done["title"] != "Sourdough for beginners" {
		t.Fatalf("done %v", done)
	}
	if got := late.rest(t); got[len(got)-1].name != "done" {
		t.Fatalf("the late watcher after its snapshot: %s", names(got))
	}
	// Once ended, the stream is the stored run's done, with or without
	// Last-Event-ID.
	for _, h := range [][]string{nil, {"Last-Event-ID", "3"}} {
		evs := openChatStream(t, "GET", eventsURL, f.edATok, nil, h...).rest(t)
		if len(evs) != 1 || evs[0].name != "done" || evs[0].id != "" || !strings.HasPrefix(evs[0].JSON()["body"].(string), "## Introduction") {
			t.Fatalf("stream of an ended generation: %v", evs)
		}
	}
	// Another environment's generation is not found.
	if r := openChatStream(t, "GET", eventsURL, f.edBTok, nil); r.status != 404 {
		t.Fatalf("another environment's editor: %d %s", r.status, r.body)
	}
}
