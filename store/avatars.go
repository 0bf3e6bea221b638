package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// Avatar is a user's profile image, kept in the database so a snapshot of the
// file is a whole backup.
type Avatar struct {
	UserID      int64
	ContentType string
	Data        []byte
	Version     int64
}

// SetAvatar stores or replaces a user's avatar and bumps its version, which
// appears in avatar URLs so caches notice the change.
func (db *DB) SetAvatar(ctx context.Context, userID int64, contentType string, data []byte) (*User, error) {
	now := db.Now()
	err := db.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE users SET avatar_version = CASE WHEN avatar_version + 1 > ? THEN avatar_version + 1 ELSE ? END,
			updated_at = ? WHERE id = ?`, now.UnixMilli(), now.UnixMilli(), fmtTime(now), userID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return NotFound("user not found")
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO user_avatars (user_id, content_type, data, updated_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (user_id) DO UPDATE SET content_type = excluded.content_type, data = excluded.data, updated_at = excluded.updated_at`,
			userID, contentType, data, fmtTime(now))
		return err
	})
	if err != nil {
		return nil, err
	}
	return db.UserByID(ctx, userID)
}

// DeleteAvatar removes a user's avatar; it is not an error when there is none.
func (db *DB) DeleteAvatar(ctx context.Context, userID int64) (*User, error) {
	err := db.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM user_avatars WHERE user_id = ?`, userID); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE users SET avatar_version = 0, updated_at = ? WHERE id = ?`, db.now(), userID)
		return err
	})
	if err != nil {
		return nil, err
	}
	return db.UserByID(ctx, userID)
}

// AvatarByUser returns a user's avatar.
func (db *DB) AvatarByUser(ctx context.Context, userID int64) (*Avatar, error) {
	a := Avatar{UserID: userID}
	err := db.r.QueryRowContext(ctx, `SELECT a.content_type, a.data, u.avatar_version FROM user_avatars a
		JOIN users u ON u.id = a.user_id WHERE a.user_id = ?`, userID).Scan(&a.ContentType, &a.Data, &a.Version)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, NotFound("this user has no avatar")
	}
	if err != nil {
		return nil, fmt.Errorf("store: find avatar: %w", err)
	}
	return &a, nil
}
