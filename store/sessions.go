package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Session is one sign-in: every token carries its id, and every request
// checks it, so revoking it takes effect on the next request.
type Session struct {
	ID             int64
	UserID         int64
	CreatedAt      time.Time
	LastSeenAt     time.Time
	TokenExpiresAt time.Time
	ExpiresAt      time.Time
	RevokedAt      *time.Time
	IP             string
	UserAgent      string
	Nonce          string // random; carried in the session's tokens
}

// Active reports whether the session can still authenticate at now.
func (s *Session) Active(now time.Time) bool {
	return s.RevokedAt == nil && now.Before(s.ExpiresAt)
}

const sessionColumns = `s.id, s.user_id, s.created_at, s.last_seen_at, s.token_expires_at, s.expires_at, s.revoked_at, s.ip, s.user_agent, s.nonce`

func scanSession(row rowScanner, extra ...any) (*Session, error) {
	var s Session
	var created, seen, tokenExp, exp string
	var revoked sql.NullString
	dest := append([]any{&s.ID, &s.UserID, &created, &seen, &tokenExp, &exp, &revoked, &s.IP, &s.UserAgent, &s.Nonce}, extra...)
	if err := row.Scan(dest...); err != nil {
		return nil, err
	}
	s.CreatedAt, s.LastSeenAt = parseTime(created), parseTime(seen)
	s.TokenExpiresAt, s.ExpiresAt = parseTime(tokenExp), parseTime(exp)
	s.RevokedAt = parseNullTime(revoked)
	return &s, nil
}

// NewSession is what CreateSession needs.
type NewSession struct {
	UserID         int64
	TokenExpiresAt time.Time
	ExpiresAt      time.Time
	IP             string
	UserAgent      string
	Nonce          string
}

// CreateSession starts a session and records the sign-in on the user.
func (db *DB) CreateSession(ctx context.Context, n NewSession) (*Session, error) {
	now := db.now()
	var id int64
	err := db.tx(ctx, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `INSERT INTO sessions (user_id, created_at, last_seen_at, token_expires_at, expires_at, ip, user_agent, nonce)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
			n.UserID, now, now, fmtTime(n.TokenExpiresAt), fmtTime(n.ExpiresAt), n.IP, truncate(n.UserAgent, 512), n.Nonce).Scan(&id)
		if err != nil {
			return translate(err, "session")
		}
		_, err = tx.ExecContext(ctx, `UPDATE users SET last_login_at = ? WHERE id = ?`, now, n.UserID)
		return err
	})
	if err != nil {
		return nil, err
	}
	return db.sessionByID(ctx, db.w, id)
}

func (db *DB) sessionByID(ctx context.Context, q queryer, id int64) (*Session, error) {
	s, err := scanSession(q.QueryRowContext(ctx, `SELECT `+sessionColumns+` FROM sessions s WHERE s.id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, NotFound("session not found")
	}
	if err != nil {
		return nil, fmt.Errorf("store: find session: %w", err)
	}
	return s, nil
}

// sessionWithUserQuery is the one query of every authenticated request. It
// reads only what authentication and the profile need: not the password
// hash or the sealed TOTP secrets.
const sessionWithUserQuery = `SELECT s.id, s.user_id, s.last_seen_at, s.expires_at, s.revoked_at, s.nonce,
	u.email, u.username, u.full_name, u.role, u.is_active, u.totp_enabled, u.avatar_version,
	u.last_login_at, u.created_at, u.updated_at
	FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.id = ?`

// SessionWithUser loads a session and its user in one query: the work every
// authenticated request does. The user comes without PasswordHash and TOTP
// secrets; load it with UserByID where those are needed.
func (db *DB) SessionWithUser(ctx context.Context, sessionID int64) (*Session, *User, error) {
	st, err := db.readStmt(ctx, sessionWithUserQuery)
	if err != nil {
		return nil, nil, fmt.Errorf("store: find session: %w", err)
	}
	var s Session
	var u User
	var seen, exp, role, created, updated string
	var revoked, lastLogin sql.NullString
	err = st.QueryRowContext(ctx, sessionID).Scan(&s.ID, &s.UserID, &seen, &exp, &revoked, &s.Nonce,
		&u.Email, &u.Username, &u.FullName, &role, &u.IsActive, &u.TOTPEnabled, &u.AvatarVersion,
		&lastLogin, &created, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil, NotFound("session not found")
	}
	if err != nil {
		return nil, nil, fmt.Errorf("store: find session: %w", err)
	}
	s.LastSeenAt, s.ExpiresAt, s.RevokedAt = parseTime(seen), parseTime(exp), parseNullTime(revoked)
	u.ID = s.UserID
	u.Role = Role(role)
	u.LastLoginAt = parseNullTime(lastLogin)
	u.CreatedAt, u.UpdatedAt = parseTime(created), parseTime(updated)
	return &s, &u, nil
}

// TouchSession records activity on a session.
func (db *DB) TouchSession(ctx context.Context, id int64) error {
	_, err := db.exec(ctx, `UPDATE sessions SET last_seen_at = ? WHERE id = ?`, db.now(), id)
	return err
}

// ExtendSession records the expiry of a newly issued token for the session.
// It fails when the session was revoked or has passed its absolute end.
func (db *DB) ExtendSession(ctx context.Context, id int64, tokenExpiresAt time.Time) (*Session, error) {
	now := db.now()
	res, err := db.exec(ctx, `UPDATE sessions SET token_expires_at = ?, last_seen_at = ?
		WHERE id = ? AND revoked_at IS NULL AND expires_at > ?`, fmtTime(tokenExpiresAt), now, id, now)
	if err != nil {
		return nil, fmt.Errorf("store: extend session: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil, Unauthorized("the session has ended: sign in again")
	}
	return db.sessionByID(ctx, db.w, id)
}

// ListActiveSessions lists a page of a user's sessions that are neither
// revoked nor past the expiry of their newest token, newest first.
func (db *DB) ListActiveSessions(ctx context.Context, userID int64, p Page) ([]*Session, int, error) {
	now := db.now()
	return listPage(ctx, db, listQuery{from: "sessions s",
		where: []string{"s.user_id = ?", "s.revoked_at IS NULL", "s.token_expires_at > ?", "s.expires_at > ?"},
		args:  []any{userID, now, now}, columns: sessionColumns, order: "s.id DESC", what: "sessions"}, p, func(r rowScanner) (*Session, error) {
		return scanSession(r)
	})
}

// RevokeSession ends one of a user's sessions. A session of another user, or
// one already ended, is not found.
func (db *DB) RevokeSession(ctx context.Context, userID, sessionID int64) error {
	now := db.now()
	res, err := db.exec(ctx, `UPDATE sessions SET revoked_at = ?
		WHERE id = ? AND user_id = ? AND revoked_at IS NULL AND expires_at > ?`, now, sessionID, userID, now)
	if err != nil {
		return fmt.Errorf("store: revoke session: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return NotFound("session not found")
	}
	return nil
}

// RevokeUserSessions ends every session of a user except keep (0: none).
func (db *DB) RevokeUserSessions(ctx context.Context, userID, keep int64) error {
	return db.tx(ctx, func(tx *sql.Tx) error { return revokeUserSessions(ctx, tx, userID, keep, db.now()) })
}

func revokeUserSessions(ctx context.Context, tx *sql.Tx, userID, keep int64, now string) error {
	_, err := tx.ExecContext(ctx, `UPDATE sessions SET revoked_at = ? WHERE user_id = ? AND id <> ? AND revoked_at IS NULL`,
		now, userID, keep)
	return err
}

// PruneSessions deletes sessions that ended before cutoff.
func (db *DB) PruneSessions(ctx context.Context, cutoff time.Time) (int64, error) {
	c := fmtTime(cutoff)
	res, err := db.exec(ctx, `DELETE FROM sessions WHERE expires_at < ? OR token_expires_at < ? OR revoked_at < ?`, c, c, c)
	if err != nil {
		return 0, fmt.Errorf("store: prune sessions: %w", err)
	}
	return res.RowsAffected()
}

// truncate keeps at most n bytes of s as valid UTF-8 (a request header may
// carry any bytes, and PostgreSQL refuses invalid UTF-8 in text), cut at a
// character's start.
func truncate(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
