package store_test

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/copydesk/copydesk/store"
)

func mustEnv(t testing.TB, db *store.DB, slug string) *store.Environment {
	t.Helper()
	e, err := db.CreateEnvironment(context.Background(), store.NewEnvironment{Name: strings.ToUpper(slug), Slug: slug})
	if err != nil {
		t.Fatalf("CreateEnvironment %s: %v", slug, err)
	}
	return e
}

func TestCreateEnvironment(t *testing.T) {
	ctx := context.Background()

	t.Run("RoundTrip", func(t *testing.T) {
		db, _ := openDB(t)
		cfg := store.EnvironmentConfig{
			WordPress: &store.WordPressConfig{BaseURL: "https://blog.example.com", CredentialID: ptr(int64(3)), DefaultStatus: "draft"},
			Astro:     &store.AstroConfig{ProjectPath: "/srv/site", ContentDir: "src/content/blog"},
			Language:  "de", Timezone: "Europe/Berlin", DefaultAgentID: ptr(int64(7)),
		}
		e, err := db.CreateEnvironment(ctx, store.NewEnvironment{Name: "Blog", Slug: "blog", Description: "main", Configuration: cfg})
		if err != nil {
			t.Fatal(err)
		}
		got, err := db.EnvironmentByID(ctx, e.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Name != "Blog" || got.Slug != "blog" || got.Description != "main" || !got.CreatedAt.Equal(t0) {
			t.Errorf("EnvironmentByID = %+v", got)
		}
		if !reflect.DeepEqual(got.Configuration, cfg) {
			t.Errorf("configuration = %+v, want %+v", got.Configuration, cfg)
		}
	})

	t.Run("DuplicateSlugConflict", func(t *testing.T) {
		db, _ := openDB(t)
		mustEnv(t, db, "taken")
		_, err := db.CreateEnvironment(ctx, store.NewEnvironment{Name: "Other", Slug: "taken"})
		wantKind(t, err, store.KindConflict)
		if !strings.Contains(store.Message(err), "slug") {
			t.Errorf("message %q does not name the slug", store.Message(err))
		}
	})

	t.Run("UpdateToTakenSlugConflict", func(t *testing.T) {
		db, _ := openDB(t)
		mustEnv(t, db, "taken")
		e := mustEnv(t, db, "free")
		_, err := db.UpdateEnvironment(ctx, e.ID, store.EnvironmentUpdate{Slug: ptr("taken")})
		wantKind(t, err, store.KindConflict)
		if got, _ := db.EnvironmentByID(ctx, e.ID); got.Slug != "free" {
			t.Errorf("slug = %q after a refused update", got.Slug)
		}
	})

	t.Run("UpdateOK", func(t *testing.T) {
		db, clk := openDB(t)
		e := mustEnv(t, db, "old")
		clk.Advance(time.Minute)
		cfg := store.EnvironmentConfig{Language: "fr", Timezone: "UTC"}
		got, err := db.UpdateEnvironment(ctx, e.ID, store.EnvironmentUpdate{Name: ptr("New"), Slug: ptr("new"), Configuration: &cfg})
		if err != nil {
			t.Fatal(err)
		}
		if got.Name != "New" || got.Slug != "new" || got.Configuration.Language != "fr" || !got.UpdatedAt.Equal(clk.Now()) {
			t.Errorf("UpdateEnvironment = %+v", got)
		}
	})

	t.Run("UnknownNotFound", func(t *testing.T) {
		db, _ := openDB(t)
		_, err := db.EnvironmentByID(ctx, 9)
		wantKind(t, err, store.KindNotFound)
		_, err = db.UpdateEnvironment(ctx, 9, store.EnvironmentUpdate{Name: ptr("x")})
		wantKind(t, err, store.KindNotFound)
		wantKind(t, db.DeleteEnvironment(ctx, 9), store.KindNotFound)
	})
}

func TestSetUserEnvironments(t *testing.T) {
	ctx := context.Background()

	t.Run("ReplacesDedupedAndSorted", func(t *testing.T) {
		db, _ := openDB(t)
		u := mustUser(t, db, "member", store.RoleEditor)
		a, b, c := mustEnv(t, db, "a"), mustEnv(t, db, "b"), mustEnv(t, db, "c")
		if _, err := db.SetUserEnvironments(ctx, u.ID, []int64{a.ID}); err != nil {
			t.Fatal(err)
		}
		got, err := db.SetUserEnvironments(ctx, u.ID, []int64{c.ID, b.ID, c.ID})
		if err != nil {
			t.Fatal(err)
		}
		want := []int64{b.ID, c.ID}
		if !slices.Equal(got, want) {
			t.Errorf("SetUserEnvironments = %v, want %v", got, want)
		}
		if ids, _ := db.UserEnvironmentIDs(ctx, u.ID); !slices.Equal(ids, want) {
			t.Errorf("UserEnvironmentIDs = %v, want %v", ids, want)
		}
		if has, _ := db.UserHasEnvironment(ctx, u.ID, a.ID); has {
			t.Error("the replaced grant is still there")
		}
	})

	t.Run("EmptyClears", func(t *testing.T) {
		db, _ := openDB(t)
		u := mustUser(t, db, "member", store.RoleEditor)
		a := mustEnv(t, db, "a")
		if _, err := db.SetUserEnvironments(ctx, u.ID, []int64{a.ID}); err != nil {
			t.Fatal(err)
		}
		if _, err := db.SetUserEnvironments(ctx, u.ID, nil); err != nil {
			t.Fatal(err)
		}
		if ids, _ := db.UserEnvironmentIDs(ctx, u.ID); len(ids) != 0 {
			t.Errorf("UserEnvironmentIDs = %v, want none", ids)
		}
	})

	t.Run("UnknownIDsInvalidAndNothingChanges", func(t *testing.T) {
		db, _ := openDB(t)
		u := mustUser(t, db, "member", store.RoleEditor)
		a, b := mustEnv(t, db, "a"), mustEnv(t, db, "b")
		if _, err := db.SetUserEnvironments(ctx, u.ID, []int64{a.ID}); err != nil {
			t.Fatal(err)
		}
		_, err := db.SetUserEnvironments(ctx, u.ID, []int64{b.ID, 98, 99})
		wantKind(t, err, store.KindInvalid)
		msg := store.Message(err)
		if !strings.HasPrefix(msg, "environment_ids:") || !strings.HasSuffix(msg, " 98, 99") {
			t.Errorf("message %q should name environment_ids and exactly the unknown ids 98, 99", msg)
		}
		if ids, _ := db.UserEnvironmentIDs(ctx, u.ID); !slices.Equal(ids, []int64{a.ID}) {
			t.Errorf("grants after a refused SetUserEnvironments = %v, want %v", ids, []int64{a.ID})
		}
	})

	t.Run("UnknownUserNotFound", func(t *testing.T) {
		db, _ := openDB(t)
		a := mustEnv(t, db, "a")
		_, err := db.SetUserEnvironments(ctx, 1234, []int64{a.ID})
		wantKind(t, err, store.KindNotFound)
	})

	t.Run("DeletingEnvironmentRemovesGrants", func(t *testing.T) {
		db, _ := openDB(t)
		u := mustUser(t, db, "member", store.RoleEditor)
		v := mustUser(t, db, "member2", store.RoleViewer)
		a, b := mustEnv(t, db, "a"), mustEnv(t, db, "b")
		for _, id := range []int64{u.ID, v.ID} {
			if _, err := db.SetUserEnvironments(ctx, id, []int64{a.ID, b.ID}); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.DeleteEnvironment(ctx, a.ID); err != nil {
			t.Fatal(err)
		}
		for _, id := range []int64{u.ID, v.ID} {
			if ids, _ := db.UserEnvironmentIDs(ctx, id); !slices.Equal(ids, []int64{b.ID}) {
				t.Errorf("user %d grants after deleting environment %d = %v, want [%d]", id, a.ID, ids, b.ID)
			}
		}
		// The grant row itself is gone, not just hidden by a join.
		var n int
		if err := rawDB(t, db.Path()).QueryRow(`SELECT COUNT(*) FROM user_environments WHERE environment_id = ?`, a.ID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("%d grant rows of the deleted environment remain: foreign keys are off for the writer", n)
		}
	})
}

func TestListEnvironments(t *testing.T) {
	ctx := context.Background()
	db, _ := openDB(t)
	u := mustUser(t, db, "member", store.RoleViewer)
	names := []struct{ name, slug string }{{"beta", "beta"}, {"Alpha", "alpha"}, {"gamma_1", "gamma-1"}, {"gammax1", "gammax1"}}
	ids := map[string]int64{}
	for _, n := range names {
		e, err := db.CreateEnvironment(ctx, store.NewEnvironment{Name: n.name, Slug: n.slug})
		if err != nil {
			t.Fatal(err)
		}
		ids[n.slug] = e.ID
	}
	if _, err := db.SetUserEnvironments(ctx, u.ID, []int64{ids["beta"], ids["gammax1"]}); err != nil {
		t.Fatal(err)
	}
	all := store.Page{Page: 1, PerPage: 50}
	tests := []struct {
		name      string
		filter    store.EnvironmentFilter
		want      []string
		wantTotal int
	}{
		{"AllByNameIgnoringCase", store.EnvironmentFilter{Page: all}, []string{"alpha", "beta", "gamma-1", "gammax1"}, 4},
		{"VisibleTo", store.EnvironmentFilter{VisibleTo: u.ID, Page: all}, []string{"beta", "gammax1"}, 2},
		{"QUnderscoreIsLiteral", store.EnvironmentFilter{Q: "gamma_", Page: all}, []string{"gamma-1"}, 1},
		{"QMatchesSlug", store.EnvironmentFilter{Q: "ALPHA", Page: all}, []string{"alpha"}, 1},
		{"VisibleToAndQ", store.EnvironmentFilter{VisibleTo: u.ID, Q: "gamma", Page: all}, []string{"gammax1"}, 1},
		{"Paged", store.EnvironmentFilter{Page: store.Page{Page: 2, PerPage: 3}}, []string{"gammax1"}, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			envs, total, err := db.ListEnvironments(ctx, tt.filter)
			if err != nil {
				t.Fatal(err)
			}
			got := []string{}
			for _, e := range envs {
				got = append(got, e.Slug)
			}
			if !slices.Equal(got, tt.want) || total != tt.wantTotal {
				t.Errorf("ListEnvironments = %v (total %d), want %v (total %d)", got, total, tt.want, tt.wantTotal)
			}
		})
	}
}

func TestEnvironmentConfigNormalize(t *testing.T) {
	wp := func(base string) store.EnvironmentConfig {
		return store.EnvironmentConfig{WordPress: &store.WordPressConfig{BaseURL: base}}
	}
	astro := func(project, content string) store.EnvironmentConfig {
		return store.EnvironmentConfig{Astro: &store.AstroConfig{ProjectPath: project, ContentDir: content}}
	}

	ok := []struct {
		name  string
		in    store.EnvironmentConfig
		check func(t *testing.T, c store.EnvironmentConfig)
	}{
		{"Defaults", store.EnvironmentConfig{}, func(t *testing.T, c store.EnvironmentConfig) {
			if c.Language != "en" || c.Timezone != "UTC" || c.WordPress != nil || c.Astro != nil {
				t.Errorf("got %+v, want language en, timezone UTC and nothing else", c)
			}
		}},
		{"KeepsValidLanguageAndZone", store.EnvironmentConfig{Language: "pt-BR", Timezone: "America/Sao_Paulo"}, func(t *testing.T, c store.EnvironmentConfig) {
			if c.Language != "pt-BR" || c.Timezone != "America/Sao_Paulo" {
				t.Errorf("got %q %q", c.Language, c.Timezone)
			}
		}},
		{"WordPressTrailingSlashDropped", wp("https://example.com/"), func(t *testing.T, c store.EnvironmentConfig) {
			if c.WordPress.BaseURL != "https://example.com" || c.WordPress.DefaultStatus != "draft" {
				t.Errorf("got %+v", c.WordPress)
			}
		}},
		{"WordPressSubpathTrimmed", wp("  http://localhost:8080/blog//  "), func(t *testing.T, c store.EnvironmentConfig) {
			if c.WordPress.BaseURL != "http://localhost:8080/blog" {
				t.Errorf("BaseURL = %q", c.WordPress.BaseURL)
			}
		}},
		{"WordPressStatusKept", store.EnvironmentConfig{WordPress: &store.WordPressConfig{BaseURL: "https://x.io", DefaultStatus: "publish", CredentialID: ptr(int64(1))}},
			func(t *testing.T, c store.EnvironmentConfig) {
				if c.WordPress.DefaultStatus != "publish" {
					t.Errorf("DefaultStatus = %q", c.WordPress.DefaultStatus)
				}
			}},
		{"AstroPathsCleaned", astro("/srv/site/./blog/../", "./src//content/posts/"), func(t *testing.T, c store.EnvironmentConfig) {
			if c.Astro.ProjectPath != "/srv/site" || c.Astro.ContentDir != "src/content/posts" {
				t.Errorf("got %+v", c.Astro)
			}
		}},
		{"AstroContentDirDefault", astro("/srv/site", ""), func(t *testing.T, c store.EnvironmentConfig) {
			if c.Astro.ContentDir != "src/content/blog" {
				t.Errorf("ContentDir = %q", c.Astro.ContentDir)
			}
		}},
		{"AstroDotsInsideNameAllowed", astro("/srv/site", "..drafts/x/../y"), func(t *testing.T, c store.EnvironmentConfig) {
			if c.Astro.ContentDir != "..drafts/y" {
				t.Errorf("ContentDir = %q", c.Astro.ContentDir)
			}
		}},
	}
	for _, tt := range ok {
		t.Run("OK/"+tt.name, func(t *testing.T) {
			c := tt.in
			if err := c.Normalize(); err != nil {
				t.Fatalf("Normalize: %v", err)
			}
			tt.check(t, c)
		})
	}

	bad := []struct {
		name  string
		in    store.EnvironmentConfig
		field string
	}{
		{"LanguageUpperCase", store.EnvironmentConfig{Language: "EN"}, "configuration.language"},
		{"LanguageWord", store.EnvironmentConfig{Language: "english"}, "configuration.language"},
		{"LanguageOneLetter", store.EnvironmentConfig{Language: "e"}, "configuration.language"},
		{"TimezoneUnknown", store.EnvironmentConfig{Timezone: "Mars/Olympus_Mons"}, "configuration.timezone"},
		{"TimezoneLocal", store.EnvironmentConfig{Timezone: "Local"}, "configuration.timezone"},
		{"TimezonePath", store.EnvironmentConfig{Timezone: "../../etc/passwd"}, "configuration.timezone"},
		{"AgentIDZero", store.EnvironmentConfig{DefaultAgentID: ptr(int64(0))}, "configuration.default_agent_id"},
		{"ArchetypeIDNegative", store.EnvironmentConfig{DefaultArchetypeID: ptr(int64(-1))}, "configuration.default_archetype_id"},
		{"WordPressEmpty", wp(""), "configuration.wordpress.base_url"},
		{"WordPressFTP", wp("ftp://example.com"), "configuration.wordpress.base_url"},
		{"WordPressNoScheme", wp("example.com"), "configuration.wordpress.base_url"},
		{"WordPressJavascript", wp("javascript:alert(1)"), "configuration.wordpress.base_url"},
		{"WordPressMissingHost", wp("https://"), "configuration.wordpress.base_url"},
		{"WordPressMissingHostWithPath", wp("https:///wp"), "configuration.wordpress.base_url"},
		{"WordPressQuery", wp("https://example.com/?p=1"), "configuration.wordpress.base_url"},
		{"WordPressFragment", wp("https://example.com/#top"), "configuration.wordpress.base_url"},
		{"WordPressUserInfo", wp("https://user:pass@example.com"), "configuration.wordpress.base_url"},
		{"WordPressUserOnly", wp("https://user@example.com"), "configuration.wordpress.base_url"},
		{"WordPressSpaceInHost", wp("https://exa mple.com"), "configuration.wordpress.base_url"},
		{"WordPressCredentialZero", store.EnvironmentConfig{WordPress: &store.WordPressConfig{BaseURL: "https://x.io", CredentialID: ptr(int64(0))}}, "configuration.wordpress.credential_id"},
		{"WordPressStatusUnknown", store.EnvironmentConfig{WordPress: &store.WordPressConfig{BaseURL: "https://x.io", DefaultStatus: "published"}}, "configuration.wordpress.default_status"},
		{"AstroProjectMissing", astro("", "src"), "configuration.astro.project_path"},
		{"AstroProjectRelative", astro("site/blog", "src"), "configuration.astro.project_path"},
		{"AstroContentParent", astro("/srv/site", ".."), "configuration.astro.content_dir"},
		{"AstroContentEscapes", astro("/srv/site", "../other/src"), "configuration.astro.content_dir"},
		{"AstroContentEscapesAfterClean", astro("/srv/site", "src/../../other"), "configuration.astro.content_dir"},
		{"AstroContentAbsolute", astro("/srv/site", "/etc"), "configuration.astro.content_dir"},
	}
	for _, tt := range bad {
		t.Run("Invalid/"+tt.name, func(t *testing.T) {
			c := tt.in
			err := c.Normalize()
			wantKind(t, err, store.KindInvalid)
			if !strings.HasPrefix(store.Message(err), tt.field+":") {
				t.Errorf("message %q does not start with %q", store.Message(err), tt.field+":")
			}
		})
	}
}

// TestEnvironmentConfigNormalizeWordPressEdges: base URLs nothing could be
// published to are refused.
func TestEnvironmentConfigNormalizeWordPressEdges(t *testing.T) {
	t.Run("PortWithoutHostRefused", func(t *testing.T) {
		c := store.EnvironmentConfig{WordPress: &store.WordPressConfig{BaseURL: "http://:8080"}}
		if err := c.Normalize(); err == nil {
			t.Fatal("accepted http://:8080, which has no host name")
		}
	})
	t.Run("EmptyQueryNotKept", func(t *testing.T) {
		c := store.EnvironmentConfig{WordPress: &store.WordPressConfig{BaseURL: "https://example.com/?"}}
		if err := c.Normalize(); err == nil && strings.Contains(c.WordPress.BaseURL, "?") {
			t.Fatalf("kept a bare '?': %q", c.WordPress.BaseURL)
		}
	})
}
