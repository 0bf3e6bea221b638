package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
)

// Setting reads the JSON value stored under key into v; found is false (and v
// untouched) when the key was never set.
func (db *DB) Setting(ctx context.Context, key string, v any) (found bool, err error) {
	return readSetting(ctx, db.r, key, v)
}

func readSetting(ctx context.Context, q queryer, key string, v any) (bool, error) {
	var raw string
	err := q.QueryRowContext(ctx, `SELECT value FROM settings WHERE key = ?`, key).Scan(&raw)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("store: read setting %s: %w", key, err)
	}
	if err := json.Unmarshal([]byte(raw), v); err != nil {
		return false, fmt.Errorf("store: read setting %s: %w", key, err)
	}
	return true, nil
}

const upsertSetting = `INSERT INTO settings (key, value, updated_at) VALUES (?, ?, ?)
	ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`

// SetSetting stores v as JSON under key.
func (db *DB) SetSetting(ctx context.Context, key string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("store: write setting %s: %w", key, err)
	}
	_, err = db.exec(ctx, upsertSetting, key, string(b), db.now())
	if err != nil {
		return fmt.Errorf("store: write setting %s: %w", key, err)
	}
	return nil
}

// SystemSettings are the instance-wide switches an admin controls.
type SystemSettings struct {
	// RegistrationOpen lets anyone create a viewer account with
	// POST /api/auth/register.
	RegistrationOpen bool `json:"registration_open"`
	// NotificationRetentionDays is how long read notifications are kept;
	// unread ones are kept until read or deleted.
	NotificationRetentionDays int `json:"notification_retention_days"`
}

// DefaultSystemSettings apply until an admin changes them; a setting added
// later takes its default here for databases that predate it.
var DefaultSystemSettings = SystemSettings{RegistrationOpen: true, NotificationRetentionDays: 30}

const systemSettingsKey = "system"

// SystemSettings returns the instance-wide switches.
func (db *DB) SystemSettings(ctx context.Context) (SystemSettings, error) {
	s := DefaultSystemSettings
	_, err := db.Setting(ctx, systemSettingsKey, &s)
	return s, err
}

// SetSystemSettings stores the instance-wide switches.
func (db *DB) SetSystemSettings(ctx context.Context, s SystemSettings) error {
	return db.SetSetting(ctx, systemSettingsKey, s)
}

// UpdateSystemSettings applies change to the current switches and stores
// the result in one transaction, so two admins changing different switches
// at once do not undo each other.
func (db *DB) UpdateSystemSettings(ctx context.Context, change func(*SystemSettings)) (SystemSettings, error) {
	s := DefaultSystemSettings
	err := db.tx(ctx, func(tx *sql.Tx) error {
		if _, err := readSetting(ctx, tx, systemSettingsKey, &s); err != nil {
			return err
		}
		change(&s)
		b, err := json.Marshal(s)
		if err != nil {
			return fmt.Errorf("store: write setting %s: %w", systemSettingsKey, err)
		}
		if _, err := tx.ExecContext(ctx, upsertSetting, systemSettingsKey, string(b), db.now()); err != nil {
			return fmt.Errorf("store: write setting %s: %w", systemSettingsKey, err)
		}
		return nil
	})
	if err != nil {
		return SystemSettings{}, err
	}
	return s, nil
}

// secretKeyCheck is the setting that holds the check value of the secret
// key the database's sealed data belong to.
const secretKeyCheck = "secret_key_check"

// CheckSecretKey records check, the check value of the secret key
// (keyring.CheckValue), on a database that has none, and refuses a
// database that holds another: its credentials, second factors and
// recovery codes were sealed with another key and would not open.
func (db *DB) CheckSecretKey(ctx context.Context, check string) error {
	b, _ := json.Marshal(check)
	if _, err := db.exec(ctx, `INSERT INTO settings (key, value, updated_at) VALUES (?, ?, ?) ON CONFLICT (key) DO NOTHING`,
		secretKeyCheck, string(b), db.now()); err != nil {
		return fmt.Errorf("store: record the secret key's check value: %w", err)
	}
	var stored string
	if _, err := readSetting(ctx, db.w, secretKeyCheck, &stored); err != nil {
		return err
	}
	if stored != check {
		return Conflict("this database was sealed with another secret key: its credentials and second factors would not open. " +
			"Give every instance the installation's key (COPYDESK_SECRET_KEY, or the same secret.key in the data directory)")
	}
	return nil
}
