package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// A backup is refused unless its schema (sqlite_master: tables, indexes,
// triggers, views) is exactly what copydesk's migrations create for the
// versions it records. The file passes every other check whatever it
// holds, so without this an added trigger or view would be restored and
// run inside copydesk, and a dropped table would turn routes into 500s.

// schemaObject is one row of sqlite_master, its SQL normalised.
type schemaObject struct {
	Type, Name, Table, SQL string
}

func (o schemaObject) key() string { return o.Type + " " + o.Name }

// describe names the object for a person: `trigger "x" on sessions`.
func (o schemaObject) describe() string {
	s := fmt.Sprintf("%s %q", o.Type, o.Name)
	if (o.Type == "index" || o.Type == "trigger") && o.Table != "" {
		s += " on " + o.Table
	}
	return s
}

// readSchema reads every object of a database's sqlite_master.
func readSchema(ctx context.Context, q queryer) (map[string]schemaObject, error) {
	rows, err := q.QueryContext(ctx, `SELECT type, name, tbl_name, sql FROM sqlite_master`)
	if err != nil {
		return nil, err
	}
	return scanSchema(rows)
}

// scanSchema reads rows of (type, name, table, SQL), the schema of either
// engine, by key, each SQL normalized for comparing.
func scanSchema(rows *sql.Rows) (map[string]schemaObject, error) {
	defer rows.Close()
	out := map[string]schemaObject{}
	for rows.Next() {
		var o schemaObject
		var text sql.NullString // NULL for the indexes of UNIQUE and PRIMARY KEY constraints
		if err := rows.Scan(&o.Type, &o.Name, &o.Table, &text); err != nil {
			return nil, err
		}
		o.SQL = normalizeSQL(text.String)
		out[o.key()] = o
	}
	return out, rows.Err()
}

// sqliteOwn reports whether o is one of the tables SQLite makes by itself
// (ANALYZE's statistics); they steer the query planner and run nothing, so a
// database that was analysed is not refused for them.
func sqliteOwn(o schemaObject) bool {
	return o.Type == "table" && strings.HasPrefix(o.Name, "sqlite_stat")
}

// schemaProblems compares a database's schema with the expected one and
// says, object by object, what is missing, unexpected or different: tables
// first, then views, triggers and indexes. The index or trigger of a
// missing table is not named again.
func schemaProblems(got, want map[string]schemaObject) []string {
	var problems []string
	for _, w := range ordered(want) {
		g, ok := got[w.key()]
		switch {
		case !ok:
			if _, tableThere := got["table "+w.Table]; w.Type == "table" || tableThere {
				problems = append(problems, "missing "+w.describe())
			}
		case g.Table != w.Table || g.SQL != w.SQL:
			problems = append(problems, w.describe()+" differs from what copydesk creates")
		}
	}
	for _, g := range ordered(got) {
		if _, expected := want[g.key()]; !expected && !sqliteOwn(g) {
			problems = append(problems, "unexpected "+g.describe())
		}
	}
	return problems
}

// ordered lists a schema's objects in the order problems are told.
func ordered(m map[string]schemaObject) []schemaObject {
	rank := map[string]int{"table": 0, "view": 1, "trigger": 2, "index": 3}
	out := make([]schemaObject, 0, len(m))
	for _, o := range m {
		out = append(out, o)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Type != out[j].Type {
			ri, iKnown := rank[out[i].Type]
			rj, jKnown := rank[out[j].Type]
			if iKnown != jKnown {
				return iKnown
			}
			if ri != rj {
				return ri < rj
			}
			return out[i].Type < out[j].Type
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// checkSchema refuses (KindInvalid, naming the objects) a database whose
// schema is not what the migrations it records create.
func checkSchema(ctx context.Context, q queryer, versions []int) error {
	want, err := expectedSchema(ctx, versions)
	if err != nil {
		return err
	}
	got, err := readSchema(ctx, q)
	if err != nil {
		return &Error{Kind: KindInvalid, Message: "the database's schema cannot be read: " + err.Error(), Err: err}
	}
	problems := schemaProblems(got, want)
	if len(problems) == 0 {
		return nil
	}
	const shown = 5
	text := strings.Join(problems[:min(shown, len(problems))], "; ")
	if len(problems) > shown {
		text += fmt.Sprintf("; and %d more", len(problems)-shown)
	}
	return Invalid("the database's schema is not the one copydesk creates at schema version %d: %s", slices.Max(versions), text)
}

// expectedSchemas memoises expectedSchema for the lists that are a prefix
// of the embedded migrations' versions (every database copydesk makes has
// one; the numbers themselves may skip, as migrations written side by side
// are numbered ahead), so the migrations run once per version and
// process. It is a cache of a pure function of the embedded migrations,
// not state. Other lists (a gap a hand-made fix left, see migrate) are
// rare and built each time, so that files cannot grow the cache.
var expectedSchemas sync.Map // "[1 2 3]" -> map[string]schemaObject

// expectedSchema is the schema the migrations of versions (ascending)
// create, applied in that order to a fresh in-memory database, exactly as
// migrate applies them.
func expectedSchema(ctx context.Context, versions []int) (map[string]schemaObject, error) {
	key := fmt.Sprint(versions)
	if s, ok := expectedSchemas.Load(key); ok {
		return s.(map[string]schemaObject), nil
	}
	all, err := allMigrations()
	if err != nil {
		return nil, err
	}
	byVersion := make(map[int]migration, len(all))
	for _, m := range all {
		byVersion[m.version] = m
	}
	for _, v := range versions {
		if _, ok := byVersion[v]; !ok {
			return nil, Invalid("the database records schema version %d, which this copydesk does not know", v)
		}
	}
	// Built to the end even if the caller goes away: half a schema must not
	// be mistaken for the whole.
	ctx = context.WithoutCancel(ctx)
	pool, err := sql.Open("sqlite", "file::memory:")
	if err != nil {
		return nil, fmt.Errorf("store: expected schema: %w", err)
	}
	defer pool.Close()
	conn, err := pool.Conn(ctx) // one connection: each opens its own in-memory database
	if err != nil {
		return nil, fmt.Errorf("store: expected schema: %w", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, createMigrationsTable); err != nil {
		return nil, fmt.Errorf("store: expected schema: %w", err)
	}
	ms := make([]migration, len(versions))
	for i, v := range versions {
		ms[i] = byVersion[v]
	}
	if err := applyMigrations(ctx, conn, ms, time.Time{}.Format(TimeFormat)); err != nil {
		return nil, fmt.Errorf("store: expected schema: %w", err)
	}
	s, err := readSchema(ctx, conn)
	if err != nil {
		return nil, fmt.Errorf("store: expected schema: %w", err)
	}
	if len(versions) <= len(all) && slices.EqualFunc(versions, all[:len(versions)], func(v int, m migration) bool { return v == m.version }) {
		expectedSchemas.Store(key, s)
	}
	return s, nil
}

// normalizeSQL makes two texts of one statement compare equal when they
// differ only in layout: comments go, and every run of whitespace outside
// quotes becomes one space. It reads tokens rather than replacing
// characters, so a newline that ends a `--` comment is not mistaken for a
// space (which would hide what follows the comment in one text and not in
// the other), and quoted text is kept exactly.
func normalizeSQL(s string) string {
	var b strings.Builder
	space := false
	emit := func(t string) {
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteString(t)
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			space = true
			i++
		case c == '-' && i+1 < len(s) && s[i+1] == '-':
			end := strings.IndexByte(s[i:], '\n')
			if end < 0 {
				end = len(s) - i
			}
			space = true
			i += end
		case c == '/' && i+1 < len(s) && s[i+1] == '*':
			end := strings.Index(s[i+2:], "*/")
			if end < 0 {
				i = len(s)
			} else {
				i += 2 + end + 2
			}
			space = true
		case c == '\'' || c == '"' || c == '`' || c == '[':
			closer := c
			if c == '[' {
				closer = ']'
			}
			j := i + 1
			for j < len(s) {
				if s[j] == closer {
					// A doubled quote is an escaped one ('it''s'); brackets
					// have no escape.
					if closer != ']' && j+1 < len(s) && s[j+1] == closer {
						j += 2
						continue
					}
					break
				}
				j++
			}
			j = min(j+1, len(s))
			emit(s[i:j])
			i = j
		default:
			j := i + 1
			for j < len(s) && !strings.ContainsRune(" \t\n\r\f\v'\"`[", rune(s[j])) &&
				!(s[j] == '-' && j+1 < len(s) && s[j+1] == '-') && !(s[j] == '/' && j+1 < len(s) && s[j+1] == '*') {
				j++
			}
			emit(s[i:j])
			i = j
		}
	}
	return b.String()
}
