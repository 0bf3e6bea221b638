package store

import (
	"database/sql"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// RawConn opens a pool of its own on db's database, for tests that write
// or read rows behind the store's back; the store's queries' dialect
// (SQLite's) is translated on PostgreSQL as the store's own are.
func RawConn(db *DB) (*sql.DB, error) {
	if !db.OnPostgres() {
		return sql.Open("sqlite", dsn(db.path, ""))
	}
	cfg, err := pgx.ParseConfig(db.url)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(pgConnector{stdlib.GetConnector(*cfg), &postgresDialect{}}), nil
}

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
