// Package cms holds the rules of the CMS taxonomy (/api/cms): categories,
// with an optional parent, and tags, per environment, used by both post
// kinds. Editors write them in their environments, viewers read them.
// Slugs follow server/slug: given ones must be valid (422) and free in
// the environment (409); made ones move on to -2, -3, ..., and a name with
// nothing to slug gets category-<id> / tag-<id>.
package cms

import (
	"context"

	"github.com/copydesk/copydesk/server/environment"
	"github.com/copydesk/copydesk/server/slug"
	"github.com/copydesk/copydesk/server/valid"
	"github.com/copydesk/copydesk/store"
)

// Store is what the service needs of the store.
type Store interface {
	CategoryByID(ctx context.Context, id int64) (*store.Category, error)
	ListCategories(ctx context.Context, f store.CategoryFilter) ([]*store.Category, int, error)
	CreateCategory(ctx context.Context, n store.NewCategory) (*store.Category, error)
	UpdateCategory(ctx context.Context, id int64, up store.CategoryUpdate) (*store.Category, error)
	DeleteCategory(ctx context.Context, id int64) (map[string]int, error)
	TagByID(ctx context.Context, id int64) (*store.Tag, error)
	ListTags(ctx context.Context, f store.TagFilter) ([]*store.Tag, int, error)
	CreateTag(ctx context.Context, n store.NewTag) (*store.Tag, error)
	UpdateTag(ctx context.Context, id int64, up store.TagUpdate) (*store.Tag, error)
	DeleteTag(ctx context.Context, id int64) (map[string]int, error)
}

// Service implements the taxonomy rules.
type Service struct {
	db   Store
	envs environment.Getter
}

// New returns the service.
func New(db Store, envs environment.Getter) *Service { return &Service{db: db, envs: envs} }

// Limits of the fields.
const (
	maxName        = 200
	maxDescription = 5000
)

// ListQuery narrows a list of categories or tags.
type ListQuery struct {
	EnvironmentID *int64 // an environment the caller does not see is 404
	Q             string
	Sort          store.Sort
	Page          store.Page
}

// CategoryInput is a category to create.
type CategoryInput struct {
	EnvironmentID int64
	ParentID      *int64
	Name          string
	Slug          string // "": made from the name
	Description   string
}

// CategoryChange holds the fields to change; nil leaves one alone.
type CategoryChange struct {
	Name        *string
	Slug        *string
	Description *string
	ParentID    *int64 // 0: no parent
}

// ListCategories lists the categories the scope sees.
func (s *Service) ListCategories(ctx context.Context, sc store.Scope, q ListQuery) ([]*store.Category, int, error) {
	if err := s.checkListEnv(ctx, sc, q.EnvironmentID); err != nil {
		return nil, 0, err
	}
	return s.db.ListCategories(ctx, store.CategoryFilter{Scope: sc, EnvironmentID: q.EnvironmentID, Q: q.Q, Sort: q.Sort, Page: q.Page})
}

// Category returns a category the scope sees.
func (s *Service) Category(ctx context.Context, sc store.Scope, id int64) (*store.Category, error) {
	return store.Seen(ctx, id, s.db.CategoryByID, func(c *store.Category) bool { return sc.Sees(c.EnvironmentID) }, "category")
}

// CreateCategory makes a category in an environment the scope sees.
func (s *Service) CreateCategory(ctx context.Context, sc store.Scope, in CategoryInput) (*store.Category, error) {
	if err := s.checkEnv(ctx, sc, in.EnvironmentID); err != nil {
		return nil, err
	}
	name, err := checkName(in.Name)
	if err != nil {
		return nil, err
	}
	desc, err := checkDescription(in.Description)
	if err != nil {
		return nil, err
	}
	if err := checkSlug(in.Slug); err != nil {
		return nil, err
	}
	if in.ParentID != nil && *in.ParentID <= 0 {
		return nil, store.Invalid("parent_id: must be a positive id")
	}
	return s.db.CreateCategory(ctx, store.NewCategory{EnvironmentID: in.EnvironmentID, ParentID: in.ParentID, Name: name,
		Slug: in.Slug, SlugTries: slug.Generated(name, "category", slug.Max), Description: desc})
}

// UpdateCategory changes a category the scope sees.
func (s *Service) UpdateCategory(ctx context.Context, sc store.Scope, id int64, ch CategoryChange) (*store.Category, error) {
	if _, err := s.Category(ctx, sc, id); err != nil {
		return nil, err
	}
	up := store.CategoryUpdate{Slug: ch.Slug, ParentID: ch.ParentID}
	if ch.Name != nil {
		name, err := checkName(*ch.Name)
		if err != nil {
			return nil, err
		}
		up.Name = &name
	}
	if ch.Description != nil {
		d, err := checkDescription(*ch.Description)
		if err != nil {
			return nil, err
		}
		up.Description = &d
	}
	if ch.Slug != nil {
		if err := checkGivenSlug(*ch.Slug); err != nil {
			return nil, err
		}
	}
	if ch.ParentID != nil {
		if *ch.ParentID < 0 {
			return nil, store.Invalid("parent_id: must be a category id, or 0 for none")
		}
		if *ch.ParentID == id {
			return nil, store.Invalid("parent_id: a category cannot be its own parent")
		}
	}
	return s.db.UpdateCategory(ctx, id, up)
}

// DeleteCategory deletes a category the scope sees: its posts lose it,
// its children move to the top. It returns how many posts of each kind
// lost it.
func (s *Service) DeleteCategory(ctx context.Context, sc store.Scope, id int64) (map[string]int, error) {
	if _, err := s.Category(ctx, sc, id); err != nil {
		return nil, err
	}
	return s.db.DeleteCategory(ctx, id)
}

// TagInput is a tag to create.
type TagInput struct {
	EnvironmentID int64
	Name          string
	Slug          string // "": made from the name
}

// TagChange holds the fields to change; nil leaves one alone.
type TagChange struct {
	Name *string
	Slug *string
}

// ListTags lists the tags the scope sees.
func (s *Service) ListTags(ctx context.Context, sc store.Scope, q ListQuery) ([]*store.Tag, int, error) {
	if err := s.checkListEnv(ctx, sc, q.EnvironmentID); err != nil {
		return nil, 0, err
	}
	return s.db.ListTags(ctx, store.TagFilter{Scope: sc, EnvironmentID: q.EnvironmentID, Q: q.Q, Sort: q.Sort, Page: q.Page})
}

// Tag returns a tag the scope sees.
func (s *Service) Tag(ctx context.Context, sc store.Scope, id int64) (*store.Tag, error) {
	return store.Seen(ctx, id, s.db.TagByID, func(t *store.Tag) bool { return sc.Sees(t.EnvironmentID) }, "tag")
}

// CreateTag makes a tag in an environment the scope sees.
func (s *Service) CreateTag(ctx context.Context, sc store.Scope, in TagInput) (*store.Tag, error) {
	if err := s.checkEnv(ctx, sc, in.EnvironmentID); err != nil {
		return nil, err
	}
	name, err := checkName(in.Name)
	if err != nil {
		return nil, err
	}
	if err := checkSlug(in.Slug); err != nil {
		return nil, err
	}
	return s.db.CreateTag(ctx, store.NewTag{EnvironmentID: in.EnvironmentID, Name: name, Slug: in.Slug,
		SlugTries: slug.Generated(name, "tag", slug.Max)})
}

// UpdateTag changes a tag the scope sees.
func (s *Service) UpdateTag(ctx context.Context, sc store.Scope, id int64, ch TagChange) (*store.Tag, error) {
	if _, err := s.Tag(ctx, sc, id); err != nil {
		return nil, err
	}
	up := store.TagUpdate{Slug: ch.Slug}
	if ch.Name != nil {
		name, err := checkName(*ch.Name)
		if err != nil {
			return nil, err
		}
		up.Name = &name
	}
	if ch.Slug != nil {
		if err := checkGivenSlug(*ch.Slug); err != nil {
			return nil, err
		}
	}
	return s.db.UpdateTag(ctx, id, up)
}

// DeleteTag deletes a tag the scope sees; its posts lose it. It returns
// how many posts of each kind lost it.
func (s *Service) DeleteTag(ctx context.Context, sc store.Scope, id int64) (map[string]int, error) {
	if _, err := s.Tag(ctx, sc, id); err != nil {
		return nil, err
	}
	return s.db.DeleteTag(ctx, id)
}

// checkEnv: the environment of a new category or tag is one the caller
// sees; one it does not is named as missing, like an unknown one.
func (s *Service) checkEnv(ctx context.Context, sc store.Scope, id int64) error {
	if _, err := environment.For(ctx, s.envs, sc, id); err != nil {
		return err
	}
	return nil
}

// checkListEnv: a list's environment filter names one the caller sees.
func (s *Service) checkListEnv(ctx context.Context, sc store.Scope, id *int64) error {
	if id == nil {
		return nil
	}
	_, err := s.envs.Get(ctx, sc, *id)
	return err
}

func checkName(name string) (string, error) { return valid.Name("name", name, maxName) }

func checkDescription(d string) (string, error) {
	return valid.LongText("description", d, maxDescription)
}

// ErrSlug is the one answer to a slug that breaks the rule.
var ErrSlug = store.Invalid("slug: must be lower-case ASCII letters and digits in groups joined by single dashes, at most %d characters", slug.Max)

// checkSlug checks a slug a caller gave; "" (none) passes.
func checkSlug(s string) error {
	if s == "" {
		return nil
	}
	return checkGivenSlug(s)
}

func checkGivenSlug(s string) error {
	if !slug.Valid(s, slug.Max) {
		return ErrSlug
	}
	return nil
}
