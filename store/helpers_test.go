package store_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/copydesk/copydesk/store"
)

// t0 is where every test clock starts: a whole second, so times survive the
// store's millisecond format unchanged.
var t0 = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// clock is a settable time source for db.Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// openDB opens a fresh database file in a temporary directory with a clock
// fixed at t0, and closes it when the test ends.
func openDB(t testing.TB) (*store.DB, *clock) {
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
	clk := &clock{t: t0}
	db.Now = clk.Now
	return db, clk
}

// mustUser creates an account named name (e-mail name@example.com).
func mustUser(t testing.TB, db *store.DB, name string, role store.Role) *store.User {
	t.Helper()
	u, err := db.CreateUser(context.Background(), store.NewUser{
		Email: name + "@example.com", Username: name, FullName: strings.ToUpper(name[:1]) + name[1:],
		PasswordHash: "hash-of-" + name, Role: role,
	})
	if err != nil {
		t.Fatalf("CreateUser %s: %v", name, err)
	}
	return u
}

// mustSession starts a session for userID whose token lasts an hour and
// whose absolute end is 30 days away.
func mustSession(t testing.TB, db *store.DB, userID int64) *store.Session {
	t.Helper()
	now := db.Now()
	s, err := db.CreateSession(context.Background(), store.NewSession{
		UserID: userID, TokenExpiresAt: now.Add(time.Hour), ExpiresAt: now.Add(30 * 24 * time.Hour),
		IP: "192.0.2.1", UserAgent: "test",
	})
	if err != nil {
		t.Fatalf("CreateSession: %v", err)
	}
	return s
}

// wantKind fails unless err is a *store.Error of kind want.
func wantKind(t testing.TB, err error, want store.Kind) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want kind %s", kindName(want))
	}
	var se *store.Error
	if !errors.As(err, &se) {
		t.Fatalf("got %T %v, want a *store.Error of kind %s", err, err, kindName(want))
	}
	if got := store.KindOf(err); got != want {
		t.Fatalf("got kind %s (%v), want %s", kindName(got), err, kindName(want))
	}
}

func kindName(k store.Kind) string {
	names := map[store.Kind]string{
		store.KindInternal: "Internal", store.KindInvalid: "Invalid", store.KindMalformed: "BadRequest",
		store.KindUnauthorized: "Unauthorized", store.KindForbidden: "Forbidden", store.KindNotFound: "NotFound",
		store.KindConflict: "Conflict", store.KindTooLarge: "TooLarge", store.KindRetryLater: "Locked",
	}
	if n, ok := names[k]; ok {
		return n
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

func ptr[T any](v T) *T { return &v }
