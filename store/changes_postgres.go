package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// Change marks on PostgreSQL. Several instances share one database, so a
// write counted in one process (DB.writes) is not enough: the others must
// see it at their next request too. Every table a cache depends on (all
// but contentTables) carries a deferred constraint trigger that bumps the
// one row of copydesk_changes when its transaction commits, in that same
// transaction: a reader that sees the change sees the new count, with no
// window between the two, whoever wrote it (an instance, the CLI, psql).
// ChangeMark reads the count: one indexed point read per request.
//
// The trigger is deferred so that the counter's row lock is the last lock
// a transaction takes, held only while it commits: two instances' writes
// cannot deadlock over it. A transaction bumps it once however many rows
// it writes (a transaction-local setting remembers it did).
//
// The table and the triggers are not migrations: they are installed at
// every start, under the migrations' lock, on the tables the schema then
// has, so a table a later migration adds is covered at the next start
// without anyone remembering to. readSchema leaves them out, so a
// PostgreSQL schema still compares equal to the migrations'.

const (
	changesTable   = "copydesk_changes"
	changesTrigger = "copydesk_changed"
)

// changedBody is the trigger function's body: it bumps the count once per
// transaction.
const changedBody = `
		BEGIN
			IF current_setting('copydesk.changed', true) IS DISTINCT FROM 'yes' THEN
				PERFORM set_config('copydesk.changed', 'yes', true);
				UPDATE ` + changesTable + ` SET n = n + 1 WHERE id = 1;
			END IF;
			RETURN NULL;
		END `

// installChangeMarks creates copydesk_changes, its function and the
// triggers; conn holds the migrations' lock. The function is replaced only
// when its body differs from changedBody: CREATE OR REPLACE FUNCTION at
// every start cost each start about 25 ms of the server's CPU, and made
// every other instance's sessions drop their cached plans of it.
func installChangeMarks(ctx context.Context, conn *sql.Conn) error {
	stmts := []string{
		`CREATE TABLE IF NOT EXISTS ` + changesTable + ` (id INT PRIMARY KEY CHECK (id = 1), n BIGINT NOT NULL)`,
		`INSERT INTO ` + changesTable + ` (id, n) VALUES (1, 0) ON CONFLICT (id) DO NOTHING`,
	}
	var body sql.NullString
	if err := conn.QueryRowContext(ctx, `SELECT (SELECT prosrc FROM pg_proc
		WHERE proname = '`+changesTrigger+`' AND pronamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema()))`).Scan(&body); err != nil {
		return fmt.Errorf("store: install change marks: %w", err)
	}
	if body.String != changedBody {
		stmts = append(stmts, `CREATE OR REPLACE FUNCTION `+changesTrigger+`() RETURNS trigger LANGUAGE plpgsql AS $body$`+changedBody+`$body$`)
	}
	for _, s := range stmts {
		if _, err := conn.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("store: install change marks: %w", err)
		}
	}
	tables, err := conn.QueryContext(ctx, `SELECT c.relname, EXISTS (SELECT 1 FROM pg_trigger t WHERE t.tgrelid = c.oid AND t.tgname = '`+changesTrigger+`')
		FROM pg_class c WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r' AND c.relname <> '`+changesTable+`'`)
	if err != nil {
		return fmt.Errorf("store: install change marks: %w", err)
	}
	var todo []string
	for tables.Next() {
		var name string
		var has bool
		if err := tables.Scan(&name, &has); err != nil {
			tables.Close()
			return fmt.Errorf("store: install change marks: %w", err)
		}
		switch content := contentTables()[name]; {
		case content && has:
			todo = append(todo, fmt.Sprintf(`DROP TRIGGER %s ON %s`, changesTrigger, quoteIdent(name)))
		case !content && !has:
			todo = append(todo, fmt.Sprintf(`CREATE CONSTRAINT TRIGGER %s AFTER INSERT OR UPDATE OR DELETE ON %s
				DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION %s()`, changesTrigger, quoteIdent(name), changesTrigger))
		}
	}
	tables.Close()
	if err := tables.Err(); err != nil {
		return fmt.Errorf("store: install change marks: %w", err)
	}
	for _, s := range todo {
		if _, err := conn.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("store: install change marks: %w", err)
		}
	}
	return nil
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// sharedChanges is the count of copydesk_changes, or a value no other
// call returns when it cannot be read (so that a cache reloads, and the
// reload reports what is wrong).
func (db *DB) sharedChanges() int64 {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var n int64
	st, err := db.readStmt(ctx, `SELECT n FROM `+changesTable+` WHERE id = 1`)
	if err == nil {
		err = st.QueryRowContext(ctx).Scan(&n)
	}
	if err != nil {
		return -db.markMisses.Add(1)
	}
	return n
}
