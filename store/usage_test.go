package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/copydesk/copydesk/store"
)

// The usage filter keeps what the scope sees: a visible environment's
// events, and the caller's own events outside any environment.
func TestUsageFilterScope(t *testing.T) {
	db, _ := openDB(t)
	ctx := context.Background()
	ann := mustUser(t, db, "ann", store.RoleViewer)
	bob := mustUser(t, db, "bob", store.RoleViewer)
	var envs []int64
	for _, name := range []string{"a", "b"} {
		e, err := db.CreateEnvironment(ctx, store.NewEnvironment{Name: name, Slug: name})
		if err != nil {
			t.Fatal(err)
		}
		envs = append(envs, e.ID)
	}
	ids := map[string]int64{}
	for _, ev := range []struct {
		name       string
		user, envi *int64
	}{
		{"annInA", &ann.ID, &envs[0]}, {"bobInA", &bob.ID, &envs[0]}, {"bobInB", &bob.ID, &envs[1]},
		{"annOutside", &ann.ID, nil}, {"bobOutside", &bob.ID, nil}, {"systemOutside", nil, nil},
	} {
		id, err := db.RecordUsage(ctx, store.UsageEvent{Provider: "openai", Model: "m", Status: "ok", Source: "test",
			UserID: ev.user, EnvironmentID: ev.envi})
		if err != nil {
			t.Fatal(err)
		}
		ids[ev.name] = id
	}
	cases := []struct {
		name  string
		scope store.Scope
		want  []string // newest first
	}{
		{"Everything", store.Everything, []string{"systemOutside", "bobOutside", "annOutside", "bobInB", "bobInA", "annInA"}},
		{"AnnGrantedA", store.NewScope(ann.ID, false, []int64{envs[0]}), []string{"annOutside", "bobInA", "annInA"}},
		{"BobGrantedNothing", store.NewScope(bob.ID, false, nil), []string{"bobOutside"}},
		{"Zero", store.Scope{}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			list, total, err := db.ListUsage(ctx, store.UsageFilter{Scope: c.scope}, store.Page{Page: 1, PerPage: 50})
			if err != nil {
				t.Fatal(err)
			}
			var want, got []int64
			for _, n := range c.want {
				want = append(want, ids[n])
			}
			for _, e := range list {
				got = append(got, e.ID)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) || total != len(want) {
				t.Fatalf("sees %v (total %d), want %v", got, total, want)
			}
			sum, err := db.UsageSummary(ctx, store.UsageFilter{Scope: c.scope})
			if err != nil || sum.Calls != int64(len(want)) {
				t.Fatalf("summary: %v, %d calls, want %d", err, sum.Calls, len(want))
			}
		})
	}
}

// A call stopped or cancelled is stored as such (the table allows it), and
// the totals count its tokens and cost, and it apart from the errors.
func TestUsageCancelled(t *testing.T) {
	ctx := context.Background()
	db, _ := openDB(t)
	cost := 0.5
	for _, status := range []string{store.UsageOK, store.UsageError, store.UsageCancelled} {
		if _, err := db.RecordUsage(ctx, store.UsageEvent{Provider: "openai", Model: "m", InputTokens: 10, OutputTokens: 5, Cost: store.MicrosOfUSD(&cost),
			Status: status, Source: "chat"}); err != nil {
			t.Fatalf("%s: %v", status, err)
		}
	}
	if _, err := db.RecordUsage(ctx, store.UsageEvent{Provider: "openai", Model: "m", Status: "stopped", Source: "chat"}); err == nil {
		t.Fatal("a status the table does not know was stored")
	}
	sum, err := db.UsageSummary(ctx, store.UsageFilter{Scope: store.Everything})
	if err != nil || sum.Calls != 3 || sum.Errors != 1 || sum.Cancelled != 1 || sum.InputTokens != 30 || sum.OutputTokens != 15 || sum.Cost != 1_500_000 {
		t.Fatalf("summary %+v (%v)", sum, err)
	}
	list, n, err := db.ListUsage(ctx, store.UsageFilter{UsageMatch: store.UsageMatch{Status: store.UsageCancelled}, Scope: store.Everything}, store.Page{Page: 1, PerPage: 10})
	if err != nil || n != 1 || list[0].Status != store.UsageCancelled {
		t.Fatalf("cancelled events: %d (%v)", n, err)
	}
}

// An environment's spend since a time: the known costs, and the tokens of
// every call, priced or not; the token budget is stored and read back.
func TestEnvironmentSpendSince(t *testing.T) {
	ctx := context.Background()
	db, _ := openDB(t)
	env, err := db.CreateEnvironment(ctx, store.NewEnvironment{Name: "Site", Slug: "site"})
	if err != nil {
		t.Fatal(err)
	}
	now := db.Now()
	cost := store.Micros(16)
	for _, e := range []store.UsageEvent{
		{CreatedAt: now, InputTokens: 100, OutputTokens: 50, Cost: &cost},
		{CreatedAt: now, InputTokens: 1000, OutputTokens: 500, Status: store.UsageCancelled}, // unpriced, stopped
		{CreatedAt: now.Add(-48 * time.Hour), InputTokens: 7, OutputTokens: 7, Cost: &cost},  // before
	} {
		e.Provider, e.Model, e.Source, e.EnvironmentID = "openai", "m", "chat", &env.ID
		if e.Status == "" {
			e.Status = store.UsageOK
		}
		if _, err := db.RecordUsage(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	s, err := db.EnvironmentSpendSince(ctx, env.ID, now.Add(-time.Hour))
	if err != nil || s.Cost != 16 || s.Tokens != 1650 {
		t.Fatalf("spend %+v (%v), want 16 micros and 1650 tokens", s, err)
	}
	budget := int64(5000)
	if _, err := db.PutAISettings(ctx, store.AISettings{EnvironmentID: &env.ID, MonthlyBudgetTokens: &budget}); err != nil {
		t.Fatal(err)
	}
	got, err := db.AISettingsFor(ctx, &env.ID)
	if err != nil || got.MonthlyBudgetTokens == nil || *got.MonthlyBudgetTokens != 5000 || got.MonthlyBudget != nil {
		t.Fatalf("settings %+v (%v)", got, err)
	}
}
