// Package storetest holds what the tests of store, server and its services
// share: a settable clock and a fresh database per test.
package storetest

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/copydesk/copydesk/store"
)

// T0 is where a test clock starts by default: a whole second, so times
// survive the store's millisecond format unchanged.
var T0 = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// Clock is a settable time source for store.DB.Now and the services. It is
// safe for concurrent use.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock stopped at t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock on by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// OpenDB opens a fresh, migrated database file in a temporary directory with
// a clock at T0, and closes it when the test ends.
func OpenDB(t testing.TB) (*store.DB, *Clock) {
	t.Helper()
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "copydesk.db"), store.Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	clk := NewClock(T0)
	db.Now = clk.Now
	return db, clk
}

// WantKind fails the test unless err is an error of kind want.
func WantKind(t testing.TB, err error, want store.Kind) {
	t.Helper()
	if got := store.KindOf(err); err == nil || got != want {
		t.Fatalf("got error %v (kind %d), want kind %d", err, got, want)
	}
}
