package astropost_test

import (
	"context"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/copydesk/copydesk/server/astropost"
	"github.com/copydesk/copydesk/server/environment"
	"github.com/copydesk/copydesk/store"
	"github.com/copydesk/copydesk/store/storetest"
)

type fixture struct {
	db      *store.DB
	svc     *astropost.Service
	env     *store.Environment
	project string
	dir     string // the content folder
}

var ctx = context.Background()

func newFixture(t *testing.T) *fixture {
	t.Helper()
	db, clk := storetest.OpenDB(t)
	project := t.TempDir()
	dir := filepath.Join(project, "src", "content", "blog")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(project, "package.json"), []byte(`{"dependencies":{"astro":"^5"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	envs := environment.New(db).ConfineAstro(environment.AstroPlaces{Roots: []string{os.TempDir()}})
	env, err := envs.Create(ctx, store.Everything, store.NewEnvironment{Name: "Blog",
		Configuration: store.EnvironmentConfig{Astro: &store.AstroConfig{ProjectPath: project}}})
	if err != nil {
		t.Fatal(err)
	}
	svc := astropost.New(db, envs, clk.Now, slog.New(slog.NewTextHandler(io.Discard, nil)))
	return &fixture{db: db, svc: svc, env: env, project: project, dir: dir}
}

func (f *fixture) read(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(f.dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func (f *fixture) files(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// frontMatter parses a post file's front matter with a YAML parser, the
// way Astro reads it, and checks it against the blog starter's schema:
//
//	title: z.string(), description: z.string(), pubDate: z.coerce.date(),
//	updatedDate: z.coerce.date().optional(), heroImage: image().optional()
//
// and the collection's rules for file names (lower case, no ? or #).
func frontMatter(t *testing.T, dir, name, text string) map[string]any {
	t.Helper()
	if name != strings.ToLower(name) || strings.ContainsAny(name, "?#/\\") || !regexp.MustCompile(`^[a-z0-9-]+\.mdx?$`).MatchString(name) {
		t.Errorf("file name %q: Astro drops posts whose id changes when slugged", name)
	}
	parts := strings.SplitN(text, "---\n", 3)
	if len(parts) != 3 || parts[0] != "" {
		t.Fatalf("no front matter in %q", text)
	}
	var fm map[string]any
	if err := yaml.Unmarshal([]byte(parts[1]), &fm); err != nil {
		t.Fatalf("front matter is not YAML: %v\n%s", err, parts[1])
	}
	for _, k := range []string{"title", "description"} {
		if _, ok := fm[k].(string); !ok {
			t.Errorf("%s is %T (%v), the schema wants a string", k, fm[k], fm[k])
		}
	}
	for _, k := range []string{"pubDate", "updatedDate"} {
		v, ok := fm[k]
		if !ok && k == "updatedDate" {
			continue
		}
		switch d := v.(type) {
		case time.Time:
		case string:
			if _, err := time.Parse(time.RFC3339, d); err != nil {
				t.Errorf("%s %q is no date z.coerce.date reads", k, d)
			}
		default:
			t.Errorf("%s is %T (%v), the schema wants a date", k, v, v)
		}
	}
	if h, ok := fm["heroImage"]; ok {
		s, _ := h.(string)
		u, err := url.Parse(s)
		switch {
		case err == nil && u.Scheme == "https" && u.Host != "":
		case strings.HasPrefix(s, "./") || strings.HasPrefix(s, "../"):
			if _, err := os.Stat(filepath.Join(dir, s)); err != nil {
				t.Errorf("heroImage %q: image() fails the build on an image that is not there: %v", s, err)
			}
		default:
			t.Errorf("heroImage %q: neither an https URL nor a path relative to the post", s)
		}
	}
	return fm
}

func TestCreateWritesFrontMatterTheStarterAccepts(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	if err := os.WriteFile(filepath.Join(f.dir, "hero.jpg"), []byte("\xff\xd8\xff"), 0o644); err != nil {
		t.Fatal(err)
	}
	pub := time.Date(2026, 3, 4, 5, 6, 7, 0, time.FixedZone("CET", 3600))
	cases := []struct {
		name, title, desc, hero string
		wantFile, wantHero      string
	}{
		{name: "Ampersand", title: "Q&A: x", desc: "a: b", wantFile: "q-and-a-x.md"},
		{name: "Hash", title: "Issue #42", desc: "# not a comment", wantFile: "issue-42.md"},
		{name: "Quotes", title: `He said "hi" \ and 'bye'`, desc: `C:\path "x"`, wantFile: "he-said-hi-and-bye.md"},
		{name: "Unicode", title: "Café Olé — 日本語 🚀", desc: "Ünïcödé ✓", wantFile: "cafe-ole.md"},
		{name: "NothingToSlug", title: "日本語のタイトル", desc: "", wantFile: "post-"},
		{name: "YAMLWords", title: "yes", desc: "null", wantFile: "yes.md"},
		{name: "Indicators", title: "- [x] {y}: *z* | >w ? %", desc: "@at `tick` !bang", wantFile: "x-y-z-w.md"},
		{name: "HeroURL", title: "Hero remote", hero: "https://images.example.com/a.jpg?w=10#x", wantFile: "hero-remote.md",
			wantHero: "https://images.example.com/a.jpg?w=10#x"},
		{name: "HeroRelative", title: "Hero local", hero: "hero.jpg", wantFile: "hero-local.md", wantHero: "./hero.jpg"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := f.svc.Create(ctx, store.Everything, astropost.Input{EnvironmentID: f.env.ID, Title: c.title, Description: c.desc,
				HeroImage: c.hero, PubDate: &pub, Body: "Hello *world*.\n\n## Part\n"})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(p.FileName(), c.wantFile) {
				t.Errorf("file %s, want %s", p.FileName(), c.wantFile)
			}
			text := f.read(t, p.FileName())
			fm := frontMatter(t, f.dir, p.FileName(), text)
			if fm["title"] != c.title || fm["description"] != c.desc {
				t.Errorf("read back title %q description %q, want %q %q", fm["title"], fm["description"], c.title, c.desc)
			}
			if d, _ := fm["pubDate"].(time.Time); !d.Equal(pub) {
				t.Errorf("pubDate %v, want %v", fm["pubDate"], pub)
			}
			if h, _ := fm["heroImage"].(string); h != c.wantHero {
				t.Errorf("heroImage %q, want %q", h, c.wantHero)
			}
			if !strings.HasSuffix(text, "---\n\nHello *world*.\n\n## Part\n") {
				t.Errorf("body not after the front matter as given:\n%s", text)
			}
			file, err := f.svc.File(ctx, store.Everything, p.ID)
			if err != nil || file != text {
				t.Errorf("File: %v, %q; want the file's exact text", err, file)
			}
		})
	}
}

func TestExtraKeysAndTerms(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cat, err := f.db.CreateCategory(ctx, store.NewCategory{EnvironmentID: f.env.ID, Name: "News & Views", Slug: "news"})
	if err != nil {
		t.Fatal(err)
	}
	tag, err := f.db.CreateTag(ctx, store.NewTag{EnvironmentID: f.env.ID, Name: "Go #1", Slug: "go"})
	if err != nil {
		t.Fatal(err)
	}
	upd := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	p, err := f.svc.Create(ctx, store.Everything, astropost.Input{EnvironmentID: f.env.ID, Title: "Terms", Draft: true,
		UpdatedDate: &upd, CategoryIDs: []int64{cat.ID}, TagIDs: []int64{tag.ID, tag.ID}})
	if err != nil {
		t.Fatal(err)
	}
	fm := frontMatter(t, f.dir, p.FileName(), f.read(t, p.FileName()))
	if fm["draft"] != true {
		t.Errorf("draft %v, want true", fm["draft"])
	}
	if tags, _ := fm["tags"].([]any); len(tags) != 1 || tags[0] != "Go #1" {
		t.Errorf("tags %v, want [Go #1]", fm["tags"])
	}
	if cats, _ := fm["categories"].([]any); len(cats) != 1 || cats[0] != "News & Views" {
		t.Errorf("categories %v", fm["categories"])
	}
	if d, _ := fm["updatedDate"].(time.Time); !d.Equal(upd) {
		t.Errorf("updatedDate %v", fm["updatedDate"])
	}
	// The CMS lists count it as an Astro post.
	c, err := f.db.CategoryByID(ctx, cat.ID)
	if err != nil || c.PostCounts["astro"] != 1 {
		t.Errorf("category post counts %v (%v), want astro 1", c.PostCounts, err)
	}
	// A category of another environment is refused, and nothing is written.
	other, err := f.db.CreateEnvironment(ctx, store.NewEnvironment{Name: "Other", Slug: "other"})
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := f.db.CreateCategory(ctx, store.NewCategory{EnvironmentID: other.ID, Name: "Foreign", Slug: "foreign"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.svc.Create(ctx, store.Everything, astropost.Input{EnvironmentID: f.env.ID, Title: "Foreign cat", CategoryIDs: []int64{foreign.ID}})
	storetest.WantKind(t, err, store.KindInvalid)
	if _, err := os.Stat(filepath.Join(f.dir, "foreign-cat.md")); !os.IsNotExist(err) {
		t.Errorf("a refused post left its file: %v", err)
	}
}

func TestSlugRenameMovesTheFile(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	p, err := f.svc.Create(ctx, store.Everything, astropost.Input{EnvironmentID: f.env.ID, Title: "First title", Body: "text"})
	if err != nil {
		t.Fatal(err)
	}
	newSlug, title := "second-name", "Second title"
	p, err = f.svc.Update(ctx, store.Everything, p.ID, astropost.Change{Slug: &newSlug, Title: &title})
	if err != nil {
		t.Fatal(err)
	}
	if got := f.files(t); len(got) != 1 || got[0] != "second-name.md" {
		t.Errorf("files %v, want only second-name.md", got)
	}
	if fm := frontMatter(t, f.dir, p.FileName(), f.read(t, "second-name.md")); fm["title"] != title {
		t.Errorf("title %v", fm["title"])
	}
	// A slug whose file is in the folder but is no post: 409, nothing moved.
	if err := os.WriteFile(filepath.Join(f.dir, "hand-made.md"), []byte("---\ntitle: mine\n---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	taken := "hand-made"
	_, err = f.svc.Update(ctx, store.Everything, p.ID, astropost.Change{Slug: &taken})
	storetest.WantKind(t, err, store.KindConflict)
	if got := f.read(t, "hand-made.md"); got != "---\ntitle: mine\n---\n" {
		t.Errorf("the hand-made file was written over: %q", got)
	}
	// A generated slug steps over it.
	q, err := f.svc.Create(ctx, store.Everything, astropost.Input{EnvironmentID: f.env.ID, Title: "Hand made"})
	if err != nil || q.Slug != "hand-made-2" {
		t.Errorf("generated slug %v (%v), want hand-made-2", q, err)
	}
	if err := f.svc.Delete(ctx, store.Everything, p.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(f.dir, "second-name.md")); !os.IsNotExist(err) {
		t.Errorf("delete left the file: %v", err)
	}
}

func TestTraversalIsRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	p, err := f.svc.Create(ctx, store.Everything, astropost.Input{EnvironmentID: f.env.ID, Title: "Safe"})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"../evil", "../../../../tmp/evil", "a/b", "x\x00y", "/etc/passwd", "..", ".", "evil.md", `a\b`, "UPPER", "%2e%2e"} {
		t.Run(strings.ReplaceAll(s, "/", "_"), func(t *testing.T) {
			_, err := f.svc.Create(ctx, store.Everything, astropost.Input{EnvironmentID: f.env.ID, Title: "Evil", Slug: s})
			storetest.WantKind(t, err, store.KindInvalid)
			s2 := s
			_, err = f.svc.Update(ctx, store.Everything, p.ID, astropost.Change{Slug: &s2})
			storetest.WantKind(t, err, store.KindInvalid)
		})
	}
	for _, h := range []string{"/public/hero.jpg", "../../../../etc/passwd.jpg", "http://example.com/a.jpg", "file:///etc/passwd", "hero.txt"} {
		_, err := f.svc.Create(ctx, store.Everything, astropost.Input{EnvironmentID: f.env.ID, Title: "Hero", HeroImage: h})
		storetest.WantKind(t, err, store.KindInvalid)
	}
	if got := f.files(t); len(got) != 1 {
		t.Errorf("files %v, want only safe.md", got)
	}
	for _, dir := range []string{f.project, filepath.Dir(f.dir), filepath.Dir(f.project)} {
		if _, err := os.Stat(filepath.Join(dir, "evil.md")); err == nil {
			t.Errorf("evil.md written into %s", dir)
		}
	}

	// A post's file replaced by a link out of the folder: the root will
	// not follow it, and the file outside is left alone.
	outside := filepath.Join(t.TempDir(), "secret.md")
	if err := os.WriteFile(outside, []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(f.dir, "safe.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(f.dir, "safe.md")); err != nil {
		t.Fatal(err)
	}
	body := "overwrite"
	_, err = f.svc.Update(ctx, store.Everything, p.ID, astropost.Change{Body: &body})
	storetest.WantKind(t, err, store.KindConflict)
	_, err = f.svc.File(ctx, store.Everything, p.ID)
	storetest.WantKind(t, err, store.KindConflict)
	if b, _ := os.ReadFile(outside); string(b) != "secret" {
		t.Errorf("the file outside the folder changed: %q", b)
	}
}

// failRows makes the row writes of astro_posts fail after the file was
// written, through a trigger added from a second connection: the store's
// own statement fails, as on a full disk.
func failRows(t *testing.T, db *store.DB, trigger string) func() {
	t.Helper()
	conn := storetest.Raw(t, db)
	create, drop := `CREATE TRIGGER fail_rows `+trigger+` ON astro_posts BEGIN SELECT RAISE(ABORT, 'disk I/O error (test)'); END`, `DROP TRIGGER fail_rows`
	if db.OnPostgres() {
		create = `CREATE OR REPLACE FUNCTION fail_rows() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN RAISE EXCEPTION 'disk I/O error (test)'; END $$;
			CREATE TRIGGER fail_rows ` + trigger + ` ON astro_posts FOR EACH ROW EXECUTE FUNCTION fail_rows()`
		drop = `DROP TRIGGER fail_rows ON astro_posts`
	}
	if _, err := conn.Exec(create); err != nil {
		t.Fatal(err)
	}
	return func() {
		if _, err := conn.Exec(drop); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRowFailureRestoresTheFile(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	p, err := f.svc.Create(ctx, store.Everything, astropost.Input{EnvironmentID: f.env.ID, Title: "Kept", Body: "old body"})
	if err != nil {
		t.Fatal(err)
	}
	before := f.read(t, "kept.md")

	stop := failRows(t, f.db, "BEFORE UPDATE OF file_sha256")
	// Create: the file is written, the row fails: no file, no row.
	if _, err := f.svc.Create(ctx, store.Everything, astropost.Input{EnvironmentID: f.env.ID, Title: "Doomed"}); err == nil {
		t.Fatal("create succeeded with the row failing")
	}
	if _, err := os.Stat(filepath.Join(f.dir, "doomed.md")); !os.IsNotExist(err) {
		t.Errorf("the file of a failed create is there: %v", err)
	}
	// Update in place: the old text is back.
	body := "new body"
	if _, err := f.svc.Update(ctx, store.Everything, p.ID, astropost.Change{Body: &body}); err == nil {
		t.Fatal("update succeeded with the row failing")
	}
	if got := f.read(t, "kept.md"); got != before {
		t.Errorf("after a failed update the file is\n%s\nwant\n%s", got, before)
	}
	// Rename: the new file goes, the old one stays.
	moved := "moved"
	if _, err := f.svc.Update(ctx, store.Everything, p.ID, astropost.Change{Slug: &moved}); err == nil {
		t.Fatal("rename succeeded with the row failing")
	}
	if got := f.files(t); len(got) != 1 || got[0] != "kept.md" || f.read(t, "kept.md") != before {
		t.Errorf("after a failed rename: %v", got)
	}
	stop()

	stop = failRows(t, f.db, "BEFORE DELETE")
	if err := f.svc.Delete(ctx, store.Everything, p.ID); err == nil {
		t.Fatal("delete succeeded with the row failing")
	}
	if got := f.read(t, "kept.md"); got != before {
		t.Errorf("after a failed delete the file is %q", got)
	}
	stop()
	list, total, err := f.svc.List(ctx, store.Everything, astropost.ListQuery{Page: store.Page{Page: 1, PerPage: 50}})
	if err != nil || total != 1 || list[0].Body != "old body" {
		t.Errorf("rows after the failures: %d %v", total, err)
	}
}

func TestFolderProblemsLeaveNoRow(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	if err := os.RemoveAll(f.dir); err != nil {
		t.Fatal(err)
	}
	_, err := f.svc.Create(ctx, store.Everything, astropost.Input{EnvironmentID: f.env.ID, Title: "Nowhere"})
	storetest.WantKind(t, err, store.KindConflict)
	if !strings.Contains(store.Message(err), f.dir) || !strings.Contains(store.Message(err), "does not exist") {
		t.Errorf("detail %q does not name the missing folder", store.Message(err))
	}
	if err := os.WriteFile(f.dir, []byte("a file"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = f.svc.Create(ctx, store.Everything, astropost.Input{EnvironmentID: f.env.ID, Title: "Nowhere"})
	storetest.WantKind(t, err, store.KindConflict)
	if err := os.Remove(f.dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(f.dir, 0o555); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() != 0 { // root writes into a read-only folder
		_, err = f.svc.Create(ctx, store.Everything, astropost.Input{EnvironmentID: f.env.ID, Title: "Read only"})
		storetest.WantKind(t, err, store.KindConflict)
	}
	if _, total, _ := f.svc.List(ctx, store.Everything, astropost.ListQuery{Page: store.Page{Page: 1, PerPage: 10}}); total != 0 && os.Geteuid() != 0 {
		t.Errorf("%d rows after failed writes", total)
	}
	// No Astro project at all.
	bare, err := f.db.CreateEnvironment(ctx, store.NewEnvironment{Name: "Bare", Slug: "bare"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.svc.Create(ctx, store.Everything, astropost.Input{EnvironmentID: bare.ID, Title: "x"})
	storetest.WantKind(t, err, store.KindConflict)
}

func TestImportAndReconcile(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(f.dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	starter := "---\ntitle: 'First post'\ndescription: 'Lorem ipsum'\npubDate: 'Jul 08 2022'\nheroImage: '../../assets/blog-placeholder-3.jpg'\n" +
		"author: Ann\ntags: [Go, Café]\n---\n\nBody text.\n"
	write("first-post.md", starter)
	// The starter keeps its images in src/assets.
	if err := os.MkdirAll(filepath.Join(f.project, "src", "assets"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.project, "src", "assets", "blog-placeholder-3.jpg"), []byte("\xff\xd8\xff"), 0o644); err != nil {
		t.Fatal(err)
	}
	write("using-mdx.mdx", "---\ntitle: Using MDX\ndescription: x\npubDate: 2024-06-01\n---\nimport X from './x';\n\n<X />\n")
	write("Bad Name.md", "---\ntitle: x\npubDate: 2024-01-01\n---\n")
	write("no-date.md", "---\ntitle: x\n---\n")
	write("notes.txt", "not a post")
	rep, err := f.svc.Import(ctx, store.Everything, f.env.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Imported) != 2 || len(rep.Skipped) != 2 {
		t.Fatalf("imported %+v skipped %+v", rep.Imported, rep.Skipped)
	}
	first, err := f.svc.Get(ctx, store.Everything, *rep.Imported[0].PostID)
	if err != nil {
		t.Fatal(err)
	}
	if first.Title != "First post" || !first.PubDate.Equal(time.Date(2022, 7, 8, 0, 0, 0, 0, time.UTC)) || len(first.Tags) != 2 ||
		first.HeroImage != "../../assets/blog-placeholder-3.jpg" || first.Body != "Body text.\n" {
		t.Errorf("imported %+v", first)
	}
	if f.read(t, "first-post.md") != starter {
		t.Error("import changed the file")
	}
	// Import again: nothing new.
	if rep, err := f.svc.Import(ctx, store.Everything, f.env.ID); err != nil || len(rep.Imported) != 0 {
		t.Errorf("second import %+v %v", rep, err)
	}
	// Nothing differs yet.
	rec, err := f.svc.Reconcile(ctx, store.Everything, f.env.ID, false, "", "")
	if err != nil || rec.InSync != 2 || len(rec.Differences) != 2 { // the two skipped files are orphans
		t.Fatalf("reconcile %+v %v", rec, err)
	}

	// Now: a file edited by hand, one removed, a tag renamed, a stray file.
	write("first-post.md", starter+"edited\n")
	if err := os.Remove(filepath.Join(f.dir, "using-mdx.mdx")); err != nil {
		t.Fatal(err)
	}
	p, err := f.svc.Create(ctx, store.Everything, astropost.Input{EnvironmentID: f.env.ID, Title: "Tagged", TagIDs: []int64{first.Tags[0].ID}})
	if err != nil {
		t.Fatal(err)
	}
	name := "Golang"
	if _, err := f.db.UpdateTag(ctx, first.Tags[0].ID, store.TagUpdate{Name: &name}); err != nil {
		t.Fatal(err)
	}
	write("stray.md", "---\ntitle: Stray\npubDate: 2025-01-01\n---\n")
	rec, err = f.svc.Reconcile(ctx, store.Everything, f.env.ID, false, "", "")
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]string{}
	for _, d := range rec.Differences {
		kinds[d.File] = d.Kind
	}
	want := map[string]string{"first-post.md": "file_changed", "using-mdx.mdx": "missing_file", "tagged.md": "row_changed",
		"stray.md": "orphan_file", "Bad Name.md": "orphan_file", "no-date.md": "orphan_file"}
	for file, kind := range want {
		if kinds[file] != kind {
			t.Errorf("%s: %q, want %q (all: %v)", file, kinds[file], kind, kinds)
		}
	}
	rec, err = f.svc.Reconcile(ctx, store.Everything, f.env.ID, true, astropost.OrphansImport, "")
	if err != nil {
		t.Fatal(err)
	}
	actions := map[string]string{}
	for _, d := range rec.Differences {
		actions[d.File] = d.Action
	}
	for file, action := range map[string]string{"first-post.md": "written", "using-mdx.mdx": "written", "tagged.md": "written", "stray.md": "imported"} {
		if actions[file] != action {
			t.Errorf("apply: %s %q, want %q", file, actions[file], action)
		}
	}
	if !strings.HasPrefix(actions["no-date.md"], "not imported: ") {
		t.Errorf("apply: no-date.md %q", actions["no-date.md"])
	}
	if fm := frontMatter(t, f.dir, "tagged.md", f.read(t, "tagged.md")); fm["tags"].([]any)[0] != "Golang" {
		t.Errorf("tagged.md tags %v after apply", fm["tags"])
	}
	if strings.Contains(f.read(t, "first-post.md"), "edited") {
		t.Error("apply left the hand edit; the database is what a restore chose")
	}
	if fm := frontMatter(t, f.dir, "first-post.md", f.read(t, "first-post.md")); fm["author"] != "Ann" || fm["title"] != "First post" {
		t.Errorf("rewritten first-post.md lost its keys: %v", fm)
	}
	f.read(t, "using-mdx.mdx")
	rec, err = f.svc.Reconcile(ctx, store.Everything, f.env.ID, false, "", "")
	if err != nil || rec.InSync != 4 || len(rec.Differences) != 2 {
		t.Errorf("after apply: %+v %v (want 4 in sync, the 2 unimportable files left)", rec, err)
	}
	if got, err := f.svc.Get(ctx, store.Everything, p.ID); err != nil || got.Tags[0].Name != "Golang" {
		t.Errorf("tagged post %+v %v", got, err)
	}
}

// Deleting orphan files needs the confirmation of a dry run that listed
// them: orphans=delete alone deleted a folder's README.md and CHANGELOG.md.
func TestReconcileDeleteNeedsConfirmation(t *testing.T) {
	f := newFixture(t)
	for _, n := range []string{"README.md", "CHANGELOG.md"} {
		if err := os.WriteFile(filepath.Join(f.dir, n), []byte("# keep me\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err := f.svc.Reconcile(ctx, store.Everything, f.env.ID, true, astropost.OrphansDelete, "")
	if store.KindOf(err) != store.KindInvalid || !strings.Contains(err.Error(), "confirm") || !strings.Contains(err.Error(), "README.md") {
		t.Fatalf("delete without confirmation: %v", err)
	}
	if _, err := os.Stat(filepath.Join(f.dir, "README.md")); err != nil {
		t.Fatalf("deleted without confirmation: %v", err)
	}
	dry, err := f.svc.Reconcile(ctx, store.Everything, f.env.ID, false, astropost.OrphansDelete, "")
	if err != nil || dry.DeleteConfirmation == "" || len(dry.Differences) != 2 {
		t.Fatalf("dry run: %+v %v", dry, err)
	}
	if err := os.WriteFile(filepath.Join(f.dir, "NEW.md"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Reconcile(ctx, store.Everything, f.env.ID, true, astropost.OrphansDelete, dry.DeleteConfirmation); store.KindOf(err) != store.KindInvalid {
		t.Fatalf("a file came since the dry run: %v", err)
	}
	os.Remove(filepath.Join(f.dir, "NEW.md"))
	rep, err := f.svc.Reconcile(ctx, store.Everything, f.env.ID, true, astropost.OrphansDelete, dry.DeleteConfirmation)
	if err != nil || len(rep.Differences) != 2 || rep.Differences[0].Action != "deleted" {
		t.Fatalf("confirmed: %+v %v", rep, err)
	}
}

// A planted symbolic link in the content folder blocks only its own post:
// its file, update and delete are a 409 saying it is a link, reconcile
// reports and skips it (and a link no post has) while the rest of the
// folder is reconciled.
func TestSymlinkPostFile(t *testing.T) {
	f := newFixture(t)
	victim, err := f.svc.Create(ctx, store.Everything, astropost.Input{EnvironmentID: f.env.ID, Title: "Victim", Body: "v"})
	if err != nil {
		t.Fatal(err)
	}
	other, err := f.svc.Create(ctx, store.Everything, astropost.Input{EnvironmentID: f.env.ID, Title: "Other", Body: "o"})
	if err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(t.TempDir(), "secret.md")
	if err := os.WriteFile(secret, []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	vf := filepath.Join(f.dir, victim.FileName())
	os.Remove(vf)
	if err := os.Symlink(secret, vf); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(f.dir, "planted.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.dir, other.FileName()), []byte("edited by hand\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := f.svc.Reconcile(ctx, store.Everything, f.env.ID, true, "", "")
	if err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	kinds := map[string]string{}
	for _, d := range rep.Differences {
		kinds[d.File] = d.Kind + " " + d.Action
	}
	if !strings.HasPrefix(kinds[victim.FileName()], "skipped_file skipped:") || !strings.HasPrefix(kinds["planted.md"], "skipped_file") ||
		kinds[other.FileName()] != "file_changed written" {
		t.Fatalf("reconcile: %v", kinds)
	}
	if b, _ := os.ReadFile(secret); string(b) != "secret\n" {
		t.Fatalf("the link's target was written: %q", b)
	}
	title := "New"
	_, ferr := f.svc.File(ctx, store.Everything, victim.ID)
	_, uerr := f.svc.Update(ctx, store.Everything, victim.ID, astropost.Change{Title: &title})
	derr := f.svc.Delete(ctx, store.Everything, victim.ID)
	for _, err := range []error{ferr, uerr, derr} {
		if store.KindOf(err) != store.KindConflict || !strings.Contains(err.Error(), "symbolic link") {
			t.Fatalf("the linked post: %v", err)
		}
	}
	if _, err := f.svc.Update(ctx, store.Everything, other.ID, astropost.Change{Title: &title}); err != nil {
		t.Fatalf("another post: %v", err)
	}
	if b, _ := os.ReadFile(secret); string(b) != "secret\n" {
		t.Fatalf("the link's target was written: %q", b)
	}
}

// A project saved before the server confined Astro projects (or outside
// the roots it names now) is judged again at each use: 409, and no file
// is read or written.
func TestAstroProjectJudgedAtUse(t *testing.T) {
	f := newFixture(t)
	p, err := f.svc.Create(ctx, store.Everything, astropost.Input{EnvironmentID: f.env.ID, Title: "Kept", Body: "k"})
	if err != nil {
		t.Fatal(err)
	}
	closed := astropost.New(f.db, environment.New(f.db), time.Now, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if _, err := closed.File(ctx, store.Everything, p.ID); store.KindOf(err) != store.KindConflict || !strings.Contains(err.Error(), "--astro-roots") {
		t.Fatalf("a project the server no longer allows: %v", err)
	}
}
