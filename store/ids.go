package store

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// rowidKey finds a table's `id INTEGER PRIMARY KEY` column, the alias of
// its rowid, and whether it already has AUTOINCREMENT. Compiled on first
// use: most starts migrate nothing.
var rowidKey = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)\bid\s+INTEGER\s+PRIMARY\s+KEY\b(\s+AUTOINCREMENT\b)?`)
})

// autoincrementIDs is the Go part of migration 0022: it rebuilds each table
// keyed by `id INTEGER PRIMARY KEY` with AUTOINCREMENT, so that SQLite never
// gives a deleted row's id again (it keeps the highest id given in
// sqlite_sequence). It follows SQLite's procedure for a change ALTER TABLE
// cannot make: create the new table, copy the rows, drop the old one,
// rename the new one, create the old one's indexes and triggers again.
// The migrations run with foreign keys off for it (applyMigrations), so
// dropping a table neither cascades to nor checks its children, and with
// legacy_alter_table on, so the rename touches nothing but the table.
// Full-text tables and their shadow tables are left as they are: their ids
// are those of the rows they index.
func autoincrementIDs(ctx context.Context, tx *sql.Tx) error {
	tables, err := rowidTables(ctx, tx)
	if err != nil {
		return err
	}
	for _, t := range tables {
		if err := rebuildAutoincrement(ctx, tx, t.name, t.sql); err != nil {
			return fmt.Errorf("rebuild %s: %w", t.name, err)
		}
	}
	return nil
}

type tableDef struct{ name, sql string }

// rowidTables lists the tables to rebuild: ordinary tables keyed by an
// integer id without AUTOINCREMENT, not a virtual table's shadow.
func rowidTables(ctx context.Context, tx *sql.Tx) ([]tableDef, error) {
	rows, err := tx.QueryContext(ctx, `SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY name`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var all []tableDef
	var virtual []string
	for rows.Next() {
		var t tableDef
		var text sql.NullString
		if err := rows.Scan(&t.name, &text); err != nil {
			return nil, err
		}
		t.sql = text.String
		if strings.HasPrefix(strings.ToUpper(t.sql), "CREATE VIRTUAL TABLE") {
			virtual = append(virtual, t.name)
		}
		all = append(all, t)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var out []tableDef
next:
	for _, t := range all {
		if strings.HasPrefix(t.name, "sqlite_") || !strings.HasPrefix(strings.ToUpper(t.sql), "CREATE TABLE") {
			continue
		}
		for _, v := range virtual {
			if strings.HasPrefix(t.name, v+"_") {
				continue next
			}
		}
		if m := rowidKey().FindStringSubmatch(t.sql); m != nil && m[1] == "" {
			out = append(out, t)
		}
	}
	return out, nil
}

func rebuildAutoincrement(ctx context.Context, tx *sql.Tx, name, create string) error {
	// The indexes (not those of UNIQUE constraints, which have no SQL and
	// come back with the table) and triggers of the table.
	rows, err := tx.QueryContext(ctx, `SELECT sql FROM sqlite_master
		WHERE tbl_name = ? AND type IN ('index', 'trigger') AND sql IS NOT NULL ORDER BY type, name`, name)
	if err != nil {
		return err
	}
	var again []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			rows.Close()
			return err
		}
		again = append(again, s)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	// The old table steps aside and the new one is made under the table's
	// own name with its own text, so its definition reads exactly as on a
	// database made new (withAutoincrement), which restore's schema check
	// compares with.
	old := name + "_before_0022"
	steps := append([]string{
		fmt.Sprintf(`ALTER TABLE "%s" RENAME TO "%s"`, name, old),
		withAutoincrement(create),
		fmt.Sprintf(`INSERT INTO "%s" SELECT * FROM "%s"`, name, old),
		fmt.Sprintf(`DROP TABLE "%s"`, old),
	}, again...)
	for _, s := range steps {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("%.60s…: %w", s, err)
		}
	}
	return nil
}

// idsMigration is migration 0022, from which no table gives an id twice.
const idsMigration = 22

// withAutoincrement gives every `id INTEGER PRIMARY KEY` column of the SQL
// text AUTOINCREMENT. The migrations before 0022 are applied through it
// when 0022 is applied with them (a new database), so their tables are
// made as 0022 would rebuild them, without rebuilding; a database that
// had them already is rebuilt by 0022 to the same text.
func withAutoincrement(sqlText string) string {
	return rowidKey().ReplaceAllStringFunc(sqlText, func(m string) string {
		if strings.HasSuffix(strings.ToUpper(m), "AUTOINCREMENT") {
			return m
		}
		return m + " AUTOINCREMENT"
	})
}
