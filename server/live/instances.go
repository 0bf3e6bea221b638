package live

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/copydesk/copydesk/server/stream"
	"github.com/copydesk/copydesk/store"
)

// Several instances (PostgreSQL). A session's events come from every
// instance: presence from each one its watchers are connected to, a
// generation from the one whose job runner has it, a cancel or a close
// from the one that took the request. So each instance announces what
// its room did (stream.Broker.Announce: the event, its data, and which
// instance), and every other one applies it to its own room and
// publishes it to its own watchers, under its own ids: the room of every
// instance follows the generation under way (its text so far is the late
// watcher's snapshot there), and who watches is everyone, everywhere.
//
// Each instance numbers the topic from a random start (stream's localIDs):
// a client that resumes on another instance with an id of the first gets
// the snapshot there, the text so far.
//
// Rows travel by id and are read from the database (a generation's output
// can be larger than an announcement carries); deltas are at most 2 KB.

// maxToldWatchers bounds the list of watchers an instance tells the
// others (an announcement carries less than 8000 bytes): beyond it, the
// others list the first ones by name.
const maxToldWatchers = 60

// presenceTTL is how long another instance's list of watchers counts
// without being told again: an instance that dies stops telling. Each
// instance tells its list again at most every presenceRefresh, from its
// watchers' heartbeats (Refresh).
const (
	presenceTTL     = 3 * time.Minute
	presenceRefresh = time.Minute
)

// remoteWatchers is another instance's watchers of a session.
type remoteWatchers struct {
	list []Watcher
	at   time.Time
}

// genRef is how a generation's row travels: by id.
type genRef struct {
	ID int64 `json:"id"`
}

// announce tells the other instances of an event this one published.
// Called under s.mu.
func (s *Service) announce(sessionID int64, name string, data any) {
	if s.events == nil || !s.events.Relays() {
		return // one instance
	}
	switch d := data.(type) {
	case *store.LiveGeneration:
		data = genRef{ID: d.ID}
	case Presence:
		if len(d.Watchers) > maxToldWatchers {
			d.Watchers = d.Watchers[:maxToldWatchers]
			data = d
		}
	}
	b, err := stream.JSON(data)
	if err != nil {
		s.log.Error("live session event not announced", "session", sessionID, "event", name, "err", err)
		return
	}
	s.events.Announce(stream.Relayed{Topic: Topic(sessionID), Name: name, Data: b})
}

// presence tells who came or went: to this instance's watchers with
// everyone who watches, to the others with this instance's watchers.
// Called under s.mu.
func (s *Service) presence(sessionID int64, r *room, p Presence) {
	p.Watchers = r.list()
	s.announce(sessionID, EventPresence, p)
	s.told[sessionID] = time.Now()
	p.Watchers = s.everyone(sessionID, r)
	s.publishHere(sessionID, EventPresence, p)
}

// everyone is who watches a session on every instance (r, this one's
// room, may be nil). Called under s.mu.
func (s *Service) everyone(sessionID int64, r *room) []Watcher {
	by := map[int64]*Watcher{}
	add := func(w Watcher) {
		if x := by[w.UserID]; x != nil {
			x.Connections += w.Connections
			return
		}
		by[w.UserID] = &w
	}
	if r != nil {
		for _, w := range r.watchers {
			add(*w)
		}
	}
	now := time.Now()
	for inst, rw := range s.remote[sessionID] {
		if now.Sub(rw.at) > presenceTTL {
			delete(s.remote[sessionID], inst)
			continue
		}
		for _, w := range rw.list {
			add(w)
		}
	}
	if len(s.remote[sessionID]) == 0 {
		delete(s.remote, sessionID)
	}
	return sorted(by)
}

// Refresh tells the other instances again who watches a session here, at
// most every presenceRefresh (a watcher's heartbeat calls it), so that
// they keep counting them.
func (s *Service) Refresh(sessionID int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.rooms[sessionID]
	if r == nil || len(r.watchers) == 0 || time.Since(s.told[sessionID]) < presenceRefresh {
		return
	}
	s.told[sessionID] = time.Now()
	s.announce(sessionID, EventPresence, Presence{Action: actionRefresh, Watchers: r.list()})
}

// actionRefresh is a presence told again (Refresh): the others update
// their lists and tell their watchers nothing.
const actionRefresh = "refresh"

// mirror registers the sessions' topics with the broker, for what the
// other instances announce.
func (s *Service) mirror() {
	if s.events == nil {
		return
	}
	prefix := strings.TrimSuffix(Topic(0), "0")
	s.events.Mirror(prefix, stream.Mirror{State: func(ctx context.Context, r stream.Relayed) error {
		id, err := stream.TopicID(r.Topic, prefix)
		if err != nil {
			return err
		}
		return s.received(ctx, id, r)
	}, Lost: s.Restored}) // what was relayed meanwhile is lost: as after a restore
}

// received applies an event another instance announced to this one's
// room, and publishes it to this instance's watchers.
func (s *Service) received(ctx context.Context, sessionID int64, r stream.Relayed) error {
	var g *store.LiveGeneration
	switch r.Name {
	case EventGeneration, EventDone, EventDelta:
		// The generation's row, read before taking the lock (a delta's
		// only when this room does not follow it yet).
		var ref genRef
		if r.Name == EventDelta {
			var d Delta
			if err := json.Unmarshal(r.Data, &d); err != nil {
				return err
			}
			ref.ID = d.GenerationID
			s.mu.Lock()
			room := s.rooms[sessionID]
			following := room != nil && room.cur != nil && room.cur.gen.ID == d.GenerationID
			s.mu.Unlock()
			if following {
				break
			}
		} else if err := json.Unmarshal(r.Data, &ref); err != nil {
			return err
		}
		var err error
		if g, err = s.db.LiveGenerationByID(ctx, ref.ID); err != nil {
			return fmt.Errorf("generation %d, for a %s event of another instance: %w", ref.ID, r.Name, err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch r.Name {
	case EventPresence:
		var p Presence
		if err := json.Unmarshal(r.Data, &p); err != nil {
			return err
		}
		switch {
		case len(p.Watchers) == 0:
			delete(s.remote[sessionID], r.From)
			if len(s.remote[sessionID]) == 0 {
				delete(s.remote, sessionID)
			}
		case s.remote[sessionID] == nil:
			s.remote[sessionID] = map[string]remoteWatchers{}
			fallthrough
		default:
			s.remote[sessionID][r.From] = remoteWatchers{list: p.Watchers, at: time.Now()}
		}
		if room := s.rooms[sessionID]; room != nil && p.Action != actionRefresh {
			p.Watchers = s.everyone(sessionID, room)
			s.publishHere(sessionID, EventPresence, p)
		}
	case EventGeneration:
		room := s.roomFor(sessionID)
		if room.cur == nil || room.cur.gen.ID != g.ID {
			room.cur = &current{gen: g}
		}
		if g.Status == store.RunRunning {
			room.cur.gen, room.cur.text = g, nil
		}
		s.publishHere(sessionID, EventGeneration, g)
	case EventDelta:
		var d Delta
		if err := json.Unmarshal(r.Data, &d); err != nil {
			return err
		}
		room := s.roomFor(sessionID)
		if room.cur == nil || room.cur.gen.ID != d.GenerationID {
			if g == nil || g.Finished() {
				return nil // it ended meanwhile: its done follows, or came
			}
			// Started before this instance heard of it: its text so far
			// here is what comes from now on.
			room.cur = &current{gen: g}
		}
		room.cur.text = append(room.cur.text, d.Text...)
		s.publishHere(sessionID, EventDelta, d)
	case EventDone:
		room := s.rooms[sessionID]
		if room == nil || room.cur == nil || room.cur.gen.ID != g.ID {
			return nil
		}
		// Ended elsewhere (a cancel there): a handler running it here
		// stops at its next piece, and keeps the ending recorded.
		room.cur.stopped = true
		room.cur = nil
		s.publishHere(sessionID, EventDone, g)
		s.tidy(sessionID, room)
	case EventError:
		var f Failure
		if err := json.Unmarshal(r.Data, &f); err != nil {
			return err
		}
		room := s.rooms[sessionID]
		if room == nil || room.cur == nil || room.cur.gen.ID != f.GenerationID {
			return nil
		}
		room.cur = nil
		s.publishHere(sessionID, EventError, f)
		s.tidy(sessionID, room)
	case EventClosed:
		var c Closed
		if err := json.Unmarshal(r.Data, &c); err != nil {
			return err
		}
		s.endedHere(sessionID, c)
	}
	return nil
}
