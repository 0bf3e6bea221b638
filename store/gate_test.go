package store_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/copydesk/copydesk/store"
	"github.com/copydesk/copydesk/store/storetest"
)

// snapshotOf writes a checked snapshot of db to a new file.
func snapshotOf(t *testing.T, db *store.DB) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "snap.db")
	if err := db.SnapshotTo(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	return p
}

// A restore whose caller goes away still finishes, and the database works
// afterwards.
func TestReplaceIgnoresCancellation(t *testing.T) {
	restoresOnSQLite(t)
	db, _ := openDB(t)
	mustUser(t, db, "kept", store.RoleViewer)
	snap := snapshotOf(t, db)
	mustUser(t, db, "gone", store.RoleViewer)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := db.Replace(ctx, snap, filepath.Join(t.TempDir(), "safety.db")); err != nil {
		t.Fatal(err)
	}
	if _, err := db.UserByEmail(context.Background(), "kept@example.com"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.UserByEmail(context.Background(), "gone@example.com"); !store.IsNotFound(err) {
		t.Fatalf("data after the snapshot survived: %v", err)
	}
}

// A restore ends every session the restored data holds, so that access
// revoked since the snapshot was taken does not come back, and it moves the
// ChangeMark, so that caches of sessions and users (the principal cache) see
// it on the next request.
func TestReplaceEndsEverySession(t *testing.T) {
	restoresOnSQLite(t)
	ctx := context.Background()
	db, clk := openDB(t)
	u := mustUser(t, db, "vic", store.RoleViewer)
	before := mustSession(t, db, u.ID)
	snap := snapshotOf(t, db)
	if err := db.RevokeUserSessions(ctx, u.ID, 0); err != nil { // disabled after the snapshot
		t.Fatal(err)
	}
	after := mustSession(t, db, u.ID)
	clk.Advance(time.Minute)
	mark := db.ChangeMark()
	if err := db.Replace(ctx, snap, filepath.Join(t.TempDir(), "safety.db")); err != nil {
		t.Fatal(err)
	}
	if db.ChangeMark() == mark {
		t.Fatal("the restore did not move the ChangeMark")
	}
	s, _, err := db.SessionWithUser(ctx, before.ID)
	if err != nil {
		t.Fatal(err)
	}
	if s.Active(clk.Now()) {
		t.Fatal("a session of the snapshot is active after the restore")
	}
	if _, _, err := db.SessionWithUser(ctx, after.ID); !store.IsNotFound(err) {
		t.Fatalf("a session newer than the snapshot: %v", err)
	}
	// Sessions begun after the restore work as always.
	if s := mustSession(t, db, u.ID); !s.Active(clk.Now()) {
		t.Fatal("a new session is not active")
	}
}

// Replace waits a bounded time for holders; when they do not let go it
// changes nothing and says the database is busy.
func TestReplaceWaitIsBounded(t *testing.T) {
	restoresOnSQLite(t)
	db, _ := openDB(t)
	snap := snapshotOf(t, db)
	mustUser(t, db, "after", store.RoleViewer)
	old := store.ReplaceWait
	store.ReplaceWait = 50 * time.Millisecond
	defer func() { store.ReplaceWait = old }()
	_, release := db.Hold(context.Background())
	err := db.Replace(context.Background(), snap, filepath.Join(t.TempDir(), "safety.db"))
	release()
	if store.KindOf(err) != store.KindRetryLater || !strings.Contains(store.Message(err), "busy") {
		t.Fatalf("got %v", err)
	}
	// Nothing changed, and holders are not blocked any more.
	ctx, release := db.Hold(context.Background())
	defer release()
	if _, err := db.UserByEmail(ctx, "after@example.com"); err != nil {
		t.Fatalf("the database changed or is blocked: %v", err)
	}
}

// Hold is re-entrant through its context, so code that holds may call code
// that holds; a restore waiting meanwhile does not deadlock it.
func TestHoldIsReentrant(t *testing.T) {
	restoresOnSQLite(t)
	db, _ := openDB(t)
	snap := snapshotOf(t, db)
	ctx, release := db.Hold(context.Background())
	done := make(chan error, 1)
	go func() { done <- db.Replace(context.Background(), snap, filepath.Join(t.TempDir(), "safety.db")) }()
	time.Sleep(20 * time.Millisecond) // let Replace start waiting
	inner, innerRelease := db.Hold(ctx)
	if _, _, err := db.ListUsers(inner, store.UserFilter{Page: store.Page{Page: 1, PerPage: 1}}); err != nil {
		t.Fatal(err)
	}
	innerRelease()
	release()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Replace never ran")
	}
}

// A context whose hold was released holds nothing: a request that lets go
// before it streams does not keep a restore waiting, and a later Hold
// through that context really holds again.
func TestReleasedHoldIsNotReentered(t *testing.T) {
	restoresOnSQLite(t)
	db, _ := openDB(t)
	snap := snapshotOf(t, db)
	ctx, release := db.Hold(context.Background())
	release()
	release() // twice is harmless
	if err := db.Replace(ctx, snap, filepath.Join(t.TempDir(), "safety.db")); err != nil {
		t.Fatalf("a released hold kept the restore waiting: %v", err)
	}
	again, releaseAgain := db.Hold(ctx)
	done := make(chan error, 1)
	go func() { done <- db.Replace(context.Background(), snap, filepath.Join(t.TempDir(), "safety2.db")) }()
	select {
	case err := <-done:
		t.Fatalf("Replace ran while the context held again: %v", err)
	case <-time.After(30 * time.Millisecond):
	}
	if _, _, err := db.ListUsers(again, store.UserFilter{Page: store.Page{Page: 1, PerPage: 1}}); err != nil {
		t.Fatal(err)
	}
	releaseAgain()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// A SQLite file dressed up as copydesk (schema_migrations and users tables)
// is still refused: it lacks copydesk's application id.
func TestCheckFileRefusesForeignLookalike(t *testing.T) {
	restoresOnSQLite(t)
	path := filepath.Join(t.TempDir(), "lookalike.db")
	conn, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, dirty INTEGER)`,
		`INSERT INTO schema_migrations VALUES (2, 0)`,
		`CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)`,
	} {
		if _, err := conn.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	conn.Close()
	_, err = store.CheckFile(context.Background(), path)
	if store.KindOf(err) != store.KindInvalid || !strings.Contains(store.Message(err), "not a copydesk") {
		t.Fatalf("got %v", err)
	}
	db, _ := openDB(t)
	if err := db.Replace(context.Background(), path, filepath.Join(t.TempDir(), "safety.db")); store.KindOf(err) != store.KindInvalid {
		t.Fatalf("Replace with a foreign file: %v", err)
	}
	if _, _, err := db.ListUsers(context.Background(), store.UserFilter{Page: store.Page{Page: 1, PerPage: 1}}); err != nil {
		t.Fatalf("the previous database did not stay: %v", err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
}

func TestCheckHeader(t *testing.T) {
	path := filepath.Join(t.TempDir(), "copydesk.db")
	storetest.WriteDB(t, path)
	good := readHead(t, path)
	foreign := append([]byte{}, good...)
	copy(foreign[68:72], []byte{0, 0, 0, 0})
	tests := []struct {
		name string
		head []byte
		want string
	}{
		{"Copydesk", good, ""},
		{"Empty", nil, "not a SQLite database"},
		{"Short", good[:99], "not a SQLite database"},
		{"Text", []byte(strings.Repeat("not a database ", 10)), "not a SQLite database"},
		{"OtherApplication", foreign, "not a copydesk one (application id 0)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := store.CheckHeader(tt.head)
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if store.KindOf(err) != store.KindInvalid || !strings.Contains(store.Message(err), tt.want) {
				t.Fatalf("got %v, want %q", err, tt.want)
			}
		})
	}
}

func readHead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b[:store.HeaderSize]
}

// waitDone waits for ctx to end and returns its cause.
func waitDone(t *testing.T, ctx context.Context) error {
	t.Helper()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-time.After(10 * time.Second):
		t.Fatal("the yielding holder was not told to stop")
		return nil
	}
}

// A yielding holder is told to stop (store.ErrReplacing) as soon as a
// restore waits; the restore goes ahead once it lets go, and later holders
// are not stopped.
func TestHoldYielding(t *testing.T) {
	restoresOnSQLite(t)
	db, _ := openDB(t)
	snap := snapshotOf(t, db)
	ctx, release := db.HoldYielding(context.Background())
	inner, innerRelease := db.Hold(ctx)
	if inner != ctx {
		t.Fatal("Hold inside a yielding hold took the gate again")
	}
	innerRelease()
	done := make(chan error, 1)
	go func() { done <- db.Replace(context.Background(), snap, filepath.Join(t.TempDir(), "safety.db")) }()
	if cause := waitDone(t, ctx); !errors.Is(cause, store.ErrReplacing) {
		t.Fatalf("the holder stopped with %v, want ErrReplacing", cause)
	}
	select {
	case err := <-done:
		t.Fatalf("Replace went ahead while the yielding holder held: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	ctx, release = db.HoldYielding(context.Background())
	defer release()
	if ctx.Err() != nil {
		t.Fatal("a hold taken after the restore is stopped")
	}
	if _, _, err := db.ListUsers(ctx, store.UserFilter{Page: store.Page{Page: 1, PerPage: 1}}); err != nil {
		t.Fatal(err)
	}
}

// Close stops yielding holders too, and their context ends on release.
func TestHoldYieldingStopsForClose(t *testing.T) {
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "copydesk.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, release := db.HoldYielding(context.Background())
	closed := make(chan error, 1)
	go func() { closed <- db.Close() }()
	if cause := waitDone(t, ctx); !errors.Is(cause, store.ErrReplacing) {
		t.Fatalf("the holder stopped with %v, want ErrReplacing", cause)
	}
	release()
	if err := <-closed; err != nil {
		t.Fatal(err)
	}

	db2, _ := openDB(t)
	ctx, release = db2.HoldYielding(context.Background())
	release()
	if context.Cause(ctx) != context.Canceled {
		t.Fatalf("after release the context is %v", context.Cause(ctx))
	}
}
