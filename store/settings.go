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
	var raw string
	err = db.r.QueryRowContext(ctx, `SELECT value FROM settings WHERE key = ?`, key).Scan(&raw)
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

// SetSetting stores v as JSON under key.
func (db *DB) SetSetting(ctx context.Context, key string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("store: write setting %s: %w", key, err)
	}
	_, err = db.exec(ctx, `INSERT INTO settings (key, value, updated_at) VALUES (?, ?, ?)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`, key, string(b), db.now())
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
