package store

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/copydesk/copydesk/store/migrations"
)

var updateBaseline = flag.Bool("update-baseline", false, "dump store/migrations/"+migrations.BaselineName+" again from the migrations")

// TestSQLiteBaselineIsCurrent holds the baseline a first start runs to what
// the migrations make: the committed file is the dump of an empty database
// migrated one step at a time, and a database opened fresh (from the
// baseline) dumps to the same text. After adding a migration:
// go test ./store/ -run TestSQLiteBaselineIsCurrent -update-baseline
func TestSQLiteBaselineIsCurrent(t *testing.T) {
	ctx := context.Background()
	ms, err := allMigrations()
	if err != nil {
		t.Fatal(err)
	}
	pool, err := sql.Open("sqlite", "file::memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	conn, err := pool.Conn(ctx) // one connection: each opens its own in-memory database
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, createMigrationsTable); err != nil {
		t.Fatal(err)
	}
	ran := around(func() { err = applyMigrations(ctx, conn, ms, time.Time{}.Format(TimeFormat)) })
	if err != nil {
		t.Fatal(err)
	}
	want, err := dumpSQLite(ctx, conn, ms[len(ms)-1].version, ran)
	if err != nil {
		t.Fatal(err)
	}
	if *updateBaseline {
		if err := os.WriteFile(filepath.Join("migrations", migrations.BaselineName), []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	committed, err := migrations.Baseline()
	if err != nil {
		t.Fatal(err)
	}
	if committed != want && !*updateBaseline {
		t.Fatalf("store/migrations/%s is not what the migrations make: run go test ./store/ -run TestSQLiteBaselineIsCurrent -update-baseline\n%s",
			migrations.BaselineName, firstDifference(committed, want))
	}

	var db *DB
	ran = around(func() { db, err = Open(ctx, filepath.Join(t.TempDir(), "copydesk.db"), Options{}) })
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	got, err := dumpSQLite(ctx, db.w, ms[len(ms)-1].version, ran)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("a database opened fresh differs from one migrated step by step:\n%s", firstDifference(got, want))
	}
	var recorded int
	if err := db.w.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations`).Scan(&recorded); err != nil {
		t.Fatal(err)
	}
	if recorded != len(ms) {
		t.Fatalf("a fresh database records %d migrations, want %d", recorded, len(ms))
	}
	if got := baselineVersion(committed); got != ms[len(ms)-1].version && !*updateBaseline {
		t.Fatalf("the baseline says version %d, want %d", got, ms[len(ms)-1].version)
	}
}

// TestOpenFallsBackToMigrations: a baseline for another version than the
// newest migration (one added, the baseline not dumped) is not used.
func TestOpenFallsBackToMigrations(t *testing.T) {
	ms, err := allMigrations()
	if err != nil {
		t.Fatal(err)
	}
	ok, err := runBaseline(context.Background(), nil, ms[:len(ms)-1], "")
	if ok || err != nil {
		t.Fatalf("runBaseline for all but the newest migration: ok %v, err %v; want neither", ok, err)
	}
	ok, err = runBaseline(context.Background(), nil, ms[1:], "")
	if ok || err != nil {
		t.Fatalf("runBaseline without the first migration: ok %v, err %v; want neither", ok, err)
	}
}

// dumpSQLite writes a database's schema (in creation order, without
// SQLite's own tables, the shadow tables its virtual tables make, or
// schema_migrations, which migrate creates before anything else), the rows
// of its tables, its sequences and its application id, as SQL that makes
// them again in an empty database.
func dumpSQLite(ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, version int, ran window) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "%s%d\n", baselineHeader, version)
	b.WriteString("-- What the migrations make of an empty database, dumped by\n" +
		"-- TestSQLiteBaselineIsCurrent (store/baseline_internal_test.go); do not edit.\n" +
		"-- A first start runs this instead of every migration (store/baseline.go).\n")
	skip := map[string]bool{"schema_migrations": true}
	var plain []string // ordinary tables, whose rows are dumped
	rows, err := q.QueryContext(ctx, `SELECT name, type FROM pragma_table_list WHERE schema = 'main'`)
	if err != nil {
		return "", err
	}
	for rows.Next() {
		var name, typ string
		if err := rows.Scan(&name, &typ); err != nil {
			rows.Close()
			return "", err
		}
		switch {
		case typ == "shadow":
			skip[name] = true
		case typ == "table" && !strings.HasPrefix(name, "sqlite_") && name != "schema_migrations":
			plain = append(plain, name)
		}
	}
	rows.Close()
	rows, err = q.QueryContext(ctx, `SELECT name, tbl_name, sql FROM sqlite_schema
		WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY rowid`)
	if err != nil {
		return "", err
	}
	for rows.Next() {
		var name, table, text string
		if err := rows.Scan(&name, &table, &text); err != nil {
			rows.Close()
			return "", err
		}
		if skip[name] || skip[table] {
			continue
		}
		b.WriteString(text + ";\n")
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return "", err
	}
	for _, table := range append(plain, "sqlite_sequence") {
		var n int
		if err := q.QueryRowContext(ctx, `SELECT count(*) FROM pragma_table_list WHERE name = ?`, table).Scan(&n); err != nil || n == 0 {
			continue // no sqlite_sequence until a table with AUTOINCREMENT has had a row
		}
		cols, err := q.QueryContext(ctx, `SELECT 'quote("' || name || '")' FROM pragma_table_info(?) ORDER BY cid`, table)
		if err != nil {
			return "", err
		}
		if table == "sqlite_sequence" {
			// The rows above (explicit ids) moved it already: it is set whole.
			b.WriteString("DELETE FROM sqlite_sequence;\n")
		}
		var exprs []string
		for cols.Next() {
			var e string
			if err := cols.Scan(&e); err != nil {
				cols.Close()
				return "", err
			}
			exprs = append(exprs, e)
		}
		cols.Close()
		vals, err := q.QueryContext(ctx, `SELECT `+strings.Join(exprs, `, `)+` FROM "`+table+`" ORDER BY 1`)
		if err != nil {
			return "", err
		}
		for vals.Next() {
			v := make([]string, len(exprs))
			dest := make([]any, len(v))
			for i := range v {
				dest[i] = &v[i]
			}
			if err := vals.Scan(dest...); err != nil {
				vals.Close()
				return "", err
			}
			for i, lit := range v {
				// A seed row's time is the moment the migrations ran
				// (strftime of 'now'): the baseline says so, not when it
				// was dumped.
				if at, err := time.Parse(`'`+TimeFormat+`'`, lit); err == nil && !at.Before(ran.from) && !at.After(ran.to) {
					v[i] = nowSQL
				}
			}
			fmt.Fprintf(&b, "INSERT INTO %s VALUES (%s);\n", table, strings.Join(v, ","))
		}
		vals.Close()
	}
	var appID int64
	if err := q.QueryRowContext(ctx, `PRAGMA application_id`).Scan(&appID); err != nil {
		return "", err
	}
	fmt.Fprintf(&b, "PRAGMA application_id = %d;\n", appID)
	return b.String(), nil
}

// window is when the migrations of a dumped database ran, to the
// millisecond of the stored times.
type window struct{ from, to time.Time }

// around runs f and returns the window it ran in.
func around(f func()) window {
	from := time.Now().UTC().Truncate(time.Millisecond)
	f()
	return window{from, time.Now().UTC().Truncate(time.Millisecond).Add(time.Millisecond)}
}

// nowSQL is how migrations write the time they run at.
const nowSQL = `strftime('%Y-%m-%dT%H:%M:%fZ', 'now')`

// firstDifference shows the first line where two dumps part.
func firstDifference(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d:\n  have %s\n  want %s", i+1, gl, wl)
		}
	}
	return "(no difference)"
}
