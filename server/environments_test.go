package server_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/copydesk/copydesk/store"
)

func TestEnvironments(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, admin := e.user(t, "admin", store.RoleAdmin)
	viewer, viewerTok := e.user(t, "viewer", store.RoleViewer)

	create := func(body any) resp { return e.do(t, "POST", "/api/environments", admin, body) }
	cafe := t.TempDir()
	if err := os.WriteFile(filepath.Join(cafe, "astro.config.ts"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r := create(map[string]any{"name": "  Café Blog  ", "description": "food", "configuration": map[string]any{
		"wordpress": map[string]any{"base_url": "https://cafe.example.com/"},
		"astro":     map[string]any{"project_path": cafe},
		"language":  "fr", "timezone": "Europe/Paris",
	}})
	if r.Code != 201 {
		t.Fatalf("create: %d %s", r.Code, r.Body)
	}
	first := r.Data()
	cfg := first["configuration"].(map[string]any)
	wp := cfg["wordpress"].(map[string]any)
	astro := cfg["astro"].(map[string]any)
	if first["name"] != "Café Blog" || first["slug"] != "caf-blog" || wp["base_url"] != "https://cafe.example.com" ||
		wp["default_status"] != "draft" || astro["content_dir"] != "src/content/blog" || cfg["language"] != "fr" {
		t.Fatalf("created: %v", first)
	}
	id := int64(first["id"].(float64))
	if r := create(map[string]any{"name": "Café Blog"}); r.Code != 201 || r.Data()["slug"] != "caf-blog-2" {
		t.Fatalf("second with the same name: %d %s", r.Code, r.Body)
	}

	bad := []struct {
		name   string
		body   any
		status int
		detail string
	}{
		{"NoName", map[string]any{"slug": "x"}, 422, "name: is required"},
		{"BlankName", map[string]any{"name": "   "}, 422, "name"},
		{"TakenSlug", map[string]any{"name": "x", "slug": "caf-blog"}, 409, "slug"},
		{"BadSlug", map[string]any{"name": "x", "slug": "Not A Slug"}, 422, "slug:"},
		{"BadTimezone", map[string]any{"name": "x", "configuration": map[string]any{"timezone": "Mars/Olympus"}}, 422, "configuration.timezone"},
		{"BadLanguage", map[string]any{"name": "x", "configuration": map[string]any{"language": "english!"}}, 422, "configuration.language"},
		{"BadWordPressURL", map[string]any{"name": "x", "configuration": map[string]any{"wordpress": map[string]any{"base_url": "ftp://x"}}}, 422, "configuration.wordpress.base_url"},
		{"BadStatus", map[string]any{"name": "x", "configuration": map[string]any{"wordpress": map[string]any{"base_url": "https://x.example", "default_status": "live"}}}, 422, "default_status"},
		{"RelativeAstro", map[string]any{"name": "x", "configuration": map[string]any{"astro": map[string]any{"project_path": "site"}}}, 422, "project_path"},
		{"EscapingContentDir", map[string]any{"name": "x", "configuration": map[string]any{"astro": map[string]any{"project_path": "/srv/x", "content_dir": "../../etc"}}}, 422, "content_dir"},
		{"UnknownConfigField", map[string]any{"name": "x", "configuration": map[string]any{"colour": "blue"}}, 422, "colour"},
		{"WrongType", map[string]any{"name": 7}, 422, "name: must be a string"},
		{"LongName", map[string]any{"name": strings.Repeat("n", 101)}, 422, "name: must be at most 100"},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			r := create(c.body)
			if r.Code != c.status || !strings.Contains(r.Detail(), c.detail) {
				t.Fatalf("got %d %s", r.Code, r.Body)
			}
		})
	}
	if n := e.do(t, "GET", "/api/environments", admin, nil).Data()["total"].(float64); n != 2 {
		t.Fatalf("failed creates left rows: %v environments", n)
	}

	path := fmt.Sprintf("/api/environments/%d", id)
	t.Run("Update", func(t *testing.T) {
		r := e.do(t, "PUT", path, admin, map[string]any{"description": "recipes"})
		if r.Code != 200 || r.Data()["description"] != "recipes" || r.Data()["name"] != "Café Blog" {
			t.Fatalf("partial update: %d %s", r.Code, r.Body)
		}
		if r := e.do(t, "PUT", path, admin, map[string]any{"slug": "caf-blog-2"}); r.Code != 409 {
			t.Fatalf("slug clash: %d %s", r.Code, r.Body)
		}
		if r := e.do(t, "PUT", path, admin, map[string]any{"name": ""}); r.Code != 422 {
			t.Fatalf("empty name: %d %s", r.Code, r.Body)
		}
		if r := e.do(t, "PUT", path, admin, map[string]any{"slug": "cafe"}); r.Code != 200 || r.Data()["slug"] != "cafe" {
			t.Fatalf("rename slug: %d %s", r.Code, r.Body)
		}
	})
	t.Run("Configuration", func(t *testing.T) {
		r := e.do(t, "GET", path+"/configuration", admin, nil)
		if r.Code != 200 || r.Data()["language"] != "fr" {
			t.Fatalf("get: %d %s", r.Code, r.Body)
		}
		r = e.do(t, "PUT", path+"/configuration", admin, map[string]any{"timezone": "America/New_York"})
		if r.Code != 200 || r.Data()["wordpress"] != nil || r.Data()["language"] != "en" || r.Data()["timezone"] != "America/New_York" {
			t.Fatalf("replace: %d %s", r.Code, r.Body)
		}
		if r := e.do(t, "PUT", path+"/configuration", admin, map[string]any{"timezone": "Nowhere"}); r.Code != 422 {
			t.Fatalf("bad: %d %s", r.Code, r.Body)
		}
		if r := e.do(t, "GET", path+"/configuration", admin, nil); r.Data()["timezone"] != "America/New_York" {
			t.Fatalf("a refused update changed the configuration: %s", r.Body)
		}
	})
	t.Run("Tenancy", func(t *testing.T) {
		for _, p := range []string{path, path + "/configuration"} {
			if r := e.do(t, "GET", p, viewerTok, nil); r.Code != 404 {
				t.Fatalf("ungranted %s: %d", p, r.Code)
			}
		}
		if n := e.do(t, "GET", "/api/environments", viewerTok, nil).Data()["total"].(float64); n != 0 {
			t.Fatalf("viewer lists %v environments", n)
		}
		if _, err := e.app.DB.SetUserEnvironments(context.Background(), viewer.ID, []int64{id}); err != nil {
			t.Fatal(err)
		}
		if r := e.do(t, "GET", path, viewerTok, nil); r.Code != 200 {
			t.Fatalf("granted: %d", r.Code)
		}
		list := e.do(t, "GET", "/api/environments?q=caf", viewerTok, nil).Data()
		if list["total"].(float64) != 1 {
			t.Fatalf("viewer list: %v", list)
		}
		if r := e.do(t, "PUT", path, viewerTok, map[string]any{"description": "x"}); r.Code != 403 {
			t.Fatalf("viewer writes: %d", r.Code)
		}
	})
	t.Run("ListQuery", func(t *testing.T) {
		for q, want := range map[string]int{"?per_page=1": 200, "?per_page=201": 422, "?page=0": 422, "?q=" + strings.Repeat("q", 201): 422} {
			if r := e.do(t, "GET", "/api/environments"+q, admin, nil); r.Code != want {
				t.Fatalf("%s: %d %s", q, r.Code, r.Body)
			}
		}
	})
	t.Run("Delete", func(t *testing.T) {
		if r := e.do(t, "DELETE", path, admin, nil); r.Code != 200 || r.Data()["deleted"] != true {
			t.Fatalf("delete: %d %s", r.Code, r.Body)
		}
		if r := e.do(t, "GET", path, admin, nil); r.Code != 404 {
			t.Fatalf("after delete: %d", r.Code)
		}
		if r := e.do(t, "DELETE", path, admin, nil); r.Code != 404 {
			t.Fatalf("delete twice: %d", r.Code)
		}
		ids, _ := e.app.DB.UserEnvironmentIDs(context.Background(), viewer.ID)
		if len(ids) != 0 {
			t.Fatalf("grants outlived the environment: %v", ids)
		}
	})
}

func TestQueryErrorsNameTheParameter(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, admin := e.user(t, "admin", store.RoleAdmin)
	for q, want := range map[string]string{
		"?is_active=maybe": "is_active: must be true or false",
		"?page=two":        "page: must be an integer",
		"?per_page=1.5":    "per_page: must be an integer",
		"?per_page=999":    "per_page: must be at most 200",
	} {
		r := e.do(t, "GET", "/api/auth/users"+q, admin, nil)
		if r.Code != 422 || r.Detail() != want {
			t.Errorf("%s: got %d %q, want %q", q, r.Code, r.Detail(), want)
		}
	}
}

// A deleted resource's id is never given again (the red team deleted live
// session 2 and the next session got id 2, so old links reached it).
func TestDeletedIDsAreNotReused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, admin := e.user(t, "admin", store.RoleAdmin)
	var ids []any
	for _, name := range []string{"First", "Second"} {
		r := e.do(t, "POST", "/api/environments", admin, map[string]any{"name": name})
		if r.Code != 201 {
			t.Fatalf("create: %d %s", r.Code, r.Body)
		}
		ids = append(ids, r.Data()["id"])
		if r := e.do(t, "DELETE", fmt.Sprintf("/api/environments/%v", r.Data()["id"]), admin, nil); r.Code != 200 {
			t.Fatalf("delete: %d %s", r.Code, r.Body)
		}
	}
	if ids[0] == ids[1] {
		t.Fatalf("the deleted environment's id %v was given again", ids[0])
	}
}
