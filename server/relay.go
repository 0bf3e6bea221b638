package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/copydesk/copydesk/server/stream"
	"github.com/copydesk/copydesk/store"
)

// relay carries this instance's relayed live topics (server/stream's
// relay.go: generations' events) to the other instances on the database,
// and hands what they relay to this instance's broker. An announcement is
// "live INSTANCE SEQ JSON": the instance that sent it (an instance skips
// its own), a sequence number (PostgreSQL delivers one of identical
// payloads sent together), and the stream.Relayed.
type relay struct {
	db   *store.DB
	log  *slog.Logger
	self string

	mu      sync.Mutex
	seq     uint64
	queue   []string
	dropped int
	wake    chan struct{}
}

const relayPrefix = "live "

// errMine is received's answer for this instance's own steps.
var errMine = errors.New("relayed by this instance")

// relayQueue bounds what waits to be sent while the database is slow or
// away; beyond it, steps are dropped (and logged): the watchers on other
// instances miss them, the stored outcome does not.
const relayQueue = 100_000

// relayBatch is how many steps go in one statement.
const relayBatch = 100

func newRelay(db *store.DB, log *slog.Logger) *relay {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return &relay{db: db, log: log, self: hex.EncodeToString(b), wake: make(chan struct{}, 1)}
}

// send queues one step (stream.Options.Relay: called under the broker's
// lock, so it only queues).
func (r *relay) send(m stream.Relayed) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seq++
	p := r.payload(m)
	if len(p) > store.MaxAnnouncement {
		// Too large to carry: the other instances get the event without
		// its data, and drop it (an event a Ref re-reads never is).
		r.log.Error("a live event is too large to relay to the other instances; they miss it", "topic", m.Topic, "event", m.Name, "bytes", len(p))
		m.Data = nil
		p = r.payload(m)
	}
	if len(r.queue) >= relayQueue {
		r.dropped++
		return
	}
	r.queue = append(r.queue, p)
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

func (r *relay) payload(m stream.Relayed) string {
	b, _ := stream.JSON(m) // strings, numbers and raw JSON: cannot fail; json.Marshal would escape HTML inside Data
	return relayPrefix + r.self + " " + strconv.FormatUint(r.seq, 10) + " " + string(b)
}

// run sends what is queued, in order, until ctx ends.
func (r *relay) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.wake:
		}
		for {
			r.mu.Lock()
			n := min(len(r.queue), relayBatch)
			batch := r.queue[:n:n]
			if r.queue = r.queue[n:]; len(r.queue) == 0 {
				r.queue = nil // let the sent go
			}
			dropped := r.dropped
			r.dropped = 0
			r.mu.Unlock()
			if dropped > 0 {
				r.log.Error("live events were not relayed to the other instances: too many waited for the database", "dropped", dropped)
			}
			if n == 0 {
				break
			}
			sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			err := r.db.AnnounceAll(sctx, batch)
			cancel()
			if err != nil && ctx.Err() == nil {
				r.log.Error("live events not relayed to the other instances", "events", n, "err", err)
			}
		}
	}
}

// received reads an announcement; ok is false for one that is not a
// relayed step, and for this instance's own (then mine is true).
func (r *relay) received(payload string) (m stream.Relayed, ok bool, err error) {
	rest, ok := strings.CutPrefix(payload, relayPrefix)
	if !ok {
		return m, false, nil
	}
	from, rest, _ := strings.Cut(rest, " ")
	if from == r.self {
		return m, false, errMine
	}
	_, body, _ := strings.Cut(rest, " ")
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		return m, false, errors.New("a relayed live event cannot be read: " + err.Error())
	}
	m.From = from
	return m, true, nil
}
