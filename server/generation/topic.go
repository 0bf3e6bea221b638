package generation

import (
	"context"

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
	o := stream.TopicOptions{Replay: k.Replay}
	if k.Snapshot != nil {
		o.Snapshot = k.Snapshot()
	}
	k.Events.Open(f.topic, o)
	if k.Begin != nil {
		if ev, ok := k.Begin(ctx, r); ok {
			f.Send(ev.Name, ev.Data)
		}
	}
	return f
}

func (w topicWatchers[R]) End(ctx context.Context, r R) {
	k := w.k
	f := &topicFeed[R]{k: k, topic: k.Topic(k.ID(r))}
	ev := k.Final(ctx, r)
	f.Send(ev.Name, ev.Data)
	f.Close()
}

// topicFeed publishes a generation's events on its topic.
type topicFeed[R Row] struct {
	k     *Kind[R]
	topic string
}

func (f *topicFeed[R]) Delta(text string) error {
	f.Send(EventDelta, Delta{Text: text})
	return nil
}

// Send publishes one event. An event the broker refuses because the
// server is stopping, or because the stream already ended, is missed by
// nobody: the generation's outcome is stored.
func (f *topicFeed[R]) Send(name string, data any) {
	if _, err := f.k.Events.Publish(f.topic, stream.Event{Name: name, Data: data}); err != nil && !stream.Gone(err) {
		f.k.Log.Error(f.k.Name+" event not published", "topic", f.topic, "event", name, "err", err)
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
