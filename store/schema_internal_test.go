package store

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
)

func TestNormalizeSQL(t *testing.T) {
	tests := []struct {
		name string
		a, b string
		same bool
	}{
		{"Layout", "CREATE TABLE t (\n\ta INTEGER,\r\n    b TEXT\n)", "CREATE TABLE t ( a INTEGER, b TEXT )", true},
		{"LineComment", "CREATE TABLE t (a INTEGER, -- why\n b TEXT)", "CREATE TABLE t (a INTEGER, b TEXT)", true},
		{"BlockComment", "CREATE TABLE t (a /* why */ INTEGER)", "CREATE TABLE t (a INTEGER)", true},
		{"CommentAtEnd", "CREATE TABLE t (a INTEGER) -- why", "CREATE TABLE t (a INTEGER)", true},
		// What a line comment hides in one text must not count as code in
		// the other: here column b exists only in the first.
		{"CommentHidesCode", "CREATE TABLE t (a INTEGER -- note\n, b TEXT)", "CREATE TABLE t (a INTEGER -- note , b TEXT)", false},
		{"QuotedSpaces", "CHECK (x = 'a  b')", "CHECK (x = 'a b')", false},
		{"QuotedDashes", "DEFAULT '--'", "DEFAULT ''", false},
		{"EscapedQuote", "DEFAULT 'it''s  x'", "DEFAULT 'it''s x'", false},
		{"QuotedIdentifier", `CREATE TABLE "a  b" (x)`, `CREATE TABLE "a b" (x)`, false},
		{"BracketIdentifier", "CREATE TABLE [a  b] (x)", "CREATE TABLE [a b] (x)", false},
		{"Case", "create table t (a)", "CREATE TABLE t (a)", false},
		{"Words", "CREATE TABLE t (ab)", "CREATE TABLE t (a b)", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := normalizeSQL(tt.a), normalizeSQL(tt.b)
			if (a == b) != tt.same {
				t.Fatalf("same = %v, want %v:\n%q\n%q", a == b, tt.same, a, b)
			}
		})
	}
}

// An honest snapshot of every older schema version passes CheckFile and is
// brought up to date by Replace. Migration 0004 gave copydesk files their
// application id, and files without one are refused, so below version 4 the
// test sets it: it stands for the older versions future migrations make.
func TestOlderVersionsAreRestored(t *testing.T) {
	t.Parallel() // a database per version, each migrated and restored: the store's slowest test
	ctx := context.Background()
	ms, err := allMigrations()
	if err != nil {
		t.Fatal(err)
	}
	for n := 1; n < len(ms); n++ {
		t.Run(ms[n-1].name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "older.db")
			conn, err := sql.Open("sqlite", path)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := conn.ExecContext(ctx, createMigrationsTable); err != nil {
				t.Fatal(err)
			}
			if err := applyMigrations(ctx, conn, ms[:n], "2025-01-01T00:00:00.000Z"); err != nil {
				t.Fatal(err)
			}
			if _, err := conn.ExecContext(ctx, `PRAGMA application_id = 1129333843`); err != nil {
				t.Fatal(err)
			}
			if err := conn.Close(); err != nil {
				t.Fatal(err)
			}
			fi, err := CheckFile(ctx, path)
			if err != nil || fi.SchemaVersion != ms[n-1].version {
				t.Fatalf("CheckFile: %+v %v", fi, err)
			}
			live, err := Open(ctx, filepath.Join(t.TempDir(), "copydesk.db"), Options{Readers: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer live.Close()
			if err := live.Replace(ctx, path, filepath.Join(t.TempDir(), "safety.db")); err != nil {
				t.Fatalf("Replace: %v", err)
			}
			snap := filepath.Join(t.TempDir(), "after.db")
			if err := live.SnapshotTo(ctx, snap); err != nil {
				t.Fatal(err)
			}
			if fi, err := CheckFile(ctx, snap); err != nil || fi.SchemaVersion != SchemaVersion() {
				t.Fatalf("the restored database, migrated: %+v %v", fi, err)
			}
		})
	}
}
