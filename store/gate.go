package store

import (
	"context"
	"sync"
	"time"
)

// gate lets a restore swap the database file under everyone's feet safely.
// Request handlers and background work hold it shared while they use the
// database; Replace (and Close) take it exclusively: new holders wait, and
// the exclusive side waits for the current holders to let go, but only for
// a bounded time, so one slow request cannot stall the server behind a
// waiting restore indefinitely.
type gate struct {
	mu      sync.Mutex
	active  int
	blocked chan struct{} // non-nil while exclusive: holders wait on it
	idle    chan struct{} // closed when active reaches 0 while exclusive waits
}

func (g *gate) hold() func() {
	g.mu.Lock()
	for g.blocked != nil {
		ch := g.blocked
		g.mu.Unlock()
		<-ch
		g.mu.Lock()
	}
	g.active++
	g.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			g.active--
			if g.active == 0 && g.idle != nil {
				close(g.idle)
				g.idle = nil
			}
			g.mu.Unlock()
		})
	}
}

// exclusive blocks new holders and waits up to wait for the current ones.
// It fails with a conflict when another exclusive holder is under way, and
// with a KindLocked error when the holders did not finish in time.
func (g *gate) exclusive(wait time.Duration) (func(), error) {
	g.mu.Lock()
	if g.blocked != nil {
		g.mu.Unlock()
		return nil, Conflict("another restore is under way")
	}
	g.blocked = make(chan struct{})
	unlock := func() {
		g.mu.Lock()
		close(g.blocked)
		g.blocked = nil
		g.mu.Unlock()
	}
	if g.active == 0 {
		g.mu.Unlock()
		return unlock, nil
	}
	idle := make(chan struct{})
	g.idle = idle
	busy := g.active
	g.mu.Unlock()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-idle:
		return unlock, nil
	case <-timer.C:
		g.mu.Lock()
		g.idle = nil
		g.mu.Unlock()
		unlock()
		return nil, &Error{Kind: KindLocked, RetryAfter: 10, Message: "the database is busy: " + itoaInt(busy) +
			" requests or jobs did not finish within " + wait.String() + "; nothing was changed, try again"}
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
