package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// License is the license key active on an account.
type License struct {
	UserID      int64
	KeyID       string
	Key         string
	ActivatedAt time.Time
}

// LicenseByUser returns the license active on an account.
func (db *DB) LicenseByUser(ctx context.Context, userID int64) (*License, error) {
	l := License{UserID: userID}
	var at string
	err := db.r.QueryRowContext(ctx, `SELECT key_id, license_key, activated_at FROM licenses WHERE user_id = ?`, userID).
		Scan(&l.KeyID, &l.Key, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, NotFound("no license is active on this account")
	}
	if err != nil {
		return nil, fmt.Errorf("store: find license: %w", err)
	}
	l.ActivatedAt = parseTime(at)
	return &l, nil
}

// ActivateLicense puts a key on an account, replacing the account's previous
// key. A key active on another account is a conflict.
func (db *DB) ActivateLicense(ctx context.Context, userID int64, keyID, key string) (*License, error) {
	err := db.tx(ctx, func(tx *sql.Tx) error {
		var holder int64
		err := tx.QueryRowContext(ctx, `SELECT user_id FROM licenses WHERE key_id = ?`, keyID).Scan(&holder)
		switch {
		case err == nil && holder != userID:
			return Conflict("this license key is already active on another account: deactivate it there first")
		case err == nil:
			return nil // already active here
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO licenses (user_id, key_id, license_key, activated_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (user_id) DO UPDATE SET key_id = excluded.key_id, license_key = excluded.license_key,
			activated_at = excluded.activated_at`, userID, keyID, key, db.now())
		return translate(err, "license")
	})
	if err != nil {
		return nil, err
	}
	return db.LicenseByUser(ctx, userID)
}

// DeactivateLicense removes the account's license; false if it had none.
func (db *DB) DeactivateLicense(ctx context.Context, userID int64) (bool, error) {
	res, err := db.exec(ctx, `DELETE FROM licenses WHERE user_id = ?`, userID)
	if err != nil {
		return false, fmt.Errorf("store: deactivate license: %w", err)
	}
	n, _ := res.RowsAffected()
	return n > 0, nil
}
