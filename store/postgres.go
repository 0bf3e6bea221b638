package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/copydesk/copydesk/store/migrations"
)

// IsPostgresURL reports whether s names a PostgreSQL database
// (postgres://... or postgresql://...) rather than a SQLite file.
func IsPostgresURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// RedactURL is u without its password, for logs and messages.
func RedactURL(u string) string {
	cfg, err := pgconn.ParseConfig(u)
	if err != nil || cfg.Password == "" {
		return u
	}
	return strings.Replace(u, ":"+cfg.Password+"@", ":xxxxx@", 1)
}

// openPostgres connects the writer and the read pool to db.url and migrates.
// The writer is one connection, as on SQLite: the store's transactions
// were written for one writer at a time, and keep that guarantee within
// an instance. (Several instances on one database need more: issue 24.)
func (db *DB) openPostgres(ctx context.Context) error {
	wcfg, err := pgx.ParseConfig(db.url)
	if err != nil {
		return fmt.Errorf("store: the database address is not valid: %w", err)
	}
	rcfg := wcfg.Copy()
	rcfg.RuntimeParams["default_transaction_read_only"] = "on"
	appName(wcfg, "copydesk writer")
	appName(rcfg, "copydesk reader")
	d := db.d.(*postgresDialect)
	w := sql.OpenDB(pgConnector{stdlib.GetConnector(*wcfg), d})
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	if err := w.PingContext(ctx); err != nil {
		w.Close()
		return fmt.Errorf("store: connect to %s: %w", RedactURL(db.url), err)
	}
	var version int
	if err := w.QueryRowContext(ctx, `SELECT current_setting('server_version_num')::int`).Scan(&version); err != nil {
		w.Close()
		return fmt.Errorf("store: connect to %s: %w", RedactURL(db.url), err)
	}
	if version < 150000 {
		w.Close()
		return fmt.Errorf("store: PostgreSQL %d.%d is too old: copydesk needs 15 or newer", version/10000, version%10000)
	}
	db.w = w
	if err := db.migrate(ctx); err != nil {
		w.Close()
		return err
	}
	nullable, err := nullableColumns(ctx, w)
	if err != nil {
		w.Close()
		return fmt.Errorf("store: read the schema: %w", err)
	}
	d.setNullable(nullable)
	r := sql.OpenDB(pgConnector{stdlib.GetConnector(*rcfg), d})
	r.SetMaxOpenConns(db.opt.Readers)
	r.SetMaxIdleConns(db.opt.Readers)
	db.r = r
	return nil
}

// nullableColumns are the names of the columns that may be NULL in some
// table or view of the schema. It reads pg_attribute, not the
// information_schema.columns view that says the same: planning and running
// that view cost a new connection 100 to 300 ms of the server's CPU, at
// every start (the route tables open an app per case).
func nullableColumns(ctx context.Context, w *sql.DB) (map[string]bool, error) {
	rows, err := w.QueryContext(ctx, `SELECT DISTINCT a.attname FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
		WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'v', 'f', 'p')
			AND a.attnum > 0 AND NOT a.attisdropped AND NOT a.attnotnull`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, err
		}
		out[name] = true
	}
	return out, rows.Err()
}

// OpenRaw opens another pool on the database, outside the store: for
// tests and tools that read or write rows behind its back. Its statements
// are written as the store's are (SQLite's dialect) and translated the
// same way on PostgreSQL; on SQLite it has foreign keys on and waits for
// the writer as the store's connections do.
func (db *DB) OpenRaw() (*sql.DB, error) {
	if !db.OnPostgres() {
		return sql.Open("sqlite", dsn(db.path, ""))
	}
	cfg, err := pgx.ParseConfig(db.url)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(pgConnector{stdlib.GetConnector(*cfg), &postgresDialect{}}), nil
}

// pgConnector makes the connections of a pool, each translating the
// store's queries (Dialect.Query) before pgx sees them.
type pgConnector struct {
	inner driver.Connector
	d     *postgresDialect
}

func (c pgConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &pgConn{Conn: conn.(*stdlib.Conn), d: c.d}, nil
}

func (c pgConnector) Driver() driver.Driver { return c.inner.Driver() }

// pgConn is pgx's connection with every statement's text translated: the
// one place where the store's SQLite-dialect queries become PostgreSQL's.
// Everything else (transactions, argument checks, session reset) is pgx's.
type pgConn struct {
	*stdlib.Conn
	d *postgresDialect
}

// CheckNamedValue passes a Go bool as pgBool, which pgx writes into an
// INTEGER column (0 or 1, the store's booleans) as into a boolean
// parameter (CASE WHEN ? THEN ...).
func (c *pgConn) CheckNamedValue(nv *driver.NamedValue) error {
	switch v := nv.Value.(type) {
	case bool:
		nv.Value = pgBool(v)
		return nil
	case *bool:
		if v == nil {
			nv.Value = nil
		} else {
			nv.Value = pgBool(*v)
		}
		return nil
	}
	return c.Conn.CheckNamedValue(nv)
}

// pgBool is a bool argument, written as an integer or a boolean as its
// parameter's type asks.
type pgBool bool

func (b pgBool) Int64Value() (pgtype.Int8, error) {
	return pgtype.Int8{Int64: int64(boolInt(bool(b))), Valid: true}, nil
}

func (b pgBool) BoolValue() (pgtype.Bool, error) { return pgtype.Bool{Bool: bool(b), Valid: true}, nil }

func (c *pgConn) Prepare(query string) (driver.Stmt, error) {
	return c.Conn.Prepare(c.d.Query(query))
}

func (c *pgConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	return c.Conn.PrepareContext(ctx, c.d.Query(query))
}

func (c *pgConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	return c.Conn.ExecContext(ctx, c.d.Query(query), args)
}

func (c *pgConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	return c.Conn.QueryContext(ctx, c.d.Query(query), args)
}

// Migrations on PostgreSQL: the same numbered files, translated
// (pgDDL), except where a file NNNN_name.pg.sql stands beside one: then
// that file is the migration's text on PostgreSQL, translated the same way
// (so it keeps the shared type names): a trigger, full-text search, a
// forward reference or a value the translation cannot carry.

func (*postgresDialect) migrationSQL(m migration) (string, error) {
	if text, ok, err := migrations.PostgresSQL(m.name); err != nil {
		return "", fmt.Errorf("store: migration %s: %w", m.name, err)
	} else if ok {
		return pgDDL(text), nil
	}
	return pgDDL(m.sql), nil
}

// PostgresMigrations are the texts of the migrations on PostgreSQL, in
// order (what the tests' template database is keyed by).
func PostgresMigrations() ([]string, error) {
	ms, err := allMigrations()
	if err != nil {
		return nil, err
	}
	out := make([]string, len(ms))
	d := &postgresDialect{}
	for i, m := range ms {
		if out[i], err = d.migrationSQL(m); err != nil {
			return nil, err
		}
	}
	return out, nil
}

var (
	ddlPragma   = lazyRegexp(`(?m)^\s*PRAGMA\b[^;]*;`)
	ddlIdentity = lazyRegexp(`(?i)\bid\s+INTEGER\s+PRIMARY\s+KEY(\s+AUTOINCREMENT)?\b`)
	ddlInteger  = lazyRegexp(`\bINTEGER\b`)
	ddlReal     = lazyRegexp(`\bREAL\b`)
	ddlBlob     = lazyRegexp(`\bBLOB\b`)
	ddlNoRowid  = lazyRegexp(`\)\s*WITHOUT\s+ROWID`)
	ddlText     = lazyRegexp(`\bTEXT\b`)
	// minMax starts a call of MIN or MAX, any case.
	minMax = lazyRegexp(`(?i)\b(MIN|MAX)\(`)
)

// pgDDL translates a migration written for SQLite: integer keys become
// identity columns (never reused, as AUTOINCREMENT), INTEGER BIGINT, REAL
// DOUBLE PRECISION, BLOB BYTEA, MIN(a, b) LEAST, SQLite's now pgNow; WITHOUT ROWID and
// PRAGMAs go. Text without
// a collation of its own compares byte by byte ("C"), as SQLite's BINARY,
// whatever the database's default; COLLATE NOCASE names the nocase
// collation every PostgreSQL schema of copydesk has (pgPrelude).
func pgDDL(s string) string {
	s = ddlPragma().ReplaceAllString(s, "")
	s = ddlIdentity().ReplaceAllString(s, "id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY")
	s = ddlInteger().ReplaceAllString(s, "BIGINT")
	s = ddlReal().ReplaceAllString(s, "DOUBLE PRECISION")
	s = ddlBlob().ReplaceAllString(s, "BYTEA")
	s = ddlNoRowid().ReplaceAllString(s, ")")
	s = strings.ReplaceAll(s, sqliteNow, pgNow)
	s = scalarMinMax(s)
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if code, _, _ := strings.Cut(l, "--"); ddlText().MatchString(code) && !strings.Contains(strings.ToUpper(code), "COLLATE") {
			lines[i] = ddlText().ReplaceAllString(code, `TEXT COLLATE "C"`) + l[len(code):]
		}
	}
	return strings.Join(lines, "\n")
}

// scalarMinMax turns SQLite's MIN(a, b, ...) and MAX(a, b, ...), of
// several arguments (the aggregates have one), into LEAST and GREATEST.
func scalarMinMax(s string) string {
	locs := minMax().FindAllStringSubmatchIndex(s, -1)
	for k := len(locs) - 1; k >= 0; k-- {
		name, open := s[locs[k][2]:locs[k][3]], locs[k][1]-1
		depth, comma := 0, false
		for i := open; i < len(s); i++ {
			switch s[i] {
			case '(':
				depth++
			case ')':
				depth--
			case ',':
				comma = comma || depth == 1
			}
			if depth == 0 {
				break
			}
		}
		if comma {
			with := "LEAST"
			if strings.EqualFold(name, "MAX") {
				with = "GREATEST"
			}
			s = s[:locs[k][0]] + with + s[open:]
		}
	}
	return s
}

// sqliteNow is the current time in TimeFormat in SQLite's SQL, and pgNow
// the same in PostgreSQL's.
const (
	sqliteNow = `strftime('%Y-%m-%dT%H:%M:%fZ', 'now')`
	pgNow     = `to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`
)

// pgPrelude runs before the migrations of a start whose schema lacks it
// (lockMigrations), idempotent: the case-insensitive collation SQLite
// calls NOCASE. It folds case beyond
// ASCII (ICU's level 2), where SQLite's folds A-Z alone.
const pgPrelude = `CREATE COLLATION IF NOT EXISTS nocase (provider = icu, locale = 'und-u-ks-level2', deterministic = false)`

// lockMigrations takes a session advisory lock keyed by the schema, so that
// of several instances starting at once one migrates and the others then
// find nothing to do; tests in schemas of their own do not wait on each
// other.
func (*postgresDialect) lockMigrations(ctx context.Context, conn migrator) (func() error, error) {
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock(hashtext('copydesk migrations'), hashtext(current_schema()))`); err != nil {
		return nil, err
	}
	unlock := func() error {
		_, err := conn.ExecContext(context.WithoutCancel(ctx),
			`SELECT pg_advisory_unlock(hashtext('copydesk migrations'), hashtext(current_schema()))`)
		return err
	}
	// CREATE COLLATION loads ICU before it sees the collation is there: about
	// 55 ms of the server's CPU, at every start. So it runs only when the
	// schema lacks the collation.
	var have bool
	if err := conn.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_collation
		WHERE collname = 'nocase' AND collnamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema()))`).Scan(&have); err != nil {
		return nil, errors.Join(err, unlock())
	}
	if !have {
		if _, err := conn.ExecContext(ctx, pgPrelude); err != nil {
			return nil, errors.Join(err, unlock())
		}
	}
	return unlock, nil
}

// syncIdentities moves each identity column's sequence past the largest id
// its table holds: rows copied with their ids (a migration's rebuild, a
// restore, a move between engines) do not advance it by themselves.
func syncIdentities(ctx context.Context, tx *sql.Tx) error {
	rows, err := tx.QueryContext(ctx, `SELECT table_name, column_name FROM information_schema.columns
		WHERE table_schema = current_schema() AND is_identity = 'YES'`)
	if err != nil {
		return err
	}
	var stmts []string
	for rows.Next() {
		var table, column string
		if err := rows.Scan(&table, &column); err != nil {
			rows.Close()
			return err
		}
		stmts = append(stmts, fmt.Sprintf(`SELECT setval(pg_get_serial_sequence('%[1]s', '%[2]s'),
			GREATEST((SELECT MAX(%[2]s) FROM %[1]s), 1), (SELECT MAX(%[2]s) FROM %[1]s) IS NOT NULL)`, table, column))
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, s := range stmts {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

// readSchema reads the schema of the current schema from PostgreSQL's
// catalogs, in the shape of sqlite_master: tables (their columns and
// types), indexes (their definitions; not those of constraints, which come
// with their table as SQLite's autoindexes do) and triggers.
func (*postgresDialect) readSchema(ctx context.Context, q queryer) (map[string]schemaObject, error) {
	rows, err := q.QueryContext(ctx, `
		SELECT 'table', c.relname, c.relname, string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
			|| CASE WHEN a.attnotnull THEN ' NOT NULL' ELSE '' END, ', ' ORDER BY a.attnum)
		FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
		WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r' AND c.relname <> 'copydesk_changes'
		GROUP BY c.relname
		UNION ALL
		SELECT 'index', i.indexname, i.tablename, i.indexdef FROM pg_indexes i
		WHERE i.schemaname = current_schema() AND NOT EXISTS (SELECT 1 FROM pg_constraint k
			WHERE k.conindid = format('%I.%I', i.schemaname, i.indexname)::regclass)
		UNION ALL
		SELECT 'trigger', t.tgname, c.relname, pg_get_triggerdef(t.oid)
		FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
		WHERE c.relnamespace = current_schema()::regnamespace AND NOT t.tgisinternal AND t.tgname <> 'copydesk_changed'
		UNION ALL
		SELECT 'view', viewname, viewname, definition FROM pg_views WHERE schemaname = current_schema()`)
	if err != nil {
		return nil, err
	}
	return scanSchema(rows)
}

// translatePostgres is translate for PostgreSQL's errors: the same kinds
// and messages as SQLite's.
func translatePostgres(err error, what string) error {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return err
	}
	switch pe.Code {
	case "23505": // unique_violation
		if field := pgUniqueField(pe.Detail); field != "" {
			return &Error{Kind: KindConflict, Message: fmt.Sprintf("%s %s with this %s already exists", article(what), what, field), Err: err}
		}
		return &Error{Kind: KindConflict, Message: fmt.Sprintf("this %s already exists", what), Err: err}
	case "23503": // foreign_key_violation
		return &Error{Kind: KindInvalid, Message: fmt.Sprintf("%s refers to something that does not exist", what), Err: err}
	case "23514", "23502": // check_violation, not_null_violation
		return &Error{Kind: KindInvalid, Message: fmt.Sprintf("%s breaks a data rule", what), Err: err}
	}
	return err
}

// pgUniqueField pulls the first column out of "Key (environment_id,
// slug)=(1, x) already exists.", as uniqueField does for SQLite.
func pgUniqueField(detail string) string {
	cols, ok := strings.CutPrefix(detail, "Key (")
	if !ok {
		return ""
	}
	cols, _, _ = strings.Cut(cols, ")")
	field, _, _ := strings.Cut(cols, ",")
	field = strings.TrimSpace(field)
	if strings.ContainsAny(field, " (") {
		return "" // an expression, not a column
	}
	return strings.TrimSuffix(field, "_key")
}

// appName names a connection's purpose in pg_stat_activity (writer,
// reader, events, the serving lock), unless the database address sets
// application_name itself.
func appName(cfg *pgx.ConnConfig, name string) {
	if _, set := cfg.RuntimeParams["application_name"]; !set {
		cfg.RuntimeParams["application_name"] = name
	}
}
