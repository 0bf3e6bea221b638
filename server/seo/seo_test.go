package seo_test

import (
	"context"
	"strings"
	"testing"

	"github.com/copydesk/copydesk/server/environment"
	"github.com/copydesk/copydesk/server/seo"
	"github.com/copydesk/copydesk/server/seo/seotest"
	"github.com/copydesk/copydesk/store"
	"github.com/copydesk/copydesk/store/storetest"
)

// fixture is a service over a real database with environments A (the
// editor's) and B (not), an agent of A, one of B and a global one, and
// an archetype of A and one of B.
type fixture struct {
	db                     *store.DB
	svc                    *seo.Service
	editor                 store.Scope
	envA, envB             *store.Environment
	agentA, agentB, agentG *store.Agent
	archA, archB           *store.Archetype
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	db, _ := storetest.OpenDB(t)
	f := &fixture{db: db, svc: seo.New(db, environment.New(db))}
	var err error
	for _, e := range []**store.Environment{&f.envA, &f.envB} {
		slug := "a"
		if e == &f.envB {
			slug = "b"
		}
		if *e, err = db.CreateEnvironment(ctx, store.NewEnvironment{Name: strings.ToUpper(slug), Slug: slug}); err != nil {
			t.Fatal(err)
		}
	}
	u := storetest.MustUser(t, db, "ed", store.RoleEditor)
	f.editor = store.NewScope(u.ID, false, []int64{f.envA.ID})
	mk := func(env *int64, name string) *store.Agent {
		a, err := db.CreateAgent(ctx, store.AgentInput{EnvironmentID: env, Name: name, Kind: "writer", IsActive: true}, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	f.agentA, f.agentB, f.agentG = mk(&f.envA.ID, "A"), mk(&f.envB.ID, "B"), mk(nil, "G")
	arch := func(env int64) *store.Archetype {
		a, err := db.CreateArchetype(ctx, store.ArchetypeInput{EnvironmentID: &env, Name: "arch", PromptTemplate: "About {{keyword}}", TargetWords: 500}, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	f.archA, f.archB = arch(f.envA.ID), arch(f.envB.ID)
	return f
}

func TestImportMergesAndUpdates(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	if _, err := f.svc.CreateKeyword(ctx, f.editor, seo.KeywordInput{EnvironmentID: f.envA.ID, Keyword: "Running Shoes", Status: "planned",
		Cluster: "shoes"}); err != nil {
		t.Fatal(err)
	}
	rows := []seotest.Row{
		{Keyword: "running shoes", Volume: "74000", Difficulty: "78", CPC: "1.20", Intents: "Commercial"},
		{Keyword: "trail shoes", Volume: "9900", Difficulty: "40", CPC: "0.80"},
		{Keyword: "TRAIL   shoes", Volume: "12000", Difficulty: "", CPC: "", Intents: "Transactional"},
		{Keyword: "", Volume: "1"},
	}
	p, err := seo.Parse(seotest.AhrefsCSV(rows))
	if err != nil {
		t.Fatal(err)
	}
	res, err := f.svc.Import(ctx, f.editor, f.envA.ID, p)
	if err != nil {
		t.Fatal(err)
	}
	if res.Rows != 4 || res.Imported != 1 || res.Updated != 1 || res.Duplicates != 1 || res.Rejected != 1 || len(res.Rejections) != 1 ||
		res.Rejections[0].Line != 5 {
		t.Fatalf("result: %+v", res)
	}
	list, total, err := f.svc.ListKeywords(ctx, f.editor, seo.KeywordQuery{EnvironmentID: f.envA.ID, Sort: store.ParseSort("keyword"),
		Page: store.Page{Page: 1, PerPage: 10}})
	if err != nil || total != 2 {
		t.Fatalf("list: %d %v", total, err)
	}
	run, trail := list[0], list[1]
	if run.Status != "planned" || run.Cluster != "shoes" || *run.SearchVolume != 74000 || run.Source != "manual" {
		t.Fatalf("updated keyword: %+v", run)
	}
	// The later row's volume and intent, the earlier row's difficulty and
	// CPC (the later one had none).
	if trail.Keyword != "trail shoes" || *trail.SearchVolume != 12000 || *trail.Difficulty != 40 || *trail.CPC != 0.8 ||
		strings.Join(trail.Intent, ",") != "transactional" || trail.Source != "import:ahrefs" {
		t.Fatalf("merged keyword: %+v", trail)
	}
	t.Run("EnvironmentNotSeen", func(t *testing.T) {
		_, err := f.svc.Import(ctx, f.editor, f.envB.ID, p)
		storetest.WantKind(t, err, store.KindInvalid)
	})
	t.Run("RejectionsCapped", func(t *testing.T) {
		var b strings.Builder
		b.WriteString("Keyword,Volume,Keyword Difficulty\n")
		for i := 0; i < seo.MaxListedRejections+7; i++ {
			b.WriteString(",1,1\n")
		}
		p, err := seo.Parse([]byte(b.String()))
		if err != nil {
			t.Fatal(err)
		}
		res, err := f.svc.Import(ctx, f.editor, f.envA.ID, p)
		if err != nil || res.Rejected != seo.MaxListedRejections+7 || len(res.Rejections) != seo.MaxListedRejections || res.More != 7 ||
			res.Imported != 0 {
			t.Fatalf("%+v %v", res, err)
		}
	})
}

func TestKeywordRules(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	postB, err := f.db.CreateWordPressPost(ctx, store.NewWordPressPost{EnvironmentID: f.envB.ID, Title: "B", Slug: "b", Status: "draft"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		in     seo.KeywordInput
		detail string // "" for success
	}{
		{"OK", seo.KeywordInput{Keyword: "shoes", SearchVolume: i64(10), SearchVolumeHigh: i64(100), Currency: "eur",
			Intent: []string{"commercial"}, TargetURL: "/shoes"}, ""},
		{"Taken", seo.KeywordInput{Keyword: " SHOES "}, "keyword: this environment has this keyword already"},
		{"Empty", seo.KeywordInput{Keyword: "  "}, "keyword: is empty"},
		{"ControlCharacter", seo.KeywordInput{Keyword: "a\x00b"}, "keyword: must not contain control characters"},
		{"TooLong", seo.KeywordInput{Keyword: strings.Repeat("x", 201)}, "keyword: must be at most 200 characters"},
		{"Difficulty", seo.KeywordInput{Keyword: "d", Difficulty: i64(101)}, "difficulty: must be from 0 to 100"},
		{"RangeBackwards", seo.KeywordInput{Keyword: "r", SearchVolume: i64(100), SearchVolumeHigh: i64(10)}, "search_volume_high: must be at least"},
		{"RangeWithoutLow", seo.KeywordInput{Keyword: "r", SearchVolumeHigh: i64(10)}, "search_volume_high: comes with search_volume"},
		{"Currency", seo.KeywordInput{Keyword: "c", Currency: "euro"}, "currency: must be a three-letter ISO 4217 code"},
		{"Intent", seo.KeywordInput{Keyword: "i", Intent: []string{"local"}}, "intent: each must be one of"},
		{"Status", seo.KeywordInput{Keyword: "s", Status: "done"}, "status: must be one of new, planned"},
		{"TargetURL", seo.KeywordInput{Keyword: "u", TargetURL: "javascript:alert(1)"}, "target_url: must be an http(s) address"},
		{"PostOfAnotherEnvironment", seo.KeywordInput{Keyword: "p", Post: &store.PostRef{Kind: "wordpress", ID: postB.ID}},
			"post_id: no wordpress post with id"},
		{"PostKind", seo.KeywordInput{Keyword: "p", Post: &store.PostRef{Kind: "ghost", ID: 1}}, "post_kind: must be wordpress or astro"},
	}
	for _, c := range cases {
		c.in.EnvironmentID = f.envA.ID
		k, err := f.svc.CreateKeyword(ctx, f.editor, c.in)
		if c.detail == "" {
			if err != nil || k.Currency != "EUR" || *k.SearchVolumeHigh != 100 || k.Status != "new" {
				t.Errorf("%s: %+v %v", c.name, k, err)
			}
			continue
		}
		if err == nil || !strings.Contains(store.Message(err), c.detail) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.detail)
		}
	}
	if _, err := f.svc.CreateKeyword(ctx, f.editor, seo.KeywordInput{EnvironmentID: f.envB.ID, Keyword: "x"}); store.KindOf(err) != store.KindInvalid {
		t.Errorf("a keyword in an environment not granted: %v", err)
	}
}

func TestCampaignRules(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	kwB, err := f.db.CreateKeyword(ctx, store.NewKeyword{EnvironmentID: f.envB.ID, Keyword: "b", Status: "new", Source: "manual"})
	if err != nil {
		t.Fatal(err)
	}
	base := func(mod func(*seo.CampaignInput)) seo.CampaignInput {
		in := seo.CampaignInput{EnvironmentID: f.envA.ID, CampaignInput: store.CampaignInput{Name: "Spring", Target: "astro"}}
		mod(&in)
		return in
	}
	cases := []struct {
		name   string
		in     seo.CampaignInput
		kind   store.Kind
		detail string
	}{
		{"AgentOfAnotherEnvironment", base(func(in *seo.CampaignInput) { in.AgentID = &f.agentB.ID }), store.KindInvalid, "agent_id: no agent with id"},
		{"ArchetypeOfAnotherEnvironment", base(func(in *seo.CampaignInput) { in.ArchetypeID = &f.archB.ID }), store.KindInvalid, "archetype_id: no archetype with id"},
		{"KeywordOfAnotherEnvironment", base(func(in *seo.CampaignInput) { in.KeywordIDs = []int64{kwB.ID} }), store.KindInvalid, "keyword_ids: no keyword with id"},
		{"ActiveWithoutAgent", base(func(in *seo.CampaignInput) { in.Status = "active"; in.ArchetypeID = &f.archA.ID }), store.KindConflict, "an active campaign needs an agent"},
		{"ActiveWithoutArchetype", base(func(in *seo.CampaignInput) { in.Status = "active"; in.AgentID = &f.agentA.ID }), store.KindConflict, "an active campaign needs an archetype"},
		{"ActiveWithoutTarget", base(func(in *seo.CampaignInput) {
			in.Status, in.AgentID, in.ArchetypeID = "active", &f.agentG.ID, &f.archA.ID
		}), store.KindConflict, "has no Astro project"},
		{"Cadence", base(func(in *seo.CampaignInput) { in.Cadence = 101 }), store.KindInvalid, "cadence: must be from 1 to 100"},
		{"Target", base(func(in *seo.CampaignInput) { in.Target = "ghost" }), store.KindInvalid, "target: must be wordpress or astro"},
	}
	for _, c := range cases {
		_, err := f.svc.CreateCampaign(ctx, f.editor, c.in)
		if store.KindOf(err) != c.kind || !strings.Contains(store.Message(err), c.detail) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.detail)
		}
	}

	// The environment's default agent and archetype fill in, and with an
	// Astro project the campaign may become active.
	cfg := store.EnvironmentConfig{Astro: &store.AstroConfig{ProjectPath: t.TempDir(), ContentDir: "src/content/blog"},
		DefaultAgentID: &f.agentA.ID, DefaultArchetypeID: &f.archA.ID}
	if _, err := f.db.UpdateEnvironment(ctx, f.envA.ID, store.EnvironmentUpdate{Configuration: &cfg}); err != nil {
		t.Fatal(err)
	}
	c, err := f.svc.CreateCampaign(ctx, f.editor, base(func(*seo.CampaignInput) {}))
	if err != nil {
		t.Fatal(err)
	}
	if *c.AgentID != f.agentA.ID || *c.ArchetypeID != f.archA.ID || c.Status != "draft" || c.Cadence != 1 || c.PostStatus != "draft" {
		t.Fatalf("defaults: %+v", c)
	}
	c, err = f.svc.UpdateCampaign(ctx, f.editor, c.ID, seo.CampaignChange{Status: ptr("active")})
	if err != nil || c.Status != "active" {
		t.Fatalf("activate: %+v %v", c, err)
	}
	// An inactive agent cannot be given to an active campaign.
	off := false
	if _, err := f.db.ReplaceAgent(ctx, f.agentG.ID, store.AgentInput{Name: "G", Kind: "writer", IsActive: off}); err != nil {
		t.Fatal(err)
	}
	_, err = f.svc.UpdateCampaign(ctx, f.editor, c.ID, seo.CampaignChange{AgentID: &f.agentG.ID})
	storetest.WantKind(t, err, store.KindConflict)
	// Renaming keeps the rest; taking the agent away from a paused one is
	// fine.
	c, err = f.svc.UpdateCampaign(ctx, f.editor, c.ID, seo.CampaignChange{Status: ptr("paused"), AgentID: ptr(int64(0)), Name: ptr(" Summer ")})
	if err != nil || c.Name != "Summer" || c.AgentID != nil || *c.ArchetypeID != f.archA.ID {
		t.Fatalf("pause: %+v %v", c, err)
	}
	t.Run("AgentsCampaigns", func(t *testing.T) {
		if _, err := f.svc.UpdateCampaign(ctx, f.editor, c.ID, seo.CampaignChange{AgentID: &f.agentA.ID}); err != nil {
			t.Fatal(err)
		}
		list, total, err := f.svc.AgentCampaigns(ctx, f.editor, f.agentA.ID, seo.CampaignQuery{Page: store.Page{Page: 1, PerPage: 10}})
		if err != nil || total != 1 || list[0].ID != c.ID {
			t.Fatalf("%d %+v %v", total, list, err)
		}
		_, _, err = f.svc.AgentCampaigns(ctx, f.editor, f.agentB.ID, seo.CampaignQuery{Page: store.Page{Page: 1, PerPage: 10}})
		storetest.WantKind(t, err, store.KindNotFound)
	})
}
