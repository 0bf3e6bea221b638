package store

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// gate lets a restore swap the database file under everyone's feet safely.
// Request handlers and background work hold it shared while they use the
// database; Replace (and Close) take it exclusively: new holders wait, and
// the exclusive side waits for the current holders to let go, but only for
// a bounded time, so one slow request cannot stall the server behind a
// waiting restore indefinitely. Long holders (jobs) hold it yielding: they
// are told to stop as soon as an exclusive holder waits.
type gate struct {
	active  atomic.Int64                  // current holders
	blocked atomic.Pointer[chan struct{}] // set while exclusive: holders wait for it to close
	idleMu  sync.Once
	idle    chan struct{} // a holder left while exclusive waits (buffered, 1)
	excl    sync.Mutex    // one exclusive holder at a time

	yieldMu  sync.Mutex
	yielders map[uint64]context.CancelCauseFunc // holders to stop when exclusive waits
	nextID   uint64
}

func (g *gate) idleCh() chan struct{} {
	g.idleMu.Do(func() { g.idle = make(chan struct{}, 1) })
	return g.idle
}

// hold is on every request's path, so it is two atomic operations when no
// restore is under way. A holder counts itself, then checks for an
// exclusive holder; the exclusive side announces itself, then counts the
// holders: with sequentially consistent atomics one of them sees the other.
func (g *gate) hold() func() {
	for {
		if ch := g.blocked.Load(); ch != nil {
			<-*ch
			continue
		}
		g.active.Add(1)
		if g.blocked.Load() == nil {
			break
		}
		g.leave() // an exclusive holder came in between: wait for it
	}
	var once sync.Once
	return func() { once.Do(g.leave) }
}

func (g *gate) leave() {
	if g.active.Add(-1) == 0 && g.blocked.Load() != nil {
		select {
		case g.idleCh() <- struct{}{}:
		default:
		}
	}
}

// exclusive blocks new holders and waits up to wait for the current ones.
// It fails with a conflict when another exclusive holder is under way, and
// with a KindRetryLater error when the holders did not finish in time.
func (g *gate) exclusive(wait time.Duration) (func(), error) {
	if !g.excl.TryLock() {
		return nil, Conflict("another restore is under way")
	}
	ch := make(chan struct{})
	idle := g.idleCh()
	select { // drop a signal left from an earlier wait
	case <-idle:
	default:
	}
	g.blocked.Store(&ch)
	g.stopYielders()
	unlock := func() {
		g.blocked.Store(nil)
		close(ch)
		g.excl.Unlock()
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for g.active.Load() > 0 {
		select {
		case <-idle:
		case <-timer.C:
			busy := g.active.Load()
			unlock()
			return nil, &Error{Kind: KindRetryLater, RetryAfter: 10, Message: "the database is busy: " + itoaInt(int(busy)) +
				" requests or jobs did not finish within " + wait.String() + "; nothing was changed, try again"}
		}
	}
	return unlock, nil
}

// ErrReplacing is the cause (context.Cause) of a HoldYielding context's end:
// the database is about to be replaced (a restore) or closed, and waits for
// its holders to let go.
var ErrReplacing = errors.New("store: the database is being replaced")

// holdYielding is hold for a holder that stop cancels, with ErrReplacing,
// as soon as an exclusive holder waits: at once if one came in meanwhile.
func (g *gate) holdYielding(stop context.CancelCauseFunc) func() {
	release := g.hold()
	g.yieldMu.Lock()
	if g.yielders == nil {
		g.yielders = map[uint64]context.CancelCauseFunc{}
	}
	id := g.nextID
	g.nextID++
	g.yielders[id] = stop
	// exclusive announces itself before it takes yieldMu to stop the
	// yielders: either it finds this one registered, or this one sees it.
	replacing := g.blocked.Load() != nil
	g.yieldMu.Unlock()
	if replacing {
		stop(ErrReplacing)
	}
	return func() {
		g.yieldMu.Lock()
		delete(g.yielders, id)
		g.yieldMu.Unlock()
		release()
	}
}

// stopYielders tells every yielding holder that an exclusive holder waits.
func (g *gate) stopYielders() {
	g.yieldMu.Lock()
	defer g.yieldMu.Unlock()
	for _, stop := range g.yielders {
		stop(ErrReplacing)
	}
}

func itoaInt(n int) string {
	const digits = "0123456789"
	if n < 10 {
		return digits[n : n+1]
	}
	return itoaInt(n/10) + digits[n%10:n%10+1]
}

type holdKey struct{}

// holding marks a context that holds a database, until its release: a
// context that outlives its hold (a request that let go before it streams)
// no longer counts as holding, so whoever holds again through it really
// does.
type holding struct {
	db       *DB
	released atomic.Bool
}

// holds reports whether ctx holds this database now.
func (db *DB) holds(ctx context.Context) bool {
	h, _ := ctx.Value(holdKey{}).(*holding)
	return h != nil && h.db == db && !h.released.Load()
}

// mark returns ctx marked as holding the database, and the release that
// ends the mark and then calls let (once).
func (db *DB) mark(ctx context.Context, let func()) (context.Context, func()) {
	h := &holding{db: db}
	return context.WithValue(ctx, holdKey{}, h), func() {
		if h.released.CompareAndSwap(false, true) {
			let()
		}
	}
}

// Hold keeps the database from being replaced until release is called, and
// waits while a replacement is under way. Only two callers take it: the
// request middleware (server/middleware.go), for the whole of a request,
// and the job runner (server/jobs), for the whole of a job; everything
// they call runs under their hold, so none sees a half-swapped database. It is re-entrant through the
// context: while ctx holds this database, Hold does nothing more. Use the
// returned context below; once released, it holds nothing.
func (db *DB) Hold(ctx context.Context) (context.Context, func()) {
	if db.holds(ctx) {
		return ctx, func() {}
	}
	return db.mark(ctx, db.gate.hold())
}

// HoldYielding is Hold for holders that may take minutes (a job waiting on
// an LLM): the returned context ends, with context.Cause ErrReplacing, as
// soon as a restore (Replace) or Close waits for the database, so that
// they need not wait for it. The holder then stops, writes nothing more
// (the database is about to be replaced) and releases; the database stays
// held until it does. The context also ends when release is called. While
// ctx holds the database, HoldYielding does nothing more: the outer holder
// decides when to let go.
func (db *DB) HoldYielding(ctx context.Context) (context.Context, func()) {
	if db.holds(ctx) {
		return ctx, func() {}
	}
	ctx, stop := context.WithCancelCause(ctx)
	release := db.gate.holdYielding(stop)
	return db.mark(ctx, func() {
		release()
		stop(nil)
	})
}

// ReplaceWait bounds how long Replace waits for holders to let go.
var ReplaceWait = 30 * time.Second
