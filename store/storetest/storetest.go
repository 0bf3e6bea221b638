// Package storetest holds what the tests of store, server and its services
// share: a settable clock and databases built from one migrated template.
//
// Migrating a fresh database costs more than copying one that is already
// migrated, so OpenDB and NewDataDir migrate once per test binary and copy
// the result (PocketBase's tests/app.go clones its test data the same way).
package storetest

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
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

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

var (
	templateOnce sync.Once
	template     []byte
	templateErr  error
)

// migrated returns the bytes of an empty database with every migration
// applied, built once per process.
func migrated() ([]byte, error) {
	templateOnce.Do(func() {
		dir, err := os.MkdirTemp("", "storetest-")
		if err != nil {
			templateErr = err
			return
		}
		defer os.RemoveAll(dir)
		path := filepath.Join(dir, "template.db")
		db, err := store.Open(context.Background(), path, store.Options{Readers: 1})
		if err != nil {
			templateErr = err
			return
		}
		// Close checkpoints the WAL: the file alone is the whole database.
		if templateErr = db.Close(); templateErr != nil {
			return
		}
		template, templateErr = os.ReadFile(path)
	})
	return template, templateErr
}

// WriteDB writes an empty, migrated database file at path, which must not
// exist, with the mode store.Open gives a new one.
func WriteDB(t testing.TB, path string) {
	t.Helper()
	b, err := migrated()
	if err != nil {
		t.Fatalf("storetest: build the template database: %v", err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatalf("storetest: %v", err)
	}
}

// OpenDB opens a fresh, migrated database file in a temporary directory with
// a clock at T0, and closes it when the test ends. With
// COPYDESK_TEST_DATABASE set, the database is a fresh PostgreSQL database
// of the test's own instead (NewPostgres).
func OpenDB(t testing.TB) (*store.DB, *Clock) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "copydesk.db")
	if Postgres() {
		path = NewPostgres(t)
	} else {
		WriteDB(t, path)
	}
	db, err := store.Open(context.Background(), path, store.Options{})
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

// MustUser creates an account named name (e-mail name@example.com) straight
// in the store, with a placeholder password hash.
func MustUser(t testing.TB, db *store.DB, name string, role store.Role) *store.User {
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

// MustSession starts a session for userID whose token lasts an hour and
// whose absolute end is 30 days away.
func MustSession(t testing.TB, db *store.DB, userID int64) *store.Session {
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

// Fixture is a data directory built once and held in memory, so that each
// test starts from a copy of its own without migrating and seeding again.
type Fixture struct {
	dirs  []string // relative, parents first
	files []fixtureFile
}

type fixtureFile struct {
	path string // relative
	mode os.FileMode
	data []byte
}

// Capture reads the regular files under dir (closed: a database's WAL
// checkpointed). Files whose base name is in skip are left out.
func Capture(t testing.TB, dir string, skip ...string) *Fixture {
	t.Helper()
	f := &Fixture{}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil || rel == "." {
			return err
		}
		if d.IsDir() {
			f.dirs = append(f.dirs, rel)
			return nil
		}
		if !d.Type().IsRegular() || slices.Contains(skip, d.Name()) {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f.files = append(f.files, fixtureFile{path: rel, mode: info.Mode().Perm(), data: b})
		return nil
	})
	if err != nil {
		t.Fatalf("storetest: capture %s: %v", dir, err)
	}
	return f
}

// Copy writes the fixture into a new temporary directory and returns it.
func (f *Fixture) Copy(t testing.TB) string {
	t.Helper()
	dst := t.TempDir()
	for _, d := range f.dirs {
		if err := os.Mkdir(filepath.Join(dst, d), 0o700); err != nil {
			t.Fatalf("storetest: %v", err)
		}
	}
	for _, file := range f.files {
		if err := os.WriteFile(filepath.Join(dst, file.path), file.data, file.mode); err != nil {
			t.Fatalf("storetest: %v", err)
		}
	}
	return dst
}

// WantKind fails the test unless err is an error of kind want.
func WantKind(t testing.TB, err error, want store.Kind) {
	t.Helper()
	if got := store.KindOf(err); err == nil || got != want {
		t.Fatalf("got error %v (kind %d), want kind %d", err, got, want)
	}
}
