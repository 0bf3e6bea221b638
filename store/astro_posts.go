package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Astro posts: Markdown posts kept here and written as files into an
// environment's Astro content folder (server/astropost owns the files).
// Every write takes a hook that writes, moves or removes the file inside
// the transaction that writes the row, before it commits: a file that
// cannot be written leaves no row, and a row that fails after its file was
// written tells the caller, which puts the file back.

func init() {
	postLinks = append(postLinks, postLink{kind: "astro", categories: "astro_post_categories", tags: "astro_post_tags"})
}

// AstroPost is a post of an environment's Astro site.
type AstroPost struct {
	ID            int64
	EnvironmentID int64
	AstroContent
	PostOrigin
	Categories []TermRef
	Tags       []TermRef
	// FileSHA256 is the SHA-256 (hex) of the file as copydesk last wrote or
	// read it; RenderSHA256 that of the row's rendering at that moment.
	FileSHA256   string
	RenderSHA256 string
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// AstroContent is what a post's file is made of: its name (Slug and Ext),
// its front matter and its Markdown body. A post and a post to create
// share it.
type AstroContent struct {
	Title       string
	Description string
	Slug        string
	Ext         string // "md", or "mdx" for an imported MDX file
	Body        string
	PubDate     time.Time
	UpdatedDate *time.Time
	HeroImage   string
	Draft       bool
	// ExtraFrontMatter is YAML: the front matter keys of an imported file
	// that copydesk does not know, written back after its own.
	ExtraFrontMatter string
}

// FileName is the post's file in the content folder.
func (p *AstroPost) FileName() string { return p.Slug + "." + p.Ext }

// TermRef is a category or tag as a post names it.
type TermRef struct {
	ID   int64
	Name string
	Slug string
}

// AstroFile is what a write hook did: the hashes of the file and of the
// row's rendering (see AstroPost).
type AstroFile struct {
	FileSHA256   string
	RenderSHA256 string
}

// AstroWrite writes (or, on import, reads) the file of a post as the
// transaction has it, before the transaction commits. An error undoes the
// row.
type AstroWrite func(p *AstroPost) (AstroFile, error)

// NamedTerm is a category or tag named by an imported file: the one of
// that slug (or name) in the environment, or a new one, named by Tries
// when Slug is empty.
type NamedTerm struct {
	Name  string
	Slug  string
	Tries SlugTries
}

// NewAstroPost is what CreateAstroPost needs: a Slug, or SlugTries to make
// one. An empty Ext is "md".
type NewAstroPost struct {
	EnvironmentID int64
	AstroContent
	SlugTries SlugTries
	PostOrigin
	CategoryIDs []int64
	TagIDs      []int64
	// NamedCategories and NamedTags are found or made (import).
	NamedCategories []NamedTerm
	NamedTags       []NamedTerm
}

const astroPostColumns = `p.id, p.environment_id, p.title, p.description, p.slug, p.ext, p.body, p.pub_date, p.updated_date, p.hero_image,
	p.draft, p.extra_front_matter, p.run_id, p.file_sha256, p.render_sha256, p.created_at, p.updated_at, p.cie_run_id, p.live_generation_id`

func scanAstroPost(row rowScanner) (*AstroPost, error) {
	var p AstroPost
	var pub, created, updated string
	var upd sql.NullString
	var run, cieRun, live sql.NullInt64
	if err := row.Scan(&p.ID, &p.EnvironmentID, &p.Title, &p.Description, &p.Slug, &p.Ext, &p.Body, &pub, &upd, &p.HeroImage,
		&p.Draft, &p.ExtraFrontMatter, &run, &p.FileSHA256, &p.RenderSHA256, &created, &updated, &cieRun, &live); err != nil {
		return nil, err
	}
	p.PubDate, p.UpdatedDate, p.RunID, p.CIERunID = parseTime(pub), parseNullTime(upd), nullID(run), nullID(cieRun)
	p.LiveGenerationID = nullID(live)
	p.CreatedAt, p.UpdatedAt = parseTime(created), parseTime(updated)
	p.Categories, p.Tags = []TermRef{}, []TermRef{}
	return &p, nil
}

// CreateAstroPost inserts a post, files it under its terms, and calls
// write with the post as stored before the transaction commits. A given
// slug that is taken is a conflict; without one, the first free slug of
// SlugTries is taken.
func (db *DB) CreateAstroPost(ctx context.Context, n NewAstroPost, write AstroWrite) (*AstroPost, error) {
	var id int64
	err := db.tx(ctx, func(tx *sql.Tx) error {
		now := db.now()
		ext := n.Ext
		if ext == "" {
			ext = "md"
		}
		var err error
		id, err = insertSlugged(ctx, tx, "astro_posts", "post", n.Slug, n.SlugTries, func(s string) (id int64, err error) {
			return id, tx.QueryRowContext(ctx, `INSERT INTO astro_posts (environment_id, title, description, slug, ext, body, pub_date, updated_date,
				hero_image, draft, extra_front_matter, run_id, cie_run_id, live_generation_id, created_at, updated_at)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
				RETURNING id`,
				n.EnvironmentID, n.Title, n.Description, s, ext, n.Body, fmtTime(n.PubDate), nullTime(n.UpdatedDate), n.HeroImage,
				boolInt(n.Draft), n.ExtraFrontMatter, n.RunID, n.CIERunID, n.LiveGenerationID, now, now).Scan(&id)
		})
		if err != nil {
			return err
		}
		cats, err := namedTerms(ctx, tx, "cms_categories", "category", n.EnvironmentID, n.NamedCategories, now)
		if err != nil {
			return err
		}
		tags, err := namedTerms(ctx, tx, "cms_tags", "tag", n.EnvironmentID, n.NamedTags, now)
		if err != nil {
			return err
		}
		allCats, allTags := append(n.CategoryIDs, cats...), append(n.TagIDs, tags...)
		if err := setPostTerms(ctx, tx, "astro_post", id, n.EnvironmentID, &allCats, &allTags); err != nil {
			return err
		}
		return writeAstroFile(ctx, tx, id, write)
	})
	if err != nil {
		return nil, err
	}
	return db.AstroPostByID(ctx, id)
}

// writeAstroFile reads post id as tx has it, calls write, and records the
// hashes it answers. It is the last step of every write transaction, so
// nothing but the hashes and the commit can fail after the file changed.
func writeAstroFile(ctx context.Context, tx *sql.Tx, id int64, write AstroWrite) error {
	p, err := findIn(ctx, tx, scanAstroPost, "post", `SELECT `+astroPostColumns+` FROM astro_posts p WHERE p.id = ?`, id)
	if err != nil {
		return err
	}
	if err := loadAstroTerms(ctx, tx.QueryContext, []*AstroPost{p}); err != nil {
		return err
	}
	f, err := write(p)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `UPDATE astro_posts SET file_sha256 = ?, render_sha256 = ? WHERE id = ?`, f.FileSHA256, f.RenderSHA256, id)
	return err
}

// namedTerms finds the categories or tags of an imported file by slug or
// name in the environment, and makes those it does not find.
func namedTerms(ctx context.Context, tx *sql.Tx, table, what string, envID int64, terms []NamedTerm, now string) ([]int64, error) {
	var ids []int64
	for _, t := range terms {
		var id int64
		err := tx.QueryRowContext(ctx, `SELECT id FROM `+table+` WHERE environment_id = ? AND (slug = ? OR name = ? COLLATE NOCASE)
			ORDER BY slug = ? DESC, id LIMIT 1`, envID, t.Slug, t.Name, t.Slug).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			id, err = insertSlugged(ctx, tx, table, what, t.Slug, t.Tries, func(s string) (id int64, err error) {
				return id, tx.QueryRowContext(ctx, `INSERT INTO `+table+` (environment_id, name, slug, created_at, updated_at) VALUES (?, ?, ?, ?, ?)
					RETURNING id`, envID, t.Name, s, now, now).Scan(&id)
			})
		}
		if err != nil {
			return nil, fmt.Errorf("store: %s %q: %w", what, t.Name, err)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

type queryFunc func(ctx context.Context, query string, args ...any) (*sql.Rows, error)

// loadAstroTerms fills in the categories and tags of posts: one query each
// for all of them.
func loadAstroTerms(ctx context.Context, query queryFunc, posts []*AstroPost) error {
	if len(posts) == 0 {
		return nil
	}
	byID := make(map[int64]*AstroPost, len(posts))
	args := make([]any, len(posts))
	for i, p := range posts {
		byID[p.ID], args[i] = p, p.ID
	}
	in := `(?` + strings.Repeat(", ?", len(posts)-1) + `)`
	for _, k := range []struct{ links, col, terms string }{
		{"astro_post_categories", "category_id", "cms_categories"}, {"astro_post_tags", "tag_id", "cms_tags"},
	} {
		rows, err := query(ctx, `SELECT l.post_id, t.id, t.name, t.slug FROM `+k.links+` l JOIN `+k.terms+` t ON t.id = l.`+k.col+
			` WHERE l.post_id IN `+in+` ORDER BY l.post_id, l.`+k.col, args...)
		if err != nil {
			return fmt.Errorf("store: post terms: %w", err)
		}
		for rows.Next() {
			var post int64
			var t TermRef
			if err := rows.Scan(&post, &t.ID, &t.Name, &t.Slug); err != nil {
				rows.Close()
				return fmt.Errorf("store: post terms: %w", err)
			}
			p := byID[post]
			if k.col == "category_id" {
				p.Categories = append(p.Categories, t)
			} else {
				p.Tags = append(p.Tags, t)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("store: post terms: %w", err)
		}
	}
	return nil
}

// AstroPostByID finds a post with its categories and tags.
func (db *DB) AstroPostByID(ctx context.Context, id int64) (*AstroPost, error) {
	p, err := findRow(ctx, db, scanAstroPost, "post", `SELECT `+astroPostColumns+` FROM astro_posts p WHERE p.id = ?`, id)
	if err != nil {
		return nil, err
	}
	if err := loadAstroTerms(ctx, db.r.QueryContext, []*AstroPost{p}); err != nil {
		return nil, err
	}
	return p, nil
}

// AstroPostFilter narrows ListAstroPosts.
type AstroPostFilter struct {
	Scope         Scope
	EnvironmentID *int64
	Draft         *bool
	CategoryID    *int64
	TagID         *int64
	Q             string
	Page
}

// ListAstroPosts lists posts newest first (pub_date, then id), with their
// categories and tags.
func (db *DB) ListAstroPosts(ctx context.Context, f AstroPostFilter) ([]*AstroPost, int, error) {
	var where []string
	var args []any
	if cond, condArgs := f.Scope.envIn("p.environment_id"); cond != "" {
		where, args = append(where, cond), append(args, condArgs...)
	}
	index := "astro_posts_list"
	if f.EnvironmentID != nil {
		where, args = append(where, "p.environment_id = ?"), append(args, *f.EnvironmentID)
		index = "astro_posts_env"
	}
	if f.Draft != nil {
		where, args = append(where, "p.draft = ?"), append(args, boolInt(*f.Draft))
	}
	where, args = postListConds("astro_post", f.CategoryID, f.TagID, f.Q, where, args)
	out, total, err := listPage(ctx, db, listQuery{from: "astro_posts p INDEXED BY " + index, count: "astro_posts p", where: where, args: args,
		columns: astroPostColumns, order: "p.pub_date DESC, p.id DESC", what: "posts"}, f.Page, scanAstroPost)
	if err != nil {
		return nil, 0, err
	}
	if err := loadAstroTerms(ctx, db.listRows, out); err != nil {
		return nil, 0, err
	}
	return out, total, nil
}

// ListAstroPostsOfEnvironment lists every post of an environment, by slug,
// with their terms: what reconcile compares with the content folder.
func (db *DB) ListAstroPostsOfEnvironment(ctx context.Context, envID int64) ([]*AstroPost, error) {
	rows, err := db.listRows(ctx, `SELECT `+astroPostColumns+` FROM astro_posts p WHERE p.environment_id = ? ORDER BY p.slug`, envID)
	if err != nil {
		return nil, fmt.Errorf("store: posts of environment: %w", err)
	}
	out := []*AstroPost{}
	for rows.Next() {
		p, err := scanAstroPost(rows)
		if err != nil {
			rows.Close()
			return nil, fmt.Errorf("store: posts of environment: %w", err)
		}
		out = append(out, p)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: posts of environment: %w", err)
	}
	// The terms of every post at once: a list of ids in one query is fine
	// for the few thousand posts of a site.
	for start := 0; start < len(out); start += 500 {
		end := min(start+500, len(out))
		if err := loadAstroTerms(ctx, db.r.QueryContext, out[start:end]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// AstroPostUpdate holds the fields to change; nil leaves one alone.
type AstroPostUpdate struct {
	Title       *string
	Description *string
	Slug        *string
	Body        *string
	PubDate     *time.Time
	// UpdatedDate: a zero time clears it.
	UpdatedDate *time.Time
	HeroImage   *string
	Draft       *bool
	CategoryIDs *[]int64
	TagIDs      *[]int64
}

// UpdateAstroPost changes a post and calls write with the post as changed
// before the transaction commits. With nothing to change it only calls
// write: how a file is written again from its row.
func (db *DB) UpdateAstroPost(ctx context.Context, id int64, up AstroPostUpdate, write AstroWrite) (*AstroPost, error) {
	err := db.tx(ctx, func(tx *sql.Tx) error {
		envID, err := envOf(ctx, tx, "astro_posts", id, "post")
		if err != nil {
			return err
		}
		var ch changes
		set := ch.set
		given(&ch, "title", up.Title)
		given(&ch, "description", up.Description)
		given(&ch, "slug", up.Slug)
		given(&ch, "body", up.Body)
		if up.PubDate != nil {
			set("pub_date", fmtTime(*up.PubDate))
		}
		if up.UpdatedDate != nil {
			if up.UpdatedDate.IsZero() {
				set("updated_date", nil)
			} else {
				set("updated_date", fmtTime(*up.UpdatedDate))
			}
		}
		given(&ch, "hero_image", up.HeroImage)
		if up.Draft != nil {
			set("draft", boolInt(*up.Draft))
		}
		if !ch.none() || up.CategoryIDs != nil || up.TagIDs != nil {
			set("updated_at", db.now())
			q, args := ch.update("astro_posts", id)
			if _, err := tx.ExecContext(ctx, q, args...); err != nil {
				return slugTaken(translate(err, "post"), "post")
			}
		}
		if err := setPostTerms(ctx, tx, "astro_post", id, envID, up.CategoryIDs, up.TagIDs); err != nil {
			return err
		}
		return writeAstroFile(ctx, tx, id, write)
	})
	if err != nil {
		return nil, err
	}
	return db.AstroPostByID(ctx, id)
}

// DeleteAstroPost deletes a post, calling remove with it (to take its
// file away) before the row goes; an error of either keeps both.
func (db *DB) DeleteAstroPost(ctx context.Context, id int64, remove func(p *AstroPost) error) error {
	return db.tx(ctx, func(tx *sql.Tx) error {
		p, err := findIn(ctx, tx, scanAstroPost, "post", `SELECT `+astroPostColumns+` FROM astro_posts p WHERE p.id = ?`, id)
		if err != nil {
			return err
		}
		if err := remove(p); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM astro_posts WHERE id = ?`, id)
		return err
	})
}
