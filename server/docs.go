package server

import (
	"io/fs"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/copydesk/copydesk/store"
	"github.com/copydesk/copydesk/web"
)

// Interactive documentation: /openapi.json, Swagger UI at /docs and ReDoc at
// /redoc, all from files embedded in the binary. These, and /api/health,
// need no token.
func (s *Server) registerDocsRoutes() {
	// Like every GET route, these answer HEAD too (StaticFS does by itself).
	get := func(path string, h gin.HandlerFunc) {
		s.router.GET(path, h)
		s.router.HEAD(path, h)
	}
	get("/openapi.json", func(c *gin.Context) {
		c.Header("Cache-Control", "no-cache")
		c.Data(http.StatusOK, "application/json", web.OpenAPI)
	})
	page := func(name string) gin.HandlerFunc {
		b, err := fs.ReadFile(web.Assets, name)
		if err != nil {
			panic(err) // the pages are embedded at build time
		}
		return func(c *gin.Context) { c.Data(http.StatusOK, "text/html; charset=utf-8", b) }
	}
	get("/docs", page("docs.html"))
	get("/redoc", page("redoc.html"))
	s.router.StaticFS("/docs/assets", http.FS(web.Assets))
	s.router.StaticFS("/redoc/assets", http.FS(web.Assets))
	s.registerConsoleRoutes()

	s.handle(Route{Method: "GET", Path: "/api/health", Tag: "System", Access: public,
		Summary: "Liveness and database check", Data: healthResponse{}, Errors: []int{503}}, s.health)
}

// DocRoutes are the paths served outside the API (documentation pages, the
// console, and their assets); the route-versus-document test skips them.
func DocRoutes() []string {
	return append([]string{"/openapi.json", "/docs", "/redoc", "/docs/assets/*filepath", "/redoc/assets/*filepath"}, consolePaths...)
}

type healthResponse struct {
	Status        string `json:"status" enum:"ok"`
	Version       string `json:"version"`
	SchemaVersion int    `json:"schema_version"`
}

func (s *Server) health(c *gin.Context) {
	if err := s.db.Ping(c.Request.Context()); err != nil {
		s.log.Error("health check", "err", err)
		abort(c, http.StatusServiceUnavailable, "the database does not answer")
		return
	}
	respond(c, http.StatusOK, healthResponse{Status: "ok", Version: s.opts.Version, SchemaVersion: store.SchemaVersion()}, "ok")
}
