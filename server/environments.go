package server

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/gin-gonic/gin"

	"github.com/copydesk/copydesk/server/auth"
	"github.com/copydesk/copydesk/store"
)

// The environments group (/api/environments): sites or workspaces, the
// tenancy boundary. Everyone sees the environments granted to them (admins
// see all); only admins create, change and delete them.
func (s *Server) registerEnvironmentRoutes() {
	const tag = "Environments"
	s.handle(Route{Method: "GET", Path: "/api/environments", Tag: tag, Access: signedIn, List: true,
		Summary: "List the environments you can see", Query: environmentListQuery{}, Data: environmentResponse{}}, s.listEnvironments)
	s.handle(Route{Method: "POST", Path: "/api/environments", Tag: tag, Access: adminOnly, Status: http.StatusCreated,
		Summary: "Create an environment", Body: environmentCreateRequest{}, Data: environmentResponse{}, Errors: []int{409},
		Notes: "The slug is made from the name when not given."}, s.createEnvironment)
	s.handle(Route{Method: "GET", Path: "/api/environments/{id}", Tag: tag, Access: signedIn,
		Summary: "Get an environment", Data: environmentResponse{}}, s.getEnvironment)
	s.handle(Route{Method: "PUT", Path: "/api/environments/{id}", Tag: tag, Access: adminOnly, Errors: []int{409},
		Summary: "Update an environment", Body: environmentUpdateRequest{}, Data: environmentResponse{},
		Notes: "Fields left out keep their values."}, s.updateEnvironment)
	s.handle(Route{Method: "DELETE", Path: "/api/environments/{id}", Tag: tag, Access: adminOnly,
		Summary: "Delete an environment and everything in it", Data: deletedResponse{}}, s.deleteEnvironment)
	s.handle(Route{Method: "GET", Path: "/api/environments/{id}/configuration", Tag: tag, Access: signedIn,
		Summary: "Get an environment's configuration", Data: store.EnvironmentConfig{}}, s.getEnvironmentConfig)
	s.handle(Route{Method: "PUT", Path: "/api/environments/{id}/configuration", Tag: tag, Access: adminOnly,
		Summary: "Replace an environment's configuration", Body: store.EnvironmentConfig{}, Data: store.EnvironmentConfig{},
		Notes: "The whole configuration is replaced; defaults fill what is left out (language en, timezone UTC, WordPress status draft, Astro content_dir src/content/blog)."}, s.putEnvironmentConfig)
}

type environmentResponse struct {
	ID            int64                   `json:"id"`
	Name          string                  `json:"name"`
	Slug          string                  `json:"slug"`
	Description   string                  `json:"description"`
	Configuration store.EnvironmentConfig `json:"configuration"`
	CreatedAt     time.Time               `json:"created_at"`
	UpdatedAt     time.Time               `json:"updated_at"`
}

func environmentJSON(e *store.Environment) environmentResponse {
	return environmentResponse{ID: e.ID, Name: e.Name, Slug: e.Slug, Description: e.Description,
		Configuration: e.Configuration, CreatedAt: e.CreatedAt, UpdatedAt: e.UpdatedAt}
}

type environmentListQuery struct {
	pageQuery
	Q string `form:"q" binding:"max=200" doc:"matches name or slug"`
}

type environmentCreateRequest struct {
	Name          string                   `json:"name" binding:"required,max=100"`
	Slug          string                   `json:"slug" binding:"max=64"`
	Description   string                   `json:"description" binding:"max=2000"`
	Configuration *store.EnvironmentConfig `json:"configuration"`
}

type environmentUpdateRequest struct {
	Name          *string                  `json:"name" binding:"omitempty,min=1,max=100"`
	Slug          *string                  `json:"slug" binding:"omitempty,max=64"`
	Description   *string                  `json:"description" binding:"omitempty,max=2000"`
	Configuration *store.EnvironmentConfig `json:"configuration"`
}

type deletedResponse struct {
	ID      int64 `json:"id"`
	Deleted bool  `json:"deleted"`
}

// environmentFor returns an environment the caller may see. One the caller
// may not see is "not found", exactly as if it did not exist.
func (s *Server) environmentFor(ctx context.Context, p *auth.Principal, id int64) (*store.Environment, error) {
	if !p.User.Role.AtLeast(store.RoleAdmin) {
		ok, err := s.db.UserHasEnvironment(ctx, p.User.ID, id)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, store.NotFound("environment not found")
		}
	}
	return s.db.EnvironmentByID(ctx, id)
}

// environmentFromPath resolves {id} to an environment the caller may see.
func (s *Server) environmentFromPath(c *gin.Context) (*store.Environment, error) {
	id, err := pathID(c, "id")
	if err != nil {
		return nil, err
	}
	return s.environmentFor(c.Request.Context(), principal(c), id)
}

func (s *Server) listEnvironments(c *gin.Context) {
	var q environmentListQuery
	if err := bindQuery(c, &q); err != nil {
		fail(c, err)
		return
	}
	p := principal(c)
	f := store.EnvironmentFilter{Q: q.Q, Page: q.page()}
	if !p.User.Role.AtLeast(store.RoleAdmin) {
		f.VisibleTo = p.User.ID
	}
	envs, total, err := s.db.ListEnvironments(c.Request.Context(), f)
	if err != nil {
		fail(c, err)
		return
	}
	items := make([]environmentResponse, 0, len(envs))
	for _, e := range envs {
		items = append(items, environmentJSON(e))
	}
	respond(c, http.StatusOK, listData[environmentResponse]{Items: items, Total: total, Page: f.Page.Page, PerPage: f.Page.PerPage}, "environments")
}

func (s *Server) createEnvironment(c *gin.Context) {
	var req environmentCreateRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	name := strings.TrimSpace(req.Name)
	if name == "" {
		fail(c, store.Invalid("name: is required"))
		return
	}
	cfg := store.EnvironmentConfig{}
	if req.Configuration != nil {
		cfg = *req.Configuration
	}
	if err := cfg.Normalize(); err != nil {
		fail(c, err)
		return
	}
	n := store.NewEnvironment{Name: name, Slug: req.Slug, Description: strings.TrimSpace(req.Description), Configuration: cfg}
	ctx := c.Request.Context()
	var e *store.Environment
	var err error
	if n.Slug != "" {
		if !store.ValidSlug(n.Slug) {
			fail(c, store.Invalid("slug: must be lower-case letters and digits separated by single dashes, at most 64 characters"))
			return
		}
		e, err = s.db.CreateEnvironment(ctx, n)
	} else {
		// A slug made from the name gets -2, -3, ... when taken.
		base := slugify(name)
		for i := 1; i <= 50; i++ {
			n.Slug = base
			if i > 1 {
				n.Slug = base + "-" + strconv.Itoa(i)
			}
			e, err = s.db.CreateEnvironment(ctx, n)
			if store.KindOf(err) != store.KindConflict {
				break
			}
		}
	}
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusCreated, environmentJSON(e), "environment created")
}

// slugify makes a slug from a name: lower-case ASCII letters and digits
// joined by dashes; "environment" when nothing is left.
func slugify(name string) string {
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

func (s *Server) getEnvironment(c *gin.Context) {
	e, err := s.environmentFromPath(c)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, environmentJSON(e), "environment")
}

func (s *Server) updateEnvironment(c *gin.Context) {
	e, err := s.environmentFromPath(c)
	if err != nil {
		fail(c, err)
		return
	}
	var req environmentUpdateRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	up := store.EnvironmentUpdate{Description: req.Description, Configuration: req.Configuration}
	if req.Name != nil {
		n := strings.TrimSpace(*req.Name)
		if n == "" {
			fail(c, store.Invalid("name: must not be empty"))
			return
		}
		up.Name = &n
	}
	if req.Slug != nil {
		if !store.ValidSlug(*req.Slug) {
			fail(c, store.Invalid("slug: must be lower-case letters and digits separated by single dashes, at most 64 characters"))
			return
		}
		up.Slug = req.Slug
	}
	if up.Configuration != nil {
		if err := up.Configuration.Normalize(); err != nil {
			fail(c, err)
			return
		}
	}
	e, err = s.db.UpdateEnvironment(c.Request.Context(), e.ID, up)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, environmentJSON(e), "environment updated")
}

func (s *Server) deleteEnvironment(c *gin.Context) {
	e, err := s.environmentFromPath(c)
	if err != nil {
		fail(c, err)
		return
	}
	if err := s.db.DeleteEnvironment(c.Request.Context(), e.ID); err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, deletedResponse{ID: e.ID, Deleted: true}, "environment deleted")
}

func (s *Server) getEnvironmentConfig(c *gin.Context) {
	e, err := s.environmentFromPath(c)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, e.Configuration, "environment configuration")
}

func (s *Server) putEnvironmentConfig(c *gin.Context) {
	e, err := s.environmentFromPath(c)
	if err != nil {
		fail(c, err)
		return
	}
	var cfg store.EnvironmentConfig
	if err := decodeJSON(c, &cfg); err != nil {
		fail(c, err)
		return
	}
	if err := cfg.Normalize(); err != nil {
		fail(c, err)
		return
	}
	e, err = s.db.UpdateEnvironment(c.Request.Context(), e.ID, store.EnvironmentUpdate{Configuration: &cfg})
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, e.Configuration, "environment configuration updated")
}
