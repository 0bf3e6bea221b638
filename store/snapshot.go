package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
)

// SnapshotTo writes a consistent copy of the live database to dst, which
// must not exist, with VACUUM INTO. It runs on a connection of its own inside
// one read transaction, so readers and writers keep going meanwhile; the copy
// holds exactly what was committed when it began. The caller holds the
// database (Hold).
func (db *DB) SnapshotTo(ctx context.Context, dst string) error {
	if db.OnPostgres() {
		return db.snapshotPostgres(ctx, dst)
	}
	return snapshot(ctx, db.path, dst)
}

// snapshotPostgres writes the same portable snapshot from PostgreSQL: a
// fresh SQLite file at the same schema version, filled by CopyTo (one
// REPEATABLE READ of the database, verified table by table), so that a
// backup taken on PostgreSQL restores into SQLite.
func (db *DB) snapshotPostgres(ctx context.Context, dst string) (err error) {
	if _, err := os.Stat(dst); err == nil {
		return fmt.Errorf("store: snapshot: %s exists", dst)
	}
	defer func() {
		if err != nil {
			os.Remove(dst)
			os.Remove(dst + "-wal")
			os.Remove(dst + "-shm")
		}
	}()
	out, err := Open(ctx, dst, Options{Readers: 1})
	if err != nil {
		return fmt.Errorf("store: snapshot: %w", err)
	}
	_, err = db.CopyTo(ctx, out)
	if cerr := out.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("store: snapshot: %w", err)
	}
	return syncFile(dst)
}

func snapshot(ctx context.Context, src, dst string) error {
	if _, err := os.Stat(dst); err == nil {
		return fmt.Errorf("store: snapshot: %s exists", dst)
	}
	conn, err := sql.Open("sqlite", dsn(src, ""))
	if err != nil {
		return fmt.Errorf("store: snapshot: %w", err)
	}
	defer conn.Close()
	conn.SetMaxOpenConns(1)
	if _, err := conn.ExecContext(ctx, `VACUUM INTO ?`, dst); err != nil {
		os.Remove(dst)
		return fmt.Errorf("store: snapshot: %w", err)
	}
	return syncFile(dst)
}

// FileInfo is what CheckFile learns of a database file.
type FileInfo struct {
	SchemaVersion int
	Users         int
}

var sqliteHeader = []byte("SQLite format 3\x00")

// ApplicationID marks copydesk database files ("CPDS"; migration 0004).
const ApplicationID = 1129333843

// HeaderSize is the size of a SQLite file's header: what CheckHeader reads.
const HeaderSize = 100

// CheckHeader proves that head, the first HeaderSize bytes of a file, starts
// a copydesk database: the SQLite magic string and copydesk's application
// id. It lets an upload be refused before the rest of it is read. Failures
// are KindInvalid errors.
func CheckHeader(head []byte) error {
	if len(head) < HeaderSize || !bytes.Equal(head[:len(sqliteHeader)], sqliteHeader) {
		return Invalid("the file is not a SQLite database")
	}
	if appID := int32(binary.BigEndian.Uint32(head[68:72])); appID != ApplicationID {
		return Invalid("the file is a SQLite database but not a copydesk one (application id %d)", appID)
	}
	return nil
}

// sane proves an opened (and migrated) database is a working copydesk
// database: its mark, and exactly the schema of the newest version.
func (db *DB) sane(ctx context.Context) error {
	var appID int64
	if err := db.r.QueryRowContext(ctx, `PRAGMA application_id`).Scan(&appID); err != nil {
		return err
	}
	if appID != ApplicationID {
		return fmt.Errorf("not a copydesk database (application id %d)", appID)
	}
	ms, err := migrationFiles()
	if err != nil {
		return err
	}
	versions := make([]int, len(ms))
	for i, m := range ms {
		versions[i] = m.version
	}
	return checkSchema(ctx, db.r, versions)
}

// errNotOnPostgres says why a restore is not done online on PostgreSQL,
// and how to do it instead.
func errNotOnPostgres(what string) error {
	return Conflict("%s of a PostgreSQL database are not done while it is served: a restore replaces the whole database under every instance "+
		"serving it. Stop the instances and restore offline: copydesk restore FILE --database URL (docs/scaling.md)", what)
}

// endSessions ends every session and revokes every API token: see Replace.
func (db *DB) endSessions(ctx context.Context) error {
	now := db.now()
	if _, err := db.w.ExecContext(ctx, `UPDATE sessions SET revoked_at = ? WHERE revoked_at IS NULL`, now); err != nil {
		return fmt.Errorf("end the sessions of the restored database: %w", err)
	}
	if _, err := db.w.ExecContext(ctx, `UPDATE api_tokens SET revoked_at = ? WHERE revoked_at IS NULL`, now); err != nil {
		return fmt.Errorf("revoke the API tokens of the restored database: %w", err)
	}
	return nil
}

// CheckFile proves that path is a whole, uncorrupted copydesk database that
// this binary can open: the SQLite header and copydesk's application id,
// PRAGMA integrity_check, a schema_migrations table no newer than this
// binary, and a schema that is exactly what the recorded migrations create
// (no table, index, trigger or view more, less or different). Failures
// are KindInvalid errors that say what is wrong. The file is opened
// read-only.
func CheckFile(ctx context.Context, path string) (FileInfo, error) {
	var fi FileInfo
	f, err := os.Open(path)
	if err != nil {
		return fi, fmt.Errorf("store: check %s: %w", filepath.Base(path), err)
	}
	head := make([]byte, HeaderSize)
	n, _ := io.ReadFull(f, head)
	st, statErr := f.Stat()
	f.Close()
	if err := CheckHeader(head[:n]); err != nil {
		return fi, err
	}
	// The header says how big the database is; a shorter file was cut off.
	pageSize := int64(head[16])<<8 | int64(head[17])
	if pageSize == 1 {
		pageSize = 65536
	}
	pages := int64(head[28])<<24 | int64(head[29])<<16 | int64(head[30])<<8 | int64(head[31])
	if statErr == nil && pages > 0 && st.Size() < pageSize*pages {
		return fi, Invalid("the database file is truncated: %d bytes of %d", st.Size(), pageSize*pages)
	}
	conn, err := sql.Open("sqlite", "file:"+escapePath(path)+"?mode=ro&immutable=1")
	if err != nil {
		return fi, fmt.Errorf("store: check: %w", err)
	}
	defer conn.Close()
	conn.SetMaxOpenConns(1)
	rows, err := conn.QueryContext(ctx, `PRAGMA integrity_check`)
	if err != nil {
		return fi, &Error{Kind: KindInvalid, Message: "the database is corrupt: " + err.Error(), Err: err}
	}
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			rows.Close()
			return fi, &Error{Kind: KindInvalid, Message: "the database is corrupt: " + err.Error(), Err: err}
		}
		if line != "ok" {
			problems = append(problems, line)
		}
	}
	if err := rows.Err(); err != nil {
		rows.Close()
		return fi, &Error{Kind: KindInvalid, Message: "the database is corrupt: " + err.Error(), Err: err}
	}
	rows.Close()
	if len(problems) > 0 {
		return fi, Invalid("the database fails its integrity check: %s", problems[0])
	}
	versions, err := recordedVersions(ctx, conn)
	if err != nil || len(versions) == 0 {
		return fi, Invalid("the file is a SQLite database but not a copydesk one (no schema_migrations)")
	}
	fi.SchemaVersion = versions[len(versions)-1]
	if latest := SchemaVersion(); fi.SchemaVersion > latest {
		return fi, Invalid("the database is at schema version %d, newer than this copydesk (%d): use a newer copydesk", fi.SchemaVersion, latest)
	}
	if err := checkSchema(ctx, conn, versions); err != nil {
		return fi, err
	}
	if err := conn.QueryRowContext(ctx, `SELECT COUNT(*) FROM users`).Scan(&fi.Users); err != nil {
		return fi, Invalid("the file is a SQLite database but not a copydesk one (no users table)")
	}
	return fi, nil
}

// Replace puts the database file src in place of the live database without
// a restart. It waits for everyone holding the database (see Hold) to let
// go and keeps new holders waiting; then it writes a snapshot of the current
// database to safety (the last word before the swap), closes the
// connections, swaps the file, reopens, migrates, checks the schema and ends
// every session, before anyone else may use it. If the new file cannot be
// opened, the old one is put back. src must have passed CheckFile.
//
// Every session ends, the caller's included, and every API token is
// revoked: both live in the restored data, so an older snapshot would
// otherwise bring back sessions and API tokens that were revoked, and the
// tokens of users disabled, since it was taken. Everyone signs in again,
// against the restored accounts, and makes new API tokens.
//
// It runs to the end whatever happens to ctx (a client that goes away must
// not leave the server without a database), and waits at most ReplaceWait
// for holders (KindRetryLater after that, with nothing changed). A file that
// cannot be opened or migrated is refused (KindInvalid) and the previous
// database stays.
func (db *DB) Replace(ctx context.Context, src, safety string) error {
	return db.ReplaceStages(ctx, src, safety, nil)
}

// The stages of a Replace, as ReplaceStages reports them when each begins.
const (
	StageWaiting        = "waiting"         // for the holders of the database to let go; new ones wait
	StageSafetySnapshot = "safety_snapshot" // writing the safety snapshot of the current database
	StageSwapping       = "swapping"        // swapping the file, reopening, migrating, ending every session
)

// CanReplace says why the database cannot be replaced while it serves (a
// conflict: on PostgreSQL a restore is done offline), or nil.
func (db *DB) CanReplace() error {
	if db.OnPostgres() {
		return errNotOnPostgres("restores")
	}
	return nil
}

// ReplaceStages is Replace telling stage (when not nil) of each stage as
// it begins: StageWaiting, StageSafetySnapshot, StageSwapping. stage runs
// on Replace's goroutine and must not use the database.
func (db *DB) ReplaceStages(ctx context.Context, src, safety string, stage func(string)) error {
	if err := db.CanReplace(); err != nil {
		return err
	}
	if stage == nil {
		stage = func(string) {}
	}
	ctx = context.WithoutCancel(ctx)
	stage(StageWaiting)
	unlock, err := db.gate.exclusive(ReplaceWait)
	if err != nil {
		return err
	}
	defer unlock()
	stage(StageSafetySnapshot)
	if err := snapshot(ctx, db.path, safety); err != nil {
		return fmt.Errorf("store: replace: safety snapshot: %w", err)
	}
	stage(StageSwapping)
	dir := filepath.Dir(db.path)
	incoming := filepath.Join(dir, ".restore-incoming.db")
	os.Remove(incoming)
	if err := copyFile(src, incoming); err != nil {
		return fmt.Errorf("store: replace: %w", err)
	}
	defer os.Remove(incoming)
	db.stmts.Range(func(k, v any) bool {
		v.(*sql.Stmt).Close()
		db.stmts.Delete(k)
		return true
	})
	if err := db.close(); err != nil {
		return fmt.Errorf("store: replace: close: %w", err)
	}
	old := filepath.Join(dir, ".restore-previous.db")
	os.Remove(old)
	if err := os.Rename(db.path, old); err != nil {
		return errors.Join(fmt.Errorf("store: replace: %w", err), db.open(ctx))
	}
	// The WAL was checkpointed on close; a stale -wal or -shm must not be
	// applied to the new file.
	os.Remove(db.path + "-wal")
	os.Remove(db.path + "-shm")
	if err := os.Rename(incoming, db.path); err != nil {
		return errors.Join(fmt.Errorf("store: replace: %w", err), os.Rename(old, db.path), db.open(ctx))
	}
	syncDir(dir)
	openErr := db.open(ctx)
	if openErr == nil {
		openErr = db.sane(ctx)
	}
	if openErr == nil {
		openErr = db.endSessions(ctx)
	}
	if openErr != nil {
		// Put the previous database back rather than serve nothing.
		closeErr := db.close()
		os.Remove(db.path + "-wal")
		os.Remove(db.path + "-shm")
		if err := errors.Join(closeErr, os.Rename(old, db.path), db.open(ctx)); err != nil {
			return fmt.Errorf("store: replace: the restored database failed (%v) and the previous one did not reopen: %w", openErr, err)
		}
		return &Error{Kind: KindInvalid, Message: "the backup cannot be used by this copydesk: " + openErr.Error(), Err: openErr}
	}
	os.Remove(old)
	db.wrote()
	return nil
}

// recordedVersions lists the migrations a database says were applied,
// ascending.
func recordedVersions(ctx context.Context, q queryer) ([]int, error) {
	rows, err := q.QueryContext(ctx, `SELECT version FROM schema_migrations ORDER BY version`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		os.Remove(dst)
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		os.Remove(dst)
		return err
	}
	return out.Close()
}

func syncFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Chmod(0o600); err != nil {
		return err
	}
	return f.Sync()
}

// syncDir makes a rename in dir durable. Some file systems cannot sync a
// directory; the rename has happened either way, so that is only logged.
func syncDir(dir string) {
	d, err := os.Open(dir)
	if err == nil {
		err = d.Sync()
		d.Close()
	}
	if err != nil {
		slog.Debug("store: sync directory", "dir", dir, "err", err)
	}
}
