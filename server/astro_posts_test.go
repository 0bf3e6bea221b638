package server_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/copydesk/copydesk/store"
)

// astroProject makes an Astro project folder with the starter's content
// folder and points environment id at it (as an admin would).
func astroProject(t *testing.T, e *cmsEnv, id int64) string {
	t.Helper()
	project := t.TempDir()
	if err := os.MkdirAll(filepath.Join(project, "src", "content", "blog"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(project, "package.json"), []byte(`{"dependencies":{"astro":"^5"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	r := e.do(t, "PUT", fmt.Sprintf("/api/environments/%d/configuration", id), e.admin, map[string]any{"astro": map[string]any{"project_path": project}})
	if r.Code != 200 {
		t.Fatalf("configuration: %d %s", r.Code, r.Body)
	}
	return project
}

func TestAstroConfigurationFolderNotShared(t *testing.T) {
	t.Parallel()
	e := newCMSEnv(t)
	project := astroProject(t, e, e.envA)
	link := filepath.Join(t.TempDir(), "site")
	if err := os.Symlink(project, link); err != nil {
		t.Fatal(err)
	}
	// A project folder holding the first one (through a link: the test's
	// own folder holds the data directory, which is refused).
	parent := t.TempDir()
	if err := os.Symlink(project, filepath.Join(parent, "site")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(parent, "astro.config.mjs"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		astro  map[string]any
		status int
	}{
		{"SameFolder", map[string]any{"project_path": project}, 409},
		{"SameFolderOtherSpelling", map[string]any{"project_path": project + "/src/../", "content_dir": "./src/content/blog/"}, 409},
		{"SameFolderFromParent", map[string]any{"project_path": parent, "content_dir": "site/src/content/blog"}, 409},
		{"InsideIt", map[string]any{"project_path": project, "content_dir": "src/content/blog/2026"}, 409},
		{"AroundIt", map[string]any{"project_path": project, "content_dir": "src/content"}, 409},
		{"ThroughASymlink", map[string]any{"project_path": link}, 409},
		{"ThroughASymlinkInsideIt", map[string]any{"project_path": link, "content_dir": "src/content/blog/drafts"}, 409},
		{"OtherFolder", map[string]any{"project_path": project, "content_dir": "src/content/news"}, 200},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := e.do(t, "PUT", fmt.Sprintf("/api/environments/%d/configuration", e.envB), e.admin, map[string]any{"astro": c.astro})
			if r.Code != c.status {
				t.Fatalf("%d %s, want %d", r.Code, r.Body, c.status)
			}
			if c.status == 409 && !strings.Contains(r.Detail(), "cannot share a content folder") {
				t.Errorf("detail %q", r.Detail())
			}
		})
	}
	// An environment saving its own folder again is no conflict.
	r := e.do(t, "PUT", fmt.Sprintf("/api/environments/%d/configuration", e.envA), e.admin, map[string]any{"astro": map[string]any{"project_path": project}})
	if r.Code != 200 {
		t.Errorf("saving its own folder: %d %s", r.Code, r.Body)
	}
}

func TestAstroPostsAPI(t *testing.T) {
	t.Parallel()
	e := newCMSEnv(t)
	project := astroProject(t, e, e.envA)
	dir := filepath.Join(project, "src", "content", "blog")
	tag := e.do(t, "POST", "/api/cms/tags", e.editor, map[string]any{"environment_id": e.envA, "name": "Go"}).Data()
	cat := e.do(t, "POST", "/api/cms/categories", e.editor, map[string]any{"environment_id": e.envA, "name": "News"}).Data()

	r := e.do(t, "POST", "/api/astro-posts", e.editor, map[string]any{"environment_id": e.envA, "title": "Ünïcode: «Grüße» #1 & more",
		"description": `Say "hi"`, "body": "# Heading\n\nText.", "tag_ids": []any{tag["id"]}, "category_ids": []any{cat["id"]},
		"pub_date": "2026-01-02T03:04:05+01:00", "draft": true})
	if r.Code != 201 {
		t.Fatalf("create: %d %s", r.Code, r.Body)
	}
	post := r.Data()
	id := int64(post["id"].(float64))
	if post["slug"] != "unicode-grusse-1-and-more" || post["file"] != "unicode-grusse-1-and-more.md" || post["pub_date"] != "2026-01-02T02:04:05Z" {
		t.Errorf("post %v", post)
	}
	file := e.do(t, "GET", fmt.Sprintf("/api/astro-posts/%d/file", id), e.viewer, nil)
	disk, err := os.ReadFile(filepath.Join(dir, "unicode-grusse-1-and-more.md"))
	if err != nil || file.Code != 200 || file.Body != string(disk) || !strings.HasPrefix(file.Header.Get("Content-Type"), "text/markdown") {
		t.Fatalf("file: %d %q (%v), disk %q", file.Code, file.Body, err, disk)
	}
	want := "---\ntitle: \"Ünïcode: «Grüße» #1 & more\"\ndescription: \"Say \\\"hi\\\"\"\npubDate: 2026-01-02T02:04:05Z\n" +
		"categories: [\"News\"]\ntags: [\"Go\"]\ndraft: true\n---\n\n# Heading\n\nText.\n"
	if file.Body != want {
		t.Errorf("file\n%s\nwant\n%s", file.Body, want)
	}

	// Lists, by every filter.
	if r := e.do(t, "POST", "/api/astro-posts", e.editor, map[string]any{"environment_id": e.envA, "title": "Second"}); r.Code != 201 {
		t.Fatal(r.Body)
	}
	for q, n := range map[string]int{"": 2, "draft=true": 1, "draft=false": 1, fmt.Sprintf("tag_id=%v", tag["id"]): 1,
		fmt.Sprintf("category_id=%v", cat["id"]): 1, "q=" + url.QueryEscape("Grüße"): 1, fmt.Sprintf("environment_id=%d", e.envA): 2} {
		r := e.do(t, "GET", "/api/astro-posts?"+q, e.viewer, nil)
		if r.Code != 200 || int(r.Data()["total"].(float64)) != n {
			t.Errorf("list %s: %d %s, want %d", q, r.Code, r.Body, n)
		}
	}
	// The CMS lists count Astro posts.
	tags := e.do(t, "GET", fmt.Sprintf("/api/cms/tags?environment_id=%d", e.envA), e.viewer, nil).Data()["items"].([]any)
	if counts := tags[0].(map[string]any)["post_counts"].(map[string]any); counts["astro"] != 1.0 {
		t.Errorf("tag post_counts %v", counts)
	}

	// Bad input: 422 with the field named, and nothing on disk.
	for _, c := range []struct {
		body   map[string]any
		detail string
	}{
		{map[string]any{"slug": "../escape"}, "slug"},
		{map[string]any{"slug": "a/b"}, "slug"},
		{map[string]any{"slug": "/etc/passwd"}, "slug"},
		{map[string]any{"slug": "nul\u0000byte"}, "slug"},
		{map[string]any{"hero_image": "/blog-placeholder-1.jpg"}, "hero_image"},
		{map[string]any{"hero_image": "./missing.jpg"}, "hero_image"},
		{map[string]any{"title": "bad\u202eorder"}, "title"},
	} {
		c.body["environment_id"] = e.envA
		if _, ok := c.body["title"]; !ok {
			c.body["title"] = "Escape"
		}
		r := e.do(t, "POST", "/api/astro-posts", e.editor, c.body)
		if r.Code != 422 || !strings.Contains(r.Detail(), c.detail) {
			t.Errorf("%v: %d %s", c.body, r.Code, r.Body)
		}
	}
	if _, err := os.Stat(filepath.Join(project, "src", "content", "escape.md")); err == nil {
		t.Error("escape.md written outside the folder")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("%d files in the folder, want 2", len(entries))
	}

	// Rename moves the file; delete removes it.
	r = e.do(t, "PUT", fmt.Sprintf("/api/astro-posts/%d", id), e.editor, map[string]any{"slug": "renamed", "clear_updated_date": true})
	if r.Code != 200 || r.Data()["file"] != "renamed.md" {
		t.Fatalf("rename: %d %s", r.Code, r.Body)
	}
	if _, err := os.Stat(filepath.Join(dir, "unicode-grusse-1-and-more.md")); !os.IsNotExist(err) {
		t.Errorf("old file still there: %v", err)
	}
	if r := e.do(t, "DELETE", fmt.Sprintf("/api/astro-posts/%d", id), e.editor, nil); r.Code != 200 {
		t.Fatal(r.Body)
	}
	if _, err := os.Stat(filepath.Join(dir, "renamed.md")); !os.IsNotExist(err) {
		t.Errorf("file still there after delete: %v", err)
	}

	// A missing folder: 409 naming it, and no row.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	r = e.do(t, "POST", "/api/astro-posts", e.editor, map[string]any{"environment_id": e.envA, "title": "Lost"})
	if r.Code != 409 || !strings.Contains(r.Detail(), dir) {
		t.Errorf("missing folder: %d %s", r.Code, r.Body)
	}
	if r := e.do(t, "GET", "/api/astro-posts?q=Lost", e.admin, nil); r.Data()["total"] != 0.0 {
		t.Errorf("a row was left: %s", r.Body)
	}
}

// writerAgent is the editor and a writer agent of environment A, whose
// runs save-as-post turns into posts.
func writerAgent(t *testing.T, e *cmsEnv) (*store.User, *store.Agent) {
	t.Helper()
	ctx := context.Background()
	u, err := e.app.DB.UserByEmail(ctx, "editor@example.com")
	if err != nil {
		t.Fatal(err)
	}
	a, err := e.app.DB.CreateAgent(ctx, store.AgentInput{EnvironmentID: &e.envA, Name: "W", Kind: "writer", IsActive: true}, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	return u, a
}

func TestSaveRunAsAstroPost(t *testing.T) {
	t.Parallel()
	e := newCMSEnv(t)
	project := astroProject(t, e, e.envA)
	ctx := context.Background()
	u, a := writerAgent(t, e)
	run, err := e.app.DB.CreateRun(ctx, store.NewRun{AgentID: a.ID, EnvironmentID: &e.envA, UserID: &u.ID, Input: "x"})
	if err != nil {
		t.Fatal(err)
	}
	path := fmt.Sprintf("/api/agents/runs/%d/save-as-post", run.ID)
	if r := e.do(t, "POST", path, e.editor, map[string]any{"target": "astro"}); r.Code != 409 {
		t.Errorf("queued run: %d %s", r.Code, r.Body)
	}
	if _, err := e.app.DB.FinishRun(ctx, run.ID, store.RunOutcome{Status: store.RunSucceeded, Output: "# Why SQLite\n\nIt is one file.\n"}); err != nil {
		t.Fatal(err)
	}
	if r := e.do(t, "POST", path, e.editor, map[string]any{"target": "blogger"}); r.Code != 422 {
		t.Errorf("unknown target: %d %s", r.Code, r.Body)
	}
	r := e.do(t, "POST", path, e.editor, map[string]any{"target": "astro"})
	if r.Code != 201 {
		t.Fatalf("save: %d %s", r.Code, r.Body)
	}
	p := r.Data()["astro"].(map[string]any)
	if p["title"] != "Why SQLite" || p["draft"] != true || p["run_id"] != float64(run.ID) || p["description"] != "It is one file." {
		t.Errorf("post %v", p)
	}
	if _, err := os.Stat(filepath.Join(project, "src", "content", "blog", "why-sqlite.md")); err != nil {
		t.Error(err)
	}
}

// Save-as-post takes the title from the first heading outside code, the
// same one for both targets, and drops it from the body only when it is of
// level 1.
func TestSaveRunTitleOutsideCode(t *testing.T) {
	t.Parallel()
	e := newCMSEnv(t)
	astroProject(t, e, e.envA)
	ctx := context.Background()
	u, a := writerAgent(t, e)
	cases := []struct {
		name, output, title string
		kept, dropped       string // in the body, not in it
	}{
		{"FenceBeforeTheHeading", "```bash\n# install deps\nnpm ci\n```\n\n# Set up the site\n\nText.\n", "Set up the site",
			"# install deps", "# Set up the site"},
		{"TildesAndLongerFences", "Intro.\n\n~~~~\n```\n# not this\n~~~~\n\n# The title\n\nText.\n", "The title", "# not this", "# The title"},
		{"LevelTwoStays", "```\n# code\n```\n\n## A section\n\nText.\n", "A section", "## A section", ""},
	}
	for i, c := range cases {
		for _, target := range []string{"wordpress", "astro"} {
			t.Run(c.name+"/"+target, func(t *testing.T) {
				run, err := e.app.DB.CreateRun(ctx, store.NewRun{AgentID: a.ID, EnvironmentID: &e.envA, UserID: &u.ID, Input: "x"})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := e.app.DB.FinishRun(ctx, run.ID, store.RunOutcome{Status: store.RunSucceeded, Output: c.output}); err != nil {
					t.Fatal(err)
				}
				r := e.do(t, "POST", fmt.Sprintf("/api/agents/runs/%d/save-as-post", run.ID), e.editor, map[string]any{"target": target})
				if r.Code != 201 {
					t.Fatalf("save: %d %s", r.Code, r.Body)
				}
				p := r.Data()[target].(map[string]any)
				body, _ := p["content"].(string)
				if target == "astro" {
					body, _ = p["body"].(string)
				}
				if p["title"] != c.title || !strings.Contains(body, c.kept) || c.dropped != "" && strings.Contains(body, c.dropped) {
					t.Fatalf("case %d: title %q, body %q", i, p["title"], body)
				}
			})
		}
	}
}

// A date alone is a date (Astro's pubDate is usually one); a time that is
// neither is a 422 naming the field, in words, not Go's layouts.
func TestPostDates(t *testing.T) {
	t.Parallel()
	e := newCMSEnv(t)
	astroProject(t, e, e.envA)
	r := e.do(t, "POST", "/api/astro-posts", e.editor, map[string]any{"environment_id": e.envA, "title": "Dated",
		"body": "Text.", "pub_date": "2026-11-21", "updated_date": "2026-11-22"})
	if r.Code != 201 || r.Data()["pub_date"] != "2026-11-21T00:00:00Z" || r.Data()["updated_date"] != "2026-11-22T00:00:00Z" {
		t.Fatalf("date-only pub_date: %d %s", r.Code, r.Body)
	}
	for _, c := range []struct {
		path  string
		body  map[string]any
		field string
	}{
		{"/api/astro-posts", map[string]any{"environment_id": e.envA, "title": "Bad", "body": "x", "pub_date": "21/11/2026"}, "pub_date"},
		{"/api/astro-posts", map[string]any{"environment_id": e.envA, "title": "Bad", "body": "x", "updated_date": 20261121}, "updated_date"},
		{"/api/wordpress-posts", map[string]any{"environment_id": e.envA, "title": "Bad", "content": "x", "status": "future", "scheduled_at": "tomorrow"}, "scheduled_at"},
	} {
		r := e.do(t, "POST", c.path, e.editor, c.body)
		if r.Code != 422 || !strings.HasPrefix(r.Detail(), c.field+": must be a time like") || strings.Contains(r.Detail(), "2006") {
			t.Errorf("%s %v: %d %s", c.path, c.body[c.field], r.Code, r.Detail())
		}
	}
}
