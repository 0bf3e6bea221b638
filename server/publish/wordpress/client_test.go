package wordpress_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/copydesk/copydesk/server/publish/wordpress"
	"github.com/copydesk/copydesk/server/publish/wordpress/wptest"
)

func client(site *wptest.Site) *wordpress.Client {
	c := wordpress.New(site.URL, site.User, site.Password, site.Client())
	c.Backoff = func(int) time.Duration { return time.Millisecond }
	return c
}

func TestMe(t *testing.T) {
	t.Parallel()
	site := wptest.New()
	defer site.Close()
	ctx := context.Background()
	if u, err := client(site).Me(ctx); err != nil || u.Slug != "editor" {
		t.Fatalf("Me = %+v, %v", u, err)
	}
	t.Run("WrongPassword", func(t *testing.T) {
		_, err := wordpress.New(site.URL, site.User, "wrong", site.Client()).Me(ctx)
		var we *wordpress.Error
		if !errors.As(err, &we) || we.Status != 401 || we.Code != "incorrect_password" || !strings.Contains(err.Error(), "environment type is local") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("PublicEndpointsIgnoreUnusableCredentials", func(t *testing.T) {
		site.Set(func(s *wptest.Site) { s.NoAppPasswords = true })
		defer site.Set(func(s *wptest.Site) { s.NoAppPasswords = false })
		c := client(site)
		// A public read answers 200 whatever the credentials ...
		req, _ := http.NewRequest("GET", site.URL+"/wp-json/wp/v2/posts", nil)
		req.SetBasicAuth("nobody", "wrong")
		res, err := site.Client().Do(req)
		if err != nil || res.StatusCode != 200 {
			t.Fatalf("public read with bad credentials: %v %v", res, err)
		}
		res.Body.Close()
		// ... so only users/me tells that they do not work.
		var we *wordpress.Error
		if _, err := c.Me(ctx); !errors.As(err, &we) || we.Status != 401 || we.Code != "rest_not_logged_in" {
			t.Fatalf("Me without usable application passwords: %v", err)
		}
	})
}

func TestPlainPermalinks(t *testing.T) {
	t.Parallel()
	site := wptest.New()
	defer site.Close()
	site.Set(func(s *wptest.Site) { s.Plain = true })
	c := client(site)
	ctx := context.Background()
	if _, err := c.Me(ctx); err != nil {
		t.Fatalf("Me on plain permalinks: %v", err)
	}
	if !c.Plain() {
		t.Fatal("the client did not switch to ?rest_route=")
	}
	p, err := c.CreatePost(ctx, wordpress.PostInput{Title: "Hi", Slug: "hi", Status: "draft"})
	if err != nil || p.ID == 0 {
		t.Fatalf("create on plain permalinks: %+v %v", p, err)
	}
	// A JSON 404 of the API itself is an answer, not a reason to switch.
	site2 := wptest.New()
	defer site2.Close()
	c2 := client(site2)
	var we *wordpress.Error
	if _, err := c2.Post(ctx, 424242); !errors.As(err, &we) || we.Code != "rest_post_invalid_id" || c2.Plain() {
		t.Fatalf("missing post: %v (plain %v)", err, c2.Plain())
	}
}

// A network error at ?rest_route= is the call's error, and retried like
// any other: not the 404 of /wp-json/ before it, which would tell the user
// the site has no REST API (seen once under load, on an import's second
// page read).
func TestPlainPermalinksNetworkError(t *testing.T) {
	t.Parallel()
	site := wptest.New()
	defer site.Close()
	site.Set(func(s *wptest.Site) { s.Plain = true })
	var resets atomic.Int32
	hc := &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
		if r.URL.Query().Has("rest_route") && resets.Add(1) <= 1 {
			return nil, errors.New("connection reset by peer")
		}
		return site.Client().Transport.RoundTrip(r)
	})}
	ctx := context.Background()
	once := wordpress.New(site.URL, site.User, site.Password, hc).WithRetries(-1)
	if _, err := once.Me(ctx); err == nil || !strings.Contains(err.Error(), "connection reset") || strings.Contains(err.Error(), "no WordPress REST API") {
		t.Fatalf("Me with the ?rest_route= call reset: %v", err)
	}
	resets.Store(0)
	c := wordpress.New(site.URL, site.User, site.Password, hc)
	c.Backoff = func(int) time.Duration { return time.Millisecond }
	if u, err := c.Me(ctx); err != nil || u.Slug != "editor" || !c.Plain() {
		t.Fatalf("Me retried after a reset: %+v %v (plain %v)", u, err, c.Plain())
	}
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestPostsAndTerms(t *testing.T) {
	t.Parallel()
	site := wptest.New()
	defer site.Close()
	c := client(site)
	ctx := context.Background()

	news, err := c.CreateTerm(ctx, wordpress.Categories, wordpress.Term{Name: "News", Slug: "news"})
	if err != nil || news == 0 {
		t.Fatalf("create term: %d %v", news, err)
	}
	// A duplicate is 400 term_exists with data.term_id: the same id back.
	if again, err := c.CreateTerm(ctx, wordpress.Categories, wordpress.Term{Name: "News", Slug: "news"}); err != nil || again != news {
		t.Fatalf("duplicate term: %d %v, want %d", again, err, news)
	}
	// Unknown term ids are dropped silently; Missing finds them.
	p, err := c.CreatePost(ctx, wordpress.PostInput{Title: "T", Slug: "t", Status: "draft", Categories: []int64{news, 9999}})
	if err != nil {
		t.Fatal(err)
	}
	if m := wordpress.Missing([]int64{news, 9999}, p.Categories); len(m) != 1 || m[0] != 9999 {
		t.Fatalf("missing = %v (post has %v)", m, p.Categories)
	}
	// A publish dated in the future comes back as future.
	future := time.Now().UTC().Add(48 * time.Hour).Format(wordpress.TimeFormat)
	p, err = c.UpdatePost(ctx, p.ID, wordpress.PostInput{Title: "T", Slug: "t", Status: "publish", DateGMT: future})
	if err != nil || p.Status != "future" {
		t.Fatalf("publish in the future: %+v %v", p, err)
	}
	if found, err := c.FindPostBySlug(ctx, "t"); err != nil || found == nil || found.ID != p.ID {
		t.Fatalf("find by slug: %+v %v", found, err)
	}
	if found, err := c.FindPostBySlug(ctx, "nope"); err != nil || found != nil {
		t.Fatalf("find a missing slug: %+v %v", found, err)
	}
	// The newest post's id bounds what a later create can be given.
	later := site.AddPost("Later", "later", "draft", "", nil, nil)
	if latest, err := c.LatestPostID(ctx); err != nil || latest != later || later <= p.ID {
		t.Fatalf("latest post id: %d %v, want %d (> %d)", latest, err, later, p.ID)
	}
	// Terms cannot be trashed: DeleteTerm forces.
	if err := c.DeleteTerm(ctx, wordpress.Categories, news); err != nil {
		t.Fatalf("delete term: %v", err)
	}
	if err := c.TrashPost(ctx, p.ID); err != nil || site.PostStatus(p.ID) != "trash" {
		t.Fatalf("trash: %v, status %s", err, site.PostStatus(p.ID))
	}
	m, err := c.UploadMedia(ctx, "a.png", "image/png", []byte("\x89PNG..."))
	if err != nil || m.ID == 0 || m.SourceURL == "" {
		t.Fatalf("upload: %+v %v", m, err)
	}
}

func TestPaging(t *testing.T) {
	t.Parallel()
	site := wptest.New()
	defer site.Close()
	for i := 0; i < 25; i++ {
		site.AddPost("P", "p", "publish", "x", nil, nil)
	}
	c := client(site)
	got, pages, err := c.Posts(context.Background(), 3, 10)
	if err != nil || pages != 3 || len(got) != 5 {
		t.Fatalf("page 3: %d posts of %d pages, %v", len(got), pages, err)
	}
}

func TestErrorsAndRetries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cases := []struct {
		name      string
		status    int
		code      string
		retryable bool
	}{
		{"BadRequest", 400, "rest_invalid_param", false},
		{"Unauthorized", 401, "rest_cannot_create", false},
		{"Forbidden", 403, "rest_cannot_create", false},
		{"NotFound", 404, "rest_post_invalid_id", false},
		{"ServerError", 500, "internal_server_error", true},
		{"TooMany", 429, "too_many_requests", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			site := wptest.New()
			defer site.Close()
			site.Set(func(s *wptest.Site) {
				s.Fail = func(r *http.Request) (int, string, string, bool) { return c.status, c.code, "the site says no", true }
			})
			cl := client(site)
			_, err := cl.Me(ctx)
			var we *wordpress.Error
			if !errors.As(err, &we) || we.Status != c.status || we.Code != c.code || we.Message != "the site says no" {
				t.Fatalf("err = %v", err)
			}
			want := 1
			if c.retryable {
				want = 3 // two retries
			}
			if n := site.Requests["GET /wp/v2/users/me"]; n != want {
				t.Fatalf("%d requests, want %d", n, want)
			}
		})
	}
	t.Run("CreateIsNotRetried", func(t *testing.T) {
		t.Parallel()
		site := wptest.New()
		defer site.Close()
		site.Set(func(s *wptest.Site) {
			s.Fail = func(r *http.Request) (int, string, string, bool) {
				return 503, "unavailable", "later", r.Method == "POST"
			}
		})
		_, err := client(site).CreatePost(ctx, wordpress.PostInput{Title: "x", Status: "draft"})
		if err == nil || site.Requests["POST /wp/v2/posts"] != 1 {
			t.Fatalf("err %v after %d requests", err, site.Requests["POST /wp/v2/posts"])
		}
	})
	t.Run("Timeout", func(t *testing.T) {
		t.Parallel()
		site := wptest.New()
		defer site.Close()
		site.Set(func(s *wptest.Site) { s.Hang = func(r *http.Request) bool { return r.Method == "POST" } })
		cl := client(site)
		cl.Timeout = 100 * time.Millisecond
		_, err := cl.CreatePost(ctx, wordpress.PostInput{Title: "x", Slug: "x", Status: "draft"})
		if !errors.Is(err, wordpress.ErrTimeout) || wordpress.Answered(err) || wordpress.Retryable(err) {
			t.Fatalf("err = %v", err)
		}
		if site.PostCount() != 1 {
			t.Fatalf("the site made %d posts", site.PostCount())
		}
	})
}
