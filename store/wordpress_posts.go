package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

func init() {
	postLinks = append(postLinks, postLink{kind: "wordpress", categories: "wordpress_post_categories", tags: "wordpress_post_tags",
		posts: "wordpress_posts"})
}

// WordPress post statuses and sync states.
var (
	WordPressStatuses = []string{"draft", "pending", "private", "future", "publish"}
	SyncStates        = []string{SyncLocal, SyncSynced, SyncDirty, SyncFailed}
)

// Sync states of a WordPress post.
const (
	SyncLocal  = "local"  // never sent
	SyncSynced = "synced" // the site has what copydesk has
	SyncDirty  = "dirty"  // changed here since the last sync
	SyncFailed = "failed" // the last remote call failed (LastError)
)

// WordPressPost is a post kept locally and published to the environment's
// WordPress site.
type WordPressPost struct {
	ID            int64
	EnvironmentID int64
	PostOrigin
	CreatedBy        *int64
	Title            string
	Content          string // Markdown
	Excerpt          string
	Slug             string
	Status           string
	ScheduledAt      *time.Time
	FeaturedImageURL string
	FeaturedMediaID  *int64
	FeaturedMediaSrc string // the URL FeaturedMediaID was uploaded from
	RemoteID         *int64
	RemoteLink       string
	RemoteStatus     string
	RemoteModified   *time.Time
	// RemoteHash is a digest of the remote post's raw title and content
	// as last synced ("" before the first sync that recorded it).
	RemoteHash string
	// CreatePending: a create was sent and its outcome is unknown.
	// CreateFloor is the least id the site can have given a post that
	// create made: one more than the highest post id it had before. The
	// column holds it (0: no pending create; 1, from before the floor was
	// kept, admits any id), so the flag and its floor stay one value.
	CreatePending bool
	CreateFloor   int64
	SyncStatus    string
	LastError     string
	SyncedAt      *time.Time
	CreatedAt     time.Time
	UpdatedAt     time.Time
	CategoryIDs   []int64
	TagIDs        []int64
}

const wordpressPostColumns = `p.id, p.environment_id, p.run_id, p.created_by, p.title, p.content, p.excerpt, p.slug, p.status,
	p.scheduled_at, p.featured_image_url, p.featured_media_id, p.featured_media_src, p.remote_id, p.remote_link, p.remote_status,
	p.remote_modified, p.create_pending, p.sync_status, p.last_error, p.synced_at, p.created_at, p.updated_at, p.cie_run_id, p.live_generation_id, p.remote_hash`

func scanWordPressPost(row rowScanner) (*WordPressPost, error) {
	var p WordPressPost
	var run, cieRun, live, by, media, remote sql.NullInt64
	var pending int64
	var sched, remoteMod, synced sql.NullString
	var created, updated string
	if err := row.Scan(&p.ID, &p.EnvironmentID, &run, &by, &p.Title, &p.Content, &p.Excerpt, &p.Slug, &p.Status, &sched,
		&p.FeaturedImageURL, &media, &p.FeaturedMediaSrc, &remote, &p.RemoteLink, &p.RemoteStatus, &remoteMod, &pending,
		&p.SyncStatus, &p.LastError, &synced, &created, &updated, &cieRun, &live, &p.RemoteHash); err != nil {
		return nil, err
	}
	p.RunID, p.CreatedBy, p.FeaturedMediaID, p.RemoteID = nullID(run), nullID(by), nullID(media), nullID(remote)
	p.CIERunID, p.LiveGenerationID = nullID(cieRun), nullID(live)
	p.ScheduledAt, p.RemoteModified, p.SyncedAt = parseNullTime(sched), parseNullTime(remoteMod), parseNullTime(synced)
	p.CreatedAt, p.UpdatedAt = parseTime(created), parseTime(updated)
	p.CreatePending, p.CreateFloor = pending != 0, pending
	return &p, nil
}

// NewWordPressPost is what CreateWordPressPost needs: a Slug, or SlugTries.
type NewWordPressPost struct {
	EnvironmentID int64
	PostOrigin
	CreatedBy        *int64
	Title            string
	Content          string
	Excerpt          string
	Slug             string
	SlugTries        SlugTries
	Status           string
	ScheduledAt      *time.Time
	FeaturedImageURL string
	CategoryIDs      []int64
	TagIDs           []int64
	// Remote, when set, is the post as the site has it (an import).
	Remote *WordPressSync
}

// CreateWordPressPost inserts a post with its categories and tags, which
// must be the environment's.
func (db *DB) CreateWordPressPost(ctx context.Context, n NewWordPressPost) (*WordPressPost, error) {
	var id int64
	err := db.tx(ctx, func(tx *sql.Tx) error {
		now := db.now()
		var err error
		id, err = insertSlugged(ctx, tx, "wordpress_posts", "post", n.Slug, n.SlugTries, func(s string) (id int64, err error) {
			return id, tx.QueryRowContext(ctx, `INSERT INTO wordpress_posts (environment_id, run_id, cie_run_id, live_generation_id, created_by, title, content,
				excerpt, slug, status, scheduled_at, featured_image_url, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
				n.EnvironmentID, n.RunID, n.CIERunID, n.LiveGenerationID, n.CreatedBy, n.Title, n.Content, n.Excerpt, s, n.Status, nullTime(n.ScheduledAt),
				n.FeaturedImageURL, now, now).Scan(&id)
		})
		if err != nil {
			return err
		}
		if err := setPostTerms(ctx, tx, "wordpress_post", id, n.EnvironmentID, &n.CategoryIDs, &n.TagIDs); err != nil {
			return err
		}
		if n.Remote != nil {
			return applySync(ctx, tx, id, *n.Remote, now)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return db.WordPressPostByID(ctx, id)
}

func nullTime(t *time.Time) any {
	if t == nil {
		return nil
	}
	return fmtTime(*t)
}

// setPostTerms replaces a post's categories and tags (nil: leave alone);
// each must be one of environment envID. kind names the post's tables:
// "wordpress_post" or "astro_post" (their link tables are kind_categories
// and kind_tags).
func setPostTerms(ctx context.Context, tx *sql.Tx, kind string, postID, envID int64, cats, tags *[]int64) error {
	for _, l := range []struct {
		ids               *[]int64
		links, col, terms string
		field, what       string
	}{
		{cats, kind + "_categories", "category_id", "cms_categories", "category_ids", "category"},
		{tags, kind + "_tags", "tag_id", "cms_tags", "tag_ids", "tag"},
	} {
		if l.ids == nil {
			continue
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM `+l.links+` WHERE post_id = ?`, postID); err != nil {
			return err
		}
		for _, id := range dedupe(*l.ids) {
			res, err := tx.ExecContext(ctx, `INSERT INTO `+l.links+` (post_id, `+l.col+`) SELECT CAST(? AS BIGINT), id FROM `+l.terms+`
				WHERE id = ? AND environment_id = ?`, postID, id, envID)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n == 0 {
				return Invalid("%s: no %s with id %d in this environment", l.field, l.what, id)
			}
		}
	}
	return nil
}

// WordPressPostByID finds a post with its categories and tags.
func (db *DB) WordPressPostByID(ctx context.Context, id int64) (*WordPressPost, error) {
	p, err := findRow(ctx, db, scanWordPressPost, "post", `SELECT `+wordpressPostColumns+` FROM wordpress_posts p WHERE p.id = ?`, id)
	if err != nil {
		return nil, err
	}
	if err := db.loadPostTerms(ctx, []*WordPressPost{p}); err != nil {
		return nil, err
	}
	return p, nil
}

// WordPressPostByRemote finds the post of an environment that is remote
// post remoteID on its site; nil when there is none.
func (db *DB) WordPressPostByRemote(ctx context.Context, envID, remoteID int64) (*WordPressPost, error) {
	var id int64
	err := db.r.QueryRowContext(ctx, `SELECT id FROM wordpress_posts WHERE environment_id = ? AND remote_id = ?`, envID, remoteID).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: find post by remote id: %w", err)
	}
	return db.WordPressPostByID(ctx, id)
}

// loadPostTerms fills in the categories and tags of a page of posts, one
// query each.
func (db *DB) loadPostTerms(ctx context.Context, posts []*WordPressPost) error {
	if len(posts) == 0 {
		return nil
	}
	byID := make(map[int64]*WordPressPost, len(posts))
	args := make([]any, len(posts))
	for i, p := range posts {
		p.CategoryIDs, p.TagIDs = []int64{}, []int64{}
		byID[p.ID] = p
		args[i] = p.ID
	}
	in := `(?` + strings.Repeat(", ?", len(posts)-1) + `)`
	for _, l := range []struct {
		query string
		add   func(p *WordPressPost, id int64)
	}{
		{`SELECT post_id, category_id FROM wordpress_post_categories WHERE post_id IN ` + in + ` ORDER BY post_id, category_id`,
			func(p *WordPressPost, id int64) { p.CategoryIDs = append(p.CategoryIDs, id) }},
		{`SELECT post_id, tag_id FROM wordpress_post_tags WHERE post_id IN ` + in + ` ORDER BY post_id, tag_id`,
			func(p *WordPressPost, id int64) { p.TagIDs = append(p.TagIDs, id) }},
	} {
		rows, err := db.listRows(ctx, l.query, args...)
		if err != nil {
			return fmt.Errorf("store: post terms: %w", err)
		}
		for rows.Next() {
			var postID, id int64
			if err := rows.Scan(&postID, &id); err != nil {
				rows.Close()
				return fmt.Errorf("store: post terms: %w", err)
			}
			l.add(byID[postID], id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("store: post terms: %w", err)
		}
	}
	return nil
}

// WordPressPostFilter narrows ListWordPressPosts.
type WordPressPostFilter struct {
	Scope         Scope
	EnvironmentID *int64
	Status        string
	SyncStatus    string
	CategoryID    *int64
	TagID         *int64
	Q             string
	Page
}

// ListWordPressPosts lists posts, newest first, with their categories and
// tags.
func (db *DB) ListWordPressPosts(ctx context.Context, f WordPressPostFilter) ([]*WordPressPost, int, error) {
	var where []string
	var args []any
	// The unary + keeps SQLite from answering the scope with an environment
	// index, which would gather the scope's posts and sort them; the page
	// walks the posts newest first instead (as ListUsage does).
	if cond, condArgs := f.Scope.envIn("+p.environment_id"); cond != "" {
		where, args = append(where, cond), append(args, condArgs...)
	}
	if f.EnvironmentID != nil {
		where, args = append(where, "p.environment_id = ?"), append(args, *f.EnvironmentID)
	}
	if f.Status != "" {
		where, args = append(where, "p.status = ?"), append(args, f.Status)
	}
	if f.SyncStatus != "" {
		where, args = append(where, "p.sync_status = ?"), append(args, f.SyncStatus)
	}
	where, args = postListConds("wordpress_post", f.CategoryID, f.TagID, f.Q, where, args)
	out, total, err := listPage(ctx, db, listQuery{from: "wordpress_posts p", where: where, args: args, columns: wordpressPostColumns,
		order: "p.id DESC", what: "posts"}, f.Page, scanWordPressPost)
	if err != nil {
		return nil, 0, err
	}
	if err := db.loadPostTerms(ctx, out); err != nil {
		return nil, 0, err
	}
	return out, total, nil
}

// postListConds adds to where and args what a list of posts of either
// kind is narrowed by: a category, a tag, and text in the title or slug.
// kind names the post's link tables, as for setPostTerms.
func postListConds(kind string, categoryID, tagID *int64, q string, where []string, args []any) ([]string, []any) {
	if categoryID != nil {
		where, args = append(where, "p.id IN (SELECT post_id FROM "+kind+"_categories WHERE category_id = ?)"), append(args, *categoryID)
	}
	if tagID != nil {
		where, args = append(where, "p.id IN (SELECT post_id FROM "+kind+"_tags WHERE tag_id = ?)"), append(args, *tagID)
	}
	if q = strings.TrimSpace(q); q != "" {
		where = append(where, `(p.title LIKE ? ESCAPE '\' OR p.slug LIKE ? ESCAPE '\')`)
		args = append(args, likePattern(q), likePattern(q))
	}
	return where, args
}

// WordPressPostUpdate holds the local fields to change; nil leaves one
// alone.
type WordPressPostUpdate struct {
	Title            *string
	Content          *string
	Excerpt          *string
	Slug             *string
	Status           *string
	ScheduledAt      **time.Time
	FeaturedImageURL *string
	CategoryIDs      *[]int64
	TagIDs           *[]int64
}

// sets calls set for each column the update changes, but the terms.
func (up *WordPressPostUpdate) sets(set func(col string, v any)) {
	for _, f := range []struct {
		col string
		v   *string
	}{{"title", up.Title}, {"content", up.Content}, {"excerpt", up.Excerpt}, {"slug", up.Slug}, {"status", up.Status},
		{"featured_image_url", up.FeaturedImageURL}} {
		if f.v != nil {
			set(f.col, *f.v)
		}
	}
	if up.ScheduledAt != nil {
		set("scheduled_at", nullTime(*up.ScheduledAt))
	}
}

// UpdateWordPressPost changes a post here. A post the site had in sync
// becomes dirty: the site no longer has what copydesk has.
func (db *DB) UpdateWordPressPost(ctx context.Context, id int64, up WordPressPostUpdate) (*WordPressPost, error) {
	err := db.tx(ctx, func(tx *sql.Tx) error {
		envID, err := envOf(ctx, tx, "wordpress_posts", id, "post")
		if err != nil {
			return err
		}
		var sets []string
		var args []any
		up.sets(func(col string, v any) { sets, args = append(sets, col+" = ?"), append(args, v) })
		if err := setPostTerms(ctx, tx, "wordpress_post", id, envID, up.CategoryIDs, up.TagIDs); err != nil {
			return err
		}
		if len(sets) == 0 && up.CategoryIDs == nil && up.TagIDs == nil {
			return nil
		}
		sets = append(sets, "sync_status = CASE sync_status WHEN 'synced' THEN 'dirty' ELSE sync_status END", "updated_at = ?")
		_, err = tx.ExecContext(ctx, `UPDATE wordpress_posts SET `+strings.Join(sets, ", ")+` WHERE id = ?`, append(args, db.now(), id)...)
		return slugTaken(translate(err, "post"), "post")
	})
	if err != nil {
		return nil, err
	}
	return db.WordPressPostByID(ctx, id)
}

// WordPressSync is what a remote call learnt; nil fields are left alone.
type WordPressSync struct {
	RemoteID         *int64
	RemoteLink       *string
	RemoteStatus     *string
	RemoteModified   *time.Time
	RemoteHash       *string
	SyncStatus       *string
	LastError        *string
	Synced           bool   // sets synced_at to now
	CreatePending    *int64 // a create's floor marks it pending (see WordPressPost.CreateFloor); 0 clears the mark
	FeaturedMediaID  *int64
	FeaturedMediaSrc *string
	// Local is the post as the site has it, when a sync pulls it here.
	Local *WordPressPostUpdate
}

// SyncWordPressPost records what a remote call did to a post. It does not
// mark the post dirty: it is the sync itself.
func (db *DB) SyncWordPressPost(ctx context.Context, id int64, s WordPressSync) (*WordPressPost, error) {
	err := db.tx(ctx, func(tx *sql.Tx) error {
		return applySync(ctx, tx, id, s, db.now())
	})
	if err != nil {
		return nil, err
	}
	return db.WordPressPostByID(ctx, id)
}

func applySync(ctx context.Context, tx *sql.Tx, id int64, s WordPressSync, now string) error {
	envID, err := envOf(ctx, tx, "wordpress_posts", id, "post")
	if err != nil {
		return err
	}
	var ch changes
	set := ch.set
	given(&ch, "remote_id", s.RemoteID)
	given(&ch, "remote_link", s.RemoteLink)
	given(&ch, "remote_status", s.RemoteStatus)
	if s.RemoteModified != nil {
		set("remote_modified", fmtTime(*s.RemoteModified))
	}
	given(&ch, "remote_hash", s.RemoteHash)
	given(&ch, "sync_status", s.SyncStatus)
	given(&ch, "last_error", s.LastError)
	if s.Synced {
		set("synced_at", now)
	}
	if s.CreatePending != nil {
		set("create_pending", max(0, *s.CreatePending))
	}
	given(&ch, "featured_media_id", s.FeaturedMediaID)
	given(&ch, "featured_media_src", s.FeaturedMediaSrc)
	if l := s.Local; l != nil {
		l.sets(set)
		if err := setPostTerms(ctx, tx, "wordpress_post", id, envID, l.CategoryIDs, l.TagIDs); err != nil {
			return err
		}
		set("updated_at", now)
	}
	if ch.none() {
		return nil
	}
	q, args := ch.update("wordpress_posts", id)
	_, err = tx.ExecContext(ctx, q, args...)
	return slugTaken(translate(err, "post"), "post")
}

// DeleteWordPressPost deletes a post here.
func (db *DB) DeleteWordPressPost(ctx context.Context, id int64) error {
	return db.deleteByID(ctx, "wordpress_posts", "post", id)
}

// CategoriesByID reads the categories with the given ids (a post's), in
// no particular order; missing ones are left out.
func (db *DB) CategoriesByID(ctx context.Context, ids []int64) ([]*Category, error) {
	return termsByID(ctx, db, "cms_categories", categoryColumns, ids, scanCategory)
}

// TagsByID reads the tags with the given ids.
func (db *DB) TagsByID(ctx context.Context, ids []int64) ([]*Tag, error) {
	return termsByID(ctx, db, "cms_tags", tagColumns, ids, scanTag)
}

func termsByID[T any](ctx context.Context, db *DB, table, columns string, ids []int64, scan func(rowScanner) (T, error)) ([]T, error) {
	out := []T{}
	if len(ids) == 0 {
		return out, nil
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	rows, err := db.r.QueryContext(ctx, `SELECT `+columns+` FROM `+table+` c WHERE c.id IN (?`+strings.Repeat(", ?", len(ids)-1)+`) ORDER BY c.id`, args...)
	if err != nil {
		return nil, fmt.Errorf("store: read %s: %w", table, err)
	}
	defer rows.Close()
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("store: read %s: %w", table, err)
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// CategoryBySlug finds an environment's category by slug; nil when none.
func (db *DB) CategoryBySlug(ctx context.Context, envID int64, slug string) (*Category, error) {
	c, err := scanCategory(db.r.QueryRowContext(ctx, `SELECT `+categoryColumns+` FROM cms_categories c WHERE c.environment_id = ? AND c.slug = ?`, envID, slug))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return c, err
}

// TagBySlug finds an environment's tag by slug; nil when none.
func (db *DB) TagBySlug(ctx context.Context, envID int64, slug string) (*Tag, error) {
	t, err := scanTag(db.r.QueryRowContext(ctx, `SELECT `+tagColumns+` FROM cms_tags c WHERE c.environment_id = ? AND c.slug = ?`, envID, slug))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return t, err
}

// SetCategoryTerm records (or, nil, forgets) the WordPress term of a
// category.
func (db *DB) SetCategoryTerm(ctx context.Context, id int64, termID *int64) error {
	_, err := db.exec(ctx, `UPDATE cms_categories SET wp_term_id = ? WHERE id = ?`, termID, id)
	return err
}

// SetTagTerm records (or forgets) the WordPress term of a tag.
func (db *DB) SetTagTerm(ctx context.Context, id int64, termID *int64) error {
	_, err := db.exec(ctx, `UPDATE cms_tags SET wp_term_id = ? WHERE id = ?`, termID, id)
	return err
}
