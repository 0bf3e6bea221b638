package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// APIToken is a personal API token (server/auth): a secret its user made
// for scripts. The store keeps only the secret's hash; Prefix is its first
// characters, for telling tokens apart.
type APIToken struct {
	ID       int64
	UserID   int64
	Name     string
	Prefix   string
	Hash     []byte
	ReadOnly bool
	// Limited: the token sees only EnvironmentIDs (of those its user has);
	// otherwise every environment its user sees.
	Limited        bool
	EnvironmentIDs []int64 // sorted; only when Limited
	CreatedAt      time.Time
	LastUsedAt     *time.Time
	ExpiresAt      *time.Time // nil: never
	RevokedAt      *time.Time
}

// Expired reports whether the token's expiry has passed at now.
func (t *APIToken) Expired(now time.Time) bool {
	return t.ExpiresAt != nil && !now.Before(*t.ExpiresAt)
}

const apiTokenColumns = `t.id, t.user_id, t.name, t.prefix, t.secret_hash, t.read_only, t.limited, t.created_at, t.last_used_at,
	t.expires_at, t.revoked_at`

func scanAPIToken(row rowScanner, extra ...any) (*APIToken, error) {
	var t APIToken
	var created string
	var used, exp, revoked sql.NullString
	dest := append([]any{&t.ID, &t.UserID, &t.Name, &t.Prefix, &t.Hash, &t.ReadOnly, &t.Limited, &created, &used, &exp, &revoked}, extra...)
	if err := row.Scan(dest...); err != nil {
		return nil, err
	}
	t.CreatedAt = parseTime(created)
	t.LastUsedAt, t.ExpiresAt, t.RevokedAt = parseNullTime(used), parseNullTime(exp), parseNullTime(revoked)
	return &t, nil
}

// NewAPIToken is what CreateAPIToken needs. The service makes the secret
// and checks the environments against the user's; the store checks that
// they exist.
type NewAPIToken struct {
	UserID         int64
	Name           string
	Prefix         string
	Hash           []byte
	ReadOnly       bool
	Limited        bool
	EnvironmentIDs []int64
	ExpiresAt      *time.Time
	// Max bounds the user's tokens that are not revoked (0: no bound); one
	// more is a conflict.
	Max int
}

// CreateAPIToken stores a token and its environments in one transaction.
// An environment that does not exist is invalid, named in the error; a
// user who has n.Max tokens already is a conflict.
func (db *DB) CreateAPIToken(ctx context.Context, n NewAPIToken) (*APIToken, error) {
	ids := dedupe(n.EnvironmentIDs)
	var t *APIToken
	err := db.tx(ctx, func(tx *sql.Tx) error {
		if n.Max > 0 {
			var count int
			if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM api_tokens WHERE user_id = ? AND revoked_at IS NULL`, n.UserID).
				Scan(&count); err != nil {
				return fmt.Errorf("store: count API tokens: %w", err)
			}
			if count >= n.Max {
				return Conflict("you have %d API tokens, the most one account may have: revoke one you no longer use first", count)
			}
		}
		if err := requireEnvironments(ctx, tx, ids); err != nil {
			return err
		}
		var err error
		t, err = scanAPIToken(tx.QueryRowContext(ctx, `INSERT INTO api_tokens (user_id, name, prefix, secret_hash, read_only, limited,
			created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING `+returning(apiTokenColumns),
			n.UserID, n.Name, n.Prefix, n.Hash, boolInt(n.ReadOnly), boolInt(n.Limited), db.now(), nullTime(n.ExpiresAt)))
		if err != nil {
			return translate(err, "API token")
		}
		for _, id := range ids {
			if _, err := tx.ExecContext(ctx, `INSERT INTO api_token_environments (token_id, environment_id) VALUES (?, ?)`, t.ID, id); err != nil {
				return translate(err, "API token environment")
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if t.Limited {
		t.EnvironmentIDs = ids
	}
	return t, nil
}

// apiTokenWithUserQuery is the lookup of every request that carries an
// API token: one search of the unique index on the hash. Like
// sessionWithUserQuery it reads no password hash or TOTP secret.
const apiTokenWithUserQuery = `SELECT ` + apiTokenColumns + `,
	u.email, u.username, u.full_name, u.role, u.is_active, u.totp_enabled, u.avatar_version,
	u.last_login_at, u.created_at, u.updated_at
	FROM api_tokens t JOIN users u ON u.id = t.user_id WHERE t.secret_hash = ?`

// APITokenWithUser finds the token whose secret hashes to hash, with its
// user and, for a limited token, its environments. A hash no token has is
// not found, after one search of an index.
func (db *DB) APITokenWithUser(ctx context.Context, hash []byte) (*APIToken, *User, error) {
	st, err := db.readStmt(ctx, apiTokenWithUserQuery)
	if err != nil {
		return nil, nil, fmt.Errorf("store: find API token: %w", err)
	}
	var u User
	var role, created, updated string
	var lastLogin sql.NullString
	t, err := scanAPIToken(st.QueryRowContext(ctx, hash), &u.Email, &u.Username, &u.FullName, &role, &u.IsActive, &u.TOTPEnabled,
		&u.AvatarVersion, &lastLogin, &created, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil, NotFound("API token not found")
	}
	if err != nil {
		return nil, nil, fmt.Errorf("store: find API token: %w", err)
	}
	u.ID, u.Role = t.UserID, Role(role)
	u.LastLoginAt = parseNullTime(lastLogin)
	u.CreatedAt, u.UpdatedAt = parseTime(created), parseTime(updated)
	if t.Limited {
		if err := db.loadTokenEnvironments(ctx, []*APIToken{t}); err != nil {
			return nil, nil, err
		}
	}
	return t, &u, nil
}

// ListAPITokens lists a page of a user's tokens that are not revoked,
// expired ones included (so their owner sees why a script stopped),
// newest first.
func (db *DB) ListAPITokens(ctx context.Context, userID int64, p Page) ([]*APIToken, int, error) {
	list, total, err := listPage(ctx, db, listQuery{from: "api_tokens t", where: []string{"t.user_id = ?", "t.revoked_at IS NULL"},
		args: []any{userID}, columns: apiTokenColumns, order: "t.id DESC", what: "API tokens"}, p, func(r rowScanner) (*APIToken, error) {
		return scanAPIToken(r)
	})
	if err != nil {
		return nil, 0, err
	}
	return list, total, db.loadTokenEnvironments(ctx, list)
}

// loadTokenEnvironments fills in the environments of the limited tokens
// among ts, a page of them at most, with one query for all.
func (db *DB) loadTokenEnvironments(ctx context.Context, ts []*APIToken) error {
	byID := map[int64]*APIToken{}
	var ids []int64
	for _, t := range ts {
		if t.Limited {
			t.EnvironmentIDs = []int64{}
			byID[t.ID] = t
			ids = append(ids, t.ID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	cond, args := idList("token_id", ids)
	rows, err := db.listRows(ctx, `SELECT token_id, environment_id FROM api_token_environments WHERE `+cond+
		` ORDER BY token_id, environment_id`, args...)
	if err != nil {
		return fmt.Errorf("store: API token environments: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var tokenID, envID int64
		if err := rows.Scan(&tokenID, &envID); err != nil {
			return fmt.Errorf("store: API token environments: %w", err)
		}
		t := byID[tokenID]
		t.EnvironmentIDs = append(t.EnvironmentIDs, envID)
	}
	return rows.Err()
}

// RevokeAPIToken revokes one of a user's tokens: its next request is
// refused. A token of another user, or one already revoked, is not found.
func (db *DB) RevokeAPIToken(ctx context.Context, userID, tokenID int64) error {
	res, err := db.exec(ctx, `UPDATE api_tokens SET revoked_at = ? WHERE id = ? AND user_id = ? AND revoked_at IS NULL`,
		db.now(), tokenID, userID)
	if err != nil {
		return fmt.Errorf("store: revoke API token: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return NotFound("API token not found")
	}
	return nil
}

// TouchAPIToken records that a token was used now.
func (db *DB) TouchAPIToken(ctx context.Context, id int64) error {
	_, err := db.exec(ctx, `UPDATE api_tokens SET last_used_at = ? WHERE id = ?`, db.now(), id)
	return err
}

// PruneAPITokens deletes the tokens revoked, or expired, before cutoff:
// neither can be used again, revoked ones are no longer listed, and an
// expired one has been listed as expired long enough for its user to see
// why a script stopped.
func (db *DB) PruneAPITokens(ctx context.Context, cutoff time.Time) (int64, error) {
	c := fmtTime(cutoff)
	res, err := db.exec(ctx, `DELETE FROM api_tokens WHERE revoked_at < ? OR expires_at < ?`, c, c)
	if err != nil {
		return 0, fmt.Errorf("store: prune API tokens: %w", err)
	}
	return res.RowsAffected()
}
