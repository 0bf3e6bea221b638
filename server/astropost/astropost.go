// Package astropost holds the rules of Astro posts (/api/astro-posts):
// Markdown posts kept in the database and written as files into the
// content folder of an environment's Astro project, with front matter that
// the official blog starter's content schema accepts (see Render).
//
// Files and rows move together. Every create, update and delete takes the
// folder's lock, changes the file (atomically: temporary file, fsync,
// rename) inside the transaction that writes the row, before it commits,
// and puts the file back as it was when the row fails. A folder that is
// missing or unwritable is a 409 that leaves no row. What a database
// restore rolls back, the files do not: Reconcile finds and fixes that.
package astropost

import (
	"context"
	"log/slog"
	"net/url"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/copydesk/copydesk/server/environment"
	"github.com/copydesk/copydesk/server/slug"
	"github.com/copydesk/copydesk/server/valid"
	"github.com/copydesk/copydesk/server/webhook"
	"github.com/copydesk/copydesk/store"
)

// Store is what the service needs of the store.
type Store interface {
	AstroPostByID(ctx context.Context, id int64) (*store.AstroPost, error)
	ListAstroPosts(ctx context.Context, f store.AstroPostFilter) ([]*store.AstroPost, int, error)
	ListAstroPostsOfEnvironment(ctx context.Context, envID int64) ([]*store.AstroPost, error)
	CreateAstroPost(ctx context.Context, n store.NewAstroPost, write store.AstroWrite) (*store.AstroPost, error)
	UpdateAstroPost(ctx context.Context, id int64, up store.AstroPostUpdate, write store.AstroWrite) (*store.AstroPost, error)
	DeleteAstroPost(ctx context.Context, id int64, remove func(p *store.AstroPost) error) error
}

// Environments resolves an environment as a scope sees it
// (server/environment).
type Environments interface {
	Get(ctx context.Context, sc store.Scope, id int64) (*store.Environment, error)
	// CheckAstro refuses a project folder the server does not allow
	// (serve --astro-roots, the data directory, not an Astro project).
	CheckAstro(a *store.AstroConfig) error
}

// Service implements the Astro post rules.
type Service struct {
	db    Store
	envs  Environments
	now   func() time.Time
	log   *slog.Logger
	hooks webhook.Emitter
}

// EmitTo makes publishing tell webhooks (post.published, post.failed);
// called once, before the service is used.
func (s *Service) EmitTo(h webhook.Emitter) { s.hooks = webhook.Or(h) }

// published is the webhook event of a post that stopped being a draft
// (err nil), or that failed to (err set).
func (s *Service) published(ctx context.Context, envID, postID int64, err error) {
	e := webhook.Event{Type: webhook.PostPublished, EnvironmentID: envID, Data: map[string]any{"target": store.PostAstro, "post_id": postID}}
	if err != nil {
		e.Type, e.Data["error"] = webhook.PostFailed, store.Message(err)
	}
	s.hooks.Emit(ctx, e)
}

// New returns the service; now is the clock of default publication dates.
func New(db Store, envs Environments, now func() time.Time, log *slog.Logger) *Service {
	return &Service{db: db, envs: envs, now: now, log: log, hooks: webhook.Discard}
}

// Limits of the fields.
const (
	maxTitle       = 300
	maxDescription = 1000
	maxBody        = 2_000_000
	maxHero        = 2000
	// maxFileTries bounds the search for a free generated slug whose file
	// is not taken by a file copydesk does not know.
	maxFileTries = 100
)

// Input is a post to create.
type Input struct {
	EnvironmentID int64
	Title         string
	Description   string
	Slug          string // "": made from the title
	Body          string
	PubDate       *time.Time // nil: now
	UpdatedDate   *time.Time
	HeroImage     string
	Draft         bool
	CategoryIDs   []int64
	TagIDs        []int64
	store.PostOrigin
}

// Change holds the fields to change; nil leaves one alone.
type Change struct {
	Title       *string
	Description *string
	Slug        *string
	Body        *string
	PubDate     *time.Time
	UpdatedDate *time.Time // a zero time clears it
	HeroImage   *string
	Draft       *bool
	CategoryIDs *[]int64
	TagIDs      *[]int64
}

// ListQuery narrows a list of posts.
type ListQuery struct {
	EnvironmentID *int64 // an environment the caller does not see is 404
	Draft         *bool
	CategoryID    *int64
	TagID         *int64
	Q             string
	Page          store.Page
}

// List lists the posts the scope sees, newest first.
func (s *Service) List(ctx context.Context, sc store.Scope, q ListQuery) ([]*store.AstroPost, int, error) {
	if q.EnvironmentID != nil {
		if _, err := s.envs.Get(ctx, sc, *q.EnvironmentID); err != nil {
			return nil, 0, err
		}
	}
	return s.db.ListAstroPosts(ctx, store.AstroPostFilter{Scope: sc, EnvironmentID: q.EnvironmentID, Draft: q.Draft,
		CategoryID: q.CategoryID, TagID: q.TagID, Q: q.Q, Page: q.Page})
}

// Get returns a post the scope sees.
func (s *Service) Get(ctx context.Context, sc store.Scope, id int64) (*store.AstroPost, error) {
	return store.Seen(ctx, id, s.db.AstroPostByID, func(p *store.AstroPost) bool { return sc.Sees(p.EnvironmentID) }, "post")
}

// File returns the exact text of a post's file as it is on disk now.
func (s *Service) File(ctx context.Context, sc store.Scope, id int64) (string, error) {
	p, env, err := s.postEnv(ctx, sc, id)
	if err != nil {
		return "", err
	}
	f, err := s.openFolder(env)
	if err != nil {
		return "", err
	}
	defer f.close()
	text, ok, err := f.read(p.FileName())
	if err != nil {
		return "", err
	}
	if !ok {
		return "", store.Conflict("the file %s of post %d is not in %s (removed outside copydesk, or the database was restored): "+
			"POST /api/astro-posts/reconcile?environment_id=%d&apply=true writes it again", p.FileName(), p.ID, f.path, env.ID)
	}
	return text, nil
}

// Create makes a post and writes its file.
func (s *Service) Create(ctx context.Context, sc store.Scope, in Input) (*store.AstroPost, error) {
	env, err := s.env(ctx, sc, in.EnvironmentID)
	if err != nil {
		return nil, err
	}
	n, err := s.checkInput(env, in)
	if err != nil {
		return nil, err
	}
	f, err := s.openFolder(env)
	if err != nil {
		return nil, err
	}
	defer f.close()
	if n.Slug != "" {
		if err := s.slugFree(f, n.Slug); err != nil {
			return nil, err
		}
	} else {
		n.SlugTries = fileFreeTries(f, slug.Generated(n.Title, "post", slug.Max))
	}
	var back undo
	p, err := s.db.CreateAstroPost(ctx, n, writer(f, &back))
	if err = s.settle(err, back, "create"); err == nil && !p.Draft {
		s.published(ctx, p.EnvironmentID, p.ID, nil)
	}
	return p, err
}

// writer is the store's write hook of a post: it renders the post as the
// transaction has it, writes the file, and keeps in back how to put back
// what was there.
func writer(f *folder, back *undo) store.AstroWrite {
	return func(p *store.AstroPost) (store.AstroFile, error) {
		text := Render(p)
		var err error
		*back, err = f.put(p.FileName(), text)
		return store.AstroFile{FileSHA256: digest(text), RenderSHA256: digest(text)}, err
	}
}

// settle ends a write: when the row failed after the file changed, the
// file is put back as it was. A file that cannot be put back is logged;
// Reconcile reports it.
func (s *Service) settle(err error, back undo, what string) error {
	if err != nil && back != nil {
		if uerr := back(); uerr != nil {
			s.log.Error("astro post: the row failed and its file could not be put back", "op", what, "err", err, "undo_err", uerr)
		}
	}
	return err
}

// fileFreeTries are the slug tries of a generated slug that skip names
// whose file is already in the folder: a Markdown file copydesk does not
// know is never written over.
func fileFreeTries(f *folder, tries func(id int64, try int) string) store.SlugTries {
	return func(id int64, try int) string {
		free, n := "", 0
		for k := 1; k <= try+maxFileTries; k++ {
			c := tries(id, k)
			if !fileTaken(f, c) {
				if n++; n == try {
					return c
				}
			}
			free = c
		}
		return free
	}
}

func fileTaken(f *folder, s string) bool {
	for _, ext := range []string{".md", ".mdx"} {
		if ok, err := f.exists(s + ext); ok || err != nil {
			return true
		}
	}
	return false
}

// slugFree: a given slug's file is not in the folder as a file copydesk
// does not know (Astro would see two entries with one id, and copydesk
// would write over the other).
func (s *Service) slugFree(f *folder, sl string) error {
	for _, ext := range []string{".md", ".mdx"} {
		ok, err := f.exists(sl + ext)
		if err != nil {
			return err
		}
		if ok {
			return store.Conflict("slug: %s%s is already in the content folder %s and is no post of this environment: "+
				"import it (POST /api/astro-posts/import) or choose another slug", sl, ext, f.path)
		}
	}
	return nil
}

// Update changes a post and writes its file again; a new slug moves the
// file.
func (s *Service) Update(ctx context.Context, sc store.Scope, id int64, ch Change) (*store.AstroPost, error) {
	_, env, err := s.postEnv(ctx, sc, id)
	if err != nil {
		return nil, err
	}
	up, err := s.checkChange(env, ch)
	if err != nil {
		return nil, err
	}
	f, err := s.openFolder(env)
	if err != nil {
		return nil, err
	}
	defer f.close()
	// Read again under the lock: the file name to move from is the one
	// on disk now.
	old, err := s.db.AstroPostByID(ctx, id)
	if err != nil {
		return nil, err
	}
	if up.Slug != nil && *up.Slug != old.Slug {
		if err := s.slugFree(f, *up.Slug); err != nil {
			return nil, err
		}
	}
	p, back, err := s.rewrite(ctx, f, old, up)
	err = s.settle(err, back, "update")
	if old.Draft && ch.Draft != nil && !*ch.Draft {
		s.published(ctx, old.EnvironmentID, old.ID, err)
	}
	return p, err
}

// rewrite applies up to post old and writes its file; a new name writes
// the new file first and removes the old one after the row committed.
func (s *Service) rewrite(ctx context.Context, f *folder, old *store.AstroPost, up store.AstroPostUpdate) (*store.AstroPost, undo, error) {
	var back undo
	p, err := s.db.UpdateAstroPost(ctx, old.ID, up, writer(f, &back))
	if err != nil {
		return nil, back, err
	}
	if p.FileName() != old.FileName() {
		if err := f.remove(old.FileName()); err != nil {
			// The row and the new file are in place; the old file is
			// left over, which Reconcile reports as a file with no post.
			s.log.Error("astro post: moved, but the old file could not be removed", "post", p.ID, "file", old.FileName(), "err", err)
		}
	}
	return p, nil, nil
}

// Delete deletes a post and its file.
func (s *Service) Delete(ctx context.Context, sc store.Scope, id int64) error {
	_, env, err := s.postEnv(ctx, sc, id)
	if err != nil {
		return err
	}
	f, err := s.openFolder(env)
	if err != nil {
		return err
	}
	defer f.close()
	var back undo
	err = s.db.DeleteAstroPost(ctx, id, func(p *store.AstroPost) error {
		var err error
		back, err = f.take(p.FileName())
		return err
	})
	return s.settle(err, back, "delete")
}

// postEnv finds a post the scope sees and its environment.
func (s *Service) postEnv(ctx context.Context, sc store.Scope, id int64) (*store.AstroPost, *store.Environment, error) {
	p, err := s.Get(ctx, sc, id)
	if err != nil {
		return nil, nil, err
	}
	env, err := s.envs.Get(ctx, sc, p.EnvironmentID)
	if err != nil {
		return nil, nil, err
	}
	return p, env, nil
}

// env finds the environment of a new post: one the caller sees, with an
// Astro project.
func (s *Service) env(ctx context.Context, sc store.Scope, id int64) (*store.Environment, error) {
	env, err := environment.For(ctx, s.envs, sc, id)
	if err != nil {
		return nil, err
	}
	if err := (target{}).Ready(env); err != nil {
		return nil, err
	}
	return env, nil
}

// ErrSlug is the answer to a slug that breaks the rule. A slug is a file
// name, so the rule is also what keeps "../x", "a/b", "/etc/x" and NUL out
// of the folder; the folder's os.Root is the second wall.
var ErrSlug = store.Invalid("slug: must be lower-case ASCII letters and digits in groups joined by single dashes, at most %d characters "+
	"(it names the file <slug>.md: no slashes, dots or other characters)", slug.Max)

func checkSlug(s string) error {
	if !slug.Valid(s, slug.Max) {
		return ErrSlug
	}
	return nil
}

func (s *Service) checkInput(env *store.Environment, in Input) (store.NewAstroPost, error) {
	n := store.NewAstroPost{EnvironmentID: env.ID, AstroContent: store.AstroContent{Slug: in.Slug, UpdatedDate: in.UpdatedDate, Draft: in.Draft},
		PostOrigin: in.PostOrigin, CategoryIDs: in.CategoryIDs, TagIDs: in.TagIDs}
	var err error
	if n.Title, err = checkTitle(in.Title); err != nil {
		return n, err
	}
	if n.Description, err = checkDescription(in.Description); err != nil {
		return n, err
	}
	if in.Slug != "" {
		if err := checkSlug(in.Slug); err != nil {
			return n, err
		}
	}
	if n.Body, err = checkBody(in.Body); err != nil {
		return n, err
	}
	n.PubDate = s.now().UTC().Truncate(time.Second)
	if in.PubDate != nil {
		n.PubDate = in.PubDate.UTC().Truncate(time.Second)
	}
	if n.UpdatedDate != nil {
		u := n.UpdatedDate.UTC().Truncate(time.Second)
		n.UpdatedDate = &u
	}
	if err := checkDates(n.PubDate, n.UpdatedDate); err != nil {
		return n, err
	}
	if n.HeroImage, err = checkHero(env, in.HeroImage); err != nil {
		return n, err
	}
	return n, checkIDs(in.CategoryIDs, in.TagIDs)
}

func (s *Service) checkChange(env *store.Environment, ch Change) (store.AstroPostUpdate, error) {
	up := store.AstroPostUpdate{Draft: ch.Draft, CategoryIDs: ch.CategoryIDs, TagIDs: ch.TagIDs, Slug: ch.Slug}
	if ch.Title != nil {
		t, err := checkTitle(*ch.Title)
		if err != nil {
			return up, err
		}
		up.Title = &t
	}
	if ch.Description != nil {
		d, err := checkDescription(*ch.Description)
		if err != nil {
			return up, err
		}
		up.Description = &d
	}
	if ch.Slug != nil {
		if err := checkSlug(*ch.Slug); err != nil {
			return up, err
		}
	}
	if ch.Body != nil {
		b, err := checkBody(*ch.Body)
		if err != nil {
			return up, err
		}
		up.Body = &b
	}
	if ch.PubDate != nil {
		t := ch.PubDate.UTC().Truncate(time.Second)
		up.PubDate = &t
	}
	if ch.UpdatedDate != nil {
		t := ch.UpdatedDate.UTC().Truncate(time.Second)
		up.UpdatedDate = &t
	}
	if up.PubDate != nil && up.UpdatedDate != nil && !up.UpdatedDate.IsZero() {
		if err := checkDates(*up.PubDate, up.UpdatedDate); err != nil {
			return up, err
		}
	}
	if ch.HeroImage != nil {
		h, err := checkHero(env, *ch.HeroImage)
		if err != nil {
			return up, err
		}
		up.HeroImage = &h
	}
	var cats, tags []int64
	if ch.CategoryIDs != nil {
		cats = *ch.CategoryIDs
	}
	if ch.TagIDs != nil {
		tags = *ch.TagIDs
	}
	return up, checkIDs(cats, tags)
}

func checkTitle(t string) (string, error) { return valid.Name("title", t, maxTitle) }

func checkDescription(d string) (string, error) {
	d = strings.TrimSpace(d)
	if err := valid.Line("description", d); err != nil {
		return "", err
	}
	return d, valid.MaxLen("description", d, maxDescription)
}

func checkBody(b string) (string, error) {
	if err := valid.Text("body", b); err != nil {
		return "", err
	}
	return b, valid.MaxLen("body", b, maxBody)
}

// checkDates keeps dates within years JavaScript's Date and YAML both
// read as written (four-digit years).
func checkDates(pub time.Time, upd *time.Time) error {
	if pub.Year() < 1000 || pub.Year() > 9999 {
		return store.Invalid("pub_date: must be in the years 1000 to 9999")
	}
	if upd != nil && !upd.IsZero() && (upd.Year() < 1000 || upd.Year() > 9999) {
		return store.Invalid("updated_date: must be in the years 1000 to 9999")
	}
	return nil
}

func checkIDs(groups ...[]int64) error {
	for i, ids := range groups {
		if slices.ContainsFunc(ids, func(id int64) bool { return id <= 0 }) {
			return store.Invalid("%s: ids must be positive", []string{"category_ids", "tag_ids"}[i])
		}
	}
	return nil
}

// imageExts are the image files Astro's image() reads.
var imageExts = []string{".jpg", ".jpeg", ".png", ".gif", ".webp", ".avif", ".svg", ".tif", ".tiff"}

// checkHero: empty, an https URL, or a relative path to an image file in
// the project seen from the content folder (the starter's own posts use
// ../../assets/…). A /public-style path is refused with the reason: the
// starter's schema is image(), which resolves the path as a file import
// and fails the build on anything else.
func checkHero(env *store.Environment, h string) (string, error) {
	h = strings.TrimSpace(h)
	if h == "" {
		return "", nil
	}
	if err := valid.Line("hero_image", h); err != nil {
		return "", err
	}
	if err := valid.MaxLen("hero_image", h, maxHero); err != nil {
		return "", err
	}
	if strings.Contains(h, "://") || strings.HasPrefix(h, "//") {
		u, err := url.Parse(h)
		if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil {
			return "", store.Invalid("hero_image: a URL must be an https:// address of an image")
		}
		return h, nil
	}
	if strings.HasPrefix(h, "/") || strings.HasPrefix(h, `\`) || strings.ContainsAny(h, "?#\\") {
		return "", store.Invalid("hero_image: %q is not a path the blog schema's image() reads: give a path relative to the post "+
			"(./hero.jpg, with the image in the content folder) or an https URL; /public paths fail the build", h)
	}
	if !slices.Contains(imageExts, strings.ToLower(path.Ext(h))) {
		return "", store.Invalid("hero_image: %q is not an image file (%s)", h, strings.Join(imageExts, ", "))
	}
	return relImage(env, h)
}
