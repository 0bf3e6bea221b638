package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// Credential providers.
const (
	ProviderOpenAI           = "openai"
	ProviderAnthropic        = "anthropic"
	ProviderOpenAICompatible = "openai_compatible"
	ProviderWordPress        = "wordpress"
	ProviderSERP             = "serp"
)

// Providers lists every credential provider.
var Providers = []string{ProviderOpenAI, ProviderAnthropic, ProviderOpenAICompatible, ProviderWordPress, ProviderSERP}

// IsAIProvider reports whether a credential of provider p can generate text.
func IsAIProvider(p string) bool {
	return p == ProviderOpenAI || p == ProviderAnthropic || p == ProviderOpenAICompatible
}

// Credential is an API credential. Secret is sealed (see keyring); only
// SecretHint, a masked form, is ever shown.
type Credential struct {
	ID            int64
	Name          string
	Provider      string
	BaseURL       string
	Username      string
	Secret        []byte
	SecretHint    string
	DefaultModel  string
	EnvironmentID *int64
	LastTestedAt  *time.Time
	LastTestOK    *bool
	LastTestError string
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// UsableIn reports whether the credential may be used in environment envID
// (nil: outside any environment): a global credential anywhere, one bound
// to an environment only there.
func (c *Credential) UsableIn(envID *int64) bool {
	return c.EnvironmentID == nil || (envID != nil && *c.EnvironmentID == *envID)
}

// CredentialAAD binds a sealed secret to its row, so a sealed value copied
// to another row does not open.
func CredentialAAD(id int64) string { return fmt.Sprintf("credential:%d:secret", id) }

const credentialColumns = `c.id, c.name, c.provider, c.base_url, c.username, c.secret, c.secret_hint, c.default_model,
	c.environment_id, c.last_tested_at, c.last_test_ok, c.last_test_error, c.created_at, c.updated_at`

func scanCredential(row rowScanner) (*Credential, error) {
	var c Credential
	var env sql.NullInt64
	var tested sql.NullString
	var ok sql.NullBool
	var created, updated string
	if err := row.Scan(&c.ID, &c.Name, &c.Provider, &c.BaseURL, &c.Username, &c.Secret, &c.SecretHint, &c.DefaultModel,
		&env, &tested, &ok, &c.LastTestError, &created, &updated); err != nil {
		return nil, err
	}
	if env.Valid {
		c.EnvironmentID = &env.Int64
	}
	if ok.Valid {
		c.LastTestOK = &ok.Bool
	}
	c.LastTestedAt = parseNullTime(tested)
	c.CreatedAt, c.UpdatedAt = parseTime(created), parseTime(updated)
	return &c, nil
}

// NewCredential is what CreateCredential needs. Seal seals the secret for
// the new row's id (the id is part of what the seal binds to).
type NewCredential struct {
	Name          string
	Provider      string
	BaseURL       string
	Username      string
	SecretHint    string
	DefaultModel  string
	EnvironmentID *int64
	Seal          func(id int64) ([]byte, error)
}

// CreateCredential inserts a credential and seals its secret in the same
// transaction.
func (db *DB) CreateCredential(ctx context.Context, n NewCredential) (*Credential, error) {
	now := db.now()
	var id int64
	err := db.tx(ctx, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `INSERT INTO credentials (name, provider, base_url, username, secret, secret_hint,
			default_model, environment_id, created_at, updated_at) VALUES (?, ?, ?, ?, x'', ?, ?, ?, ?, ?) RETURNING id`,
			n.Name, n.Provider, n.BaseURL, n.Username, n.SecretHint, n.DefaultModel, n.EnvironmentID, now, now).Scan(&id)
		if err != nil {
			return translate(err, "credential")
		}
		sealed, err := n.Seal(id)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE credentials SET secret = ? WHERE id = ?`, sealed, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	return db.CredentialByID(ctx, id)
}

// CredentialByID finds a credential.
func (db *DB) CredentialByID(ctx context.Context, id int64) (*Credential, error) {
	return findRow(ctx, db, scanCredential, "credential", `SELECT `+credentialColumns+` FROM credentials c WHERE c.id = ?`, id)
}

// CredentialFilter narrows ListCredentials.
type CredentialFilter struct {
	Provider      string
	EnvironmentID *int64 // only those of this environment (and, with Global, global ones)
	Global        bool
	Page
}

// ListCredentials lists credentials by name.
func (db *DB) ListCredentials(ctx context.Context, f CredentialFilter) ([]*Credential, int, error) {
	var where []string
	var args []any
	if f.Provider != "" {
		where, args = append(where, "c.provider = ?"), append(args, f.Provider)
	}
	if f.EnvironmentID != nil {
		if f.Global {
			where, args = append(where, "(c.environment_id = ? OR c.environment_id IS NULL)"), append(args, *f.EnvironmentID)
		} else {
			where, args = append(where, "c.environment_id = ?"), append(args, *f.EnvironmentID)
		}
	}
	return listPage(ctx, db, listQuery{from: "credentials c INDEXED BY credentials_list", count: "credentials c", where: where, args: args, columns: credentialColumns,
		order: "c.name COLLATE NOCASE, c.id", what: "credentials"}, f.Page, scanCredential)
}

// AICredentialFilter narrows ListAICredentials.
type AICredentialFilter struct {
	// EnvironmentID is where they are to be used: nil outside any
	// environment (global credentials only), else the environment's own
	// and the global ones (Credential.UsableIn).
	EnvironmentID *int64
	Page
}

// ListAICredentials lists, by name, the credentials that can generate text
// where the filter says: the candidates when no setting chooses one.
func (db *DB) ListAICredentials(ctx context.Context, f AICredentialFilter) ([]*Credential, int, error) {
	where := []string{"c.provider IN (?, ?, ?)"}
	args := []any{ProviderOpenAI, ProviderAnthropic, ProviderOpenAICompatible}
	if f.EnvironmentID != nil {
		where, args = append(where, "(c.environment_id = ? OR c.environment_id IS NULL)"), append(args, *f.EnvironmentID)
	} else {
		where = append(where, "c.environment_id IS NULL")
	}
	return listPage(ctx, db, listQuery{from: "credentials c INDEXED BY credentials_list", count: "credentials c", where: where, args: args,
		columns: credentialColumns, order: "c.name COLLATE NOCASE, c.id", what: "credentials"}, f.Page, scanCredential)
}

// CredentialUpdate holds the fields to change; nil leaves one alone.
type CredentialUpdate struct {
	Name          *string
	BaseURL       *string
	Username      *string
	DefaultModel  *string
	EnvironmentID **int64 // set to a nil *int64 to make it global
	Secret        []byte  // sealed; nil keeps the old secret
	SecretHint    *string
}

// UpdateCredential changes a credential.
func (db *DB) UpdateCredential(ctx context.Context, id int64, up CredentialUpdate) (*Credential, error) {
	var sets []string
	var args []any
	add := func(col string, v any) { sets, args = append(sets, col+" = ?"), append(args, v) }
	if up.Name != nil {
		add("name", *up.Name)
	}
	if up.BaseURL != nil {
		add("base_url", *up.BaseURL)
	}
	if up.Username != nil {
		add("username", *up.Username)
	}
	if up.DefaultModel != nil {
		add("default_model", *up.DefaultModel)
	}
	if up.EnvironmentID != nil {
		add("environment_id", *up.EnvironmentID)
	}
	if up.Secret != nil {
		add("secret", up.Secret)
		add("secret_hint", *up.SecretHint)
		// A new secret has not been tested.
		sets = append(sets, "last_tested_at = NULL", "last_test_ok = NULL", "last_test_error = ''")
	}
	if len(sets) > 0 {
		add("updated_at", db.now())
		res, err := db.exec(ctx, `UPDATE credentials SET `+strings.Join(sets, ", ")+` WHERE id = ?`, append(args, id)...)
		if err != nil {
			return nil, translate(err, "credential")
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil, NotFound("credential not found")
		}
	}
	return db.CredentialByID(ctx, id)
}

// DeleteCredential deletes a credential; settings and agents that used it
// fall back to their defaults.
func (db *DB) DeleteCredential(ctx context.Context, id int64) error {
	return db.deleteByID(ctx, "credentials", "credential", id)
}

// RecordCredentialTest notes the outcome of a credential test.
func (db *DB) RecordCredentialTest(ctx context.Context, id int64, ok bool, errText string) error {
	_, err := db.exec(ctx, `UPDATE credentials SET last_tested_at = ?, last_test_ok = ?, last_test_error = ? WHERE id = ?`,
		db.now(), boolInt(ok), errText, id)
	return err
}
