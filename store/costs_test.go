package store_test

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"github.com/copydesk/copydesk/store"
)

// Migration 0007 turns the infinite costs stored while price overrides had
// no upper bound into unknown ones, which JSON can hold.
func TestInfiniteCostsMigration(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := store.Open(ctx, path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	u, err := db.CreateUser(ctx, store.NewUser{Email: "ann@example.com", Username: "ann", PasswordHash: "x", Role: store.RoleAdmin})
	if err != nil {
		t.Fatal(err)
	}
	ag, err := db.CreateAgent(ctx, store.AgentInput{Name: "Writer", Kind: "writer", IsActive: true}, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	run, err := db.CreateRun(ctx, store.NewRun{AgentID: ag.ID, UserID: &u.ID, Input: "x"})
	if err != nil {
		t.Fatal(err)
	}
	inf, fine := math.Inf(1), 0.25
	for _, c := range []*float64{&inf, &fine} {
		if _, err := db.RecordUsage(ctx, store.UsageEvent{Provider: "openai", Model: "m", CostUSD: c, Status: "ok", Source: "chat"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	raw := rawDB(t, path)
	for _, q := range []string{
		`UPDATE agent_runs SET cost_usd = 9e999`,
		`DELETE FROM schema_migrations WHERE version = 7`,
	} {
		if _, err := raw.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := raw.Close(); err != nil {
		t.Fatal(err)
	}

	db, err = store.Open(ctx, path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	r, err := db.RunByID(ctx, run.ID)
	if err != nil || r.CostUSD != nil {
		t.Fatalf("run cost = %v (%v), want nil", r.CostUSD, err)
	}
	evs, _, err := db.ListUsage(ctx, store.UsageFilter{Scope: store.Everything}, store.Page{Page: 1, PerPage: 10})
	if err != nil || len(evs) != 2 {
		t.Fatalf("usage: %v %v", evs, err)
	}
	for _, ev := range evs {
		if ev.CostUSD != nil && *ev.CostUSD != fine {
			t.Errorf("usage %d cost = %v, want nil or %v", ev.ID, *ev.CostUSD, fine)
		}
	}
	if evs[0].CostUSD != nil && evs[1].CostUSD != nil {
		t.Error("the infinite cost is still there")
	}
}
