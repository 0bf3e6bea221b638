// Package environment holds the rules of environments, the tenancy
// boundary: only admins create, change and delete them, everyone else reads
// those granted to them; how a slug is made; what a configuration may hold.
// It also answers the question every environment-scoped group asks: "is
// environment id there for this caller?" (Get).
package environment

import (
	"context"
	"strconv"
	"strings"
	"unicode"

	"github.com/copydesk/copydesk/server/credential"
	"github.com/copydesk/copydesk/server/slug"
	"github.com/copydesk/copydesk/server/valid"
	"github.com/copydesk/copydesk/store"
)

// Store is what the service needs of the store.
type Store interface {
	EnvironmentByID(ctx context.Context, id int64) (*store.Environment, error)
	ListEnvironments(ctx context.Context, f store.EnvironmentFilter) ([]*store.Environment, int, error)
	CreateEnvironment(ctx context.Context, n store.NewEnvironment) (*store.Environment, error)
	UpdateEnvironment(ctx context.Context, id int64, up store.EnvironmentUpdate) (*store.Environment, error)
	DeleteEnvironment(ctx context.Context, id int64) error
	CredentialByID(ctx context.Context, id int64) (*store.Credential, error)
}

// Getter is what the other services need of this one: an environment as
// a scope sees it (one it does not see is not found).
type Getter interface {
	Get(ctx context.Context, sc store.Scope, id int64) (*store.Environment, error)
}

// Service implements the environment rules over a Store.
type Service struct {
	db    Store
	astro AstroPlaces
}

// New returns the service; Astro projects are off until ConfineAstro
// names where they may live.
func New(db Store) *Service { return &Service{db: db} }

// ConfineAstro sets the folders Astro projects may live under (serve
// --astro-roots) and the data directory, always refused; it returns s.
func (s *Service) ConfineAstro(p AstroPlaces) *Service {
	s.astro = p
	return s
}

// Get returns environment id as the scope sees it: one outside the scope
// is "not found", exactly as if it did not exist. Every group that takes an
// environment id from a caller resolves it here.
func (s *Service) Get(ctx context.Context, sc store.Scope, id int64) (*store.Environment, error) {
	if err := sc.Require(id, "environment"); err != nil {
		return nil, err
	}
	return s.db.EnvironmentByID(ctx, id)
}

// List lists the environments the scope sees, by name; q matches name or
// slug.
func (s *Service) List(ctx context.Context, sc store.Scope, q string, page store.Page) ([]*store.Environment, int, error) {
	return s.db.ListEnvironments(ctx, store.EnvironmentFilter{Scope: sc, Q: q, Page: page})
}

// maxSlugTries bounds the search for a free slug made from a name.
const maxSlugTries = 50

// Create makes an environment (admins only). Without a slug one is made
// from the name, with -2, -3, ... when taken; a given slug that is taken is
// a conflict.
func (s *Service) Create(ctx context.Context, sc store.Scope, n store.NewEnvironment) (*store.Environment, error) {
	if err := sc.RequireAdmin(); err != nil {
		return nil, err
	}
	if err := normalizeNew(&n); err != nil {
		return nil, err
	}
	if err := s.checkCredential(ctx, 0, &n.Configuration); err != nil {
		return nil, err
	}
	if a := n.Configuration.Astro; a != nil {
		if err := s.astro.checkAstro(a); err != nil {
			return nil, err
		}
	}
	if n.Slug != "" {
		return s.db.CreateEnvironment(ctx, n)
	}
	base := Slugify(n.Name)
	for i := 1; ; i++ {
		n.Slug = base
		if i > 1 {
			n.Slug = base + "-" + strconv.Itoa(i)
		}
		e, err := s.db.CreateEnvironment(ctx, n)
		if store.KindOf(err) != store.KindConflict || i == maxSlugTries {
			return e, err
		}
	}
}

// Update changes the fields given (admins only). A missing environment is
// reported before a broken rule.
func (s *Service) Update(ctx context.Context, sc store.Scope, id int64, up store.EnvironmentUpdate) (*store.Environment, error) {
	if err := sc.RequireAdmin(); err != nil {
		return nil, err
	}
	if _, err := s.Get(ctx, sc, id); err != nil {
		return nil, err
	}
	if err := normalizeUpdate(&up); err != nil {
		return nil, err
	}
	if up.Configuration != nil {
		if err := s.checkCredential(ctx, id, up.Configuration); err != nil {
			return nil, err
		}
		if a := up.Configuration.Astro; a != nil {
			if err := s.astro.checkAstro(a); err != nil {
				return nil, err
			}
		}
	}
	return s.db.UpdateEnvironment(ctx, id, up)
}

// SetConfiguration replaces an environment's whole configuration (admins
// only); defaults fill what is left out.
func (s *Service) SetConfiguration(ctx context.Context, sc store.Scope, id int64, cfg store.EnvironmentConfig) (*store.EnvironmentConfig, error) {
	e, err := s.Update(ctx, sc, id, store.EnvironmentUpdate{Configuration: &cfg})
	if err != nil {
		return nil, err
	}
	return &e.Configuration, nil
}

// Delete removes an environment and, through the store's foreign keys,
// everything in it (admins only).
func (s *Service) Delete(ctx context.Context, sc store.Scope, id int64) error {
	if err := sc.RequireAdmin(); err != nil {
		return err
	}
	if err := sc.Require(id, "environment"); err != nil {
		return err
	}
	return s.db.DeleteEnvironment(ctx, id)
}

// checkCredential: the WordPress credential a configuration names exists
// and may publish to its site from environment id (0: a new one).
func (s *Service) checkCredential(ctx context.Context, id int64, cfg *store.EnvironmentConfig) error {
	wp := cfg.WordPress
	if wp == nil || wp.CredentialID == nil {
		return nil
	}
	cred, err := s.db.CredentialByID(ctx, *wp.CredentialID)
	if store.IsNotFound(err) {
		return store.Invalid("configuration.wordpress.credential_id: no credential with id %d", *wp.CredentialID)
	}
	if err != nil {
		return err
	}
	need := credential.Need{Kind: credential.WordPress, Site: wp.BaseURL}
	if id > 0 {
		need.EnvironmentID = &id
	}
	if msg := need.Refusal(cred); msg != "" {
		return store.Invalid("configuration.wordpress: %s", msg)
	}
	return nil
}

// Limits of the free-text fields.
const (
	maxName        = 100
	maxDescription = 2000
)

func normalizeNew(n *store.NewEnvironment) error {
	name, err := checkName(n.Name)
	if err != nil {
		return err
	}
	n.Name = name
	if n.Description, err = checkDescription(n.Description); err != nil {
		return err
	}
	if err := NormalizeConfig(&n.Configuration); err != nil {
		return err
	}
	if n.Slug != "" && !ValidSlug(n.Slug) {
		return errSlug
	}
	return nil
}

func normalizeUpdate(up *store.EnvironmentUpdate) error {
	if up.Name != nil {
		name, err := checkName(*up.Name)
		if err != nil {
			return err
		}
		up.Name = &name
	}
	if up.Description != nil {
		d, err := checkDescription(*up.Description)
		if err != nil {
			return err
		}
		up.Description = &d
	}
	if up.Slug != nil && !ValidSlug(*up.Slug) {
		return errSlug
	}
	if up.Configuration != nil {
		return NormalizeConfig(up.Configuration)
	}
	return nil
}

func checkName(name string) (string, error) { return valid.Name("name", name, maxName) }

func checkDescription(d string) (string, error) {
	return valid.LongText("description", d, maxDescription)
}

var errSlug = store.Invalid("slug: must be lower-case letters and digits separated by single dashes, at most 64 characters")

// ValidSlug reports whether s is a lower-case, dash-separated slug of at
// most 64 characters.
func ValidSlug(s string) bool { return slug.Valid(s, 64) }

// Slugify makes a slug from a name: lower-case ASCII letters and digits
// joined by dashes, at most 56 characters so that "-50" still fits;
// "environment" when nothing is left.
func Slugify(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		if r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	s := strings.Trim(b.String(), "-")
	if len(s) > 56 {
		s = strings.Trim(s[:56], "-")
	}
	if s == "" {
		return "environment"
	}
	return s
}

// For is the environment a request's environment_id names for something
// done in it: one that does not exist, or that the scope does not see, is
// the request's mistake (422, naming the field), where Get's not found
// (404) is for a route's own environment. An id of 0 or less was not
// given.
func For(ctx context.Context, envs Getter, sc store.Scope, id int64) (*store.Environment, error) {
	if id <= 0 {
		return nil, store.Invalid("environment_id: is required")
	}
	env, err := envs.Get(ctx, sc, id)
	if store.IsNotFound(err) {
		return nil, store.Invalid("environment_id: no environment with id %d", id)
	}
	return env, err
}
