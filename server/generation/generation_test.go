package generation_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/copydesk/copydesk/server/ai"
	"github.com/copydesk/copydesk/server/credential"
	"github.com/copydesk/copydesk/server/engine"
	"github.com/copydesk/copydesk/server/generation"
	"github.com/copydesk/copydesk/server/jobs"
	"github.com/copydesk/copydesk/server/keyring"
	"github.com/copydesk/copydesk/server/notify"
	"github.com/copydesk/copydesk/server/stream"
	"github.com/copydesk/copydesk/store"
	"github.com/copydesk/copydesk/store/storetest"
)

// bound bounds every wait for background work.
const bound = 10 * time.Second

// provider is a local server speaking the OpenAI Chat Completions wire
// format. What it does depends on the prompt: "complete" streams (or
// answers) "Hello streamed world." with its usage; "hang" streams "Hello "
// then waits until the caller goes away; "cut" streams "Hello wor" and
// ends without finishing; "gate" streams "Hello " (answers nothing yet)
// and waits for p.gate to close, then finishes as "complete". It keeps the messages of the last
// streamed request.
func provider(t *testing.T, p *remote) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Stream   bool `json:"stream"`
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
		}
		if r.URL.Path != "/v1/chat/completions" || json.NewDecoder(r.Body).Decode(&req) != nil || len(req.Messages) == 0 {
			w.WriteHeader(404)
			return
		}
		mode := req.Messages[len(req.Messages)-1].Content
		if req.Stream {
			p.mu.Lock()
			p.sent = p.sent[:0]
			for _, m := range req.Messages {
				p.sent = append(p.sent, m.Content)
			}
			p.mu.Unlock()
		}
		if !req.Stream {
			switch mode {
			case "hang":
				<-r.Context().Done()
				return
			case "gate":
				select {
				case <-p.gate:
				case <-r.Context().Done():
					return
				}
			}
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"id":"c1","object":"chat.completion","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"Hello streamed world."},"finish_reason":"stop"}],"usage":{"prompt_tokens":1000,"completion_tokens":500,"total_tokens":1500}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := func(text string) {
			fmt.Fprintf(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"delta\":{\"content\":%q},\"finish_reason\":null}]}\n\n", text)
			w.(http.Flusher).Flush()
		}
		switch mode {
		case "hang":
			chunk("Hello ")
			<-r.Context().Done()
		case "cut":
			chunk("Hello ")
			chunk("wor")
		default:
			pieces := []string{"Hello ", "streamed ", "world."}
			if mode == "gate" {
				chunk(pieces[0])
				pieces = pieces[1:]
				select {
				case <-p.gate:
				case <-r.Context().Done():
					return
				}
			}
			for _, piece := range pieces {
				chunk(piece)
			}
			fmt.Fprint(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n")
			fmt.Fprint(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o-mini\",\"choices\":[],\"usage\":{\"prompt_tokens\":1000,\"completion_tokens\":500,\"total_tokens\":1500}}\n\n")
			fmt.Fprint(w, "data: [DONE]\n\n")
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// remote is what the provider shares with a test.
type remote struct {
	gate chan struct{} // a "gate" call goes on when it closes
	mu   sync.Mutex
	sent []string // the messages of the last streamed call
}

// messages are the messages of the last streamed call.
func (p *remote) messages() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.sent)
}

// rig is a kind of generation over agent runs (the page of code a kind
// costs), with the real engine, job runner and broker over a fresh
// database.
type rig struct {
	db       *store.DB
	kind     *generation.Kind[*store.AgentRun]
	runner   *jobs.Runner
	events   *stream.Broker
	agentID  int64
	user     int64
	eng      *engine.Engine
	remote   *remote
	log      *slog.Logger
	notified atomic.Int32
}

func topic(id int64) string { return "test/runs/" + strconv.FormatInt(id, 10) }

func newRig(t *testing.T) *rig {
	t.Helper()
	ctx := context.Background()
	db, _ := storetest.OpenDB(t)
	log := slog.New(slog.DiscardHandler)
	keys, err := keyring.New([]byte("generation-test-secret-0123456789"))
	if err != nil {
		t.Fatal(err)
	}
	eng := engine.New(db, keys, notify.New(db, log), log, engine.Options{})
	const key = "sk-generation-test-key-0123456789"
	rem := &remote{gate: make(chan struct{})}
	cred, err := db.CreateCredential(ctx, store.NewCredential{Name: "openai", Provider: "openai", BaseURL: provider(t, rem).URL + "/v1",
		SecretHint: credential.Mask(key), DefaultModel: "gpt-4o-mini",
		Seal: func(id int64) ([]byte, error) { return keys.Seal([]byte(key), store.CredentialAAD(id)) }})
	if err != nil {
		t.Fatal(err)
	}
	u := storetest.MustUser(t, db, "ann", store.RoleEditor)
	a, err := db.CreateAgent(ctx, store.AgentInput{Name: "Writer", Kind: "writer", CredentialID: &cred.ID, IsActive: true}, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{db: db, agentID: a.ID, user: u.ID, eng: eng, remote: rem, log: log, events: stream.New(stream.Options{}),
		runner: jobs.New(db, log, jobs.Options{Workers: 2, PollInterval: 20 * time.Millisecond})}
	t.Cleanup(r.events.Close)
	r.kind = &generation.Kind[*store.AgentRun]{Name: "run", Queued: "test.run", Streamed: "test.run.stream", Key: "run_id",
		Wait: 200 * time.Millisecond,
		Load: db.RunByID, Start: db.StartRun, Finish: db.FinishRun, Requeue: db.RequeueRun,
		ID: func(r *store.AgentRun) int64 { return r.ID },
		Call: func(ctx context.Context, run *store.AgentRun, f generation.Feed) (store.Outcome, error) {
			c := engine.Call{Source: "execution", AgentID: &run.AgentID, CredentialID: &cred.ID,
				Messages: []ai.Message{{Role: "user", Content: run.Input}}}
			var res *engine.Result
			var err error
			if f == nil {
				res, err = eng.Generate(ctx, c)
			} else {
				res, err = eng.Stream(ctx, c, f.Delta)
			}
			return generation.Outcome(res, err), err
		},
		Notify: func(context.Context, *store.Job, *store.AgentRun) { r.notified.Add(1) },
		Topic:  topic,
		Begin: func(_ context.Context, run *store.AgentRun) (stream.Event, bool) {
			return stream.Event{Name: "run", Data: run}, true
		},
		Final: func(_ context.Context, run *store.AgentRun) stream.Event {
			return r.kind.Ended(run.Status, run.Error, run)
		},
		Snapshot: func() stream.Snapshot { return generation.NewSnapshot[*store.AgentRun]("") },
		Jobs:     r.runner, Events: r.events, Log: log}
	r.kind.Register()
	return r
}

// start runs the job runner until the test ends.
func (r *rig) start(t *testing.T) {
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.runner.Run(runCtx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
}

// run records a run whose prompt is mode (see provider) with its job.
func (r *rig) run(t *testing.T, mode string, streamed bool) *store.AgentRun {
	t.Helper()
	run, err := r.db.CreateRunWithJob(context.Background(), store.NewRun{AgentID: r.agentID, Input: mode}, r.kind.Job(streamed))
	if err != nil {
		t.Fatal(err)
	}
	r.runner.Signal()
	return run
}

// finished waits for a run to reach a final status.
func (r *rig) finished(t *testing.T, id int64) *store.AgentRun {
	t.Helper()
	deadline := time.Now().Add(bound)
	for {
		run, err := r.db.RunByID(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if run.Finished() {
			return run
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %d still %s", id, run.Status)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// watcher reads a subscription's events as they come.
type watcher struct {
	sub  *stream.Subscription
	seen []stream.Event
}

func (r *rig) watch(id int64) *watcher { return &watcher{sub: r.events.Subscribe(topic(id), 0)} }

// until reads events until one named name (or the end: ""), and returns
// it.
func (w *watcher) until(t *testing.T, name string) stream.Event {
	t.Helper()
	timeout := time.After(bound)
	for {
		select {
		case ev, ok := <-w.sub.Events():
			if !ok {
				if name == "" {
					return stream.Event{}
				}
				t.Fatalf("the stream ended before %q: %v", name, w.names())
			}
			w.seen = append(w.seen, ev)
			if ev.Name == name {
				return ev
			}
		case <-timeout:
			t.Fatalf("no %q event within %s: %v", name, bound, w.names())
		}
	}
}

func (w *watcher) names() string {
	var out []string
	for _, ev := range w.seen {
		out = append(out, ev.Name)
	}
	return strings.Join(out, ",")
}

// last is the final event of a stream that ended.
func (w *watcher) last(t *testing.T) stream.Event {
	t.Helper()
	w.until(t, "")
	if len(w.seen) == 0 {
		t.Fatal("no events")
	}
	return w.seen[len(w.seen)-1]
}

func detail(ev stream.Event) string {
	f, _ := ev.Data.(generation.Failure)
	return f.Detail
}

// A streamed run: its requester gets every event, from the run to `done`,
// and the run is recorded with its usage.
func TestStreamed(t *testing.T) {
	r := newRig(t)
	r.start(t)
	run := r.run(t, "complete", true)
	w := r.watch(run.ID)
	defer w.sub.Close()
	ev := w.last(t)
	if w.names() != "run,delta,delta,delta,done" || ev.Data.(*store.AgentRun).Output != "Hello streamed world." {
		t.Fatalf("events %s, last %+v", w.names(), ev)
	}
	got := r.finished(t, run.ID)
	if got.Status != store.RunSucceeded || got.Model != "gpt-4o-mini" || got.InputTokens != 1000 || got.OutputTokens != 500 || got.Cost == nil {
		t.Fatalf("run: %+v", got)
	}
	r.notifiedTimes(t, 1)
}

// A requester that never subscribes holds a streamed run up for the wait
// at most; then it runs and is recorded for whoever reads it later.
func TestRequesterNeverSubscribes(t *testing.T) {
	r := newRig(t)
	r.start(t)
	began := time.Now()
	run := r.run(t, "complete", true)
	got := r.finished(t, run.ID)
	if got.Status != store.RunSucceeded || got.Output != "Hello streamed world." || got.OutputTokens != 500 {
		t.Fatalf("run: %+v", got)
	}
	if waited := time.Since(began); waited < r.kind.Wait {
		t.Fatalf("it ran after %s, before the requester's wait of %s", waited, r.kind.Wait)
	}
	// A queued run waits for nobody.
	queued := r.finished(t, r.run(t, "complete", false).ID)
	if queued.Status != store.RunSucceeded || queued.InputTokens != 1000 {
		t.Fatalf("queued run: %+v", queued)
	}
}

// A cancel records its ending at once and stops the call; the call's
// usage is recorded with the ending the cancel kept, streamed or queued,
// and the watcher's last event says who cancelled.
func TestCancel(t *testing.T) {
	r := newRig(t)
	r.start(t)
	ctx := context.Background()
	t.Run("Streamed", func(t *testing.T) {
		run := r.run(t, "hang", true)
		w := r.watch(run.ID)
		defer w.sub.Close()
		w.until(t, generation.EventDelta)
		cancelled, err := r.kind.Cancel(ctx, run.ID, run.JobID, store.Outcome{Status: store.RunCancelled, Error: "cancelled by ann"})
		if err != nil || cancelled.Status != store.RunCancelled {
			t.Fatalf("cancel: %+v, %v", cancelled, err)
		}
		if ev := w.last(t); ev.Name != generation.EventError || detail(ev) != "the run was cancelled: cancelled by ann" {
			t.Fatalf("last event %s %+v (%s)", ev.Name, ev.Data, w.names())
		}
		got := r.usage(t, run.ID)
		if got.Status != store.RunCancelled || got.Error != "cancelled by ann" || got.OutputTokens == 0 {
			t.Fatalf("run: %+v", got)
		}
	})
	t.Run("Queued", func(t *testing.T) {
		run := r.run(t, "hang", false)
		r.running(t, run.ID)
		if _, err := r.kind.Cancel(ctx, run.ID, run.JobID, store.Outcome{Status: store.RunCancelled, Error: "cancelled by ann"}); err != nil {
			t.Fatal(err)
		}
		got := r.usage(t, run.ID)
		if got.Status != store.RunCancelled || got.Error != "cancelled by ann" {
			t.Fatalf("run: %+v", got)
		}
	})
	// Each job's end tells the kind once (it decides whom to notify).
	r.notifiedTimes(t, 2)
}

// notifiedTimes waits for the kind's Notify to have been called n times
// (by the jobs' OnFinish, after their handlers return).
func (r *rig) notifiedTimes(t *testing.T, n int32) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for r.notified.Load() < n && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // and not more
	if got := r.notified.Load(); got != n {
		t.Fatalf("notified %d times, want %d", got, n)
	}
}

// usage waits for a cancelled run's call to stop and record its usage.
func (r *rig) usage(t *testing.T, id int64) *store.AgentRun {
	t.Helper()
	deadline := time.Now().Add(bound)
	for {
		run := r.finished(t, id)
		if run.Model != "" {
			return run
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %d: no usage recorded: %+v", id, run)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// running waits for a run's call to have started.
func (r *rig) running(t *testing.T, id int64) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for {
		run, err := r.db.RunByID(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if run.Status == store.RunRunning {
			time.Sleep(50 * time.Millisecond) // the call reaches the provider
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %d still %s", id, run.Status)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A job cancelled before it began (by the runner, without a recorded
// ending) closes its run with the kind's word, and a requester waiting on
// its topic gets the end.
func TestCancelledBeforeItBegins(t *testing.T) {
	r := newRig(t) // the runner is not started: the job stays queued
	run := r.run(t, "complete", true)
	w := r.watch(run.ID)
	defer w.sub.Close()
	if _, err := r.runner.Cancel(context.Background(), *run.JobID); err != nil {
		t.Fatal(err)
	}
	if ev := w.last(t); ev.Name != generation.EventError || detail(ev) != "the run was cancelled: cancelled" {
		t.Fatalf("last event %s %+v", ev.Name, ev.Data)
	}
	if got := r.finished(t, run.ID); got.Status != store.RunCancelled || got.Error != generation.Cancelled || got.StartedAt != nil {
		t.Fatalf("run: %+v", got)
	}
}

// A provider stream that ends mid-way fails the run with the text it got
// and the usage estimated for it; the watcher is told why.
func TestStreamCutOff(t *testing.T) {
	r := newRig(t)
	r.start(t)
	run := r.run(t, "cut", true)
	w := r.watch(run.ID)
	defer w.sub.Close()
	ev := w.last(t)
	got := r.finished(t, run.ID)
	if got.Status != store.RunFailed || got.Output != "Hello wor" || got.Error == "" || got.Model != "gpt-4o-mini" || got.OutputTokens == 0 {
		t.Fatalf("run: %+v", got)
	}
	if ev.Name != generation.EventError || detail(ev) != got.Error || w.names() != "run,delta,delta,error" {
		t.Fatalf("events %s, last %+v", w.names(), ev.Data)
	}
}

// A restore interrupts a running generation: nothing is written over the
// restored database, and the watcher is told the run was interrupted.
func TestRestore(t *testing.T) {
	if storetest.Postgres() {
		t.Skip("restores while serving are SQLite's: PostgreSQL restores offline (RestoreSnapshot, docs/scaling.md)")
	}
	r := newRig(t)
	r.start(t)
	ctx := context.Background()
	hold, release := r.db.Hold(ctx)
	src := filepath.Join(t.TempDir(), "snapshot.db")
	err := r.db.SnapshotTo(hold, src) // no runs in it
	release()
	if err != nil {
		t.Fatal(err)
	}
	run := r.run(t, "hang", true)
	w := r.watch(run.ID)
	defer w.sub.Close()
	w.until(t, generation.EventDelta)
	done := make(chan error, 1)
	go func() { done <- r.db.Replace(ctx, src, filepath.Join(t.TempDir(), "safety.db")) }()
	if ev := w.last(t); ev.Name != generation.EventError || detail(ev) != "the run was interrupted by a database restore" {
		t.Fatalf("last event %s %+v (%s)", ev.Name, ev.Data, w.names())
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the restore waited for the generation")
	}
	if _, err := r.db.RunByID(ctx, run.ID); !store.IsNotFound(err) {
		t.Fatalf("the run after the restore: %v (the restored database has none)", err)
	}
}

// A run whose row goes while its call is under way (its agent deleted,
// which takes its runs along): the call ends, nothing is written for a
// row that is gone, the watcher is told, the job ends as done (it is not
// tried again), nobody is notified, and nothing is left queued or
// running.
func TestRowDeletedMidRun(t *testing.T) {
	r := newRig(t)
	r.start(t)
	ctx := context.Background()
	streamed := r.run(t, "gate", true)
	w := r.watch(streamed.ID)
	defer w.sub.Close()
	w.until(t, generation.EventDelta)
	queued := r.run(t, "gate", false)
	r.running(t, queued.ID)
	if err := r.db.DeleteAgent(ctx, r.agentID); err != nil {
		t.Fatal(err)
	}
	close(r.remote.gate)
	if ev := w.last(t); ev.Name != generation.EventError || detail(ev) != "the run was deleted" {
		t.Fatalf("last event %s %+v (%s)", ev.Name, ev.Data, w.names())
	}
	for _, run := range []*store.AgentRun{streamed, queued} {
		deadline := time.Now().Add(bound)
		for {
			job, err := r.db.JobByID(ctx, *run.JobID)
			if err != nil {
				t.Fatal(err)
			}
			if job.Status == store.JobSucceeded {
				break
			}
			if job.Status != store.JobRunning || time.Now().After(deadline) {
				t.Fatalf("the job of deleted run %d: %+v", run.ID, job)
			}
			time.Sleep(10 * time.Millisecond)
		}
		if _, err := r.db.RunByID(ctx, run.ID); !store.IsNotFound(err) {
			t.Fatalf("run %d: %v", run.ID, err)
		}
	}
	for _, st := range []store.JobStatus{store.JobQueued, store.JobRunning} {
		if _, n, err := r.db.ListJobs(ctx, store.JobFilter{Status: st}); err != nil || n != 0 {
			t.Fatalf("%s jobs left: %d %v", st, n, err)
		}
	}
	r.notifiedTimes(t, 0)
}
