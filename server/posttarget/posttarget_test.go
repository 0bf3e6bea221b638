package posttarget_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/copydesk/copydesk/server/astropost"
	"github.com/copydesk/copydesk/server/environment"
	"github.com/copydesk/copydesk/server/posttarget"
	"github.com/copydesk/copydesk/server/wppost"
	"github.com/copydesk/copydesk/store"
	"github.com/copydesk/copydesk/store/storetest"
)

var ctx = context.Background()

// sources read runs and generations from the store as the agent and CIE
// services do: as the scope sees them, a generation only once succeeded.
type sources struct{ db *store.DB }

func (s sources) Run(ctx context.Context, sc store.Scope, id int64) (*store.AgentRun, error) {
	r, err := s.db.RunByID(ctx, id)
	if err != nil {
		return nil, err
	}
	if !sc.SeesOwned(r.EnvironmentID, r.UserID) {
		return nil, store.NotFound("run not found")
	}
	return r, nil
}

func (s sources) Succeeded(ctx context.Context, sc store.Scope, id int64) (*store.CIERun, error) {
	r, err := s.db.CIERunByID(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := sc.Require(r.EnvironmentID, "generation"); err != nil {
		return nil, err
	}
	if r.Status != store.RunSucceeded {
		return nil, store.Conflict("generation %d is %s", r.ID, r.Status)
	}
	return r, nil
}

type rig struct {
	db        *store.DB
	svc       *posttarget.Service
	env       *store.Environment // with an Astro project and a WordPress site
	bare      *store.Environment // with neither
	dir       string             // env's content folder
	user      *store.User
	agent     *store.Agent
	archetype *store.Archetype
}

func newRig(t *testing.T) *rig {
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
	cred, err := db.CreateCredential(ctx, store.NewCredential{Name: "blog", Provider: store.ProviderWordPress, BaseURL: "https://blog.example.com",
		Username: "ann", SecretHint: "...", Seal: func(int64) ([]byte, error) { return []byte("sealed"), nil }})
	if err != nil {
		t.Fatal(err)
	}
	env, err := envs.Create(ctx, store.Everything, store.NewEnvironment{Name: "Blog", Configuration: store.EnvironmentConfig{
		Astro:     &store.AstroConfig{ProjectPath: project},
		WordPress: &store.WordPressConfig{BaseURL: "https://blog.example.com", CredentialID: &cred.ID}}})
	if err != nil {
		t.Fatal(err)
	}
	bare, err := envs.Create(ctx, store.Everything, store.NewEnvironment{Name: "Bare"})
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	wp := wppost.New(wppost.Deps{Store: db, Environments: envs})
	astro := astropost.New(db, envs, clk.Now, log)
	r := &rig{db: db, env: env, bare: bare, dir: dir,
		svc: posttarget.New(posttarget.Sources{Runs: sources{db}, Generations: sources{db}}, wp.Target(), astro.Target())}
	r.user = storetest.MustUser(t, db, "writer", store.RoleEditor)
	if r.agent, err = db.CreateAgent(ctx, store.AgentInput{EnvironmentID: &env.ID, Name: "W", Kind: "writer", IsActive: true}, r.user.ID); err != nil {
		t.Fatal(err)
	}
	if r.archetype, err = db.CreateArchetype(ctx, store.ArchetypeInput{EnvironmentID: &env.ID, Name: "How-to", PromptTemplate: "Write about {{keyword}}.",
		TargetWords: 800, Tone: "friendly"}, r.user.ID); err != nil {
		t.Fatal(err)
	}
	return r
}

// run is an agent run of env (nil: none) ended with status ("" leaves it
// queued) and output.
func (r *rig) run(t *testing.T, env *int64, status, output string) int64 {
	t.Helper()
	run, err := r.db.CreateRun(ctx, store.NewRun{AgentID: r.agent.ID, EnvironmentID: env, UserID: &r.user.ID, Input: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if status != "" {
		if _, err := r.db.FinishRun(ctx, run.ID, store.RunOutcome{Status: status, Output: output}); err != nil {
			t.Fatal(err)
		}
	}
	return run.ID
}

// generation is a succeeded generation of env's archetype.
func (r *rig) generation(t *testing.T, title, description, body string) int64 {
	t.Helper()
	g, err := r.db.CreateCIERunWithJob(ctx, store.NewCIERun{ArchetypeID: r.archetype.ID, EnvironmentID: r.env.ID, UserID: &r.user.ID,
		SystemPrompt: "s", UserPrompt: "u"}, store.RunJob{Kind: "cie.run", Payload: func(id int64) any { return map[string]int64{"run_id": id} }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.db.FinishCIERun(ctx, g.ID, store.CIEOutcome{Status: store.RunSucceeded, Title: title, Description: description, Body: body}); err != nil {
		t.Fatal(err)
	}
	return g.ID
}

// Both targets make a draft of a run's output by the same rules: the
// first heading outside code is the title, a level-1 one leaves the body,
// and the post records the run.
func TestFromRun(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	output := "```md\n# Not this\n```\n\n# Ten Tips for Café Owners\n\nRunning a café is *hard*.\nHere is how.\n\n## One\n\nText.\n"
	for _, kind := range []string{store.PostWordPress, store.PostAstro} {
		t.Run(kind, func(t *testing.T) {
			p, err := r.svc.FromRun(ctx, store.Everything, r.user.ID, r.run(t, &r.env.ID, store.RunSucceeded, output), kind, "")
			if err != nil {
				t.Fatal(err)
			}
			if p.Kind != kind || p.Title != "Ten Tips for Café Owners" || p.Detail == "" {
				t.Fatalf("post %+v", p)
			}
			switch kind {
			case store.PostWordPress:
				w := p.WordPress
				if w.Status != "draft" || w.RunID == nil || w.Slug != "ten-tips-for-cafe-owners" || w.Excerpt != "" ||
					strings.Contains(w.Content, "# Ten Tips") || !strings.Contains(w.Content, "# Not this") || w.CreatedBy == nil || *w.CreatedBy != r.user.ID {
					t.Errorf("wordpress %+v", w)
				}
			case store.PostAstro:
				a := p.Astro
				if !a.Draft || a.RunID == nil || a.Slug != "ten-tips-for-cafe-owners" || a.Description != "Running a café is *hard*. Here is how." ||
					strings.Contains(a.Body, "# Ten Tips") || !strings.Contains(a.Body, "# Not this") {
					t.Errorf("astro %+v", a)
				}
				if _, err := os.Stat(filepath.Join(r.dir, a.FileName())); err != nil {
					t.Error(err)
				}
			}
			p, err = r.svc.FromRun(ctx, store.Everything, r.user.ID, r.run(t, &r.env.ID, store.RunSucceeded, "no heading here"), kind, "  Given  ")
			if err != nil || p.Title != "Given" {
				t.Fatalf("given title: %+v %v", p, err)
			}
			// Without a heading, the first line of text is the title, and
			// it stays in the body.
			plain := "```\ncode first\n```\n\n**Espresso at home** is easier than it looks.\n\nMore text."
			p, err = r.svc.FromRun(ctx, store.Everything, r.user.ID, r.run(t, &r.env.ID, store.RunSucceeded, plain), kind, "")
			if err != nil || p.Title != "Espresso at home is easier than it looks." {
				t.Fatalf("first-line title: %+v %v", p, err)
			}
		})
	}
}

// What cannot be saved is refused the same way whatever the target.
func TestFromRunRefusals(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	other := store.NewScope(r.user.ID+99, false, nil)
	cases := []struct {
		name   string
		sc     store.Scope
		run    int64
		kind   string
		want   store.Kind
		detail string
	}{
		{"OnlyCode", store.Everything, r.run(t, &r.env.ID, store.RunSucceeded, "```\nx := 1\n```"), "", store.KindInvalid, "no line of text"},
		{"EmptyOutput", store.Everything, r.run(t, &r.env.ID, store.RunSucceeded, " \n\t"), "", store.KindConflict, "is empty"},
		{"Failed", store.Everything, r.run(t, &r.env.ID, store.RunFailed, "# T\n\nx"), "", store.KindConflict, "only the output of a succeeded run"},
		{"Queued", store.Everything, r.run(t, &r.env.ID, "", ""), "", store.KindConflict, "is queued"},
		{"OutsideEnvironments", store.Everything, r.run(t, nil, store.RunSucceeded, "# T\n\nx"), "", store.KindInvalid, "outside any environment"},
		{"NotSeen", other, r.run(t, &r.env.ID, store.RunSucceeded, "# T\n\nx"), "", store.KindNotFound, ""},
		{"UnknownRun", store.Everything, 99999, "", store.KindNotFound, ""},
		{"UnknownTarget", store.Everything, r.run(t, &r.env.ID, store.RunSucceeded, "# T\n\nx"), "ghost", store.KindInvalid, "target: must be one of wordpress, astro"},
	}
	for _, c := range cases {
		kinds := []string{store.PostWordPress, store.PostAstro}
		if c.kind != "" {
			kinds = []string{c.kind}
		}
		for _, kind := range kinds {
			t.Run(c.name+"/"+kind, func(t *testing.T) {
				// With a title too: an empty output stays empty.
				title := ""
				if c.name == "EmptyOutput" {
					title = "A title"
				}
				p, err := r.svc.FromRun(ctx, c.sc, r.user.ID, c.run, kind, title)
				if p != nil {
					t.Fatalf("made %+v", p)
				}
				storetest.WantKind(t, err, c.want)
				if !strings.Contains(store.Message(err), c.detail) {
					t.Errorf("detail %q lacks %q", store.Message(err), c.detail)
				}
			})
		}
	}
	if n := countPosts(t, r.db); n != 0 {
		t.Fatalf("%d posts made by refused saves", n)
	}
}

func countPosts(t *testing.T, db *store.DB) int {
	t.Helper()
	_, wp, err := db.ListWordPressPosts(ctx, store.WordPressPostFilter{Scope: store.Everything, Page: store.Page{Page: 1, PerPage: 1}})
	if err != nil {
		t.Fatal(err)
	}
	_, astro, err := db.ListAstroPosts(ctx, store.AstroPostFilter{Scope: store.Everything, Page: store.Page{Page: 1, PerPage: 1}})
	if err != nil {
		t.Fatal(err)
	}
	return wp + astro
}

// A generation's article gives its title, description and body to either
// target; a title given wins.
func TestFromGeneration(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	g := r.generation(t, "Rye bread at home", "A slow loaf for beginners.", "## Flour\n\nDark rye.")
	wp, err := r.svc.FromGeneration(ctx, store.Everything, 0, g, store.PostWordPress, "")
	if err != nil {
		t.Fatal(err)
	}
	if w := wp.WordPress; w.Title != "Rye bread at home" || w.Excerpt != "A slow loaf for beginners." || w.Content != "## Flour\n\nDark rye." ||
		w.CIERunID == nil || *w.CIERunID != g || w.CreatedBy != nil {
		t.Errorf("wordpress %+v", w)
	}
	astro, err := r.svc.FromGeneration(ctx, store.Everything, r.user.ID, g, store.PostAstro, "Our rye")
	if err != nil {
		t.Fatal(err)
	}
	if a := astro.Astro; a.Title != "Our rye" || a.Description != "A slow loaf for beginners." || !a.Draft || a.CIERunID == nil {
		t.Errorf("astro %+v", a)
	}
}

// The resolver names a target, and tells whether an environment's
// configuration sets it up.
func TestFor(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	for _, kind := range []string{store.PostWordPress, store.PostAstro} {
		if tg, err := r.svc.For(r.env, kind); err != nil || tg.Kind() != kind {
			t.Errorf("%s in a configured environment: %v", kind, err)
		}
		_, err := r.svc.For(r.bare, kind)
		storetest.WantKind(t, err, store.KindConflict)
		if !strings.Contains(store.Message(err), "configuration") {
			t.Errorf("%s: %q does not say what to configure", kind, store.Message(err))
		}
	}
	_, err := r.svc.For(r.env, "ghost")
	storetest.WantKind(t, err, store.KindInvalid)
}

// Publishing an Astro post clears its draft flag once; any other status
// leaves the draft as it is and says it did nothing.
func TestAstroPublish(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	tg, err := r.svc.Target(store.PostAstro)
	if err != nil {
		t.Fatal(err)
	}
	p, err := r.svc.FromRun(ctx, store.Everything, r.user.ID, r.run(t, &r.env.ID, store.RunSucceeded, "# Rye\n\nBread."), store.PostAstro, "")
	if err != nil {
		t.Fatal(err)
	}
	left, err := tg.Publish(ctx, store.Everything, p.ID, "draft")
	if err != nil || !left.Skipped || !left.Astro.Draft {
		t.Fatalf("draft: %+v %v", left, err)
	}
	for i := 0; i < 2; i++ {
		pub, err := tg.Publish(ctx, store.Everything, p.ID, "publish")
		if err != nil || pub.Skipped || pub.Astro.Draft || !strings.Contains(pub.Detail, "no longer a draft") {
			t.Fatalf("publish %d: %+v %v", i, pub, err)
		}
	}
	got, err := tg.Get(ctx, store.Everything, p.ID)
	if err != nil || got.Astro.Draft {
		t.Fatalf("after publishing: %+v %v", got, err)
	}
	if b, err := os.ReadFile(filepath.Join(r.dir, got.Astro.FileName())); err != nil || strings.Contains(string(b), "draft: true") {
		t.Fatalf("file: %s %v", b, err)
	}
	_, err = tg.Get(ctx, store.NewScope(r.user.ID+99, false, nil), p.ID)
	storetest.WantKind(t, err, store.KindNotFound)
}
