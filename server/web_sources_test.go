package server_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/copydesk/copydesk/server"
)

// feedSite serves the feed fixtures of server/feed and records each
// request's conditional headers: /rss (with an ETag, answering 304 to
// it), /atom (with Last-Modified, likewise), /broken, /page, and
// /to-metadata, which redirects to the cloud metadata address.
type feedSite struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string // path, If-None-Match, If-Modified-Since
}

func newFeedSite(t *testing.T) *feedSite {
	fixture := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("feed", "testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	s := &feedSite{}
	const modified = "Wed, 18 Nov 2026 12:00:00 GMT"
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.seen = append(s.seen, strings.Join([]string{r.URL.Path, r.Header.Get("If-None-Match"), r.Header.Get("If-Modified-Since")}, "|"))
		s.mu.Unlock()
		switch r.URL.Path {
		case "/rss":
			if r.Header.Get("If-None-Match") == `"rss-1"` {
				w.WriteHeader(http.StatusNotModified)
				return
			}
			w.Header().Set("ETag", `"rss-1"`)
			w.Header().Set("Content-Type", "application/rss+xml")
			w.Write(fixture("rss2.xml"))
		case "/atom":
			if r.Header.Get("If-Modified-Since") == modified {
				w.WriteHeader(http.StatusNotModified)
				return
			}
			w.Header().Set("Last-Modified", modified)
			w.Header().Set("Content-Type", "application/atom+xml")
			w.Write(fixture("atom.xml"))
		case "/broken":
			w.Header().Set("Content-Type", "application/rss+xml")
			w.Write(fixture("broken.xml"))
		case "/page":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Write(fixture("page.html"))
		case "/to-metadata":
			http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/iam/security-credentials/", http.StatusFound)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *feedSite) Seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.seen)
}

func sourceCreate(t *testing.T, e *env, tok string, body map[string]any) map[string]any {
	t.Helper()
	r := e.do(t, "POST", "/api/web-sources", tok, body)
	if r.Code != 201 {
		t.Fatalf("create source %v: %d %s", body, r.Code, r.Body)
	}
	return r.Data()
}

// sourceFetch fetches a source through the API and expects a 200.
func sourceFetch(t *testing.T, e *env, tok string, id int64) map[string]any {
	t.Helper()
	r := e.do(t, "POST", fmt.Sprintf("/api/web-sources/%d/fetch", id), tok, nil)
	if r.Code != 200 {
		t.Fatalf("fetch source %d: %d %s", id, r.Code, r.Body)
	}
	return r.Data()
}

// sourceItems lists a source's item titles in the order asked.
func sourceItems(t *testing.T, e *env, tok string, id int64, query string) []string {
	t.Helper()
	r := e.do(t, "GET", fmt.Sprintf("/api/web-sources/%d/items?per_page=200&%s", id, query), tok, nil)
	if r.Code != 200 {
		t.Fatalf("items: %d %s", r.Code, r.Body)
	}
	var out []string
	for _, it := range agItems(r.Data()) {
		out = append(out, it["title"].(string))
	}
	return out
}

func TestWebSourcesCRUD(t *testing.T) {
	t.Parallel()
	f := agSetup(t)
	e := f.e
	created := sourceCreate(t, e, f.edATok, map[string]any{"environment_id": f.envA, "url": "https://roast.example/feed.xml#top", "kind": "rss"})
	if created["url"] != "https://roast.example/feed.xml" || created["fetch_interval"] != float64(3600) || created["is_active"] != true ||
		created["next_fetch_at"] == nil || created["last_fetched_at"] != nil || created["last_status"] != nil {
		t.Fatalf("created: %v", created)
	}
	id := agID(created)
	postCases(t, e, "/api/web-sources", []postCase{
		{"SameAddress", f.edATok, map[string]any{"environment_id": f.envA, "url": "https://roast.example/feed.xml", "kind": "atom"}, 409,
			"url: this environment follows this address already"},
		{"SameAddressElsewhere", f.edATok, map[string]any{"environment_id": f.envC, "url": "https://roast.example/feed.xml", "kind": "rss"}, 201, ""},
		{"Page", f.edATok, map[string]any{"environment_id": f.envA, "url": "https://roast.example/how-we-roast", "kind": "page",
			"fetch_interval": 86400, "is_active": false}, 201, ""},
		{"Metadata", f.edATok, map[string]any{"environment_id": f.envA, "url": "http://169.254.169.254/latest/", "kind": "page"}, 422,
			"url: address 169.254.169.254 is not allowed: link-local and cloud metadata addresses are never called"},
		{"NotHTTP", f.edATok, map[string]any{"environment_id": f.envA, "url": "file:///etc/passwd", "kind": "page"}, 422,
			"url: must be an http or https address with a host and without credentials"},
		{"Kind", f.edATok, map[string]any{"environment_id": f.envA, "url": "https://a.example/", "kind": "json"}, 422,
			"kind: must be one of: rss, atom, page"},
		{"IntervalTooShort", f.edATok, map[string]any{"environment_id": f.envA, "url": "https://a.example/", "kind": "rss", "fetch_interval": 60}, 422,
			"fetch_interval: must be at least 300"},
		{"EnvironmentNotGranted", f.edATok, map[string]any{"environment_id": f.envB, "url": "https://a.example/", "kind": "rss"}, 404,
			"environment not found"},
		{"Viewer", f.viewATok, map[string]any{"environment_id": f.envA, "url": "https://a.example/", "kind": "rss"}, 403, ""},
	})
	list := func(tok, query string) []string {
		t.Helper()
		r := e.do(t, "GET", "/api/web-sources?"+query, tok, nil)
		if r.Code != 200 {
			t.Fatalf("list %s: %d %s", query, r.Code, r.Body)
		}
		var out []string
		for _, it := range agItems(r.Data()) {
			out = append(out, strings.TrimPrefix(it["url"].(string), "https://roast.example/"))
		}
		return out
	}
	for _, l := range []struct {
		tok, query string
		want       []string
	}{
		{f.viewATok, "", []string{"how-we-roast", "feed.xml"}},
		{f.edATok, "sort=url", []string{"feed.xml", "feed.xml", "how-we-roast"}},
		{f.edATok, fmt.Sprintf("environment_id=%d&sort=-url", f.envA), []string{"how-we-roast", "feed.xml"}},
		{f.edATok, "is_active=false", []string{"how-we-roast"}},
		{f.edATok, "q=roast&sort=created_at&environment_id=" + fmt.Sprint(f.envC), []string{"feed.xml"}},
		{f.edBTok, "", nil},
	} {
		if got := list(l.tok, l.query); !slices.Equal(got, l.want) {
			t.Errorf("list %q: %q, want %q", l.query, got, l.want)
		}
	}
	if r := e.do(t, "GET", "/api/web-sources?sort=kind", f.viewATok, nil); r.Code != 422 ||
		r.Detail() != "sort: must be one of: url, -url, created_at, -created_at, last_fetched_at, -last_fetched_at" {
		t.Errorf("unknown sort: %d %s", r.Code, r.Body)
	}

	path := fmt.Sprintf("/api/web-sources/%d", id)
	r := e.do(t, "PUT", path, f.edATok, map[string]any{"is_active": false, "fetch_interval": 900})
	if r.Code != 200 || r.Data()["is_active"] != false || r.Data()["next_fetch_at"] != nil || r.Data()["fetch_interval"] != float64(900) {
		t.Errorf("deactivate: %d %s", r.Code, r.Body)
	}
	if r := e.do(t, "PUT", path, f.edATok, map[string]any{"url": "https://roast.example/how-we-roast"}); r.Code != 409 {
		t.Errorf("onto another source's address: %d %s", r.Code, r.Body)
	}
	if r := e.do(t, "PUT", path, f.edBTok, map[string]any{"is_active": true}); r.Code != 404 {
		t.Errorf("another environment's source: %d %s", r.Code, r.Body)
	}
	if r := e.do(t, "POST", path+"/fetch", f.edBTok, nil); r.Code != 404 {
		t.Errorf("fetch another environment's source: %d %s", r.Code, r.Body)
	}
	if r := e.do(t, "DELETE", path, f.edATok, nil); r.Code != 200 {
		t.Errorf("delete: %d %s", r.Code, r.Body)
	}
	if r := e.do(t, "GET", path+"/items", f.edATok, nil); r.Code != 404 {
		t.Errorf("items after delete: %d %s", r.Code, r.Body)
	}
	mine := sourceCreate(t, e, f.edATok, map[string]any{"environment_id": f.envA, "url": "https://b.example/feed", "kind": "atom"})
	theirs := sourceCreate(t, e, f.edBTok, map[string]any{"environment_id": f.envB, "url": "https://b.example/feed", "kind": "atom"})
	r = e.do(t, "POST", "/api/web-sources/bulk-delete", f.edATok, map[string]any{"ids": []int64{agID(mine), agID(theirs), id}})
	if r.Code != 200 || agNum(r.Data()["changed"]) != 1 {
		t.Errorf("bulk delete: %d %s", r.Code, r.Body)
	}
	if r := e.do(t, "GET", fmt.Sprintf("/api/web-sources/%d", agID(theirs)), f.edBTok, nil); r.Code != 200 {
		t.Errorf("another environment's source was deleted: %d %s", r.Code, r.Body)
	}
}

// A fetch reads RSS 2.0, Atom and pages, stores each item once, sends the
// validators back and honours a 304; broken XML is a failed fetch that
// says why, never a 500.
func TestWebSourceFetch(t *testing.T) {
	t.Parallel()
	f := agSetup(t)
	e := f.e
	site := newFeedSite(t)
	cases := []struct {
		name, path, kind string
		items            []string // titles, the latest published first
		status           float64
		validator        string // the header the second fetch sends
		wantErr          string
	}{
		{name: "RSS2", path: "/rss", kind: "rss", status: 200, validator: `"rss-1"`,
			items: []string{"Cold brew ratios that work", "Grinder burrs, explained", "Only content here"}},
		{name: "Atom", path: "/atom", kind: "atom", status: 200, validator: "Wed, 18 Nov 2026 12:00:00 GMT",
			items: []string{"Pruning roses in winter", "Compost without smell"}},
		{name: "Page", path: "/page", kind: "page", status: 200, items: []string{"How we roast"}},
		{name: "BrokenXML", path: "/broken", kind: "rss", status: 200, wantErr: "HTTP 200: the feed cannot be read: "},
		{name: "Missing", path: "/missing", kind: "atom", status: 404, wantErr: "HTTP 404: Not Found"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := sourceCreate(t, e, f.edATok, map[string]any{"environment_id": f.envA, "url": site.URL + c.path, "kind": c.kind})
			id := agID(src)
			got := sourceFetch(t, e, f.edATok, id)
			s := got["source"].(map[string]any)
			if c.wantErr != "" {
				if !strings.HasPrefix(got["error"].(string), c.wantErr) || s["last_error"] != got["error"] || s["last_status"] != c.status ||
					agNum(got["new_items"]) != 0 || s["last_fetched_at"] == nil {
					t.Fatalf("failed fetch: %v", got)
				}
				return
			}
			if got["error"] != "" || s["last_error"] != "" || s["last_status"] != c.status || agNum(got["new_items"]) != float64(len(c.items)) {
				t.Fatalf("fetch: %v", got)
			}
			if titles := sourceItems(t, e, f.viewATok, id, ""); !slices.Equal(titles, c.items) {
				t.Errorf("items %q, want %q", titles, c.items)
			}
			again := sourceFetch(t, e, f.edATok, id)
			if c.validator != "" {
				// The validator goes back and the 304 stores nothing.
				seen := site.Seen()
				last := seen[len(seen)-1]
				if !strings.Contains(last, "|"+c.validator) || again["not_modified"] != true || agNum(again["new_items"]) != 0 ||
					again["source"].(map[string]any)["last_status"] != float64(304) {
					t.Errorf("second fetch: %v (request %q)", again, last)
				}
			} else if agNum(again["new_items"]) != 0 || again["not_modified"] != false {
				// No validators: the same content is all known items.
				t.Errorf("second fetch: %v", again)
			}
			if n := len(sourceItems(t, e, f.viewATok, id, "sort=created_at")); n != len(c.items) {
				t.Errorf("%d items after the second fetch, want %d", n, len(c.items))
			}
		})
	}
}

// Every fetch goes through the outbound guard: a redirect to the metadata
// address is not followed, and with private addresses refused a source on
// this machine is not reached. Both are failed fetches, recorded.
func TestWebSourceFetchRefused(t *testing.T) {
	t.Parallel()
	site := newFeedSite(t)
	for _, c := range []struct {
		name, path, want string
		opts             []envOption
	}{
		{"RedirectToMetadata", "/to-metadata", "address 169.254.169.254 is not allowed: link-local and cloud metadata addresses are never called", nil},
		{"PrivateRefused", "/rss", "address 127.0.0.1 is not allowed: private and loopback addresses are refused (--outbound-private=false)",
			[]envOption{func(c *server.Config) { c.RefuseOutboundPrivate = true }}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := agSetup(t, c.opts...)
			before := len(site.Seen())
			src := sourceCreate(t, f.e, f.edATok, map[string]any{"environment_id": f.envA, "url": site.URL + c.path, "kind": "rss"})
			got := sourceFetch(t, f.e, f.edATok, agID(src))
			s := got["source"].(map[string]any)
			if got["error"] != c.want || s["last_error"] != c.want || s["last_status"] != nil || agNum(got["new_items"]) != 0 {
				t.Errorf("fetch: %v", got)
			}
			if c.name == "PrivateRefused" && len(site.Seen()) != before {
				t.Errorf("the site was reached: %q", site.Seen()[before:])
			}
		})
	}
}

// Active sources are fetched by the recurring job: at once when created,
// then every fetch_interval.
func TestWebSourcesScheduled(t *testing.T) {
	t.Parallel()
	f := agSetup(t)
	e := f.e
	site := newFeedSite(t)
	startJobs(t, e)
	src := sourceCreate(t, e, f.edATok, map[string]any{"environment_id": f.envA, "url": site.URL + "/atom", "kind": "atom"})
	idle := sourceCreate(t, e, f.edATok, map[string]any{"environment_id": f.envA, "url": site.URL + "/rss", "kind": "rss", "is_active": false})
	path := fmt.Sprintf("/api/web-sources/%d", agID(src))
	var got map[string]any
	agWaitFor(t, "the scheduled fetch", func() bool {
		got = e.do(t, "GET", path, f.viewATok, nil).Data()
		return got["last_fetched_at"] != nil
	})
	if got["last_error"] != "" || got["last_status"] != float64(200) {
		t.Errorf("scheduled fetch: %v", got)
	}
	if titles := sourceItems(t, e, f.viewATok, agID(src), ""); len(titles) != 2 {
		t.Errorf("items: %q", titles)
	}
	if r := e.do(t, "GET", fmt.Sprintf("/api/web-sources/%d", agID(idle)), f.viewATok, nil); r.Data()["last_fetched_at"] != nil {
		t.Errorf("an inactive source was fetched: %s", r.Body)
	}
	for _, s := range site.Seen() {
		if strings.HasPrefix(s, "/rss") {
			t.Errorf("the inactive source's address was asked: %q", s)
		}
	}
}
