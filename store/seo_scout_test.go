package store_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/copydesk/copydesk/store"
	"github.com/copydesk/copydesk/store/storetest"
)

func scoutJob() store.RunJob {
	return store.RunJob{Kind: "seo.scout", MaxAttempts: 1, Payload: func(id int64) any { return map[string]int64{"run_id": id} }}
}

func TestScoutRunStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := openDB(t)
	env := mustEnv(t, db, "a")
	run, err := db.CreateScoutRunWithJob(ctx, store.NewScoutRun{EnvironmentID: env.ID, Seeds: []string{"cold brew"}}, scoutJob())
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != store.RunQueued || run.JobID == nil || !slices.Equal(run.Seeds, []string{"cold brew"}) || run.Sources == nil {
		t.Fatalf("created %+v", run)
	}
	if ok, err := db.StartScoutRun(ctx, run.ID); !ok || err != nil {
		t.Fatalf("start: %v %v", ok, err)
	}
	done, err := db.FinishScoutRun(ctx, run.ID, store.ScoutOutcome{Status: store.RunSucceeded, Gathered: 3, Known: 1, Candidates: []store.NewScoutCandidate{
		{Keyword: "cold brew ratio", Key: "cold brew ratio", FoundBy: []string{"ai"}, Intent: 1, Score: 30},
		{Keyword: "Cold brew maker", Key: "cold brew maker", FoundBy: []string{"serp_autocomplete"}, Score: 70},
	}})
	if err != nil || done.Status != store.RunSucceeded || done.CandidateCount != 2 || done.FinishedAt == nil {
		t.Fatalf("finish: %+v %v", done, err)
	}
	// A second ending (the job's hook) changes nothing.
	again, err := db.FinishScoutRun(ctx, run.ID, store.ScoutOutcome{Status: store.RunFailed, Error: "late"})
	if err != nil || again.Status != store.RunSucceeded || again.Error != "" {
		t.Fatalf("second finish: %+v %v", again, err)
	}
	if ok, _ := db.StartScoutRun(ctx, run.ID); ok {
		t.Fatal("a finished run started again")
	}
	cands, err := db.ScoutCandidates(ctx, run.ID)
	if err != nil || len(cands) != 2 || cands[0].Key != "cold brew maker" || !slices.Equal(cands[1].Intent, []string{"informational"}) {
		t.Fatalf("candidates %+v %v", cands, err)
	}

	// Accepting: one new keyword, one the environment has by now; an id of
	// no candidate of the run writes nothing.
	if _, err := db.CreateKeyword(ctx, store.NewKeyword{EnvironmentID: env.ID, Keyword: "COLD BREW MAKER", Status: "new", Source: "manual"}); err != nil {
		t.Fatal(err)
	}
	_, err = db.AcceptScoutCandidates(ctx, run.ID, []int64{cands[1].ID, 999})
	storetest.WantKind(t, err, store.KindInvalid)
	if k, _ := db.ExistingKeywordKeys(ctx, env.ID, []string{"cold brew ratio"}); k["cold brew ratio"] {
		t.Fatal("a refused accept created a keyword")
	}
	res, err := db.AcceptScoutCandidates(ctx, run.ID, []int64{cands[1].ID, cands[0].ID, cands[1].ID})
	if err != nil || res.Created != 1 || res.Skipped != 1 || len(res.KeywordIDs) != 1 {
		t.Fatalf("accept: %+v %v", res, err)
	}
	k, err := db.KeywordByID(ctx, res.KeywordIDs[0])
	if err != nil || k.Keyword != "cold brew ratio" || k.Source != "scout" || !slices.Equal(k.Intent, []string{"informational"}) {
		t.Fatalf("keyword %+v %v", k, err)
	}
	cands, _ = db.ScoutCandidates(ctx, run.ID)
	if cands[0].Status != store.CandidateExists || cands[0].KeywordID == nil || cands[1].Status != store.CandidateAccepted || *cands[1].KeywordID != k.ID {
		t.Fatalf("after accepting: %+v %+v", cands[0], cands[1])
	}
	if r, _ := db.ScoutRunByID(ctx, run.ID); r.AcceptedCount != 1 {
		t.Fatalf("accepted_count %d", r.AcceptedCount)
	}
	// The keyword deleted: the candidate forgets it.
	if err := db.DeleteKeyword(ctx, k.ID); err != nil {
		t.Fatal(err)
	}
	if cands, _ = db.ScoutCandidates(ctx, run.ID); cands[1].KeywordID != nil {
		t.Fatalf("candidate still links %d", *cands[1].KeywordID)
	}
	keys, err := db.ExistingKeywordKeys(ctx, env.ID, []string{"cold brew maker", "cold brew ratio", "x"})
	if err != nil || len(keys) != 1 || !keys["cold brew maker"] {
		t.Fatalf("existing %v %v", keys, err)
	}
}

// TestScoutRunDeleteAndOrphans: only a finished run is deleted, with its
// candidates and not the keywords made from them; a run left queued with
// no live job fails at start-up, a cancelled one stays cancelled.
func TestScoutRunDeleteAndOrphans(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := openDB(t)
	env := mustEnv(t, db, "a")
	newRun := func() *store.ScoutRun {
		t.Helper()
		r, err := db.CreateScoutRunWithJob(ctx, store.NewScoutRun{EnvironmentID: env.ID, Seeds: []string{"tea"}}, scoutJob())
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	queued, cancelled, orphan, done := newRun(), newRun(), newRun(), newRun()

	storetest.WantKind(t, db.DeleteScoutRun(ctx, queued.ID), store.KindConflict)
	if ok, err := db.StartScoutRun(ctx, queued.ID); !ok || err != nil {
		t.Fatalf("start: %v %v", ok, err)
	}
	storetest.WantKind(t, db.DeleteScoutRun(ctx, queued.ID), store.KindConflict) // running
	storetest.WantKind(t, db.DeleteScoutRun(ctx, 999999), store.KindNotFound)

	// Cancelled as the service does it: the ending, then the job.
	if _, err := db.FinishScoutRun(ctx, cancelled.ID, store.ScoutOutcome{Status: store.RunCancelled, Error: "cancelled by alice"}); err != nil {
		t.Fatal(err)
	}
	for _, r := range []*store.ScoutRun{cancelled, orphan} {
		if _, err := db.CancelJob(ctx, *r.JobID); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := db.FailOrphanScoutRuns(ctx, "interrupted by a restart"); err != nil || n != 1 {
		t.Fatalf("orphans: %d %v", n, err)
	}
	for id, want := range map[int64][2]string{queued.ID: {store.RunRunning, ""}, cancelled.ID: {store.RunCancelled, "cancelled by alice"},
		orphan.ID: {store.RunFailed, "interrupted by a restart"}} {
		if r, err := db.ScoutRunByID(ctx, id); err != nil || r.Status != want[0] || r.Error != want[1] {
			t.Errorf("run %d: %+v %v; want %v", id, r, err, want)
		}
	}

	if _, err := db.FinishScoutRun(ctx, done.ID, store.ScoutOutcome{Status: store.RunSucceeded, Candidates: []store.NewScoutCandidate{
		{Keyword: "green tea", Key: "green tea", FoundBy: []string{"ai"}, Score: 30},
		{Keyword: "black tea", Key: "black tea", FoundBy: []string{"ai"}, Score: 30}}}); err != nil {
		t.Fatal(err)
	}
	cands, _ := db.ScoutCandidates(ctx, done.ID)
	res, err := db.AcceptScoutCandidates(ctx, done.ID, []int64{cands[0].ID})
	if err != nil || res.Created != 1 {
		t.Fatalf("accept: %+v %v", res, err)
	}
	for _, id := range []int64{done.ID, cancelled.ID, orphan.ID} {
		if err := db.DeleteScoutRun(ctx, id); err != nil {
			t.Fatalf("delete %d: %v", id, err)
		}
	}
	_, err = db.ScoutRunByID(ctx, done.ID)
	storetest.WantKind(t, err, store.KindNotFound)
	storetest.WantKind(t, db.DeleteScoutRun(ctx, done.ID), store.KindNotFound)
	if cands, err := db.ScoutCandidates(ctx, done.ID); err != nil || len(cands) != 0 {
		t.Fatalf("candidates of a deleted run: %v %v", cands, err)
	}
	if k, err := db.KeywordByID(ctx, res.KeywordIDs[0]); err != nil || k.Source != "scout" {
		t.Fatalf("the accepted keyword: %+v %v", k, err)
	}
}

// TestStrategyDeleteAndOrphans: only a finished strategy is deleted; one
// left queued with no live job fails at start-up, with updated_at as its
// time of ending, and a cancelled one stays cancelled.
func TestStrategyDeleteAndOrphans(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, clk := openDB(t)
	env := mustEnv(t, db, "a")
	newStrategy := func() *store.Strategy {
		t.Helper()
		st, err := db.CreateStrategyWithJob(ctx, store.NewStrategy{EnvironmentID: env.ID, Name: "S", StrategyParams: store.StrategyParams{
			Method: "lexical", MinShared: 3, Similarity: 0.5}},
			store.RunJob{Kind: "seo.strategy", MaxAttempts: 1, Payload: func(id int64) any { return map[string]int64{"strategy_id": id} }})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	queued, cancelled, orphan := newStrategy(), newStrategy(), newStrategy()

	storetest.WantKind(t, db.DeleteStrategy(ctx, queued.ID), store.KindConflict)
	if ok, err := db.StartStrategy(ctx, queued.ID); !ok || err != nil {
		t.Fatalf("start: %v %v", ok, err)
	}
	storetest.WantKind(t, db.DeleteStrategy(ctx, queued.ID), store.KindConflict) // running
	storetest.WantKind(t, db.DeleteStrategy(ctx, 999999), store.KindNotFound)

	// Cancelled as the service does it: the ending, then the job.
	if _, err := db.FinishStrategy(ctx, cancelled.ID, store.StrategyOutcome{Status: store.StrategyCancelled, Error: "cancelled by alice"}); err != nil {
		t.Fatal(err)
	}
	for _, st := range []*store.Strategy{cancelled, orphan} {
		if _, err := db.CancelJob(ctx, *st.JobID); err != nil {
			t.Fatal(err)
		}
	}
	clk.Advance(time.Hour)
	if n, err := db.FailOrphanStrategies(ctx, "interrupted by a restart"); err != nil || n != 1 {
		t.Fatalf("orphans: %d %v", n, err)
	}
	for id, want := range map[int64][2]string{queued.ID: {store.StrategyRunning, ""}, cancelled.ID: {store.StrategyCancelled, "cancelled by alice"},
		orphan.ID: {store.StrategyFailed, "interrupted by a restart"}} {
		if st, err := db.StrategyByID(ctx, id); err != nil || st.Status != want[0] || st.Error != want[1] {
			t.Errorf("strategy %d: %+v %v; want %v", id, st, err, want)
		}
	}
	if st, _ := db.StrategyByID(ctx, orphan.ID); !st.UpdatedAt.Equal(clk.Now().Truncate(time.Millisecond)) || st.BuiltAt != nil {
		t.Errorf("orphan failed at %v (built %v); want %v", st.UpdatedAt, st.BuiltAt, clk.Now())
	}
	for _, id := range []int64{cancelled.ID, orphan.ID} {
		if err := db.DeleteStrategy(ctx, id); err != nil {
			t.Fatalf("delete %d: %v", id, err)
		}
	}
	_, err := db.StrategyByID(ctx, orphan.ID)
	storetest.WantKind(t, err, store.KindNotFound)
}

func TestStrategyStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, clk := openDB(t)
	env, other := mustEnv(t, db, "a"), mustEnv(t, db, "b")
	var ids []int64
	for i, kw := range []string{"a", "b", "c", "d"} {
		k, err := db.CreateKeyword(ctx, store.NewKeyword{EnvironmentID: env.ID, Keyword: kw, SearchVolume: ptr(int64(100 - i)), Status: "new", Source: "manual"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, k.ID)
	}
	foreign, err := db.CreateKeyword(ctx, store.NewKeyword{EnvironmentID: other.ID, Keyword: "z", Status: "new", Source: "manual"})
	if err != nil {
		t.Fatal(err)
	}
	st, err := db.CreateStrategyWithJob(ctx, store.NewStrategy{EnvironmentID: env.ID, Name: "S", StrategyParams: store.StrategyParams{
		Method: "auto", MinShared: 3, Similarity: 0.5, KeywordIDs: ids}},
		store.RunJob{Kind: "seo.strategy", Payload: func(id int64) any { return map[string]int64{"strategy_id": id} }})
	if err != nil || st.Status != store.StrategyQueued || !slices.Equal(st.KeywordIDs, ids) {
		t.Fatalf("created %+v %v", st, err)
	}
	_, err = db.ReplaceStrategyClusters(ctx, st.ID, ptr("T"), nil)
	storetest.WantKind(t, err, store.KindConflict) // being built
	done, err := db.FinishStrategy(ctx, st.ID, store.StrategyOutcome{Status: store.StrategyReady, UsedMethod: "lexical", Clusters: []store.ClusterInput{
		{Name: "A", Pillar: &ids[0], KeywordIDs: []int64{ids[0], ids[2]}}, {Name: "B", Pillar: &ids[1], KeywordIDs: []int64{ids[1], ids[3]}}}})
	if err != nil || done.Status != store.StrategyReady || done.KeywordCount != 4 || done.ClusterCount != 2 || done.BuiltAt == nil {
		t.Fatalf("finish %+v %v", done, err)
	}
	cs, err := db.StrategyClusters(ctx, st.ID)
	if err != nil || len(cs) != 2 || cs[0].Name != "A" || cs[0].Keywords[0].ID != ids[0] || cs[0].Keywords[1].ID != ids[2] || cs[1].Position != 2 {
		t.Fatalf("clusters %+v %v", cs, err)
	}
	bad := []struct {
		name     string
		clusters []store.ClusterInput
	}{
		{"Foreign", []store.ClusterInput{{Name: "x", KeywordIDs: []int64{foreign.ID}}}},
		{"Twice", []store.ClusterInput{{Name: "x", KeywordIDs: []int64{ids[0]}}, {Name: "y", KeywordIDs: []int64{ids[0]}}}},
		{"PillarOutside", []store.ClusterInput{{Name: "x", Pillar: &ids[1], KeywordIDs: []int64{ids[0]}}}},
		{"Empty", []store.ClusterInput{{Name: "x"}}},
		{"ClusterOfAnother", []store.ClusterInput{{ID: 999, Name: "x", KeywordIDs: []int64{ids[0]}}}},
	}
	for _, c := range bad {
		_, err := db.ReplaceStrategyClusters(ctx, st.ID, nil, c.clusters)
		if store.KindOf(err) != store.KindInvalid {
			t.Errorf("%s: %v; want invalid", c.name, err)
		}
	}
	// The pillar keyword deleted: the cluster has none, and fewer keywords.
	if err := db.DeleteKeyword(ctx, ids[0]); err != nil {
		t.Fatal(err)
	}
	cs, _ = db.StrategyClusters(ctx, st.ID)
	if cs[0].Pillar != nil || len(cs[0].Keywords) != 1 {
		t.Fatalf("after deleting the pillar: %+v", cs[0])
	}

	// SERP data: stored per keyword, replaced, skipped for a keyword gone.
	if err := db.PutKeywordSERP(ctx, ids[1], "b", []string{"https://x.example/1"}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Hour)
	if err := db.PutKeywordSERP(ctx, ids[1], "b", []string{"https://x.example/2", "https://x.example/3"}); err != nil {
		t.Fatal(err)
	}
	if err := db.PutKeywordSERP(ctx, ids[0], "a", []string{"https://x.example/1"}); err != nil {
		t.Fatalf("a deleted keyword: %v", err)
	}
	serps, err := db.KeywordSERPs(ctx, []int64{ids[0], ids[1], ids[2]})
	if err != nil || len(serps) != 1 || len(serps[ids[1]].URLs) != 2 || !serps[ids[1]].FetchedAt.Equal(clk.Now().Truncate(time.Millisecond)) {
		t.Fatalf("serps %+v %v", serps, err)
	}

	kws, more, err := db.KeywordsForStrategy(ctx, env.ID, nil, 2)
	if err != nil || !more || len(kws) != 2 || kws[0].ID != ids[1] {
		t.Fatalf("highest volume first: %v %v %v", kws, more, err)
	}
	if err := db.DeleteStrategy(ctx, st.ID); err != nil {
		t.Fatal(err)
	}
	storetest.WantKind(t, db.DeleteStrategy(ctx, st.ID), store.KindNotFound)
}

// RunJob.Limit refuses a strategy build when the environment has that
// many queued or running, in the transaction that would queue it; one
// that ended frees its place.
func TestStrategyBuildsLimited(t *testing.T) {
	t.Parallel()
	db, _ := openDB(t)
	ctx := context.Background()
	env := mustEnv(t, db, "a")
	job := store.RunJob{Kind: "seo.strategy", Limit: 2, Payload: func(id int64) any { return map[string]int64{"strategy_id": id} }}
	build := func() (*store.Strategy, error) {
		return db.CreateStrategyWithJob(ctx, store.NewStrategy{EnvironmentID: env.ID, Name: "S", StrategyParams: store.StrategyParams{
			Method: "lexical", MinShared: 3, Similarity: 0.5}}, job)
	}
	first, err := build()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := build(); err != nil {
		t.Fatal(err)
	}
	_, err = build()
	storetest.WantKind(t, err, store.KindConflict)
	if msg := store.Message(err); len(msg) < 15 || msg[:15] != "strategy builds" {
		t.Fatalf("refusal: %v", err)
	}
	if _, err := db.FinishStrategy(ctx, first.ID, store.StrategyOutcome{Status: store.StrategyFailed, Error: "x"}); err != nil {
		t.Fatal(err)
	}
	if _, err := build(); err != nil {
		t.Fatalf("after one ended: %v", err)
	}
}
