package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/copydesk/copydesk/store"
)

// rawDB opens the file with the plain driver, apart from the store, to look
// at what Open left on disk.
func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	return raw
}

type migrationRow struct {
	version   int
	name      string
	appliedAt string
}

func migrationRows(t *testing.T, raw *sql.DB) []migrationRow {
	t.Helper()
	rows, err := raw.Query(`SELECT version, name, applied_at FROM schema_migrations ORDER BY version`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []migrationRow
	for rows.Next() {
		var m migrationRow
		if err := rows.Scan(&m.version, &m.name, &m.appliedAt); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestOpen(t *testing.T) {
	ctx := context.Background()

	t.Run("CreatesSchema", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "new.db")
		db, err := store.Open(ctx, path, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if db.Path() != path {
			t.Errorf("Path() = %q, want %q", db.Path(), path)
		}
		if err := db.Ping(ctx); err != nil {
			t.Fatalf("Ping: %v", err)
		}
		raw := rawDB(t, path)
		for _, table := range []string{"users", "user_avatars", "recovery_codes", "sessions", "login_failures",
			"licenses", "environments", "user_environments", "settings", "schema_migrations"} {
			var n int
			if err := raw.QueryRow(`SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?`, table).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n != 1 {
				t.Errorf("table %s is missing", table)
			}
		}
		ms := migrationRows(t, raw)
		if store.SchemaVersion() < 1 {
			t.Fatalf("SchemaVersion() = %d, want at least 1", store.SchemaVersion())
		}
		if len(ms) == 0 || ms[len(ms)-1].version != store.SchemaVersion() {
			t.Fatalf("schema_migrations = %+v, want it to end at version %d", ms, store.SchemaVersion())
		}
		if ms[0].name != "0001_init.sql" {
			t.Errorf("first migration recorded as %q, want 0001_init.sql", ms[0].name)
		}
	})

	t.Run("ReopenIsIdempotent", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "again.db")
		db, err := store.Open(ctx, path, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		mustUser(t, db, "keeper", store.RoleViewer)
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		raw := rawDB(t, path)
		first := migrationRows(t, raw)

		for i := range 2 {
			db, err := store.Open(ctx, path, store.Options{})
			if err != nil {
				t.Fatalf("reopen %d: %v", i+1, err)
			}
			if _, err := db.UserByEmail(ctx, "keeper@example.com"); err != nil {
				t.Errorf("reopen %d lost data: %v", i+1, err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
		}
		again := migrationRows(t, raw)
		if len(again) != len(first) {
			t.Fatalf("schema_migrations has %d rows after reopening, want %d", len(again), len(first))
		}
		for i := range first {
			if again[i] != first[i] {
				t.Errorf("migration row changed on reopen: %+v -> %+v", first[i], again[i])
			}
		}
	})

	t.Run("RefusesNewerSchema", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "future.db")
		db, err := store.Open(ctx, path, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		db.Close()
		raw := rawDB(t, path)
		if _, err := raw.Exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, 'future.sql', '2030-01-01T00:00:00.000Z')`,
			store.SchemaVersion()+1); err != nil {
			t.Fatal(err)
		}
		raw.Close()
		db, err = store.Open(ctx, path, store.Options{})
		if err == nil {
			db.Close()
			t.Fatal("Open accepted a database from a newer copydesk")
		}
		if !strings.Contains(err.Error(), "newer copydesk") {
			t.Errorf("error %q does not tell the user to use a newer copydesk", err)
		}
	})

	t.Run("FileIsPrivate", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "private.db")
		db, err := store.Open(ctx, path, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		mustUser(t, db, "someone", store.RoleViewer) // makes sure the -wal file exists
		for _, p := range []string{path, path + "-wal"} {
			info, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if perm := info.Mode().Perm(); perm != 0o600 {
				t.Errorf("%s has mode %#o, want 0600", filepath.Base(p), perm)
			}
		}
	})

	t.Run("WALMode", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "wal.db")
		db, err := store.Open(ctx, path, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		// journal_mode=WAL is a property of the file: a fresh connection sees it.
		var mode string
		if err := rawDB(t, path).QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil {
			t.Fatal(err)
		}
		if mode != "wal" {
			t.Errorf("journal_mode = %q, want wal", mode)
		}
	})

	t.Run("MissingDirectoryFails", func(t *testing.T) {
		db, err := store.Open(ctx, filepath.Join(t.TempDir(), "no", "such", "dir", "x.db"), store.Options{})
		if err == nil {
			db.Close()
			t.Fatal("Open succeeded in a directory that does not exist")
		}
	})
}

func TestSystemSettings(t *testing.T) {
	ctx := context.Background()

	t.Run("DefaultsToOpenRegistration", func(t *testing.T) {
		db, _ := openDB(t)
		s, err := db.SystemSettings(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !s.RegistrationOpen {
			t.Error("RegistrationOpen = false on a new database, want true")
		}
	})

	t.Run("RoundTrip", func(t *testing.T) {
		db, _ := openDB(t)
		for _, open := range []bool{false, true, false} {
			if err := db.SetSystemSettings(ctx, store.SystemSettings{RegistrationOpen: open}); err != nil {
				t.Fatal(err)
			}
			s, err := db.SystemSettings(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if s.RegistrationOpen != open {
				t.Errorf("RegistrationOpen = %v after storing %v", s.RegistrationOpen, open)
			}
		}
	})

	t.Run("UnknownKeyNotFound", func(t *testing.T) {
		db, _ := openDB(t)
		v := map[string]int{"untouched": 1}
		found, err := db.Setting(ctx, "nope", &v)
		if err != nil || found {
			t.Fatalf("Setting(nope) = %v, %v; want false, nil", found, err)
		}
		if v["untouched"] != 1 {
			t.Error("Setting changed the value of a key that was never set")
		}
	})
}

// TestConcurrentReadersAndWriter runs reads beside a stream of writes: WAL
// and the single writer must keep SQLITE_BUSY from ever reaching a caller.
func TestConcurrentReadersAndWriter(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "busy.db"), store.Options{Readers: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	first := mustUser(t, db, "first", store.RoleViewer)

	const writes, readers = 40, 4
	done := make(chan struct{})
	errs := make(chan error, readers+1)
	var ready, wg sync.WaitGroup // ready: every reader is running before the writer starts

	read := func() error {
		if _, _, err := db.ListEnvironments(ctx, store.EnvironmentFilter{Scope: store.Everything, Page: store.Page{Page: 1, PerPage: 50}}); err != nil {
			return err
		}
		_, err := db.UserByID(ctx, first.ID)
		return err
	}
	for range readers {
		ready.Add(1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := read()
			ready.Done()
			for err == nil {
				select {
				case <-done:
					return
				default:
				}
				err = read()
			}
			errs <- err
		}()
	}

	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(done)
		ready.Wait()
		for i := range writes {
			name := fmt.Sprintf("writer%03d", i)
			u, err := db.CreateUser(ctx, store.NewUser{Email: name + "@example.com", Username: name,
				PasswordHash: "x", Role: store.RoleViewer})
			if err != nil {
				errs <- err
				return
			}
			env, err := db.CreateEnvironment(ctx, store.NewEnvironment{Name: name, Slug: fmt.Sprintf("env-%03d", i)})
			if err != nil {
				errs <- err
				return
			}
			if _, err := db.SetUserEnvironments(ctx, u.ID, []int64{env.ID}); err != nil {
				errs <- err
				return
			}
			if _, err := db.UpdateUser(ctx, first.ID, store.UserUpdate{FullName: &name}); err != nil {
				errs <- err
				return
			}
		}
	}()

	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("concurrent access failed: %v", err)
	}
	envs, total, err := db.ListEnvironments(ctx, store.EnvironmentFilter{Scope: store.Everything, Page: store.Page{Page: 1, PerPage: 200}})
	if err != nil {
		t.Fatal(err)
	}
	if total != writes || len(envs) != writes {
		t.Errorf("%d environments (total %d) after the writer finished, want %d", len(envs), total, writes)
	}
}

// rawOf is rawDB on the database of db, whichever engine it runs on.
func rawOf(t *testing.T, db *store.DB) *sql.DB {
	t.Helper()
	raw, err := store.RawConn(db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	return raw
}
