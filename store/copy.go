package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strings"
	"sync"
	"time"
)

// The table-copy engine: CopyTo copies every table of an installation from
// one store to another at the same schema version, whatever the engines
// (SQLite or PostgreSQL on either side). It is what `copydesk migrate`
// runs, and what a backup of a PostgreSQL database is made with (a fresh
// SQLite file filled by CopyTo: the same portable snapshot as on SQLite).

// TableCopy is what CopyTo did to one table, and what it found after.
type TableCopy struct {
	Table string
	Rows  int64
	// Checksum sums a SHA-256 of every row, its columns as Go values (an
	// integer, a float, text or bytes, NULL) so that both engines compute
	// the same for the same content; the sum makes it independent of the
	// order rows are read in.
	Checksum string
}

// CopyReport is what CopyTo copied, table by table in the order copied.
type CopyReport struct {
	SchemaVersion int
	Tables        []TableCopy
}

// seeded are the rows the migrations themselves write into a new
// database (the built-in archetypes): a target holding only those counts as
// empty, and they are replaced by the source's.
// (Functions, not maps: a package-level map is built at every start, and
// the binary's init has a budget: TestStartupInitBudget.)
func seeded(table string) (where string, ok bool) {
	if table == "archetypes" {
		return "builtin IS NULL", true
	}
	return "", false
}

// backRefs are the references that close a cycle of foreign keys (a
// conversation's current message, which belongs to the conversation): the
// table is copied with them NULL, and they are set once every table is
// copied. The ordering ignores them.
func backRefs(table string) []string {
	if table == "chat_conversations" {
		return []string{"current_message_id"}
	}
	return nil
}

// CopyTo copies the content of every table of db into dst, which must be at
// the same schema version and empty (KindConflict naming a table that has
// rows otherwise). It reads db inside one read transaction (REPEATABLE READ
// on PostgreSQL), so the copy is what was committed when it began, writes
// dst in one transaction in foreign-key order, sets PostgreSQL's identity
// sequences past the copied ids, and then verifies: the row count and the
// checksum of every table, read back from dst, must equal the source's.
func (db *DB) CopyTo(ctx context.Context, dst *DB) (*CopyReport, error) {
	return db.copyInto(ctx, dst, false)
}

// copyInto is CopyTo; with replace, dst (PostgreSQL) need not be empty:
// every table it copies is emptied first, in the same transaction.
func (db *DB) copyInto(ctx context.Context, dst *DB, replace bool) (*CopyReport, error) {
	sv, err := db.schemaVersion(ctx)
	if err != nil {
		return nil, err
	}
	dv, err := dst.schemaVersion(ctx)
	if err != nil {
		return nil, err
	}
	if sv != dv {
		return nil, Conflict("the source is at schema version %d and the target at %d: open both with the same copydesk first", sv, dv)
	}
	src, err := db.r.BeginTx(ctx, &sql.TxOptions{Isolation: db.readIsolation(), ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("store: copy: %w", err)
	}
	defer func() { _ = src.Rollback() }() // after a commit: sql.ErrTxDone
	tables, err := copyPlan(ctx, db, src, dst)
	if err != nil {
		return nil, err
	}
	if !replace {
		if err := dst.requireEmpty(ctx, tables); err != nil {
			return nil, err
		}
	}
	tx, err := dst.w.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("store: copy: %w", err)
	}
	defer func() { _ = tx.Rollback() }() // after a commit: sql.ErrTxDone
	if replace {
		if err := truncateAll(ctx, tx, tables); err != nil {
			return nil, err
		}
	}
	if !dst.OnPostgres() {
		// A self-reference may point forward; checked at commit.
		if _, err := tx.ExecContext(ctx, `PRAGMA defer_foreign_keys = ON`); err != nil {
			return nil, fmt.Errorf("store: copy: %w", err)
		}
	}
	report := &CopyReport{SchemaVersion: sv}
	var later []func() error
	for _, t := range tables {
		tc, fix, err := copyTable(ctx, src, tx, t)
		if err != nil {
			return nil, err
		}
		report.Tables = append(report.Tables, tc)
		later = append(later, fix...)
	}
	for _, fix := range later {
		if err := fix(); err != nil {
			return nil, fmt.Errorf("store: copy: set a back reference: %w", err)
		}
	}
	// Rows the triggers of a later table wrote into an earlier one
	// (conversations from messages) were replaced by the source's when
	// that table was copied: copyTable empties each table first, so the
	// order above puts the tables a trigger writes after the table it
	// fires on.
	if dst.OnPostgres() {
		if err := resetSequences(ctx, tx); err != nil {
			return nil, err
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("store: copy: commit: %w", err)
	}
	dst.wrote()
	for _, tc := range report.Tables {
		var cols []string
		for _, t := range tables {
			if t.name == tc.Table {
				cols = t.cols
			}
		}
		n, sum, err := tableChecksum(ctx, dst.r, tc.Table, cols)
		if err != nil {
			return nil, err
		}
		if n != tc.Rows || sum != tc.Checksum {
			return report, fmt.Errorf("store: copy: verification failed for %s: %d rows (checksum %s) copied, %d rows (checksum %s) read back", tc.Table, tc.Rows, tc.Checksum, n, sum)
		}
	}
	return report, nil
}

// Checksums are the row count and checksum of every table of db, as CopyTo
// computes them: to compare two installations.
func (db *DB) Checksums(ctx context.Context) ([]TableCopy, error) {
	tx, err := db.r.BeginTx(ctx, &sql.TxOptions{Isolation: db.readIsolation(), ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer func() { _ = tx.Rollback() }() // after a commit: sql.ErrTxDone
	tables, err := copyPlan(ctx, db, tx, db)
	if err != nil {
		return nil, err
	}
	out := make([]TableCopy, 0, len(tables))
	for _, t := range tables {
		n, sum, err := tableChecksum(ctx, tx, t.name, t.cols)
		if err != nil {
			return nil, err
		}
		out = append(out, TableCopy{Table: t.name, Rows: n, Checksum: sum})
	}
	slices.SortFunc(out, func(a, b TableCopy) int { return strings.Compare(a.Table, b.Table) })
	return out, nil
}

func (db *DB) readIsolation() sql.IsolationLevel {
	if db.OnPostgres() {
		return sql.LevelRepeatableRead
	}
	return sql.LevelDefault // a SQLite read transaction is one snapshot
}

func (db *DB) schemaVersion(ctx context.Context) (int, error) {
	vs, err := recordedVersions(ctx, db.r)
	if err != nil || len(vs) == 0 {
		return 0, fmt.Errorf("store: read the schema version: %v", err)
	}
	return vs[len(vs)-1], nil
}

type copyTableSpec struct {
	name string
	cols []string
}

// copyPlan lists the tables to copy, in foreign-key order (a table after
// those it refers to), each with the columns both sides have and store
// (not generated, not a full-text index). schema_migrations is not copied:
// both sides are at the same version.
func copyPlan(ctx context.Context, sdb *DB, src queryer, dst *DB) ([]copyTableSpec, error) {
	stables, err := sdb.d.copyTables(ctx, src)
	if err != nil {
		return nil, fmt.Errorf("store: copy: list the source's tables: %w", err)
	}
	dtables, err := dst.d.copyTables(ctx, dst.r)
	if err != nil {
		return nil, fmt.Errorf("store: copy: list the target's tables: %w", err)
	}
	deps := map[string][]string{}
	var names []string
	for name, scols := range stables {
		if name == "schema_migrations" {
			continue
		}
		dcols, ok := dtables[name]
		if !ok {
			return nil, fmt.Errorf("store: copy: the target has no table %s", name)
		}
		for _, c := range scols.cols {
			if !slices.Contains(dcols.cols, c) {
				return nil, fmt.Errorf("store: copy: the target's table %s has no column %s", name, c)
			}
		}
		names = append(names, name)
		deps[name] = dcols.refs
	}
	slices.Sort(names)
	// Depth-first: each table after the tables it refers to.
	var out []copyTableSpec
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(string)
	visit = func(n string) {
		if state[n] != 0 {
			return
		}
		state[n] = 1
		for _, d := range deps[n] {
			if n == "chat_conversations" && d == "chat_messages" {
				continue // backRefs
			}
			if _, ok := stables[d]; ok && d != n {
				visit(d)
			}
		}
		state[n] = 2
		out = append(out, copyTableSpec{name: n, cols: stables[n].cols})
	}
	for _, n := range names {
		visit(n)
	}
	// A table written by a trigger on another (conversations, by
	// messages') goes after it, so the source's rows replace the
	// trigger's: move it to the end (it refers only to users).
	if i := slices.IndexFunc(out, func(t copyTableSpec) bool { return t.name == "conversations" }); i >= 0 {
		t := out[i]
		out = append(slices.Delete(out, i, i+1), t)
	}
	return out, nil
}

// tableInfo is a table's copied columns and the tables it refers to.
type tableInfo struct {
	cols []string
	refs []string
}

func (sqliteDialect) copyTables(ctx context.Context, q queryer) (map[string]tableInfo, error) {
	rows, err := q.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'
		AND sql NOT LIKE 'CREATE VIRTUAL%'`)
	if err != nil {
		return nil, err
	}
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return nil, err
		}
		names = append(names, n)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	// The shadow tables of a full-text index are named after it.
	var virtual []string
	if err := queryStrings(ctx, q, &virtual, `SELECT name FROM sqlite_master WHERE sql LIKE 'CREATE VIRTUAL%'`); err != nil {
		return nil, err
	}
	out := map[string]tableInfo{}
	for _, n := range names {
		if slices.ContainsFunc(virtual, func(v string) bool { return strings.HasPrefix(n, v+"_") }) {
			continue
		}
		var ti tableInfo
		if err := queryStrings(ctx, q, &ti.cols, `SELECT name FROM pragma_table_xinfo(?) WHERE hidden = 0 ORDER BY cid`, n); err != nil {
			return nil, err
		}
		if err := queryStrings(ctx, q, &ti.refs, `SELECT DISTINCT "table" FROM pragma_foreign_key_list(?)`, n); err != nil {
			return nil, err
		}
		out[n] = ti
	}
	return out, nil
}

func (*postgresDialect) copyTables(ctx context.Context, q queryer) (map[string]tableInfo, error) {
	var names []string
	// copydesk_changes is each database's own count of changes for the
	// instances' caches (changes_postgres.go), not the installation's data.
	if err := queryStrings(ctx, q, &names, `SELECT table_name FROM information_schema.tables
		WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' AND table_name <> ?`, changesTable); err != nil {
		return nil, err
	}
	out := map[string]tableInfo{}
	for _, n := range names {
		var ti tableInfo
		// Generated columns (the full-text vectors) are computed again.
		if err := queryStrings(ctx, q, &ti.cols, `SELECT column_name FROM information_schema.columns
			WHERE table_schema = current_schema() AND table_name = ? AND is_generated = 'NEVER'
			AND data_type <> 'tsvector' ORDER BY ordinal_position`, n); err != nil {
			return nil, err
		}
		if err := queryStrings(ctx, q, &ti.refs, `SELECT DISTINCT r.relname FROM pg_constraint c
			JOIN pg_class t ON t.oid = c.conrelid JOIN pg_class r ON r.oid = c.confrelid
			JOIN pg_namespace s ON s.oid = t.relnamespace
			WHERE c.contype = 'f' AND s.nspname = current_schema() AND t.relname = ?`, n); err != nil {
			return nil, err
		}
		out[n] = ti
	}
	return out, nil
}

func queryStrings(ctx context.Context, q queryer, out *[]string, query string, args ...any) error {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return err
		}
		*out = append(*out, s)
	}
	return rows.Err()
}

// requireEmpty refuses a target that holds rows (beyond what the
// migrations write), naming the first table that does.
func (db *DB) requireEmpty(ctx context.Context, tables []copyTableSpec) error {
	for _, t := range tables {
		where := ""
		if w, ok := seeded(t.name); ok {
			where = " WHERE " + w
		}
		var n int64
		if err := db.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM "`+t.name+`"`+where).Scan(&n); err != nil {
			return fmt.Errorf("store: copy: count the target's %s: %w", t.name, err)
		}
		if n > 0 {
			return Conflict("the target is not empty: its table %s has %d rows; migrate into a new, empty database", t.name, n)
		}
	}
	return nil
}

// truncateAll empties every table of the plan at once (PostgreSQL: one
// TRUNCATE names them all, so the foreign keys between them do not
// order it), restarting their identities; resetSequences sets them past
// the copied ids after.
func truncateAll(ctx context.Context, tx *sql.Tx, tables []copyTableSpec) error {
	names := make([]string, len(tables))
	for i, t := range tables {
		names[i] = t.name
	}
	if _, err := tx.ExecContext(ctx, `TRUNCATE `+quoted(names)+` RESTART IDENTITY`); err != nil {
		return fmt.Errorf("store: empty the target's tables: %w", err)
	}
	return nil
}

func quoted(cols []string) string {
	q := make([]string, len(cols))
	for i, c := range cols {
		q[i] = `"` + c + `"`
	}
	return strings.Join(q, ", ")
}

// copyTable empties t in the target (rows the migrations or a trigger
// wrote) and copies the source's rows into it, computing the checksum of
// what it read.
func copyTable(ctx context.Context, src *sql.Tx, dst *sql.Tx, t copyTableSpec) (tc TableCopy, later []func() error, err error) {
	tc = TableCopy{Table: t.name}
	var back []int // the positions of backRefs columns
	for i, c := range t.cols {
		if slices.Contains(backRefs(t.name), c) {
			back = append(back, i)
		}
	}
	if _, err := dst.ExecContext(ctx, `DELETE FROM "`+t.name+`"`); err != nil {
		return tc, nil, fmt.Errorf("store: copy %s: %w", t.name, err)
	}
	cols := quoted(t.cols)
	rows, err := src.QueryContext(ctx, `SELECT `+cols+` FROM "`+t.name+`" ORDER BY 1`)
	if err != nil {
		return tc, nil, fmt.Errorf("store: copy %s: read: %w", t.name, err)
	}
	defer rows.Close()
	marks := strings.TrimSuffix(strings.Repeat("?, ", len(t.cols)), ", ")
	ins, err := dst.PrepareContext(ctx, `INSERT INTO "`+t.name+`" (`+cols+`) VALUES (`+marks+`)`)
	if err != nil {
		return tc, nil, fmt.Errorf("store: copy %s: %w", t.name, err)
	}
	defer ins.Close()
	vals := make([]any, len(t.cols))
	ptrs := make([]any, len(t.cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var sum rowSum
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return tc, nil, fmt.Errorf("store: copy %s: read: %w", t.name, err)
		}
		sum.add(vals)
		args := vals
		if len(back) > 0 {
			args = slices.Clone(vals)
			for _, i := range back {
				if args[i] != nil {
					id, col, v := args[0], t.cols[i], args[i]
					later = append(later, func() error {
						_, err := dst.ExecContext(ctx, `UPDATE "`+t.name+`" SET "`+col+`" = ? WHERE "`+t.cols[0]+`" = ?`, v, id)
						return err
					})
				}
				args[i] = nil
			}
		}
		if _, err := ins.ExecContext(ctx, args...); err != nil {
			return tc, nil, fmt.Errorf("store: copy %s: write: %w", t.name, err)
		}
		tc.Rows++
	}
	if err := rows.Err(); err != nil {
		return tc, nil, fmt.Errorf("store: copy %s: read: %w", t.name, err)
	}
	tc.Checksum = sum.String()
	return tc, later, nil
}

func tableChecksum(ctx context.Context, q queryer, table string, cols []string) (int64, string, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+quoted(cols)+` FROM "`+table+`"`)
	if err != nil {
		return 0, "", fmt.Errorf("store: checksum %s: %w", table, err)
	}
	defer rows.Close()
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var sum rowSum
	var n int64
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return 0, "", fmt.Errorf("store: checksum %s: %w", table, err)
		}
		sum.add(vals)
		n++
	}
	return n, sum.String(), rows.Err()
}

// rowSum adds up a SHA-256 of each row modulo 2^256: the same rows give
// the same sum in any order.
type rowSum struct{ n big.Int }

// mod256 is 2^256, made when first needed (not at every start).
var mod256 = sync.OnceValue(func() *big.Int { return new(big.Int).Lsh(big.NewInt(1), 256) })

func (s *rowSum) add(vals []any) {
	h := sha256.New()
	var b [9]byte
	for _, v := range vals {
		switch x := v.(type) {
		case nil:
			h.Write([]byte{0})
		case int64:
			b[0] = 1
			binary.BigEndian.PutUint64(b[1:], uint64(x))
			h.Write(b[:])
		case int32:
			b[0] = 1
			binary.BigEndian.PutUint64(b[1:], uint64(int64(x)))
			h.Write(b[:])
		case bool:
			b[0] = 1
			binary.BigEndian.PutUint64(b[1:], uint64(boolInt(x)))
			h.Write(b[:])
		case float64:
			if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
				// SQLite keeps a whole REAL as an integer in some
				// expressions: the value, not the storage, counts.
				b[0] = 1
				binary.BigEndian.PutUint64(b[1:], uint64(int64(x)))
			} else {
				b[0] = 2
				binary.BigEndian.PutUint64(b[1:], math.Float64bits(x))
			}
			h.Write(b[:])
		case string:
			s.text(h, []byte(x))
		case []byte:
			s.text(h, x)
		case time.Time:
			s.text(h, []byte(x.UTC().Format(TimeFormat)))
		default:
			s.text(h, fmt.Appendf(nil, "%v", x))
		}
	}
	s.n.Add(&s.n, new(big.Int).SetBytes(h.Sum(nil)))
	s.n.Mod(&s.n, mod256())
}

// text and bytes hash alike: SQLite returns some TEXT as bytes.
func (*rowSum) text(h interface{ Write([]byte) (int, error) }, p []byte) {
	var b [9]byte
	b[0] = 3
	binary.BigEndian.PutUint64(b[1:], uint64(len(p)))
	_, _ = h.Write(b[:]) // a hash's Write never fails
	_, _ = h.Write(p)
}

func (s *rowSum) String() string {
	var b [32]byte
	s.n.FillBytes(b[:])
	return hex.EncodeToString(b[:8])
}

// resetSequences sets every identity column's sequence past the largest
// id copied, so that the next row written gets a new id.
func resetSequences(ctx context.Context, tx *sql.Tx) error {
	var tables []string
	if err := queryStrings(ctx, tx, &tables, `SELECT table_name FROM information_schema.columns
		WHERE table_schema = current_schema() AND column_name = 'id' AND is_identity = 'YES'`); err != nil {
		return fmt.Errorf("store: copy: list the identity columns: %w", err)
	}
	for _, t := range tables {
		if _, err := tx.ExecContext(ctx, `SELECT setval(pg_get_serial_sequence(?, 'id'), COALESCE(MAX(id), 0) + 1, false) FROM "`+t+`"`,
			`"`+t+`"`); err != nil {
			return fmt.Errorf("store: copy: reset the sequence of %s: %w", t, err)
		}
	}
	return nil
}
