package store

import (
	"context"
	"database/sql"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestConnectionPragmas checks the per-connection settings Open asks for,
// which a fresh connection from outside cannot see.
func TestConnectionPragmas(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "pragma.db"), Options{Readers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	pragma := func(pool *sql.DB, name string) string {
		t.Helper()
		var v string
		if err := pool.QueryRowContext(ctx, "PRAGMA "+name).Scan(&v); err != nil {
			t.Fatalf("PRAGMA %s: %v", name, err)
		}
		return v
	}
	tests := []struct {
		name   string
		pool   *sql.DB
		pragma string
		want   string
	}{
		{"WriterWAL", db.w, "journal_mode", "wal"},
		{"WriterForeignKeys", db.w, "foreign_keys", "1"},
		{"WriterBusyTimeout", db.w, "busy_timeout", "10000"},
		{"WriterSynchronousNormal", db.w, "synchronous", "1"},
		{"WriterWritable", db.w, "query_only", "0"},
		{"ReaderWAL", db.r, "journal_mode", "wal"},
		{"ReaderForeignKeys", db.r, "foreign_keys", "1"},
		{"ReaderBusyTimeout", db.r, "busy_timeout", "10000"},
		{"ReaderQueryOnly", db.r, "query_only", "1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := pragma(tt.pool, tt.pragma); got != tt.want {
				t.Errorf("PRAGMA %s = %q, want %q", tt.pragma, got, tt.want)
			}
		})
	}

	t.Run("ReaderRefusesWrites", func(t *testing.T) {
		if _, err := db.r.ExecContext(ctx, `INSERT INTO settings (key, value, updated_at) VALUES ('k', '1', 'now')`); err == nil {
			t.Fatal("a write through the read pool succeeded")
		}
	})
}

func TestLikePattern(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", `%plain%`},
		{"100%", `%100\%%`},
		{"a_b", `%a\_b%`},
		{`back\slash`, `%back\\slash%`},
		{`\%_`, `%\\\%\_%`},
	}
	for _, tt := range tests {
		if got := likePattern(tt.in); got != tt.want {
			t.Errorf("likePattern(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestArticle(t *testing.T) {
	tests := []struct{ word, want string }{
		{"user", "a"}, {"usage event", "a"}, {"unique name", "a"}, {"unit", "a"},
		{"upload", "an"}, {"update", "an"}, {"undo", "an"},
		{"agent", "an"}, {"AI content setting", "an"}, {"environment", "an"}, {"assignment", "an"},
		{"credential", "a"}, {"job", "a"}, {"session", "a"}, {"", "a"},
	}
	for _, tt := range tests {
		if got := article(tt.word); got != tt.want {
			t.Errorf("article(%q) = %q, want %q", tt.word, got, tt.want)
		}
	}
}

// A migration that fails undoes the ones before it in the same upgrade: the
// database stays at the version it had.
func TestFailedUpgradeChangesNothing(t *testing.T) {
	ctx := context.Background()
	ms, err := allMigrations()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "up.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, createMigrationsTable); err != nil {
		t.Fatal(err)
	}
	bad := migration{version: ms[2].version, name: "0003_broken.sql", sql: "CREATE TABLE half (id INTEGER PRIMARY KEY); CREATE TABLE ("}
	err = applyMigrations(ctx, conn, []migration{ms[0], ms[1], bad}, "2025-01-01T00:00:00.000Z")
	if err == nil || !strings.Contains(err.Error(), "0003_broken.sql") {
		t.Fatalf("err = %v, want one naming the broken migration", err)
	}
	var n int
	if err := conn.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE name != 'schema_migrations'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("%d objects left behind (%v)", n, err)
	}
	if err := conn.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil || n != 0 {
		t.Errorf("%d migrations recorded (%v)", n, err)
	}
}

// A write that finds the single writer taken waits, and Pools counts the
// wait; the count survives the writer's replacement (a restore reopens
// the pools).
func TestPoolsCountWriteLockWaits(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "waits.db"), Options{Readers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, w := db.Pools(); w.Max != 1 || w.Waits != 0 {
		t.Fatalf("writer at the start: %+v", w)
	}
	inTx, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 2)
	go func() {
		done <- db.tx(ctx, func(*sql.Tx) error {
			close(inTx)
			<-release
			return nil
		})
	}()
	<-inTx
	go func() { done <- db.tx(ctx, func(*sql.Tx) error { return nil }) }()
	for {
		if _, w := db.Pools(); w.Waits == 1 {
			if w.InUse != 1 || w.Open != 1 {
				t.Errorf("writer while held: %+v", w)
			}
			break
		}
		runtime.Gosched()
	}
	close(release)
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	r, w := db.Pools()
	if w.Waits != 1 || w.WaitTime <= 0 || r.Max != 2 {
		t.Errorf("after the wait: readers %+v, writer %+v", r, w)
	}
	if err := db.close(); err != nil {
		t.Fatal(err)
	}
	if err := db.open(ctx); err != nil {
		t.Fatal(err)
	}
	if _, w2 := db.Pools(); w2.Waits != 1 || w2.WaitTime != w.WaitTime {
		t.Errorf("after reopening: %+v, want the waits of before (%+v)", w2, w)
	}
}

// A dropped connection is tried again after 0.1 s, doubling up to 5 s;
// an ended context stops the wait.
func TestReconnectPace(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var p reconnectPace
	var got []time.Duration
	for range 8 {
		got = append(got, p.next())
		if p.wait(ctx) {
			t.Fatal("wait went on after its context ended")
		}
	}
	ms := time.Millisecond
	want := []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, 1600 * ms, 3200 * ms, 5000 * ms, 5000 * ms}
	if !slices.Equal(got, want) {
		t.Fatalf("pauses %v, want %v", got, want)
	}
}
