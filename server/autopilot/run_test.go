package autopilot_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/copydesk/copydesk/server/autopilot"
	"github.com/copydesk/copydesk/server/cie"
	"github.com/copydesk/copydesk/server/credential"
	"github.com/copydesk/copydesk/server/environment"
	"github.com/copydesk/copydesk/server/jobs"
	"github.com/copydesk/copydesk/server/keyring"
	"github.com/copydesk/copydesk/server/notify"
	"github.com/copydesk/copydesk/server/posttarget"
	"github.com/copydesk/copydesk/server/publish/wordpress/wptest"
	"github.com/copydesk/copydesk/server/wppost"
	"github.com/copydesk/copydesk/store"
	"github.com/copydesk/copydesk/store/storetest"
)

var ctx = context.Background()

// runner holds the kinds the service registers; the tests carry a job out
// by calling its handler, as a worker of the runner does.
type runner struct {
	mu    sync.Mutex
	kinds map[string]jobs.Kind
}

func (r *runner) Register(kind string, k jobs.Kind) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.kinds[kind] = k
}
func (r *runner) Signal()                              {}
func (r *runner) Replan(context.Context, string) error { return nil }

// writer stands in for the CIE service's model call: it prepares the
// generation from the input and writes the same article each time it is
// executed, counting the calls (each would be a paid generation).
type writer struct {
	db       *store.DB
	executed int
}

func (w *writer) Prepare(_ context.Context, in cie.SystemInput) (*store.NewCIERun, error) {
	return &store.NewCIERun{ArchetypeID: in.ArchetypeID, AgentID: in.AgentID, EnvironmentID: in.EnvironmentID, Variables: in.Values,
		SystemPrompt: "Write an article.", UserPrompt: "About " + in.Values["keyword"] + "."}, nil
}

func (w *writer) Execute(ctx context.Context, id int64, _ string) (*store.CIERun, error) {
	w.executed++
	return w.db.FinishCIERun(ctx, id, article)
}

var article = store.CIEOutcome{Status: store.RunSucceeded, Title: "Sourdough for beginners", Description: "Flour, water, time.",
	Body: "## Starter\n\nFeed it daily.", Usage: store.Usage{InputTokens: 10, OutputTokens: 20}}

// generations reads a succeeded generation, as the CIE service does for
// save-as-post.
type generations struct{ db *store.DB }

func (g generations) Succeeded(ctx context.Context, sc store.Scope, id int64) (*store.CIERun, error) {
	r, err := g.db.CIERunByID(ctx, id)
	if err != nil {
		return nil, err
	}
	if r.Status != store.RunSucceeded {
		return nil, store.Conflict("generation %d is %s", r.ID, r.Status)
	}
	return r, nil
}

type rig struct {
	db       *store.DB
	site     *wptest.Site
	svc      *autopilot.Service
	posts    *posttarget.Service
	jobs     *runner
	gen      *writer
	env      *store.Environment
	campaign *store.Campaign
	keyword  *store.Keyword
}

func newRig(t *testing.T) *rig {
	t.Helper()
	db, clk := storetest.OpenDB(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	keys, err := keyring.New([]byte("autopilot-test-secret-0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	site := wptest.New()
	t.Cleanup(site.Close)
	cred, err := db.CreateCredential(ctx, store.NewCredential{Name: "blog", Provider: store.ProviderWordPress, BaseURL: site.URL,
		Username: site.User, SecretHint: "...",
		Seal: func(id int64) ([]byte, error) { return keys.Seal([]byte(site.Password), store.CredentialAAD(id)) }})
	if err != nil {
		t.Fatal(err)
	}
	envs := environment.New(db)
	r := &rig{db: db, site: site, jobs: &runner{kinds: map[string]jobs.Kind{}}, gen: &writer{db: db}}
	if r.env, err = envs.Create(ctx, store.Everything, store.NewEnvironment{Name: "Bakery", Configuration: store.EnvironmentConfig{
		WordPress: &store.WordPressConfig{BaseURL: site.URL, CredentialID: &cred.ID}}}); err != nil {
		t.Fatal(err)
	}
	wp := wppost.New(wppost.Deps{Store: db, Environments: envs, Credentials: credential.NewOpener(db, keys)})
	r.posts = posttarget.New(posttarget.Sources{Generations: generations{db}}, wp.Target())
	r.svc = autopilot.New(autopilot.Deps{Store: db, Environments: envs, Generator: r.gen, Posts: r.posts, Jobs: r.jobs,
		Notify: notify.New(db, log), Now: clk.Now, Log: log})

	u := storetest.MustUser(t, db, "owner", store.RoleEditor)
	agent, err := db.CreateAgent(ctx, store.AgentInput{EnvironmentID: &r.env.ID, Name: "Baker", Kind: "writer", IsActive: true}, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	arch, err := db.CreateArchetype(ctx, store.ArchetypeInput{EnvironmentID: &r.env.ID, Name: "How-to", PromptTemplate: "Write about {{keyword}}.",
		TargetWords: 800, Tone: "friendly"}, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	if r.keyword, err = db.CreateKeyword(ctx, store.NewKeyword{EnvironmentID: r.env.ID, Keyword: "sourdough starter", Status: store.KeywordNew}); err != nil {
		t.Fatal(err)
	}
	if r.campaign, err = db.CreateCampaign(ctx, r.env.ID, store.CampaignInput{Name: "Bread", ArchetypeID: &arch.ID, AgentID: &agent.ID,
		Target: store.PostWordPress, PostStatus: "publish", Cadence: 1, Status: store.CampaignActive}, []int64{r.keyword.ID}, u.ID); err != nil {
		t.Fatal(err)
	}
	return r
}

// start claims the keyword for a run as the scheduler does.
func (r *rig) start(t *testing.T) (*store.AutopilotRun, *store.Job) {
	t.Helper()
	run, err := r.db.CreateAutopilotRun(ctx, store.NewAutopilotRun{EnvironmentID: r.env.ID, Trigger: "manual",
		Candidates: []store.AutopilotCandidate{{CampaignID: r.campaign.ID, Target: store.PostWordPress, PostStatus: "publish"}},
		Job:        store.RunJob{Kind: autopilot.RunJob, Payload: func(id int64) any { return map[string]int64{"run_id": id} }}})
	if err != nil {
		t.Fatal(err)
	}
	job, err := r.db.JobByID(ctx, *run.JobID)
	if err != nil {
		t.Fatal(err)
	}
	return run, job
}

// carryOut runs the run's job as the runner would.
func (r *rig) carryOut(t *testing.T, job *store.Job) {
	t.Helper()
	r.jobs.mu.Lock()
	k := r.jobs.kinds[autopilot.RunJob]
	r.jobs.mu.Unlock()
	if err := k.Handle(ctx, job); err != nil {
		t.Fatalf("the run's job: %v", err)
	}
}

func (r *rig) creates() int { return r.site.Requested("POST /wp/v2/posts") }

// A run carried on after it stopped at any point between its steps
// finishes from its first unfinished step: one generation, one post here,
// one post on the site, the keyword published with the post linked.
func TestRunResumes(t *testing.T) {
	t.Parallel()
	// Each stage leaves the run as a job cut off there would: the work of
	// the stage done, and recorded only as far as the store says.
	type stage func(t *testing.T, r *rig, run *store.AutopilotRun, job *store.Job)
	generated := func(t *testing.T, r *rig, run *store.AutopilotRun, job *store.Job) {
		n, err := r.gen.Prepare(ctx, cie.SystemInput{ArchetypeID: *r.campaign.ArchetypeID, AgentID: r.campaign.AgentID, EnvironmentID: r.env.ID,
			Values: map[string]string{"keyword": run.Keyword}})
		if err != nil {
			t.Fatal(err)
		}
		id, err := r.db.BeginAutopilotGeneration(ctx, run.ID, n, job.ID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.gen.Execute(ctx, id, autopilot.Source); err != nil {
			t.Fatal(err)
		}
	}
	generateDone := func(t *testing.T, r *rig, run *store.AutopilotRun, job *store.Job) {
		generated(t, r, run, job)
		run = r.reload(t, run)
		if err := r.db.FinishAutopilotStep(ctx, run.ID, store.StepGenerate, store.StepEnd{Status: store.StepSucceeded}); err != nil {
			t.Fatal(err)
		}
	}
	postMade := func(t *testing.T, r *rig, run *store.AutopilotRun, job *store.Job) *posttarget.Post {
		generateDone(t, r, run, job)
		run = r.reload(t, run)
		if err := r.db.BeginAutopilotStep(ctx, run.ID, store.StepCreatePost); err != nil {
			t.Fatal(err)
		}
		p, err := r.posts.FromGeneration(ctx, store.Everything, 0, *run.CIERunID, run.Target, "")
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	postLinked := func(t *testing.T, r *rig, run *store.AutopilotRun, job *store.Job) *posttarget.Post {
		p := postMade(t, r, run, job)
		if _, err := r.db.LinkAutopilotPost(ctx, run.ID, store.PostRef{Kind: p.Kind, ID: p.ID}, p.Detail); err != nil {
			t.Fatal(err)
		}
		return p
	}
	published := func(t *testing.T, r *rig, run *store.AutopilotRun, job *store.Job) {
		p := postLinked(t, r, run, job)
		if err := r.db.BeginAutopilotStep(ctx, run.ID, store.StepPublish); err != nil {
			t.Fatal(err)
		}
		tg, err := r.posts.Target(p.Kind)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tg.Publish(ctx, store.Everything, p.ID, "publish"); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name      string
		stage     stage
		generates int // generations the resumed job makes
	}{
		{"NothingDone", func(*testing.T, *rig, *store.AutopilotRun, *store.Job) {}, 1},
		{"GeneratedNotRecorded", generated, 0},
		{"GeneratedNoPost", generateDone, 0},
		{"PostMadeNotLinked", func(t *testing.T, r *rig, run *store.AutopilotRun, job *store.Job) { postMade(t, r, run, job) }, 0},
		{"PostCreatedNotPublished", func(t *testing.T, r *rig, run *store.AutopilotRun, job *store.Job) { postLinked(t, r, run, job) }, 0},
		{"PublishedNotRecorded", published, 0},
		{"AllStepsDone", func(t *testing.T, r *rig, run *store.AutopilotRun, job *store.Job) {
			published(t, r, run, job)
			if err := r.db.FinishAutopilotStep(ctx, run.ID, store.StepPublish, store.StepEnd{Status: store.StepSucceeded}); err != nil {
				t.Fatal(err)
			}
		}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t)
			run, job := r.start(t)
			c.stage(t, r, run, job)
			before := r.gen.executed
			r.carryOut(t, job)
			if got := r.gen.executed - before; got != c.generates {
				t.Errorf("the resumed job made %d generations, want %d", got, c.generates)
			}
			r.check(t, run.ID)
			// Once more: a finished run is left alone.
			r.carryOut(t, job)
			r.check(t, run.ID)
		})
	}
}

func (r *rig) reload(t *testing.T, run *store.AutopilotRun) *store.AutopilotRun {
	t.Helper()
	run, err := r.db.AutopilotRunByID(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// check: the run succeeded with one post, here and on the site, published,
// and the keyword links it.
func (r *rig) check(t *testing.T, runID int64) {
	t.Helper()
	run, err := r.db.AutopilotRunByID(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != store.RunSucceeded || run.Post == nil || run.CIERunID == nil {
		t.Fatalf("run %+v", run)
	}
	for _, name := range store.AutopilotSteps {
		if st := run.Step(name); st == nil || st.Status != store.StepSucceeded {
			t.Errorf("step %s: %+v", name, st)
		}
	}
	env := r.env.ID
	list, n, err := r.db.ListWordPressPosts(ctx, store.WordPressPostFilter{Scope: store.Everything, EnvironmentID: &env,
		Page: store.Page{Page: 1, PerPage: 10}})
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 || list[0].ID != run.Post.ID || list[0].CIERunID == nil || *list[0].CIERunID != *run.CIERunID {
		t.Fatalf("%d posts here (want 1, the run's %d): %+v", n, run.Post.ID, list)
	}
	p := list[0]
	if p.RemoteID == nil || p.SyncStatus != store.SyncSynced || r.site.PostCount() != 1 || r.creates() != 1 ||
		r.site.PostStatus(*p.RemoteID) != "publish" {
		t.Fatalf("post %+v; the site has %d posts from %d creates", p, r.site.PostCount(), r.creates())
	}
	if st := run.Step(store.StepPublish); !strings.Contains(st.Detail, "published on WordPress") && st.Detail != "" {
		t.Errorf("publish detail %q", st.Detail)
	}
	k, err := r.db.KeywordByID(ctx, r.keyword.ID)
	if err != nil {
		t.Fatal(err)
	}
	if k.Status != store.KeywordPublished || k.Post == nil || k.Post.ID != run.Post.ID {
		t.Fatalf("keyword %+v", k)
	}
}
