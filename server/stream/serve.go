package stream

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Event names the broker itself sends.
const (
	// EventEnd ends a stream: the session failed its re-check, the
	// server is stopping, or EndAll. Data: {"detail": why}.
	EventEnd = "end"
	// EventLagged ends a stream whose subscriber fell behind. Data:
	// {"last_event_id": N, "detail": "reconnect with Last-Event-ID: N"}.
	EventLagged = "lagged"
	// EventMissed starts a resumed stream of a live topic that no longer
	// remembers what came after the client's Last-Event-ID.
	EventMissed = "missed"
)

// Replayer returns up to limit events of a durable topic with ids above
// after, oldest first.
type Replayer func(ctx context.Context, after int64, limit int) ([]Event, error)

// ServeOptions is what one streaming route adds to Serve.
type ServeOptions struct {
	// Recheck runs at every heartbeat; when it fails the stream ends with
	// `event: end` and the error's text as the detail, so that text must
	// be fit for the client.
	Recheck func(ctx context.Context) error
	// Replay makes the topic durable: Last-Event-ID is answered from it
	// instead of the topic's memory.
	Replay Replayer
	// Hold runs Recheck and each Replay page with the database held (the
	// server's restore gate), and only those: a stream never holds it
	// between events. nil runs them as they are.
	Hold func(ctx context.Context, fn func(context.Context) error) error
	// Encode turns an event's Data into the value written as JSON; nil
	// writes Data as it is.
	Encode func(data any) any
}

func setStreamHeaders(h http.Header) {
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // tell nginx not to buffer
}

// replayPage is how many events one Replay call asks for.
const replayPage = 200

// Serve streams a topic to one client as Server-Sent Events until the
// client goes, the topic finishes, the subscriber lags, the session fails
// its re-check, or the broker ends it (EndAll, Close). The client resumes
// with the Last-Event-ID header.
func (b *Broker) Serve(w http.ResponseWriter, r *http.Request, topicName string, o ServeOptions) {
	if r.Method == http.MethodHead {
		// HEAD (an uptime monitor) gets the stream's headers, not a stream.
		setStreamHeaders(w.Header())
		w.WriteHeader(http.StatusOK)
		return
	}
	ctx := r.Context()
	after, err := strconv.ParseInt(r.Header.Get("Last-Event-ID"), 10, 64)
	if err != nil || after < 0 {
		after = 0
	}
	sub := b.subscribe(topicName, after, o.Replay == nil)
	defer sub.Close()

	rc := http.NewResponseController(w)
	// A stream lives long: lift the read deadline; writes get their own
	// (see out.write), cleared when the stream ends so that the
	// connection can serve another request.
	_ = rc.SetReadDeadline(time.Time{})
	defer func() { _ = rc.SetWriteDeadline(time.Time{}) }()
	setStreamHeaders(w.Header())
	w.WriteHeader(http.StatusOK)
	out := &out{w: w, rc: rc, b: b, encode: o.Encode, last: after}
	hold := o.Hold
	if hold == nil {
		hold = func(ctx context.Context, fn func(context.Context) error) error { return fn(ctx) }
	}

	if out.raw(": connected\nretry: 3000\n\n") != nil {
		return
	}
	for _, ev := range sub.History() {
		if out.event(ev) != nil {
			return
		}
	}
	// A durable topic's catch-up. The subscription opened first, so what
	// is published meanwhile waits in its queue; what the catch-up sent is
	// then skipped: up to the last id it sent, not the client's, which may
	// come from before a restore and be ahead of the ids to come.
	var skip int64
	if o.Replay != nil && after > 0 {
		for {
			var page []Event
			err := hold(ctx, func(ctx context.Context) (err error) {
				page, err = o.Replay(ctx, out.last, replayPage)
				return err
			})
			if err != nil {
				if ctx.Err() == nil {
					b.opts.Log.Error("stream: replay failed", "topic", topicName, "after", out.last, "err", err)
					out.end(fmt.Sprintf("the events after %d could not be read; reconnect to try again", out.last))
				}
				return
			}
			for _, ev := range page {
				if out.event(ev) != nil {
					return
				}
				skip = ev.ID
			}
			if len(page) < replayPage {
				break
			}
		}
	}

	heartbeat := time.NewTicker(b.opts.Heartbeat)
	defer heartbeat.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-sub.Events():
			if !ok {
				out.ended(sub.Err())
				return
			}
			if ev.ID <= skip {
				continue
			}
			if out.event(ev) != nil {
				return
			}
		case <-heartbeat.C:
			if o.Recheck != nil {
				if err := hold(ctx, o.Recheck); err != nil {
					if ctx.Err() == nil {
						out.end(err.Error())
					}
					return
				}
			}
			if out.raw(": heartbeat\n\n") != nil {
				return
			}
		}
	}
}

// ServeFinished answers a watcher of a live topic whose producer has
// finished and whose topic is no longer kept (Linger passed, or it ran
// before a restart): events are the outcome stored elsewhere, sent as one
// short stream that ends after them. They carry no ids, as there is
// nothing left to resume.
func (b *Broker) ServeFinished(w http.ResponseWriter, r *http.Request, o ServeOptions, events ...Event) {
	setStreamHeaders(w.Header())
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	rc := http.NewResponseController(w)
	defer func() { _ = rc.SetWriteDeadline(time.Time{}) }()
	out := &out{w: w, rc: rc, b: b, encode: o.Encode}
	if out.raw(": connected\n\n") != nil {
		return
	}
	for _, ev := range events {
		ev.ID = 0
		if out.event(ev) != nil {
			return
		}
	}
}

// out writes one stream. Only Serve's goroutine writes, so it needs no
// lock.
type out struct {
	w      http.ResponseWriter
	rc     *http.ResponseController
	b      *Broker
	encode func(any) any
	last   int64 // id of the last event written (or the client's Last-Event-ID)
}

func (o *out) raw(s string) error {
	// A client that stops reading would block the write, and so the
	// stream, forever; ErrNotSupported (a test recorder) is fine.
	// The deadline is real time, whatever clock the broker was given.
	_ = o.rc.SetWriteDeadline(time.Now().Add(o.b.opts.WriteTimeout))
	if _, err := o.w.Write([]byte(s)); err != nil {
		return err
	}
	return o.rc.Flush()
}

func (o *out) event(ev Event) error {
	data := ev.Data
	if _, mine := data.(own); !mine && o.encode != nil {
		data = o.encode(data)
	}
	b, err := o.b.opts.Marshal(data)
	if err != nil {
		o.b.opts.Log.Error("stream: event cannot be encoded", "event", ev.Name, "id", ev.ID, "err", err)
		o.end("internal server error: the problem was logged on the server")
		return err
	}
	s := ""
	if ev.Name != "" {
		s = "event: " + ev.Name + "\n"
	}
	if ev.ID > 0 {
		s += "id: " + strconv.FormatInt(ev.ID, 10) + "\n"
	}
	if err := o.raw(s + "data: " + string(b) + "\n\n"); err != nil {
		return err
	}
	if ev.ID > 0 {
		o.last = ev.ID
	}
	return nil
}

// ended tells the client why its subscription ended; a finished topic
// needs no word (its last event says so).
func (o *out) ended(err error) {
	switch {
	case err == nil:
	case errors.Is(err, ErrLagged):
		_ = o.event(Event{Name: EventLagged, Data: lagged{LastEventID: o.last,
			Detail: "reconnect with Last-Event-ID: " + strconv.FormatInt(o.last, 10)}})
	default:
		o.end(err.Error())
	}
}

// end sends `event: end`; the stream is over, whether or not it arrives.
func (o *out) end(detail string) {
	_ = o.event(Event{Name: EventEnd, Data: endData{Detail: detail}})
}

// own marks the data of the events the broker writes itself, which
// ServeOptions.Encode does not see.
type own interface{ own() }

func (lagged) own()  {}
func (endData) own() {}
func (missed) own()  {}

type lagged struct {
	LastEventID int64  `json:"last_event_id"`
	Detail      string `json:"detail"`
}

type endData struct {
	Detail string `json:"detail"`
}
