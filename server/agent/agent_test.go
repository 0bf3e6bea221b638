package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/copydesk/copydesk/server/agent"
	"github.com/copydesk/copydesk/server/credential"
	"github.com/copydesk/copydesk/server/engine"
	"github.com/copydesk/copydesk/server/environment"
	"github.com/copydesk/copydesk/server/generation"
	"github.com/copydesk/copydesk/server/jobs"
	"github.com/copydesk/copydesk/server/notify"
	"github.com/copydesk/copydesk/server/stream"
	"github.com/copydesk/copydesk/store"
	"github.com/copydesk/copydesk/store/storetest"
)

// bound bounds every wait for background work.
const bound = 10 * time.Second

func ptr[T any](v T) *T { return &v }

// fakeEngine stands in for the engine: it answers with pieces of text, or
// blocks until its caller gives up when block says so of a call.
type fakeEngine struct {
	planErr error
	pieces  []string
	block   func(engine.Call) bool
	started chan string // the input of each call that reached the "provider"

	mu    sync.Mutex
	calls int
}

func newEngine(pieces ...string) *fakeEngine {
	return &fakeEngine{pieces: pieces, started: make(chan string, 16)}
}

func (f *fakeEngine) Plan(context.Context, engine.Call) (string, string, error) {
	return "openai", "gpt-test", f.planErr
}

func (f *fakeEngine) Generate(ctx context.Context, c engine.Call) (*engine.Result, error) {
	return f.Stream(ctx, c, nil)
}

func (f *fakeEngine) Stream(ctx context.Context, c engine.Call, onDelta func(string) error) (*engine.Result, error) {
	f.mu.Lock()
	f.calls++
	f.mu.Unlock()
	f.started <- c.Messages[0].Content
	if f.block != nil && f.block(c) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	var text strings.Builder
	for _, p := range f.pieces {
		if onDelta != nil {
			if err := onDelta(p); err != nil {
				return nil, err
			}
		}
		text.WriteString(p)
	}
	return &engine.Result{Text: text.String(), Model: "gpt-test"}, nil
}

// rig is the service over a fresh database, with environments A and B,
// an admin, editor a (of A) and editor b (of B), and a running job runner.
type rig struct {
	svc          *agent.Service
	db           *store.DB
	engine       *fakeEngine
	events       *stream.Broker
	envA, envB   int64
	admin, edA   store.Scope
	edB, noScope store.Scope
}

func newRig(t *testing.T, eng *fakeEngine) *rig {
	t.Helper()
	ctx := context.Background()
	db, _ := storetest.OpenDB(t)
	envs := environment.New(db)
	r := &rig{db: db, engine: eng, events: stream.New(stream.Options{})}
	t.Cleanup(r.events.Close)
	var ids []int64
	for _, name := range []string{"root", "alice", "bob"} {
		u, err := db.CreateUser(ctx, store.NewUser{Email: name + "@example.com", Username: name, PasswordHash: "x", Role: store.RoleEditor})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, u.ID)
	}
	r.admin = store.NewScope(ids[0], true, nil)
	for _, p := range []*int64{&r.envA, &r.envB} {
		e, err := envs.Create(ctx, r.admin, store.NewEnvironment{Name: "Site"})
		if err != nil {
			t.Fatal(err)
		}
		*p = e.ID
	}
	r.edA = store.NewScope(ids[1], false, []int64{r.envA})
	r.edB = store.NewScope(ids[2], false, []int64{r.envB})
	runner := jobs.New(db, nil, jobs.Options{Workers: 2, PollInterval: 20 * time.Millisecond})
	log := slog.New(slog.DiscardHandler)
	r.svc = agent.New(agent.Deps{Store: db, Environments: envs, Credentials: credential.New(db, envs, nil, nil), Engine: eng,
		Jobs: runner, Notify: notify.New(db, log), Events: r.events, Log: log})
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- runner.Run(runCtx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return r
}

func (r *rig) create(t *testing.T, sc store.Scope, name string, env *int64) *store.Agent {
	t.Helper()
	a, err := r.svc.Create(context.Background(), sc, store.AgentInput{EnvironmentID: env, Name: name, Kind: "writer", IsActive: true})
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	return a
}

func kindOf(err error) string {
	if err == nil {
		return "ok"
	}
	return map[store.Kind]string{store.KindNotFound: "404", store.KindForbidden: "403", store.KindInvalid: "422",
		store.KindConflict: "409"}[store.KindOf(err)]
}

// Who sees and who changes an agent, through the scope alone.
func TestVisibilityAndManagement(t *testing.T) {
	r := newRig(t, newEngine())
	ctx := context.Background()
	ownA := r.create(t, r.edA, "A's", &r.envA)
	ownB := r.create(t, r.edB, "B's", &r.envB)
	global := r.create(t, r.admin, "Global", nil)
	shared := r.create(t, r.edA, "A's, assigned to B", &r.envA)
	if _, err := r.svc.SetAssignments(ctx, r.edA, shared.ID, []int64{r.envA}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.svc.SetAssignments(ctx, r.admin, shared.ID, []int64{r.envB}); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		who       string
		sc        store.Scope
		agent     *store.Agent
		see, edit string
	}{
		{"admin/own", r.admin, ownA, "ok", "ok"},
		{"admin/global", r.admin, global, "ok", "ok"},
		{"editor/own", r.edA, ownA, "ok", "ok"},
		{"editor/other", r.edA, ownB, "404", "404"},
		{"editor/global", r.edA, global, "ok", "403"},
		{"editor/assigned", r.edB, shared, "ok", "403"},
		{"nobody/global", r.noScope, global, "404", "404"},
	} {
		t.Run(c.who, func(t *testing.T) {
			_, err := r.svc.Get(ctx, c.sc, c.agent.ID)
			if got := kindOf(err); got != c.see {
				t.Errorf("get: %s, want %s (%v)", got, c.see, err)
			}
			_, err = r.svc.Update(ctx, c.sc, c.agent.ID, agent.Change{Description: ptr("changed")})
			if got := kindOf(err); got != c.edit {
				t.Errorf("update: %s, want %s (%v)", got, c.edit, err)
			}
			_, err = r.svc.SetAssignments(ctx, c.sc, c.agent.ID, nil)
			if got := kindOf(err); got != c.edit {
				t.Errorf("assign: %s, want %s (%v)", got, c.edit, err)
			}
		})
	}

	names := func(sc store.Scope, q agent.ListQuery) []string {
		t.Helper()
		q.Page = store.Page{Page: 1, PerPage: 50}
		list, total, err := r.svc.List(ctx, sc, q)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, a := range list {
			out = append(out, a.Name)
		}
		if total != len(out) {
			t.Errorf("total %d for %d items", total, len(out))
		}
		return out
	}
	if got := names(r.edB, agent.ListQuery{}); !slices.Equal(got, []string{"A's, assigned to B", "B's", "Global"}) {
		t.Errorf("B's editor lists %q", got)
	}
	if got := names(r.noScope, agent.ListQuery{}); len(got) != 0 {
		t.Errorf("the zero scope lists %q", got)
	}
	if got := names(r.admin, agent.ListQuery{EnvironmentID: &r.envB}); !slices.Equal(got, []string{"A's, assigned to B", "B's"}) {
		t.Errorf("the agents of B: %q", got)
	}
	if _, _, err := r.svc.List(ctx, r.edA, agent.ListQuery{EnvironmentID: &r.envB}); !store.IsNotFound(err) {
		t.Errorf("A's editor asks for B's agents: %v", err)
	}

	t.Run("CreateRefused", func(t *testing.T) {
		for _, c := range []struct {
			name string
			sc   store.Scope
			env  *int64
			want string
		}{
			{"editor without environment", r.edA, nil, "environment_id"},
			{"editor in another environment", r.edA, &r.envB, "environment_id"},
			{"unknown environment", r.admin, ptr(int64(999)), "environment_id"},
		} {
			_, err := r.svc.Create(ctx, c.sc, store.AgentInput{EnvironmentID: c.env, Name: "X", Kind: "writer"})
			if kindOf(err) != "422" || !strings.HasPrefix(store.Message(err), c.want) {
				t.Errorf("%s: %v", c.name, err)
			}
		}
	})
	t.Run("AssignOnlyWhatYouSee", func(t *testing.T) {
		_, err := r.svc.SetAssignments(ctx, r.edA, ownA.ID, []int64{r.envB})
		if kindOf(err) != "422" || !strings.HasPrefix(store.Message(err), "environment_ids") {
			t.Errorf("editor assigns to B: %v", err)
		}
	})
	t.Run("Delete", func(t *testing.T) {
		if err := r.svc.Delete(ctx, r.edB, shared.ID); kindOf(err) != "403" {
			t.Errorf("B's editor deletes an agent assigned to B: %v", err)
		}
		if err := r.svc.Delete(ctx, r.edA, shared.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := r.svc.Get(ctx, r.admin, shared.ID); !store.IsNotFound(err) {
			t.Errorf("after delete: %v", err)
		}
	})
}

func TestExecuteRecordsTheRunWithItsJob(t *testing.T) {
	eng := newEngine("done")
	eng.block = func(engine.Call) bool { return true } // keeps queued runs from finishing under the test
	r := newRig(t, eng)
	ctx := context.Background()
	a := r.create(t, r.edA, "Writer", &r.envA)

	for _, c := range []struct {
		stream   bool
		kind     string
		attempts int
	}{{false, agent.RunJob, store.DefaultJobMaxAttempts}, {true, agent.StreamJob, 1}} {
		run, err := r.svc.Execute(ctx, r.edA, a.ID, agent.RunInput{Input: "go", Stream: c.stream})
		if err != nil {
			t.Fatal(err)
		}
		if run.Status != store.RunQueued || run.JobID == nil || *run.UserID != r.edA.UserID || *run.EnvironmentID != r.envA {
			t.Fatalf("run: %+v", run)
		}
		job, err := r.db.JobByID(ctx, *run.JobID)
		if err != nil {
			t.Fatal(err)
		}
		var p struct {
			RunID int64 `json:"run_id"`
		}
		if job.Kind != c.kind || job.MaxAttempts != c.attempts || json.Unmarshal(job.Payload, &p) != nil || p.RunID != run.ID {
			t.Errorf("stream %v: job %+v", c.stream, job)
		}
		if _, err := r.svc.Cancel(ctx, r.edA, run.ID, "alice"); err != nil {
			t.Fatal(err)
		}
	}

	// Nothing could run it: the attempt is a failed run without a job.
	eng.planErr = store.Conflict("no AI provider is configured")
	_, err := r.svc.Execute(ctx, r.edA, a.ID, agent.RunInput{Input: "go"})
	if kindOf(err) != "409" {
		t.Fatalf("without a provider: %v", err)
	}
	list, _, err := r.svc.Runs(ctx, r.edA, a.ID, store.RunFailed, store.Page{Page: 1, PerPage: 10})
	if err != nil || len(list) != 1 || list[0].JobID != nil || list[0].Error != "no AI provider is configured" || list[0].FinishedAt == nil {
		t.Fatalf("the refused run: %+v %v", list, err)
	}

	// Where a run may count.
	global := r.create(t, r.admin, "Global", nil)
	for _, c := range []struct {
		name  string
		sc    store.Scope
		agent int64
		env   *int64
		want  string
	}{
		{"editor runs a global agent outside any environment", r.edA, global.ID, nil, "422"},
		{"editor runs in an environment not granted", r.edA, a.ID, &r.envB, "422"},
		{"agent not assigned there", r.admin, a.ID, &r.envB, "422"},
		{"agent not visible", r.edB, a.ID, nil, "404"},
	} {
		if _, err := r.svc.Execute(ctx, c.sc, c.agent, agent.RunInput{Input: "go", EnvironmentID: c.env}); kindOf(err) != c.want {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	if _, err := r.svc.Update(ctx, r.edA, a.ID, agent.Change{IsActive: ptr(false)}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.svc.Execute(ctx, r.edA, a.ID, agent.RunInput{Input: "go"}); kindOf(err) != "409" {
		t.Errorf("an inactive agent: %v", err)
	}
}

// events reads a subscription until its topic finishes.
func events(t *testing.T, s *stream.Subscription) []stream.Event {
	t.Helper()
	out := append([]stream.Event(nil), s.History()...)
	timeout := time.After(bound)
	for {
		select {
		case ev, ok := <-s.Events():
			if !ok {
				return out
			}
			out = append(out, ev)
		case <-timeout:
			t.Fatalf("the run's stream did not end; so far %v", out)
		}
	}
}

func names(evs []stream.Event) string {
	var out []string
	for _, ev := range evs {
		out = append(out, ev.Name)
	}
	return strings.Join(out, ",")
}

// A streamed run waits for its requester to listen, so that the requester
// gets every event from the first, even when it subscribes late.
func TestStreamedRunPublishesEveryEvent(t *testing.T) {
	r := newRig(t, newEngine("Green ", "tea ", "is steamed."))
	ctx := context.Background()
	a := r.create(t, r.edA, "Writer", &r.envA)
	run, err := r.svc.Execute(ctx, r.edA, a.ID, agent.RunInput{Input: "tea", Stream: true})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // the job is claimed meanwhile, and waits
	evs := events(t, r.events.Subscribe(agent.Topic(run.ID), 0))
	if got := names(evs); got != "run,delta,delta,delta,done" {
		t.Fatalf("events: %s", got)
	}
	if started := evs[0].Data.(*store.AgentRun); started.Status != store.RunRunning || started.StartedAt == nil {
		t.Errorf("the run event: %+v", started)
	}
	done := evs[len(evs)-1].Data.(*store.AgentRun)
	if done.Status != store.RunSucceeded || done.Output != "Green tea is steamed." {
		t.Errorf("done: %+v", done)
	}
	// A late watcher gets the snapshot, then the end.
	late := events(t, r.events.Subscribe(agent.Topic(run.ID), 0))
	if s, ok := late[0].Data.(agent.Snapshot); len(late) != 1 || !ok || s.Text != "Green tea is steamed." || s.Run.Status != store.RunSucceeded {
		t.Errorf("late watcher: %+v", late)
	}
}

// Cancelling a streamed run, or ending it with its requester's session,
// cuts its provider call and ends its stream with an error that says why.
func TestStreamedRunEnds(t *testing.T) {
	for _, c := range []struct {
		name         string
		end          func(r *rig, runID int64) error
		status, want string
	}{
		{"Cancel", func(r *rig, id int64) error {
			_, err := r.svc.Cancel(context.Background(), r.edA, id, "alice")
			return err
		}, store.RunCancelled, "the run was cancelled: cancelled by alice"},
		{"SessionEnded", func(r *rig, id int64) error {
			return r.svc.End(context.Background(), id, store.RunFailed, "the session ended")
		}, store.RunFailed, "the session ended"},
	} {
		t.Run(c.name, func(t *testing.T) {
			eng := newEngine()
			eng.block = func(engine.Call) bool { return true }
			r := newRig(t, eng)
			a := r.create(t, r.edA, "Writer", &r.envA)
			run, err := r.svc.Execute(context.Background(), r.edA, a.ID, agent.RunInput{Input: "slow", Stream: true})
			if err != nil {
				t.Fatal(err)
			}
			sub := r.events.Subscribe(agent.Topic(run.ID), 0)
			select {
			case <-eng.started:
			case <-time.After(bound):
				t.Fatal("the provider was not called")
			}
			if err := c.end(r, run.ID); err != nil {
				t.Fatal(err)
			}
			evs := events(t, sub)
			if got := names(evs); got != "run,error" || evs[1].Data.(generation.Failure).Detail != c.want {
				t.Fatalf("events: %s %+v", got, evs)
			}
			stored, err := r.db.RunByID(context.Background(), run.ID)
			if err != nil || stored.Status != c.status {
				t.Fatalf("run: %+v %v", stored, err)
			}
			waitJob(t, r, *run.JobID, store.JobCancelled)
			if err := r.svc.End(context.Background(), run.ID, store.RunCancelled, "again"); err != nil {
				t.Errorf("ending a finished run: %v", err)
			}
			if _, err := r.svc.Cancel(context.Background(), r.edA, run.ID, "alice"); kindOf(err) != "409" {
				t.Errorf("cancelling a finished run: %v", err)
			}
		})
	}
}

func waitJob(t *testing.T, r *rig, id int64, want store.JobStatus) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for {
		job, err := r.db.JobByID(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if job.Status == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %d is %s, want %s", id, job.Status, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Queued runs are background work: with two workers they take one at
// most, and a streamed run, which someone watches, never waits behind
// them.
func TestStreamedRunDoesNotWaitBehindQueuedRuns(t *testing.T) {
	eng := newEngine("live")
	eng.block = func(c engine.Call) bool { return strings.HasPrefix(c.Messages[0].Content, "queued") }
	r := newRig(t, eng)
	ctx := context.Background()
	a := r.create(t, r.edA, "Writer", &r.envA)
	var queued []*store.AgentRun
	for i := range 2 {
		run, err := r.svc.Execute(ctx, r.edA, a.ID, agent.RunInput{Input: fmt.Sprintf("queued %d", i)})
		if err != nil {
			t.Fatal(err)
		}
		queued = append(queued, run)
	}
	select {
	case <-eng.started:
	case <-time.After(bound):
		t.Fatal("no queued run started")
	}
	run, err := r.svc.Execute(ctx, r.edA, a.ID, agent.RunInput{Input: "streamed", Stream: true})
	if err != nil {
		t.Fatal(err)
	}
	evs := events(t, r.events.Subscribe(agent.Topic(run.ID), 0))
	if got := names(evs); got != "run,delta,done" {
		t.Fatalf("the streamed run behind queued ones: %s", got)
	}
	statuses := map[string]int{}
	for _, q := range queued {
		stored, err := r.db.RunByID(ctx, q.ID)
		if err != nil {
			t.Fatal(err)
		}
		statuses[stored.Status]++
	}
	if statuses[store.RunRunning] != 1 || statuses[store.RunQueued] != 1 {
		t.Errorf("queued runs: %v, want one running and one waiting", statuses)
	}
	for _, q := range queued {
		if _, err := r.svc.Cancel(ctx, r.edA, q.ID, "alice"); err != nil {
			t.Fatal(err)
		}
	}
}

// A scope sees and replaces only the assignments to environments it sees;
// the rest are kept (issue 9, item 8).
func TestAssignmentsBeyondTheScopeAreHiddenAndKept(t *testing.T) {
	t.Parallel()
	r := newRig(t, newEngine("x"))
	ctx := context.Background()
	a := r.create(t, r.edA, "shared", &r.envA)
	if got, err := r.svc.SetAssignments(ctx, r.admin, a.ID, []int64{r.envB}); err != nil || !slices.Equal(got.Assignments, []int64{r.envB}) {
		t.Fatalf("admin assigns to B: %v %v", got, err)
	}
	got, err := r.svc.Get(ctx, r.edA, a.ID)
	if err != nil || got.Assignments == nil || len(got.Assignments) != 0 {
		t.Fatalf("A's editor gets the agent with assignments %v (%v), want []", got.Assignments, err)
	}
	list, _, err := r.svc.List(ctx, r.edA, agent.ListQuery{Page: store.Page{Page: 1, PerPage: 10}})
	if err != nil || len(list) != 1 || len(list[0].Assignments) != 0 {
		t.Fatalf("A's editor lists %v (%v)", list, err)
	}
	if got, err := r.svc.SetAssignments(ctx, r.edA, a.ID, nil); err != nil || len(got.Assignments) != 0 {
		t.Fatalf("A's editor clears: %v %v", got, err)
	}
	if got, err := r.svc.Get(ctx, r.admin, a.ID); err != nil || !slices.Equal(got.Assignments, []int64{r.envB}) {
		t.Fatalf("after A's editor cleared, the admin sees %v (%v), want B kept", got.Assignments, err)
	}
	if got, err := r.svc.Get(ctx, r.edB, a.ID); err != nil || !slices.Equal(got.Assignments, []int64{r.envB}) {
		t.Fatalf("B's editor still uses the agent: %v %v", got, err)
	}
}
