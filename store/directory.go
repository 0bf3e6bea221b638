package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// The directory: the people a user may write to. Everyone sees the active
// admins and super_admins; a user also sees the active users granted one of
// their environments; an admin (who sees every environment) sees every
// active user. Nobody is in their own directory.

// DirectoryFilter narrows ListDirectory.
type DirectoryFilter struct {
	Scope Scope  // whose directory: Scope.UserID is left out, Scope.Envs say who shares an environment
	Q     string // matches username or full name (never the e-mail address, which the directory does not show)
	Page
}

// directoryWhere renders who is in a scope's directory, with its arguments.
func directoryWhere(sc Scope) ([]string, []any) {
	where := []string{"u.is_active = 1", "u.id <> ?"}
	args := []any{sc.UserID}
	if sc.Admin {
		return where, args
	}
	// Two searches, each by an index (users_role; user_environments_env
	// then the users rowid), rather than a look at every user.
	cond := "u.role IN ('admin', 'super_admin')"
	if env, envArgs := sc.envIn("ue.environment_id"); len(envArgs) > 0 {
		cond = "(" + cond + " OR u.id IN (SELECT ue.user_id FROM user_environments ue WHERE " + env + "))"
		args = append(args, envArgs...)
	}
	return append(where, cond), args
}

const userSummaryColumns = `u.id, u.username, u.full_name, u.avatar_version`

func scanUserSummary(row rowScanner) (UserSummary, error) {
	var u UserSummary
	err := row.Scan(&u.ID, &u.Username, &u.FullName, &u.AvatarVersion)
	return u, err
}

// ListDirectory lists a scope's directory by username.
func (db *DB) ListDirectory(ctx context.Context, f DirectoryFilter) ([]UserSummary, int, error) {
	where, args := directoryWhere(f.Scope)
	if q := strings.TrimSpace(f.Q); q != "" {
		where = append(where, `(u.username LIKE ? ESCAPE '\' OR u.full_name LIKE ? ESCAPE '\')`)
		p := likePattern(q)
		args = append(args, p, p)
	}
	// The page walks the usernames' index (the one their UNIQUE constraint
	// made) rather than gather a scope's users and sort them; the count
	// searches by role and by grant (directoryWhere).
	return listPage(ctx, db, listQuery{from: "users u INDEXED BY sqlite_autoindex_users_2", count: "users u", where: where, args: args,
		columns: userSummaryColumns, order: "u.username", what: "directory"}, f.Page, scanUserSummary)
}

// InDirectory reports whether userID is in the scope's directory: an
// active user the scope's user may write to.
func (db *DB) InDirectory(ctx context.Context, sc Scope, userID int64) (bool, error) {
	where, args := directoryWhere(sc)
	var one int
	err := db.r.QueryRowContext(ctx, `SELECT 1 FROM users u WHERE u.id = ? AND `+strings.Join(where, " AND "),
		append([]any{userID}, args...)...).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("store: directory: %w", err)
	}
	return true, nil
}
