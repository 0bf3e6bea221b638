package server_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/copydesk/copydesk/server/publish/wordpress/wptest"
)

// failCreates makes the site answer every create with a 503 (before it
// makes anything): the outcome a client cannot tell from a lost create.
func failCreates(s *wptest.Site) {
	s.Fail = func(r *http.Request) (int, string, string, bool) {
		return 503, "unavailable", "Service Unavailable", r.Method == "POST" && strings.HasSuffix(r.URL.Path, "/wp/v2/posts")
	}
}

// A pending create adopts a post with its slug only when the post is
// evidently the one it made: the title is the post's and the site made it
// after the create was marked (a greater id). Otherwise WordPress's own
// post with that slug would be overwritten.
func TestWordPressPendingCreateAdoptsOnlyItsOwnPost(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		title string // of the site's post with the slug hello-world, made before
	}{
		{"OtherTitle", "Hello world!"},
		{"SameTitleButOlder", "Hello World"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w := newWPEnv(t)
			theirs := w.site.AddPost(c.title, "hello-world", "publish", "<p>Welcome to WordPress.</p>", nil, nil)
			p := w.post(t, map[string]any{"title": "Hello World", "content": "Mine."})
			if p["slug"] != "hello-world" {
				t.Fatalf("slug %v", p["slug"])
			}
			w.site.Set(failCreates)
			if r := w.action(t, p["id"], "publish", nil); r.Code != 502 {
				t.Fatalf("publish while creates fail: %d %s", r.Code, r.Body)
			}
			if got := w.site.PostContent(theirs); got != "<p>Welcome to WordPress.</p>" {
				t.Fatalf("the site's own post was overwritten: %q", got)
			}
			w.site.Set(func(s *wptest.Site) { s.Fail = nil })
			r := w.action(t, p["id"], "publish", nil)
			if r.Code != 200 || id64(r.Data()["remote_id"]) == theirs || w.site.PostCount() != 2 {
				t.Fatalf("publish again: %d %s; the site has %d posts", r.Code, r.Body, w.site.PostCount())
			}
			if got := w.site.PostContent(theirs); got != "<p>Welcome to WordPress.</p>" {
				t.Fatalf("the site's own post was overwritten: %q", got)
			}
		})
	}
}

// A publish has one retry budget: the client's retries do not run inside
// the publish's own.
func TestWordPressFailingUpdateIsRetriedOnce(t *testing.T) {
	t.Parallel()
	w := newWPEnv(t)
	p := w.post(t, map[string]any{"title": "Retried"})
	r := w.action(t, p["id"], "publish", nil)
	if r.Code != 200 {
		t.Fatalf("publish: %d %s", r.Code, r.Body)
	}
	route := fmt.Sprintf("POST /wp/v2/posts/%v", r.Data()["remote_id"])
	w.site.Set(func(s *wptest.Site) {
		s.Fail = func(r *http.Request) (int, string, string, bool) {
			return 503, "unavailable", "Service Unavailable", r.Method == "POST"
		}
	})
	if r := w.do(t, "PUT", fmt.Sprintf("/api/wordpress-posts/%v", p["id"]), w.editor, map[string]any{"title": "Retried twice"}); r.Code != 200 {
		t.Fatalf("edit: %d %s", r.Code, r.Body)
	}
	if r := w.action(t, p["id"], "publish", nil); r.Code != 502 {
		t.Fatalf("publish while updates fail: %d %s", r.Code, r.Body)
	}
	var n int
	w.site.Set(func(s *wptest.Site) { n = s.Requests[route] })
	if n != 3 { // the first try and two retries
		t.Fatalf("%d updates sent, want 3", n)
	}
}

// Deleting a category or tag that published posts carry makes them dirty:
// the site still files them under it until they are published again.
func TestWordPressDeletingATermMakesPostsDirty(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"categories", "tags"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			w := newWPEnv(t)
			term := w.term(t, kind, map[string]any{"name": "Gone soon"})
			field := map[string]string{"categories": "category_ids", "tags": "tag_ids"}[kind]
			p := w.post(t, map[string]any{"title": "Filed", field: []any{term["id"]}})
			other := w.post(t, map[string]any{"title": "Not filed"})
			for _, id := range []any{p["id"], other["id"]} {
				if r := w.action(t, id, "publish", nil); r.Code != 200 || r.Data()["sync_status"] != "synced" {
					t.Fatalf("publish: %d %s", r.Code, r.Body)
				}
			}
			termID := id64(w.do(t, "GET", fmt.Sprintf("/api/cms/%s/%v", kind, term["id"]), w.viewer, nil).Data()["wp_term_id"])
			if r := w.do(t, "DELETE", fmt.Sprintf("/api/cms/%s/%v", kind, term["id"]), w.editor, nil); r.Code != 200 {
				t.Fatalf("delete: %d %s", r.Code, r.Body)
			}
			get := func(id any) map[string]any {
				return w.do(t, "GET", fmt.Sprintf("/api/wordpress-posts/%v", id), w.viewer, nil).Data()
			}
			if got := get(p["id"]); got["sync_status"] != "dirty" {
				t.Fatalf("the post that carried the term: %v", got["sync_status"])
			}
			if got := get(other["id"]); got["sync_status"] != "synced" {
				t.Fatalf("the other post: %v", got["sync_status"])
			}
			r := w.action(t, p["id"], "publish", nil)
			if r.Code != 200 {
				t.Fatalf("publish again: %d %s", r.Code, r.Body)
			}
			cats, tags := w.site.PostTerms(id64(r.Data()["remote_id"]))
			for _, id := range append(cats, tags...) {
				if id == termID {
					t.Fatalf("the site still files the post under term %d", termID)
				}
			}
		})
	}
}

// A failed remote call is no change here: after a failed unpublish, a
// change on the site is pulled by a plain sync, not reported as a
// conflict.
func TestWordPressSyncAfterFailedUnpublish(t *testing.T) {
	t.Parallel()
	w := newWPEnv(t)
	p := w.post(t, map[string]any{"title": "Published", "status": "publish"})
	r := w.action(t, p["id"], "publish", nil)
	if r.Code != 200 {
		t.Fatalf("publish: %d %s", r.Code, r.Body)
	}
	remote := id64(r.Data()["remote_id"])
	w.site.Set(func(s *wptest.Site) {
		s.Fail = func(r *http.Request) (int, string, string, bool) {
			return 500, "internal_server_error", "Database error", r.Method == "POST"
		}
	})
	if r := w.action(t, p["id"], "unpublish", nil); r.Code != 502 {
		t.Fatalf("unpublish while the site fails: %d %s", r.Code, r.Body)
	}
	w.site.Set(func(s *wptest.Site) { s.Fail = nil })
	w.site.EditPost(remote, "Changed on the site", "<p>New words.</p>")
	r = w.action(t, p["id"], "sync", nil)
	if r.Code != 200 || r.Data()["title"] != "Changed on the site" || r.Data()["sync_status"] != "synced" {
		t.Fatalf("sync: %d %s", r.Code, r.Body)
	}
}

// Deleting with remote=true a post whose create got no answer trashes the
// post the create made on the site, and only that one.
func TestWordPressDeletePendingCreate(t *testing.T) {
	t.Parallel()
	t.Run("MadeBeforeTheTimeout", func(t *testing.T) {
		t.Parallel()
		w := newWPEnv(t)
		p := w.post(t, map[string]any{"title": "Slow site"})
		w.site.Set(func(s *wptest.Site) {
			s.Hang = func(r *http.Request) bool { return r.Method == "POST" && strings.HasSuffix(r.URL.Path, "/wp/v2/posts") }
		})
		if r := w.action(t, p["id"], "publish", nil); r.Code != 504 || w.site.PostCount() != 1 {
			t.Fatalf("publish: %d %s; the site has %d posts", r.Code, r.Body, w.site.PostCount())
		}
		w.site.Set(func(s *wptest.Site) { s.Hang = nil })
		if r := w.do(t, "DELETE", fmt.Sprintf("/api/wordpress-posts/%v?remote=true", p["id"]), w.editor, nil); r.Code != 200 {
			t.Fatalf("delete: %d %s", r.Code, r.Body)
		}
		if n := w.site.PostCount(); n != 0 {
			t.Fatalf("the site keeps %d posts", n)
		}
	})
	t.Run("NotTheSitesOwn", func(t *testing.T) {
		t.Parallel()
		w := newWPEnv(t)
		theirs := w.site.AddPost("Hello world!", "hello-world", "publish", "<p>Welcome to WordPress.</p>", nil, nil)
		p := w.post(t, map[string]any{"title": "Hello World"})
		w.site.Set(failCreates)
		if r := w.action(t, p["id"], "publish", nil); r.Code != 502 {
			t.Fatalf("publish: %d %s", r.Code, r.Body)
		}
		w.site.Set(func(s *wptest.Site) { s.Fail = nil })
		if r := w.do(t, "DELETE", fmt.Sprintf("/api/wordpress-posts/%v?remote=true", p["id"]), w.editor, nil); r.Code != 200 {
			t.Fatalf("delete: %d %s", r.Code, r.Body)
		}
		if got := w.site.PostStatus(theirs); got != "publish" {
			t.Fatalf("the site's own post is %q", got)
		}
		if r := w.do(t, "GET", fmt.Sprintf("/api/wordpress-posts/%v", p["id"]), w.viewer, nil); r.Code != 404 {
			t.Fatalf("the post is kept here: %d", r.Code)
		}
	})
}

// A featured image that does not arrive in time is a 502 saying only that
// it could not be fetched, as for any other failure (wppost's
// TestFeaturedImageGuard).
func TestWordPressFeaturedImageTimeout(t *testing.T) {
	t.Parallel()
	w := newWPEnv(t)
	slow := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // never answers
	}))
	defer slow.Close()
	p := w.post(t, map[string]any{"title": "Slow image", "featured_image_url": slow.URL + "/a.png"})
	r := w.action(t, p["id"], "publish", nil)
	if r.Code != 502 || !strings.Contains(r.Detail(), "featured_image_url: could not fetch the image") {
		t.Fatalf("publish: %d %s", r.Code, r.Body)
	}
}
