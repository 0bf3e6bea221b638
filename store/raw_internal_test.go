package store

import (
	"context"
	"database/sql"
	"testing"
)

// RawConn is OpenRaw, for the tests of this package.
func RawConn(db *DB) (*sql.DB, error) { return db.OpenRaw() }

// PlanConn opens a read-only SQLite connection for a test of query plans
// (EXPLAIN QUERY PLAN), and skips the test on PostgreSQL, whose plans
// TestListQueryPlansPostgres checks.
func PlanConn(t testing.TB, db *DB) (*sql.DB, error) {
	t.Helper()
	if db.OnPostgres() {
		t.Skip("a SQLite query plan test: on PostgreSQL, TestListQueryPlansPostgres checks the lists")
	}
	return sql.Open("sqlite", "file:"+db.path+"?mode=ro")
}

// SchemaNames lists db's schema as its dialect reads it (readSchema): "table
// name", "index name", "trigger name", and "column table.name" for each
// column.
func SchemaNames(ctx context.Context, db *DB) ([]string, error) {
	objects, err := db.d.readSchema(ctx, db.r)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, o := range objects {
		out = append(out, o.Type+" "+o.Name)
	}
	columns := `SELECT m.name, c.name FROM sqlite_master m, pragma_table_info(m.name) c WHERE m.type = 'table'`
	if db.OnPostgres() {
		columns = `SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name <> '` + changesTable + `'`
	}
	rows, err := db.r.QueryContext(ctx, columns)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var table, column string
		if err := rows.Scan(&table, &column); err != nil {
			return nil, err
		}
		out = append(out, "column "+table+"."+column)
	}
	return out, rows.Err()
}
