package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func openCopyDB(t *testing.T, path string) *DB {
	t.Helper()
	db, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// copyPostgresURL makes a schema of the test's own on COPYDESK_TEST_DATABASE
// and returns its address, or skips the test without it.
func copyPostgresURL(t *testing.T) string {
	t.Helper()
	base := os.Getenv("COPYDESK_TEST_DATABASE")
	if base == "" {
		t.Skip("runs on PostgreSQL only: set COPYDESK_TEST_DATABASE=postgres://... to run it")
	}
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "copy_" + hex.EncodeToString(b)
	if _, err := admin.Exec(`CREATE SCHEMA ` + schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		admin.Exec(`DROP SCHEMA ` + schema + ` CASCADE`)
		admin.Close()
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

func checksums(t *testing.T, db *DB) []TableCopy {
	t.Helper()
	sums, err := db.Checksums(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return sums
}

// requireSameContent compares two installations table by table.
func requireSameContent(t *testing.T, what string, a, b []TableCopy) {
	t.Helper()
	if !slices.Equal(a, b) {
		for i := range min(len(a), len(b)) {
			if a[i] != b[i] {
				t.Errorf("%s: %+v != %+v", what, a[i], b[i])
			}
		}
		t.Fatalf("%s: the content differs (%d and %d tables)", what, len(a), len(b))
	}
}

// TestCopyToSQLite copies a populated installation into a new SQLite file:
// the same rows in every table, and a second copy into it is refused.
func TestCopyToSQLite(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	src := openCopyDB(t, filepath.Join(dir, "a.db"))
	fillData(t, src, 200) // every table a list reads holds rows; the copy needs no planner statistics
	dst := openCopyDB(t, filepath.Join(dir, "b.db"))
	rep, err := src.CopyTo(ctx, dst)
	if err != nil {
		t.Fatal(err)
	}
	var rows int64
	filled := 0
	for _, tc := range rep.Tables {
		rows += tc.Rows
		if tc.Rows > 0 {
			filled++
		}
	}
	if filled < 10 || rows < 10000 {
		t.Fatalf("copied %d rows in %d tables: the fixture should fill many", rows, filled)
	}
	requireSameContent(t, "sqlite -> sqlite", checksums(t, src), checksums(t, dst))
	_, err = src.CopyTo(ctx, dst)
	if KindOf(err) != KindConflict || !strings.Contains(Message(err), "has") {
		t.Fatalf("a copy into a non-empty target: %v, want a conflict naming a table", err)
	}
	// A new id goes past the copied ones.
	if _, err := dst.w.ExecContext(ctx, `INSERT INTO environments (name, slug, created_at, updated_at) VALUES ('n', 'n-new', '', '')`); err != nil {
		t.Fatal(err)
	}
}

// TestCopyRoundTripPostgres: SQLite -> PostgreSQL -> SQLite gives the same
// content, and PostgreSQL's sequences continue past the copied ids.
func TestCopyRoundTripPostgres(t *testing.T) {
	ctx := context.Background()
	pgURL := copyPostgresURL(t)
	dir := t.TempDir()
	src := openCopyDB(t, filepath.Join(dir, "a.db"))
	fillData(t, src, 200) // every table a list reads holds rows; the copy needs no planner statistics
	pg := openCopyDB(t, pgURL)
	if _, err := src.CopyTo(ctx, pg); err != nil {
		t.Fatal(err)
	}
	back := openCopyDB(t, filepath.Join(dir, "c.db"))
	if _, err := pg.CopyTo(ctx, back); err != nil {
		t.Fatal(err)
	}
	want := checksums(t, src)
	requireSameContent(t, "sqlite -> postgres", want, checksums(t, pg))
	requireSameContent(t, "postgres -> sqlite", want, checksums(t, back))
	if _, err := src.CopyTo(ctx, pg); KindOf(err) != KindConflict {
		t.Fatalf("a copy into a non-empty PostgreSQL database: %v, want a conflict", err)
	}
	// A snapshot taken on PostgreSQL is a copydesk SQLite file with the
	// same content: it restores into SQLite.
	snap := filepath.Join(dir, "snap.db")
	if err := pg.SnapshotTo(ctx, snap); err != nil {
		t.Fatal(err)
	}
	if _, err := CheckFile(ctx, snap); err != nil {
		t.Fatalf("the snapshot taken on PostgreSQL: %v", err)
	}
	requireSameContent(t, "postgres snapshot", want, checksums(t, openCopyDB(t, snap)))
	if _, err := pg.w.ExecContext(ctx, `INSERT INTO environments (name, slug, created_at, updated_at) VALUES ('n', 'n-new', '', '')`); err != nil {
		t.Fatalf("a new row after the copy (sequence not reset?): %v", err)
	}
}
