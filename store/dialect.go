package store

import (
	"context"
	"database/sql"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Dialect is the seam between the store's SQL and the engine that runs it.
// Every query of the store is written once, in SQLite's dialect; a Dialect
// says what differs on its engine:
//
//   - Query turns a query's text into the engine's (placeholders, index
//     hints, INSERT OR IGNORE, case-insensitive LIKE). On PostgreSQL it runs
//     inside the driver's connection (pgConn), so every statement of the
//     store — through db.w, db.r, a *sql.Tx or a prepared statement — is
//     translated in that one place, once per query text;
//   - the few things a text translation cannot reach are methods the
//     queries call: chat search (FTS5 or tsvector), JSON fields, the
//     migrations' text and lock, the schema as the restore check reads it,
//     the planner's upkeep, and the errors that mean a broken rule.
//
// Times are the same TEXT (TimeFormat) on both engines, booleans the same
// INTEGER 0/1, so values cross engines unchanged.
type Dialect interface {
	// Name is "sqlite" or "postgres".
	Name() string
	// Query is the engine's text of a store query.
	Query(query string) string
	// ChatSearch is the condition that a conversation (alias c) matches
	// the words of q in its title or in one of its messages, with its
	// arguments; "" when q holds no word.
	ChatSearch(q string) (cond string, args []any)
	// JSONText is the text at path (dotted: "astro.project_path") of the
	// JSON held in column, NULL when absent.
	JSONText(column, path string) string
	// JSONHas is the condition that the JSON array of strings held in
	// column contains the value of the placeholder arg ("?", "?1").
	JSONHas(column, arg string) string
	// RandomHex is an expression of n random bytes as lowercase hex,
	// a new value for each row.
	RandomHex(n int) string

	// migrationSQL is migration m's text on this engine.
	migrationSQL(m migration) (string, error)
	// lockMigrations makes conn the only migrator of the database until
	// the returned function runs; it also sets what the migrations need
	// on conn, and the returned function sets it back.
	lockMigrations(ctx context.Context, conn migrator) (func() error, error)
	// finishMigrations runs after the migrations of one start, before they
	// commit: on SQLite it fails when a row references a missing row.
	finishMigrations(ctx context.Context, tx *sql.Tx) error
	// goStep is the Go part of migration version, if this engine runs it.
	goStep(version int) func(ctx context.Context, tx *sql.Tx) error
	// optimize refreshes the planner's statistics (Open and Close).
	optimize(ctx context.Context, w *sql.DB) error
	// readSchema reads the tables, indexes, triggers and views.
	readSchema(ctx context.Context, q queryer) (map[string]schemaObject, error)
	// skipLocked ends the subquery that picks a row to claim: on an engine
	// with row locks, rows another transaction holds are passed over.
	skipLocked() string
	// lockKey makes tx the only holder of key until it ends, among the
	// instances sharing the database (on SQLite, the single writer is).
	lockKey(ctx context.Context, tx *sql.Tx, key string) error
	// copyTables lists the tables CopyTo copies (copy.go).
	copyTables(ctx context.Context, q queryer) (map[string]tableInfo, error)
}

// sqliteDialect is the engine the queries are written for: Query is the
// identity.
type sqliteDialect struct{}

func (sqliteDialect) Name() string              { return "sqlite" }
func (sqliteDialect) Query(query string) string { return query }

func (sqliteDialect) ChatSearch(q string) (string, []any) {
	fq := ftsQuery(q)
	if fq == "" {
		return "", nil
	}
	return `(c.id IN (SELECT rowid FROM chat_title_search WHERE chat_title_search MATCH ?)
			OR c.id IN (SELECT m.conversation_id FROM chat_message_search s JOIN chat_messages m ON m.id = s.rowid
				WHERE chat_message_search MATCH ?))`, []any{fq, fq}
}

func (sqliteDialect) JSONText(column, path string) string {
	return "json_extract(" + column + ", '$." + path + "')"
}

func (sqliteDialect) JSONHas(column, arg string) string {
	return "EXISTS (SELECT 1 FROM json_each(" + column + ") j WHERE j.value = " + arg + ")"
}

func (sqliteDialect) RandomHex(n int) string {
	return "lower(hex(randomblob(" + strconv.Itoa(n) + ")))"
}

func (sqliteDialect) migrationSQL(m migration) (string, error) { return m.sql, nil }

func (sqliteDialect) lockMigrations(ctx context.Context, conn migrator) (func() error, error) {
	// Foreign keys are off while the migrations run, as SQLite's procedure
	// for rebuilding a table asks (a table dropped to be made again must
	// not cascade to its children), and checked whole before the commit;
	// legacy_alter_table keeps a rename to the renamed table alone. Both
	// can only change outside a transaction, on this one connection. The
	// one writer connection is the lock.
	if _, err := conn.ExecContext(ctx, `PRAGMA foreign_keys = OFF; PRAGMA legacy_alter_table = ON`); err != nil {
		return nil, err
	}
	return func() error {
		_, err := conn.ExecContext(context.WithoutCancel(ctx), `PRAGMA foreign_keys = ON; PRAGMA legacy_alter_table = OFF`)
		return err
	}, nil
}

func (sqliteDialect) skipLocked() string { return "" }

func (sqliteDialect) lockKey(context.Context, *sql.Tx, string) error { return nil }

func (sqliteDialect) finishMigrations(ctx context.Context, tx *sql.Tx) error {
	return foreignKeyCheck(ctx, tx)
}

func (sqliteDialect) goStep(version int) func(ctx context.Context, tx *sql.Tx) error {
	return goSteps[version]
}

func (sqliteDialect) optimize(ctx context.Context, w *sql.DB) error {
	_, err := w.ExecContext(ctx, `PRAGMA optimize=0x10002`)
	return err
}

func (sqliteDialect) readSchema(ctx context.Context, q queryer) (map[string]schemaObject, error) {
	return readSchema(ctx, q)
}

// postgresDialect runs the store on PostgreSQL (15 or newer).
type postgresDialect struct {
	queries sync.Map // SQLite text -> PostgreSQL text
	// nullable are the names of the columns that may be NULL in some
	// table (see nullsAsSQLite); set once the schema is migrated.
	nullable atomic.Pointer[map[string]bool]
}

// setNullable records the nullable column names and forgets the queries
// translated without them.
func (d *postgresDialect) setNullable(names map[string]bool) {
	d.nullable.Store(&names)
	d.queries.Clear()
}

func (*postgresDialect) Name() string { return "postgres" }

// Query translates once per text: the store's queries are constants or
// built from a few shapes, so the cache stays small.
func (d *postgresDialect) Query(query string) string {
	if q, ok := d.queries.Load(query); ok {
		return q.(string)
	}
	q := pgQuery(query)
	if n := d.nullable.Load(); n != nil {
		q = nullsAsSQLite(q, *n)
	}
	d.queries.Store(query, q)
	return q
}

// lazyRegexp compiles expr on first use: most starts translate nothing
// (SQLite), and init stays cheap (footprint_e2e_test.go).
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}

var (
	// indexHint is SQLite's INDEXED BY and NOT INDEXED: PostgreSQL's
	// planner takes no hints.
	indexHint = lazyRegexp(`\s+(INDEXED\s+BY\s+\w+|NOT\s+INDEXED\b)`)
	// likeOp is a LIKE, ASCII case-insensitive on SQLite: ILIKE under the
	// "C" collation is the same on PostgreSQL (and works on a column whose
	// collation is nocase, which LIKE refuses).
	likeOp = lazyRegexp(`([\w.]+)\s+LIKE\s`)
	// blobLiteral is SQLite's x'00ff', a bit string on PostgreSQL.
	blobLiteral = lazyRegexp(`\b[xX]'([0-9a-fA-F]*)'`)
	// insertOrIgnore is SQLite's INSERT OR IGNORE.
	insertOrIgnore = lazyRegexp(`^(\s*)INSERT\s+OR\s+IGNORE\s+`)
)

// pgQuery is the PostgreSQL text of a query written for SQLite.
func pgQuery(q string) string {
	q = ddlPragma().ReplaceAllString(q, "") // SQLite's settings: nothing to set on PostgreSQL
	q = indexHint().ReplaceAllString(q, "")
	q = blobLiteral().ReplaceAllString(q, `'\x$1'::bytea`)
	q = scalarMinMax(q)
	q = likeOp().ReplaceAllStringFunc(q, func(m string) string {
		sub := likeOp().FindStringSubmatch(m)
		if strings.EqualFold(sub[1], "NOT") {
			return m
		}
		return sub[1] + ` COLLATE "C" ILIKE `
	})
	if insertOrIgnore().MatchString(q) {
		q = insertOrIgnore().ReplaceAllString(q, "${1}INSERT ")
		if i := strings.LastIndex(strings.ToUpper(q), " RETURNING "); i >= 0 {
			q = q[:i] + " ON CONFLICT DO NOTHING" + q[i:]
		} else {
			q = strings.TrimRight(q, "; \t\n") + " ON CONFLICT DO NOTHING"
		}
	}
	return numberPlaceholders(q)
}

var (
	orderBy   = lazyRegexp(`(?i)\bORDER\s+BY\s`)
	orderEnd  = lazyRegexp(`(?i)\s(LIMIT|OFFSET|RETURNING)\s`)
	orderTerm = lazyRegexp(`(?i)^\s*([\w.]+)(\s+COLLATE\s+\w+)?(\s+(ASC|DESC))?\s*$`)
)

// nullsAsSQLite makes the order of NULLs SQLite's: first going up, last
// going down (PostgreSQL's is the reverse), for the ORDER BY terms that
// are a column that may be NULL. Other terms keep their order as written,
// so that an index in that order still serves it.
func nullsAsSQLite(q string, nullable map[string]bool) string {
	locs := orderBy().FindAllStringIndex(q, -1)
	for k := len(locs) - 1; k >= 0; k-- {
		start := locs[k][1]
		end := len(q)
		if m := orderEnd().FindStringIndex(q[start:]); m != nil {
			end = start + m[0]
		}
		depth, changed := 0, false
		var terms []string
		last := start
		for i := start; i < end; i++ {
			switch q[i] {
			case '(':
				depth++
			case ')':
				depth--
			case ',':
				if depth == 0 {
					terms = append(terms, q[last:i])
					last = i + 1
				}
			}
			if depth < 0 { // the ORDER BY of a subquery ends here
				end = i
				break
			}
		}
		terms = append(terms, q[last:end])
		for i, t := range terms {
			m := orderTerm().FindStringSubmatch(t)
			if m == nil {
				continue
			}
			col := m[1][strings.LastIndexByte(m[1], '.')+1:]
			if !nullable[col] {
				continue
			}
			if strings.EqualFold(m[4], "DESC") {
				terms[i] = strings.TrimRight(t, " \t\n") + " NULLS LAST"
			} else {
				terms[i] = strings.TrimRight(t, " \t\n") + " NULLS FIRST"
			}
			if strings.HasSuffix(t, " ") {
				terms[i] += " "
			}
			changed = true
		}
		if changed {
			q = q[:start] + strings.Join(terms, ",") + q[end:]
		}
	}
	return q
}

// numberPlaceholders turns each ? outside quotes and comments into $1, $2...
// and each ?NNN into $NNN.
func numberPlaceholders(q string) string {
	if !strings.Contains(q, "?") {
		return q
	}
	var b strings.Builder
	b.Grow(len(q) + 16)
	n := 0
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case c == '\'' || c == '"':
			j := i + 1
			for j < len(q) && q[j] != c {
				j++
			}
			b.WriteString(q[i:min(j+1, len(q))])
			i = j
		case c == '-' && i+1 < len(q) && q[i+1] == '-':
			j := strings.IndexByte(q[i:], '\n')
			if j < 0 {
				j = len(q) - i
			}
			b.WriteString(q[i : i+j])
			i += j - 1
		case c == '?':
			j := i + 1
			for j < len(q) && q[j] >= '0' && q[j] <= '9' {
				j++
			}
			if j > i+1 { // ?NNN: the NNNth argument, as $NNN
				k, _ := strconv.Atoi(q[i+1 : j])
				n = max(n, k)
				b.WriteByte('$')
				b.WriteString(q[i+1 : j])
				i = j - 1
				continue
			}
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func (*postgresDialect) ChatSearch(q string) (string, []any) {
	tq := tsQuery(q)
	if tq == "" {
		return "", nil
	}
	return `(c.title_search @@ to_tsquery('simple', copydesk_unaccent(?))
			OR c.id IN (SELECT m.conversation_id FROM chat_messages m WHERE m.content_search @@ to_tsquery('simple', copydesk_unaccent(?))))`, []any{tq, tq}
}

// tsQuery is ftsQuery for PostgreSQL: every word a quoted prefix, all
// required ('sourd':* & 'bread':*). Words hold letters, digits and marks
// only, so nothing of the user's is tsquery syntax.
func tsQuery(q string) string {
	var terms []string
	for _, w := range ftsWords(q) {
		terms = append(terms, "'"+w+"':*")
	}
	return strings.Join(terms, " & ")
}

func (*postgresDialect) JSONText(column, path string) string {
	return "(" + column + "::jsonb #>> '{" + strings.ReplaceAll(path, ".", ",") + "}')"
}

func (*postgresDialect) JSONHas(column, arg string) string {
	return "EXISTS (SELECT 1 FROM jsonb_array_elements_text(" + column + "::jsonb) j WHERE j = " + arg + ")"
}

// RandomHex takes its bytes from md5s of random UUIDs (PostgreSQL's core
// has no random bytes without pgcrypto; a UUID v4 holds 122 random bits).
func (*postgresDialect) RandomHex(n int) string {
	var parts []string
	for left := 2 * n; left > 0; left -= 32 {
		parts = append(parts, "substr(md5(gen_random_uuid()::text), 1, "+strconv.Itoa(min(left, 32))+")")
	}
	return strings.Join(parts, " || ")
}

func (*postgresDialect) goStep(version int) func(ctx context.Context, tx *sql.Tx) error {
	if version == idsMigration {
		return nil // identity columns never give an id twice
	}
	return goSteps[version]
}

func (*postgresDialect) optimize(ctx context.Context, w *sql.DB) error {
	return nil // autovacuum keeps the statistics
}

func (*postgresDialect) skipLocked() string { return " FOR UPDATE SKIP LOCKED" }

func (*postgresDialect) lockKey(ctx context.Context, tx *sql.Tx, key string) error {
	_, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtext('copydesk'), hashtext(?))`, key)
	return err
}

func (*postgresDialect) finishMigrations(ctx context.Context, tx *sql.Tx) error {
	// PostgreSQL checks every reference as it is written; what is left is
	// the identity sequences of rows a migration copied with their ids.
	return syncIdentities(ctx, tx)
}

// Dialect is the engine this database runs on.
func (db *DB) Dialect() Dialect { return db.d }
