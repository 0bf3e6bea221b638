package cms_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/copydesk/copydesk/server/cms"
	"github.com/copydesk/copydesk/server/environment"
	"github.com/copydesk/copydesk/store"
	"github.com/copydesk/copydesk/store/storetest"
)

// fixture is the service over a fresh database with environments A and B,
// and an editor's scope that sees A only.
type fixture struct {
	db     *store.DB
	s      *cms.Service
	a, b   int64
	editor store.Scope
}

func setup(t *testing.T) *fixture {
	t.Helper()
	db, _ := storetest.OpenDB(t)
	f := &fixture{db: db, s: cms.New(db, environment.New(db))}
	for _, e := range []struct {
		id   *int64
		name string
	}{{&f.a, "a"}, {&f.b, "b"}} {
		env, err := db.CreateEnvironment(context.Background(), store.NewEnvironment{Name: "Site " + e.name, Slug: "site-" + e.name})
		if err != nil {
			t.Fatal(err)
		}
		*e.id = env.ID
	}
	f.editor = store.NewScope(7, false, []int64{f.a})
	return f
}

// wantKind fails the test unless err is of kind, with message msg when
// msg is not empty.
func wantKind(t *testing.T, what string, err error, kind store.Kind, msg string) {
	t.Helper()
	if store.KindOf(err) != kind || (msg != "" && store.Message(err) != msg) {
		t.Errorf("%s: %v (kind %v), want kind %v %q", what, err, store.KindOf(err), kind, msg)
	}
}

func ptr[T any](v T) *T { return &v }

// A category or tag of an environment the caller does not see is not
// found, whatever they do with it; one made there is refused as naming an
// environment that does not exist, like one that really does not.
func TestTenancy(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	cat, err := f.s.CreateCategory(ctx, store.Everything, cms.CategoryInput{EnvironmentID: f.b, Name: "Recipes"})
	if err != nil {
		t.Fatal(err)
	}
	tag, err := f.s.CreateTag(ctx, store.Everything, cms.TagInput{EnvironmentID: f.b, Name: "Vegan"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.s.Category(ctx, f.editor, cat.ID)
	wantKind(t, "get category", err, store.KindNotFound, "category not found")
	_, err = f.s.UpdateCategory(ctx, f.editor, cat.ID, cms.CategoryChange{Name: ptr("Mine")})
	wantKind(t, "update category", err, store.KindNotFound, "category not found")
	_, err = f.s.DeleteCategory(ctx, f.editor, cat.ID)
	wantKind(t, "delete category", err, store.KindNotFound, "category not found")
	_, err = f.s.Tag(ctx, f.editor, tag.ID)
	wantKind(t, "get tag", err, store.KindNotFound, "tag not found")
	_, err = f.s.UpdateTag(ctx, f.editor, tag.ID, cms.TagChange{Name: ptr("Mine")})
	wantKind(t, "update tag", err, store.KindNotFound, "tag not found")
	_, err = f.s.DeleteTag(ctx, f.editor, tag.ID)
	wantKind(t, "delete tag", err, store.KindNotFound, "tag not found")
	if got, err := f.s.Category(ctx, store.Everything, cat.ID); err != nil || got.Name != "Recipes" {
		t.Errorf("the category after the refusals: %+v %v", got, err)
	}

	for _, id := range []int64{f.b, 999} {
		_, err = f.s.CreateCategory(ctx, f.editor, cms.CategoryInput{EnvironmentID: id, Name: "X"})
		wantKind(t, "create category", err, store.KindInvalid, fmt.Sprintf("environment_id: no environment with id %d", id))
		_, err = f.s.CreateTag(ctx, f.editor, cms.TagInput{EnvironmentID: id, Name: "X"})
		wantKind(t, "create tag", err, store.KindInvalid, fmt.Sprintf("environment_id: no environment with id %d", id))
	}
	_, err = f.s.CreateCategory(ctx, f.editor, cms.CategoryInput{Name: "X"})
	wantKind(t, "create without an environment", err, store.KindInvalid, "environment_id: is required")

	// Lists: an environment filter the caller does not see is not found;
	// without one, only what they see.
	_, _, err = f.s.ListCategories(ctx, f.editor, cms.ListQuery{EnvironmentID: &f.b})
	wantKind(t, "list categories of B", err, store.KindNotFound, "")
	_, _, err = f.s.ListTags(ctx, f.editor, cms.ListQuery{EnvironmentID: &f.b})
	wantKind(t, "list tags of B", err, store.KindNotFound, "")
	if _, err := f.s.CreateCategory(ctx, f.editor, cms.CategoryInput{EnvironmentID: f.a, Name: "Recipes"}); err != nil {
		t.Fatal(err)
	}
	list, n, err := f.s.ListCategories(ctx, f.editor, cms.ListQuery{Page: store.Page{Page: 1, PerPage: 50}})
	if err != nil || n != 1 || len(list) != 1 || list[0].EnvironmentID != f.a {
		t.Errorf("the editor's categories: %d %+v %v", n, list, err)
	}
	if _, n, err := f.s.ListCategories(ctx, store.Everything, cms.ListQuery{}); err != nil || n != 2 {
		t.Errorf("every category: %d %v", n, err)
	}
}

// Slugs: a given one must follow the rule and be free in the environment;
// a made one is the name's, then -2, -3, ...; a name with nothing to slug
// is named by the row's id. Each environment has its own slugs.
func TestSlugs(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	cat := func(env int64, name, slug string) (*store.Category, error) {
		return f.s.CreateCategory(ctx, store.Everything, cms.CategoryInput{EnvironmentID: env, Name: name, Slug: slug})
	}
	first, err := cat(f.a, "Crème Brûlée", "")
	if err != nil || first.Slug != "creme-brulee" {
		t.Fatalf("made slug: %+v %v", first, err)
	}
	second, err := cat(f.a, "Creme  brulee", "")
	if err != nil || second.Slug != "creme-brulee-2" {
		t.Errorf("made slug of a second one: %+v %v", second, err)
	}
	if other, err := cat(f.b, "Crème Brûlée", ""); err != nil || other.Slug != "creme-brulee" {
		t.Errorf("the same name in another environment: %+v %v", other, err)
	}
	nothing, err := cat(f.a, "★★★", "")
	if err != nil || nothing.Slug != fmt.Sprintf("category-%d", nothing.ID) {
		t.Errorf("a name with nothing to slug: %+v %v", nothing, err)
	}
	_, err = cat(f.a, "Dessert", "creme-brulee")
	wantKind(t, "a taken slug", err, store.KindConflict, "slug: another category of this environment has this slug")
	for _, bad := range []string{"Crème", "two--dashes", "-lead", "UPPER"} {
		_, err = cat(f.a, "Dessert", bad)
		if err != cms.ErrSlug {
			t.Errorf("slug %q: %v, want ErrSlug", bad, err)
		}
		_, err = f.s.UpdateCategory(ctx, store.Everything, first.ID, cms.CategoryChange{Slug: ptr(bad)})
		if err != cms.ErrSlug {
			t.Errorf("update to slug %q: %v, want ErrSlug", bad, err)
		}
	}
	// An empty slug given on update is no slug at all: refused too.
	_, err = f.s.UpdateCategory(ctx, store.Everything, first.ID, cms.CategoryChange{Slug: ptr("")})
	if err != cms.ErrSlug {
		t.Errorf("update to an empty slug: %v, want ErrSlug", err)
	}
	_, err = f.s.UpdateCategory(ctx, store.Everything, first.ID, cms.CategoryChange{Slug: ptr("creme-brulee-2")})
	wantKind(t, "update to a taken slug", err, store.KindConflict, "slug: another category of this environment has this slug")

	tag, err := f.s.CreateTag(ctx, store.Everything, cms.TagInput{EnvironmentID: f.a, Name: "Quick & Easy"})
	if err != nil || tag.Slug != "quick-and-easy" {
		t.Errorf("made tag slug: %+v %v", tag, err)
	}
	_, err = f.s.CreateTag(ctx, store.Everything, cms.TagInput{EnvironmentID: f.a, Name: "Quick", Slug: "quick-and-easy"})
	wantKind(t, "a taken tag slug", err, store.KindConflict, "slug: another tag of this environment has this slug")
	if _, err := f.s.CreateTag(ctx, store.Everything, cms.TagInput{EnvironmentID: f.a, Name: "Fast", Slug: "Fast!"}); err != cms.ErrSlug {
		t.Errorf("an invalid tag slug: %v", err)
	}
}

// Names and descriptions are checked; a category's parent is a category
// of the same environment, never itself; 0 on update takes it away; a
// deleted parent's children move to the top.
func TestCategoryFields(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	all := store.Everything
	for _, in := range []cms.CategoryInput{
		{EnvironmentID: f.a, Name: ""},
		{EnvironmentID: f.a, Name: "two\nlines"},
		{EnvironmentID: f.a, Name: string(make([]byte, 201))},
		{EnvironmentID: f.a, Name: "X", ParentID: ptr(int64(0))},
		{EnvironmentID: f.a, Name: "X", ParentID: ptr(int64(-1))},
	} {
		if _, err := f.s.CreateCategory(ctx, all, in); store.KindOf(err) != store.KindInvalid {
			t.Errorf("create %+v: %v, want invalid", in, err)
		}
	}
	if _, err := f.s.CreateTag(ctx, all, cms.TagInput{EnvironmentID: f.a, Name: "  "}); store.KindOf(err) != store.KindInvalid {
		t.Errorf("a blank tag name: %v", err)
	}
	parent, err := f.s.CreateCategory(ctx, all, cms.CategoryInput{EnvironmentID: f.a, Name: "Baking", Description: "Bread and cakes"})
	if err != nil {
		t.Fatal(err)
	}
	child, err := f.s.CreateCategory(ctx, all, cms.CategoryInput{EnvironmentID: f.a, Name: "Sourdough", ParentID: &parent.ID})
	if err != nil || child.ParentID == nil || *child.ParentID != parent.ID {
		t.Fatalf("child: %+v %v", child, err)
	}
	elsewhere, err := f.s.CreateCategory(ctx, all, cms.CategoryInput{EnvironmentID: f.b, Name: "Elsewhere"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.CreateCategory(ctx, all, cms.CategoryInput{EnvironmentID: f.b, Name: "Stray", ParentID: &parent.ID}); err == nil {
		t.Error("a parent of another environment was taken")
	}
	_, err = f.s.UpdateCategory(ctx, all, child.ID, cms.CategoryChange{ParentID: &child.ID})
	wantKind(t, "its own parent", err, store.KindInvalid, "parent_id: a category cannot be its own parent")
	_, err = f.s.UpdateCategory(ctx, all, child.ID, cms.CategoryChange{ParentID: ptr(int64(-2))})
	wantKind(t, "a negative parent", err, store.KindInvalid, "parent_id: must be a category id, or 0 for none")
	if _, err := f.s.UpdateCategory(ctx, all, child.ID, cms.CategoryChange{ParentID: &elsewhere.ID}); err == nil {
		t.Error("moved under a category of another environment")
	}
	top, err := f.s.UpdateCategory(ctx, all, child.ID, cms.CategoryChange{ParentID: ptr(int64(0)), Description: ptr("Wild yeast")})
	if err != nil || top.ParentID != nil || top.Description != "Wild yeast" || top.Name != "Sourdough" {
		t.Errorf("parent taken away: %+v %v", top, err)
	}
	if _, err := f.s.UpdateCategory(ctx, all, child.ID, cms.CategoryChange{ParentID: &parent.ID}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.DeleteCategory(ctx, all, parent.ID); err != nil {
		t.Fatal(err)
	}
	if got, err := f.s.Category(ctx, all, child.ID); err != nil || got.ParentID != nil {
		t.Errorf("the child of a deleted category: %+v %v", got, err)
	}
	_, err = f.s.Category(ctx, all, parent.ID)
	wantKind(t, "the deleted category", err, store.KindNotFound, "")
}
