package server

import (
	"io/fs"
	"net/http"
	"path"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/copydesk/copydesk/web"
)

// The web console (web/console, built into web/console/dist and embedded):
// index.html at /, at every address of an environment's screens and at
// /account (the signed-in user's own screen), so a deep link or a reload
// opens the screen it names; its content-hashed files under /assets/. The console is a client of the API like any other
// and these routes serve files only: no data, no token.

// consoleCSP is the console's Content-Security-Policy: its own script and
// styles only (no inline script, no eval), images of its own or data: URLs
// (a 2FA QR code), requests to this server only, never in a frame.
const consoleCSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

// consolePaths are the console's routes, outside the API and its document.
var consolePaths = []string{"/", "/e/*path", "/admin/*path", "/messages", "/account", "/assets/*filepath"}

func (s *Server) registerConsoleRoutes() {
	index, err := fs.ReadFile(web.Console, "index.html")
	if err != nil {
		panic(err) // embedded at build time
	}
	get := func(p string, h gin.HandlerFunc) {
		s.router.GET(p, h)
		s.router.HEAD(p, h)
	}
	page := func(c *gin.Context) {
		h := c.Writer.Header()
		h.Set("Content-Security-Policy", consoleCSP)
		// The page names the current assets: it is asked for again each time.
		h.Set("Cache-Control", "no-cache")
		c.Data(http.StatusOK, "text/html; charset=utf-8", index)
	}
	get("/", page)
	get("/e/*path", page)
	get("/admin/*path", page) // the administration's screens (/admin/users, /admin/backups)
	get("/messages", page)
	get("/account", page) // the signed-in user's own screen

	files := http.FileServer(http.FS(web.Console))
	get("/assets/*filepath", func(c *gin.Context) {
		name := path.Clean("assets/" + strings.TrimPrefix(c.Param("filepath"), "/"))
		if st, err := fs.Stat(web.Console, name); err != nil || st.IsDir() || !strings.HasPrefix(name, "assets/") {
			abort(c, http.StatusNotFound, "no console asset "+c.Request.URL.Path)
			return
		}
		h := c.Writer.Header()
		h.Set("Content-Security-Policy", consoleCSP)
		// Every name holds a hash of its content: a new build has new names.
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
		files.ServeHTTP(c.Writer, c.Request)
	})
}
