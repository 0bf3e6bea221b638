package store_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/copydesk/copydesk/store"
)

// The agents and runs lists take the caller's scope: an agent is seen when
// global, of a scope's environment, or assigned to one; a run when in a
// scope's environment, or the caller's own outside any. Agent.VisibleIn
// says the same of one agent.
func TestAgentAndRunScopes(t *testing.T) {
	ctx := context.Background()
	db, _ := openDB(t)
	alice, bob := mustUser(t, db, "alice", store.RoleEditor), mustUser(t, db, "bob", store.RoleEditor)
	a, b := mustEnv(t, db, "a"), mustEnv(t, db, "b")
	agent := func(name string, env *int64) *store.Agent {
		t.Helper()
		ag, err := db.CreateAgent(ctx, store.AgentInput{EnvironmentID: env, Name: name, Kind: "writer", IsActive: true}, alice.ID)
		if err != nil {
			t.Fatal(err)
		}
		return ag
	}
	ownA, ownB, global, shared := agent("own A", &a.ID), agent("own B", &b.ID), agent("global", nil), agent("shared", &b.ID)
	if _, err := db.SetAgentAssignments(ctx, shared.ID, store.Everything, []int64{a.ID}); err != nil {
		t.Fatal(err)
	}
	shared, _ = db.AgentByID(ctx, shared.ID)

	scopeA := store.NewScope(alice.ID, false, []int64{a.ID})
	for _, c := range []struct {
		name string
		sc   store.Scope
		want []string
	}{
		{"Admin", store.Everything, []string{"global", "own A", "own B", "shared"}},
		{"EditorOfA", scopeA, []string{"global", "own A", "shared"}},
		{"NoEnvironments", store.NewScope(bob.ID, false, nil), []string{"global"}},
		{"Zero", store.Scope{}, nil},
	} {
		t.Run("Agents"+c.name, func(t *testing.T) {
			list, total, err := db.ListAgents(ctx, store.AgentFilter{Scope: c.sc, Page: store.Page{Page: 1, PerPage: 10}})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, ag := range list {
				got = append(got, ag.Name)
				if !ag.VisibleIn(c.sc) {
					t.Errorf("%s is listed but not VisibleIn the scope", ag.Name)
				}
			}
			if total != len(c.want) || !slices.Equal(got, c.want) {
				t.Fatalf("got %d %q, want %q", total, got, c.want)
			}
		})
	}
	if ownB.VisibleIn(scopeA) || !shared.VisibleIn(scopeA) || !global.VisibleIn(scopeA) || global.VisibleIn(store.Scope{}) || !ownA.VisibleIn(scopeA) {
		t.Error("VisibleIn disagrees with the list")
	}
	// An agent a request names: one the scope does not see is as one that
	// does not exist; one it sees runs where it is assigned.
	for _, id := range []int64{ownB.ID, 99999} {
		if _, err := store.AgentNamed(ctx, db.AgentByID, scopeA, id); store.KindOf(err) != store.KindInvalid {
			t.Errorf("AgentNamed(%d) for A: %v, want invalid", id, err)
		}
	}
	if ag, err := store.AgentNamed(ctx, db.AgentByID, scopeA, shared.ID); err != nil || ag.ID != shared.ID {
		t.Fatalf("AgentNamed(shared) for A: %v %v", ag, err)
	} else if ag.RequireIn(a.ID) != nil || ag.RequireIn(b.ID) != nil || store.KindOf(ownA.RequireIn(b.ID)) != store.KindInvalid {
		t.Error("RequireIn disagrees with the assignments")
	}

	run := func(env *int64, user int64) *store.AgentRun {
		t.Helper()
		r, err := db.CreateRun(ctx, store.NewRun{AgentID: global.ID, EnvironmentID: env, UserID: &user, Input: "x"})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	inA, inB, alicesOwn, bobsOwn := run(&a.ID, bob.ID), run(&b.ID, alice.ID), run(nil, alice.ID), run(nil, bob.ID)
	list, total, err := db.ListRuns(ctx, store.RunFilter{AgentID: &global.ID, Scope: scopeA, Page: store.Page{Page: 1, PerPage: 10}})
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, r := range list {
		ids = append(ids, r.ID)
	}
	if total != 2 || !slices.Equal(ids, []int64{alicesOwn.ID, inA.ID}) {
		t.Errorf("alice's runs: %d %v (want %d, %d; not %d, %d)", total, ids, alicesOwn.ID, inA.ID, inB.ID, bobsOwn.ID)
	}
	if _, total, _ := db.ListRuns(ctx, store.RunFilter{Scope: store.Scope{}, Page: store.Page{Page: 1, PerPage: 10}}); total != 0 {
		t.Errorf("the zero scope sees %d runs", total)
	}
}

// A run and its job are written together, linked both ways; a refused run
// is recorded failed and has no job.
func TestCreateRunWithJob(t *testing.T) {
	ctx := context.Background()
	db, _ := openDB(t)
	u := mustUser(t, db, "alice", store.RoleEditor)
	ag, err := db.CreateAgent(ctx, store.AgentInput{Name: "w", Kind: "writer", IsActive: true}, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	type payload struct {
		RunID int64 `json:"run_id"`
	}
	run, err := db.CreateRunWithJob(ctx, store.NewRun{AgentID: ag.ID, UserID: &u.ID, Input: "go", Variables: map[string]string{"a": "b"}},
		store.RunJob{Kind: "agent.run", MaxAttempts: 1, Payload: func(id int64) any { return payload{RunID: id} }})
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != store.RunQueued || run.JobID == nil || run.Variables["a"] != "b" {
		t.Fatalf("run: %+v", run)
	}
	stored, err := db.RunByID(ctx, run.ID)
	if err != nil || stored.JobID == nil || *stored.JobID != *run.JobID {
		t.Fatalf("stored run: %+v %v", stored, err)
	}
	job, err := db.JobByID(ctx, *run.JobID)
	var p payload
	if err != nil || job.Kind != "agent.run" || job.Status != store.JobQueued || job.MaxAttempts != 1 ||
		json.Unmarshal(job.Payload, &p) != nil || p.RunID != run.ID {
		t.Fatalf("job: %+v %v", job, err)
	}

	// A job that cannot be written takes its run with it.
	if _, err := db.CreateRunWithJob(ctx, store.NewRun{AgentID: ag.ID, Input: "go"},
		store.RunJob{Kind: " ", Payload: func(int64) any { return nil }}); err == nil {
		t.Fatal("a job without a kind was queued")
	}
	if _, total, _ := db.ListRuns(ctx, store.RunFilter{Scope: store.Everything, Page: store.Page{Page: 1, PerPage: 10}}); total != 1 {
		t.Fatalf("%d runs after a failed create, want 1", total)
	}

	refused, err := db.CreateRun(ctx, store.NewRun{AgentID: ag.ID, Input: "go", Refused: "no provider"})
	if err != nil || refused.Status != store.RunFailed || refused.Error != "no provider" || refused.FinishedAt == nil || refused.JobID != nil {
		t.Fatalf("refused run: %+v %v", refused, err)
	}
}
