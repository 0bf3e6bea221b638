package storetest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver

	"github.com/copydesk/copydesk/store"
)

// EnvDatabase names the PostgreSQL server the tests run on
// (postgres://USER@HOST:PORT/DB, a user that may create databases); unset,
// they run on SQLite.
const EnvDatabase = "COPYDESK_TEST_DATABASE"

// Postgres reports whether the tests run on PostgreSQL.
func Postgres() bool { return os.Getenv(EnvDatabase) != "" }

// RequirePostgres skips a test that only means something on PostgreSQL
// when the tests run on SQLite.
func RequirePostgres(t testing.TB) string {
	t.Helper()
	if !Postgres() {
		t.Skipf("runs on PostgreSQL only: set %s=postgres://... to run it", EnvDatabase)
	}
	return os.Getenv(EnvDatabase)
}

var (
	pgTemplateOnce sync.Once
	pgTemplate     string
	pgTemplateErr  error
)

// pgAdmin connects to the server's maintenance database (the one
// COPYDESK_TEST_DATABASE names).
func pgAdmin() (*sql.DB, error) {
	return sql.Open("pgx", os.Getenv(EnvDatabase))
}

// withDatabase is base with its database name replaced by name.
func withDatabase(base, name string) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	u.Path = "/" + name
	return u.String(), nil
}

// pgTemplateName is the migrated template database of this binary's
// migrations: kept between runs, and made again when the PostgreSQL text
// of a migration changes (COPYDESK_TEST_FRESH_TEMPLATE=1 makes one anyway).
func pgTemplateName() (string, error) {
	texts, err := store.PostgresMigrations()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, text := range texts {
		fmt.Fprintf(h, "%s\x00", text)
	}
	return "copydesk_tpl_" + hex.EncodeToString(h.Sum(nil))[:16], nil
}

// pgTemplateDB makes (once per process, and only when missing on the server)
// a migrated database to copy each test's database from: migrating takes
// seconds, copying a fraction of one.
func pgTemplateDB() (string, error) {
	pgTemplateOnce.Do(func() {
		pgTemplate, pgTemplateErr = makeTemplate()
	})
	return pgTemplate, pgTemplateErr
}

func makeTemplate() (string, error) {
	ctx := context.Background()
	name, err := pgTemplateName()
	if err != nil {
		return "", err
	}
	if os.Getenv("COPYDESK_TEST_FRESH_TEMPLATE") != "" {
		name += "_" + randomName()
	}
	admin, err := pgAdmin()
	if err != nil {
		return "", err
	}
	defer admin.Close()
	var exists bool
	if err := admin.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		return "", fmt.Errorf("storetest: %s: %w", EnvDatabase, err)
	}
	if exists {
		return name, nil
	}
	// Built under a name of its own and renamed when complete, so that a
	// test binary running beside this one never copies a half-migrated one.
	building := name + "_b" + randomName()
	if _, err := admin.ExecContext(ctx, `CREATE DATABASE `+building+` TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C' LC_CTYPE 'C'`); err != nil {
		return "", err
	}
	u, err := withDatabase(os.Getenv(EnvDatabase), building)
	if err != nil {
		return "", err
	}
	db, err := store.Open(ctx, u, store.Options{Readers: 1})
	if err != nil {
		return "", err
	}
	if err := db.Close(); err != nil {
		return "", err
	}
	if _, err := admin.ExecContext(ctx, `ALTER DATABASE `+building+` RENAME TO `+name); err != nil {
		// Another binary made it meanwhile: use theirs.
		_ = dropDatabase(admin, building)
		if err := admin.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil || !exists {
			return "", err
		}
	}
	return name, nil
}

func randomName() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// NewPostgres makes a PostgreSQL database of the test's own, migrated and
// empty, and returns its address; it is dropped when the test ends. Tests
// stay parallel: each has its own database.
func NewPostgres(t testing.TB) string {
	t.Helper()
	RequirePostgres(t)
	tpl, err := pgTemplateDB()
	if err != nil {
		t.Fatalf("storetest: build the template database on %s: %v", EnvDatabase, err)
	}
	return cloneDatabase(t, tpl)
}

// ClonePostgres makes a database of the test's own that is a copy of the
// database at src (a test's fixture, closed: PostgreSQL copies a database
// no session is connected to), and returns its address; it is dropped
// when the test ends.
func ClonePostgres(t testing.TB, src string) string {
	t.Helper()
	RequirePostgres(t)
	u, err := url.Parse(src)
	if err != nil {
		t.Fatalf("storetest: %v", err)
	}
	return cloneDatabase(t, strings.TrimPrefix(u.Path, "/"))
}

// cloneDatabase copies the database named tpl into a new one of the
// test's own and returns its address.
func cloneDatabase(t testing.TB, tpl string) string {
	t.Helper()
	base := RequirePostgres(t)
	admin, err := pgAdmin()
	if err != nil {
		t.Fatalf("storetest: %v", err)
	}
	name := "copydesk_t_" + randomName()
	if err := createFrom(admin, name, tpl); err != nil {
		admin.Close()
		t.Fatalf("storetest: create a database: %v", err)
	}
	t.Cleanup(func() {
		defer admin.Close()
		if err := dropDatabase(admin, name); err != nil {
			t.Errorf("storetest: %v", err)
		}
	})
	u, err := withDatabase(base, name)
	if err != nil {
		t.Fatalf("storetest: %v", err)
	}
	return u
}

// dropDatabase drops the database name, ending its sessions.
func dropDatabase(admin *sql.DB, name string) error {
	if _, err := admin.Exec(`DROP DATABASE IF EXISTS ` + name + ` WITH (FORCE)`); err != nil {
		return fmt.Errorf("drop %s: %w", name, err)
	}
	return nil
}

// createFrom makes the database name a copy of tpl.
func createFrom(admin *sql.DB, name, tpl string) error {
	var err error
	// A fixture cloned by many parallel tests is busy more often than the
	// template: up to 10 s of tries.
	for range 200 {
		// A template another session is still copying from refuses a
		// second copy for a moment. FILE_COPY (PostgreSQL 15 and later)
		// copies the template's files: half the time of the default,
		// which writes every block to the WAL.
		if _, err = admin.Exec(`CREATE DATABASE ` + name + ` TEMPLATE ` + tpl + ` STRATEGY FILE_COPY`); err == nil ||
			!strings.Contains(err.Error(), "is being accessed by other users") {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
	return err
}

// Raw opens another pool on db's database (store.DB.OpenRaw), closed when
// the test ends: for a test that writes rows as a crash would leave them.
func Raw(t testing.TB, db *store.DB) *sql.DB {
	t.Helper()
	raw, err := db.OpenRaw()
	if err != nil {
		t.Fatalf("storetest: %v", err)
	}
	t.Cleanup(func() { raw.Close() })
	return raw
}

// QueueOfflineLock asks for the serving lock exclusively, as `copydesk
// restore --database` and `copydesk migrate` do, on a connection of db of
// its own, but waiting for it (they give up at once): it returns once
// PostgreSQL has the request queued behind the instances that hold the
// lock. granted receives when the lock is got (nil) or the request fails.
// The lock is let go when the test ends.
func QueueOfflineLock(t testing.TB, db *sql.DB) (granted <-chan error) {
	t.Helper()
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lctx, cancel := context.WithCancel(ctx)
	got, done := make(chan error, 1), make(chan struct{})
	go func() {
		defer close(done)
		_, err := conn.ExecContext(lctx, `SELECT pg_advisory_lock(hashtext('copydesk serving ' || current_schema()))`)
		got <- err
	}()
	t.Cleanup(func() {
		cancel() // a request still waiting gives up
		<-done
		_, _ = conn.ExecContext(ctx, `SELECT pg_advisory_unlock_all()`)
		_ = conn.Close()
	})
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var waiting bool
		if err := db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
			AND database = (SELECT oid FROM pg_database WHERE datname = current_database()))`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatal("the offline lock is not waiting behind the instances'")
		}
	}
}
