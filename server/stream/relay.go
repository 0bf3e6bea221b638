package stream

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Live topics across instances. On PostgreSQL several instances share the
// database, and the job that produces a live topic (a generation) runs on
// whichever instance claimed it, while its watchers may be connected to
// any. A topic opened with TopicOptions.Relay is relayed: the broker hands
// its opening, each event (id, name, data as JSON) and its end to
// Options.Relay, in the order they happen, and the server carries them to
// the other instances (a NOTIFY on the database). There, Received opens
// the topic as a mirror, with the options of its family (Mirror), and
// publishes the same events under the same ids: a subscriber on any
// instance gets what one on the producing instance gets, snapshot and
// Last-Event-ID included.
//
// An event whose data is a row too large to carry (Event.Ref) travels
// without it: each instance reads it from the database (Mirror.Decode).
// A subscriber on an instance that does not produce the topic is
// announced too (RelayJoin), so that a producer waiting for its requester
// (WaitSubscriber) starts when the requester is connected elsewhere.

// What a Relayed step is.
const (
	RelayOpen   = "open"
	RelayEvent  = "event"
	RelayFinish = "finish"
	RelayJoin   = "join"
	// RelayState says that what a topic of several producers shows (a
	// state stored in the database) changed on another instance
	// (Announce); Name and Ref say what, for Mirror.State.
	RelayState = "state"
)

// Relayed is one step of a relayed topic, as it travels between
// instances.
type Relayed struct {
	Op    string `json:"op"`
	Topic string `json:"topic"`
	ID    int64  `json:"id,omitempty"`
	Name  string `json:"name,omitempty"`
	// Data is the event's data as JSON (JSON, of the value itself, not
	// the API's rendering of it), or nil when Ref is set or it could not
	// be carried.
	Data json.RawMessage `json:"data,omitempty"`
	Ref  string          `json:"ref,omitempty"`
	// From names the instance that relayed it: set by the transport
	// that received it, not carried in the step.
	From string `json:"-"`
}

// A Mirror is how this instance mirrors the relayed topics of one family
// (the topics whose names start with a prefix).
type Mirror struct {
	// Options are the mirror topic's options (its snapshot and replay),
	// as its producer opens it; Relay is ignored.
	Options func() TopicOptions
	// Decode turns a relayed event's data back into the value its
	// producer published (the mirror's snapshot folds it, the route's
	// encoder renders it): from r.Data, or from the database when r.Ref
	// is set. An error drops the event (Received returns it).
	Decode func(ctx context.Context, r Relayed) (data any, err error)
	// Finished, when set, is called once a relayed topic has finished
	// here (its producer finished it).
	Finished func(topic string)
	// State is for a family of topics every instance produces, whose
	// events are states stored in the database (an autopilot's): another
	// instance announced a change (Announce), and the family reads the
	// state and publishes it here, under this instance's own ids. Such a
	// topic is not opened with TopicOptions.Relay, and needs neither
	// Options nor Decode.
	State func(ctx context.Context, r Relayed) error
	// Lost, when set, is called by DropMirrors: what the other instances
	// relayed for a while is lost, and the family forgets what it built
	// from it.
	Lost func()
}

type mirror struct {
	prefix string
	Mirror
}

// Mirror registers the family of relayed topics whose names start with
// prefix. Register every family before the first Received.
func (b *Broker) Mirror(prefix string, m Mirror) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.mirrors = append(b.mirrors, mirror{prefix, m})
}

// TopicID is the id at the end of a topic of the family prefix
// ("runs/42" of "runs/" is 42), for a family's callbacks.
func TopicID(topic, prefix string) (int64, error) {
	id, err := strconv.ParseInt(strings.TrimPrefix(topic, prefix), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("topic %q is not %s followed by an id", topic, prefix)
	}
	return id, nil
}

// mirrorOf is the family of a topic, or nil. Called under b.mu.
func (b *Broker) mirrorOf(topic string) *mirror {
	for i := range b.mirrors {
		if strings.HasPrefix(topic, b.mirrors[i].prefix) {
			return &b.mirrors[i]
		}
	}
	return nil
}

// Relays reports whether this broker has other instances to relay to
// (Options.Relay), for a producer that would otherwise prepare what it
// announces for nobody.
func (b *Broker) Relays() bool { return b.opts.Relay != nil }

// Announce tells the other instances of a change of what a topic of
// several producers shows (RelayState, whatever r.Op says; see
// Mirror.State). Without Options.Relay it does nothing.
func (b *Broker) Announce(r Relayed) {
	if b.opts.Relay == nil {
		return
	}
	r.Op = RelayState
	b.mu.Lock()
	defer b.mu.Unlock()
	b.opts.Relay(r)
}

// relayEvent relays one published event. Called under b.mu.
func (b *Broker) relayEvent(topic string, ev Event) {
	r := Relayed{Op: RelayEvent, Topic: topic, ID: ev.ID, Name: ev.Name, Ref: ev.Ref}
	if ev.Ref == "" {
		data, err := JSON(ev.Data)
		if err != nil {
			b.opts.Log.Error("stream: a relayed event cannot be encoded", "topic", topic, "event", ev.Name, "err", err)
		}
		r.Data = data
	}
	b.opts.Relay(r)
}

// JSON is copydesk's JSON encoding, of responses, events and what is
// relayed: without HTML escaping, so `<`, `>` and `&` arrive as
// themselves rather than as \u003c... (the API's JSON is read by JSON
// parsers, never pasted into a page, and a NOTIFY has little room).
func JSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// Received applies a step another instance relayed: it opens, feeds or
// finishes this instance's mirror of the topic, or notes a subscriber of
// it there. A topic of no registered family is ignored. An event for a
// topic whose opening this instance did not hear (it started, or its
// connection to the others came back, after the opening) opens the
// mirror first: its subscribers get the events from there on. It returns
// an error for an event it could not decode (the caller logs it; the
// event is dropped).
func (b *Broker) Received(ctx context.Context, r Relayed) error {
	b.mu.Lock()
	if r.Op == RelayJoin {
		b.remote[r.Topic] = b.opts.Now()
		close(b.joined)
		b.joined = make(chan struct{})
		b.mu.Unlock()
		return nil
	}
	m := b.mirrorOf(r.Topic)
	b.mu.Unlock()
	if m == nil {
		return nil
	}
	if r.Op == RelayState {
		if m.State == nil {
			return nil
		}
		return m.State(ctx, r)
	}
	if m.Options == nil {
		return nil // a family of states only
	}
	switch r.Op {
	case RelayOpen:
		b.openMirror(r.Topic, m, true)
	case RelayFinish:
		b.Finish(r.Topic)
		if m.Finished != nil {
			m.Finished(r.Topic)
		}
	case RelayEvent:
		data, err := m.Decode(ctx, r)
		if err != nil {
			return err
		}
		b.openMirror(r.Topic, m, false)
		if _, err := b.Publish(r.Topic, Event{ID: r.ID, Name: r.Name, Data: data}); err != nil && !Gone(err) {
			return err
		}
	}
	return nil
}

// openMirror opens a mirror of a relayed topic: afresh on its opening
// (again), or when an event comes for one not open here.
func (b *Broker) openMirror(name string, m *mirror, again bool) {
	b.mu.Lock()
	t := b.topics[name]
	open := t != nil && t.opened && t.mirrored && t.finished.IsZero()
	b.mu.Unlock()
	if open && !again {
		return
	}
	o := m.Options()
	o.Relay = false
	b.Open(name, o)
	b.mu.Lock()
	if t := b.topics[name]; t != nil {
		t.mirrored = true
	}
	b.mu.Unlock()
}

// DropMirrors forgets every mirror topic, ending its subscribers with
// reason: what was relayed while this instance could not hear is lost,
// so they are no longer whole. An event relayed after this opens them
// again.
func (b *Broker) DropMirrors(reason error) {
	b.mu.Lock()
	var lost []func()
	for _, m := range b.mirrors {
		if m.Lost != nil {
			lost = append(lost, m.Lost)
		}
	}
	for name, t := range b.topics {
		if !t.mirrored {
			continue
		}
		for s := range t.subs {
			b.end(s, reason)
		}
		delete(b.topics, name)
	}
	b.mu.Unlock()
	for _, fn := range lost {
		fn()
	}
}

// localIDs reports whether a topic is numbered by this instance alone
// while others number it too (a family of states, Mirror.State): then
// its ids start at a random base, so that a Last-Event-ID of another
// instance falls outside what this one keeps and is answered with the
// snapshot, not with events that follow an id of another numbering.
// Called under b.mu.
func (b *Broker) localIDs(name string, o TopicOptions) bool {
	if b.opts.Relay == nil || o.Relay {
		return false
	}
	m := b.mirrorOf(name)
	return m != nil && m.State != nil
}

// idBase is where a topic of local ids starts: below 2^51, so that a
// client in JavaScript reads every id exactly.
func idBase() int64 { return rand.Int64N(1<<31) << 20 }
