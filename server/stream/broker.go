package stream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// Event is one Server-Sent Event.
type Event struct {
	// ID orders a topic's events and is what a client resumes from
	// (Last-Event-ID). On Publish, 0 lets the broker number the event.
	ID int64
	// Name is the `event:` field.
	Name string
	// Data is written as JSON, after ServeOptions.Encode. Once published
	// it is shared by every subscriber: never change it.
	Data any
	// Ref, on a relayed topic (TopicOptions.Relay), says that the other
	// instances read Data from the database themselves (its Mirror's
	// Decode) instead of receiving it: for data too large to carry, such
	// as a row with its whole output. It is not sent to clients.
	Ref string
}

// Snapshot folds a live topic's events into its state so far, so that a
// subscriber joining late (or resuming from beyond the replay buffer) gets
// that state as one event, then what follows it.
type Snapshot interface {
	// Apply folds one published event in. It is called in publishing
	// order under the broker's lock: keep it quick.
	Apply(Event)
	// Event is the state so far as one event; ok false while there is
	// nothing to send. The broker sets its ID to the last folded event's.
	// Its Data must not change after it is returned.
	Event() (ev Event, ok bool)
}

// Options tunes a Broker; zero values take the defaults.
type Options struct {
	// Heartbeat is how often Serve sends a comment line and re-checks the
	// session; 15 s by default.
	Heartbeat time.Duration
	// Buffer is how many events may wait for one subscriber before it is
	// cut off as lagged; 128 by default.
	Buffer int
	// Replay is how many events an opened topic keeps for Last-Event-ID;
	// 256 by default.
	Replay int
	// Linger is how long a finished topic still answers late joiners;
	// one minute by default.
	Linger time.Duration
	// WriteTimeout bounds one write to a client; a client that does not
	// read for that long is gone. 30 s by default.
	WriteTimeout time.Duration
	// Now is the clock (for Linger); time.Now by default.
	Now func() time.Time
	Log *slog.Logger
	// Marshal encodes an event's data; json.Marshal by default. The
	// server passes the encoder of its responses, so that the data of an
	// event reads as the same value in a response does.
	Marshal func(v any) ([]byte, error)
	// Relay, on an instance that shares its database with others, carries
	// what happens on its relayed topics (TopicOptions.Relay) and who
	// joins a topic it does not produce to the other instances, in the
	// order it happens (see relay.go). It is called under the broker's
	// lock: it must only queue. nil: one instance, nothing is relayed.
	Relay func(Relayed)
}

// TopicOptions configures a live topic (Open).
type TopicOptions struct {
	// Replay overrides Options.Replay for this topic.
	Replay int
	// Snapshot, when set, is sent to subscribers that join late.
	Snapshot Snapshot
	// Resync, with a Snapshot, changes what happens to a subscriber that
	// falls behind: instead of being cut off (ErrLagged), its queue is
	// emptied and replaced by the snapshot under this event name, and it
	// goes on from there. For a topic many watch at once (a live session),
	// where reconnecting would only bring the same snapshot.
	Resync string
	// Relay sends the topic's opening, events (with their ids) and end to
	// the other instances (Options.Relay), which mirror it for their own
	// subscribers (Broker.Mirror). For a topic with one producer: its ids
	// are then the same on every instance, so Last-Event-ID resumes on
	// any of them.
	Relay bool
}

// Why a subscription ended, beyond its topic finishing (nil).
var (
	// ErrLagged: the subscriber fell behind and was cut off.
	ErrLagged = errors.New("stream: the subscriber fell behind")
	// ErrClosed: the broker was closed (the server is stopping).
	ErrClosed = errors.New("the server is stopping")
	// ErrFinished: publishing to a topic that was finished.
	ErrFinished = errors.New("stream: the topic is finished")
	// ErrOutOfOrder: publishing an id not above the topic's last.
	ErrOutOfOrder = errors.New("stream: event id out of order")
)

// Broker fans events out to the subscribers of each topic.
type Broker struct {
	opts      Options
	mu        sync.Mutex
	topics    map[string]*topic
	lingering []*topic // finished, kept for late joiners until Linger passes
	closed    bool
	joined    chan struct{}        // closed, and replaced, when anyone subscribes (WaitSubscriber)
	mirrors   []mirror             // the families of topics other instances relay (Mirror)
	remote    map[string]time.Time // topics subscribed to on another instance, and when (Received)
}

// New returns a Broker.
func New(o Options) *Broker {
	if o.Heartbeat <= 0 {
		o.Heartbeat = 15 * time.Second
	}
	if o.Buffer <= 0 {
		o.Buffer = 128
	}
	if o.Replay <= 0 {
		o.Replay = 256
	}
	if o.Linger <= 0 {
		o.Linger = time.Minute
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 30 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Marshal == nil {
		o.Marshal = json.Marshal
	}
	return &Broker{opts: o, topics: map[string]*topic{}, joined: make(chan struct{}), remote: map[string]time.Time{}}
}

type topic struct {
	name     string
	opened   bool      // by Open: it outlives its subscribers and keeps history
	finished time.Time // zero while open
	last     int64     // id of the last published event
	dropped  int64     // id of the newest event no longer in the ring
	ring     ring
	snap     Snapshot
	resync   string // TopicOptions.Resync
	relay    bool   // TopicOptions.Relay: relayed to the other instances
	mirrored bool   // opened here for another instance's topic (Received)
	subs     map[*Subscription]struct{}
}

func newTopic(name string) *topic {
	return &topic{name: name, subs: map[*Subscription]struct{}{}}
}

// history is what a subscriber that last saw after (0: nothing) gets
// before the live events. Called under the broker's lock, together with
// subscribing, so that nothing falls between the two.
func (t *topic) history(after int64) []Event {
	switch {
	case after > 0 && after <= t.last && after >= t.dropped:
		return t.ring.since(after)
	case t.snap != nil:
		if ev, ok := t.snap.Event(); ok {
			ev.ID = t.last
			return []Event{ev}
		}
		return nil
	case after > 0 && after < t.last:
		// Resuming from further back than the topic remembers, with no
		// snapshot to rebuild from: say so rather than skip in silence.
		detail := fmt.Sprintf("events after %d are no longer kept; what follows starts at %d", after, t.dropped+1)
		return append([]Event{{Name: EventMissed, Data: missed{After: after, Detail: detail}}}, t.ring.since(0)...)
	}
	return nil
}

type missed struct {
	After  int64  `json:"after"`
	Detail string `json:"detail"`
}

// Open makes a live topic: it keeps its last events for Last-Event-ID and,
// with a Snapshot, its state so far, until Finish and Linger. Subscribers
// already waiting on the name stay. Opening a finished topic starts it
// afresh.
func (b *Broker) Open(name string, o TopicOptions) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.evict()
	if b.closed {
		return
	}
	t := b.topics[name]
	if t == nil || !t.finished.IsZero() {
		t = newTopic(name)
		b.topics[name] = t
	}
	keep := o.Replay
	if keep <= 0 {
		keep = b.opts.Replay
	}
	if t.last == 0 && b.localIDs(name, o) {
		t.last = idBase()
	}
	t.opened, t.snap, t.ring, t.dropped = true, o.Snapshot, ring{buf: make([]Event, keep)}, t.last
	t.resync = ""
	if o.Snapshot != nil {
		t.resync = o.Resync
	}
	t.relay, t.mirrored = o.Relay && b.opts.Relay != nil, false
	if t.relay {
		b.opts.Relay(Relayed{Op: RelayOpen, Topic: name})
	}
}

// Ensure opens a live topic unless it is open (or finished and
// lingering): for a producer's last word on a topic it may never have
// opened (a generation cancelled before it began), which must still reach
// its subscribers, here and on the other instances (TopicOptions.Relay).
func (b *Broker) Ensure(name string, o TopicOptions) {
	b.mu.Lock()
	t := b.topics[name]
	open := t != nil && t.opened
	b.mu.Unlock()
	if !open {
		b.Open(name, o)
	}
}

// Gone reports whether a Publish error means only that nobody can receive
// the event any more: the broker is closing, or the topic has ended.
// Publishers store what they publish elsewhere (a run's outcome, a
// notification row), so such an event is not lost and is not worth a log
// line; any other error is.
func Gone(err error) bool { return errors.Is(err, ErrClosed) || errors.Is(err, ErrFinished) }

// Publish sends ev to the topic's subscribers and returns its id. An event
// for a topic nobody opened and nobody listens to goes nowhere (its events
// are kept elsewhere, if at all). Publishing never blocks: a subscriber
// whose queue is full is cut off (see the package doc).
func (b *Broker) Publish(name string, ev Event) (int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return 0, ErrClosed
	}
	t := b.topics[name]
	if t == nil {
		return ev.ID, nil
	}
	if !t.finished.IsZero() {
		return 0, fmt.Errorf("%w: %s", ErrFinished, name)
	}
	switch {
	case ev.ID == 0:
		ev.ID = t.last + 1
	case ev.ID <= t.last:
		// Delivering it would lose it: a stream skips ids not above the
		// last it sent. The publisher must publish in id order.
		return 0, fmt.Errorf("%w: %s got %d after %d", ErrOutOfOrder, name, ev.ID, t.last)
	}
	t.last = ev.ID
	if t.relay {
		b.relayEvent(name, ev)
	}
	ev.Ref = ""
	if t.snap != nil {
		t.snap.Apply(ev)
	}
	if old, ok := t.ring.push(ev); ok {
		t.dropped = old.ID
	}
	for s := range t.subs {
		select {
		case s.ch <- ev:
		default:
			if !t.resyncSub(s) {
				b.end(s, ErrLagged)
			}
		}
	}
	return ev.ID, nil
}

// resyncSub replaces what waits in a full queue with the topic's state
// so far (TopicOptions.Resync), and reports whether it could. The events
// taken out are all folded into that state, and an event the subscriber's
// reader took just before is older than it, so the subscriber's text is
// whole again after the resync event, never missing a piece. Called under
// the broker's lock, which every send to a queue holds: once emptied, the
// queue has room.
func (t *topic) resyncSub(s *Subscription) bool {
	if t.resync == "" {
		return false
	}
	ev, ok := t.snap.Event()
	if !ok {
		return false
	}
	for len(s.ch) > 0 {
		select {
		case <-s.ch:
		default: // the reader took the last one meanwhile
		}
	}
	ev.ID, ev.Name = t.last, t.resync
	select {
	case s.ch <- ev:
		return true
	default:
		return false
	}
}

// Finish ends a live topic: each subscriber's stream ends after the events
// already queued for it. For Options.Linger the topic still answers late
// joiners with its history, then the end.
func (b *Broker) Finish(name string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.topics[name]
	if t == nil || !t.finished.IsZero() {
		return
	}
	t.finished = b.opts.Now()
	for s := range t.subs {
		b.end(s, nil)
	}
	b.lingering = append(b.lingering, t)
	if t.relay {
		b.opts.Relay(Relayed{Op: RelayFinish, Topic: name})
	}
}

// EndAll ends every subscription with `event: end` and reason as its
// detail (a restore: what the streams said may no longer be true). Topics
// stay: a client that reconnects subscribes again.
func (b *Broker) EndAll(reason string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.endAll(errors.New(reason))
}

// Close ends every subscription (on shutdown) and refuses new ones.
func (b *Broker) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	b.endAll(ErrClosed)
}

func (b *Broker) endAll(err error) {
	for _, t := range b.topics {
		for s := range t.subs {
			b.end(s, err)
		}
	}
}

// Subscribers counts the open subscriptions of the topics whose name
// starts with prefix ("" for all).
func (b *Broker) Subscribers(prefix string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for name, t := range b.topics {
		if strings.HasPrefix(name, prefix) {
			n += len(t.subs)
		}
	}
	return n
}

// Subscription is one subscriber of one topic.
type Subscription struct {
	b       *Broker
	t       *topic
	ch      chan Event
	history []Event
	err     error // why it ended; set before ch is closed
	done    bool  // under b.mu
}

// Subscribe subscribes to a topic. after is the last event id the
// subscriber saw (its Last-Event-ID), or 0. Call Close when done.
func (b *Broker) Subscribe(name string, after int64) *Subscription {
	return b.subscribe(name, after, true)
}

// subscribe without history is for durable topics, whose history the
// caller replays from its own store.
func (b *Broker) subscribe(name string, after int64, history bool) *Subscription {
	s := &Subscription{b: b, ch: make(chan Event, b.opts.Buffer)}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.evict()
	if b.closed {
		s.stop(ErrClosed)
		return s
	}
	t := b.topics[name]
	if t == nil {
		t = newTopic(name)
		b.topics[name] = t
	}
	s.t = t
	if history {
		s.history = t.history(after)
	}
	if !t.finished.IsZero() {
		s.stop(nil) // the history is all there is
		return s
	}
	t.subs[s] = struct{}{}
	close(b.joined)
	b.joined = make(chan struct{})
	if !t.opened && b.opts.Relay != nil && b.mirrorOf(name) != nil {
		// Its producer may be another instance, waiting for its requester
		// (WaitSubscriber) before its first event.
		b.opts.Relay(Relayed{Op: RelayJoin, Topic: name})
	}
	return s
}

// WaitSubscriber waits until the topic has a subscriber, here or on
// another instance (Received), or ctx ends, and reports whether one came. It is for a producer that works for one client
// and must not publish before that client listens: a generation streamed
// to the request that started it waits for it before its first event, so
// that the client gets every event rather than a snapshot.
func (b *Broker) WaitSubscriber(ctx context.Context, name string) bool {
	for {
		b.mu.Lock()
		t := b.topics[name]
		_, elsewhere := b.remote[name]
		if t != nil && len(t.subs) > 0 || elsewhere {
			b.mu.Unlock()
			return true
		}
		joined := b.joined
		b.mu.Unlock()
		select {
		case <-joined:
		case <-ctx.Done():
			return false
		}
	}
}

// History is what the subscriber missed or the topic's state so far, to
// be handled before Events.
func (s *Subscription) History() []Event { return s.history }

// Events delivers what is published after subscribing. It is closed when
// the subscription ends; Err then says why.
func (s *Subscription) Events() <-chan Event { return s.ch }

// Err is why the subscription ended, once Events is closed: nil when the
// topic finished, ErrLagged, ErrClosed, or the reason given to EndAll.
func (s *Subscription) Err() error { return s.err }

// Close unsubscribes.
func (s *Subscription) Close() {
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	if !s.done {
		s.b.end(s, nil)
	}
}

func (s *Subscription) stop(err error) {
	s.done, s.err = true, err
	close(s.ch)
}

// end removes a subscription; a topic nobody opened goes with its last
// subscriber. Called under b.mu.
func (b *Broker) end(s *Subscription, err error) {
	t := s.t
	delete(t.subs, s)
	s.stop(err)
	if !t.opened && t.finished.IsZero() && len(t.subs) == 0 && b.topics[t.name] == t {
		delete(b.topics, t.name)
	}
}

// evict forgets finished topics once Linger has passed. Called under b.mu.
func (b *Broker) evict() {
	now := b.opts.Now()
	kept := b.lingering[:0]
	for _, t := range b.lingering {
		if now.Sub(t.finished) < b.opts.Linger {
			kept = append(kept, t)
		} else if b.topics[t.name] == t {
			delete(b.topics, t.name)
		}
	}
	clear(b.lingering[len(kept):])
	b.lingering = kept
	for name, at := range b.remote {
		if now.Sub(at) >= b.opts.Linger {
			delete(b.remote, name)
		}
	}
}

// ring keeps the last len(buf) events of a topic.
type ring struct {
	buf      []Event
	start, n int
}

// push adds ev and returns the event it pushed out, if any (ev itself
// when the ring keeps nothing).
func (r *ring) push(ev Event) (Event, bool) {
	if len(r.buf) == 0 {
		return ev, true
	}
	if r.n < len(r.buf) {
		r.buf[(r.start+r.n)%len(r.buf)] = ev
		r.n++
		return Event{}, false
	}
	old := r.buf[r.start]
	r.buf[r.start] = ev
	r.start = (r.start + 1) % len(r.buf)
	return old, true
}

// since returns the kept events with ids above after, oldest first.
func (r *ring) since(after int64) []Event {
	var out []Event
	for i := 0; i < r.n; i++ {
		if ev := r.buf[(r.start+i)%len(r.buf)]; ev.ID > after {
			out = append(out, ev)
		}
	}
	return out
}
