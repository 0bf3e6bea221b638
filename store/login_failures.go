package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// LoginFailures is the failed sign-in record of one e-mail address, kept
// under its EmailKey so that no spelling of an address gets a count of its own.
type LoginFailures struct {
	Failures      int
	LastFailureAt time.Time
	LockedUntil   *time.Time
}

// LoginFailuresFor returns the record for an address; none is a zero record.
func (db *DB) LoginFailuresFor(ctx context.Context, email string) (LoginFailures, error) {
	var lf LoginFailures
	var last string
	var locked sql.NullString
	err := db.r.QueryRowContext(ctx, `SELECT failures, last_failure_at, locked_until FROM login_failures WHERE email = ?`,
		EmailKey(email)).Scan(&lf.Failures, &last, &locked)
	if errors.Is(err, sql.ErrNoRows) {
		return LoginFailures{}, nil
	}
	if err != nil {
		return lf, fmt.Errorf("store: login failures: %w", err)
	}
	lf.LastFailureAt = parseTime(last)
	lf.LockedUntil = parseNullTime(locked)
	return lf, nil
}

// UpdateLoginFailures reads the record of an address, lets fn decide the
// new one, and writes it, in one write transaction, so parallel attempts
// cannot slip past a limit. An error from fn aborts without writing.
func (db *DB) UpdateLoginFailures(ctx context.Context, email string, fn func(LoginFailures) (LoginFailures, error)) error {
	key := EmailKey(email)
	return db.tx(ctx, func(tx *sql.Tx) error {
		if db.OnPostgres() {
			// Several instances write these records: the address's lock,
			// held to the commit, makes their read-modify-writes take
			// turns, as SQLite's one writer does.
			if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtext('copydesk login failures'), hashtext(?))`, key); err != nil {
				return fmt.Errorf("store: login failures: %w", err)
			}
		}
		var lf LoginFailures
		var last string
		var locked sql.NullString
		err := tx.QueryRowContext(ctx, `SELECT failures, last_failure_at, locked_until FROM login_failures WHERE email = ?`, key).
			Scan(&lf.Failures, &last, &locked)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("store: login failures: %w", err)
		}
		if err == nil {
			lf.LastFailureAt = parseTime(last)
			lf.LockedUntil = parseNullTime(locked)
		}
		next, err := fn(lf)
		if err != nil {
			return err
		}
		var lockedUntil any
		if next.LockedUntil != nil {
			lockedUntil = fmtTime(*next.LockedUntil)
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO login_failures (email, failures, last_failure_at, locked_until) VALUES (?, ?, ?, ?)
			ON CONFLICT (email) DO UPDATE SET failures = excluded.failures, last_failure_at = excluded.last_failure_at,
			locked_until = excluded.locked_until`, key, next.Failures, fmtTime(next.LastFailureAt), lockedUntil)
		if err != nil {
			return fmt.Errorf("store: record login failure: %w", err)
		}
		return nil
	})
}

// ClearLoginFailures forgets the failures of an address after a success.
func (db *DB) ClearLoginFailures(ctx context.Context, email string) error {
	_, err := db.exec(ctx, `DELETE FROM login_failures WHERE email = ?`, EmailKey(email))
	return err
}

// LockedUntil returns, for the addresses of one page of users, when the
// sign-in lock of each locked one ends, keyed by the address as given; an
// address not locked at now is absent. One read for the page.
func (db *DB) LockedUntil(ctx context.Context, emails []string, now time.Time) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	if len(emails) == 0 {
		return out, nil
	}
	byKey := make(map[string][]string, len(emails))
	args := make([]any, 0, len(emails))
	for _, e := range emails {
		k := EmailKey(e)
		if _, seen := byKey[k]; !seen {
			args = append(args, k)
		}
		byKey[k] = append(byKey[k], e)
	}
	rows, err := db.listRows(ctx, `SELECT email, locked_until FROM login_failures
		WHERE locked_until IS NOT NULL AND email IN (`+jobPlaceholders(len(args))+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("store: locked sign-ins: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var key string
		var locked sql.NullString
		if err := rows.Scan(&key, &locked); err != nil {
			return nil, fmt.Errorf("store: locked sign-ins: %w", err)
		}
		if t := parseNullTime(locked); t != nil && t.After(now) {
			for _, e := range byKey[key] {
				out[e] = *t
			}
		}
	}
	return out, rows.Err()
}
