package store

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// withoutSessions leaves out the tables a restore changes on purpose (its
// sessions are ended and its API tokens revoked).
func withoutSessions(sums []TableCopy) []TableCopy {
	var out []TableCopy
	for _, s := range sums {
		if s.Table != "sessions" && s.Table != "api_tokens" {
			out = append(out, s)
		}
	}
	return out
}

// TestRestoreSnapshotPostgres: a snapshot of a populated SQLite
// installation replaces a populated PostgreSQL database's content: the
// same rows in every table, its sessions ended, new ids past the restored
// ones; a corrupt snapshot is refused and leaves the database as it was.
func TestRestoreSnapshotPostgres(t *testing.T) {
	ctx := context.Background()
	pgURL := copyPostgresURL(t)
	dir := t.TempDir()
	src := openCopyDB(t, filepath.Join(dir, "a.db"))
	fillData(t, src, 200)
	if _, err := src.w.ExecContext(ctx, `UPDATE environments SET name = name || ' (restored)'`); err != nil {
		t.Fatal(err)
	}
	snap := filepath.Join(dir, "snapshot.db")
	if err := src.SnapshotTo(ctx, snap); err != nil {
		t.Fatal(err)
	}
	dst := openCopyDB(t, pgURL)
	fillData(t, dst, 40) // what the restore replaces

	// A cut-off snapshot is refused before anything is written.
	before := checksums(t, dst)
	b, err := os.ReadFile(snap)
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(dir, "cut.db")
	if err := os.WriteFile(cut, b[:len(b)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := RestoreSnapshot(ctx, cut, dst, nil); KindOf(err) != KindInvalid {
		t.Fatalf("restoring a cut-off snapshot: %v, want an invalid-file error", err)
	}
	requireSameContent(t, "after a refused restore", before, checksums(t, dst))

	rep, err := RestoreSnapshot(ctx, snap, dst, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Tables) < 10 {
		t.Fatalf("restored %d tables", len(rep.Tables))
	}
	requireSameContent(t, "snapshot -> postgres", withoutSessions(checksums(t, src)), withoutSessions(checksums(t, dst)))
	var live int
	if err := dst.r.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM sessions WHERE revoked_at IS NULL) + (SELECT COUNT(*) FROM api_tokens WHERE revoked_at IS NULL)`).Scan(&live); err != nil {
		t.Fatal(err)
	}
	if live != 0 {
		t.Fatalf("%d sessions or API tokens still live after a restore", live)
	}
	var maxID, newID int64
	if err := dst.r.QueryRowContext(ctx, `SELECT MAX(id) FROM environments`).Scan(&maxID); err != nil {
		t.Fatal(err)
	}
	if err := dst.w.QueryRowContext(ctx, `INSERT INTO environments (name, slug, created_at, updated_at) VALUES ('n', 'n-new', '', '') RETURNING id`).Scan(&newID); err != nil {
		t.Fatal(err)
	}
	if newID <= maxID {
		t.Fatalf("a new environment got id %d, not past the restored %d", newID, maxID)
	}

	// Into SQLite, a restore is the file's replacement, not this.
	if _, err := RestoreSnapshot(ctx, snap, src, nil); err == nil {
		t.Fatal("RestoreSnapshot into a SQLite store: no error")
	}
}
