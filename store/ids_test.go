package store

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
)

// Every table keyed by an integer id gives no id twice, on a new database:
// a migration after 0022 that forgets AUTOINCREMENT fails here.
func TestNewDatabaseNeverReusesIDs(t *testing.T) {
	db, err := Open(context.Background(), filepath.Join(t.TempDir(), "new.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tx, err := db.w.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck // read only
	without, err := rowidTables(context.Background(), tx)
	if err != nil {
		t.Fatal(err)
	}
	for _, table := range without {
		t.Errorf("table %s: id INTEGER PRIMARY KEY without AUTOINCREMENT gives a deleted row's id again", table.name)
	}
	var n int
	if err := tx.QueryRow(`SELECT count(*) FROM sqlite_master WHERE type = 'table' AND sql LIKE '%PRIMARY KEY AUTOINCREMENT%'`).Scan(&n); err != nil || n < 30 {
		t.Fatalf("%d tables with AUTOINCREMENT (%v): the check reads the schema wrong", n, err)
	}
}

// A database made before 0022 is rebuilt by it: rows, their references and
// the schema are those of a new database, children are not cascaded away,
// foreign keys are on again, and from then on a deleted id stays unused.
func TestMigration0022RebuildsAnOlderDatabase(t *testing.T) {
	ctx := context.Background()
	ms, err := allMigrations()
	if err != nil {
		t.Fatal(err)
	}
	split := 0
	for split < len(ms) && ms[split].version < idsMigration {
		split++
	}
	pool, err := sql.Open("sqlite", dsn(filepath.Join(t.TempDir(), "old.db"), ""))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	conn, err := pool.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := conn.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(createMigrationsTable)
	if err := applyMigrations(ctx, conn, ms[:split], "2025-01-01T00:00:00.000Z"); err != nil {
		t.Fatal(err)
	}
	const at = "2025-01-01T00:00:00.000Z"
	for i, name := range []string{"ann", "bob", "cat"} {
		exec(`INSERT INTO users (email, username, password_hash, role, created_at, updated_at) VALUES (?, ?, 'x', 'viewer', ?, ?)`,
			name+"@example.com", name, at, at)
		exec(`INSERT INTO sessions (user_id, created_at, last_seen_at, token_expires_at, expires_at) VALUES (?, ?, ?, ?, ?)`,
			i+1, at, at, at, at)
	}
	exec(`DELETE FROM users WHERE id = 3`) // before 0022: the next user would be 3 again
	var text string
	if err := conn.QueryRowContext(ctx, `SELECT sql FROM sqlite_master WHERE name = 'users'`).Scan(&text); err != nil ||
		strings.Contains(text, "AUTOINCREMENT") {
		t.Fatalf("before 0022 users is %q (%v)", text, err)
	}

	if err := applyMigrations(ctx, conn, ms[split:], "2025-01-02T00:00:00.000Z"); err != nil {
		t.Fatal(err)
	}
	var users, sessions int
	if err := conn.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM users), (SELECT count(*) FROM sessions)`).Scan(&users, &sessions); err != nil ||
		users != 2 || sessions != 2 {
		t.Fatalf("after 0022: %d users, %d sessions (%v), want 2 and 2", users, sessions, err)
	}
	var fk int
	if err := conn.QueryRowContext(ctx, `PRAGMA foreign_keys`).Scan(&fk); err != nil || fk != 1 {
		t.Fatalf("foreign_keys = %d after migrating (%v)", fk, err)
	}
	versions := make([]int, len(ms))
	for i, m := range ms {
		versions[i] = m.version
	}
	if err := checkSchema(ctx, conn, versions); err != nil {
		t.Fatalf("the rebuilt database's schema is not a new database's: %v", err)
	}
	// The newest user deleted, the next one gets a new id; the cascade
	// still works after the rebuild.
	exec(`INSERT INTO users (email, username, password_hash, role, created_at, updated_at) VALUES ('dan@example.com', 'dan', 'x', 'viewer', ?, ?)`, at, at)
	exec(`DELETE FROM users WHERE username = 'dan'`)
	exec(`INSERT INTO users (email, username, password_hash, role, created_at, updated_at) VALUES ('eve@example.com', 'eve', 'x', 'viewer', ?, ?)`, at, at)
	var dan, eve int64
	if err := conn.QueryRowContext(ctx, `SELECT seq FROM sqlite_sequence WHERE name = 'users'`).Scan(&eve); err != nil {
		t.Fatal(err)
	}
	dan = eve - 1
	if err := conn.QueryRowContext(ctx, `SELECT id FROM users WHERE username = 'eve'`).Scan(&eve); err != nil || eve <= dan || eve != 4 {
		t.Fatalf("eve got id %d after dan's %d was deleted (%v)", eve, dan, err)
	}
	exec(`DELETE FROM users WHERE id = 2`)
	if err := conn.QueryRowContext(ctx, `SELECT count(*) FROM sessions WHERE user_id = 2`).Scan(&sessions); err != nil || sessions != 0 {
		t.Fatalf("%d sessions of a deleted user (%v): ON DELETE CASCADE lost in the rebuild", sessions, err)
	}
}
