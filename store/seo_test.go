package store_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/copydesk/copydesk/store"
	"github.com/copydesk/copydesk/store/storetest"
)

func TestKeywordKey(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, display, key string }{
		{"Best Running Shoes", "Best Running Shoes", "best running shoes"},
		{"  best\trunning \u00a0 shoes\n", "best running shoes", "best running shoes"},
		{"Cafe\u0301 Latte", "Caf\u00e9 Latte", "caf\u00e9 latte"}, // combining accent → NFC
		{"CAFÉ LATTE", "CAFÉ LATTE", "café latte"},
		{"İstanbul", "İstanbul", "istanbul"},
		{"", "", ""},
	}
	for _, c := range cases {
		if got := store.KeywordDisplay(c.in); got != c.display {
			t.Errorf("KeywordDisplay(%q) = %q, want %q", c.in, got, c.display)
		}
		if got := store.KeywordKey(c.in); got != c.key {
			t.Errorf("KeywordKey(%q) = %q, want %q", c.in, got, c.key)
		}
	}
	bits, ok := store.IntentBits([]string{"navigational", "informational"})
	if !ok || bits != 9 || !slices.Equal(store.IntentNames(bits), []string{"informational", "navigational"}) {
		t.Errorf("intents: %d %v %v", bits, ok, store.IntentNames(bits))
	}
	if _, ok := store.IntentBits([]string{"local"}); ok {
		t.Error("local is not an intent")
	}
}

func TestKeywords(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, clk := openDB(t)
	envA, envB := mustEnv(t, db, "a"), mustEnv(t, db, "b")

	k, err := db.CreateKeyword(ctx, store.NewKeyword{EnvironmentID: envA.ID, Keyword: " Running  Shoes ", SearchVolume: ptr(int64(1000)),
		Status: store.KeywordNew, Source: "manual", Intent: 2})
	if err != nil {
		t.Fatal(err)
	}
	if k.Keyword != "Running Shoes" || k.Key != "running shoes" || !slices.Equal(k.Intent, []string{"commercial"}) || k.Post != nil {
		t.Fatalf("created: %+v", k)
	}
	t.Run("SameKeyOneEnvironment", func(t *testing.T) {
		_, err := db.CreateKeyword(ctx, store.NewKeyword{EnvironmentID: envA.ID, Keyword: "RUNNING shoes", Status: "new", Source: "manual"})
		storetest.WantKind(t, err, store.KindConflict)
		if _, err := db.CreateKeyword(ctx, store.NewKeyword{EnvironmentID: envB.ID, Keyword: "running shoes", Status: "new", Source: "manual"}); err != nil {
			t.Fatalf("another environment may have it: %v", err)
		}
	})
	t.Run("PostLinkGoesWithThePost", func(t *testing.T) {
		post, err := db.CreateWordPressPost(ctx, store.NewWordPressPost{EnvironmentID: envA.ID, Title: "Shoes", Slug: "shoes", Status: "draft"})
		if err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Second)
		up, err := db.UpdateKeyword(ctx, k.ID, store.KeywordUpdate{Post: &store.PostRef{Kind: store.PostWordPress, ID: post.ID},
			Status: ptr(store.KeywordPublished)})
		if err != nil {
			t.Fatal(err)
		}
		if up.Post == nil || *up.Post != (store.PostRef{Kind: "wordpress", ID: post.ID}) || up.Status != "published" || !up.UpdatedAt.After(k.UpdatedAt) {
			t.Fatalf("linked: %+v", up)
		}
		if err := db.DeleteWordPressPost(ctx, post.ID); err != nil {
			t.Fatal(err)
		}
		got, err := db.KeywordByID(ctx, k.ID)
		if err != nil || got.Post != nil {
			t.Fatalf("after the post's delete: %+v %v", got, err)
		}
	})
	t.Run("BulkSkipsWhatTheScopeDoesNotSee", func(t *testing.T) {
		other, err := db.CreateKeyword(ctx, store.NewKeyword{EnvironmentID: envB.ID, Keyword: "trail shoes", Status: "new", Source: "manual"})
		if err != nil {
			t.Fatal(err)
		}
		sc := store.NewScope(9, false, []int64{envA.ID})
		n, err := db.BulkUpdateKeywords(ctx, sc, []int64{k.ID, other.ID, 99999, k.ID}, store.KeywordBulkUpdate{Cluster: ptr("shoes"), Intent: ptr(5)})
		if err != nil || n != 1 {
			t.Fatalf("bulk update: %d %v", n, err)
		}
		if got, _ := db.KeywordByID(ctx, other.ID); got.Cluster != "" {
			t.Fatalf("a keyword the scope does not see changed: %+v", got)
		}
		if got, _ := db.KeywordByID(ctx, k.ID); got.Cluster != "shoes" || !slices.Equal(got.Intent, []string{"informational", "transactional"}) {
			t.Fatalf("bulk update: %+v", got)
		}
		n, err = db.BulkDeleteKeywords(ctx, sc, []int64{other.ID, 99999})
		if err != nil || n != 0 {
			t.Fatalf("bulk delete of nothing visible: %d %v", n, err)
		}
		n, err = db.BulkDeleteKeywords(ctx, store.Everything, []int64{other.ID})
		if err != nil || n != 1 {
			t.Fatalf("bulk delete: %d %v", n, err)
		}
	})
}

func TestImportKeywords(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := openDB(t)
	env := mustEnv(t, db, "a")
	k, err := db.CreateKeyword(ctx, store.NewKeyword{EnvironmentID: env.ID, Keyword: "Running Shoes", SearchVolume: ptr(int64(10)),
		Difficulty: ptr(int64(40)), Status: store.KeywordPlanned, Cluster: "shoes", Source: "manual", Intent: 1})
	if err != nil {
		t.Fatal(err)
	}
	counts, err := db.ImportKeywords(ctx, env.ID, "import:google", []store.ImportRow{
		{Keyword: "running  SHOES", SearchVolume: ptr(int64(1000)), SearchVolumeHigh: ptr(int64(10000)), CPC: ptr(1.5), Currency: "EUR"},
		{Keyword: "Trail Shoes", SearchVolume: ptr(int64(500)), Intent: 4, ParentKeyword: "shoes"},
	})
	if err != nil || counts != (store.ImportCounts{Created: 1, Updated: 1}) {
		t.Fatalf("import: %+v %v", counts, err)
	}
	got, err := db.KeywordByID(ctx, k.ID)
	if err != nil {
		t.Fatal(err)
	}
	// The metrics in the file replace the old ones; what the file does not
	// say (difficulty, intent) and what the user decided stay.
	if got.Keyword != "Running Shoes" || *got.SearchVolume != 1000 || *got.SearchVolumeHigh != 10000 || *got.Difficulty != 40 ||
		*got.CPC != 1.5 || got.Currency != "EUR" || !slices.Equal(got.Intent, []string{"informational"}) ||
		got.Status != "planned" || got.Cluster != "shoes" || got.Source != "manual" {
		t.Fatalf("updated keyword: %+v", got)
	}
	list, total, err := db.ListKeywords(ctx, store.KeywordFilter{EnvironmentID: env.ID, Q: "trail", Page: store.Page{Page: 1, PerPage: 10}})
	if err != nil || total != 1 || list[0].Source != "import:google" || list[0].ParentKeyword != "shoes" || list[0].Status != "new" {
		t.Fatalf("imported keyword: %d %+v %v", total, list, err)
	}
	// An exact volume later drops the range.
	if _, err := db.ImportKeywords(ctx, env.ID, "import:ahrefs", []store.ImportRow{{Keyword: "running shoes", SearchVolume: ptr(int64(2400))}}); err != nil {
		t.Fatal(err)
	}
	if got, _ := db.KeywordByID(ctx, k.ID); *got.SearchVolume != 2400 || got.SearchVolumeHigh != nil || *got.CPC != 1.5 {
		t.Fatalf("exact volume: %+v", got)
	}
}

func TestCampaignKeywords(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := openDB(t)
	envA, envB := mustEnv(t, db, "a"), mustEnv(t, db, "b")
	u := storetest.MustUser(t, db, "ed", store.RoleEditor)
	kw := func(env int64, name string) int64 {
		k, err := db.CreateKeyword(ctx, store.NewKeyword{EnvironmentID: env, Keyword: name, Status: store.KeywordNew, Source: "manual"})
		if err != nil {
			t.Fatal(err)
		}
		return k.ID
	}
	k1, k2, k3, k4 := kw(envA.ID, "one"), kw(envA.ID, "two"), kw(envA.ID, "three"), kw(envA.ID, "four")
	kb := kw(envB.ID, "other")
	in := store.CampaignInput{Name: "Spring", Target: "wordpress", PostStatus: "draft", Cadence: 2, Status: store.CampaignDraft}
	c, err := db.CreateCampaign(ctx, envA.ID, in, []int64{k3, k1, k3}, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	if done, total := c.Progress(); done != 0 || total != 2 || c.KeywordCounts["new"] != 2 {
		t.Fatalf("progress: %d/%d %v", done, total, c.KeywordCounts)
	}
	t.Run("NameTaken", func(t *testing.T) {
		_, err := db.CreateCampaign(ctx, envA.ID, store.CampaignInput{Name: "SPRING", Target: "astro", PostStatus: "draft", Cadence: 1, Status: "draft"}, nil, u.ID)
		storetest.WantKind(t, err, store.KindConflict)
	})
	t.Run("OtherEnvironment", func(t *testing.T) {
		_, err := db.AddCampaignKeywords(ctx, c.ID, []int64{k2, kb})
		storetest.WantKind(t, err, store.KindInvalid)
		if got, _ := db.KeywordByID(ctx, k2); got.CampaignID != nil {
			t.Fatal("a refused add changed a keyword")
		}
	})
	t.Run("InAnotherCampaign", func(t *testing.T) {
		other, err := db.CreateCampaign(ctx, envA.ID, store.CampaignInput{Name: "Autumn", Target: "astro", PostStatus: "draft", Cadence: 1, Status: "draft"},
			[]int64{k4}, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		_, err = db.AddCampaignKeywords(ctx, c.ID, []int64{k2, k4})
		storetest.WantKind(t, err, store.KindConflict)
		if err := db.DeleteCampaign(ctx, other.ID); err != nil {
			t.Fatal(err)
		}
		if got, _ := db.KeywordByID(ctx, k4); got.CampaignID != nil || got.CampaignPosition != nil {
			t.Fatalf("the keyword of a deleted campaign: %+v", got)
		}
	})
	n, err := db.AddCampaignKeywords(ctx, c.ID, []int64{k1, k4, k2})
	if err != nil || n != 2 {
		t.Fatalf("add: %d %v", n, err)
	}
	order := func() []int64 {
		list, _, err := db.ListCampaignKeywords(ctx, c.ID, store.Page{Page: 1, PerPage: 50})
		if err != nil {
			t.Fatal(err)
		}
		var ids []int64
		for _, k := range list {
			ids = append(ids, k.ID)
		}
		return ids
	}
	if got := order(); !slices.Equal(got, []int64{k3, k1, k4, k2}) {
		t.Fatalf("order: %v", got)
	}
	t.Run("ClaimInOrderOnce", func(t *testing.T) {
		if _, err := db.UpdateKeyword(ctx, k1, store.KeywordUpdate{Status: ptr(store.KeywordIgnored)}); err != nil {
			t.Fatal(err)
		}
		// Runs claiming at once each get a different keyword, in the
		// campaign's order, skipping the ignored one; then none is left.
		var mu sync.Mutex
		var got []int64
		var wg sync.WaitGroup
		for range 5 {
			wg.Go(func() {
				k, err := db.ClaimCampaignKeyword(ctx, c.ID)
				if store.IsNotFound(err) {
					return
				}
				if err != nil || k.Status != store.KeywordInProgress {
					t.Errorf("claim: %+v %v", k, err)
					return
				}
				mu.Lock()
				got = append(got, k.ID)
				mu.Unlock()
			})
		}
		wg.Wait()
		slices.Sort(got)
		want := []int64{k2, k3, k4}
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("claimed %v, want each of %v once", got, want)
		}
		cc, err := db.CampaignByID(ctx, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		if done, total := cc.Progress(); done != 0 || total != 3 || cc.KeywordCounts["in_progress"] != 3 || cc.KeywordCounts["ignored"] != 1 {
			t.Fatalf("progress: %d/%d %v", done, total, cc.KeywordCounts)
		}
	})
	n, err = db.RemoveCampaignKeywords(ctx, c.ID, []int64{k3, kb, 12345})
	if err != nil || n != 1 {
		t.Fatalf("remove: %d %v", n, err)
	}
	if got := order(); !slices.Equal(got, []int64{k1, k4, k2}) {
		t.Fatalf("order after remove: %v", got)
	}
}

func TestCampaignKeepsItsAgent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := openDB(t)
	envA, envB := mustEnv(t, db, "a"), mustEnv(t, db, "b")
	u := storetest.MustUser(t, db, "ed", store.RoleEditor)
	ag, err := db.CreateAgent(ctx, store.AgentInput{EnvironmentID: &envA.ID, Name: "W", Kind: "writer", IsActive: true}, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.SetAgentAssignments(ctx, ag.ID, store.Everything, []int64{envB.ID}); err != nil {
		t.Fatal(err)
	}
	for _, env := range []int64{envA.ID, envB.ID} {
		if _, err := db.CreateCampaign(ctx, env, store.CampaignInput{Name: fmt.Sprint("c", env), AgentID: &ag.ID, Target: "astro",
			PostStatus: "draft", Cadence: 1, Status: "draft"}, nil, u.ID); err != nil {
			t.Fatal(err)
		}
	}
	_, err = db.SetAgentAssignments(ctx, ag.ID, store.Everything, nil)
	storetest.WantKind(t, err, store.KindConflict)
	if a, _ := db.AgentByID(ctx, ag.ID); !slices.Equal(a.Assignments, []int64{envB.ID}) {
		t.Fatalf("a refused change changed the assignments: %v", a.Assignments)
	}
	// Deleting the agent leaves the campaigns without one.
	if err := db.DeleteAgent(ctx, ag.ID); err != nil {
		t.Fatal(err)
	}
	list, _, err := db.ListCampaigns(ctx, store.CampaignFilter{Scope: store.Everything, Page: store.Page{Page: 1, PerPage: 10}})
	if err != nil || len(list) != 2 || list[0].AgentID != nil || list[1].AgentID != nil {
		t.Fatalf("campaigns after the agent's delete: %+v %v", list, err)
	}
}
