package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
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

// EnvironmentConfig is how an environment publishes and generates. Its
// rules and defaults are server/environment's NormalizeConfig, applied
// before it is stored.
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
	// RawHTML sends a post's HTML as its Markdown renders, without the
	// allow-list cleaning (server/sanitize): script, event handlers and
	// javascript: links reach the site, which stores them when the
	// credential's user may post unfiltered HTML (an administrator).
	RawHTML bool `json:"raw_html"`
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
	var e *Environment
	err = db.tx(ctx, func(tx *sql.Tx) error {
		if err := db.astroFolderFree(ctx, tx, 0, n.Configuration.Astro); err != nil {
			return err
		}
		var err error
		e, err = scanEnvironment(tx.QueryRowContext(ctx, `INSERT INTO environments (name, slug, description, configuration, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?) RETURNING `+returning(environmentColumns), n.Name, n.Slug, n.Description, string(cfg), now, now))
		return translate(err, "environment")
	})
	if err != nil {
		return nil, err
	}
	return e, nil
}

// astroFolderFree: no environment but id writes Astro posts into the
// content folder of a (nil: none), nor into a folder inside it or around
// it. Two environments writing one folder would write over each other's
// files and import each other's posts; a folder nested in another is the
// same trouble for the files under both. It runs in the transaction that
// saves the configuration, so two saves at once cannot both take a
// folder. Folders are compared by their real paths where they exist
// (symlinks resolved, so a second name of a folder is the folder), else as
// the cleaned paths the configuration holds.
func (db *DB) astroFolderFree(ctx context.Context, tx *sql.Tx, id int64, a *AstroConfig) error {
	if a == nil {
		return nil
	}
	folder := filepath.Join(a.ProjectPath, a.ContentDir)
	real := realPath(folder)
	project, dir := db.d.JSONText("configuration", "astro.project_path"), db.d.JSONText("configuration", "astro.content_dir")
	rows, err := tx.QueryContext(ctx, `SELECT id, name, `+project+`, `+dir+` FROM environments
		WHERE id != ? AND `+project+` IS NOT NULL`, id)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var other int64
		var name, project string
		var dir sql.NullString
		if err := rows.Scan(&other, &name, &project, &dir); err != nil {
			return err
		}
		theirs := filepath.Join(project, dir.String)
		otherReal := realPath(theirs)
		switch {
		case otherReal == real:
			return Conflict("configuration.astro: environment %d (%s) already writes its Astro posts into %s; two environments cannot share a content folder",
				other, name, theirs)
		case within(real, otherReal) || within(otherReal, real):
			return Conflict("configuration.astro: environment %d (%s) writes its Astro posts into %s, and %s is inside it or holds it; two environments cannot share a content folder, nor nest one in the other",
				other, name, theirs, folder)
		}
	}
	return rows.Err()
}

// realPath is p with its symlinks resolved: of p itself when it exists,
// else of its nearest existing parent, joined with the rest.
func realPath(p string) string {
	p = filepath.Clean(p)
	rest := ""
	for {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return filepath.Join(p, rest)
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = parent
	}
}

// within reports whether folder inner lies below folder outer (not equal).
func within(inner, outer string) bool {
	rel, err := filepath.Rel(outer, inner)
	return err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// EnvironmentByID finds an environment.
func (db *DB) EnvironmentByID(ctx context.Context, id int64) (*Environment, error) {
	return findRow(ctx, db, scanEnvironment, "environment", `SELECT `+environmentColumns+` FROM environments e WHERE e.id = ?`, id)
}

// EnvironmentFilter narrows ListEnvironments.
type EnvironmentFilter struct {
	Scope Scope // only the environments it sees
	Q     string
	Page
}

// ListEnvironments lists environments by name.
func (db *DB) ListEnvironments(ctx context.Context, f EnvironmentFilter) ([]*Environment, int, error) {
	var where []string
	var args []any
	if cond, condArgs := f.Scope.envIn("e.id"); cond != "" {
		where, args = append(where, cond), append(args, condArgs...)
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
		err := db.tx(ctx, func(tx *sql.Tx) error {
			if up.Configuration != nil {
				if err := db.astroFolderFree(ctx, tx, id, up.Configuration.Astro); err != nil {
					return err
				}
			}
			res, err := tx.ExecContext(ctx, `UPDATE environments SET `+strings.Join(sets, ", ")+` WHERE id = ?`, args...)
			if err != nil {
				return translate(err, "environment")
			}
			if n, _ := res.RowsAffected(); n == 0 {
				return NotFound("environment not found")
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return db.EnvironmentByID(ctx, id)
}

// DeleteEnvironment removes an environment and, through foreign keys,
// everything that belongs to it.
func (db *DB) DeleteEnvironment(ctx context.Context, id int64) error {
	return db.deleteByID(ctx, "environments", "environment", id)
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
		if err := requireEnvironments(ctx, tx, ids); err != nil {
			return err
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

// requireEnvironments refuses ids of environments that do not exist, as
// invalid environment_ids naming them.
func requireEnvironments(ctx context.Context, tx *sql.Tx, ids []int64) error {
	var missing []string
	for _, id := range ids {
		var one int
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
	return nil
}

func dedupe(ids []int64) []int64 {
	out := firstOfEach(ids)
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// envOf is the environment of row id of table, read in tx.
func envOf(ctx context.Context, tx *sql.Tx, table string, id int64, what string) (int64, error) {
	var envID int64
	err := tx.QueryRowContext(ctx, `SELECT environment_id FROM `+table+` WHERE id = ?`, id).Scan(&envID)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, NotFound("%s not found", what)
	}
	return envID, err
}
