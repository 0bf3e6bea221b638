package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Role is a user's role; higher roles include everything lower ones may do.
type Role string

const (
	RoleViewer     Role = "viewer"
	RoleEditor     Role = "editor"
	RoleAdmin      Role = "admin"
	RoleSuperAdmin Role = "super_admin"
)

// Roles lists every role from lowest to highest.
var Roles = []Role{RoleViewer, RoleEditor, RoleAdmin, RoleSuperAdmin}

// Level orders roles; an unknown role is below every real one.
func (r Role) Level() int {
	switch r {
	case RoleViewer:
		return 1
	case RoleEditor:
		return 2
	case RoleAdmin:
		return 3
	case RoleSuperAdmin:
		return 4
	}
	return 0
}

// Valid reports whether r is one of Roles.
func (r Role) Valid() bool { return r.Level() > 0 }

// AtLeast reports whether r includes min.
func (r Role) AtLeast(min Role) bool { return r.Level() >= min.Level() }

// User is an account.
type User struct {
	ID            int64
	Email         string
	Username      string
	FullName      string
	PasswordHash  string
	Role          Role
	IsActive      bool
	TOTPSecret    []byte // sealed
	TOTPPending   []byte // sealed; set between 2FA setup and verify
	TOTPEnabled   bool
	TOTPLastStep  int64
	AvatarVersion int64 // 0: no avatar
	LastLoginAt   *time.Time
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

const userColumns = `u.id, u.email, u.username, u.full_name, u.password_hash, u.role, u.is_active,
	u.totp_secret, u.totp_pending, u.totp_enabled, u.totp_last_step, u.avatar_version,
	u.last_login_at, u.created_at, u.updated_at`

type rowScanner interface{ Scan(dest ...any) error }

func scanUser(row rowScanner, extra ...any) (*User, error) {
	var u User
	var role, created, updated string
	var lastLogin sql.NullString
	dest := append([]any{&u.ID, &u.Email, &u.Username, &u.FullName, &u.PasswordHash, &role, &u.IsActive,
		&u.TOTPSecret, &u.TOTPPending, &u.TOTPEnabled, &u.TOTPLastStep, &u.AvatarVersion,
		&lastLogin, &created, &updated}, extra...)
	if err := row.Scan(dest...); err != nil {
		return nil, err
	}
	u.Role = Role(role)
	u.LastLoginAt = parseNullTime(lastLogin)
	u.CreatedAt = parseTime(created)
	u.UpdatedAt = parseTime(updated)
	return &u, nil
}

// NewUser is what CreateUser needs.
type NewUser struct {
	Email        string
	Username     string
	FullName     string
	PasswordHash string
	Role         Role
}

// CreateUser inserts an active account. Its address is stored in NFC and
// must be unique by EmailKey.
func (db *DB) CreateUser(ctx context.Context, n NewUser) (*User, error) {
	now := db.now()
	u, err := insertRow(ctx, db, func(row rowScanner) (*User, error) { return scanUser(row) },
		`INSERT INTO users (email, email_key, username, full_name, password_hash, role, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING `+returning(userColumns),
		NormalizeEmail(n.Email), EmailKey(n.Email), n.Username, n.FullName, n.PasswordHash, string(n.Role), now, now)
	if err != nil {
		return nil, translate(err, "user")
	}
	return u, nil
}

// UserByID finds a user.
func (db *DB) UserByID(ctx context.Context, id int64) (*User, error) {
	return db.userWhere(ctx, db.r, "u.id = ?", id)
}

// UserByEmail finds a user by e-mail address, compared by EmailKey. An
// account the e-mail migration left without a key (see keyEmails) is found
// by its address as stored (ignoring ASCII case, as before), ahead of the
// older account it clashes with, so both still sign in as they did before.
func (db *DB) UserByEmail(ctx context.Context, email string) (*User, error) {
	return db.userWhere(ctx, db.r, "u.email_key = ? OR (u.email_key IS NULL AND u.email = ?) ORDER BY u.email_key IS NULL DESC LIMIT 1",
		EmailKey(email), strings.TrimSpace(email))
}

func (db *DB) userWhere(ctx context.Context, q queryer, where string, args ...any) (*User, error) {
	u, err := scanUser(q.QueryRowContext(ctx, `SELECT `+userColumns+` FROM users u WHERE `+where, args...))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, NotFound("user not found")
	}
	if err != nil {
		return nil, fmt.Errorf("store: find user: %w", err)
	}
	return u, nil
}

type queryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// UserFilter narrows ListUsers.
type UserFilter struct {
	Role     Role
	IsActive *bool
	Q        string // matches e-mail, username or full name
	Page
}

// ListUsers lists users by id with the total matching.
func (db *DB) ListUsers(ctx context.Context, f UserFilter) ([]*User, int, error) {
	var where []string
	var args []any
	if f.Role != "" {
		where = append(where, "u.role = ?")
		args = append(args, string(f.Role))
	}
	if f.IsActive != nil {
		where = append(where, "u.is_active = ?")
		args = append(args, boolInt(*f.IsActive))
	}
	if q := strings.TrimSpace(f.Q); q != "" {
		where = append(where, `(u.email LIKE ? ESCAPE '\' OR u.username LIKE ? ESCAPE '\' OR u.full_name LIKE ? ESCAPE '\')`)
		p := likePattern(q)
		args = append(args, p, p, p)
	}
	return listPage(ctx, db, listQuery{from: "users u", where: where, args: args, columns: userColumns, order: "u.id", what: "users"},
		f.Page, func(r rowScanner) (*User, error) { return scanUser(r) })
}

// UserUpdate holds the profile fields to change; nil leaves a field alone.
type UserUpdate struct {
	Email        *string
	Username     *string
	FullName     *string
	PasswordHash *string
	// KeepSession, with PasswordHash, is the one session that survives the
	// password change (the caller's own); 0 ends them all.
	KeepSession int64
}

// UpdateUser changes profile fields. A new password ends every session of the
// user but KeepSession, in the same transaction.
func (db *DB) UpdateUser(ctx context.Context, id int64, up UserUpdate) (*User, error) {
	var sets []string
	var args []any
	if up.Email != nil {
		sets, args = append(sets, "email = ?", "email_key = ?"), append(args, NormalizeEmail(*up.Email), EmailKey(*up.Email))
	}
	if up.Username != nil {
		sets, args = append(sets, "username = ?"), append(args, *up.Username)
	}
	if up.FullName != nil {
		sets, args = append(sets, "full_name = ?"), append(args, *up.FullName)
	}
	if up.PasswordHash != nil {
		sets, args = append(sets, "password_hash = ?"), append(args, *up.PasswordHash)
	}
	if len(sets) == 0 {
		return db.UserByID(ctx, id)
	}
	now := db.now()
	sets = append(sets, "updated_at = ?")
	args = append(args, now, id)
	err := db.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE users SET `+strings.Join(sets, ", ")+` WHERE id = ?`, args...)
		if err != nil {
			return translate(err, "user")
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return NotFound("user not found")
		}
		if up.PasswordHash != nil {
			return revokeUserSessions(ctx, tx, id, up.KeepSession, now)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return db.UserByID(ctx, id)
}

// SetUserRole changes a role. It refuses to leave the instance without an
// active super_admin.
func (db *DB) SetUserRole(ctx context.Context, id int64, role Role) (*User, error) {
	err := db.tx(ctx, func(tx *sql.Tx) error {
		if role != RoleSuperAdmin {
			if err := guardLastSuperAdmin(ctx, tx, id, "change the role of"); err != nil {
				return err
			}
		}
		res, err := tx.ExecContext(ctx, `UPDATE users SET role = ?, updated_at = ? WHERE id = ?`, string(role), db.now(), id)
		if err != nil {
			return translate(err, "user")
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return NotFound("user not found")
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return db.UserByID(ctx, id)
}

// SetUserActive enables or disables an account. Disabling ends all its
// sessions at once and refuses to disable the last active super_admin.
func (db *DB) SetUserActive(ctx context.Context, id int64, active bool) (*User, error) {
	now := db.now()
	err := db.tx(ctx, func(tx *sql.Tx) error {
		if !active {
			if err := guardLastSuperAdmin(ctx, tx, id, "disable"); err != nil {
				return err
			}
		}
		res, err := tx.ExecContext(ctx, `UPDATE users SET is_active = ?, updated_at = ? WHERE id = ?`, boolInt(active), now, id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return NotFound("user not found")
		}
		if !active {
			return revokeUserSessions(ctx, tx, id, 0, now)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return db.UserByID(ctx, id)
}

// guardLastSuperAdmin fails with a conflict when user id is the only active
// super_admin left.
func guardLastSuperAdmin(ctx context.Context, tx *sql.Tx, id int64, verb string) error {
	var role string
	var active bool
	err := tx.QueryRowContext(ctx, `SELECT role, is_active FROM users WHERE id = ?`, id).Scan(&role, &active)
	if errors.Is(err, sql.ErrNoRows) {
		return NotFound("user not found")
	}
	if err != nil {
		return err
	}
	if Role(role) != RoleSuperAdmin || !active {
		return nil
	}
	var others int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM users WHERE role = 'super_admin' AND is_active = 1 AND id <> ?`, id).Scan(&others); err != nil {
		return err
	}
	if others == 0 {
		return Conflict("cannot %s the last active super_admin: make another user super_admin first", verb)
	}
	return nil
}

// CountActiveSuperAdmins counts enabled super_admin accounts.
func (db *DB) CountActiveSuperAdmins(ctx context.Context) (int, error) {
	var n int
	err := db.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM users WHERE role = 'super_admin' AND is_active = 1`).Scan(&n)
	return n, err
}

// CountActiveUsers counts enabled accounts.
func (db *DB) CountActiveUsers(ctx context.Context) (int, error) {
	var n int
	err := db.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM users WHERE is_active = 1`).Scan(&n)
	return n, err
}
