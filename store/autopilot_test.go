package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/copydesk/copydesk/store"
	"github.com/copydesk/copydesk/store/storetest"
)

// apFixture is an environment with a campaign of keywords, in order.
type apFixture struct {
	db       *store.DB
	user     int64
	clock    *storetest.Clock
	env      *store.Environment
	campaign *store.Campaign
	keywords []*store.Keyword
}

func newAPFixture(t *testing.T, keywords ...string) *apFixture {
	t.Helper()
	ctx := context.Background()
	db, clk := openDB(t)
	f := &apFixture{db: db, clock: clk, env: mustEnv(t, db, "blog"), user: mustUser(t, db, "owner", store.RoleEditor).ID}
	var ids []int64
	for _, k := range keywords {
		kw, err := db.CreateKeyword(ctx, store.NewKeyword{EnvironmentID: f.env.ID, Keyword: k, Status: store.KeywordPlanned, Source: "manual"})
		if err != nil {
			t.Fatal(err)
		}
		f.keywords, ids = append(f.keywords, kw), append(ids, kw.ID)
	}
	c, err := db.CreateCampaign(ctx, f.env.ID, store.CampaignInput{Name: "C", Target: store.PostWordPress, PostStatus: "publish", Cadence: 1,
		Status: store.CampaignActive}, ids, f.user)
	if err != nil {
		t.Fatal(err)
	}
	f.campaign = c
	return f
}

func (f *apFixture) newRun(ctx context.Context) (*store.AutopilotRun, error) {
	return f.db.CreateAutopilotRun(ctx, store.NewAutopilotRun{EnvironmentID: f.env.ID, Trigger: "manual",
		Candidates: []store.AutopilotCandidate{{CampaignID: f.campaign.ID, Target: store.PostWordPress, PostStatus: "publish"}},
		Job:        store.RunJob{Kind: "autopilot.run", Payload: func(id int64) any { return map[string]int64{"run_id": id} }}})
}

func (f *apFixture) keyword(t *testing.T, i int) *store.Keyword {
	t.Helper()
	k, err := f.db.KeywordByID(context.Background(), f.keywords[i].ID)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// Runs asked for at once: one is made, with the first keyword claimed
// once; the others are conflicts that claim nothing.
func TestAutopilotRunClaimsOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newAPFixture(t, "first", "second")
	var wg sync.WaitGroup
	var mu sync.Mutex
	var made []*store.AutopilotRun
	conflicts := 0
	for range 8 {
		wg.Go(func() {
			r, err := f.newRun(ctx)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				made = append(made, r)
			case store.KindOf(err) == store.KindConflict:
				conflicts++
			default:
				t.Errorf("run: %v", err)
			}
		})
	}
	wg.Wait()
	if len(made) != 1 || conflicts != 7 {
		t.Fatalf("%d runs made, %d conflicts", len(made), conflicts)
	}
	r := made[0]
	if r.Keyword != "first" || r.KeywordStatus != store.KeywordPlanned || r.Status != store.RunQueued || r.JobID == nil ||
		len(r.Steps) != 1 || r.Steps[0].Step != store.StepPickKeyword || !r.Steps[0].Done() {
		t.Fatalf("run: %+v", r)
	}
	if k := f.keyword(t, 0); k.Status != store.KeywordInProgress {
		t.Fatalf("claimed keyword: %+v", k)
	}
	if k := f.keyword(t, 1); k.Status != store.KeywordPlanned {
		t.Fatalf("second keyword: %+v", k)
	}
	job, err := f.db.JobByID(ctx, *r.JobID)
	if err != nil || job.Kind != "autopilot.run" || job.Status != store.JobQueued {
		t.Fatalf("job: %+v %v", job, err)
	}
}

// A run that ends without a post gives its keyword back as it was; one
// that made its post keeps it, with the status it is given.
func TestAutopilotRunEnds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newAPFixture(t, "first", "second")
	r, err := f.newRun(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Only while queued, and it is.
	done, changed, err := f.db.FinishAutopilotRun(ctx, r.ID, store.AutopilotRunEnd{Status: store.RunCancelled, OnlyIf: store.RunRunning})
	if err != nil || changed || done.Status != store.RunQueued {
		t.Fatalf("cancel only if running: %+v %v %v", done, changed, err)
	}
	done, changed, err = f.db.FinishAutopilotRun(ctx, r.ID, store.AutopilotRunEnd{Status: store.RunFailed, Error: "boom"})
	if err != nil || !changed || done.Status != store.RunFailed || done.Error != "boom" || done.FinishedAt == nil {
		t.Fatalf("fail: %+v %v %v", done, changed, err)
	}
	if k := f.keyword(t, 0); k.Status != store.KeywordPlanned {
		t.Fatalf("keyword after a failure without a post: %+v", k)
	}
	if _, changed, err := f.db.FinishAutopilotRun(ctx, r.ID, store.AutopilotRunEnd{Status: store.RunSucceeded}); err != nil || changed {
		t.Fatalf("a finished run finished again: %v %v", changed, err)
	}
	ap, err := f.db.AutopilotOf(ctx, f.env.ID)
	if err != nil || ap.Failures != 0 { // no autopilot row yet: nothing to count on
		t.Fatalf("autopilot: %+v %v", ap, err)
	}

	// The keyword is free again: the next run takes it, makes a post and
	// publishes it.
	r, err = f.newRun(ctx)
	if err != nil || r.Keyword != "first" {
		t.Fatalf("next run: %+v %v", r, err)
	}
	post, err := f.db.CreateWordPressPost(ctx, store.NewWordPressPost{EnvironmentID: f.env.ID, Title: "T", Slug: "t", Status: "draft"})
	if err != nil {
		t.Fatal(err)
	}
	linked, err := f.db.LinkAutopilotPost(ctx, r.ID, store.PostRef{Kind: store.PostWordPress, ID: post.ID}, "made")
	if err != nil || linked.Post == nil || linked.Post.ID != post.ID || !linked.Step(store.StepCreatePost).Done() {
		t.Fatalf("linked: %+v %v", linked, err)
	}
	done, _, err = f.db.FinishAutopilotRun(ctx, r.ID, store.AutopilotRunEnd{Status: store.RunSucceeded, KeywordStatus: store.KeywordPublished})
	if err != nil || done.Status != store.RunSucceeded {
		t.Fatalf("succeed: %+v %v", done, err)
	}
	k := f.keyword(t, 0)
	if k.Status != store.KeywordPublished || k.Post == nil || k.Post.ID != post.ID {
		t.Fatalf("published keyword: %+v", k)
	}
	n, last, err := f.db.AutopilotRunsSince(ctx, f.env.ID, storetest.T0.Add(-time.Hour))
	if err != nil || n != 1 || last == nil { // the failed run without a post does not count
		t.Fatalf("runs today: %d %v %v", n, last, err)
	}

	// The second keyword, then nothing left.
	r, err = f.newRun(ctx)
	if err != nil || r.Keyword != "second" {
		t.Fatalf("third run: %+v %v", r, err)
	}
	if _, _, err := f.db.FinishAutopilotRun(ctx, r.ID, store.AutopilotRunEnd{Status: store.RunCancelled}); err != nil {
		t.Fatal(err)
	}
	published := store.KeywordPublished
	if _, err := f.db.UpdateKeyword(ctx, f.keywords[1].ID, store.KeywordUpdate{Status: &published}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.newRun(ctx); !errors.Is(err, store.ErrNoKeyword) {
		t.Fatalf("with nothing left: %v", err)
	}
}

// A run's generation is made once: later attempts take the same one
// again, and one that succeeded is not taken again.
func TestAutopilotGenerationOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newAPFixture(t, "first")
	r, err := f.newRun(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.db.BeginAutopilotGeneration(ctx, r.ID, nil, *r.JobID); store.KindOf(err) != store.KindInvalid {
		t.Fatalf("without a generation to make: %v", err)
	}
	n := &store.NewCIERun{ArchetypeID: 1, EnvironmentID: f.env.ID, SystemPrompt: "s", UserPrompt: "u", Variables: map[string]string{"keyword": "first"}}
	id, err := f.db.BeginAutopilotGeneration(ctx, r.ID, n, *r.JobID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.db.FinishCIERun(ctx, id, store.CIEOutcome{Status: store.RunFailed, Error: "503"}); err != nil {
		t.Fatal(err)
	}
	again, err := f.db.BeginAutopilotGeneration(ctx, r.ID, n, *r.JobID)
	if err != nil || again != id {
		t.Fatalf("second attempt: %d %v, want %d", again, err, id)
	}
	g, err := f.db.CIERunByID(ctx, id)
	if err != nil || g.Status != store.RunQueued || g.Error != "" || g.JobID == nil || *g.JobID != *r.JobID {
		t.Fatalf("generation taken again: %+v %v", g, err)
	}
	run, err := f.db.AutopilotRunByID(ctx, r.ID)
	if err != nil || run.CIERunID == nil || *run.CIERunID != id || run.Step(store.StepGenerate).Attempts != 2 ||
		run.Step(store.StepGenerate).Status != store.StepRunning {
		t.Fatalf("run: %+v %v", run, err)
	}
	if _, err := f.db.FinishCIERun(ctx, id, store.CIEOutcome{Status: store.RunSucceeded, Title: "T"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.db.BeginAutopilotGeneration(ctx, r.ID, n, *r.JobID); store.KindOf(err) != store.KindConflict {
		t.Fatalf("a succeeded generation taken again: %v", err)
	}
}

// The config keeps the environment's own campaigns in order; the state
// changes only from the states it names.
func TestAutopilotConfigAndState(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newAPFixture(t, "first")
	ap, err := f.db.AutopilotOf(ctx, f.env.ID)
	if err != nil || ap.State != store.AutopilotStopped || ap.UpdatedAt != nil || ap.Config.MaxPostsPerDay != 1 {
		t.Fatalf("never set up: %+v %v", ap, err)
	}
	other := mustEnv(t, f.db, "other")
	theirs, err := f.db.CreateCampaign(ctx, other.ID, store.CampaignInput{Name: "T", Target: store.PostAstro, PostStatus: "draft", Cadence: 1,
		Status: store.CampaignActive}, nil, f.user)
	if err != nil {
		t.Fatal(err)
	}
	c := store.DefaultAutopilotConfig()
	c.CampaignIDs = []int64{theirs.ID}
	_, err = f.db.PutAutopilotConfig(ctx, f.env.ID, c, nil)
	storetest.WantKind(t, err, store.KindInvalid)
	second, err := f.db.CreateCampaign(ctx, f.env.ID, store.CampaignInput{Name: "D", Target: store.PostAstro, PostStatus: "draft", Cadence: 1,
		Status: store.CampaignActive}, nil, f.user)
	if err != nil {
		t.Fatal(err)
	}
	budget := 3.5
	c.CampaignIDs, c.DailyBudget, c.Variables = []int64{second.ID, f.campaign.ID, second.ID}, store.MicrosOfUSD(&budget), map[string]string{"audience": "a"}
	ap, err = f.db.PutAutopilotConfig(ctx, f.env.ID, c, nil)
	if err != nil || len(ap.Config.CampaignIDs) != 2 || ap.Config.CampaignIDs[0] != second.ID || *ap.Config.DailyBudget != 3_500_000 ||
		ap.Config.Variables["audience"] != "a" || ap.UpdatedAt == nil {
		t.Fatalf("config: %+v %v", ap, err)
	}
	if _, changed, err := f.db.SetAutopilotState(ctx, f.env.ID, store.AutopilotState{From: []string{store.AutopilotRunning},
		State: store.AutopilotPaused}); err != nil || changed {
		t.Fatalf("paused while stopped: %v %v", changed, err)
	}
	resume := storetest.T0.Add(time.Hour)
	ap, changed, err := f.db.SetAutopilotState(ctx, f.env.ID, store.AutopilotState{From: []string{store.AutopilotStopped},
		State: store.AutopilotPaused, PauseReason: store.PauseDailyBudget, PauseDetail: "spent", ResumeAt: &resume})
	if err != nil || !changed || ap.State != store.AutopilotPaused || !ap.ResumeAt.Equal(resume) || ap.PauseReason != store.PauseDailyBudget {
		t.Fatalf("paused: %+v %v %v", ap, changed, err)
	}
	list, err := f.db.ScheduledAutopilots(ctx)
	if err != nil || len(list) != 1 || len(list[0].Config.CampaignIDs) != 2 {
		t.Fatalf("scheduled: %+v %v", list, err)
	}
	// Deleting a campaign takes it out of the config.
	if err := f.db.DeleteCampaign(ctx, second.ID); err != nil {
		t.Fatal(err)
	}
	if ap, err := f.db.AutopilotOf(ctx, f.env.ID); err != nil || len(ap.Config.CampaignIDs) != 1 {
		t.Fatalf("after the delete: %+v %v", ap, err)
	}
}

// A run left queued or running with no job to carry it on is failed, and
// its keyword given back; one whose job just ended is left to that job's
// end hook.
func TestAutopilotOrphanRuns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newAPFixture(t, "first")
	r, err := f.newRun(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if orphans, err := f.db.OrphanAutopilotRuns(ctx, "gone", storetest.T0.Add(-time.Minute)); err != nil || len(orphans) != 0 {
		t.Fatalf("with its job queued: %v %v", orphans, err)
	}
	if _, err := f.db.ClaimJob(ctx, []string{"autopilot.run"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.db.FinishJob(ctx, *r.JobID, "", store.JobFailed, "x"); err != nil {
		t.Fatal(err)
	}
	if orphans, err := f.db.OrphanAutopilotRuns(ctx, "gone", storetest.T0.Add(-time.Minute)); err != nil || len(orphans) != 0 {
		t.Fatalf("with its job just ended: %v %v", orphans, err)
	}
	f.clock.Advance(2 * time.Minute)
	orphans, err := f.db.OrphanAutopilotRuns(ctx, "gone", f.clock.Now().Add(-time.Minute))
	if err != nil || len(orphans) != 1 || orphans[0].Status != store.RunFailed || orphans[0].Error != "gone" {
		t.Fatalf("orphans: %+v %v", orphans, err)
	}
	if k := f.keyword(t, 0); k.Status != store.KeywordPlanned {
		t.Fatalf("keyword: %+v", k)
	}
}

// A paused run is queued again with a new job of its own, recorded as its
// job the way a new run's is; a run that is not paused is left alone and
// gets no job.
func TestAutopilotRunResume(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newAPFixture(t, "first")
	r, err := f.newRun(ctx)
	if err != nil {
		t.Fatal(err)
	}
	first := *r.JobID
	again := store.RunJob{Kind: "autopilot.run", Payload: func(id int64) any { return map[string]int64{"run_id": id} }}
	if id, err := f.db.ResumeAutopilotRun(ctx, r.ID, again); err != nil || id != nil {
		t.Fatalf("resume a queued run: %v %v", id, err)
	}
	if paused, err := f.db.PauseAutopilotRun(ctx, r.ID, "budget"); err != nil || !paused {
		t.Fatalf("pause: %v %v", paused, err)
	}
	id, err := f.db.ResumeAutopilotRun(ctx, r.ID, again)
	if err != nil || id == nil || *id == first {
		t.Fatalf("resume a paused run: %v %v", id, err)
	}
	run, err := f.db.AutopilotRunByID(ctx, r.ID)
	if err != nil || run.Status != store.RunQueued || run.PauseReason != "" || run.JobID == nil || *run.JobID != *id {
		t.Fatalf("resumed run: %+v %v", run, err)
	}
	job, err := f.db.JobByID(ctx, *id)
	if err != nil || job.Kind != "autopilot.run" || job.Status != store.JobQueued || string(job.Payload) != fmt.Sprintf(`{"run_id":%d}`, r.ID) {
		t.Fatalf("resumed run's job: %+v %v", job, err)
	}
	if id, err := f.db.ResumeAutopilotRun(ctx, r.ID, again); err != nil || id != nil {
		t.Fatalf("resume twice: %v %v", id, err)
	}
	if _, err := f.db.ResumeAutopilotRun(ctx, r.ID, store.RunJob{Payload: again.Payload}); err != nil {
		t.Fatalf("resume a queued run with a job the store would refuse: %v", err) // not paused: no job is made
	}
}
