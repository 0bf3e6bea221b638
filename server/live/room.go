package live

import (
	"cmp"
	"context"
	"slices"

	"github.com/copydesk/copydesk/server/generation"
	"github.com/copydesk/copydesk/server/stream"
	"github.com/copydesk/copydesk/store"
)

// Watching. A session that someone watches, or that has a generation
// waiting or under way, has a room: who watches it, and the generation of
// the moment with its text so far. The room owns the session's topic on
// the broker: it opens it when the room is made and finishes it when the
// room empties (nobody watches, nothing generates) or the session closes.
//
// Every event of a session is published under the service's lock, in the
// order the room's state changes, and publishing never waits for a
// watcher: a watcher whose queue is full is resynced (stream.TopicOptions
// Resync) with the whole text so far. The generation itself only appends
// to its text and publishes; it never writes to a connection.

// Events of a session's topic.
const (
	// EventSnapshot is the first event of every stream: the session's state
	// (Snapshot). Then come the events below as they happen.
	EventSnapshot = "snapshot"
	// EventResync replaces what a watcher that fell behind had queued: a
	// Snapshot with the whole text so far. Take it as EventSnapshot.
	EventResync = "resync"
	// EventPresence says who watches, when someone comes or goes.
	EventPresence = "presence"
	// EventGeneration is a generation queued, then again as it starts: the
	// text starts over.
	EventGeneration = "generation"
	// EventDelta is a piece of the text of the generation under way.
	EventDelta = "delta"
	// EventDone is a generation that ended (succeeded, failed or
	// cancelled), with its output.
	EventDone = "done"
	// EventError is a generation that ended without being recorded (a
	// database restore, a failed write): read the session again.
	EventError = "error"
	// EventClosed ends the stream: the session was closed or deleted.
	EventClosed = "closed"
)

// Watcher is someone who watches a session, with how many streams they
// have open on it.
type Watcher struct {
	UserID      int64  `json:"user_id"`
	Username    string `json:"username"`
	Connections int    `json:"connections"`
}

// Presence is the data of an EventPresence: who came or went, and who
// watches now.
type Presence struct {
	Action   string    `json:"action" enum:"join,leave"`
	UserID   int64     `json:"user_id"`
	Username string    `json:"username"`
	Watchers []Watcher `json:"watchers"`
}

// Delta is the data of an EventDelta.
type Delta struct {
	GenerationID int64  `json:"generation_id"`
	Text         string `json:"text"`
}

// Failure is the data of an EventError.
type Failure struct {
	GenerationID int64  `json:"generation_id"`
	Detail       string `json:"detail"`
}

// Closed is the data of an EventClosed.
type Closed struct {
	SessionID int64  `json:"session_id"`
	Deleted   bool   `json:"deleted"`
	Detail    string `json:"detail"`
}

// Snapshot is the data of EventSnapshot and EventResync: the generation of
// the moment (waiting, under way, or the last to end while the session
// was watched; nil when none), its text so far, and who watches.
type Snapshot struct {
	SessionID  int64
	Generation *store.LiveGeneration
	Text       string
	Watchers   []Watcher
}

// room is a watched or generating session. Guarded by Service.mu.
type room struct {
	watchers map[int64]*Watcher // by user id
	cur      *current           // the generation waiting or under way, if any
}

// current is a session's generation waiting or under way.
type current struct {
	gen *store.LiveGeneration
	// text is what has been published of it; stopped: nothing more will
	// be (it was cancelled, or its call returned).
	text    []byte
	running bool // its job's handler has it
	stopped bool
}

// errStopped ends a generation's call when it was cancelled meanwhile.
var errStopped = generation.ErrStopped

// roomFor returns a session's room, making it (and opening its topic)
// when there is none. Called under s.mu.
func (s *Service) roomFor(sessionID int64) *room {
	r := s.rooms[sessionID]
	if r == nil {
		r = &room{watchers: map[int64]*Watcher{}}
		s.rooms[sessionID] = r
		s.events.Open(Topic(sessionID), stream.TopicOptions{Snapshot: &snapshot{sessionID: sessionID}, Resync: EventResync})
	}
	return r
}

// tidy drops a room nobody needs any more, and finishes its topic. Called
// under s.mu.
func (s *Service) tidy(sessionID int64, r *room) {
	if len(r.watchers) == 0 && r.cur == nil && s.rooms[sessionID] == r {
		delete(s.rooms, sessionID)
		delete(s.told, sessionID)
		s.events.Finish(Topic(sessionID))
	}
}

// publish sends one event of a session, here and to the other instances
// (instances.go). Called under s.mu.
func (s *Service) publish(sessionID int64, name string, data any) {
	s.publishHere(sessionID, name, data)
	s.announce(sessionID, name, data)
}

// publishHere sends one event of a session to this instance's watchers.
// An event the broker refuses because it is closing is missed by nobody:
// the server is stopping.
func (s *Service) publishHere(sessionID int64, name string, data any) {
	if _, err := s.events.Publish(Topic(sessionID), stream.Event{Name: name, Data: data}); err != nil && !stream.Gone(err) {
		s.log.Error("live session event not published", "session", sessionID, "event", name, "err", err)
	}
}

// Watch checks that the scope may watch a session now (it sees it, and it
// is open) and returns it; the stream's heartbeat asks again.
func (s *Service) Watch(ctx context.Context, sc store.Scope, id int64) (*store.LiveSession, error) {
	sess, err := s.Session(ctx, sc, id)
	if err != nil {
		return nil, err
	}
	if sess.Status != store.LiveOpen {
		return nil, store.Conflict("live session %d is closed: read its transcript with GET /api/live-agents/sessions/%d", sess.ID, sess.ID)
	}
	return sess, nil
}

// Join counts a watcher in (one stream of theirs) and tells the others;
// leave counts them out again and must be called once the stream ends.
// The watcher's stream, subscribed after Join, starts with the snapshot,
// which holds them.
func (s *Service) Join(sessionID, userID int64, username string) (leave func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.roomFor(sessionID)
	w := r.watchers[userID]
	if w == nil {
		w = &Watcher{UserID: userID, Username: username}
		r.watchers[userID] = w
	}
	w.Connections++
	s.presence(sessionID, r, Presence{Action: "join", UserID: userID, Username: username})
	left := false
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if left || s.rooms[sessionID] != r { // the session ended: its room went with it
			return
		}
		left = true
		if w.Connections--; w.Connections == 0 {
			delete(r.watchers, userID)
		}
		s.presence(sessionID, r, Presence{Action: "leave", UserID: userID, Username: username})
		s.tidy(sessionID, r)
	}
}

// list is who watches, by username; a copy, as published data never
// changes.
func (r *room) list() []Watcher { return sorted(r.watchers) }

// sorted is watchers by username, as lists of watchers are.
func sorted(watchers map[int64]*Watcher) []Watcher {
	out := make([]Watcher, 0, len(watchers))
	for _, w := range watchers {
		out = append(out, *w)
	}
	slices.SortFunc(out, func(a, b Watcher) int {
		return cmp.Or(cmp.Compare(a.Username, b.Username), cmp.Compare(a.UserID, b.UserID))
	})
	return out
}

// watchers is who watches a session now, on every instance.
func (s *Service) watchers(sessionID int64) []Watcher {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.everyone(sessionID, s.rooms[sessionID])
}

// queued tells the watchers of a generation waiting for its turn.
func (s *Service) queued(g *store.LiveGeneration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.roomFor(g.SessionID)
	if r.cur == nil || r.cur.gen.ID != g.ID {
		r.cur = &current{gen: g}
	}
	s.publish(g.SessionID, EventGeneration, g)
}

// begin is a generation's start, by its job's handler: its text starts
// empty. A generation cancelled before its start stays stopped.
func (s *Service) begin(g *store.LiveGeneration) *current {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.roomFor(g.SessionID)
	if r.cur == nil || r.cur.gen.ID != g.ID {
		r.cur = &current{gen: g}
	}
	c := r.cur
	c.gen, c.running, c.text = g, true, nil
	s.publish(g.SessionID, EventGeneration, g)
	return c
}

// delta appends a piece of a generation's text and publishes it; after a
// cancel it refuses (errStopped), which ends the call, so the text kept is
// exactly what the watchers got.
func (s *Service) delta(c *current, text string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.stopped {
		return errStopped
	}
	c.text = append(c.text, text...)
	s.publish(c.gen.SessionID, EventDelta, Delta{GenerationID: c.gen.ID, Text: text})
	return nil
}

// stop ends a generation's text: nothing more is appended. It returns the
// text, and whether a cancel stopped it first.
func (s *Service) stop(c *current) (text string, cancelled bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cancelled, c.stopped = c.stopped, true
	return string(c.text), cancelled
}

// cancel stops the session's generation genID if the room has it, and
// returns its text so far, and whether a handler runs it (which then
// records its usage and publishes its end). A generation the room does
// not have has published nothing.
func (s *Service) cancel(sessionID, genID int64) (text string, running bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.rooms[sessionID]
	if r == nil || r.cur == nil || r.cur.gen.ID != genID {
		return "", false
	}
	r.cur.stopped = true
	return string(r.cur.text), r.cur.running
}

// end publishes how a generation ended, once: the first caller of the
// generation's end (its handler, or the cancel of one not running yet)
// publishes it.
func (s *Service) end(g *store.LiveGeneration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.rooms[g.SessionID]
	if r == nil || r.cur == nil || r.cur.gen.ID != g.ID {
		return
	}
	r.cur = nil
	s.publish(g.SessionID, EventDone, g)
	s.tidy(g.SessionID, r)
}

// abort is end for a generation whose ending could not be recorded.
func (s *Service) abort(sessionID, genID int64, detail string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.rooms[sessionID]
	if r == nil || r.cur == nil || r.cur.gen.ID != genID {
		return
	}
	r.cur = nil
	s.publish(sessionID, EventError, Failure{GenerationID: genID, Detail: detail})
	s.tidy(sessionID, r)
}

// ended tells a closed or deleted session's watchers, here and on the
// other instances, ends their streams and drops its room.
func (s *Service) ended(sessionID int64, c Closed) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.announce(sessionID, EventClosed, c)
	s.endedHere(sessionID, c)
}

// endedHere is ended for this instance's watchers. Called under s.mu.
func (s *Service) endedHere(sessionID int64, c Closed) {
	delete(s.remote, sessionID)
	delete(s.told, sessionID)
	if _, ok := s.rooms[sessionID]; !ok {
		return
	}
	delete(s.rooms, sessionID)
	s.publishHere(sessionID, EventClosed, c)
	s.events.Finish(Topic(sessionID))
}

// Restored forgets what the rooms knew of generations that do not run
// here: after a restore, the database says which are waiting (their jobs,
// if they are in it, start them again); after the connection to the other
// instances dropped (stream.Mirror.Lost), what they relayed meanwhile is
// lost, and the next event of one still under way elsewhere follows it
// again. One running here stays: its handler ends it. The streams were
// ended (EndAll): a room nobody watches goes.
func (s *Service) Restored() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, r := range s.rooms {
		if r.cur != nil && !r.cur.running {
			r.cur = nil
		}
		s.tidy(id, r)
	}
}

// snapshot folds a session's events into its state so far (see
// stream.Snapshot); Apply runs under the broker's lock.
type snapshot struct {
	sessionID int64
	gen       *store.LiveGeneration
	text      []byte
	watchers  []Watcher
}

func (x *snapshot) Apply(ev stream.Event) {
	switch d := ev.Data.(type) {
	case Presence:
		x.watchers = d.Watchers
	case *store.LiveGeneration:
		if ev.Name == EventGeneration {
			x.text = nil
		}
		x.gen = d
	case Delta:
		x.text = append(x.text, d.Text...)
	case Failure:
		x.gen, x.text = nil, nil
	}
}

func (x *snapshot) Event() (stream.Event, bool) {
	w := x.watchers
	if w == nil {
		w = []Watcher{}
	}
	return stream.Event{Name: EventSnapshot, Data: Snapshot{SessionID: x.sessionID, Generation: x.gen, Text: string(x.text), Watchers: w}}, true
}
