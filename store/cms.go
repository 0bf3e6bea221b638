package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// The CMS taxonomy: categories (with a parent) and tags per environment,
// shared by the post kinds.

// Category is a CMS category.
type Category struct {
	ID            int64
	EnvironmentID int64
	ParentID      *int64
	Name          string
	Slug          string
	Description   string
	// WPTermID is the WordPress term this category is on the
	// environment's site, once it was sent there or imported.
	WPTermID  *int64
	CreatedAt time.Time
	UpdatedAt time.Time
	// PostCounts are the posts of each kind filed under it (see postLinks).
	PostCounts map[string]int
}

// Tag is a CMS tag.
type Tag struct {
	ID            int64
	EnvironmentID int64
	Name          string
	Slug          string
	WPTermID      *int64
	CreatedAt     time.Time
	UpdatedAt     time.Time
	PostCounts    map[string]int
}

// postLink is how one post kind files its posts under categories and tags:
// two tables of (post_id, category_id) and (post_id, tag_id), each with an
// index that starts with the term's column.
type postLink struct {
	kind       string // "wordpress", "astro"
	categories string // table linking posts to categories
	tags       string // table linking posts to tags
	// posts, when set, is the kind's table of posts kept in sync with a
	// site (sync_status): deleting a term they carry makes those that
	// were synced dirty, since the site still files them under it.
	posts string
}

// postLinks lists the post kinds; each kind's migration makes its tables
// and its store file adds it here (init), so the counts and the detaching
// on delete cover every kind.
var postLinks []postLink

const categoryColumns = `c.id, c.environment_id, c.parent_id, c.name, c.slug, c.description, c.wp_term_id, c.created_at, c.updated_at`

func scanCategory(row rowScanner) (*Category, error) {
	var c Category
	var parent, term sql.NullInt64
	var created, updated string
	if err := row.Scan(&c.ID, &c.EnvironmentID, &parent, &c.Name, &c.Slug, &c.Description, &term, &created, &updated); err != nil {
		return nil, err
	}
	c.ParentID, c.WPTermID = nullID(parent), nullID(term)
	c.CreatedAt, c.UpdatedAt = parseTime(created), parseTime(updated)
	return &c, nil
}

// NewCategory is what CreateCategory needs: a Slug, or SlugTries to make
// one.
type NewCategory struct {
	EnvironmentID int64
	ParentID      *int64
	Name          string
	Slug          string
	SlugTries     SlugTries
	Description   string
}

// CreateCategory inserts a category. A given slug that is taken is a
// conflict; without one, the first free slug of SlugTries is taken. The
// parent must be a category of the same environment.
func (db *DB) CreateCategory(ctx context.Context, n NewCategory) (*Category, error) {
	var id int64
	err := db.tx(ctx, func(tx *sql.Tx) error {
		if n.ParentID != nil {
			if err := checkParent(ctx, tx, n.EnvironmentID, 0, *n.ParentID); err != nil {
				return err
			}
		}
		now := db.now()
		var err error
		id, err = insertSlugged(ctx, tx, "cms_categories", "category", n.Slug, n.SlugTries, func(s string) (id int64, err error) {
			return id, tx.QueryRowContext(ctx, `INSERT INTO cms_categories (environment_id, parent_id, name, slug, description, created_at, updated_at)
				VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id`, n.EnvironmentID, n.ParentID, n.Name, s, n.Description, now, now).Scan(&id)
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	return db.CategoryByID(ctx, id)
}

// checkParent: parent is a category of environment envID, and making it
// the parent of category id (0: a new one) makes no cycle. It runs in the
// transaction that writes the parent, so two changes at once cannot make a
// cycle between them.
func checkParent(ctx context.Context, tx *sql.Tx, envID, id, parent int64) error {
	var parentEnv int64
	err := tx.QueryRowContext(ctx, `SELECT environment_id FROM cms_categories WHERE id = ?`, parent).Scan(&parentEnv)
	if errors.Is(err, sql.ErrNoRows) || err == nil && parentEnv != envID {
		return Invalid("parent_id: no category with id %d in this environment", parent)
	}
	if err != nil {
		return err
	}
	if id == 0 {
		return nil
	}
	var cycle int
	err = tx.QueryRowContext(ctx, `WITH RECURSIVE up(id) AS (SELECT CAST(? AS BIGINT) UNION SELECT c.parent_id FROM cms_categories c JOIN up ON c.id = up.id
		WHERE c.parent_id IS NOT NULL) SELECT COUNT(*) FROM up WHERE id = ?`, parent, id).Scan(&cycle)
	if err != nil {
		return err
	}
	if cycle > 0 {
		return Invalid("parent_id: category %d is this category or one under it; a category cannot be its own ancestor", parent)
	}
	return nil
}

// CategoryByID finds a category with its post counts.
func (db *DB) CategoryByID(ctx context.Context, id int64) (*Category, error) {
	c, err := findRow(ctx, db, scanCategory, "category", `SELECT `+categoryColumns+` FROM cms_categories c WHERE c.id = ?`, id)
	if err != nil {
		return nil, err
	}
	if err := db.loadTermCounts(ctx, "category_id", []termCounted{c}); err != nil {
		return nil, err
	}
	return c, nil
}

// CategoryFilter narrows ListCategories.
type CategoryFilter struct {
	Scope         Scope
	EnvironmentID *int64
	Q             string
	Sort          Sort // by termSorts; name first by default
	Page
}

func (CategoryFilter) sortColumns() map[string]string { return termSorts }

// ListCategories lists categories by name, with their post counts.
func (db *DB) ListCategories(ctx context.Context, f CategoryFilter) ([]*Category, int, error) {
	q, err := termList("cms_categories", f.Scope, f.EnvironmentID, f.Q, f.Sort)
	if err != nil {
		return nil, 0, err
	}
	q.columns, q.what = categoryColumns, "categories"
	out, total, err := listPage(ctx, db, q, f.Page, scanCategory)
	if err != nil {
		return nil, 0, err
	}
	counted := make([]termCounted, len(out))
	for i, c := range out {
		counted[i] = c
	}
	if err := db.loadTermCounts(ctx, "category_id", counted); err != nil {
		return nil, 0, err
	}
	return out, total, nil
}

// termSorts are the fields categories and tags sort by: the name, which
// both list indexes lead with (walked backwards for -name).
var termSorts = map[string]string{"name": "c.name COLLATE NOCASE"}

// termList is the list query of categories or tags (alias c): by name,
// walking the index of one environment when the filter names one, else
// the index of all, checking the scope in the index as it goes.
func termList(table string, sc Scope, envID *int64, q string, sort Sort) (listQuery, error) {
	order, err := sort.orderBy(termSorts, "c.name COLLATE NOCASE, c.id", "c.id")
	if err != nil {
		return listQuery{}, err
	}
	var where []string
	var args []any
	if cond, condArgs := sc.envIn("c.environment_id"); cond != "" {
		where, args = append(where, cond), append(args, condArgs...)
	}
	index := table + "_list"
	if envID != nil {
		where, args = append(where, "c.environment_id = ?"), append(args, *envID)
		index = table + "_env"
	}
	if q = strings.TrimSpace(q); q != "" {
		where = append(where, `(c.name LIKE ? ESCAPE '\' OR c.slug LIKE ? ESCAPE '\')`)
		args = append(args, likePattern(q), likePattern(q))
	}
	return listQuery{from: table + " c INDEXED BY " + index, count: table + " c", where: where, args: args,
		order: order}, nil
}

// termCounted is a category or a tag, whose post counts load by page.
type termCounted interface {
	termID() int64
	setCounts(map[string]int)
}

func (c *Category) termID() int64              { return c.ID }
func (c *Category) setCounts(m map[string]int) { c.PostCounts = m }
func (t *Tag) termID() int64                   { return t.ID }
func (t *Tag) setCounts(m map[string]int)      { t.PostCounts = m }

// loadTermCounts fills in the post counts of a page of categories (col
// "category_id") or tags ("tag_id"): one query per post kind for the whole
// page.
func (db *DB) loadTermCounts(ctx context.Context, col string, terms []termCounted) error {
	byID := make(map[int64]map[string]int, len(terms))
	args := make([]any, len(terms))
	for i, t := range terms {
		m := make(map[string]int, len(postLinks))
		for _, l := range postLinks {
			m[l.kind] = 0
		}
		t.setCounts(m)
		byID[t.termID()] = m
		args[i] = t.termID()
	}
	if len(terms) == 0 {
		return nil
	}
	for _, l := range postLinks {
		table := l.categories
		if col == "tag_id" {
			table = l.tags
		}
		rows, err := db.listRows(ctx, `SELECT `+col+`, COUNT(*) FROM `+table+` WHERE `+col+` IN (?`+strings.Repeat(", ?", len(terms)-1)+
			`) GROUP BY `+col, args...)
		if err != nil {
			return fmt.Errorf("store: post counts: %w", err)
		}
		for rows.Next() {
			var id int64
			var n int
			if err := rows.Scan(&id, &n); err != nil {
				rows.Close()
				return fmt.Errorf("store: post counts: %w", err)
			}
			byID[id][l.kind] = n
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("store: post counts: %w", err)
		}
	}
	return nil
}

// CategoryUpdate holds the fields to change; nil leaves one alone.
type CategoryUpdate struct {
	Name        *string
	Slug        *string
	Description *string
	// ParentID: a positive id is the new parent, 0 none.
	ParentID *int64
}

// UpdateCategory changes a category; a taken slug is a conflict, a parent
// outside the environment or under the category itself is invalid.
func (db *DB) UpdateCategory(ctx context.Context, id int64, up CategoryUpdate) (*Category, error) {
	err := db.tx(ctx, func(tx *sql.Tx) error {
		envID, err := envOf(ctx, tx, "cms_categories", id, "category")
		if err != nil {
			return err
		}
		var sets []string
		var args []any
		if up.ParentID != nil {
			var parent any
			if *up.ParentID > 0 {
				if err := checkParent(ctx, tx, envID, id, *up.ParentID); err != nil {
					return err
				}
				parent = *up.ParentID
			}
			sets, args = append(sets, "parent_id = ?"), append(args, parent)
		}
		sets, args = termSets(sets, args, up.Name, up.Slug)
		if up.Description != nil {
			sets, args = append(sets, "description = ?"), append(args, *up.Description)
		}
		if len(sets) == 0 {
			return nil
		}
		_, err = tx.ExecContext(ctx, `UPDATE cms_categories SET `+strings.Join(sets, ", ")+`, updated_at = ? WHERE id = ?`,
			append(args, db.now(), id)...)
		return slugTaken(translate(err, "category"), "category")
	})
	if err != nil {
		return nil, err
	}
	return db.CategoryByID(ctx, id)
}

func termSets(sets []string, args []any, name, slug *string) ([]string, []any) {
	if name != nil {
		sets, args = append(sets, "name = ?"), append(args, *name)
	}
	if slug != nil {
		sets, args = append(sets, "slug = ?"), append(args, *slug)
	}
	return sets, args
}

// DeleteCategory deletes a category. Its posts lose it (their links go with
// it) and its children move to the top; it returns how many posts of each
// kind it was taken from.
func (db *DB) DeleteCategory(ctx context.Context, id int64) (map[string]int, error) {
	return db.deleteTerm(ctx, "cms_categories", "category_id", id, "category")
}

// deleteTerm deletes a category or tag and counts, in the same
// transaction, the posts it is detached from; synced WordPress posts among
// them become dirty (the site still has the term on them).
func (db *DB) deleteTerm(ctx context.Context, table, col string, id int64, what string) (map[string]int, error) {
	detached := map[string]int{}
	err := db.tx(ctx, func(tx *sql.Tx) error {
		for _, l := range postLinks {
			links := l.categories
			if col == "tag_id" {
				links = l.tags
			}
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM `+links+` WHERE `+col+` = ?`, id).Scan(&n); err != nil {
				return err
			}
			detached[l.kind] = n
			if l.posts != "" && n > 0 {
				if _, err := tx.ExecContext(ctx, `UPDATE `+l.posts+` SET sync_status = 'dirty', updated_at = ?
					WHERE sync_status = 'synced' AND id IN (SELECT post_id FROM `+links+` WHERE `+col+` = ?)`, db.now(), id); err != nil {
					return err
				}
			}
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM `+table+` WHERE id = ?`, id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return NotFound("%s not found", what)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: delete %s: %w", what, err)
	}
	return detached, nil
}

const tagColumns = `c.id, c.environment_id, c.name, c.slug, c.wp_term_id, c.created_at, c.updated_at`

func scanTag(row rowScanner) (*Tag, error) {
	var t Tag
	var term sql.NullInt64
	var created, updated string
	if err := row.Scan(&t.ID, &t.EnvironmentID, &t.Name, &t.Slug, &term, &created, &updated); err != nil {
		return nil, err
	}
	t.WPTermID = nullID(term)
	t.CreatedAt, t.UpdatedAt = parseTime(created), parseTime(updated)
	return &t, nil
}

// NewTag is what CreateTag needs: a Slug, or SlugTries to make one.
type NewTag struct {
	EnvironmentID int64
	Name          string
	Slug          string
	SlugTries     SlugTries
}

// CreateTag inserts a tag, naming it as CreateCategory does.
func (db *DB) CreateTag(ctx context.Context, n NewTag) (*Tag, error) {
	var id int64
	err := db.tx(ctx, func(tx *sql.Tx) error {
		now := db.now()
		var err error
		id, err = insertSlugged(ctx, tx, "cms_tags", "tag", n.Slug, n.SlugTries, func(s string) (id int64, err error) {
			return id, tx.QueryRowContext(ctx, `INSERT INTO cms_tags (environment_id, name, slug, created_at, updated_at) VALUES (?, ?, ?, ?, ?)
				RETURNING id`, n.EnvironmentID, n.Name, s, now, now).Scan(&id)
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	return db.TagByID(ctx, id)
}

// TagByID finds a tag with its post counts.
func (db *DB) TagByID(ctx context.Context, id int64) (*Tag, error) {
	t, err := findRow(ctx, db, scanTag, "tag", `SELECT `+tagColumns+` FROM cms_tags c WHERE c.id = ?`, id)
	if err != nil {
		return nil, err
	}
	if err := db.loadTermCounts(ctx, "tag_id", []termCounted{t}); err != nil {
		return nil, err
	}
	return t, nil
}

// TagFilter narrows ListTags.
type TagFilter struct {
	Scope         Scope
	EnvironmentID *int64
	Q             string
	Sort          Sort // by termSorts; name first by default
	Page
}

func (TagFilter) sortColumns() map[string]string { return termSorts }

// ListTags lists tags by name, with their post counts.
func (db *DB) ListTags(ctx context.Context, f TagFilter) ([]*Tag, int, error) {
	q, err := termList("cms_tags", f.Scope, f.EnvironmentID, f.Q, f.Sort)
	if err != nil {
		return nil, 0, err
	}
	q.columns, q.what = tagColumns, "tags"
	out, total, err := listPage(ctx, db, q, f.Page, scanTag)
	if err != nil {
		return nil, 0, err
	}
	counted := make([]termCounted, len(out))
	for i, t := range out {
		counted[i] = t
	}
	if err := db.loadTermCounts(ctx, "tag_id", counted); err != nil {
		return nil, 0, err
	}
	return out, total, nil
}

// TagUpdate holds the fields to change; nil leaves one alone.
type TagUpdate struct {
	Name *string
	Slug *string
}

// UpdateTag changes a tag; a taken slug is a conflict.
func (db *DB) UpdateTag(ctx context.Context, id int64, up TagUpdate) (*Tag, error) {
	sets, args := termSets(nil, nil, up.Name, up.Slug)
	if len(sets) > 0 {
		res, err := db.exec(ctx, `UPDATE cms_tags SET `+strings.Join(sets, ", ")+`, updated_at = ? WHERE id = ?`, append(args, db.now(), id)...)
		if err != nil {
			return nil, slugTaken(translate(err, "tag"), "tag")
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil, NotFound("tag not found")
		}
	}
	return db.TagByID(ctx, id)
}

// DeleteTag deletes a tag; its posts lose it. It returns how many posts of
// each kind it was taken from.
func (db *DB) DeleteTag(ctx context.Context, id int64) (map[string]int, error) {
	return db.deleteTerm(ctx, "cms_tags", "tag_id", id, "tag")
}
