package store_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/copydesk/copydesk/store"
)

func TestEmailKey(t *testing.T) {
	same := [][2]string{
		{"josé@example.com", "JOSÉ@EXAMPLE.COM"},
		{"josé@example.com", "jose\u0301@example.com"}, // combining acute accent
		{"JOSE\u0301@example.com", "josé@example.com"},
		{"\u212aelvin@example.com", "kelvin@example.com"}, // Kelvin sign
		{"STRASSE@example.de", "straße@example.de"},
		{"  Ann@Example.com ", "ann@example.com"},
	}
	for _, p := range same {
		if a, b := store.EmailKey(p[0]), store.EmailKey(p[1]); a != b {
			t.Errorf("EmailKey(%q) = %q, EmailKey(%q) = %q; want one key", p[0], a, p[1], b)
		}
	}
	if store.EmailKey("jose@example.com") == store.EmailKey("josé@example.com") {
		t.Error("jose@ and josé@ got one key: accents are not case")
	}
	if got := store.NormalizeEmail(" JOSE\u0301@Example.com "); got != "JOSÉ@Example.com" {
		t.Errorf("NormalizeEmail = %q, want the NFC spelling with its case kept", got)
	}
}

func TestEmailUniqueIgnoringUnicodeCase(t *testing.T) {
	ctx := context.Background()
	tests := []struct{ first, second string }{
		{"josé@example.com", "JOSÉ@example.com"},
		{"josé@example.com", "jose\u0301@example.com"},
		{"kim@example.com", "\u212aim@example.com"},
	}
	for _, tt := range tests {
		t.Run(tt.second, func(t *testing.T) {
			db, _ := openDB(t)
			u, err := db.CreateUser(ctx, store.NewUser{Email: tt.first, Username: "first", PasswordHash: "h", Role: store.RoleViewer})
			if err != nil {
				t.Fatal(err)
			}
			_, err = db.CreateUser(ctx, store.NewUser{Email: tt.second, Username: "second", PasswordHash: "h", Role: store.RoleViewer})
			wantKind(t, err, store.KindConflict)
			if want := "a user with this email already exists"; store.Message(err) != want {
				t.Errorf("message %q, want %q", store.Message(err), want)
			}
			other := mustUser(t, db, "other", store.RoleViewer)
			_, err = db.UpdateUser(ctx, other.ID, store.UserUpdate{Email: ptr(tt.second)})
			wantKind(t, err, store.KindConflict)
			found, err := db.UserByEmail(ctx, tt.second)
			if err != nil || found.ID != u.ID {
				t.Fatalf("UserByEmail(%q) = %v, %v; want user %d", tt.second, found, err, u.ID)
			}
		})
	}
	t.Run("StoredInNFCWithItsCase", func(t *testing.T) {
		db, _ := openDB(t)
		u, err := db.CreateUser(ctx, store.NewUser{Email: "JOSE\u0301@Example.com", Username: "jose", PasswordHash: "h", Role: store.RoleViewer})
		if err != nil {
			t.Fatal(err)
		}
		if u.Email != "JOSÉ@Example.com" {
			t.Errorf("stored %q, want JOSÉ@Example.com", u.Email)
		}
	})
	t.Run("FailuresCountedPerKey", func(t *testing.T) {
		db, clk := openDB(t)
		for _, e := range []string{"josé@example.com", "JOSÉ@example.com", "jose\u0301@EXAMPLE.com"} {
			err := db.UpdateLoginFailures(ctx, e, func(lf store.LoginFailures) (store.LoginFailures, error) {
				lf.Failures++
				lf.LastFailureAt = clk.Now()
				return lf, nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		if lf, _ := db.LoginFailuresFor(ctx, "José@example.com"); lf.Failures != 3 {
			t.Errorf("%d failures counted for one address in three spellings, want 3", lf.Failures)
		}
	})
}

// TestEmailMigration opens a database as a copydesk before migration 0006
// left it, with accounts whose addresses differ only in Unicode case (the
// old rule let them in), and checks that the migration neither fails nor
// locks anyone out.
func TestEmailMigration(t *testing.T) {
	ctx := context.Background()
	path := before0006(t)
	raw := rawDB(t, path)
	for _, q := range []string{
		`INSERT INTO users (id, email, username, password_hash, role, created_at, updated_at) VALUES
			(1, 'JOSÉ@example.com', 'jose1', 'h', 'super_admin', '2025-01-01T00:00:00.000Z', '2025-01-01T00:00:00.000Z'),
			(2, 'josé@example.com', 'jose2', 'h', 'viewer', '2025-01-01T00:00:00.000Z', '2025-01-01T00:00:00.000Z'),
			(3, 'jose' || char(769) || '@example.com', 'jose3', 'h', 'viewer', '2025-01-01T00:00:00.000Z', '2025-01-01T00:00:00.000Z'),
			(4, 'Ann@Example.com', 'ann', 'h', 'viewer', '2025-01-01T00:00:00.000Z', '2025-01-01T00:00:00.000Z'),
			(5, 'Bo' || char(769) || '@example.com', 'bo', 'h', 'viewer', '2025-01-01T00:00:00.000Z', '2025-01-01T00:00:00.000Z')`,
		`INSERT INTO login_failures (email, failures, last_failure_at, locked_until) VALUES
			('ann@example.com', 10, '2025-01-01T00:00:00.000Z', '2099-01-01T00:00:00.000Z'),
			('zoë@example.com', 2, '2025-01-01T00:00:00.000Z', NULL)`,
	} {
		if _, err := raw.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	raw.Close()

	db, err := store.Open(ctx, path, store.Options{})
	if err != nil {
		t.Fatalf("a database with clashing addresses does not open: %v", err)
	}
	defer db.Close()

	clashes, err := db.EmailClashes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []store.EmailClash{{UserID: 2, Email: "josé@example.com", SameAsID: 1}, {UserID: 3, Email: "jose\u0301@example.com", SameAsID: 1}}
	if len(clashes) != len(want) || clashes[0] != want[0] || clashes[1] != want[1] {
		t.Errorf("EmailClashes = %+v, want %+v", clashes, want)
	}
	for _, c := range []struct {
		email string
		id    int64
	}{
		{"JOSÉ@example.com", 1}, // the oldest holds the key
		{"JoSÉ@example.com", 1}, // and every other spelling
		{"josé@example.com", 2}, // a clashing account by its address as stored
		{"jose\u0301@example.com", 3},
		{"ann@example.com", 4},
		{"bó@example.com", 5},
	} {
		u, err := db.UserByEmail(ctx, c.email)
		if err != nil || u.ID != c.id {
			t.Errorf("UserByEmail(%q) = %v, %v; want user %d", c.email, u, err, c.id)
		}
	}
	if u, _ := db.UserByID(ctx, 5); u.Email != "Bó@example.com" {
		t.Errorf("user 5's address is %q, want it in NFC: Bó@example.com", u.Email)
	}
	if lf, _ := db.LoginFailuresFor(ctx, "ANN@example.com"); lf.Failures != 10 || lf.LockedUntil == nil {
		t.Errorf("the lock of ann@ did not survive the migration: %+v", lf)
	}
	if lf, _ := db.LoginFailuresFor(ctx, "ZOË@example.com"); lf.Failures != 2 {
		t.Errorf("the failures of zoë@ were not moved to its key: %+v", lf)
	}
	// A clashing account that changes its address gets a key.
	if _, err := db.UpdateUser(ctx, 2, store.UserUpdate{Email: ptr("jose.two@example.com")}); err != nil {
		t.Fatal(err)
	}
	if clashes, _ := db.EmailClashes(ctx); len(clashes) != 1 || clashes[0].UserID != 3 {
		t.Errorf("after user 2 changed address, clashes = %+v, want only user 3", clashes)
	}
}

// before0006 makes a database file as a copydesk before migration 0006
// left it, and returns its path.
func before0006(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := store.Open(context.Background(), path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	raw := rawDB(t, path)
	for _, q := range []string{
		`DROP INDEX users_email_key`,
		`ALTER TABLE users DROP COLUMN email_key`,
		`ALTER TABLE recovery_codes DROP COLUMN keyed`,
		`DELETE FROM schema_migrations WHERE version = 6`,
	} {
		if _, err := raw.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := raw.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}
