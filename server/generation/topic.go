package generation

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/copydesk/copydesk/server/stream"
)

// topicWatchers publishes each generation on a topic of its own
// (Kind.Topic): the recipe of server/stream's live topics.
type topicWatchers[R Row] struct{ k *Kind[R] }

func (w topicWatchers[R]) Begin(ctx context.Context, r R, wait bool) Feed {
	k := w.k
	f := &topicFeed[R]{k: k, topic: k.Topic(k.ID(r))}
	if wait {
		d := k.Wait
		if d <= 0 {
			d = RequesterWait
		}
		wctx, cancel := context.WithTimeout(ctx, d)
		k.Events.WaitSubscriber(wctx, f.topic)
		cancel()
	}
	o := k.topicOptions()
	o.Relay = true
	k.Events.Open(f.topic, o)
	if k.Begin != nil {
		if ev, ok := k.Begin(ctx, r); ok {
			f.publish(stream.Event{Name: ev.Name, Data: ev.Data, Ref: refBegin})
		}
	}
	return f
}

func (w topicWatchers[R]) End(ctx context.Context, r R) {
	k := w.k
	f := &topicFeed[R]{k: k, topic: k.Topic(k.ID(r))}
	o := k.topicOptions()
	o.Relay = true
	k.Events.Ensure(f.topic, o) // ended before it began: its requester still hears
	ev := k.Final(ctx, r)
	if _, failure := ev.Data.(Failure); !failure {
		ev.Ref = refFinal
	}
	f.publish(ev)
	f.Close()
}

// topicFeed publishes a generation's events on its topic.
type topicFeed[R Row] struct {
	k     *Kind[R]
	topic string
}

// Delta publishes a piece of text, in pieces of at most MaxDelta bytes
// (Pieces), so that each can be relayed to the other instances (a NOTIFY
// carries less than 8000 bytes).
func (f *topicFeed[R]) Delta(text string) error {
	return Pieces(text, func(piece string) error {
		f.Send(EventDelta, Delta{Text: piece})
		return nil
	})
}

// MaxDelta bounds the text of one delta event, so that each can be
// relayed to the other instances: a NOTIFY carries less than 8000 bytes,
// and JSON writes a control character in six.
const MaxDelta = 1024

// Pieces calls fn with text in pieces of at most MaxDelta bytes, cut
// between characters, until fn fails.
func Pieces(text string, fn func(piece string) error) error {
	for len(text) > MaxDelta {
		n := MaxDelta
		for n > 0 && !utf8.RuneStart(text[n]) {
			n--
		}
		if err := fn(text[:n]); err != nil {
			return err
		}
		text = text[n:]
	}
	return fn(text)
}

// Send publishes one event. An event the broker refuses because the
// server is stopping, or because the stream already ended, is missed by
// nobody: the generation's outcome is stored.
func (f *topicFeed[R]) Send(name string, data any) {
	f.publish(stream.Event{Name: name, Data: data})
}

func (f *topicFeed[R]) publish(ev stream.Event) {
	if _, err := f.k.Events.Publish(f.topic, ev); err != nil && !stream.Gone(err) {
		f.k.Log.Error(f.k.Name+" event not published", "topic", f.topic, "event", ev.Name, "err", err)
	}
}

func (f *topicFeed[R]) Abort(detail string) { f.Send(EventError, Failure{Detail: detail}) }

func (f *topicFeed[R]) Close() { f.k.Events.Finish(f.topic) }

// Snapshot is the data of a `snapshot` event: the row as last published,
// the text so far (of the current attempt), and the detail of the `error`
// that ended it, if one did.
type Snapshot[R any] struct {
	Run    R
	Text   string
	Detail string
}

// NewSnapshot folds a generation's events into what a late watcher needs
// (see stream.Snapshot): the row (an event whose data is an R), the text
// of the deltas, and the detail of the error that ended it. An event named
// restart (when not empty), whose data is a Failure, drops the text so
// far: the next attempt starts over.
func NewSnapshot[R comparable](restart string) stream.Snapshot {
	return &snapshot[R]{restart: restart}
}

type snapshot[R comparable] struct {
	restart string
	run     R
	text    []byte
	detail  string
}

func (x *snapshot[R]) Apply(ev stream.Event) {
	switch d := ev.Data.(type) {
	case R:
		x.run = d
	case Delta:
		x.text = append(x.text, d.Text...)
	case Failure:
		if x.restart != "" && ev.Name == x.restart {
			x.text = x.text[:0]
			return
		}
		x.detail = d.Detail
	}
}

func (x *snapshot[R]) Event() (stream.Event, bool) {
	var zero R
	if x.run == zero {
		return stream.Event{}, false
	}
	return stream.Event{Name: EventSnapshot, Data: Snapshot[R]{Run: x.run, Text: string(x.text), Detail: x.detail}}, true
}

// Across instances (server/stream's relay.go): a generation's topic is
// relayed, and every instance mirrors the topics of every kind. The row
// events (the first, and the final one of a success) travel as a
// reference and are read from the database by each instance, as the
// producer made them: they hold the whole output, which is more than a
// NOTIFY carries.
const (
	refBegin = "begin"
	refFinal = "final"
)

func (k *Kind[R]) topicOptions() stream.TopicOptions {
	o := stream.TopicOptions{Replay: k.Replay}
	if k.Snapshot != nil {
		o.Snapshot = k.Snapshot()
	}
	return o
}

// mirror registers the kind's topics as a family the broker mirrors. Its
// prefix is the topic name of id 0 without the 0.
func (k *Kind[R]) mirror() {
	prefix, ok := strings.CutSuffix(k.Topic(0), "0")
	if !ok {
		panic("generation: " + k.Name + ": Topic(id) must end in the id")
	}
	m := stream.Mirror{Options: k.topicOptions, Decode: func(ctx context.Context, r stream.Relayed) (any, error) {
		return k.decode(ctx, prefix, r)
	}}
	if k.Released != nil {
		// Whoever waits here for a generation another instance ran.
		m.Finished = func(topic string) {
			if id, err := stream.TopicID(topic, prefix); err == nil {
				k.Released(id)
			}
		}
	}
	k.Events.Mirror(prefix, m)
}

// decode is a relayed event's data as its producer published it.
func (k *Kind[R]) decode(ctx context.Context, prefix string, r stream.Relayed) (any, error) {
	if r.Ref != "" {
		id, err := stream.TopicID(r.Topic, prefix)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k.Name, err)
		}
		row, err := k.Load(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("%s %d: read for a relayed %s event: %w", k.Name, id, r.Name, err)
		}
		switch r.Ref {
		case refBegin:
			if k.Begin != nil {
				if ev, ok := k.Begin(ctx, row); ok {
					return ev.Data, nil
				}
			}
		case refFinal:
			return k.Final(ctx, row).Data, nil
		}
		return nil, fmt.Errorf("%s %d: relayed %s event: nothing to read for %q", k.Name, id, r.Name, r.Ref)
	}
	if r.Data == nil {
		return nil, fmt.Errorf("%s: relayed %s event on %s came without its data", k.Name, r.Name, r.Topic)
	}
	if r.Name != EventDelta && k.Decode != nil {
		if v, ok, err := k.Decode(r.Name, r.Data); ok || err != nil {
			return v, err
		}
	}
	if r.Name == EventDelta {
		var d Delta
		err := unmarshalRelayed(r, &d)
		return d, err
	}
	var f Failure // error, and a kind's restart (cie's retry)
	err := unmarshalRelayed(r, &f)
	return f, err
}

func unmarshalRelayed(r stream.Relayed, v any) error {
	if err := json.Unmarshal(r.Data, v); err != nil {
		return fmt.Errorf("relayed %s event on %s: %w", r.Name, r.Topic, err)
	}
	return nil
}
