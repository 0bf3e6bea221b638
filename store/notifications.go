package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Notification is something the system tells one user.
type Notification struct {
	ID            int64
	UserID        int64
	Kind          string
	Title         string
	Body          string
	Link          string // API path of what it is about; "" for none
	EnvironmentID *int64
	ReadAt        *time.Time
	CreatedAt     time.Time
}

// NewNotification is one notification for several users.
type NewNotification struct {
	Kind          string
	Title         string
	Body          string
	Link          string
	EnvironmentID *int64
}

const notificationColumns = `n.id, n.user_id, n.kind, n.title, n.body, n.link, n.environment_id, n.read_at, n.created_at`

func scanNotification(row rowScanner) (*Notification, error) {
	var n Notification
	var link, readAt sql.NullString
	var env sql.NullInt64
	var created string
	if err := row.Scan(&n.ID, &n.UserID, &n.Kind, &n.Title, &n.Body, &link, &env, &readAt, &created); err != nil {
		return nil, err
	}
	n.Link = link.String
	if env.Valid {
		n.EnvironmentID = &env.Int64
	}
	n.ReadAt = parseNullTime(readAt)
	n.CreatedAt = parseTime(created)
	return &n, nil
}

// CreateNotifications gives each distinct user in userIDs its own copy of
// n, in one transaction, and returns them. A note about an environment
// goes only to those who may see it now: active users it is granted to,
// and admins. The grant is read by the statement that inserts the copy, so
// a user removed from the environment before delivery gets nothing, however
// long ago the recipients were chosen; they are skipped, not an error.
func (db *DB) CreateNotifications(ctx context.Context, userIDs []int64, n NewNotification) ([]*Notification, error) {
	now := db.Now().UTC()
	var link any
	if n.Link != "" {
		link = n.Link
	}
	out := make([]*Notification, 0, len(userIDs))
	err := db.tx(ctx, func(tx *sql.Tx) error {
		if err := db.orderAnnouncements(ctx, tx, "notifications"); err != nil {
			return err
		}
		for _, uid := range dedupe(userIDs) {
			var id int64
			err := tx.QueryRowContext(ctx, `INSERT INTO notifications (user_id, kind, title, body, link, environment_id, created_at)
				SELECT CAST(? AS BIGINT), ?, ?, ?, ?, CAST(? AS BIGINT), ? WHERE CAST(? AS BIGINT) IS NULL OR EXISTS (SELECT 1 FROM users u WHERE u.id = ? AND u.is_active = 1
					AND (u.role IN ('admin', 'super_admin')
						OR EXISTS (SELECT 1 FROM user_environments ue WHERE ue.user_id = u.id AND ue.environment_id = ?)))
				RETURNING id`, uid, n.Kind, n.Title, n.Body, link, n.EnvironmentID, fmtTime(now),
				n.EnvironmentID, uid, n.EnvironmentID).Scan(&id)
			if errors.Is(err, sql.ErrNoRows) {
				continue // may not see the environment (any more)
			}
			if err != nil {
				return translate(err, "notification")
			}
			if err := db.announceIn(ctx, tx, AnnouncedNotification, uid, id); err != nil {
				return err
			}
			out = append(out, &Notification{ID: id, UserID: uid, Kind: n.Kind, Title: n.Title, Body: n.Body, Link: n.Link,
				EnvironmentID: n.EnvironmentID, CreatedAt: now.Truncate(time.Millisecond)})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// NotificationFilter narrows ListNotifications.
type NotificationFilter struct {
	UserID      int64
	UnreadOnly  bool
	AfterID     int64 // only ids greater than this (stream catch-up)
	OldestFirst bool
	Page
}

// ListNotifications lists a user's notifications, newest first.
func (db *DB) ListNotifications(ctx context.Context, f NotificationFilter) ([]*Notification, int, error) {
	where := []string{"n.user_id = ?"}
	args := []any{f.UserID}
	if f.UnreadOnly {
		where = append(where, "n.read_at IS NULL")
	}
	if f.AfterID > 0 {
		where = append(where, "n.id > ?")
		args = append(args, f.AfterID)
	}
	order := "n.id DESC"
	if f.OldestFirst {
		order = "n.id"
	}
	return listPage(ctx, db, listQuery{from: "notifications n", where: where, args: args, columns: notificationColumns,
		order: order, what: "notifications"}, f.Page, scanNotification)
}

// NotificationByID returns one of a user's notifications; another user's is
// not found.
func (db *DB) NotificationByID(ctx context.Context, userID, id int64) (*Notification, error) {
	n, err := scanNotification(db.r.QueryRowContext(ctx, `SELECT `+notificationColumns+` FROM notifications n
		WHERE n.id = ? AND n.user_id = ?`, id, userID))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, NotFound("notification not found")
	}
	if err != nil {
		return nil, fmt.Errorf("store: find notification: %w", err)
	}
	return n, nil
}

// UnreadNotifications counts a user's unread notifications.
func (db *DB) UnreadNotifications(ctx context.Context, userID int64) (int, error) {
	var n int
	err := db.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM notifications WHERE user_id = ? AND read_at IS NULL`, userID).Scan(&n)
	return n, err
}

// MarkNotificationRead marks one of a user's notifications read (keeping the
// first time it was read).
func (db *DB) MarkNotificationRead(ctx context.Context, userID, id int64) (*Notification, error) {
	res, err := db.exec(ctx, `UPDATE notifications SET read_at = COALESCE(read_at, ?) WHERE id = ? AND user_id = ?`, db.now(), id, userID)
	if err != nil {
		return nil, fmt.Errorf("store: mark notification read: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil, NotFound("notification not found")
	}
	return db.notificationByIDWriter(ctx, userID, id)
}

func (db *DB) notificationByIDWriter(ctx context.Context, userID, id int64) (*Notification, error) {
	n, err := scanNotification(db.w.QueryRowContext(ctx, `SELECT `+notificationColumns+` FROM notifications n
		WHERE n.id = ? AND n.user_id = ?`, id, userID))
	if err != nil {
		return nil, fmt.Errorf("store: find notification: %w", err)
	}
	return n, nil
}

// MarkAllNotificationsRead marks every unread notification of a user read
// and says how many there were.
func (db *DB) MarkAllNotificationsRead(ctx context.Context, userID int64) (int64, error) {
	res, err := db.exec(ctx, `UPDATE notifications SET read_at = ? WHERE user_id = ? AND read_at IS NULL`, db.now(), userID)
	if err != nil {
		return 0, fmt.Errorf("store: mark notifications read: %w", err)
	}
	return res.RowsAffected()
}

// DeleteNotification deletes one of a user's notifications.
func (db *DB) DeleteNotification(ctx context.Context, userID, id int64) error {
	res, err := db.exec(ctx, `DELETE FROM notifications WHERE id = ? AND user_id = ?`, id, userID)
	if err != nil {
		return fmt.Errorf("store: delete notification: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return NotFound("notification not found")
	}
	return nil
}

// PruneNotifications deletes notifications read before cutoff; unread ones
// are kept however old.
func (db *DB) PruneNotifications(ctx context.Context, cutoff time.Time) (int64, error) {
	res, err := db.exec(ctx, `DELETE FROM notifications WHERE read_at IS NOT NULL AND read_at < ?`, fmtTime(cutoff))
	if err != nil {
		return 0, fmt.Errorf("store: prune notifications: %w", err)
	}
	return res.RowsAffected()
}

// UserIDsWithRole lists the active users whose role is at least min, in
// no particular order.
func (db *DB) UserIDsWithRole(ctx context.Context, min Role) ([]int64, error) {
	marks, roles := rolesAtLeast(min)
	return db.ids(ctx, `SELECT id FROM users WHERE is_active = 1 AND role IN (`+marks+`)`, roles...)
}

// EnvironmentMemberIDs lists the active users who can see an environment
// and whose role is at least min (RoleViewer: all of them): those it was
// granted to, and every admin and super_admin; in no particular order.
func (db *DB) EnvironmentMemberIDs(ctx context.Context, envID int64, min Role) ([]int64, error) {
	marks, roles := rolesAtLeast(min)
	return db.ids(ctx, `SELECT id FROM users WHERE is_active = 1 AND role IN (`+marks+`) AND (role IN ('admin', 'super_admin')
		OR id IN (SELECT user_id FROM user_environments WHERE environment_id = ?))`, append(roles, envID)...)
}

// rolesAtLeast is the placeholders and arguments of `role IN (...)` for
// the roles at least min.
func rolesAtLeast(min Role) (string, []any) {
	var roles []any
	var marks []string
	for _, r := range Roles {
		if r.AtLeast(min) {
			roles = append(roles, string(r))
			marks = append(marks, "?")
		}
	}
	return strings.Join(marks, ", "), roles
}
