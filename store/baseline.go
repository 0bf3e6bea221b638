package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/copydesk/copydesk/store/migrations"
)

// A first start on SQLite does not replay the migrations one by one: it
// runs the baseline (migrations.Baseline), the schema and rows those
// migrations leave in an empty database, dumped from them by
// TestSQLiteBaselineIsCurrent and compared with them by that test. Some
// migrations rebuild tables and drop columns, and SQLite re-reads the
// whole schema for each of those: replaying all of them took 130 ms of a
// first start's 190 (BenchmarkOpenFresh), the baseline takes a few. A
// database that has any migration recorded is upgraded by the migrations
// themselves, as before; so is every database on PostgreSQL.

// baselineHeader starts the baseline's first line; the version follows.
const baselineHeader = "-- copydesk SQLite baseline, schema version "

// baselineVersion reads the version the baseline text stands for; 0 when
// it has none.
func baselineVersion(text string) int {
	line, _, _ := strings.Cut(text, "\n")
	v, err := strconv.Atoi(strings.TrimPrefix(line, baselineHeader))
	if err != nil || !strings.HasPrefix(line, baselineHeader) {
		return 0
	}
	return v
}

// runBaseline makes an empty SQLite database whole at once, as runMigrations
// would with every migration in ms, if the baseline stands for exactly
// those: ok false (and nothing done) when it does not, as when a migration
// was added and the baseline not dumped again; the migrations then run.
func runBaseline(ctx context.Context, b migrator, ms []migration, now string) (ok bool, err error) {
	text, err := migrations.Baseline()
	if err != nil || len(ms) == 0 || baselineVersion(text) != ms[len(ms)-1].version {
		return false, nil
	}
	for i, m := range ms {
		if m.version != i+1 {
			return false, nil // not every migration from the first: not an empty database
		}
	}
	tx, err := b.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("store: migrate: %w", err)
	}
	if _, err := tx.ExecContext(ctx, text); err != nil {
		return false, errors.Join(fmt.Errorf("store: baseline: %w", err), tx.Rollback())
	}
	for _, m := range ms {
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
			m.version, m.name, now); err != nil {
			return false, errors.Join(fmt.Errorf("store: baseline: %w", err), tx.Rollback())
		}
	}
	if err := (sqliteDialect{}).finishMigrations(ctx, tx); err != nil {
		return false, errors.Join(fmt.Errorf("store: baseline: %w", err), tx.Rollback())
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("store: baseline: %w", err)
	}
	return true, nil
}
