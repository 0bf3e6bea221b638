package wordpress_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/copydesk/copydesk/server/publish/wordpress"
)

// TestRealWordPress runs the client against a real WordPress site, the
// facts the fake site (wptest) stands in for. It is skipped unless
// COPYDESK_WP_URL, COPYDESK_WP_USER and COPYDESK_WP_APP_PASSWORD are set;
// scripts/wordpress-up.sh brings one up on loopback and prints them. It
// writes to the site (a category, a post), and removes them at the end.
func TestRealWordPress(t *testing.T) {
	base, user, pass := os.Getenv("COPYDESK_WP_URL"), os.Getenv("COPYDESK_WP_USER"), os.Getenv("COPYDESK_WP_APP_PASSWORD")
	if base == "" || user == "" || pass == "" {
		t.Skip("set COPYDESK_WP_URL, COPYDESK_WP_USER and COPYDESK_WP_APP_PASSWORD (scripts/wordpress-up.sh) to run against a real WordPress")
	}
	ctx := context.Background()
	c := wordpress.New(base, user, pass, &http.Client{Timeout: time.Minute})
	u, err := c.Me(ctx)
	if err != nil {
		t.Fatalf("users/me: %v", err)
	}
	t.Logf("signed in as %s %v; plain permalinks: %v", u.Slug, u.Roles, c.Plain())
	if _, err := wordpress.New(base, user, "wrong wrong wrong wrong", &http.Client{Timeout: time.Minute}).Me(ctx); err == nil {
		t.Fatal("users/me with a wrong application password succeeded")
	}

	name := fmt.Sprintf("copydesk test %d", time.Now().UnixNano())
	term, err := c.CreateTerm(ctx, wordpress.Categories, wordpress.Term{Name: name})
	if err != nil {
		t.Fatalf("create category: %v", err)
	}
	defer func() {
		if err := c.DeleteTerm(ctx, wordpress.Categories, term); err != nil {
			t.Errorf("delete category (force=true): %v", err)
		}
	}()
	if again, err := c.CreateTerm(ctx, wordpress.Categories, wordpress.Term{Name: name}); err != nil || again != term {
		t.Fatalf("duplicate category: %d %v, want term_exists with %d", again, err, term)
	}

	slug := fmt.Sprintf("copydesk-test-%d", time.Now().UnixNano())
	p, err := c.CreatePost(ctx, wordpress.PostInput{Title: "copydesk test", Content: "<p>hello</p>", Slug: slug, Status: "draft",
		Categories: []int64{term, 987654321}, Tags: []int64{}})
	if err != nil {
		t.Fatalf("create post: %v", err)
	}
	defer func() {
		if err := c.TrashPost(ctx, p.ID); err != nil {
			t.Errorf("trash: %v", err)
		}
	}()
	if m := wordpress.Missing([]int64{term, 987654321}, p.Categories); len(m) != 1 || m[0] != 987654321 {
		t.Fatalf("unknown category ids: missing %v, post has %v", m, p.Categories)
	}
	found, err := c.FindPostBySlug(ctx, slug)
	if err != nil || found == nil || found.ID != p.ID {
		t.Fatalf("find the draft by slug: %+v %v", found, err)
	}
	future := time.Now().UTC().Add(30 * 24 * time.Hour).Format(wordpress.TimeFormat)
	p, err = c.UpdatePost(ctx, p.ID, wordpress.PostInput{Title: "copydesk test", Content: "<p>hello</p>", Slug: slug, Status: "publish",
		DateGMT: future, Categories: []int64{term}, Tags: []int64{}})
	if err != nil || p.Status != "future" {
		t.Fatalf("publish dated later: %+v %v, want status future", p, err)
	}
	if _, pages, err := c.Posts(ctx, 1, 1); err != nil || pages < 1 {
		t.Fatalf("posts page 1: %d pages, %v", pages, err)
	}
}
