package environment_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/copydesk/copydesk/server/environment"
	"github.com/copydesk/copydesk/store"
	"github.com/copydesk/copydesk/store/storetest"
)

// The scopes of the tests: an admin, a viewer granted some environments,
// and one granted none.
var (
	admin   = store.NewScope(1, true, nil)
	nobody  = store.NewScope(3, false, nil)
	granted = func(ids ...int64) store.Scope { return store.NewScope(2, false, ids) }
)

func newService(t *testing.T) (*environment.Service, *store.DB) {
	db, _ := storetest.OpenDB(t)
	return environment.New(db), db
}

func mustCreate(t *testing.T, s *environment.Service, n store.NewEnvironment) *store.Environment {
	t.Helper()
	e, err := s.Create(context.Background(), admin, n)
	if err != nil {
		t.Fatalf("Create %q: %v", n.Name, err)
	}
	return e
}

func TestCreate(t *testing.T) {
	ctx := context.Background()
	s, _ := newService(t)

	t.Run("SlugFromName", func(t *testing.T) {
		first := mustCreate(t, s, store.NewEnvironment{Name: "  My Blog!  ", Description: " food "})
		if first.Name != "My Blog!" || first.Slug != "my-blog" || first.Description != "food" {
			t.Fatalf("got %+v", first)
		}
		if c := first.Configuration; c.Language != "en" || c.Timezone != "UTC" {
			t.Fatalf("configuration defaults not applied: %+v", c)
		}
		for _, want := range []string{"my-blog-2", "my-blog-3"} {
			if e := mustCreate(t, s, store.NewEnvironment{Name: "My Blog"}); e.Slug != want {
				t.Fatalf("slug %q, want %q", e.Slug, want)
			}
		}
	})
	t.Run("GivenSlugTaken", func(t *testing.T) {
		_, err := s.Create(ctx, admin, store.NewEnvironment{Name: "Other", Slug: "my-blog"})
		storetest.WantKind(t, err, store.KindConflict)
	})
	refused := []struct {
		name string
		in   store.NewEnvironment
		kind store.Kind
		text string
	}{
		{"BlankName", store.NewEnvironment{Name: "   "}, store.KindInvalid, "name:"},
		{"LongName", store.NewEnvironment{Name: strings.Repeat("é", 101)}, store.KindInvalid, "name: must be at most 100"},
		{"LongDescription", store.NewEnvironment{Name: "x", Description: strings.Repeat("d", 2001)}, store.KindInvalid, "description:"},
		{"ControlInName", store.NewEnvironment{Name: "My\x1b[2JBlog"}, store.KindInvalid, "name: must not contain control characters"},
		{"LineBreakInName", store.NewEnvironment{Name: "My\nBlog"}, store.KindInvalid, "name: must not contain control characters"},
		{"BidiOverrideInName", store.NewEnvironment{Name: "Blog \u202egnp.exe"}, store.KindInvalid, "name: must not contain bidirectional"},
		{"ControlInDescription", store.NewEnvironment{Name: "x", Description: "a\x00b"}, store.KindInvalid, "description: must not contain control characters"},
		{"BadSlug", store.NewEnvironment{Name: "x", Slug: "Not A Slug"}, store.KindInvalid, "slug:"},
		{"BadConfiguration", store.NewEnvironment{Name: "x", Configuration: store.EnvironmentConfig{Timezone: "Mars/Olympus"}}, store.KindInvalid, "configuration.timezone"},
	}
	for _, c := range refused {
		t.Run("Refused/"+c.name, func(t *testing.T) {
			_, err := s.Create(ctx, admin, c.in)
			storetest.WantKind(t, err, c.kind)
			if !strings.Contains(store.Message(err), c.text) {
				t.Fatalf("message %q does not name %q", store.Message(err), c.text)
			}
		})
	}
	t.Run("NotAdmin", func(t *testing.T) {
		_, err := s.Create(ctx, granted(), store.NewEnvironment{Name: "Mine"})
		storetest.WantKind(t, err, store.KindForbidden)
	})
	if _, total, err := s.List(ctx, admin, "", store.Page{Page: 1, PerPage: 50}); err != nil || total != 3 {
		t.Fatalf("refused creates left rows: %d environments, %v", total, err)
	}
}

// TestScope: an environment outside the caller's scope does not exist for
// them, in a lookup and in a list.
func TestScope(t *testing.T) {
	ctx := context.Background()
	s, _ := newService(t)
	a := mustCreate(t, s, store.NewEnvironment{Name: "Alpha"})
	b := mustCreate(t, s, store.NewEnvironment{Name: "Beta"})

	for _, c := range []struct {
		name string
		sc   store.Scope
		id   int64
		ok   bool
	}{
		{"AdminAny", admin, b.ID, true},
		{"Granted", granted(a.ID), a.ID, true},
		{"NotGranted", granted(a.ID), b.ID, false},
		{"NoGrants", nobody, a.ID, false},
		{"ZeroScope", store.Scope{}, a.ID, false},
		{"Missing", admin, 9999, false},
	} {
		t.Run("Get/"+c.name, func(t *testing.T) {
			e, err := s.Get(ctx, c.sc, c.id)
			if c.ok {
				if err != nil || e.ID != c.id {
					t.Fatalf("got %v, %v", e, err)
				}
				return
			}
			storetest.WantKind(t, err, store.KindNotFound)
			if store.Message(err) != "environment not found" {
				t.Fatalf("message %q tells more than not found", store.Message(err))
			}
		})
	}
	for _, c := range []struct {
		name string
		sc   store.Scope
		q    string
		want []string
	}{
		{"Admin", admin, "", []string{"alpha", "beta"}},
		{"Granted", granted(b.ID), "", []string{"beta"}},
		{"GrantedQueryOutside", granted(b.ID), "alp", nil},
		{"NoGrants", nobody, "", nil},
	} {
		t.Run("List/"+c.name, func(t *testing.T) {
			list, total, err := s.List(ctx, c.sc, c.q, store.Page{Page: 1, PerPage: 50})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range list {
				got = append(got, e.Slug)
			}
			if !slices.Equal(got, c.want) || total != len(c.want) {
				t.Fatalf("got %v (total %d), want %v", got, total, c.want)
			}
		})
	}
}

// TestFor: an environment_id in a request that names no environment the
// scope sees is the request's mistake, named by its field, and says no
// more than a missing one would.
func TestFor(t *testing.T) {
	ctx := context.Background()
	s, _ := newService(t)
	a := mustCreate(t, s, store.NewEnvironment{Name: "Alpha"})
	b := mustCreate(t, s, store.NewEnvironment{Name: "Beta"})

	if e, err := environment.For(ctx, s, granted(a.ID), a.ID); err != nil || e.ID != a.ID {
		t.Fatalf("granted: %v, %v", e, err)
	}
	for _, c := range []struct {
		name string
		sc   store.Scope
		id   int64
		want string
	}{
		{"NotGranted", granted(a.ID), b.ID, fmt.Sprintf("environment_id: no environment with id %d", b.ID)},
		{"Missing", admin, 9999, "environment_id: no environment with id 9999"},
		{"Zero", admin, 0, "environment_id: is required"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := environment.For(ctx, s, c.sc, c.id)
			storetest.WantKind(t, err, store.KindInvalid)
			if store.Message(err) != c.want {
				t.Fatalf("message %q, want %q", store.Message(err), c.want)
			}
		})
	}
}

func TestUpdate(t *testing.T) {
	ctx := context.Background()
	s, _ := newService(t)
	e := mustCreate(t, s, store.NewEnvironment{Name: "Blog", Configuration: store.EnvironmentConfig{Language: "fr"}})
	mustCreate(t, s, store.NewEnvironment{Name: "Taken"})

	t.Run("Partial", func(t *testing.T) {
		got, err := s.Update(ctx, admin, e.ID, store.EnvironmentUpdate{Description: ptr("  recipes ")})
		if err != nil || got.Description != "recipes" || got.Name != "Blog" || got.Configuration.Language != "fr" {
			t.Fatalf("got %+v, %v", got, err)
		}
	})
	t.Run("ConfigurationNormalized", func(t *testing.T) {
		got, err := s.Update(ctx, admin, e.ID, store.EnvironmentUpdate{Configuration: &store.EnvironmentConfig{Timezone: "Europe/Berlin"}})
		if err != nil || got.Configuration.Language != "en" || got.Configuration.Timezone != "Europe/Berlin" {
			t.Fatalf("got %+v, %v", got, err)
		}
	})
	for _, c := range []struct {
		name string
		sc   store.Scope
		id   int64
		up   store.EnvironmentUpdate
		kind store.Kind
	}{
		{"BlankName", admin, e.ID, store.EnvironmentUpdate{Name: ptr(" ")}, store.KindInvalid},
		{"BadSlug", admin, e.ID, store.EnvironmentUpdate{Slug: ptr("Bad Slug")}, store.KindInvalid},
		{"SlugTaken", admin, e.ID, store.EnvironmentUpdate{Slug: ptr("taken")}, store.KindConflict},
		{"BadConfiguration", admin, e.ID, store.EnvironmentUpdate{Configuration: &store.EnvironmentConfig{Language: "english"}}, store.KindInvalid},
		// A missing environment is reported before the broken rule.
		{"MissingBeforeInvalid", admin, 9999, store.EnvironmentUpdate{Slug: ptr("Bad Slug")}, store.KindNotFound},
		{"Granted", granted(e.ID), e.ID, store.EnvironmentUpdate{Name: ptr("Mine")}, store.KindForbidden},
	} {
		t.Run("Refused/"+c.name, func(t *testing.T) {
			_, err := s.Update(ctx, c.sc, c.id, c.up)
			storetest.WantKind(t, err, c.kind)
		})
	}
	if got, err := s.Get(ctx, admin, e.ID); err != nil || got.Name != "Blog" || got.Slug != "blog" || got.Configuration.Timezone != "Europe/Berlin" {
		t.Fatalf("a refused update changed the environment: %+v, %v", got, err)
	}
}

func TestSetConfiguration(t *testing.T) {
	ctx := context.Background()
	s, _ := newService(t)
	e := mustCreate(t, s, store.NewEnvironment{Name: "Blog", Configuration: store.EnvironmentConfig{
		WordPress: &store.WordPressConfig{BaseURL: "https://blog.example"}, Language: "de"}})

	project := astroFolder(t, `{"devDependencies":{"astro":"5"}}`)
	s.ConfineAstro(environment.AstroPlaces{Roots: []string{os.TempDir()}})
	cfg, err := s.SetConfiguration(ctx, admin, e.ID, store.EnvironmentConfig{Astro: &store.AstroConfig{ProjectPath: project}})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.WordPress != nil || cfg.Language != "en" || cfg.Astro.ContentDir != "src/content/blog" {
		t.Fatalf("the configuration was not replaced as a whole: %+v", cfg)
	}
	_, err = s.SetConfiguration(ctx, granted(e.ID), e.ID, store.EnvironmentConfig{})
	storetest.WantKind(t, err, store.KindForbidden)
}

func TestDelete(t *testing.T) {
	ctx := context.Background()
	s, _ := newService(t)
	e := mustCreate(t, s, store.NewEnvironment{Name: "Blog"})

	storetest.WantKind(t, s.Delete(ctx, granted(e.ID), e.ID), store.KindForbidden)
	if err := s.Delete(ctx, admin, e.ID); err != nil {
		t.Fatal(err)
	}
	storetest.WantKind(t, s.Delete(ctx, admin, e.ID), store.KindNotFound)
	_, err := s.Get(ctx, admin, e.ID)
	storetest.WantKind(t, err, store.KindNotFound)
}

// astroFolder makes a folder with a package.json (none when pkg is "").
func astroFolder(t *testing.T, pkg string) string {
	t.Helper()
	dir := t.TempDir()
	if pkg != "" {
		if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(pkg), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// An Astro project is a folder the server writes and deletes *.md files
// in: an admin may name only an existing Astro project under the folders
// the operator allows (--astro-roots), never the data directory; the
// configuration is refused when saved (422 naming the field). /etc was
// accepted.
func TestAstroConfined(t *testing.T) {
	ctx := context.Background()
	s, _ := newService(t)
	e := mustCreate(t, s, store.NewEnvironment{Name: "Blog"})
	set := func(path string) error {
		_, err := s.SetConfiguration(ctx, admin, e.ID, store.EnvironmentConfig{Astro: &store.AstroConfig{ProjectPath: path}})
		return err
	}
	project := astroFolder(t, `{"dependencies":{"astro":"^5.0.0"}}`)
	if err := set(project); err == nil || !strings.Contains(err.Error(), "--astro-roots") {
		t.Fatalf("no roots: %v", err)
	}
	roots := t.TempDir()
	data := filepath.Join(roots, "data")
	inRoots := filepath.Join(roots, "site")
	configOnly := filepath.Join(roots, "other")
	plain := filepath.Join(roots, "plain")
	for _, d := range []string{data, inRoots, configOnly, plain} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(data, "package.json"), []byte(`{"dependencies":{"astro":"5"}}`), 0o644)
	os.WriteFile(filepath.Join(inRoots, "package.json"), []byte(`{"dependencies":{"astro":"5"}}`), 0o644)
	os.WriteFile(filepath.Join(configOnly, "astro.config.mjs"), []byte(`export default {}`), 0o644)
	os.WriteFile(filepath.Join(plain, "package.json"), []byte(`{"dependencies":{"react":"18"}}`), 0o644)
	link := filepath.Join(roots, "link")
	if err := os.Symlink("/etc", link); err != nil {
		t.Fatal(err)
	}
	s.ConfineAstro(environment.AstroPlaces{Roots: []string{roots}, DataDir: data})
	for _, c := range []struct {
		name, path, want string
	}{
		{"Etc", "/etc", "under one of the folders"},
		{"OutsideRoots", project, "under one of the folders"},
		{"Missing", filepath.Join(roots, "nope"), "not an existing folder"},
		{"DataDir", data, "data directory"},
		{"HoldsDataDir", roots, "data directory"},
		{"SymlinkOut", link, "under one of the folders"},
		{"NotAstro", plain, "not an Astro project"},
	} {
		err := set(c.path)
		if store.KindOf(err) != store.KindInvalid || !strings.Contains(err.Error(), "configuration.astro.project_path") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want 422 saying %q", c.name, err, c.want)
		}
	}
	for _, ok := range []string{inRoots, configOnly} {
		if err := set(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}
