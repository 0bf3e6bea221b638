package feed_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/copydesk/copydesk/server/feed"
	"github.com/copydesk/copydesk/server/outbound"
)

func fixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// site serves fixed answers by path and records the conditional headers
// of each request.
type site struct {
	*httptest.Server
	mu   sync.Mutex
	seen []http.Header
}

func newSite(t *testing.T, h func(w http.ResponseWriter, r *http.Request)) *site {
	s := &site{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.seen = append(s.seen, r.Header.Clone())
		s.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func ts(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

func TestFetchFeeds(t *testing.T) {
	t.Parallel()
	s := newSite(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/rss":
			w.Header().Set("Content-Type", "application/rss+xml; charset=utf-8")
			w.Header().Set("ETag", `"v1"`)
			w.Header().Set("Last-Modified", "Mon, 16 Nov 2026 09:30:00 GMT")
			w.Write([]byte(fixture(t, "rss2.xml")))
		case "/atom":
			w.Header().Set("Content-Type", "application/atom+xml")
			w.Write([]byte(fixture(t, "atom.xml")))
		}
	})
	f := feed.New(nil, feed.Options{})
	type want struct {
		guid, link, title, summary string
		published                  *time.Time
	}
	at := func(s string) *time.Time { t := ts(s); return &t }
	cases := []struct {
		name, path, kind string
		etag             string
		items            []want
	}{
		{"RSS2", "/rss", feed.RSS, `"v1"`, []want{
			{"roast-1042", "https://roast.example/cold-brew-ratios", "Cold brew ratios that work", "Start at 1:8 & adjust.", at("2026-11-16T09:30:00Z")},
			// A relative link is resolved against the feed's address.
			{"", "{site}/grinder-burrs", "Grinder burrs, explained", "Flat or conical?", at("2026-11-13T17:05:00Z")},
			{"https://roast.example/?p=7", "", "Only content here", "From the content.", nil},
		}},
		{"Atom", "/atom", feed.Atom, "", []want{
			{"urn:uuid:1225c695-cfb8-4ebb-aaaa-80da344efa6a", "https://notes.example/pruning-roses", "Pruning roses in winter",
				"Cut above an outward bud.", at("2026-11-18T09:00:00Z")},
			// Without published, updated stands in.
			{"tag:notes.example,2026:compost", "https://notes.example/compost", "Compost without smell", "Balance greens and browns.",
				at("2026-11-10T08:00:00Z")},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := f.Fetch(context.Background(), feed.Request{URL: s.URL + c.path, Kind: c.kind})
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != 200 || res.NotModified || res.ETag != c.etag {
				t.Fatalf("result: %+v", res)
			}
			if len(res.Items) != len(c.items) {
				t.Fatalf("%d items, want %d: %+v", len(res.Items), len(c.items), res.Items)
			}
			for i, w := range c.items {
				got := res.Items[i]
				w.link = strings.ReplaceAll(w.link, "{site}", s.URL)
				if got.GUID != w.guid || got.Link != w.link || got.Title != w.title || got.Summary != w.summary {
					t.Errorf("item %d: %+v, want %+v", i, got, w)
				}
				if (got.Published == nil) != (w.published == nil) || (got.Published != nil && !got.Published.Equal(*w.published)) {
					t.Errorf("item %d published %v, want %v", i, got.Published, w.published)
				}
			}
		})
	}
}

// The validators of the last answer are sent back, and a 304 is a result
// without items, not an error.
func TestFetchNotModified(t *testing.T) {
	t.Parallel()
	s := newSite(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("If-None-Match") == `"v1"` {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("ETag", `"v1"`)
		w.Write([]byte(fixture(t, "rss2.xml")))
	})
	f := feed.New(nil, feed.Options{})
	res, err := f.Fetch(context.Background(), feed.Request{URL: s.URL, Kind: feed.RSS, ETag: `"v1"`, LastModified: "Mon, 16 Nov 2026 09:30:00 GMT"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.NotModified || res.Status != 304 || len(res.Items) != 0 {
		t.Fatalf("result: %+v", res)
	}
	h := s.seen[0]
	if h.Get("If-None-Match") != `"v1"` || h.Get("If-Modified-Since") != "Mon, 16 Nov 2026 09:30:00 GMT" || h.Get("User-Agent") != feed.UserAgent {
		t.Errorf("request headers: %v", h)
	}
	// Without validators, no conditional headers.
	if _, err := f.Fetch(context.Background(), feed.Request{URL: s.URL, Kind: feed.RSS}); err != nil {
		t.Fatal(err)
	}
	if h := s.seen[1]; h.Get("If-None-Match") != "" || h.Get("If-Modified-Since") != "" {
		t.Errorf("unconditional request sent validators: %v", h)
	}
}

func TestFetchPage(t *testing.T) {
	t.Parallel()
	s := newSite(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/how-we-roast":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Write([]byte(fixture(t, "page.html")))
		case "/moved":
			http.Redirect(w, r, "/how-we-roast", http.StatusMovedPermanently)
		case "/pdf":
			w.Header().Set("Content-Type", "application/pdf")
			w.Write([]byte("%PDF-1.7"))
		}
	})
	f := feed.New(nil, feed.Options{})
	res, err := f.Fetch(context.Background(), feed.Request{URL: s.URL + "/moved", Kind: feed.Page})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Items) != 1 {
		t.Fatalf("items: %+v", res.Items)
	}
	it := res.Items[0]
	if it.Title != "How we roast" || it.Link != s.URL+"/how-we-roast" || !strings.HasPrefix(it.GUID, "sha256:") {
		t.Errorf("item: %+v", it)
	}
	if !strings.Contains(it.Content, "first crack tells us") && !strings.Contains(it.Content, "First crack tells us") {
		t.Errorf("content lacks the article: %q", it.Content)
	}
	if strings.Contains(it.Content, "Privacy") || strings.Contains(it.Content, "Shop") {
		t.Errorf("content holds the page's chrome: %q", it.Content)
	}
	if it.Published == nil || !it.Published.Equal(ts("2026-11-02T08:00:00Z")) {
		t.Errorf("published: %v", it.Published)
	}
	again, err := f.Fetch(context.Background(), feed.Request{URL: s.URL + "/how-we-roast", Kind: feed.Page})
	if err != nil || again.Items[0].Key() != it.Key() {
		t.Errorf("the same page has another key: %v %+v", err, again)
	}
	if _, err := f.Fetch(context.Background(), feed.Request{URL: s.URL + "/pdf", Kind: feed.Page}); err == nil ||
		err.Error() != "HTTP 200: the answer is application/pdf, not an HTML page" {
		t.Errorf("a PDF as a page: %v", err)
	}
}

// Every failure is an error that says what went wrong, never a panic or
// half a result.
func TestFetchFailures(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 2048)
	s := newSite(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/broken":
			w.Write([]byte(fixture(t, "broken.xml")))
		case "/html":
			w.Header().Set("Content-Type", "text/html")
			w.Write([]byte(fixture(t, "page.html")))
		case "/gone":
			http.Error(w, "gone", http.StatusGone)
		case "/big":
			w.Header().Set("Content-Length", "2053")
			w.Write([]byte("<rss>" + big))
		case "/big-chunked":
			w.(http.Flusher).Flush() // no Content-Length
			w.Write([]byte("<rss>" + big))
		case "/slow":
			<-r.Context().Done()
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		case "/to-metadata":
			http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
		}
	})
	f := feed.New(outbound.NewClient(outbound.Options{MaxRedirects: 3}), feed.Options{MaxBytes: 1500, Timeout: 200 * time.Millisecond})
	cases := []struct {
		path, kind, want string
		status           int
	}{
		{"/broken", feed.RSS, "HTTP 200: the feed cannot be read: ", 200},
		{"/html", feed.RSS, "HTTP 200: the answer is not an RSS or Atom feed", 200},
		{"/gone", feed.Atom, "HTTP 410: Gone", 410},
		{"/big", feed.RSS, "HTTP 200: the answer is 2053 bytes, more than the 1500 a source may send", 200},
		{"/big-chunked", feed.RSS, "HTTP 200: the answer is larger than the 1500 bytes a source may send", 200},
		{"/slow", feed.RSS, "no complete answer within 200ms", 0},
		{"/loop", feed.RSS, "the request failed: too many redirects (more than 3)", 0},
		{"/to-metadata", feed.RSS, "address 169.254.169.254 is not allowed", 0},
	}
	for _, c := range cases {
		t.Run(strings.TrimPrefix(c.path, "/"), func(t *testing.T) {
			res, err := f.Fetch(context.Background(), feed.Request{URL: s.URL + c.path, Kind: c.kind})
			if err == nil || !strings.HasPrefix(err.Error(), c.want) {
				t.Fatalf("got %+v, %v; want an error starting %q", res, err, c.want)
			}
			if status, _ := feed.Status(err); status != c.status {
				t.Errorf("status %d, want %d", status, c.status)
			}
		})
	}
	var addr *outbound.AddressError
	_, err := f.Fetch(context.Background(), feed.Request{URL: s.URL + "/to-metadata", Kind: feed.RSS})
	if !errors.As(err, &addr) || !addr.Always {
		t.Errorf("a redirect to the metadata address: %v", err)
	}
	// With private addresses refused, the site itself (on loopback) is
	// not reached.
	strict := feed.New(outbound.NewClient(outbound.Options{RefusePrivate: true}), feed.Options{})
	_, err = strict.Fetch(context.Background(), feed.Request{URL: s.URL + "/broken", Kind: feed.RSS})
	if !errors.As(err, &addr) || addr.Always || !strings.Contains(err.Error(), "address 127.0.0.1 is not allowed") {
		t.Errorf("loopback with private addresses refused: %v", err)
	}
}

// A 429 or 503 carries its Retry-After, in seconds or as an HTTP date
// read against the caller's clock; other statuses, and values that are
// not one of those or are already past, ask nothing.
func TestRetryAfter(t *testing.T) {
	t.Parallel()
	now := ts("2026-11-21T12:00:00Z")
	s := newSite(t, func(w http.ResponseWriter, r *http.Request) {
		status, value, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		code := map[string]int{"429": http.StatusTooManyRequests, "503": http.StatusServiceUnavailable, "500": http.StatusInternalServerError}[status]
		w.Header().Set("Retry-After", r.URL.Query().Get("v")+value)
		w.WriteHeader(code)
	})
	f := feed.New(nil, feed.Options{})
	cases := []struct {
		name, path string
		want       time.Duration // 0: none
	}{
		{"Seconds503", "/503/7200", 2 * time.Hour},
		{"Seconds429", "/429/90", 90 * time.Second},
		{"Date", "/503?v=" + url.QueryEscape("Sat, 21 Nov 2026 15:30:00 GMT"), 3*time.Hour + 30*time.Minute},
		{"DatePast", "/503?v=" + url.QueryEscape("Sat, 21 Nov 2026 11:00:00 GMT"), 0},
		{"Zero", "/503/0", 0},
		{"Negative", "/429/-5", 0},
		{"Nonsense", "/503/soon", 0},
		{"Huge", "/503/99999999999999999", 365 * 24 * time.Hour},
		{"Not429Or503", "/500/7200", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := f.Fetch(context.Background(), feed.Request{URL: s.URL + c.path, Kind: feed.RSS})
			if err == nil {
				t.Fatal("no error")
			}
			got, ok := feed.RetryAfter(err, now)
			if got != c.want || ok != (c.want != 0) {
				t.Errorf("RetryAfter = %s, %v; want %s", got, ok, c.want)
			}
		})
	}
	if _, ok := feed.RetryAfter(errors.New("the request failed: no such host"), now); ok {
		t.Error("an error without an answer asked for a wait")
	}
}

func TestText(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"plain":                                 "plain",
		"<p>a &amp; b</p>":                      " a & b",
		"x<script>alert(1)</script>y":           "xy",
		"<style>p{}</style><b>bold</b>&lt;tag>": "bold<tag>",
	} {
		if got := feed.Text(in); got != want {
			t.Errorf("Text(%q) = %q, want %q", in, got, want)
		}
	}
}
