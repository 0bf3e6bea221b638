package store_test

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/copydesk/copydesk/store"
	"github.com/copydesk/copydesk/store/storetest"
)

// The migrations make the same schema on PostgreSQL as on SQLite: the same
// tables with the same columns, the same named indexes and triggers. What
// differs is each engine's own: SQLite's FTS5 tables (and their triggers)
// and statistics; PostgreSQL's search columns with their GIN indexes.
// Neither lists the indexes of constraints.
func TestPostgresSchemaMatchesSQLite(t *testing.T) {
	storetest.RequirePostgres(t)
	ctx := context.Background()
	pg, _ := storetest.OpenDB(t)
	lite, err := store.Open(ctx, filepath.Join(t.TempDir(), "copydesk.db"), store.Options{Readers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer lite.Close()
	sqliteOwn := func(name string) bool {
		return strings.HasPrefix(name, "table sqlite_") || strings.HasPrefix(name, "column sqlite_") || strings.HasPrefix(name, "index sqlite_autoindex_") ||
			strings.Contains(name, "_search") // FTS5 tables, their shadow tables and their triggers
	}
	pgOwn := func(name string) bool {
		return strings.Contains(name, "_search") // search columns and their indexes
	}
	names := func(db *store.DB, own func(string) bool) []string {
		all, err := store.SchemaNames(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		all = slices.DeleteFunc(all, own)
		slices.Sort(all)
		return all
	}
	want, got := names(lite, sqliteOwn), names(pg, pgOwn)
	for _, w := range want {
		if _, found := slices.BinarySearch(got, w); !found {
			t.Errorf("PostgreSQL lacks %s", w)
		}
	}
	for _, g := range got {
		if _, found := slices.BinarySearch(want, g); !found {
			t.Errorf("PostgreSQL has %s, which SQLite does not", g)
		}
	}
	if len(want) < 300 {
		t.Errorf("SQLite's schema has %d objects and columns; the comparison read too little", len(want))
	}
}

// Each connection says what it is for in pg_stat_activity, unless the
// database address names the application itself.
func TestPostgresConnectionNames(t *testing.T) {
	storetest.RequirePostgres(t)
	ctx := context.Background()
	for _, tc := range []struct{ query, writer string }{{"", "copydesk writer"}, {"application_name=ops", "ops"}} {
		url := storetest.NewPostgres(t)
		if tc.query != "" {
			url += map[bool]string{true: "&", false: "?"}[strings.Contains(url, "?")] + tc.query
		}
		db, err := store.Open(ctx, url, store.Options{Readers: 1})
		if err != nil {
			t.Fatal(err)
		}
		release, err := db.HoldServing(ctx, slog.New(slog.DiscardHandler), func(error) {})
		if err != nil {
			t.Fatal(err)
		}
		raw := storetest.Raw(t, db)
		var names string
		if err := raw.QueryRowContext(ctx, `SELECT string_agg(application_name, ',' ORDER BY application_name) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&names); err != nil {
			t.Fatal(err)
		}
		want := "copydesk serving lock," + tc.writer
		if tc.query != "" {
			want = "ops,ops"
		}
		if names != want {
			t.Errorf("with %q the connections are named %q, want %q", tc.query, names, want)
		}
		if err := errors.Join(release(), db.Close()); err != nil {
			t.Fatal(err)
		}
	}
}

// The serving lock is taken again when its connection drops (a restarted
// database, a proxy that cut it): an instance that goes on serving keeps
// migrate and the offline restore out. If one of them got the database
// in between, the instance is told (and stops serving). Released, the
// lock lets them in.
func TestServingLockTakenAgainAfterADrop(t *testing.T) {
	storetest.RequirePostgres(t)
	ctx := context.Background()
	url := storetest.NewPostgres(t)
	db, err := store.Open(ctx, url, store.Options{Readers: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	raw := storetest.Raw(t, db)
	holder := func() (pid int) {
		t.Helper()
		err := raw.QueryRowContext(ctx, `SELECT coalesce(max(a.pid), 0) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
			WHERE l.locktype = 'advisory' AND l.mode = 'ShareLock' AND l.granted AND a.application_name = 'copydesk serving lock'
				AND a.datname = current_database()`).Scan(&pid)
		if err != nil {
			t.Fatal(err)
		}
		return pid
	}
	offlineRefused := func(when string) {
		t.Helper()
		release, err := store.LockOffline(ctx, url)
		if err == nil {
			_ = release()
			t.Fatalf("%s: the offline lock was granted while an instance serves", when)
		}
		if store.KindOf(err) != store.KindConflict {
			t.Fatalf("%s: %v", when, err)
		}
	}
	// Released, the lock lets the offline operations in.
	release, err := db.HoldServing(ctx, slog.New(slog.DiscardHandler), func(error) {})
	if err != nil {
		t.Fatal(err)
	}
	offlineRefused("held")
	if err := release(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		rel, err := store.LockOffline(ctx, url)
		if err == nil {
			if err := rel(); err != nil {
				t.Fatal(err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("released, the serving lock still keeps the offline lock out: %v", err)
		}
	}

	lost := make(chan error, 1)
	release, err = db.HoldServing(ctx, slog.New(slog.DiscardHandler), func(err error) { lost <- err })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = release() })
	first := holder()
	if first == 0 {
		t.Fatal("no connection holds the serving lock")
	}
	offlineRefused("held")
	if _, err := raw.ExecContext(ctx, `SELECT pg_terminate_backend(?)`, first); err != nil {
		t.Fatal(err)
	}
	var again int
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if again = holder(); again != 0 && again != first {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the serving lock was not taken again after its connection dropped")
		}
	}
	offlineRefused("taken again")

	// An offline operation waiting for the lock gets it when the holder's
	// connection drops, before the instance can take it again: the
	// instance is told it lost the database.
	got := storetest.QueueOfflineLock(t, raw)
	if _, err := raw.ExecContext(ctx, `SELECT pg_terminate_backend(?)`, again); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-lost:
		if !strings.Contains(err.Error(), "offline operation") {
			t.Fatalf("lost: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the instance was not told an offline operation took the database")
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
}
