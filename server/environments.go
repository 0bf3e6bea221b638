package server

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/copydesk/copydesk/server/environment"
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
	s.handle(Route{Method: "PUT", Path: "/api/environments/{id}/configuration", Tag: tag, Access: adminOnly, Errors: []int{409},
		Summary: "Replace an environment's configuration", Body: store.EnvironmentConfig{}, Data: store.EnvironmentConfig{},
		Notes: "The whole configuration is replaced; defaults fill what is left out (language en, timezone UTC, WordPress status draft, Astro content_dir src/content/blog). " +
			"An Astro content folder another environment writes to is a 409."}, s.putEnvironmentConfig)
	s.handle(Route{Method: "POST", Path: "/api/environments/{id}/astro/test", Tag: tag, Access: adminOnly, Errors: []int{409},
		Summary: "Test the environment's Astro folder: what the server finds there", Data: astroTestResponse{},
		Notes: "Checks the saved configuration.astro, in order: folder (exists, is a folder), allowed (under --astro-roots, not the data directory), " +
			"astro_project (astro.config.* or a package.json naming astro), content_folder (content_dir exists), writable (the server makes and removes " +
			"a file there), astro_command (node_modules/.bin/astro installed; a warning only). Each check answers ok, failed, warning or skipped " +
			"(an earlier check failed) with a detail; ok is true when none failed. A folder that is not allowed is looked at no further. " +
			"An environment without an Astro project is a 409."}, s.testEnvironmentAstro)
}

func (s *Server) testEnvironmentAstro(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	res, err := s.environments.TestAstro(c.Request.Context(), scope(c), id)
	if err != nil {
		fail(c, err)
		return
	}
	msg := "Astro folder test passed"
	if !res.OK {
		msg = "Astro folder test failed"
	}
	respond(c, http.StatusOK, astroTestJSON(res), msg)
}

type astroTestResponse struct {
	OK          bool                 `json:"ok" doc:"true when no check failed: posts can be written there"`
	Detail      string               `json:"detail"`
	ProjectPath string               `json:"project_path"`
	ContentDir  string               `json:"content_dir"`
	Checks      []astroCheckResponse `json:"checks"`
}

type astroCheckResponse struct {
	Name   string `json:"name" enum:"folder,allowed,astro_project,content_folder,writable,astro_command"`
	Status string `json:"status" enum:"ok,failed,warning,skipped" doc:"warning: worth knowing, posts still work; skipped: an earlier check failed"`
	Detail string `json:"detail"`
}

func astroTestJSON(t *environment.AstroTest) astroTestResponse {
	out := astroTestResponse{OK: t.OK, Detail: t.Detail, ProjectPath: t.ProjectPath, ContentDir: t.ContentDir, Checks: []astroCheckResponse{}}
	for _, c := range t.Checks {
		out.Checks = append(out.Checks, astroCheckResponse(c))
	}
	return out
}

type environmentResponse struct {
	ID            int64                   `json:"id"`
	Name          string                  `json:"name"`
	Slug          string                  `json:"slug"`
	Description   string                  `json:"description"`
	Configuration store.EnvironmentConfig `json:"configuration"`
	CreatedAt     Timestamp               `json:"created_at"`
	UpdatedAt     Timestamp               `json:"updated_at"`
}

func environmentJSON(e *store.Environment) environmentResponse {
	return environmentResponse{ID: e.ID, Name: e.Name, Slug: e.Slug, Description: e.Description,
		Configuration: e.Configuration, CreatedAt: Timestamp(e.CreatedAt), UpdatedAt: Timestamp(e.UpdatedAt)}
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

func (s *Server) listEnvironments(c *gin.Context) {
	var q environmentListQuery
	if err := bindQuery(c, &q); err != nil {
		fail(c, err)
		return
	}
	pg := q.page()
	envs, total, err := s.environments.List(c.Request.Context(), scope(c), q.Q, pg)
	if err != nil {
		fail(c, err)
		return
	}
	respondList(c, envs, total, pg, environmentJSON, "environments")
}

func (s *Server) createEnvironment(c *gin.Context) {
	var req environmentCreateRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	n := store.NewEnvironment{Name: req.Name, Slug: req.Slug, Description: req.Description}
	if req.Configuration != nil {
		n.Configuration = *req.Configuration
	}
	e, err := s.environments.Create(c.Request.Context(), scope(c), n)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusCreated, environmentJSON(e), "environment created")
}

func (s *Server) getEnvironment(c *gin.Context) {
	one(c, "id", s.environments.Get, environmentJSON, "environment")
}

func (s *Server) updateEnvironment(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	var req environmentUpdateRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	e, err := s.environments.Update(c.Request.Context(), scope(c), id, store.EnvironmentUpdate(req))
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, environmentJSON(e), "environment updated")
}

func (s *Server) deleteEnvironment(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	if err := s.environments.Delete(c.Request.Context(), scope(c), id); err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, deletedResponse{ID: id, Deleted: true}, "environment deleted")
}

func (s *Server) getEnvironmentConfig(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	e, err := s.environments.Get(c.Request.Context(), scope(c), id)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, e.Configuration, "environment configuration")
}

func (s *Server) putEnvironmentConfig(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	var cfg store.EnvironmentConfig
	if err := decodeJSON(c, &cfg); err != nil {
		fail(c, err)
		return
	}
	out, err := s.environments.SetConfiguration(c.Request.Context(), scope(c), id, cfg)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, out, "environment configuration updated")
}
