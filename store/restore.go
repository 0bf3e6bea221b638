package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// RestoreSnapshot replaces the whole content of db, a PostgreSQL database
// no instance serves (the caller holds LockOffline), with the content of
// the snapshot file at path (a SQLite file as `copydesk backup` writes
// on either engine): it checks the file (CheckFile), brings a copy of it
// to this copydesk's schema, ends the sessions and revokes the API tokens
// in that copy (as a restore on SQLite does: everyone signs in again),
// then empties every table of db and copies the snapshot's rows in one
// transaction, and verifies every table's row count and checksum. A
// failure before the commit leaves db as it was. before, when not nil,
// runs once the file is known good and before db changes (the command
// keeps a snapshot of db's content there); its error stops the restore.
func RestoreSnapshot(ctx context.Context, path string, db *DB, before func(context.Context) error) (*CopyReport, error) {
	if !db.OnPostgres() {
		return nil, fmt.Errorf("store: restore a snapshot: %s is not a PostgreSQL database (a SQLite installation restores by replacing its file)", db.path)
	}
	if _, err := CheckFile(ctx, path); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "copydesk-restore-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	work := filepath.Join(dir, "snapshot.db")
	if err := copyFile(path, work); err != nil {
		return nil, fmt.Errorf("store: restore a snapshot: copy %s: %w", filepath.Base(path), err)
	}
	src, err := Open(ctx, work, Options{})
	if err != nil {
		return nil, fmt.Errorf("store: restore a snapshot: open its copy: %w", err)
	}
	defer func() { _ = src.Close() }() // a scratch copy, removed with its folder
	if err := src.endSessions(ctx); err != nil {
		return nil, err
	}
	if before != nil {
		if err := before(ctx); err != nil {
			return nil, err
		}
	}
	return src.copyInto(ctx, db, true)
}
