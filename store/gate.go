package store

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// gate lets a restore swap the database file under everyone's feet safely.
// Request handlers and background work hold it shared while they use the
// database; Replace (and Close) take it exclusively: new holders wait, and
// the exclusive side waits for the current holders to let go, but only for
// a bounded time, so one slow request cannot stall the server behind a
// waiting restore indefinitely.
type gate struct {
	active  atomic.Int64                  // current holders
	blocked atomic.Pointer[chan struct{}] // set while exclusive: holders wait for it to close
	idleMu  sync.Once
	idle    chan struct{} // a holder left while exclusive waits (buffered, 1)
	excl    sync.Mutex    // one exclusive holder at a time
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

func itoaInt(n int) string {
	const digits = "0123456789"
	if n < 10 {
		return digits[n : n+1]
	}
	return itoaInt(n/10) + digits[n%10:n%10+1]
}

type holdKey struct{}

// Hold keeps the database from being replaced until release is called, and
// waits while a replacement is under way. Every request and every piece of
// background work holds it while it uses the database, so none sees a
// half-swapped database. It is re-entrant through the context: when ctx
// already holds this database, Hold does nothing more, so code that holds
// (the engine, a job) can be called from code that already does (a
// request). Use the returned context below.
func (db *DB) Hold(ctx context.Context) (context.Context, func()) {
	if ctx.Value(holdKey{}) == db {
		return ctx, func() {}
	}
	release := db.gate.hold()
	return context.WithValue(ctx, holdKey{}, db), release
}

// ReplaceWait bounds how long Replace waits for holders to let go.
var ReplaceWait = 30 * time.Second
