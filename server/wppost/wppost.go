// Package wppost holds the rules of WordPress posts (/api/wordpress-posts):
// posts kept locally (Markdown, with categories and tags of the CMS), and
// what is done with them on the environment's WordPress site: publish,
// unpublish, trash, sync (with conflict detection) and import. The site
// is the one the environment's configuration names, through its wordpress
// credential; every remote call goes through server/publish/wordpress.
package wppost

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/copydesk/copydesk/server/credential"
	"github.com/copydesk/copydesk/server/environment"
	"github.com/copydesk/copydesk/server/jobs"
	"github.com/copydesk/copydesk/server/notify"
	"github.com/copydesk/copydesk/server/outbound"
	"github.com/copydesk/copydesk/server/slug"
	"github.com/copydesk/copydesk/server/valid"
	"github.com/copydesk/copydesk/server/webhook"
	"github.com/copydesk/copydesk/store"
)

// Store is what the service needs of the store.
type Store interface {
	WordPressPostByID(ctx context.Context, id int64) (*store.WordPressPost, error)
	WordPressPostByRemote(ctx context.Context, envID, remoteID int64) (*store.WordPressPost, error)
	ListWordPressPosts(ctx context.Context, f store.WordPressPostFilter) ([]*store.WordPressPost, int, error)
	CreateWordPressPost(ctx context.Context, n store.NewWordPressPost) (*store.WordPressPost, error)
	UpdateWordPressPost(ctx context.Context, id int64, up store.WordPressPostUpdate) (*store.WordPressPost, error)
	SyncWordPressPost(ctx context.Context, id int64, s store.WordPressSync) (*store.WordPressPost, error)
	DeleteWordPressPost(ctx context.Context, id int64) error
	CategoriesByID(ctx context.Context, ids []int64) ([]*store.Category, error)
	TagsByID(ctx context.Context, ids []int64) ([]*store.Tag, error)
	CategoryBySlug(ctx context.Context, envID int64, slug string) (*store.Category, error)
	TagBySlug(ctx context.Context, envID int64, slug string) (*store.Tag, error)
	EnvironmentByID(ctx context.Context, id int64) (*store.Environment, error)
	CreateCategory(ctx context.Context, n store.NewCategory) (*store.Category, error)
	CreateTag(ctx context.Context, n store.NewTag) (*store.Tag, error)
	SetCategoryTerm(ctx context.Context, id int64, termID *int64) error
	SetTagTerm(ctx context.Context, id int64, termID *int64) error
}

// Credentials opens the WordPress credential of an environment
// (server/credential).
type Credentials interface {
	Open(ctx context.Context, id int64, n credential.Need) (*credential.Opened, error)
}

// Runner is the job runner (server/jobs) that carries queued publishes
// out (PublishJob).
type Runner interface {
	Register(kind string, k jobs.Kind)
	Enqueue(ctx context.Context, kind string, payload any, opt jobs.EnqueueOptions) (*store.Job, error)
}

// maxImageMiB is the default bound of a featured image.
const maxImageMiB = 10

// Options tunes the remote calls.
type Options struct {
	HTTP *http.Client // every call to the WordPress site
	// ImageHTTP fetches featured images, addresses any editor types: the
	// web sources' client (its address guard). Nil: one that refuses
	// private and loopback addresses.
	ImageHTTP *http.Client
	Timeout   time.Duration
	Retries   int
	Backoff   func(n int) time.Duration
	MaxImage  int64 // largest featured image fetched; 10 MiB when 0
}

// Deps are what the service is built from.
type Deps struct {
	Store        Store
	Environments environment.Getter
	Credentials  Credentials
	// Jobs, when set, carries out queued publishes (PublishJob): New
	// registers the kind with it.
	Jobs Runner
	// Notify, when set, tells whoever queued a publish how it ended.
	Notify notify.ToUser
	// Hooks, when set, tells webhooks how every publish ended
	// (post.published, post.failed).
	Hooks   webhook.Emitter
	Options Options
}

// Service implements the WordPress post rules.
type Service struct {
	db    Store
	envs  environment.Getter
	creds Credentials
	jobs  Runner
	note  notify.ToUser
	hooks webhook.Emitter
	opt   Options
}

// New returns the service.
func New(d Deps) *Service {
	if d.Options.HTTP == nil {
		d.Options.HTTP = &http.Client{Timeout: 5 * time.Minute}
	}
	if d.Options.ImageHTTP == nil {
		d.Options.ImageHTTP = outbound.NewClient(outbound.Options{RefusePrivate: true, Timeout: 5 * time.Minute})
	}
	if d.Options.MaxImage <= 0 {
		d.Options.MaxImage = maxImageMiB << 20
	}
	s := &Service{db: d.Store, envs: d.Environments, creds: d.Credentials, jobs: d.Jobs,
		note: d.Notify, hooks: webhook.Or(d.Hooks), opt: d.Options}
	if s.jobs != nil {
		s.registerJobs()
	}
	return s
}

// Limits of the fields.
const (
	maxTitle   = 500
	maxExcerpt = 5000
	maxContent = 1 << 20
	maxURL     = 2000
)

// Input is a post to create.
type Input struct {
	EnvironmentID    int64
	Title            string
	Content          string
	Excerpt          string
	Slug             string // "": made from the title
	Status           string // "": the environment's default_status, else draft
	ScheduledAt      *time.Time
	FeaturedImageURL string
	CategoryIDs      []int64
	TagIDs           []int64
	store.PostOrigin
}

// Change holds the fields to change; nil leaves one alone.
type Change struct {
	Title            *string
	Content          *string
	Excerpt          *string
	Slug             *string
	Status           *string
	ScheduledAt      *time.Time
	ClearSchedule    bool
	FeaturedImageURL *string
	CategoryIDs      *[]int64
	TagIDs           *[]int64
}

// ListQuery narrows a list.
type ListQuery struct {
	EnvironmentID *int64
	Status        string
	SyncStatus    string
	CategoryID    *int64
	TagID         *int64
	Q             string
	Page          store.Page
}

// List lists the posts the scope sees, newest first.
func (s *Service) List(ctx context.Context, sc store.Scope, q ListQuery) ([]*store.WordPressPost, int, error) {
	if q.EnvironmentID != nil {
		if _, err := s.envs.Get(ctx, sc, *q.EnvironmentID); err != nil {
			return nil, 0, err
		}
	}
	return s.db.ListWordPressPosts(ctx, store.WordPressPostFilter{Scope: sc, EnvironmentID: q.EnvironmentID, Status: q.Status,
		SyncStatus: q.SyncStatus, CategoryID: q.CategoryID, TagID: q.TagID, Q: q.Q, Page: q.Page})
}

// Get returns a post the scope sees.
func (s *Service) Get(ctx context.Context, sc store.Scope, id int64) (*store.WordPressPost, error) {
	return store.Seen(ctx, id, s.db.WordPressPostByID, func(p *store.WordPressPost) bool { return sc.Sees(p.EnvironmentID) }, "post")
}

// Create makes a post here, in an environment the scope sees.
func (s *Service) Create(ctx context.Context, sc store.Scope, userID int64, in Input) (*store.WordPressPost, error) {
	env, err := environment.For(ctx, s.envs, sc, in.EnvironmentID)
	if err != nil {
		return nil, err
	}
	if in.Status == "" {
		in.Status = "draft"
		if wp := env.Configuration.WordPress; wp != nil && wp.DefaultStatus != "" {
			in.Status = wp.DefaultStatus
		}
	}
	ch := Change{Title: &in.Title, Content: &in.Content, Excerpt: &in.Excerpt, Status: &in.Status, ScheduledAt: in.ScheduledAt,
		FeaturedImageURL: &in.FeaturedImageURL}
	if in.Slug != "" {
		ch.Slug = &in.Slug
	}
	if err := normalize(&ch, in.ScheduledAt); err != nil {
		return nil, err
	}
	var by *int64
	if userID > 0 {
		by = &userID
	}
	return s.db.CreateWordPressPost(ctx, store.NewWordPressPost{EnvironmentID: in.EnvironmentID, PostOrigin: in.PostOrigin, CreatedBy: by,
		Title: *ch.Title, Content: *ch.Content, Excerpt: *ch.Excerpt, Slug: in.Slug, SlugTries: slug.Generated(*ch.Title, "post", slug.Max),
		Status: in.Status, ScheduledAt: in.ScheduledAt, FeaturedImageURL: *ch.FeaturedImageURL, CategoryIDs: in.CategoryIDs, TagIDs: in.TagIDs})
}

// Update changes a post here; a post in sync with the site becomes dirty.
func (s *Service) Update(ctx context.Context, sc store.Scope, id int64, ch Change) (*store.WordPressPost, error) {
	p, err := s.Get(ctx, sc, id)
	if err != nil {
		return nil, err
	}
	sched := p.ScheduledAt
	if ch.ScheduledAt != nil {
		sched = ch.ScheduledAt
	}
	if ch.ClearSchedule {
		sched = nil
	}
	if ch.Status == nil {
		ch.Status = &p.Status
	}
	if err := normalize(&ch, sched); err != nil {
		return nil, err
	}
	up := store.WordPressPostUpdate{Title: ch.Title, Content: ch.Content, Excerpt: ch.Excerpt, Slug: ch.Slug, Status: ch.Status,
		FeaturedImageURL: ch.FeaturedImageURL, CategoryIDs: ch.CategoryIDs, TagIDs: ch.TagIDs}
	if ch.ScheduledAt != nil || ch.ClearSchedule {
		up.ScheduledAt = &sched
	}
	return s.db.UpdateWordPressPost(ctx, id, up)
}

// Delete deletes a post here; with remote, it first moves it to the
// trash on the site (a post never sent is only deleted here). A post
// whose create got no answer may be on the site all the same: it is
// looked up as a publish would (pendingCreate) and trashed when found.
func (s *Service) Delete(ctx context.Context, sc store.Scope, id int64, remote bool) error {
	p, err := s.Get(ctx, sc, id)
	if err != nil {
		return err
	}
	if remote && (p.RemoteID != nil || p.CreatePending) {
		if err := s.trash(ctx, sc, p); err != nil {
			return err
		}
	}
	return s.db.DeleteWordPressPost(ctx, id)
}

// normalize checks the fields of a create or change; sched is the
// schedule the post will have.
func normalize(ch *Change, sched *time.Time) error {
	if ch.Title != nil {
		t, err := valid.Name("title", *ch.Title, maxTitle)
		if err != nil {
			return err
		}
		ch.Title = &t
	}
	if ch.Content != nil {
		if err := valid.Text("content", *ch.Content); err != nil {
			return err
		}
		if len(*ch.Content) > maxContent {
			return store.Invalid("content: must be at most %d bytes", maxContent)
		}
	}
	if ch.Excerpt != nil {
		e, err := valid.LongText("excerpt", *ch.Excerpt, maxExcerpt)
		if err != nil {
			return err
		}
		ch.Excerpt = &e
	}
	if ch.Slug != nil && !slug.Valid(*ch.Slug, slug.Max) {
		return store.Invalid("slug: must be lower-case ASCII letters and digits in groups joined by single dashes, at most %d characters", slug.Max)
	}
	if ch.Status != nil {
		if !slices.Contains(store.WordPressStatuses, *ch.Status) {
			return store.Invalid("status: must be one of %s", strings.Join(store.WordPressStatuses, ", "))
		}
		if *ch.Status == "future" && sched == nil {
			return store.Invalid("scheduled_at: is required for a future post")
		}
	}
	if ch.FeaturedImageURL != nil && *ch.FeaturedImageURL != "" {
		u, err := url.Parse(*ch.FeaturedImageURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || len(*ch.FeaturedImageURL) > maxURL {
			return store.Invalid("featured_image_url: must be an http or https address of an image, without credentials")
		}
	}
	return nil
}
