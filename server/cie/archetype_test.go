package cie_test

import (
	"context"
	"strings"
	"testing"

	"github.com/copydesk/copydesk/server/cie"
	"github.com/copydesk/copydesk/server/engine"
	"github.com/copydesk/copydesk/server/environment"
	"github.com/copydesk/copydesk/server/jobs"
	"github.com/copydesk/copydesk/store"
	"github.com/copydesk/copydesk/store/storetest"
)

// fixture is the service over a fresh database (with the built-in
// archetypes its migrations seed), environments A and B, an admin's
// scope and an editor's that sees A only.
type fixture struct {
	db            *store.DB
	eng           *engine.Engine
	s             *cie.Service
	a, b          int64
	admin, editor store.Scope
}

func setup(t *testing.T) *fixture {
	t.Helper()
	db, _ := storetest.OpenDB(t)
	eng := engine.New(db, nil, nil, nil, engine.Options{})
	f := &fixture{db: db, eng: eng, s: cie.New(cie.Deps{Store: db, Environments: environment.New(db), Engine: eng, Jobs: jobs.New(db, nil, jobs.Options{})})}
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
	admin := storetest.MustUser(t, db, "root", store.RoleAdmin)
	editor := storetest.MustUser(t, db, "eddie", store.RoleEditor)
	f.admin = store.NewScope(admin.ID, true, nil)
	f.editor = store.NewScope(editor.ID, false, []int64{f.a})
	return f
}

func wantKind(t *testing.T, what string, err error, kind store.Kind, prefix string) {
	t.Helper()
	if store.KindOf(err) != kind || !strings.HasPrefix(store.Message(err), prefix) {
		t.Errorf("%s: %v (kind %v), want kind %v %q...", what, err, store.KindOf(err), kind, prefix)
	}
}

func ptr[T any](v T) *T { return &v }

// recipe is a valid archetype of env (nil: global).
func recipe(env *int64, name string) store.ArchetypeInput {
	return store.ArchetypeInput{EnvironmentID: env, Name: name, PromptTemplate: "Write about {{topic}}.",
		Outline: []store.Section{{Heading: "Why"}, {Heading: "How", Guidance: "Steps"}}}
}

// builtin returns a built-in archetype.
func (f *fixture) builtin(t *testing.T) *store.Archetype {
	t.Helper()
	list, _, err := f.s.List(context.Background(), f.admin, nil, store.Page{Page: 1, PerPage: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range list {
		if a.Builtin != "" {
			return a
		}
	}
	t.Fatal("no built-in archetype")
	return nil
}

// Who sees an archetype and who changes it: the global ones and those of
// the caller's environments are seen, any other is not found; editors
// manage their environments', admins the global ones too; the built-ins
// are read-only for everyone, and a copy of one is editable.
func TestArchetypeAccess(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	global, err := f.s.Create(ctx, f.admin, recipe(nil, "House style"))
	if err != nil {
		t.Fatal(err)
	}
	ofA, err := f.s.Create(ctx, f.editor, recipe(&f.a, "A's recipe"))
	if err != nil || ofA.EnvironmentID == nil || *ofA.EnvironmentID != f.a {
		t.Fatalf("editor's archetype in A: %+v %v", ofA, err)
	}
	ofB, err := f.s.Create(ctx, f.admin, recipe(&f.b, "B's recipe"))
	if err != nil {
		t.Fatal(err)
	}

	page := store.Page{Page: 1, PerPage: 100}
	seen := func(sc store.Scope, env *int64) map[string]bool {
		t.Helper()
		list, _, err := f.s.List(ctx, sc, env, page)
		if err != nil {
			t.Fatal(err)
		}
		names := map[string]bool{}
		for _, a := range list {
			names[a.Name] = true
		}
		return names
	}
	if got := seen(f.editor, nil); !got["House style"] || !got["A's recipe"] || got["B's recipe"] {
		t.Errorf("the editor sees %v", got)
	}
	if got := seen(f.admin, &f.b); !got["B's recipe"] || got["A's recipe"] || !got["House style"] {
		t.Errorf("the list of B: %v", got)
	}
	_, _, err = f.s.List(ctx, f.editor, &f.b, page)
	wantKind(t, "list of an environment not seen", err, store.KindNotFound, "environment not found")
	_, err = f.s.Get(ctx, f.editor, ofB.ID)
	wantKind(t, "get B's", err, store.KindNotFound, "archetype not found")
	_, err = f.s.Get(ctx, store.Scope{}, global.ID)
	wantKind(t, "the zero scope", err, store.KindNotFound, "archetype not found")
	if _, err := f.s.Get(ctx, f.editor, global.ID); err != nil {
		t.Errorf("get a global one: %v", err)
	}

	// Where a new one goes.
	_, err = f.s.Create(ctx, f.editor, recipe(nil, "Mine"))
	wantKind(t, "an editor's global archetype", err, store.KindForbidden, "only admins make global archetypes")
	_, err = f.s.Create(ctx, f.editor, recipe(&f.b, "Mine"))
	wantKind(t, "an editor's archetype in B", err, store.KindInvalid, "environment_id: no environment with id")

	// Who changes what.
	_, err = f.s.Update(ctx, f.editor, global.ID, cie.Patch{Name: ptr("Renamed")})
	wantKind(t, "an editor changes a global one", err, store.KindForbidden, "only admins change global archetypes")
	err = f.s.Delete(ctx, f.editor, global.ID)
	wantKind(t, "an editor deletes a global one", err, store.KindForbidden, "only admins change global archetypes")
	_, err = f.s.Update(ctx, f.editor, ofB.ID, cie.Patch{Name: ptr("Renamed")})
	wantKind(t, "an editor changes B's", err, store.KindNotFound, "archetype not found")
	if a, err := f.s.Update(ctx, f.admin, global.ID, cie.Patch{Tone: ptr("dry")}); err != nil || a.Tone != "dry" || a.Name != "House style" {
		t.Errorf("the admin changes a global one: %+v %v", a, err)
	}
	if a, err := f.s.Update(ctx, f.editor, ofA.ID, cie.Patch{TargetWords: ptr(800)}); err != nil || a.TargetWords != 800 || len(a.Outline) != 2 {
		t.Errorf("the editor changes A's: %+v %v", a, err)
	}

	// The built-ins are read-only, for admins too; a copy is editable.
	b := f.builtin(t)
	for _, sc := range []store.Scope{f.admin, f.editor} {
		_, err = f.s.Update(ctx, sc, b.ID, cie.Patch{Name: ptr("Mine")})
		wantKind(t, "change a built-in", err, store.KindConflict, "")
		if !strings.Contains(store.Message(err), "is a built-in archetype and cannot be changed") {
			t.Errorf("change a built-in: %v", err)
		}
		err = f.s.Delete(ctx, sc, b.ID)
		wantKind(t, "delete a built-in", err, store.KindConflict, "")
	}
	cp, err := f.s.Copy(ctx, f.editor, b.ID, &f.a, "")
	if err != nil || cp.Builtin != "" || cp.Name != b.Name+" (copy)" || cp.PromptTemplate != b.PromptTemplate || *cp.EnvironmentID != f.a {
		t.Fatalf("copy of a built-in: %+v %v", cp, err)
	}
	if _, err := f.s.Update(ctx, f.editor, cp.ID, cie.Patch{Name: ptr("My how-to")}); err != nil {
		t.Errorf("change the copy: %v", err)
	}
	_, err = f.s.Copy(ctx, f.editor, b.ID, nil, "Global copy")
	wantKind(t, "an editor's global copy", err, store.KindForbidden, "only admins make global archetypes")
	if err := f.s.Delete(ctx, f.editor, cp.ID); err != nil {
		t.Errorf("delete the copy: %v", err)
	}
	if _, err := f.s.Get(ctx, f.admin, b.ID); err != nil {
		t.Errorf("the built-in after all that: %v", err)
	}
}

// What an archetype must be: a name, a template whose braces are all
// placeholders, a length in bounds, outline sections with headings,
// optional variables with variable names (each once).
func TestArchetypeFields(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	for _, c := range []struct {
		name   string
		change func(*store.ArchetypeInput)
		want   string
	}{
		{"NoName", func(in *store.ArchetypeInput) { in.Name = "  " }, "name: is required"},
		{"NoTemplate", func(in *store.ArchetypeInput) { in.PromptTemplate = " \n" }, "prompt_template: is required"},
		{"TooShort", func(in *store.ArchetypeInput) { in.TargetWords = 49 }, "target_words: must be 50 to 20000"},
		{"TooLong", func(in *store.ArchetypeInput) { in.TargetWords = 20001 }, "target_words: must be 50 to 20000"},
		{"BadPlaceholder", func(in *store.ArchetypeInput) { in.PromptTemplate = "About {{ 1topic }}" }, `prompt_template: "{{ 1topic }}" is not a placeholder`},
		{"LoneClose", func(in *store.ArchetypeInput) { in.PromptTemplate = "About topic}}" }, "prompt_template: a }} without its {{"},
		{"NoHeading", func(in *store.ArchetypeInput) { in.Outline = []store.Section{{Heading: " ", Guidance: "x"}} }, "outline[0].heading: is required"},
		{"BadOptional", func(in *store.ArchetypeInput) { in.OptionalVariables = []string{"my-var"} }, `optional_variables: "my-var" is not a variable name`},
		{"TwoLineName", func(in *store.ArchetypeInput) { in.Name = "a\nb" }, "name:"},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := recipe(&f.a, "Recipe")
			c.change(&in)
			_, err := f.s.Create(ctx, f.editor, in)
			wantKind(t, "create", err, store.KindInvalid, c.want)
		})
	}
	in := recipe(&f.a, "  Recipe  ")
	in.OptionalVariables = []string{" audience", "audience", "notes"}
	a, err := f.s.Create(ctx, f.editor, in)
	if err != nil || a.Name != "Recipe" || a.TargetWords != cie.DefaultTargetWords || strings.Join(a.OptionalVariables, ",") != "audience,notes" {
		t.Errorf("normalised: %+v %v", a, err)
	}
	if got := cie.Placeholders("{{a}} {{ b }} {{a}} {{c"); len(got) != 0 {
		t.Errorf("placeholders of a broken template: %q", got)
	}
	if got := cie.Placeholders("{{a}} {{ b }} {{a}}"); strings.Join(got, ",") != "a,b" {
		t.Errorf("placeholders: %q", got)
	}
}

// A preview renders exactly the prompts a generation would send: the
// variables are the standard ones (tone, length, language) and the
// caller's; a placeholder nobody fills is missing unless optional (then
// empty), a variable nobody uses is unknown; the archetype of an
// environment is used only there.
func TestPreview(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	in := recipe(&f.a, "Recipe")
	in.PromptTemplate = "Write about {{topic}} for {{ audience }} in {{language}}."
	in.OptionalVariables = []string{"audience", "notes"}
	in.Tone, in.TargetWords = "warm", 900
	a, err := f.s.Create(ctx, f.editor, in)
	if err != nil {
		t.Fatal(err)
	}
	eff, err := f.eng.Effective(ctx, &f.a)
	if err != nil {
		t.Fatal(err)
	}
	p, err := f.s.Preview(ctx, f.editor, a.ID, map[string]string{"topic": " sourdough "}, &f.a, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := "Write about sourdough for  in " + eff.Language + "."; p.User != want {
		t.Errorf("user prompt %q, want %q", p.User, want)
	}
	if p.Variables["tone"] != "warm" || p.Variables["target_words"] != "900" || p.Variables["audience"] != "" || p.Variables["topic"] != "sourdough" {
		t.Errorf("variables: %v", p.Variables)
	}
	for _, part := range []string{"in a warm tone, of about 900 words", "1. Why\n", "2. How: Steps\n", "TITLE: "} {
		if !strings.Contains(p.System, part) {
			t.Errorf("the system prompt lacks %q:\n%s", part, p.System)
		}
	}
	// The caller's values win over the standard ones.
	p, err = f.s.Preview(ctx, f.editor, a.ID, map[string]string{"topic": "rye", "tone": "brisk", "target_words": "300", "audience": "bakers"}, nil, nil)
	if err != nil || p.User != "Write about rye for bakers in "+p.Variables["language"]+"." || !strings.Contains(p.System, "in a brisk tone, of about 300 words") {
		t.Errorf("the caller's values: %+v %v", p, err)
	}

	for _, c := range []struct {
		name  string
		given map[string]string
		want  string
	}{
		{"Missing", map[string]string{}, `variables: missing "topic": the archetype's template needs a value for each`},
		{"Unknown", map[string]string{"topic": "x", "colour": "red"},
			`variables: unknown "colour": the archetype's template uses "topic", "audience", "language" and declares optional "audience", "notes"`},
		{"Words", map[string]string{"topic": "x", "target_words": "ten"}, "variables.target_words: must be a whole number from 50 to 20000"},
		{"Language", map[string]string{"topic": "x", "language": "not a language"}, "variables.language:"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := f.s.Preview(ctx, f.editor, a.ID, c.given, nil, nil)
			wantKind(t, "preview", err, store.KindInvalid, c.want)
		})
	}
	_, err = f.s.Preview(ctx, f.admin, a.ID, map[string]string{"topic": "x"}, &f.b, nil)
	wantKind(t, "A's archetype in B", err, store.KindInvalid, "environment_id: archetype")
	_, err = f.s.Preview(ctx, f.editor, a.ID, map[string]string{"topic": "x"}, &f.b, nil)
	wantKind(t, "in an environment not seen", err, store.KindInvalid, "environment_id: no environment with id")
	_, err = f.s.Preview(ctx, f.editor, a.ID, map[string]string{"topic": "x"}, nil, ptr(int64(1)))
	wantKind(t, "an agent without an environment", err, store.KindInvalid, "environment_id: is required with agent_id")
	_, err = f.s.Preview(ctx, f.editor, a.ID, map[string]string{"topic": "x"}, &f.a, ptr(int64(999)))
	wantKind(t, "an unknown agent", err, store.KindInvalid, "agent_id: no agent with id 999")
}
