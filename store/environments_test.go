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
		if ids, _ := db.UserEnvironmentIDs(ctx, u.ID); slices.Contains(ids, a.ID) {
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
		if err := rawOf(t, db).QueryRow(`SELECT COUNT(*) FROM user_environments WHERE environment_id = ?`, a.ID).Scan(&n); err != nil {
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
	names := []struct{ name, slug string }{{"beta", "beta"}, {"Alpha", "alpha"}, {"gamma_1", "gamma-1"}, {"gammax1", "gammax1"}}
	ids := map[string]int64{}
	for _, n := range names {
		e, err := db.CreateEnvironment(ctx, store.NewEnvironment{Name: n.name, Slug: n.slug})
		if err != nil {
			t.Fatal(err)
		}
		ids[n.slug] = e.ID
	}
	granted := store.NewScope(7, false, []int64{ids["beta"], ids["gammax1"]})
	all := store.Page{Page: 1, PerPage: 50}
	tests := []struct {
		name      string
		filter    store.EnvironmentFilter
		want      []string
		wantTotal int
	}{
		{"AllByNameIgnoringCase", store.EnvironmentFilter{Scope: store.Everything, Page: all}, []string{"alpha", "beta", "gamma-1", "gammax1"}, 4},
		{"Granted", store.EnvironmentFilter{Scope: granted, Page: all}, []string{"beta", "gammax1"}, 2},
		{"NothingGranted", store.EnvironmentFilter{Scope: store.NewScope(7, false, nil), Page: all}, []string{}, 0},
		{"ZeroScopeSeesNothing", store.EnvironmentFilter{Page: all}, []string{}, 0},
		{"QUnderscoreIsLiteral", store.EnvironmentFilter{Scope: store.Everything, Q: "gamma_", Page: all}, []string{"gamma-1"}, 1},
		{"QMatchesSlug", store.EnvironmentFilter{Scope: store.Everything, Q: "ALPHA", Page: all}, []string{"alpha"}, 1},
		{"GrantedAndQ", store.EnvironmentFilter{Scope: granted, Q: "gamma", Page: all}, []string{"gammax1"}, 1},
		{"Paged", store.EnvironmentFilter{Scope: store.Everything, Page: store.Page{Page: 2, PerPage: 3}}, []string{"gammax1"}, 4},
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
