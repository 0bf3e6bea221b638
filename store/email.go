package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// NormalizeEmail is an e-mail address as it is stored and shown: trimmed
// and in Unicode normal form C, so "josé" typed with a combining accent is
// stored the same way as with the precomposed é. Its case is kept, since
// the address is where mail goes.
func NormalizeEmail(email string) string { return norm.NFC.String(strings.TrimSpace(email)) }

// EmailKey is the form in which e-mail addresses are compared: full
// Unicode case folding between canonical decompositions (the "canonical
// caseless match" of the Unicode standard, D145), recomposed to NFC. So
// josé@ and JOSÉ@ are one address, and so are a Kelvin sign K and k, where
// ASCII-only case rules (SQLite's NOCASE) saw two. Users are unique by it
// (users.email_key), and failed sign-ins are counted by it.
func EmailKey(email string) string {
	return norm.NFC.String(cases.Fold().String(norm.NFD.String(strings.TrimSpace(email))))
}

// keyEmails is the part of migration 0006 that SQL cannot do: it fills
// users.email_key, stores addresses in NFC, and moves failed sign-in counts
// to the folded key.
//
// Addresses that were distinct before but fold to one key (josé@ and
// JOSÉ@, which the old ASCII-only rule let in as two accounts) must not
// stop the start: the oldest account gets the key, the others keep their
// address but no key, and still sign in with their address as stored,
// ignoring ASCII case as before (see UserByEmail). EmailClashes lists them
// so that every start says so; they get a key when their address changes.
func keyEmails(ctx context.Context, tx *sql.Tx) error {
	type row struct {
		id    int64
		email string
	}
	rows, err := tx.QueryContext(ctx, `SELECT id, email FROM users ORDER BY id`)
	if err != nil {
		return err
	}
	var users []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.id, &r.email); err != nil {
			rows.Close()
			return err
		}
		users = append(users, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	holder := map[string]bool{}
	for _, u := range users {
		key := EmailKey(u.email)
		if holder[key] {
			continue
		}
		holder[key] = true
		if _, err := tx.ExecContext(ctx, `UPDATE users SET email_key = ? WHERE id = ?`, key, u.id); err != nil {
			return err
		}
		// Another account may hold the NFC spelling already (its key is
		// the same, so it is one of the clashes above): keep this one's.
		if nfc := NormalizeEmail(u.email); nfc != u.email {
			if _, err := tx.ExecContext(ctx, `UPDATE OR IGNORE users SET email = ? WHERE id = ?`, nfc, u.id); err != nil {
				return err
			}
		}
	}
	return keyLoginFailures(ctx, tx)
}

// keyLoginFailures moves failed sign-in counts kept under the old
// lower-cased address to the folded key, so a lock survives the upgrade.
// Where two records meet, the one already under the key stays.
func keyLoginFailures(ctx context.Context, tx *sql.Tx) error {
	rows, err := tx.QueryContext(ctx, `SELECT email FROM login_failures`)
	if err != nil {
		return err
	}
	var emails []string
	for rows.Next() {
		var e string
		if err := rows.Scan(&e); err != nil {
			rows.Close()
			return err
		}
		emails = append(emails, e)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, e := range emails {
		key := EmailKey(e)
		if key == e {
			continue
		}
		res, err := tx.ExecContext(ctx, `UPDATE OR IGNORE login_failures SET email = ? WHERE email = ?`, key, e)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			if _, err := tx.ExecContext(ctx, `DELETE FROM login_failures WHERE email = ?`, e); err != nil {
				return err
			}
		}
	}
	return nil
}

// EmailClash is an account whose address folds to the same key as an
// older account's (see keyEmails).
type EmailClash struct {
	UserID   int64
	Email    string
	SameAsID int64 // the older account that holds the key
}

// EmailClashes lists the accounts the e-mail migration left without a key.
func (db *DB) EmailClashes(ctx context.Context) ([]EmailClash, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT id, email FROM users WHERE email_key IS NULL ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("store: e-mail clashes: %w", err)
	}
	var out []EmailClash
	for rows.Next() {
		var c EmailClash
		if err := rows.Scan(&c.UserID, &c.Email); err != nil {
			rows.Close()
			return nil, fmt.Errorf("store: e-mail clashes: %w", err)
		}
		out = append(out, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: e-mail clashes: %w", err)
	}
	for i := range out {
		err := db.r.QueryRowContext(ctx, `SELECT id FROM users WHERE email_key = ?`, EmailKey(out[i].Email)).Scan(&out[i].SameAsID)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("store: e-mail clashes: %w", err)
		}
	}
	return out, nil
}
