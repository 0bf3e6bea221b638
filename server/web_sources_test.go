package server_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/copydesk/copydesk/server"
	"github.com/copydesk/copydesk/server/websource"
	"github.com/copydesk/copydesk/store"
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
		// serve's default: other outbound calls may reach this machine,
		// web sources may not.
		{"WebSourcesPrivateOff", "/rss", "address 127.0.0.1 is not allowed: private and loopback addresses are refused (for web sources; --web-sources-private allows them)",
			[]envOption{func(c *server.Config) { c.AllowWebSourcesPrivate = false }}},
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
			if c.name != "RedirectToMetadata" && len(site.Seen()) != before {
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

// flakySite is a feed that answers as told: with a status (and a
// Retry-After), or with the RSS fixture and its ETag, answering 304 to
// that ETag.
type flakySite struct {
	*httptest.Server
	mu         sync.Mutex
	status     int
	retryAfter string
	hits       int
}

func newFlakySite(t *testing.T) *flakySite {
	rss, err := os.ReadFile(filepath.Join("feed", "testdata", "rss2.xml"))
	if err != nil {
		t.Fatal(err)
	}
	s := &flakySite{status: http.StatusOK}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		status, retryAfter := s.status, s.retryAfter
		s.hits++
		s.mu.Unlock()
		switch {
		case status != http.StatusOK:
			if retryAfter != "" {
				w.Header().Set("Retry-After", retryAfter)
			}
			http.Error(w, http.StatusText(status), status)
		case r.Header.Get("If-None-Match") == `"v1"`:
			w.WriteHeader(http.StatusNotModified)
		default:
			w.Header().Set("ETag", `"v1"`)
			w.Header().Set("Content-Type", "application/rss+xml")
			w.Write(rss)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// answer makes the site answer status from now on, with a Retry-After
// when retryAfter is not empty.
func (s *flakySite) answer(status int, retryAfter string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status, s.retryAfter = status, retryAfter
}

func (s *flakySite) Hits() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits
}

// backoffSetup is agSetup with the store's clock injected, and a flaky
// site. The back-off is read against that clock, which stays put unless
// the test moves it, from now, as agSetup's tokens were made.
func backoffSetup(t *testing.T) (*agFixture, *flakySite) {
	t.Helper()
	f := agSetup(t)
	f.e.clock.Set(time.Now().UTC().Truncate(time.Second))
	f.e.app.DB.Now = f.e.clock.Now
	return f, newFlakySite(t)
}

// sourceNotes lists the kinds of the user's notifications about a source,
// oldest first.
func sourceNotes(t *testing.T, e *env, tok string, id int64) []string {
	t.Helper()
	var kinds []string
	for _, n := range notesLinked(t, e, tok, fmt.Sprintf("/api/web-sources/%d", id)) {
		kinds = append(kinds, n["kind"].(string))
	}
	slices.Reverse(kinds)
	return kinds
}

// A source that keeps failing backs off: fetch_interval × 2^n after n
// failures in a row, at least a Retry-After, at most a day; a success,
// a 304 too, resets it. Fetching now counts like a scheduled fetch. At the
// fifth failure in a row the environment's editors (not its viewers, nor
// other environments) are told once, and once more when it answers
// again; the list filters the failing sources.
func TestWebSourceBackoff(t *testing.T) {
	t.Parallel()
	f, site := backoffSetup(t)
	e := f.e
	src := sourceCreate(t, e, f.edATok, map[string]any{"environment_id": f.envA, "url": site.URL + "/feed", "kind": "rss"})
	id := agID(src)
	if src["consecutive_failures"] != float64(0) {
		t.Fatalf("a new source: %v", src)
	}
	healthy := agID(sourceCreate(t, e, f.edATok, map[string]any{"environment_id": f.envA, "url": site.URL + "/other", "kind": "rss"}))
	sourceFetch(t, e, f.edATok, healthy)

	// at is the store's clock plus d, as the API writes times.
	at := func(d time.Duration) string { return e.clock.Now().Add(d).UTC().Format(store.TimeFormat) }
	steps := []struct {
		name       string
		status     int
		retryAfter func() string
		failures   float64
		next       time.Duration // after now
		notes      []string      // the editor's about the source, so far
	}{
		{name: "RetryAfterLonger", status: 503, retryAfter: func() string { return "18000" }, failures: 1, next: 5 * time.Hour},
		{name: "Doubles", status: 500, failures: 2, next: 4 * time.Hour},
		{name: "RetryAfterDateBeyondCap", status: 429, failures: 3, next: 24 * time.Hour,
			retryAfter: func() string { return e.clock.Now().Add(30 * time.Hour).Format(http.TimeFormat) }},
		{name: "RetryAfterShorter", status: 503, retryAfter: func() string { return "60" }, failures: 4, next: 16 * time.Hour},
		{name: "FifthNotifies", status: 404, failures: 5, next: 24 * time.Hour, notes: []string{"websource.failing"}},
		{name: "Capped", status: 500, failures: 6, next: 24 * time.Hour, notes: []string{"websource.failing"}},
		{name: "StillOnce", status: 502, failures: 7, next: 24 * time.Hour, notes: []string{"websource.failing"}},
		{name: "Recovers", status: 200, failures: 0, next: time.Hour, notes: []string{"websource.failing", "websource.recovered"}},
		{name: "FailsOnce", status: 500, failures: 1, next: 2 * time.Hour, notes: []string{"websource.failing", "websource.recovered"}},
		{name: "NotModifiedResets", status: 200, failures: 0, next: time.Hour, notes: []string{"websource.failing", "websource.recovered"}},
	}
	for _, s := range steps {
		retryAfter := ""
		if s.retryAfter != nil {
			retryAfter = s.retryAfter()
		}
		site.answer(s.status, retryAfter)
		got := sourceFetch(t, e, f.edATok, id)
		src := got["source"].(map[string]any)
		if src["consecutive_failures"] != s.failures || src["next_fetch_at"] != at(s.next) || (s.status == 200) != (got["error"] == "") {
			t.Errorf("%s: consecutive_failures %v, next_fetch_at %v, error %q; want %v, %s", s.name, src["consecutive_failures"],
				src["next_fetch_at"], got["error"], s.failures, at(s.next))
		}
		if notes := sourceNotes(t, e, f.edATok, id); !slices.Equal(notes, s.notes) {
			t.Errorf("%s: the editor's notifications %q, want %q", s.name, notes, s.notes)
		}
		if s.name == "NotModifiedResets" && got["not_modified"] != true {
			t.Errorf("%s: not a 304: %v", s.name, got)
		}
	}
	// The same source is read the same way by GET.
	if r := e.do(t, "GET", fmt.Sprintf("/api/web-sources/%d", id), f.viewATok, nil); r.Data()["consecutive_failures"] != float64(0) {
		t.Errorf("GET: %s", r.Body)
	}
	// The admin is told too; the viewer and the other environment's
	// editor are not.
	for _, c := range []struct {
		name, tok string
		want      []string
	}{
		{"Admin", f.adminTok, []string{"websource.failing", "websource.recovered"}},
		{"Viewer", f.viewATok, nil},
		{"OtherEnvironment", f.edBTok, nil},
	} {
		if got := sourceNotes(t, e, c.tok, id); !slices.Equal(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}

	// Failing again after recovering is told again, once.
	site.answer(500, "")
	for range 6 {
		sourceFetch(t, e, f.edATok, id)
	}
	want := []string{"websource.failing", "websource.recovered", "websource.failing"}
	if got := sourceNotes(t, e, f.edATok, id); !slices.Equal(got, want) {
		t.Errorf("failing again: %q, want %q", got, want)
	}

	// The list's failing filter.
	list := func(query string) []int64 {
		t.Helper()
		r := e.do(t, "GET", "/api/web-sources?"+query, f.viewATok, nil)
		if r.Code != 200 {
			t.Fatalf("list %s: %d %s", query, r.Code, r.Body)
		}
		var ids []int64
		for _, it := range agItems(r.Data()) {
			ids = append(ids, agID(it))
		}
		return ids
	}
	for _, c := range []struct {
		query string
		want  []int64
	}{
		{"failing=true", []int64{id}},
		{"failing=false", []int64{healthy}},
		{fmt.Sprintf("failing=true&environment_id=%d&sort=url", f.envA), []int64{id}},
		{"failing=true&is_active=false", nil},
		{"", []int64{healthy, id}},
	} {
		if got := list(c.query); !slices.Equal(got, c.want) {
			t.Errorf("list %q: %v, want %v", c.query, got, c.want)
		}
	}
	if r := e.do(t, "GET", "/api/web-sources?failing=sometimes", f.viewATok, nil); r.Code != 422 {
		t.Errorf("failing=sometimes: %d %s", r.Code, r.Body)
	}
}

// The recurring job backs off as a fetch now does: a failing source is
// planned interval × 2^n later, and fetched by the job once that time
// comes (the store's clock, moved by the test).
func TestWebSourceBackoffScheduled(t *testing.T) {
	t.Parallel()
	f, site := backoffSetup(t)
	e := f.e
	site.answer(500, "")
	startJobs(t, e)
	id := agID(sourceCreate(t, e, f.edATok, map[string]any{"environment_id": f.envA, "url": site.URL + "/feed", "kind": "rss"}))
	// Read from the store: the clock moves past the tokens' hour.
	for n, wait := range []time.Duration{2 * time.Hour, 4 * time.Hour, 8 * time.Hour} {
		var got *store.WebSource
		agWaitFor(t, fmt.Sprintf("scheduled failure %d", n+1), func() bool {
			var err error
			if got, err = e.app.DB.WebSourceByID(context.Background(), id); err != nil {
				t.Fatal(err)
			}
			return got.ConsecutiveFailures == n+1
		})
		if want := e.clock.Now().Add(wait); got.NextFetchAt == nil || !got.NextFetchAt.Equal(want) {
			t.Fatalf("after failure %d: next_fetch_at %v, want %s", n+1, got.NextFetchAt, want)
		}
		e.clock.Advance(wait)
		if err := e.app.Jobs.Replan(context.Background(), websource.FetchJob); err != nil {
			t.Fatal(err)
		}
	}
	if hits := site.Hits(); hits < 3 {
		t.Errorf("the site was asked %d times", hits)
	}
}
