// Package store keeps everything copydesk knows in one SQLite file: it opens
// the database, applies the embedded migrations and holds all the SQL.
//
// Writes go through a single connection (SQLite allows one writer at a time;
// queueing in Go is cheaper than spinning on SQLITE_BUSY) and reads through a
// pool of read-only connections, which WAL mode lets run beside the writer.
package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/copydesk/copydesk/store/migrations"
	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// TimeFormat is how times are stored: fixed width, so text order is time order.
const TimeFormat = "2006-01-02T15:04:05.000Z"

// DB is the copydesk database.
type DB struct {
	gate gate // see Hold

	w    *sql.DB // the one writer connection
	r    *sql.DB // read-only pool
	path string  // the SQLite file; "" on PostgreSQL
	url  string  // the PostgreSQL database; "" on SQLite
	d    Dialect // the engine's differences
	opt  Options

	// stmts caches prepared read statements of hot paths and lists:
	// preparing is about half the cost of a point query in SQLite, and a
	// tenth of a page of a list. nstmts counts them (see maxStmts).
	stmts  sync.Map // query string -> *sql.Stmt
	nstmts atomic.Int64
	// wstmts caches the prepared inserts of creates on the writer: a
	// table with indexes, foreign keys and checks takes longer to
	// compile than to write one row.
	wstmts sync.Map // query string -> *sql.Stmt

	// writes counts committed writes of this process; see ChangeMark.
	writes atomic.Uint64
	// markMisses counts the change marks PostgreSQL could not be asked
	// for (sharedChanges).
	markMisses atomic.Int64

	// poolMu guards w and r for Pools, which reads them without holding
	// the database (a scrape must not wait for a restore); open and close
	// change them under it. writerWaits are the waits of writer pools a
	// restore closed, so that the count never goes back.
	poolMu      sync.Mutex
	writerWaits sql.DBStats

	// Now is the clock; tests replace it.
	Now func() time.Time

	// listed, when set, is told each list query before it runs: the plan
	// test (plan_internal_test.go) checks them all this way, so a list
	// added later is checked without anyone remembering to.
	listed func(query string, args []any)
}

// Options tunes Open.
type Options struct {
	// Readers is the size of the read pool; 0 means one per CPU, at least 4.
	Readers int
	// Announce makes every committed write also replace the change marker
	// file, so that a server running on the same file notices writes made
	// by this process (the CLI) at once; see ChangeMark.
	Announce bool
}

// Open opens (creating if needed) the database at path and brings its schema
// up to date. It refuses a database written by a newer copydesk. A path
// that is a postgres:// URL (IsPostgresURL) opens that PostgreSQL database
// instead of a SQLite file.
func Open(ctx context.Context, path string, opt Options) (*DB, error) {
	if opt.Readers <= 0 {
		opt.Readers = max(4, runtime.NumCPU())
	}
	db := &DB{path: path, opt: opt, d: sqliteDialect{}, Now: func() time.Time { return time.Now().UTC() }}
	if IsPostgresURL(path) {
		db.path, db.url, db.d = "", path, &postgresDialect{}
		if err := db.openPostgres(ctx); err != nil {
			return nil, err
		}
		return db, nil
	}
	if err := db.open(ctx); err != nil {
		return nil, err
	}
	return db, nil
}

// dsn is the connection string for path with the pragmas every connection
// needs.
func dsn(path, extra string) string {
	return "file:" + escapePath(path) +
		"?_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)" + extra
}

func escapePath(p string) string { return (&url.URL{Path: p}).EscapedPath() }

// open connects both pools to db.path and migrates.
func (db *DB) open(ctx context.Context) error {
	// The file holds password hashes and sealed secrets: only its owner
	// reads it. SQLite gives the -wal and -shm files the same mode.
	if f, err := os.OpenFile(db.path, os.O_RDONLY|os.O_CREATE, 0o600); err == nil {
		f.Close()
	}
	w, err := sql.Open("sqlite", dsn(db.path, "&_pragma=journal_mode(WAL)&_txlock=immediate"))
	if err != nil {
		return fmt.Errorf("store: open %s: %w", db.path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	// The writer connects first so WAL mode is set before readers attach.
	if err := w.PingContext(ctx); err != nil {
		w.Close()
		return fmt.Errorf("store: open %s: %w", db.path, err)
	}
	db.setPools(w, db.r) // the readers are replaced once the schema is current
	if err := db.migrate(ctx); err != nil {
		w.Close()
		return err
	}
	if err := db.optimize(ctx); err != nil {
		w.Close()
		return err
	}
	r, err := sql.Open("sqlite", dsn(db.path, "&_pragma=query_only(1)"))
	if err != nil {
		w.Close()
		return fmt.Errorf("store: open %s: %w", db.path, err)
	}
	r.SetMaxOpenConns(db.opt.Readers)
	r.SetMaxIdleConns(db.opt.Readers)
	r.SetConnMaxIdleTime(0)
	r.SetConnMaxLifetime(0)
	db.setPools(w, r)
	return nil
}

// setPools replaces the pools under poolMu, keeping the waits of the writer
// it replaces.
func (db *DB) setPools(w, r *sql.DB) {
	db.poolMu.Lock()
	defer db.poolMu.Unlock()
	if db.w != nil && db.w != w {
		st := db.w.Stats()
		db.writerWaits.WaitCount += st.WaitCount
		db.writerWaits.WaitDuration += st.WaitDuration
	}
	db.w, db.r = w, r
}

// PoolStats is the state of one connection pool.
type PoolStats struct {
	Max, Open, InUse int
	// Waits counts the times a caller waited for a free connection, and
	// WaitTime adds up how long: for the writer, the waits for the single
	// write lock of this process.
	Waits    int64
	WaitTime time.Duration
}

// Pools reports the read pool and the writer, without holding the
// database: a scrape during a restore sees the pools of the moment.
func (db *DB) Pools() (readers, writer PoolStats) {
	db.poolMu.Lock()
	defer db.poolMu.Unlock()
	stats := func(p *sql.DB) PoolStats {
		if p == nil {
			return PoolStats{}
		}
		st := p.Stats()
		return PoolStats{Max: st.MaxOpenConnections, Open: st.OpenConnections, InUse: st.InUse, Waits: st.WaitCount, WaitTime: st.WaitDuration}
	}
	readers, writer = stats(db.r), stats(db.w)
	writer.Waits += db.writerWaits.WaitCount
	writer.WaitTime += db.writerWaits.WaitDuration
	return readers, writer
}

// optimize refreshes the statistics SQLite's query planner chooses indexes
// by, for the tables that changed much since they were gathered (or never
// had any), as SQLite recommends at the start and end of a long-lived
// connection (PRAGMA optimize; 0x10000: look at every table, not only those
// this connection queried). It is cheap: SQLite bounds the rows it samples
// and does nothing when nothing changed. Open runs it before the readers
// connect, so they plan with the new statistics; a connection keeps the
// statistics it loaded, so running it more often would not reach them.
// Nothing depends on it being recent: the list queries and indexes
// (migration 0005) are shaped so that the plans TestListQueryPlans
// requires hold with or without statistics.
func (db *DB) optimize(ctx context.Context) error {
	if err := db.d.optimize(ctx, db.w); err != nil {
		return fmt.Errorf("store: optimize: %w", err)
	}
	return nil
}

// readStmt returns the prepared form of a read query on the reader pool.
func (db *DB) readStmt(ctx context.Context, query string) (*sql.Stmt, error) {
	if st, ok := db.stmts.Load(query); ok {
		return st.(*sql.Stmt), nil
	}
	st, err := db.r.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if prev, loaded := db.stmts.LoadOrStore(query, st); loaded {
		st.Close()
		return prev.(*sql.Stmt), nil
	}
	db.nstmts.Add(1)
	return st, nil
}

// Close closes both pools. It checkpoints the WAL so the database file alone
// is complete after a clean shutdown.
func (db *DB) Close() error {
	unlock, err := db.gate.exclusive(time.Minute)
	if err == nil {
		defer unlock()
	}
	return db.close()
}

func (db *DB) close() error {
	var errs []error
	db.stmts.Range(func(k, v any) bool {
		v.(*sql.Stmt).Close()
		db.stmts.Delete(k)
		return true
	})
	db.nstmts.Store(0)
	db.wstmts.Range(func(k, v any) bool {
		v.(*sql.Stmt).Close()
		db.wstmts.Delete(k)
		return true
	})
	if db.r != nil {
		errs = append(errs, db.r.Close())
	}
	if db.w != nil {
		if err := db.optimize(context.Background()); err != nil {
			slog.Warn("the query planner's statistics were not refreshed; they will be at the next start", "err", err)
		}
		if db.url == "" {
			_, _ = db.w.Exec("PRAGMA wal_checkpoint(TRUNCATE)")
		}
		errs = append(errs, db.w.Close())
	}
	return errors.Join(errs...)
}

// Path is the database file; "" on PostgreSQL.
func (db *DB) Path() string { return db.path }

// OnPostgres reports whether the database is PostgreSQL's.
func (db *DB) OnPostgres() bool { return db.url != "" }

// Ping checks that both pools answer.
func (db *DB) Ping(ctx context.Context) error {
	if err := db.w.PingContext(ctx); err != nil {
		return err
	}
	return db.r.PingContext(ctx)
}

func (db *DB) now() string { return db.Now().UTC().Format(TimeFormat) }

// Every write goes through tx, exec, insert or insertRow, which count it
// once it is committed (see ChangeMark and contentTables).

// tx runs fn in a write transaction (BEGIN IMMEDIATE through the writer).
func (db *DB) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: begin: %w", err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: commit: %w", err)
	}
	db.wrote()
	return nil
}

// exec runs one write statement.
func (db *DB) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	res, err := db.w.ExecContext(ctx, query, args...)
	if err == nil {
		db.wroteStmt(query)
	}
	return res, err
}

// insert runs an INSERT ... RETURNING id.
func (db *DB) insert(ctx context.Context, query string, args ...any) (int64, error) {
	return insertRow(ctx, db, func(row rowScanner) (id int64, err error) { return id, row.Scan(&id) }, query, args...)
}

// aliasPrefix is the table alias of a column in a column list.
var aliasPrefix = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\b\w+\.`) })

// returning is a column list ("a.id, a.name") for a RETURNING clause,
// which takes no table alias ("id, name").
func returning(columns string) string { return aliasPrefix().ReplaceAllString(columns, "") }

// insertRow runs an INSERT ... RETURNING the row's columns and scans them
// with scan: the create and the read of what it stored in one statement.
// The statement is prepared once (the queries are constants).
func insertRow[T any](ctx context.Context, db *DB, scan func(rowScanner) (T, error), query string, args ...any) (T, error) {
	st, err := db.writeStmt(ctx, query)
	if err != nil {
		var zero T
		return zero, err
	}
	v, err := scan(st.QueryRowContext(ctx, args...))
	if err == nil {
		db.wroteStmt(query)
	}
	return v, err
}

// changes collects the columns a partial UPDATE sets, in order.
type changes struct {
	cols []string
	args []any
}

func (c *changes) set(col string, v any) {
	c.cols, c.args = append(c.cols, col+" = ?"), append(c.args, v)
}

// given sets col to *v when v is given: a partial update's field, nil
// when it is left alone.
func given[T any](c *changes, col string, v *T) {
	if v != nil {
		c.set(col, *v)
	}
}

func (c *changes) none() bool { return len(c.cols) == 0 }

// update is the statement that sets them on the row id of table.
func (c *changes) update(table string, id int64) (string, []any) {
	return `UPDATE ` + table + ` SET ` + strings.Join(c.cols, ", ") + ` WHERE id = ?`, append(c.args, id)
}

// deleteByID deletes the row id of table; none is not found, naming what
// ("web source not found").
func (db *DB) deleteByID(ctx context.Context, table, what string, id int64) error {
	res, err := db.exec(ctx, `DELETE FROM `+table+` WHERE id = ?`, id)
	if err != nil {
		return fmt.Errorf("store: delete %s: %w", what, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return NotFound("%s not found", what)
	}
	return nil
}

// rowQuerier is what reads one row: the read pool, the writer or a
// transaction.
type rowQuerier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// querier is the read pool, the writer or a transaction.
type querier interface {
	rowQuerier
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// findRow reads the one row query selects (by args, on the pool) with
// scan: no row is what's not-found ("web source not found"), any other
// failure is wrapped as "store: find web source: ...".
func findRow[T any](ctx context.Context, db *DB, scan func(rowScanner) (T, error), what, query string, args ...any) (T, error) {
	return findIn(ctx, db.r, scan, what, query, args...)
}

// findIn is findRow through q: a transaction that reads the row it is
// about to change, or the writer after a write.
func findIn[T any](ctx context.Context, q rowQuerier, scan func(rowScanner) (T, error), what, query string, args ...any) (T, error) {
	v, err := scan(q.QueryRowContext(ctx, query, args...))
	if errors.Is(err, sql.ErrNoRows) {
		var zero T
		return zero, NotFound("%s not found", what)
	}
	if err != nil {
		var zero T
		return zero, fmt.Errorf("store: find %s: %w", what, err)
	}
	return v, nil
}

// writeStmt returns the prepared form of a write statement on the writer.
func (db *DB) writeStmt(ctx context.Context, query string) (*sql.Stmt, error) {
	if st, ok := db.wstmts.Load(query); ok {
		return st.(*sql.Stmt), nil
	}
	st, err := db.w.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if prev, loaded := db.wstmts.LoadOrStore(query, st); loaded {
		st.Close()
		return prev.(*sql.Stmt), nil
	}
	return st, nil
}

// contentTables are the tables no cache of the database depends on (the
// principal cache holds sessions, API tokens and their environments, users
// and their grants): a statement
// that writes one of them, and through its foreign keys and triggers only
// others of them, does not move ChangeMark. Without this, every agent
// created or run recorded would make every request read its session and
// user again. A table missing here only costs that; one wrongly here would
// serve a revoked session, so only plain content belongs.
var contentTables = sync.OnceValue(func() map[string]bool {
	return map[string]bool{
		"agents": true, "agent_assignments": true, "agent_runs": true, "jobs": true, "usage_events": true, "budget_alerts": true,
		"notifications": true, "messages": true, "conversations": true, "credentials": true, "ai_settings": true, "login_failures": true,
		"cms_categories": true, "cms_tags": true, "wordpress_posts": true, "wordpress_post_categories": true, "wordpress_post_tags": true,
		"archetypes": true, "cie_runs": true, "chat_conversations": true, "chat_messages": true,
		"seo_keywords": true, "seo_campaigns": true,
		"search_phrases": true, "search_ideas": true, "web_sources": true, "web_items": true,
		"autopilots": true, "autopilot_campaigns": true, "autopilot_runs": true, "autopilot_steps": true,
		"seo_scout_runs": true, "seo_scout_candidates": true, "seo_keyword_serps": true, "seo_strategies": true,
		"seo_strategy_clusters": true, "seo_strategy_keywords": true,
		"webhooks": true, "webhook_deliveries": true, "webhook_attempts": true,
		"astro_posts": true, "astro_post_categories": true, "astro_post_tags": true,
		"live_sessions": true, "live_generations": true,
	}
})

// wroteStmt is wrote for one committed write statement, which counts
// unless it writes a content table.
func (db *DB) wroteStmt(query string) {
	if !contentTables()[writeTarget(query)] {
		db.wrote()
	}
}

// writeTarget is the table an INSERT, UPDATE or DELETE statement writes,
// or "" when query is not one of those.
func writeTarget(query string) string {
	words := strings.Fields(query)
	for i, w := range words {
		if i > 4 {
			break
		}
		if w = strings.ToUpper(w); (w == "INTO" || w == "UPDATE" || w == "FROM") && i+1 < len(words) {
			name, _, _ := strings.Cut(words[i+1], "(")
			return strings.ToLower(name)
		}
	}
	return ""
}

// wrote counts a committed write that may change what a cache holds and,
// for an announcing process, replaces the change marker.
func (db *DB) wrote() {
	db.writes.Add(1)
	if db.opt.Announce && db.path != "" {
		db.announce()
	}
}

// markerPath is the change marker beside the database file.
func (db *DB) markerPath() string { return db.path + "-changed" }

// announce grows the change marker by one byte: its size is then an exact
// count of announced writes, unlike modification times (which the kernel
// keeps with a coarse clock) or inode numbers (which are reused).
func (db *DB) announce() {
	f, err := os.OpenFile(db.markerPath(), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		// A server on this file will not notice this write until its own
		// next one: say so rather than stay silent.
		slog.Warn("cannot announce a write to a running server; restart it to be sure it sees the change",
			"marker", db.markerPath(), "err", err)
		return
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() >= 1<<20 {
		err = f.Truncate(0) // start over; a reader that saw 1 MiB sees a change
		if err != nil {
			slog.Warn("cannot reset the change marker", "marker", db.markerPath(), "err", err)
		}
	}
	if _, err := f.Write([]byte{'.'}); err != nil {
		slog.Warn("cannot announce a write to a running server; restart it to be sure it sees the change",
			"marker", db.markerPath(), "err", err)
	}
}

// ChangeMark is a cheap token that differs whenever what a cache of the
// database holds may have changed since it was taken: any write committed
// by this process, or by another process that announces its writes (the
// CLI; see Options.Announce), except the writes of content tables alone
// (contentTables). On PostgreSQL it also counts the writes every process
// on the database committed (see changes_postgres.go), so that several
// instances see each other's. Caches of database state compare it on
// every use.
type ChangeMark struct {
	writes uint64
	marker int64 // size of the marker file; -1 when it does not exist
	shared int64 // PostgreSQL's count of committed writes (sharedChanges)
}

// ChangeMark returns the current mark: an atomic load and one stat on
// SQLite, an atomic load and one point read on PostgreSQL.
func (db *DB) ChangeMark() ChangeMark {
	m := ChangeMark{writes: db.writes.Load(), marker: -1}
	if db.OnPostgres() {
		m.shared = db.sharedChanges()
		return m
	}
	if st, err := os.Stat(db.markerPath()); err == nil {
		m.marker = st.Size()
	}
	return m
}

// migration is one numbered, embedded .sql file.
type migration struct {
	version int
	name    string
	sql     string
}

// migrationFiles lists the embedded migrations in order, by name alone:
// some callers need no file's text.
func migrationFiles() ([]migration, error) {
	fs, err := migrations.List()
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	ms := make([]migration, len(fs))
	for i, f := range fs {
		ms[i] = migration{version: f.Version, name: f.Name}
	}
	return ms, nil
}

// allMigrations are the embedded migrations in order, with their SQL.
func allMigrations() ([]migration, error) {
	ms, err := migrationFiles()
	if err != nil {
		return nil, err
	}
	for i := range ms {
		if ms[i].sql, err = migrations.SQL(ms[i].name); err != nil {
			return nil, fmt.Errorf("store: migration %s: %w", ms[i].name, err)
		}
	}
	return ms, nil
}

// SchemaVersion is the newest migration this binary knows.
func SchemaVersion() int { return migrations.Latest() }

// goSteps are the parts of migrations that SQL cannot do (Unicode case
// folding), by version: each runs in the migrations' transaction, right
// after its SQL file.
var goSteps = map[int]func(ctx context.Context, tx *sql.Tx) error{
	6:  keyEmails,
	22: autoincrementIDs,
}

func (db *DB) migrate(ctx context.Context) (err error) {
	ms, err := allMigrations()
	if err != nil {
		return err
	}
	// One connection for the whole of it: the lock (an advisory lock on
	// PostgreSQL, so two instances starting at once migrate once) and the
	// settings the migrations need belong to it.
	conn, err := db.w.Conn(ctx)
	if err != nil {
		return fmt.Errorf("store: migrate: %w", err)
	}
	defer conn.Close()
	unlock, err := db.d.lockMigrations(ctx, conn)
	if err != nil {
		return fmt.Errorf("store: migrate: %w", err)
	}
	defer func() {
		if unlockErr := unlock(); unlockErr != nil {
			err = errors.Join(err, fmt.Errorf("store: migrate: %w", unlockErr))
		}
	}()
	if _, err := conn.ExecContext(ctx, createMigrationsTable); err != nil {
		return fmt.Errorf("store: migrate: %w", err)
	}
	// Every migration not recorded is applied, in order: a database with a
	// gap (one a hand-made fix skipped) is repaired, not left half-built.
	applied := map[int]bool{}
	rows, err := conn.QueryContext(ctx, `SELECT version FROM schema_migrations`)
	if err != nil {
		return fmt.Errorf("store: migrate: %w", err)
	}
	current := 0
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			rows.Close()
			return fmt.Errorf("store: migrate: %w", err)
		}
		applied[v] = true
		current = max(current, v)
	}
	rows.Close()
	if latest := ms[len(ms)-1].version; current > latest {
		return fmt.Errorf("store: the database is at schema version %d but this copydesk only knows up to %d: use a newer copydesk", current, latest)
	}
	var pending []migration
	for _, m := range ms {
		if !applied[m.version] {
			pending = append(pending, m)
		}
	}
	if err := db.applyPending(ctx, conn, pending, len(applied) == 0); err != nil {
		return err
	}
	if db.OnPostgres() {
		return installChangeMarks(ctx, conn)
	}
	return nil
}

// applyPending brings the database up to date: an empty SQLite database
// from the baseline when it stands for every migration (store/baseline.go),
// any other by the pending migrations.
func (db *DB) applyPending(ctx context.Context, conn migrator, pending []migration, empty bool) error {
	if len(pending) == 0 {
		return nil
	}
	if db.d.Name() == "sqlite" && empty {
		ok, err := runBaseline(ctx, conn, pending, db.now())
		if err != nil {
			return err
		}
		if ok {
			db.wrote()
			return nil
		}
	}
	if err := runMigrations(ctx, db.d, conn, pending, db.now()); err != nil {
		return err
	}
	db.wrote()
	return nil
}

// createMigrationsTable makes the table that records applied migrations.
const createMigrationsTable = `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)`

// migrator is what runs migrations: a connection of its own.
type migrator interface {
	BeginTx(context.Context, *sql.TxOptions) (*sql.Tx, error)
	ExecContext(context.Context, string, ...any) (sql.Result, error)
	QueryRowContext(context.Context, string, ...any) *sql.Row
}

// applyMigrations runs ms on SQLite in order and records them, in one
// transaction: an upgrade that fails leaves the database as it was, and a
// first start commits once (one transaction per migration cost a fresh
// database a third more time: BenchmarkOpenFresh). It is how the live
// database is migrated and how the schema a backup must have is built (see
// expectedSchema), so the two cannot drift apart.
func applyMigrations(ctx context.Context, b migrator, ms []migration, now string) (err error) {
	reset, err := sqliteDialect{}.lockMigrations(ctx, b)
	if err != nil {
		return fmt.Errorf("store: migrate: %w", err)
	}
	defer func() {
		if resetErr := reset(); resetErr != nil {
			err = errors.Join(err, fmt.Errorf("store: migrate: %w", resetErr))
		}
	}()
	return runMigrations(ctx, sqliteDialect{}, b, ms, now)
}

// runMigrations is applyMigrations on any engine, its lock taken.
func runMigrations(ctx context.Context, d Dialect, b migrator, ms []migration, now string) error {
	tx, err := b.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: migrate: %w", err)
	}
	withIDs := slices.ContainsFunc(ms, func(m migration) bool { return m.version == idsMigration })
	for _, m := range ms {
		text, err := d.migrationSQL(m)
		if err != nil {
			return errors.Join(err, tx.Rollback())
		}
		if withIDs && m.version < idsMigration && d.Name() == "sqlite" {
			text = withAutoincrement(text)
		}
		if _, err := tx.ExecContext(ctx, text); err != nil {
			return errors.Join(fmt.Errorf("store: migration %s on %s: %w", m.name, d.Name(), err), tx.Rollback())
		}
		if step := d.goStep(m.version); step != nil {
			if err := step(ctx, tx); err != nil {
				return errors.Join(fmt.Errorf("store: migration %s: %w", m.name, err), tx.Rollback())
			}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
			m.version, m.name, now); err != nil {
			return errors.Join(fmt.Errorf("store: migration %s: %w", m.name, err), tx.Rollback())
		}
	}
	if err := d.finishMigrations(ctx, tx); err != nil {
		return errors.Join(fmt.Errorf("store: migrate: %w", err), tx.Rollback())
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: migrate: %w", err)
	}
	return nil
}

// foreignKeyCheck fails if any row references a row that does not exist.
func foreignKeyCheck(ctx context.Context, tx *sql.Tx) error {
	rows, err := tx.QueryContext(ctx, `PRAGMA foreign_key_check`)
	if err != nil {
		return err
	}
	defer rows.Close()
	if rows.Next() {
		var table, parent string
		var rowid sql.NullInt64
		var fk int
		if err := rows.Scan(&table, &rowid, &parent, &fk); err != nil {
			return err
		}
		return fmt.Errorf("row %d of %s references a missing row of %s", rowid.Int64, table, parent)
	}
	return rows.Err()
}

// parseTime reads a stored time; a malformed value is a bug, reported as zero.
func parseTime(s string) time.Time {
	t, err := time.Parse(TimeFormat, s)
	if err != nil {
		t, _ = time.Parse(time.RFC3339Nano, s)
	}
	return t.UTC()
}

func parseNullTime(s sql.NullString) *time.Time {
	if !s.Valid {
		return nil
	}
	t := parseTime(s.String)
	return &t
}

// variablesJSON is how {{name}} values are stored: a JSON object, {} for
// none. A map of strings always encodes.
func variablesJSON(vars map[string]string) string {
	if vars == nil {
		return "{}"
	}
	b, _ := json.Marshal(vars)
	return string(b)
}

func fmtTime(t time.Time) string { return t.UTC().Format(TimeFormat) }

// Page is a pagination request; Offset derives from it.
type Page struct {
	Page    int
	PerPage int
}

func (p Page) limit() int { return p.PerPage }
func (p Page) offset() int {
	if p.Page < 1 {
		return 0
	}
	return (p.Page - 1) * p.PerPage
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// likePattern escapes a user's text for use in LIKE ... ESCAPE '\'.
func likePattern(q string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(q) + "%"
}

// listQuery is one paginated list: what to count and read, under which
// conditions, in which order.
type listQuery struct {
	from    string   // table and alias, with joins the columns need
	count   string   // what to count over when it differs from from (no joins)
	where   []string // conditions, joined with AND
	args    []any    // their arguments
	columns string
	order   string
	what    string // for error messages: "users"
}

// children are the rows of one parent (a phrase's ideas, a source's
// items) as listChildren lists them.
type children struct {
	table, alias string            // "search_ideas", "i"
	parent       string            // the parent's column: "phrase_id"
	sorts        map[string]string // sort field to column
	byDefault    Sort              // the order of a list that asks none
	indexes      map[string]string // the index each sort field reads; "" for the others
	columns      string
	what         string // for error messages: "ideas"
}

// listChildren lists page p of the rows of parent, in sort's order (c's
// default when zero) through that order's index, narrowed by the further
// conditions where with their args.
func listChildren[T any](ctx context.Context, db *DB, c children, parent int64, sort Sort, where []string, args []any, p Page,
	scan func(rowScanner) (T, error)) ([]T, int, error) {
	if sort == (Sort{}) {
		sort = c.byDefault
	}
	order, err := sort.orderBy(c.sorts, "", c.alias+".id")
	if err != nil {
		return nil, 0, err
	}
	index, ok := c.indexes[sort.Field]
	if !ok {
		index = c.indexes[""]
	}
	from := c.table + " " + c.alias
	return listPage(ctx, db, listQuery{from: from + " INDEXED BY " + index, count: from, where: append([]string{c.alias + "." + c.parent + " = ?"}, where...),
		args: append([]any{parent}, args...), columns: c.columns, order: order, what: c.what}, p, scan)
}

// listPage counts what matches q and reads page p of it, newest or first
// as q.order says, scanning each row with scan.
func listPage[T any](ctx context.Context, db *DB, q listQuery, p Page, scan func(rowScanner) (T, error)) ([]T, int, error) {
	cond := ""
	if len(q.where) > 0 {
		cond = " WHERE " + strings.Join(q.where, " AND ")
	}
	countFrom := q.from
	if q.count != "" {
		countFrom = q.count
	}
	var total int
	if err := db.listRow(ctx, `SELECT COUNT(*) FROM `+countFrom+cond, q.args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("store: count %s: %w", q.what, err)
	}
	args := append(append([]any(nil), q.args...), p.limit(), p.offset())
	rows, err := db.listRows(ctx, `SELECT `+q.columns+` FROM `+q.from+cond+` ORDER BY `+q.order+` LIMIT ? OFFSET ?`, args...)
	if err != nil {
		return nil, 0, fmt.Errorf("store: list %s: %w", q.what, err)
	}
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, 0, fmt.Errorf("store: list %s: %w", q.what, err)
		}
		out = append(out, v)
	}
	return out, total, rows.Err()
}

// maxStmts bounds the list statements in the cache. The text of a list
// query varies with its filters and with the length of its id lists, so
// its shapes are many in principle though few in practice; past this many,
// a new shape is prepared each time it runs.
const maxStmts = 500

// listStmt is readStmt for a list query: nil once the cache is full, or
// when the query does not prepare (running it reports why).
func (db *DB) listStmt(ctx context.Context, query string) *sql.Stmt {
	if st, ok := db.stmts.Load(query); ok {
		return st.(*sql.Stmt)
	}
	if db.nstmts.Load() >= maxStmts {
		return nil
	}
	st, err := db.readStmt(ctx, query)
	if err != nil {
		return nil
	}
	return st
}

// listRows runs a list query on the read pool, prepared once. Every list
// query goes through it or listRow, which tell db.listed.
func (db *DB) listRows(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if db.listed != nil {
		db.listed(query, args)
	}
	if st := db.listStmt(ctx, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return db.r.QueryContext(ctx, query, args...)
}

// ids reads the column of ids query selects, like listRows.
func (db *DB) ids(ctx context.Context, query string, args ...any) ([]int64, error) {
	rows, err := db.listRows(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("store: list ids: %w", err)
	}
	return scanIDs(rows)
}

// scanIDs reads a column of ids and closes rows, so that a transaction
// may go on with its next statement; never nil.
func scanIDs(rows *sql.Rows) ([]int64, error) {
	defer rows.Close()
	out := []int64{}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// listRow runs a list's one-row query (its count) like listRows.
func (db *DB) listRow(ctx context.Context, query string, args ...any) *sql.Row {
	if db.listed != nil {
		db.listed(query, args)
	}
	if st := db.listStmt(ctx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return db.r.QueryRowContext(ctx, query, args...)
}
