package live_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/copydesk/copydesk/server/ai"
	"github.com/copydesk/copydesk/server/engine"
	"github.com/copydesk/copydesk/server/environment"
	"github.com/copydesk/copydesk/server/jobs"
	"github.com/copydesk/copydesk/server/live"
	"github.com/copydesk/copydesk/server/stream"
	"github.com/copydesk/copydesk/store"
	"github.com/copydesk/copydesk/store/storetest"
)

// bound bounds every wait for background work.
const bound = 10 * time.Second

// fakeEngine stands in for the engine (server/engine is tested against
// real provider wire formats; server/live_agents_test.go runs this service
// with it): each Stream call hands the pieces sent on pieces to onDelta
// until it takes end, or until its caller gives up.
type fakeEngine struct {
	window  int // the model's context window
	planErr error
	pieces  chan string
	calls   chan engine.Call
}

const end = "\x00end"

func newEngine() *fakeEngine {
	return &fakeEngine{window: 128000, pieces: make(chan string, 64), calls: make(chan engine.Call, 16)}
}

func (f *fakeEngine) Effective(context.Context, *int64) (engine.Effective, error) {
	return engine.Effective{MaxOutputTokens: 100, ContextWindows: map[string]int{"gpt-test": f.window}}, nil
}

func (f *fakeEngine) Plan(context.Context, engine.Call) (string, string, error) {
	return "openai", "gpt-test", f.planErr
}

func (f *fakeEngine) Stream(ctx context.Context, c engine.Call, onDelta func(string) error) (*engine.Result, error) {
	f.calls <- c
	res := &engine.Result{Model: "gpt-test"}
	for {
		select {
		case p := <-f.pieces:
			if p == end {
				res.Usage = ai.Usage{InputTokens: 10, OutputTokens: int64(len(res.Text))}
				return res, nil
			}
			if err := onDelta(p); err != nil {
				res.Partial = true
				return res, err
			}
			res.Text += p
		case <-ctx.Done():
			res.Partial = true
			return res, ctx.Err()
		}
	}
}

// rig is the service over a fresh database: environments A and B, editor
// a of A, editor b of B, an agent in A, a session of it, a broker, and a
// job runner that run starts.
type rig struct {
	svc     *live.Service
	db      *store.DB
	eng     *fakeEngine
	events  *stream.Broker
	runner  *jobs.Runner
	edA     store.Scope
	edB     store.Scope
	envA    int64
	envB    int64
	agent   *store.Agent
	session *store.LiveSession
}

// newRig builds the rig; limit, when given, bounds a session's generations.
func newRig(t *testing.T, limit ...int) *rig {
	t.Helper()
	ctx := context.Background()
	db, _ := storetest.OpenDB(t)
	envs := environment.New(db)
	r := &rig{db: db, eng: newEngine(), events: stream.New(stream.Options{})}
	t.Cleanup(r.events.Close)
	admin := store.NewScope(storetest.MustUser(t, db, "root", store.RoleAdmin).ID, true, nil)
	for _, p := range []*int64{&r.envA, &r.envB} {
		e, err := envs.Create(ctx, admin, store.NewEnvironment{Name: "Site"})
		if err != nil {
			t.Fatal(err)
		}
		*p = e.ID
	}
	r.edA = store.NewScope(storetest.MustUser(t, db, "alice", store.RoleEditor).ID, false, []int64{r.envA})
	r.edB = store.NewScope(storetest.MustUser(t, db, "bob", store.RoleEditor).ID, false, []int64{r.envB})
	var err error
	if r.agent, err = db.CreateAgent(ctx, store.AgentInput{EnvironmentID: &r.envA, Name: "Writer", Kind: "writer", IsActive: true,
		SystemPrompt: "Write about {{topic}}."}, r.edA.UserID); err != nil {
		t.Fatal(err)
	}
	r.runner = jobs.New(db, nil, jobs.Options{Workers: 2, PollInterval: 20 * time.Millisecond})
	d := live.Deps{Store: db, Environments: envs, Engine: r.eng, Jobs: r.runner, Events: r.events, Log: slog.New(slog.DiscardHandler)}
	if len(limit) > 0 {
		d.MaxGenerations = limit[0]
	}
	r.svc = live.New(d)
	if r.session, err = r.svc.Create(ctx, r.edA, live.NewSession{EnvironmentID: r.envA, AgentID: r.agent.ID}); err != nil {
		t.Fatal(err)
	}
	return r
}

// run starts the job runner until the test ends.
func (r *rig) run(t *testing.T) {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.runner.Run(ctx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
}

// waitEnd waits for a generation to reach a final status.
func (r *rig) waitEnd(t *testing.T, id int64) *store.LiveGeneration {
	t.Helper()
	deadline := time.Now().Add(bound)
	for time.Now().Before(deadline) {
		g, err := r.db.LiveGenerationByID(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if g.Finished() {
			return g
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("generation %d did not end", id)
	return nil
}

// next is a subscription's next event.
func next(t *testing.T, s *stream.Subscription) stream.Event {
	t.Helper()
	select {
	case ev, ok := <-s.Events():
		if !ok {
			t.Fatalf("the subscription ended: %v", s.Err())
		}
		return ev
	case <-time.After(bound):
		t.Fatal("no event")
		return stream.Event{}
	}
}

func kind(err error) string {
	if err == nil {
		return "ok"
	}
	return map[store.Kind]string{store.KindNotFound: "404", store.KindInvalid: "422", store.KindConflict: "409"}[store.KindOf(err)]
}

// The rules of a session's generations, without the runner: they stay
// queued, which makes a second one a conflict however quickly it comes.
func TestGenerateRules(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	first, err := r.svc.Generate(ctx, r.edA, r.session.ID, live.GenerateInput{Prompt: "Intro", Variables: map[string]string{"topic": "tea"}})
	if err != nil || first.Status != store.RunQueued || first.JobID == nil {
		t.Fatalf("first: %+v %v", first, err)
	}
	huge := map[string]string{}
	for i := range 101 {
		huge[fmt.Sprint(i)] = "x"
	}
	for _, c := range []struct {
		name   string
		sc     store.Scope
		in     live.GenerateInput
		want   string
		detail string
	}{
		{"Second", r.edA, live.GenerateInput{Prompt: "Again"}, "409", "already under way"},
		{"OtherEnvironment", r.edB, live.GenerateInput{Prompt: "x"}, "404", "not found"},
		{"EmptyPrompt", r.edA, live.GenerateInput{Prompt: " \n"}, "422", "prompt"},
		{"LongPrompt", r.edA, live.GenerateInput{Prompt: strings.Repeat("x", 100001)}, "422", "prompt"},
		{"TooManyVariables", r.edA, live.GenerateInput{Prompt: "x", Variables: huge}, "422", "variables"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := r.svc.Generate(ctx, c.sc, r.session.ID, c.in)
			if kind(err) != c.want || !strings.Contains(store.Message(err), c.detail) {
				t.Fatalf("got %s %v, want %s with %q", kind(err), err, c.want, c.detail)
			}
		})
	}

	// Cancelling a queued generation ends it at once, with no output, and
	// its job with it; the session takes the next one.
	g, err := r.svc.Cancel(ctx, r.edA, r.session.ID, "alice")
	if err != nil || g.ID != first.ID || g.Status != store.RunCancelled || g.Output != "" || g.Error != "cancelled by alice" {
		t.Fatalf("cancel: %+v %v", g, err)
	}
	if job, err := r.db.JobByID(ctx, *g.JobID); err != nil || job.Status != store.JobCancelled {
		t.Fatalf("job: %+v %v", job, err)
	}
	if _, err := r.svc.Cancel(ctx, r.edA, r.session.ID, "alice"); kind(err) != "409" {
		t.Fatalf("cancel with nothing under way: %v", err)
	}
	if _, err := r.svc.Generate(ctx, r.edA, r.session.ID, live.GenerateInput{Prompt: "Next"}); err != nil {
		t.Fatal(err)
	}

	// No provider: a 409 now, nothing recorded.
	r.eng.planErr = store.Conflict("no AI provider is configured")
	other, err := r.svc.Create(ctx, r.edA, live.NewSession{EnvironmentID: r.envA, AgentID: r.agent.ID})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.svc.Generate(ctx, r.edA, other.ID, live.GenerateInput{Prompt: "x"}); kind(err) != "409" {
		t.Fatalf("without a provider: %v", err)
	}
	if v, err := r.svc.Get(ctx, r.edA, other.ID); err != nil || len(v.Generations) != 0 {
		t.Fatalf("recorded: %+v %v", v, err)
	}
	r.eng.planErr = nil

	// An inactive agent does not generate; a closed session neither.
	if _, err := r.db.ReplaceAgent(ctx, r.agent.ID, store.AgentInput{EnvironmentID: &r.envA, Name: "Writer", Kind: "writer"}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.svc.Generate(ctx, r.edA, other.ID, live.GenerateInput{Prompt: "x"}); kind(err) != "409" || !strings.Contains(err.Error(), "not active") {
		t.Fatalf("inactive agent: %v", err)
	}
	if _, err := r.svc.Close(ctx, r.edA, other.ID, "alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.svc.Generate(ctx, r.edA, other.ID, live.GenerateInput{Prompt: "x"}); kind(err) != "409" || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("closed: %v", err)
	}
	if _, err := r.svc.Watch(ctx, r.edA, other.ID); kind(err) != "409" {
		t.Fatalf("watch closed: %v", err)
	}
}

// A session's transcript is bounded: past MaxGenerations it takes no more.
func TestTranscriptBound(t *testing.T) {
	r := newRig(t, 3)
	ctx := context.Background()
	for range 3 {
		if _, err := r.svc.Generate(ctx, r.edA, r.session.ID, live.GenerateInput{Prompt: "x"}); err != nil {
			t.Fatal(err)
		}
		if _, err := r.svc.Cancel(ctx, r.edA, r.session.ID, "alice"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.svc.Generate(ctx, r.edA, r.session.ID, live.GenerateInput{Prompt: "one more"}); kind(err) != "409" ||
		!strings.Contains(err.Error(), "create a new session") {
		t.Fatalf("past the bound: %v", err)
	}
}

// A generation's watchers see it start, its pieces and its end; one who
// subscribes in the middle gets the text so far first; a cancel keeps
// exactly the text the watchers got, and the call's usage comes after.
func TestGenerationEventsAndCancel(t *testing.T) {
	r := newRig(t)
	r.run(t)
	ctx := context.Background()
	leave := r.svc.Join(r.session.ID, r.edA.UserID, "alice")
	defer leave()
	w := r.events.Subscribe(live.Topic(r.session.ID), 0)
	defer w.Close()
	if h := w.History(); len(h) != 1 || h[0].Name != live.EventSnapshot || len(h[0].Data.(live.Snapshot).Watchers) != 1 {
		t.Fatalf("history: %+v", h)
	}
	g, err := r.svc.Generate(ctx, r.edA, r.session.ID, live.GenerateInput{Prompt: "On {{topic}}", Variables: map[string]string{"topic": "tea"}})
	if err != nil {
		t.Fatal(err)
	}
	if ev := next(t, w); ev.Name != live.EventGeneration || ev.Data.(*store.LiveGeneration).Status != store.RunQueued {
		t.Fatalf("queued: %+v", ev)
	}
	if ev := next(t, w); ev.Name != live.EventGeneration || ev.Data.(*store.LiveGeneration).Status != store.RunRunning {
		t.Fatalf("started: %+v", ev)
	}
	c := <-r.eng.calls
	if c.Source != "live" || *c.EnvironmentID != r.envA || *c.AgentID != r.agent.ID || c.System != "Write about tea." ||
		len(c.Messages) != 1 || c.Messages[0].Content != "On tea" {
		t.Fatalf("call: %+v", c)
	}
	r.eng.pieces <- "Green "
	r.eng.pieces <- "tea "
	for _, want := range []string{"Green ", "tea "} {
		if ev := next(t, w); ev.Name != live.EventDelta || ev.Data.(live.Delta).Text != want || ev.Data.(live.Delta).GenerationID != g.ID {
			t.Fatalf("delta: %+v", ev)
		}
	}
	late := r.events.Subscribe(live.Topic(r.session.ID), 0)
	defer late.Close()
	if h := late.History(); len(h) != 1 || h[0].Data.(live.Snapshot).Text != "Green tea " || h[0].Data.(live.Snapshot).Generation.ID != g.ID {
		t.Fatalf("late history: %+v", h)
	}

	cancelled, err := r.svc.Cancel(ctx, r.edA, r.session.ID, "alice")
	if err != nil || cancelled.Status != store.RunCancelled || cancelled.Output != "Green tea " {
		t.Fatalf("cancel: %+v %v", cancelled, err)
	}
	r.eng.pieces <- "is good" // too late: refused, never published
	ev := next(t, w)
	if ev.Name != live.EventDone || ev.Data.(*store.LiveGeneration).Output != "Green tea " {
		t.Fatalf("end: %+v", ev)
	}
	// The handler published the end once it recorded the call's usage.
	final, err := r.db.LiveGenerationByID(ctx, g.ID)
	if err != nil || final.Output != "Green tea " || final.Model != "gpt-test" || final.Error != "cancelled by alice" {
		t.Fatalf("recorded: %+v %v", final, err)
	}
}

// The session's earlier exchanges that succeeded go with each prompt,
// oldest first, and the oldest are left out when the context window is
// small; the generation says how many.
func TestHistoryAndTrimming(t *testing.T) {
	r := newRig(t)
	r.run(t)
	ctx := context.Background()
	say := func(prompt, answer string) *store.LiveGeneration {
		t.Helper()
		g, err := r.svc.Generate(ctx, r.edA, r.session.ID, live.GenerateInput{Prompt: prompt})
		if err != nil {
			t.Fatal(err)
		}
		r.eng.pieces <- answer
		r.eng.pieces <- end
		return r.waitEnd(t, g.ID)
	}
	long := strings.Repeat("word ", 60) // some 75 tokens
	say("first", long)
	<-r.eng.calls
	say("second", long)
	if c := <-r.eng.calls; len(c.Messages) != 3 || c.Messages[0].Content != "first" || c.Messages[1].Content != long {
		t.Fatalf("second call: %+v", c.Messages)
	}
	// 300 tokens, 100 of them for the answer: 180 for the prompt, which
	// holds the new prompt and one exchange but not two.
	r.eng.window = 300
	g := say("third", "ok")
	c := <-r.eng.calls
	if len(c.Messages) != 3 || c.Messages[0].Content != "second" || c.Messages[2].Content != "third" || g.HistoryDropped != 2 {
		t.Fatalf("third call: %d messages, first %q, dropped %d", len(c.Messages), c.Messages[0].Content, g.HistoryDropped)
	}
}

// Presence: each join and leave is told with who watches; a watcher with
// two streams counts once, with two connections; the room and its topic go
// when the last watcher leaves.
func TestPresence(t *testing.T) {
	r := newRig(t)
	topic := live.Topic(r.session.ID)
	leaveA1 := r.svc.Join(r.session.ID, r.edA.UserID, "alice")
	w := r.events.Subscribe(topic, 0)
	defer w.Close()
	leaveB := r.svc.Join(r.session.ID, r.edB.UserID, "bob")
	leaveA2 := r.svc.Join(r.session.ID, r.edA.UserID, "alice")
	leaveB()
	leaveB() // twice is once
	want := []string{"join bob: alice(1) bob(1)", "join alice: alice(2) bob(1)", "leave bob: alice(2)"}
	for _, line := range want {
		ev := next(t, w)
		p := ev.Data.(live.Presence)
		got := p.Action + " " + p.Username + ":"
		for _, x := range p.Watchers {
			got += fmt.Sprintf(" %s(%d)", x.Username, x.Connections)
		}
		if ev.Name != live.EventPresence || got != line {
			t.Fatalf("got %q, want %q", got, line)
		}
	}
	if v, err := r.svc.Get(context.Background(), r.edA, r.session.ID); err != nil || len(v.Watchers) != 1 || v.Watchers[0].Connections != 2 {
		t.Fatalf("watchers: %+v %v", v, err)
	}
	w.Close()
	leaveA1()
	leaveA2()
	// The room is gone and its topic finished: a new subscriber is ended
	// at once.
	if _, open := <-r.events.Subscribe(topic, 0).Events(); open {
		t.Fatal("the room's topic is still open")
	}
}

// After a restore the rooms forget generations waiting for their turn
// (the restored database decides which there are): a session nobody
// watches has no room left.
func TestRestoredForgetsQueued(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	if _, err := r.svc.Generate(ctx, r.edA, r.session.ID, live.GenerateInput{Prompt: "x"}); err != nil {
		t.Fatal(err)
	}
	topic := live.Topic(r.session.ID)
	s := r.events.Subscribe(topic, 0)
	if h := s.History(); len(h) != 1 || h[0].Data.(live.Snapshot).Generation == nil {
		t.Fatalf("before: %+v", h)
	}
	s.Close()
	r.svc.Restored()
	if _, open := <-r.events.Subscribe(topic, 0).Events(); open {
		t.Fatal("the room of a session nobody watches outlived the restore")
	}
}

// Deleting a session stops its generation and ends its watchers' streams.
func TestDeleteEndsSession(t *testing.T) {
	r := newRig(t)
	r.run(t)
	ctx := context.Background()
	leave := r.svc.Join(r.session.ID, r.edA.UserID, "alice")
	defer leave()
	w := r.events.Subscribe(live.Topic(r.session.ID), 0)
	g, err := r.svc.Generate(ctx, r.edA, r.session.ID, live.GenerateInput{Prompt: "x"})
	if err != nil {
		t.Fatal(err)
	}
	<-r.eng.calls
	if err := r.svc.Delete(ctx, r.edB, r.session.ID, "bob"); kind(err) != "404" {
		t.Fatalf("delete from B: %v", err)
	}
	if err := r.svc.Delete(ctx, r.edA, r.session.ID, "alice"); err != nil {
		t.Fatal(err)
	}
	var last stream.Event
	for ev := range w.Events() {
		last = ev
	}
	if last.Name != live.EventClosed || !last.Data.(live.Closed).Deleted || w.Err() != nil {
		t.Fatalf("last event: %+v %v", last, w.Err())
	}
	if _, err := r.db.LiveGenerationByID(ctx, g.ID); !store.IsNotFound(err) {
		t.Fatalf("generation after delete: %v", err)
	}
}

// What save-as-post takes: the newest generation that succeeded.
func TestLastOutput(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	add := func(status, output string) int64 {
		g, err := r.db.CreateLiveGenerationWithJob(ctx, store.NewLiveGeneration{SessionID: r.session.ID, Prompt: "x"},
			store.RunJob{Kind: live.GenerateJob, Payload: func(id int64) any { return id }})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.db.FinishLiveGeneration(ctx, g.ID, store.LiveOutcome{Status: status, Output: output}); err != nil {
			t.Fatal(err)
		}
		return g.ID
	}
	if _, _, err := r.svc.LastOutput(ctx, r.edA, r.session.ID); kind(err) != "409" {
		t.Fatalf("none: %v", err)
	}
	ok := add(store.RunSucceeded, "# Done")
	add(store.RunCancelled, "Half")
	if _, g, err := r.svc.LastOutput(ctx, r.edA, r.session.ID); err != nil || g.ID != ok {
		t.Fatalf("last: %+v %v", g, err)
	}
	if _, _, err := r.svc.LastOutput(ctx, r.edB, r.session.ID); kind(err) != "404" {
		t.Fatalf("from B: %v", err)
	}
	add(store.RunSucceeded, "  ")
	if _, _, err := r.svc.LastOutput(ctx, r.edA, r.session.ID); kind(err) != "409" || !strings.Contains(err.Error(), "empty") {
		t.Fatalf("empty: %v", err)
	}
}

// Generations a dead process left waiting or running, with no job to
// finish them, are failed at the next start, so no session stays busy.
func TestOrphanGenerationsFail(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	g, err := r.svc.Generate(ctx, r.edA, r.session.ID, live.GenerateInput{Prompt: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := r.db.FailOrphanLiveGenerations(ctx, "interrupted by a restart"); err != nil || n != 0 {
		t.Fatalf("with its job queued: %d %v", n, err)
	}
	if _, err := r.db.CancelJob(ctx, *g.JobID); err != nil { // behind the runner's back, as a crash would leave it
		t.Fatal(err)
	}
	if n, err := r.db.FailOrphanLiveGenerations(ctx, "interrupted by a restart"); err != nil || n != 1 {
		t.Fatalf("orphan: %d %v", n, err)
	}
	if _, err := r.svc.Generate(ctx, r.edA, r.session.ID, live.GenerateInput{Prompt: "again"}); err != nil {
		t.Fatalf("after the orphan: %v", err)
	}
}
