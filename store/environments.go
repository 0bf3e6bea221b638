package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

// Environment is a site or workspace: the tenancy boundary. Every content
// resource belongs to one, and non-admins see only those granted to them.
type Environment struct {
	ID            int64
	Name          string
	Slug          string
	Description   string
	Configuration EnvironmentConfig
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// EnvironmentConfig is how an environment publishes and generates. The
// server validates it (server/environments.go) before it is stored.
type EnvironmentConfig struct {
	WordPress          *WordPressConfig `json:"wordpress"`
	Astro              *AstroConfig     `json:"astro"`
	DefaultAgentID     *int64           `json:"default_agent_id"`
	DefaultArchetypeID *int64           `json:"default_archetype_id"`
	Language           string           `json:"language"`
	Timezone           string           `json:"timezone"`
}

// WordPressConfig points at a WordPress site and the credential to use there.
type WordPressConfig struct {
	BaseURL       string `json:"base_url"`
	CredentialID  *int64 `json:"credential_id"`
	DefaultStatus string `json:"default_status"`
}

// AstroConfig points at an Astro project on this machine.
type AstroConfig struct {
	ProjectPath string `json:"project_path"`
	ContentDir  string `json:"content_dir"`
}

const environmentColumns = `e.id, e.name, e.slug, e.description, e.configuration, e.created_at, e.updated_at`

func scanEnvironment(row rowScanner) (*Environment, error) {
	var e Environment
	var cfg, created, updated string
	if err := row.Scan(&e.ID, &e.Name, &e.Slug, &e.Description, &cfg, &created, &updated); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(cfg), &e.Configuration); err != nil {
		return nil, fmt.Errorf("environment %d: configuration: %w", e.ID, err)
	}
	e.CreatedAt, e.UpdatedAt = parseTime(created), parseTime(updated)
	return &e, nil
}

// NewEnvironment is what CreateEnvironment needs.
type NewEnvironment struct {
	Name          string
	Slug          string
	Description   string
	Configuration EnvironmentConfig
}

// CreateEnvironment inserts an environment; a taken slug is a conflict.
func (db *DB) CreateEnvironment(ctx context.Context, n NewEnvironment) (*Environment, error) {
	cfg, err := json.Marshal(n.Configuration)
	if err != nil {
		return nil, err
	}
	now := db.now()
	e, err := insertRow(ctx, db, scanEnvironment, `INSERT INTO environments (name, slug, description, configuration, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?) RETURNING `+returning(environmentColumns), n.Name, n.Slug, n.Description, string(cfg), now, now)
	if err != nil {
		return nil, translate(err, "environment")
	}
	return e, nil
}

// EnvironmentByID finds an environment.
func (db *DB) EnvironmentByID(ctx context.Context, id int64) (*Environment, error) {
	e, err := scanEnvironment(db.r.QueryRowContext(ctx, `SELECT `+environmentColumns+` FROM environments e WHERE e.id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, NotFound("environment not found")
	}
	if err != nil {
		return nil, fmt.Errorf("store: find environment: %w", err)
	}
	return e, nil
}

// EnvironmentFilter narrows ListEnvironments.
type EnvironmentFilter struct {
	// VisibleTo, when non-zero, keeps only environments granted to that user.
	VisibleTo int64
	Q         string
	Page
}

// ListEnvironments lists environments by name.
func (db *DB) ListEnvironments(ctx context.Context, f EnvironmentFilter) ([]*Environment, int, error) {
	var where []string
	var args []any
	if f.VisibleTo != 0 {
		where = append(where, `e.id IN (SELECT environment_id FROM user_environments WHERE user_id = ?)`)
		args = append(args, f.VisibleTo)
	}
	if q := strings.TrimSpace(f.Q); q != "" {
		where = append(where, `(e.name LIKE ? ESCAPE '\' OR e.slug LIKE ? ESCAPE '\')`)
		args = append(args, likePattern(q), likePattern(q))
	}
	return listPage(ctx, db, listQuery{from: "environments e INDEXED BY environments_list", count: "environments e", where: where, args: args, columns: environmentColumns,
		order: "e.name COLLATE NOCASE, e.id", what: "environments"}, f.Page, scanEnvironment)
}

// EnvironmentUpdate holds the fields to change; nil leaves one alone.
type EnvironmentUpdate struct {
	Name          *string
	Slug          *string
	Description   *string
	Configuration *EnvironmentConfig
}

// UpdateEnvironment changes an environment.
func (db *DB) UpdateEnvironment(ctx context.Context, id int64, up EnvironmentUpdate) (*Environment, error) {
	var sets []string
	var args []any
	if up.Name != nil {
		sets, args = append(sets, "name = ?"), append(args, *up.Name)
	}
	if up.Slug != nil {
		sets, args = append(sets, "slug = ?"), append(args, *up.Slug)
	}
	if up.Description != nil {
		sets, args = append(sets, "description = ?"), append(args, *up.Description)
	}
	if up.Configuration != nil {
		cfg, err := json.Marshal(up.Configuration)
		if err != nil {
			return nil, err
		}
		sets, args = append(sets, "configuration = ?"), append(args, string(cfg))
	}
	if len(sets) > 0 {
		sets = append(sets, "updated_at = ?")
		args = append(args, db.now(), id)
		res, err := db.exec(ctx, `UPDATE environments SET `+strings.Join(sets, ", ")+` WHERE id = ?`, args...)
		if err != nil {
			return nil, translate(err, "environment")
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil, NotFound("environment not found")
		}
	}
	return db.EnvironmentByID(ctx, id)
}

// DeleteEnvironment removes an environment and, through foreign keys,
// everything that belongs to it.
func (db *DB) DeleteEnvironment(ctx context.Context, id int64) error {
	res, err := db.exec(ctx, `DELETE FROM environments WHERE id = ?`, id)
	if err != nil {
		return fmt.Errorf("store: delete environment: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return NotFound("environment not found")
	}
	return nil
}

// UserHasEnvironment reports whether an environment was granted to a user.
func (db *DB) UserHasEnvironment(ctx context.Context, userID, envID int64) (bool, error) {
	var one int
	err := db.r.QueryRowContext(ctx, `SELECT 1 FROM user_environments WHERE user_id = ? AND environment_id = ?`, userID, envID).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("store: check environment access: %w", err)
	}
	return true, nil
}

// UserEnvironmentIDs lists the environments granted to a user.
func (db *DB) UserEnvironmentIDs(ctx context.Context, userID int64) ([]int64, error) {
	return db.ids(ctx, `SELECT environment_id FROM user_environments WHERE user_id = ? ORDER BY environment_id`, userID)
}

// SetUserEnvironments replaces the environments granted to a user. Every id
// must exist; the error names the ones that do not.
func (db *DB) SetUserEnvironments(ctx context.Context, userID int64, envIDs []int64) ([]int64, error) {
	ids := dedupe(envIDs)
	err := db.tx(ctx, func(tx *sql.Tx) error {
		var one int
		if err := tx.QueryRowContext(ctx, `SELECT 1 FROM users WHERE id = ?`, userID).Scan(&one); errors.Is(err, sql.ErrNoRows) {
			return NotFound("user not found")
		} else if err != nil {
			return err
		}
		var missing []string
		for _, id := range ids {
			err := tx.QueryRowContext(ctx, `SELECT 1 FROM environments WHERE id = ?`, id).Scan(&one)
			if errors.Is(err, sql.ErrNoRows) {
				missing = append(missing, fmt.Sprint(id))
			} else if err != nil {
				return err
			}
		}
		if len(missing) > 0 {
			return Invalid("environment_ids: no environment with id %s", strings.Join(missing, ", "))
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM user_environments WHERE user_id = ?`, userID); err != nil {
			return err
		}
		for _, id := range ids {
			if _, err := tx.ExecContext(ctx, `INSERT INTO user_environments (user_id, environment_id) VALUES (?, ?)`, userID, id); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return ids, nil
}

func dedupe(ids []int64) []int64 {
	out := make([]int64, 0, len(ids))
	seen := map[int64]bool{}
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

var (
	languagePattern = regexp.MustCompile(`^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$`)
	slugPattern     = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)
)

// ValidSlug reports whether s is a lower-case, dash-separated slug of at most
// 64 characters.
func ValidSlug(s string) bool { return len(s) <= 64 && slugPattern.MatchString(s) }

// Normalize fills defaults and checks every field, naming the first one that
// is wrong as "configuration.<field>".
func (c *EnvironmentConfig) Normalize() error {
	if c.Language == "" {
		c.Language = "en"
	}
	if !languagePattern.MatchString(c.Language) {
		return Invalid("configuration.language: must be a language tag like en, de or pt-BR")
	}
	if c.Timezone == "" {
		c.Timezone = "UTC"
	}
	if _, err := time.LoadLocation(c.Timezone); err != nil || strings.EqualFold(c.Timezone, "local") {
		return Invalid("configuration.timezone: must be an IANA time zone like UTC or Europe/Berlin")
	}
	if c.DefaultAgentID != nil && *c.DefaultAgentID <= 0 {
		return Invalid("configuration.default_agent_id: must be a positive id")
	}
	if c.DefaultArchetypeID != nil && *c.DefaultArchetypeID <= 0 {
		return Invalid("configuration.default_archetype_id: must be a positive id")
	}
	if wp := c.WordPress; wp != nil {
		u, err := url.Parse(strings.TrimSpace(wp.BaseURL))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.RawQuery != "" || u.ForceQuery ||
			u.Fragment != "" || u.User != nil {
			return Invalid("configuration.wordpress.base_url: must be the http or https address of the WordPress site, like https://example.com")
		}
		wp.BaseURL = strings.TrimRight(u.String(), "/")
		if wp.CredentialID != nil && *wp.CredentialID <= 0 {
			return Invalid("configuration.wordpress.credential_id: must be a positive id")
		}
		switch wp.DefaultStatus {
		case "":
			wp.DefaultStatus = "draft"
		case "draft", "publish", "pending", "private":
		default:
			return Invalid("configuration.wordpress.default_status: must be one of draft, publish, pending, private")
		}
	}
	if a := c.Astro; a != nil {
		if a.ProjectPath == "" || !filepath.IsAbs(a.ProjectPath) {
			return Invalid("configuration.astro.project_path: must be the absolute path of the Astro project on the server")
		}
		a.ProjectPath = filepath.Clean(a.ProjectPath)
		if a.ContentDir == "" {
			a.ContentDir = "src/content/blog"
		}
		cd := filepath.ToSlash(filepath.Clean(a.ContentDir))
		if filepath.IsAbs(a.ContentDir) || cd == ".." || strings.HasPrefix(cd, "../") {
			return Invalid("configuration.astro.content_dir: must be a folder inside the project, like src/content/blog")
		}
		a.ContentDir = cd
	}
	return nil
}
