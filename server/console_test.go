package server_test

import (
	"io/fs"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/copydesk/copydesk/web"
)

const wantCSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

// The console is served at / and at every address of its screens, with
// its assets, under a strict Content-Security-Policy; the API's own 404
// stays JSON.
func TestConsole(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	index, err := fs.ReadFile(web.Console, "index.html")
	if err != nil {
		t.Fatal(err)
	}
	// The page's script and stylesheet, as the build named them.
	var assets []string
	for _, m := range regexp.MustCompile(`(?:src|href)="(/assets/[^"]+)"`).FindAllStringSubmatch(string(index), -1) {
		assets = append(assets, m[1])
	}
	if len(assets) < 3 { // icon, stylesheet, script
		t.Fatalf("index.html names %d assets: %s", len(assets), index)
	}

	t.Run("Pages", func(t *testing.T) {
		for _, p := range []string{"/", "/e/3", "/e/3/keywords", "/e/12/posts/", "/e/not-a-number", "/admin/backups", "/messages", "/account"} {
			for _, method := range []string{"GET", "HEAD"} {
				r := e.send(t, httptestRequest(method, p))
				if r.Code != http.StatusOK {
					t.Fatalf("%s %s: %d %s", method, p, r.Code, r.Body)
				}
				if got := r.Header.Get("Content-Security-Policy"); got != wantCSP {
					t.Errorf("%s %s: CSP %q", method, p, got)
				}
				if got := r.Header.Get("Cache-Control"); got != "no-cache" {
					t.Errorf("%s %s: Cache-Control %q", method, p, got)
				}
				if got := r.Header.Get("Content-Type"); got != "text/html; charset=utf-8" {
					t.Errorf("%s %s: Content-Type %q", method, p, got)
				}
				if method == "GET" && r.Body != string(index) {
					t.Errorf("GET %s: not the console's index.html", p)
				}
				if method == "HEAD" && r.Body != "" {
					t.Errorf("HEAD %s sent a body", p)
				}
			}
		}
	})

	t.Run("NoInlineScript", func(t *testing.T) {
		// The CSP allows no inline script: every script is a file of ours.
		for _, m := range regexp.MustCompile(`(?is)<script\b([^>]*)>(.*?)</script>`).FindAllStringSubmatch(string(index), -1) {
			if strings.TrimSpace(m[2]) != "" || !strings.Contains(m[1], `src="/assets/`) {
				t.Errorf("inline or outside script: %s", m[0])
			}
		}
		if strings.Contains(string(index), "http://") || strings.Contains(string(index), "https://") {
			t.Error("index.html names another origin")
		}
	})

	t.Run("Assets", func(t *testing.T) {
		types := map[string]string{".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8", ".svg": "image/svg+xml"}
		for _, a := range assets {
			for _, method := range []string{"GET", "HEAD"} {
				r := e.send(t, httptestRequest(method, a))
				if r.Code != http.StatusOK {
					t.Fatalf("%s %s: %d", method, a, r.Code)
				}
				if got := r.Header.Get("Cache-Control"); got != "public, max-age=31536000, immutable" {
					t.Errorf("%s: Cache-Control %q", a, got)
				}
				if got := r.Header.Get("Content-Security-Policy"); got != wantCSP {
					t.Errorf("%s: CSP %q", a, got)
				}
				ext := a[strings.LastIndex(a, "."):]
				if got := r.Header.Get("Content-Type"); got != types[ext] {
					t.Errorf("%s: Content-Type %q, want %q", a, got, types[ext])
				}
				want, _ := fs.ReadFile(web.Console, strings.TrimPrefix(a, "/"))
				if method == "GET" && (len(want) == 0 || r.Body != string(want)) {
					t.Errorf("GET %s: not the embedded file", a)
				}
				if method == "HEAD" && r.Body != "" {
					t.Errorf("HEAD %s sent a body", a)
				}
			}
		}
	})

	t.Run("NotFound", func(t *testing.T) {
		// Missing assets, the folder itself, escapes, and unknown API paths
		// are the API's JSON 404, never index.html.
		for _, p := range []string{"/assets/app-00000000.js", "/assets/", "/assets", "/assets/../index.html", "/api/unknown", "/api/e/3", "/nothing"} {
			r := e.send(t, httptestRequest("GET", p))
			if r.Code != http.StatusNotFound {
				t.Fatalf("GET %s: %d %s", p, r.Code, r.Body)
			}
			if d := r.Detail(); d == "" || len(r.JSON()) != 1 {
				t.Errorf("GET %s: body is not {detail}: %s", p, r.Body)
			}
		}
	})

	t.Run("DocsStay", func(t *testing.T) {
		for _, p := range []string{"/docs", "/redoc", "/openapi.json"} {
			if r := e.send(t, httptestRequest("GET", p)); r.Code != http.StatusOK {
				t.Errorf("GET %s: %d", p, r.Code)
			}
		}
	})

	t.Run("MethodNotAllowed", func(t *testing.T) {
		r := e.send(t, httptestRequest("POST", "/e/3"))
		if r.Code != http.StatusMethodNotAllowed || r.Detail() == "" {
			t.Fatalf("POST /e/3: %d %s", r.Code, r.Body)
		}
	})
}
