package server_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/copydesk/copydesk/store"
	"github.com/copydesk/copydesk/store/storetest"
)

// cmsEnv is an app with an environment A the editor and the viewer may
// use, and an environment B they may not.
type cmsEnv struct {
	*env
	admin, editor, viewer string
	envA, envB            int64
}

func newCMSEnv(t *testing.T, opts ...envOption) *cmsEnv {
	t.Helper()
	e := newEnv(t, opts...)
	ctx := context.Background()
	a, err := e.app.DB.CreateEnvironment(ctx, store.NewEnvironment{Name: "A", Slug: "a"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.app.DB.CreateEnvironment(ctx, store.NewEnvironment{Name: "B", Slug: "b"})
	if err != nil {
		t.Fatal(err)
	}
	_, admin := e.user(t, "admin", store.RoleAdmin)
	ed, editor := e.user(t, "editor", store.RoleEditor)
	vw, viewer := e.user(t, "viewer", store.RoleViewer)
	for _, u := range []*store.User{ed, vw} {
		if _, err := e.app.DB.SetUserEnvironments(ctx, u.ID, []int64{a.ID}); err != nil {
			t.Fatal(err)
		}
	}
	return &cmsEnv{env: e, admin: admin, editor: editor, viewer: viewer, envA: a.ID, envB: b.ID}
}

func TestCMSSlugs(t *testing.T) {
	t.Parallel()
	e := newCMSEnv(t)
	for _, kind := range []string{"categories", "tags"} {
		t.Run(kind, func(t *testing.T) {
			path := "/api/cms/" + kind
			create := func(body map[string]any) resp {
				body["environment_id"] = e.envA
				return e.do(t, "POST", path, e.editor, body)
			}
			singular := map[string]string{"categories": "category", "tags": "tag"}[kind]
			cases := []struct {
				name   string
				body   map[string]any
				status int
				slug   string // want, with {id} for the new row's id
				detail string
			}{
				{"Folded", map[string]any{"name": "Café Olé"}, 201, "cafe-ole", ""},
				{"TakenMadeSlugMovesOn", map[string]any{"name": "cafe ole"}, 201, "cafe-ole-2", ""},
				{"AndAgain", map[string]any{"name": "CAFÉ OLÉ!"}, 201, "cafe-ole-3", ""},
				{"SpecialLetters", map[string]any{"name": "Straße Łódź Ærø"}, 201, "strasse-lodz-aero", ""},
				{"NothingToSlug", map[string]any{"name": "日本語"}, 201, singular + "-{id}", ""},
				{"GivenSlug", map[string]any{"name": "Anything", "slug": "my-slug"}, 201, "my-slug", ""},
				{"GivenSlugTaken", map[string]any{"name": "Other", "slug": "cafe-ole"}, 409, "", "slug:"},
				{"GivenSlugInvalid", map[string]any{"name": "Other", "slug": "Café"}, 422, "", "slug: must be lower-case ASCII"},
				{"GivenSlugTraversal", map[string]any{"name": "Other", "slug": "../etc"}, 422, "", "slug:"},
				{"GivenSlugTooLong", map[string]any{"name": "Other", "slug": strings.Repeat("a", 97)}, 422, "", "slug: must be at most 96"},
				{"BlankName", map[string]any{"name": "   "}, 422, "", "name"},
				{"ControlInName", map[string]any{"name": "a\u202eb"}, 422, "", "name"},
			}
			for _, c := range cases {
				r := create(c.body)
				if r.Code != c.status {
					t.Fatalf("%s: %d %s", c.name, r.Code, r.Body)
				}
				if c.status != 201 {
					if !strings.Contains(r.Detail(), c.detail) {
						t.Errorf("%s: detail %q, want %q", c.name, r.Detail(), c.detail)
					}
					continue
				}
				want := strings.ReplaceAll(c.slug, "{id}", fmt.Sprint(r.Data()["id"]))
				if got := r.Data()["slug"]; got != want {
					t.Errorf("%s: slug %v, want %s", c.name, got, want)
				}
			}
			// Slugs are unique per environment: B may use A's.
			r := e.do(t, "POST", path, e.admin, map[string]any{"environment_id": e.envB, "name": "x", "slug": "cafe-ole"})
			if r.Code != 201 {
				t.Fatalf("same slug in another environment: %d %s", r.Code, r.Body)
			}
			// Renaming keeps the slug; a taken slug on update is a 409.
			id := fmt.Sprint(create(map[string]any{"name": "Renamed later"}).Data()["id"])
			if r := e.do(t, "PUT", path+"/"+id, e.editor, map[string]any{"name": "New name"}); r.Code != 200 || r.Data()["slug"] != "renamed-later" {
				t.Fatalf("rename: %d %s", r.Code, r.Body)
			}
			if r := e.do(t, "PUT", path+"/"+id, e.editor, map[string]any{"slug": "my-slug"}); r.Code != 409 {
				t.Fatalf("taken slug on update: %d %s", r.Code, r.Body)
			}
			if r := e.do(t, "PUT", path+"/"+id, e.editor, map[string]any{"slug": "a--b"}); r.Code != 422 {
				t.Fatalf("invalid slug on update: %d %s", r.Code, r.Body)
			}
			// Lists: by environment, by q, and a viewer sees only A.
			list := e.do(t, "GET", path+"?environment_id="+fmt.Sprint(e.envA)+"&q=caf", e.viewer, nil)
			if list.Code != 200 || list.Data()["total"].(float64) != 3 {
				t.Fatalf("list q=caf: %d %s", list.Code, list.Body)
			}
			all := e.do(t, "GET", path+"?per_page=200", e.viewer, nil)
			for _, it := range all.Data()["items"].([]any) {
				if it.(map[string]any)["environment_id"].(float64) != float64(e.envA) {
					t.Fatalf("viewer sees a term of another environment: %v", it)
				}
			}
			// sort=name and -name are exact reverses; another field is a 422.
			names := func(sort string) []string {
				r := e.do(t, "GET", path+"?per_page=200&environment_id="+fmt.Sprint(e.envA)+"&sort="+sort, e.viewer, nil)
				if r.Code != 200 {
					t.Fatalf("sort=%s: %d %s", sort, r.Code, r.Body)
				}
				var out []string
				for _, it := range r.Data()["items"].([]any) {
					out = append(out, it.(map[string]any)["name"].(string))
				}
				return out
			}
			up, down := names("name"), names("-name")
			if len(up) < 5 || !slices.IsSortedFunc(up, compareNoCase) {
				t.Fatalf("sort=name: %q", up)
			}
			slices.Reverse(down)
			if !slices.Equal(up, down) {
				t.Fatalf("sort=-name is not the reverse of sort=name: %q, %q", up, down)
			}
			if r := e.do(t, "GET", path+"?sort=created_at", e.viewer, nil); r.Code != 422 || r.Detail() != "sort: must be one of: name, -name" {
				t.Fatalf("unknown sort field: %d %s", r.Code, r.Body)
			}
			if r := e.do(t, "GET", path+"?environment_id="+fmt.Sprint(e.envB), e.viewer, nil); r.Code != 404 {
				t.Fatalf("list of an environment not granted: %d %s", r.Code, r.Body)
			}
			if r := e.do(t, "POST", path, e.editor, map[string]any{"environment_id": e.envB, "name": "x"}); r.Code != 422 ||
				!strings.HasPrefix(r.Detail(), "environment_id") {
				t.Fatalf("create in an environment not granted: %d %s", r.Code, r.Body)
			}
		})
	}
}

// compareNoCase orders as SQLite's NOCASE does: ASCII letters folded,
// every other byte as it is.
//
// On PostgreSQL, NOCASE is an ICU collation that folds every letter's case
// (docs/scaling.md), so letters beyond ASCII are folded too.
func compareNoCase(a, b string) int {
	if storetest.Postgres() {
		return strings.Compare(strings.ToLower(a), strings.ToLower(b))
	}
	fold := func(s string) string {
		return strings.Map(func(r rune) rune {
			if 'A' <= r && r <= 'Z' {
				return r + 'a' - 'A'
			}
			return r
		}, s)
	}
	return strings.Compare(fold(a), fold(b))
}

func TestCMSCategoryParents(t *testing.T) {
	t.Parallel()
	e := newCMSEnv(t)
	mk := func(name string, parent any, envID int64) int64 {
		t.Helper()
		body := map[string]any{"environment_id": envID, "name": name}
		if parent != nil {
			body["parent_id"] = parent
		}
		r := e.do(t, "POST", "/api/cms/categories", e.admin, body)
		if r.Code != 201 {
			t.Fatalf("create %s: %d %s", name, r.Code, r.Body)
		}
		return int64(r.Data()["id"].(float64))
	}
	top := mk("Top", nil, e.envA)
	mid := mk("Mid", top, e.envA)
	leaf := mk("Leaf", mid, e.envA)
	other := mk("Elsewhere", nil, e.envB)
	put := func(id int64, parent int64) resp {
		return e.do(t, "PUT", fmt.Sprintf("/api/cms/categories/%d", id), e.editor, map[string]any{"parent_id": parent})
	}
	cases := []struct {
		name     string
		id, to   int64
		status   int
		inDetail string
	}{
		{"Self", top, top, 422, "own parent"},
		{"Cycle", top, leaf, 422, "own ancestor"},
		{"CycleOneUp", top, mid, 422, "own ancestor"},
		{"OtherEnvironment", leaf, other, 422, "no category"},
		{"Unknown", leaf, 99999, 422, "no category"},
		{"Move", leaf, top, 200, ""},
		{"ToTop", mid, 0, 200, ""},
	}
	for _, c := range cases {
		r := put(c.id, c.to)
		if r.Code != c.status || !strings.Contains(r.Detail(), c.inDetail) {
			t.Errorf("%s: %d %s", c.name, r.Code, r.Body)
		}
	}
	if r := e.do(t, "POST", "/api/cms/categories", e.admin, map[string]any{"environment_id": e.envA, "name": "x", "parent_id": other}); r.Code != 422 {
		t.Fatalf("create under a category of another environment: %d %s", r.Code, r.Body)
	}
	// Deleting a parent moves its children to the top.
	if r := e.do(t, "DELETE", fmt.Sprintf("/api/cms/categories/%d", top), e.editor, nil); r.Code != 200 || r.Data()["deleted"] != true {
		t.Fatalf("delete: %d %s", r.Code, r.Body)
	}
	if r := e.do(t, "GET", fmt.Sprintf("/api/cms/categories/%d", leaf), e.viewer, nil); r.Code != 200 || r.Data()["parent_id"] != nil {
		t.Fatalf("child of a deleted parent: %d %s", r.Code, r.Body)
	}
	if r := e.do(t, "GET", fmt.Sprintf("/api/cms/categories/%d", top), e.viewer, nil); r.Code != 404 {
		t.Fatalf("deleted: %d %s", r.Code, r.Body)
	}
}
