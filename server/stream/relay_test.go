package stream_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/copydesk/copydesk/server/stream"
)

// textSnap folds "text" events (a string each) into one "snapshot".
type textSnap struct{ text string }

func (x *textSnap) Apply(ev stream.Event) {
	if s, ok := ev.Data.(string); ok {
		x.text += s
	}
}

func (x *textSnap) Event() (stream.Event, bool) {
	return stream.Event{Name: "snapshot", Data: x.text}, x.text != ""
}

// pair is two brokers joined as two instances are: what a relays, b
// receives, in order (and the other way), through JSON as on the wire.
type pair struct {
	a, b  *stream.Broker
	mu    sync.Mutex
	steps []stream.Relayed // what a relayed
	refs  int              // Decode calls for a Ref
}

func newPair(t *testing.T) *pair {
	p := &pair{}
	var toB, toA func(stream.Relayed)
	p.a = stream.New(stream.Options{Relay: func(r stream.Relayed) { toB(r) }})
	p.b = stream.New(stream.Options{Relay: func(r stream.Relayed) { toA(r) }})
	family := stream.Mirror{
		Options: func() stream.TopicOptions { return stream.TopicOptions{Snapshot: &textSnap{}} },
		Decode: func(_ context.Context, r stream.Relayed) (any, error) {
			if r.Ref != "" {
				p.mu.Lock()
				p.refs++
				p.mu.Unlock()
				return "<" + r.Ref + ">", nil // as read from the database
			}
			var s string
			err := json.Unmarshal(r.Data, &s)
			return s, err
		},
	}
	p.a.Mirror("gen/", family)
	p.b.Mirror("gen/", family)
	// The relay queues (it is called under the sender's lock); one
	// goroutine delivers in order, as the database does.
	q := make(chan func(), 1000)
	go func() {
		for fn := range q {
			fn()
		}
	}()
	t.Cleanup(func() { close(q) })
	wire := func(to **stream.Broker, r stream.Relayed, record bool) {
		raw, err := json.Marshal(r)
		if err != nil {
			t.Error(err)
		}
		if record {
			p.mu.Lock()
			p.steps = append(p.steps, r)
			p.mu.Unlock()
		}
		q <- func() {
			var got stream.Relayed
			if err := json.Unmarshal(raw, &got); err != nil {
				t.Error(err)
			}
			if err := (*to).Received(context.Background(), got); err != nil {
				t.Error(err)
			}
		}
	}
	toB = func(r stream.Relayed) { wire(&p.b, r, true) }
	toA = func(r stream.Relayed) { wire(&p.a, r, false) }
	return p
}

// A relayed topic reaches a subscriber on the other instance with the
// same ids and data, the row read there (Ref), a late subscriber there
// gets the snapshot, and the end travels too.
func TestRelayedTopicMirrored(t *testing.T) {
	p := newPair(t)
	early := p.b.Subscribe("gen/1", 0) // the requester, before the job began
	p.a.Open("gen/1", stream.TopicOptions{Snapshot: &textSnap{}, Relay: true})
	if _, err := p.a.Publish("gen/1", stream.Event{Name: "run", Data: "<begin>", Ref: "begin"}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"Sow ", "it ", "warm."} {
		if _, err := p.a.Publish("gen/1", stream.Event{Name: "delta", Data: s}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the deltas on b", func() bool {
		l := p.b.Subscribe("gen/1", 0)
		defer l.Close()
		h := l.History()
		return len(h) == 1 && h[0].Data == "<begin>Sow it warm." && h[0].ID == 4
	})
	// A subscriber on b resuming from id 2 gets 3 and 4 from b's replay.
	resumed := p.b.Subscribe("gen/1", 2)
	if h := resumed.History(); ids(h) != "3,4" || h[0].Data != "it " {
		t.Fatalf("resumed on b: %v", h)
	}
	if _, err := p.a.Publish("gen/1", stream.Event{Name: "done", Data: "<final>", Ref: "final"}); err != nil {
		t.Fatal(err)
	}
	p.a.Finish("gen/1")
	got := drain(t, early)
	if ids(got) != "1,2,3,4,5" || got[0].Data != "<begin>" || got[4].Data != "<final>" || got[4].Ref != "" {
		t.Fatalf("the early subscriber on b: %v", got)
	}
	if ev := drain(t, resumed); ids(ev) != "5" {
		t.Fatalf("the resumed one: %v", ev)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.refs != 2 {
		t.Errorf("%d rows read on b, want 2 (the Ref events)", p.refs)
	}
	for _, r := range p.steps {
		if r.Ref != "" && r.Data != nil {
			t.Errorf("a Ref event carried its data: %+v", r)
		}
	}
	if first, last := p.steps[0], p.steps[len(p.steps)-1]; first.Op != stream.RelayOpen || last.Op != stream.RelayFinish {
		t.Errorf("relayed: %+v ... %+v", first, last)
	}
}

// A producer waiting for its requester starts when the requester
// subscribed on the other instance.
func TestRelayedJoinWakesTheProducer(t *testing.T) {
	p := newPair(t)
	done := make(chan bool)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		done <- p.a.WaitSubscriber(ctx, "gen/2")
	}()
	time.Sleep(20 * time.Millisecond)
	s := p.b.Subscribe("gen/2", 0)
	defer s.Close()
	if !<-done {
		t.Fatal("the producer did not hear of the subscriber on b")
	}
	// A topic of no family (a notification stream) is not announced.
	p.b.Subscribe("notifications/1", 0).Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.steps) != 0 {
		t.Errorf("a relayed something: %+v", p.steps)
	}
}

// An instance that did not hear a topic's opening mirrors it from the
// next event; DropMirrors ends the mirrors' subscribers and forgets them.
func TestMirrorFromTheMiddleAndDropped(t *testing.T) {
	a := stream.New(stream.Options{})
	a.Mirror("gen/", stream.Mirror{
		Options: func() stream.TopicOptions { return stream.TopicOptions{Snapshot: &textSnap{}} },
		Decode: func(_ context.Context, r stream.Relayed) (any, error) {
			var s string
			err := json.Unmarshal(r.Data, &s)
			return s, err
		}})
	s := a.Subscribe("gen/3", 0)
	if err := a.Received(context.Background(), stream.Relayed{Op: stream.RelayEvent, Topic: "gen/3", ID: 7, Name: "delta", Data: json.RawMessage(`"late"`)}); err != nil {
		t.Fatal(err)
	}
	if err := a.Received(context.Background(), stream.Relayed{Op: stream.RelayEvent, Topic: "gen/3", ID: 8, Name: "delta", Data: json.RawMessage(`1`)}); err == nil {
		t.Error("data that does not decode was taken")
	}
	if err := a.Received(context.Background(), stream.Relayed{Op: stream.RelayEvent, Topic: "other/1", ID: 1, Data: json.RawMessage(`"x"`)}); err != nil {
		t.Errorf("a topic of no family: %v", err)
	}
	lost := errors.New("lost the others")
	a.DropMirrors(lost)
	got := drain(t, s)
	if ids(got) != "7" || got[0].Data != "late" || !errors.Is(s.Err(), lost) {
		t.Fatalf("got %v, %v", got, s.Err())
	}
	if l := a.Subscribe("gen/3", 0); len(l.History()) != 0 {
		t.Errorf("a dropped mirror still answers: %v", l.History())
	}
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	end := time.Now().Add(5 * time.Second)
	for !ok() {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A state announced by another instance goes to its family's State, and a
// family of states takes no mirrored events.
func TestRelayedState(t *testing.T) {
	p := newPair(t)
	got := make(chan stream.Relayed, 1)
	p.b.Mirror("ap/", stream.Mirror{State: func(_ context.Context, r stream.Relayed) error {
		got <- r
		return nil
	}})
	p.a.Announce(stream.Relayed{Topic: "ap/1", Name: "run", Ref: "42"})
	select {
	case r := <-got:
		if r.Op != stream.RelayState || r.Topic != "ap/1" || r.Name != "run" || r.Ref != "42" {
			t.Fatalf("state: %+v", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the state did not reach b")
	}
	if err := p.b.Received(context.Background(), stream.Relayed{Op: stream.RelayOpen, Topic: "ap/1"}); err != nil {
		t.Fatal(err)
	}
	if n := p.b.Subscribers("ap/"); n != 0 {
		t.Fatal(n)
	}
	// Without a relay (one instance), nothing is announced.
	stream.New(stream.Options{}).Announce(stream.Relayed{Topic: "ap/1", Name: "status"})
}

// A topic of a family of states is numbered from a random base on an
// instance that shares its database: an id another instance gave gets the
// snapshot, not this instance's events after a number of another count.
// With one instance, ids start at 1 as on any topic.
func TestStateTopicsNumberFromARandomBase(t *testing.T) {
	lost := 0
	state := stream.Mirror{State: func(context.Context, stream.Relayed) error { return nil }, Lost: func() { lost++ }}
	shared := stream.New(stream.Options{Relay: func(stream.Relayed) {}})
	shared.Mirror("ap/", state)
	alone := stream.New(stream.Options{})
	alone.Mirror("ap/", state)
	for _, b := range []*stream.Broker{shared, alone} {
		b.Open("ap/1", stream.TopicOptions{Snapshot: &textSnap{}})
		for _, s := range []string{"a", "b", "c"} {
			if _, err := b.Publish("ap/1", stream.Event{Name: "text", Data: s}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if h := alone.Subscribe("ap/1", 1).History(); ids(h) != "2,3" {
		t.Fatalf("one instance: %v", h)
	}
	h := shared.Subscribe("ap/1", 1).History() // an id of another instance
	if len(h) != 1 || h[0].Name != "snapshot" || h[0].Data != "abc" || h[0].ID <= 1<<20 || h[0].ID >= 1<<51 {
		t.Fatalf("shared: %v", h)
	}
	if again := shared.Subscribe("ap/1", h[0].ID-1).History(); len(again) != 1 || again[0].Data != "c" {
		t.Fatalf("an id of this instance: %v", again)
	}
	shared.DropMirrors(errors.New("lost"))
	if lost != 1 {
		t.Errorf("Lost called %d times", lost)
	}
}

// Relayed data keeps <, > and & as they are (a NOTIFY has little room).
func TestJSONDoesNotEscapeHTML(t *testing.T) {
	b, err := stream.JSON(map[string]string{"text": "<p>a & b</p>"})
	if err != nil || string(b) != `{"text":"<p>a & b</p>"}` {
		t.Fatalf("%s %v", b, err)
	}
	// Nor inside a relayed step's data (json.Marshal escapes a RawMessage).
	b, err = stream.JSON(stream.Relayed{Op: stream.RelayEvent, Topic: "gen/1", ID: 2, Name: "delta", Data: b})
	if err != nil || string(b) != `{"op":"event","topic":"gen/1","id":2,"name":"delta","data":{"text":"<p>a & b</p>"}}` {
		t.Fatalf("%s %v", b, err)
	}
	if id, err := stream.TopicID("gen/42", "gen/"); id != 42 || err != nil {
		t.Fatalf("TopicID: %d %v", id, err)
	}
	if _, err := stream.TopicID("gen/x", "gen/"); err == nil {
		t.Fatal("TopicID took gen/x")
	}
}
