package server_test

import (
	"context"
	"fmt"
	_ "net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/copydesk/copydesk/server"
	_ "github.com/copydesk/copydesk/server/publish/wordpress/wptest"
	"github.com/copydesk/copydesk/store"
)

// apEnv is a WordPress-like site and an OpenAI-like provider behind
// environment A, with the built-in how-to archetype, an agent and an
// active campaign of keywords; its store clock stands still until a test
// moves it (the job runner's retries wait jobBackoff on it).
type apEnv struct {
	*wpEnv
	llm      *fakeProvider
	agent    int64
	campaign *store.Campaign
	keywords []*store.Keyword
	editorID int64

	mu      sync.Mutex
	hold    chan struct{} // when set, each provider call waits for it
	arrived chan struct{} // a token per provider call
}

// newAPEnv builds an apEnv whose campaign targets target with post
// status postStatus, with the given keywords.
func newAPEnv(t *testing.T, target, postStatus string, keywords ...string) *apEnv {
	t.Helper()
	w := newWPEnv(t, func(c *server.Config) { c.JobBackoff = func(int) time.Duration { return jobBackoff } })
	a := &apEnv{wpEnv: w, arrived: make(chan struct{}, 16)}
	a.llm = fakeOpenAI(t, func(n int, req map[string]any) (int, string) {
		a.arrived <- struct{}{}
		a.mu.Lock()
		hold := a.hold
		a.mu.Unlock()
		if hold != nil {
			<-hold
		}
		return 200, goodArticle
	})
	agConfigure(t, w.env, a.llm.URL+"/v1")
	ed, ag := writerAgent(t, w.cmsEnv)
	a.agent, a.editorID = ag.ID, ed.ID
	ctx := context.Background()
	for _, k := range keywords {
		kw, err := w.app.DB.CreateKeyword(ctx, store.NewKeyword{EnvironmentID: w.envA, Keyword: k, Status: store.KeywordNew, Source: "manual",
			Cluster: "bread", Intent: 1})
		if err != nil {
			t.Fatal(err)
		}
		a.keywords = append(a.keywords, kw)
	}
	arch := cieBuiltin(t, w.env, w.editor, "how-to")
	ids := make([]int64, len(a.keywords))
	for i, k := range a.keywords {
		ids[i] = k.ID
	}
	c, err := w.app.DB.CreateCampaign(ctx, w.envA, store.CampaignInput{Name: "Bread", ArchetypeID: &arch, AgentID: &a.agent, Target: target,
		PostStatus: postStatus, Cadence: 10, Status: store.CampaignActive}, ids, ed.ID)
	if err != nil {
		t.Fatal(err)
	}
	a.campaign = c
	a.config(t, map[string]any{"variables": map[string]any{"audience": "home bakers"}, "max_posts_per_day": 5}, 200)
	return a
}

// config puts the autopilot's config of environment A.
func (a *apEnv) config(t *testing.T, body map[string]any, want int) resp {
	t.Helper()
	body["environment_id"] = a.envA
	r := a.do(t, "PUT", "/api/autopilot/config", a.editor, body)
	if r.Code != want {
		t.Fatalf("config %v: %d %s", body, r.Code, r.Body)
	}
	return r
}

// control posts start, pause, resume, stop or run-now for environment A.
func (a *apEnv) control(t *testing.T, verb string, want int) map[string]any {
	t.Helper()
	r := a.do(t, "POST", "/api/autopilot/"+verb, a.editor, map[string]any{"environment_id": a.envA})
	if r.Code != want {
		t.Fatalf("%s: %d %s", verb, r.Code, r.Body)
	}
	return r.Data()
}

func (a *apEnv) status(t *testing.T) map[string]any {
	t.Helper()
	r := a.do(t, "GET", fmt.Sprintf("/api/autopilot/status?environment_id=%d", a.envA), a.viewer, nil)
	if r.Code != 200 {
		t.Fatalf("status: %d %s", r.Code, r.Body)
	}
	return r.Data()
}

func (a *apEnv) run(t *testing.T, id int64) map[string]any {
	t.Helper()
	r := a.do(t, "GET", fmt.Sprintf("/api/autopilot/runs/%d", id), a.viewer, nil)
	if r.Code != 200 {
		t.Fatalf("run %d: %d %s", id, r.Code, r.Body)
	}
	return r.Data()
}

// waitRun waits until run id has status.
func (a *apEnv) waitRun(t *testing.T, id int64, status string) map[string]any {
	t.Helper()
	var run map[string]any
	agWaitFor(t, fmt.Sprintf("autopilot run %d %s", id, status), func() bool {
		run = a.run(t, id)
		return run["status"] == status
	})
	return run
}

// runs lists environment A's runs, newest first.
func (a *apEnv) runs(t *testing.T) []map[string]any {
	t.Helper()
	r := a.do(t, "GET", fmt.Sprintf("/api/autopilot/runs?environment_id=%d", a.envA), a.viewer, nil)
	if r.Code != 200 {
		t.Fatalf("runs: %d %s", r.Code, r.Body)
	}
	return agItems(r.Data())
}

func (a *apEnv) keyword(t *testing.T, i int) *store.Keyword {
	t.Helper()
	k, err := a.app.DB.KeywordByID(context.Background(), a.keywords[i].ID)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// steps maps a run's steps by name.
func steps(run map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, s := range run["steps"].([]any) {
		m := s.(map[string]any)
		out[m["step"].(string)] = m
	}
	return out
}

// notificationOf returns the editor's newest notification of a kind, or nil.
func (a *apEnv) notificationOf(t *testing.T, kind string) map[string]any {
	t.Helper()
	r := a.do(t, "GET", "/api/notifications?per_page=200", a.editor, nil)
	if r.Code != 200 {
		t.Fatalf("notifications: %d %s", r.Code, r.Body)
	}
	for _, n := range agItems(r.Data()) {
		if n["kind"] == kind {
			return n
		}
	}
	return nil
}

// spend records a usage event of environment A costing usd, at time at.
func (a *apEnv) spend(t *testing.T, usd float64, at time.Time) {
	t.Helper()
	if _, err := a.app.DB.RecordUsage(context.Background(), store.UsageEvent{CreatedAt: at, Provider: "openai", Model: "gpt-4o", CostUSD: &usd,
		Status: "ok", Source: "chat", EnvironmentID: &a.envA}); err != nil {
		t.Fatal(err)
	}
}

// The whole way, on the scheduler: started, the autopilot claims the
// first keyword, generates with the campaign's agent and archetype,
// makes the WordPress post and publishes it on the site, marks the
// keyword published with the post linked, and tells the environment.
func TestAutopilotPublishesOnWordPress(t *testing.T) {
	t.Parallel()
	a := newAPEnv(t, store.PostWordPress, "publish", "sourdough starter", "rye bread")
	st := a.control(t, "start", 200)
	if st["autopilot"].(map[string]any)["state"] != "running" || st["next_run_at"] == nil {
		t.Fatalf("started: %v", st)
	}
	startJobs(t, a.env)
	var runID int64
	agWaitFor(t, "a scheduled run", func() bool {
		if list := a.runs(t); len(list) > 0 {
			runID = agID(list[0])
			return true
		}
		return false
	})
	run := a.waitRun(t, runID, "succeeded")
	if run["trigger"] != "schedule" || run["keyword"] != "sourdough starter" || run["target"] != "wordpress" || run["post_status"] != "publish" ||
		run["requested_by"] != nil || run["cie_run_id"] == nil {
		t.Fatalf("run: %v", run)
	}
	post := run["post"].(map[string]any)
	if post["kind"] != "wordpress" {
		t.Fatalf("post: %v", post)
	}
	for name, s := range steps(run) {
		if s["status"] != "succeeded" || agNum(s["attempts"]) != 1 || s["finished_at"] == nil || s["duration_ms"] == nil {
			t.Errorf("step %s: %v", name, s)
		}
	}
	gen := steps(run)["generate"]
	if agNum(gen["input_tokens"]) != 1000 || agNum(gen["output_tokens"]) != 500 || gen["cost_usd"] == nil || run["cost_usd"] == nil {
		t.Errorf("generate step usage: %v", gen)
	}
	// The post: made here from the generation, published on the site.
	p := a.do(t, "GET", fmt.Sprintf("/api/wordpress-posts/%d", id64(post["id"])), a.viewer, nil).Data()
	if p["title"] != "Sourdough for beginners" || p["status"] != "publish" || p["sync_status"] != "synced" || p["cie_run_id"] != run["cie_run_id"] {
		t.Fatalf("post: %v", p)
	}
	if a.site.PostCount() != 1 || a.site.PostStatus(id64(p["remote_id"])) != "publish" {
		t.Fatalf("the site has %d posts; ours is %q", a.site.PostCount(), a.site.PostStatus(id64(p["remote_id"])))
	}
	// The generation: the campaign's archetype and agent, the keyword and
	// the config's audience in its prompt.
	g := a.do(t, "GET", fmt.Sprintf("/api/cie/runs/%d", id64(run["cie_run_id"])), a.viewer, nil).Data()
	if g["status"] != "succeeded" || g["agent_id"] != float64(a.agent) || !strings.Contains(g["user_prompt"].(string), `"sourdough starter" for home bakers`) {
		t.Fatalf("generation: %v", g)
	}
	reqs := a.llm.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d provider calls, want 1", len(reqs))
	}
	if n, evs := agUsage(t, a.env, a.admin, "&source=autopilot"); n != 1 || evs[0]["environment_id"] != float64(a.envA) {
		t.Fatalf("%d usage events with source autopilot: %v", n, evs)
	}
	k := a.keyword(t, 0)
	if k.Status != store.KeywordPublished || k.Post == nil || k.Post.Kind != store.PostWordPress || k.Post.ID != id64(post["id"]) {
		t.Fatalf("keyword: %+v (post %+v)", k, k.Post)
	}
	if k2 := a.keyword(t, 1); k2.Status != store.KeywordNew || k2.Post != nil {
		t.Fatalf("the next keyword was touched: %+v", k2)
	}
	n := a.notificationOf(t, "autopilot.published")
	if n == nil || n["link"] != fmt.Sprintf("/api/autopilot/runs/%d", runID) || !strings.Contains(n["body"].(string), "published on WordPress") {
		t.Fatalf("notification: %v", n)
	}
	// The next run waits for its turn: 5 posts a day are 288 minutes apart.
	st = a.status(t)
	next := envT0.Add(288 * time.Minute).Format("2006-01-02T15:04:05.000Z")
	if st["posts_today"] != 1.0 || st["active_run"] != nil || st["next_run_at"] != next {
		t.Fatalf("status after the run: %v, want next_run_at %s", st, next)
	}
}

// An Astro campaign: the post is a file in the project; a draft stays a
// draft (its publish step skipped, its keyword in progress with the post
// linked), and with post_status publish the file loses its draft flag.
func TestAutopilotAstro(t *testing.T) {
	t.Parallel()
	a := newAPEnv(t, store.PostAstro, "draft", "sourdough starter", "rye bread")
	project := astroProject(t, a.cmsEnv, a.envA)
	startJobs(t, a.env)

	first := a.control(t, "run-now", 202)
	if first["trigger"] != "manual" || first["requested_by"] != float64(a.editorID) || steps(first)["pick_keyword"]["status"] != "succeeded" ||
		steps(first)["generate"]["status"] != "pending" {
		t.Fatalf("run-now: %v", first)
	}
	run := a.waitRun(t, agID(first), "succeeded")
	s := steps(run)
	if s["publish"]["status"] != "skipped" || s["create_post"]["status"] != "succeeded" {
		t.Fatalf("draft run's steps: %v", s)
	}
	post := run["post"].(map[string]any)
	p := a.do(t, "GET", fmt.Sprintf("/api/astro-posts/%d", id64(post["id"])), a.viewer, nil).Data()
	file := filepath.Join(project, "src", "content", "blog", p["slug"].(string)+".md")
	b, err := os.ReadFile(file)
	if err != nil || p["draft"] != true || !strings.Contains(string(b), "draft: true") || !strings.Contains(string(b), "Flour, water, salt and time.") {
		t.Fatalf("draft post %v, file %s (%v)", p, b, err)
	}
	if k := a.keyword(t, 0); k.Status != store.KeywordInProgress || k.Post == nil || k.Post.Kind != store.PostAstro || k.Post.ID != id64(post["id"]) {
		t.Fatalf("keyword of a draft: %+v", k)
	}
	if a.notificationOf(t, "autopilot.drafted") == nil {
		t.Fatal("no autopilot.drafted notification")
	}

	a.config(t, map[string]any{"variables": map[string]any{"audience": "home bakers"}, "post_status": "publish"}, 200)
	second := a.waitRun(t, agID(a.control(t, "run-now", 202)), "succeeded")
	if second["keyword"] != "rye bread" || second["post_status"] != "publish" || steps(second)["publish"]["status"] != "succeeded" {
		t.Fatalf("published run: %v", second)
	}
	p = a.do(t, "GET", fmt.Sprintf("/api/astro-posts/%d", id64(second["post"].(map[string]any)["id"])), a.viewer, nil).Data()
	b, err = os.ReadFile(filepath.Join(project, "src", "content", "blog", p["slug"].(string)+".md"))
	if err != nil || p["draft"] != false || strings.Contains(string(b), "draft:") {
		t.Fatalf("published post %v, file %s (%v)", p, b, err)
	}
	if k := a.keyword(t, 1); k.Status != store.KeywordPublished {
		t.Fatalf("keyword of a published post: %+v", k)
	}
	// Nothing is left: run-now says so, and writes nothing.
	r := a.do(t, "POST", "/api/autopilot/run-now", a.editor, map[string]any{"environment_id": a.envA})
	if r.Code != 409 || !strings.Contains(r.Detail(), "no keyword left") {
		t.Fatalf("run-now with nothing left: %d %s", r.Code, r.Body)
	}
	if len(a.runs(t)) != 2 || a.site.PostCount() != 0 {
		t.Fatalf("%d runs, %d WordPress posts", len(a.runs(t)), a.site.PostCount())
	}
}
