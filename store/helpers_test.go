package store_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/copydesk/copydesk/store"
	"github.com/copydesk/copydesk/store/storetest"
)

// The clock, the migrated database and the user and session helpers are
// shared with the server's tests (store/storetest); these short names keep
// the tests here readable.

// t0 is where every test clock starts.
var t0 = storetest.T0

type clock = storetest.Clock

// openDB opens a fresh, migrated database with a clock fixed at t0.
func openDB(t testing.TB) (*store.DB, *clock) {
	t.Helper()
	return storetest.OpenDB(t)
}

var (
	mustUser    = storetest.MustUser
	mustSession = storetest.MustSession
)

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

// restoresOnSQLite skips a test of restores (Replace) on PostgreSQL, which
// does not restore snapshots yet (store.DB.Replace refuses it).
func restoresOnSQLite(t testing.TB) {
	t.Helper()
	if storetest.Postgres() {
		t.Skip("restores while serving are SQLite's: PostgreSQL restores offline (RestoreSnapshot, docs/scaling.md)")
	}
}
