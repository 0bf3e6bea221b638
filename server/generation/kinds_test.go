package generation_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/copydesk/copydesk/server/chat"
	"github.com/copydesk/copydesk/server/environment"
	"github.com/copydesk/copydesk/server/live"
	"github.com/copydesk/copydesk/store"
)

// The kinds' own rules, carried out by this package: chat replies and live
// generations over the real engine and a local provider (the services'
// own tests stand in for the engine).

// A chat reply names its conversation after the ending is recorded and
// before it is published; a stopped reply keeps its text as incomplete,
// with its usage, and names nothing; the next reply sends the branch's
// history, the stopped reply's text with it.
func TestChatReplyKind(t *testing.T) {
	r := newRig(t)
	svc := chat.New(chat.Deps{Store: r.db, Environments: environment.New(r.db), Engine: r.eng, Jobs: r.runner, Events: r.events, Log: r.log})
	r.start(t)
	ctx := context.Background()
	admin := store.NewScope(r.user, true, nil)
	conv, err := svc.Create(ctx, admin, chat.NewConversation{AgentID: &r.agentID})
	if err != nil {
		t.Fatal(err)
	}
	send := func(convID int64, text string) (chat.Message, *watcher) {
		t.Helper()
		m, err := svc.Send(ctx, admin, convID, chat.SendInput{Content: text, Stream: true})
		if err != nil {
			t.Fatal(err)
		}
		return m, &watcher{sub: r.events.Subscribe(chat.Topic(m.ID), 0)}
	}
	ended := func(id int64) chat.Message {
		t.Helper()
		done, err := svc.Done(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		select {
		case <-done:
		case <-time.After(bound):
			t.Fatalf("reply %d did not end", id)
		}
		m, err := svc.Message(ctx, admin, id)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}

	first, w := send(conv.ID, "complete")
	ev := w.last(t)
	w.sub.Close()
	if w.names() != "message,delta,delta,delta,title,done" || ev.Data.(chat.Done).Message.Content != "Hello streamed world." {
		t.Fatalf("events %s, last %+v", w.names(), ev.Data)
	}
	m := ended(first.ID)
	if m.Status != store.ChatComplete || m.Content != "Hello streamed world." || m.Model != "gpt-4o-mini" || m.InputTokens != 1000 || m.OutputTokens != 500 {
		t.Fatalf("reply: %+v", m.ChatMessage)
	}
	if got, err := svc.Get(ctx, admin, conv.ID); err != nil || got.Title != "Hello streamed world" {
		t.Fatalf("title: %+v %v", got, err)
	}

	stop := func(convID int64) chat.Message {
		t.Helper()
		m, w := send(convID, "hang")
		defer w.sub.Close()
		w.until(t, chat.EventDelta)
		if err := svc.Stop(ctx, admin, m.ID); err != nil {
			t.Fatal(err)
		}
		if ev := w.last(t); ev.Name != chat.EventDone || strings.Contains(w.names(), chat.EventTitle) {
			t.Fatalf("events of a stopped reply: %s", w.names())
		}
		m = ended(m.ID)
		if m.Status != store.ChatIncomplete || m.Content != "Hello " || m.Error != "stopped" || m.Model != "gpt-4o-mini" {
			t.Fatalf("stopped reply: %+v", m.ChatMessage)
		}
		return m
	}
	// A conversation whose first reply is stopped stays without a title.
	other, err := svc.Create(ctx, admin, chat.NewConversation{AgentID: &r.agentID})
	if err != nil {
		t.Fatal(err)
	}
	stop(other.ID)
	if got, err := svc.Get(ctx, admin, other.ID); err != nil || got.Title != "" {
		t.Fatalf("title after a stop: %+v %v", got, err)
	}

	stop(conv.ID)
	third, w := send(conv.ID, "complete")
	w.last(t)
	w.sub.Close()
	if m := ended(third.ID); m.Status != store.ChatComplete || m.TrimmedMessages != 0 {
		t.Fatalf("third reply: %+v", m.ChatMessage)
	}
	want := []string{"complete", "Hello streamed world.", "hang", "Hello ", "complete"}
	if got := r.remote.messages(); !slices.Equal(got, want) {
		t.Fatalf("history sent %q, want %q", got, want)
	}
}

// A live generation's events go to its session's room, which lives while
// the generation does: nobody needs to watch, a watcher comes and goes
// (presence), and the room's topic ends with the generation once nobody
// watches.
func TestLiveGenerationKind(t *testing.T) {
	r := newRig(t)
	envs := environment.New(r.db)
	svc := live.New(live.Deps{Store: r.db, Environments: envs, Engine: r.eng, Jobs: r.runner, Events: r.events, Log: r.log})
	r.start(t)
	ctx := context.Background()
	admin := store.NewScope(r.user, true, nil)
	env, err := envs.Create(ctx, admin, store.NewEnvironment{Name: "Site"})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := svc.Create(ctx, admin, live.NewSession{EnvironmentID: env.ID, AgentID: r.agentID})
	if err != nil {
		t.Fatal(err)
	}
	g, err := svc.Generate(ctx, admin, sess.ID, live.GenerateInput{Prompt: "gate"})
	if err != nil {
		t.Fatal(err)
	}
	w := &watcher{sub: r.events.Subscribe(live.Topic(sess.ID), 0)} // watches the topic; nobody has joined
	defer w.sub.Close()
	h := w.sub.History()
	if len(h) != 1 || h[0].Name != live.EventSnapshot || len(h[0].Data.(live.Snapshot).Watchers) != 0 {
		t.Fatalf("the room of a generation nobody watches: %+v", h)
	}
	text := h[0].Data.(live.Snapshot).Text
	leave := svc.Join(sess.ID, r.user, "ann")
	if ev := w.until(t, live.EventPresence); ev.Data.(live.Presence).Action != "join" {
		t.Fatalf("join: %+v", ev.Data)
	}
	leave()
	if ev := w.until(t, live.EventPresence); ev.Data.(live.Presence).Action != "leave" || len(ev.Data.(live.Presence).Watchers) != 0 {
		t.Fatalf("leave: %+v", ev.Data)
	}
	close(r.remote.gate) // the generation goes on with nobody watching
	ev := w.last(t)      // and the room's topic ends with it
	if ev.Name != live.EventDone || ev.Data.(*store.LiveGeneration).Output != "Hello streamed world." {
		t.Fatalf("events %s, last %+v", w.names(), ev.Data)
	}
	for _, e := range w.seen {
		if e.Name == live.EventDelta {
			text += e.Data.(live.Delta).Text
		}
	}
	if text != "Hello streamed world." {
		t.Fatalf("the room's text: %q (%s)", text, w.names())
	}
	final, err := r.db.LiveGenerationByID(ctx, g.ID)
	if err != nil || final.Status != store.RunSucceeded || final.Model != "gpt-4o-mini" || final.OutputTokens != 500 {
		t.Fatalf("generation: %+v %v", final, err)
	}
	if v, err := svc.Get(ctx, admin, sess.ID); err != nil || len(v.Watchers) != 0 {
		t.Fatalf("session: %+v %v", v, err)
	}
}
