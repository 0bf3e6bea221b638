package store

import (
	"context"
	"database/sql"
	"fmt"
)

// SetTOTPPending stores a sealed secret awaiting its first valid code.
func (db *DB) SetTOTPPending(ctx context.Context, userID int64, sealed []byte) error {
	res, err := db.exec(ctx, `UPDATE users SET totp_pending = ?, updated_at = ? WHERE id = ?`, sealed, db.now(), userID)
	if err != nil {
		return fmt.Errorf("store: set totp pending: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return NotFound("user not found")
	}
	return nil
}

// EnableTOTP promotes the pending secret, records the time step of the code
// that proved it (so that code cannot be replayed) and replaces the recovery
// codes with the given keyed hashes (see KeyRecoveryCodes), all at once.
func (db *DB) EnableTOTP(ctx context.Context, userID int64, sealed []byte, step int64, codeHashes [][]byte) error {
	return db.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE users SET totp_secret = ?, totp_pending = NULL, totp_enabled = 1,
			totp_last_step = ?, updated_at = ? WHERE id = ? AND totp_enabled = 0`, sealed, step, db.now(), userID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return Conflict("two-factor authentication is already enabled")
		}
		return replaceRecoveryCodes(ctx, tx, userID, codeHashes)
	})
}

func replaceRecoveryCodes(ctx context.Context, tx *sql.Tx, userID int64, hashes [][]byte) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM recovery_codes WHERE user_id = ?`, userID); err != nil {
		return err
	}
	for _, h := range hashes {
		if _, err := tx.ExecContext(ctx, `INSERT INTO recovery_codes (user_id, code_hash, keyed) VALUES (?, ?, 1)`, userID, h); err != nil {
			return err
		}
	}
	return nil
}

// DisableTOTP turns two-factor authentication off and drops the secret and
// recovery codes.
func (db *DB) DisableTOTP(ctx context.Context, userID int64) error {
	return db.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE users SET totp_secret = NULL, totp_pending = NULL, totp_enabled = 0,
			totp_last_step = 0, updated_at = ? WHERE id = ?`, db.now(), userID); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM recovery_codes WHERE user_id = ?`, userID)
		return err
	})
}

// UseTOTPStep records that the code of time step step was used. It reports
// false when that step, or a later one, was already used: a code counts once.
func (db *DB) UseTOTPStep(ctx context.Context, userID, step int64) (bool, error) {
	res, err := db.exec(ctx, `UPDATE users SET totp_last_step = ? WHERE id = ? AND totp_last_step < ?`, step, userID, step)
	if err != nil {
		return false, fmt.Errorf("store: use totp step: %w", err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// UseRecoveryCode marks an unused recovery code, given by its keyed hash,
// as used; false if there is no such unused code.
func (db *DB) UseRecoveryCode(ctx context.Context, userID int64, hash []byte) (bool, error) {
	res, err := db.exec(ctx, `UPDATE recovery_codes SET used_at = ? WHERE user_id = ? AND code_hash = ? AND keyed = 1 AND used_at IS NULL`,
		db.now(), userID, hash)
	if err != nil {
		return false, fmt.Errorf("store: use recovery code: %w", err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// RecoveryCodeSpent reports whether a recovery code, given by its keyed
// hash, is one of the user's that was used already: a code entered twice
// is told apart from a wrong one, as a TOTP code is.
func (db *DB) RecoveryCodeSpent(ctx context.Context, userID int64, hash []byte) (bool, error) {
	var spent bool
	err := db.r.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM recovery_codes
		WHERE user_id = ? AND code_hash = ? AND keyed = 1 AND used_at IS NOT NULL)`, userID, hash).Scan(&spent)
	if err != nil {
		return false, fmt.Errorf("store: recovery code: %w", err)
	}
	return spent, nil
}

// RecoveryCodesLeft counts unused recovery codes.
func (db *DB) RecoveryCodesLeft(ctx context.Context, userID int64) (int, error) {
	var n int
	err := db.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM recovery_codes WHERE user_id = ? AND used_at IS NULL`, userID).Scan(&n)
	return n, err
}

// KeyRecoveryCodes rewrites the recovery codes stored before migration
// 0007, as a plain digest, into keyed hashes: mac(digest). The store does
// not know the key; the account service passes it in, at start, hourly
// and before it checks a recovery code, so codes from a restored older
// backup are keyed before they are used. It reports how many it rewrote.
func (db *DB) KeyRecoveryCodes(ctx context.Context, mac func(digest []byte) []byte) (int, error) {
	var n int
	if err := db.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM recovery_codes WHERE keyed = 0`).Scan(&n); err != nil || n == 0 {
		return 0, err
	}
	n = 0
	err := db.tx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT id, code_hash FROM recovery_codes WHERE keyed = 0`)
		if err != nil {
			return err
		}
		type code struct {
			id     int64
			digest []byte
		}
		var codes []code
		for rows.Next() {
			var c code
			if err := rows.Scan(&c.id, &c.digest); err != nil {
				rows.Close()
				return err
			}
			codes = append(codes, c)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, c := range codes {
			if _, err := tx.ExecContext(ctx, `UPDATE recovery_codes SET code_hash = ?, keyed = 1 WHERE id = ?`, mac(c.digest), c.id); err != nil {
				return err
			}
		}
		n = len(codes)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("store: key recovery codes: %w", err)
	}
	return n, nil
}
