package searchphrase

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/copydesk/copydesk/server/engine"
	"github.com/copydesk/copydesk/server/jobs"
	"github.com/copydesk/copydesk/server/notify"
	"github.com/copydesk/copydesk/server/serp"
	"github.com/copydesk/copydesk/store"
	"github.com/copydesk/copydesk/store/storetest"
)

// fakeRunner keeps the kinds registered and counts replans.
type fakeRunner struct {
	mu      sync.Mutex
	kinds   map[string]jobs.Kind
	replans int
}

func (r *fakeRunner) Register(kind string, k jobs.Kind) { r.kinds[kind] = k }
func (r *fakeRunner) Signal()                           {}
func (r *fakeRunner) Replan(context.Context, string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.replans++
	return nil
}

// fakeNotifier records each note as "user|kind|title|body|link".
type fakeNotifier struct{ notes []string }

func (n *fakeNotifier) User(_ context.Context, userID int64, note notify.Note) {
	n.notes = append(n.notes, fmt.Sprintf("%d|%s|%s|%s|%s", userID, note.Kind, note.Title, note.Body, note.Link))
}

// openService is a service over a fresh database with one environment,
// on the database's clock, with eng as its engine.
func openService(t *testing.T, eng engine.Searcher) (*store.DB, *storetest.Clock, *store.Environment, *fakeRunner, *Service) {
	t.Helper()
	db, clock := storetest.OpenDB(t)
	env, err := db.CreateEnvironment(context.Background(), store.NewEnvironment{Name: "A", Slug: "a"})
	if err != nil {
		t.Fatal(err)
	}
	r := &fakeRunner{kinds: map[string]jobs.Kind{}}
	return db, clock, env, r, New(Deps{Store: db, Engine: eng, Jobs: r, Notify: &fakeNotifier{}, Now: clock.Now})
}

// The scheduler's plan is the earliest due phrase until the runs in flight
// fill the batch; a run's end makes room. Each run it queues is a RunJob
// marked scheduled.
func TestSchedulePlan(t *testing.T) {
	t.Parallel()
	db, clock, env, r, s := openService(t, nil)
	ctx := context.Background()
	if r.kinds[ScheduleJob].Next == nil || r.kinds[RunJob].Next != nil {
		t.Fatalf("kinds: %v", r.kinds)
	}
	plan := func() (time.Time, bool) {
		t.Helper()
		at, ok, err := r.kinds[ScheduleJob].Next(ctx, clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		return at, ok
	}
	if _, ok := plan(); ok {
		t.Error("planned with nothing watched")
	}
	first := clock.Now()
	var ids []int64
	for i := range batch + 2 {
		p, err := db.CreateSearchPhrase(ctx, store.NewSearchPhrase{EnvironmentID: env.ID, Phrase: fmt.Sprint("phrase ", i),
			PhraseKey: fmt.Sprint("phrase ", i), Locale: "en", IsActive: true, RefreshInterval: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, p.ID)
		clock.Advance(time.Second)
	}
	if at, ok := plan(); !ok || !at.Equal(first) {
		t.Errorf("plan %v %v, want the first phrase's %v", at, ok, first)
	}
	if err := r.kinds[ScheduleJob].Handle(ctx, nil); err != nil {
		t.Fatal(err)
	}
	var queued []int64
	var jobIDs []int64
	for _, id := range ids {
		p, _ := db.SearchPhraseByID(ctx, id)
		if p.RunStatus == store.PhraseQueued {
			queued = append(queued, id)
			jobIDs = append(jobIDs, *p.RunJobID)
		}
	}
	if !slices.Equal(queued, ids[:batch]) {
		t.Fatalf("queued %v, want the %d longest due %v", queued, batch, ids[:batch])
	}
	job, err := db.JobByID(ctx, jobIDs[0])
	var pl payload
	if err != nil || job.Kind != RunJob || json.Unmarshal(job.Payload, &pl) != nil || !pl.Scheduled || pl.PhraseID != ids[0] || pl.UserID != nil {
		t.Errorf("the job of a scheduled run: %+v %+v %v", job, pl, err)
	}
	if _, ok := plan(); ok {
		t.Error("planned with the batch full")
	}
	// One run ends (its end replans): the next due phrase's turn.
	if _, _, err := db.FinishSearchPhraseRun(ctx, ids[0], jobIDs[0], store.PhraseRunOutcome{Status: store.PhraseSucceeded}); err != nil {
		t.Fatal(err)
	}
	before := r.replans
	s.jobFinished(ctx, job)
	if r.replans != before+1 {
		t.Errorf("a run's end did not replan")
	}
	if at, ok := plan(); !ok || !at.Equal(first.Add(batch*time.Second)) {
		t.Errorf("plan %v %v after a run ended, want phrase %d's", at, ok, batch)
	}
	if err := r.kinds[ScheduleJob].Handle(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if p, _ := db.SearchPhraseByID(ctx, ids[batch]); p.RunStatus != store.PhraseQueued {
		t.Errorf("phrase %d: %s", batch, p.RunStatus)
	}
	if p, _ := db.SearchPhraseByID(ctx, ids[batch+1]); p.RunStatus != store.PhraseIdle {
		t.Errorf("phrase %d queued past the batch: %s", batch+1, p.RunStatus)
	}
}

// Only a scheduled run's news is told, to the phrase's creator: new ideas,
// or a failure after a run that did not fail (once per streak); the
// error is a preview.
func TestTell(t *testing.T) {
	t.Parallel()
	n := &fakeNotifier{}
	s := &Service{notify: n}
	by := int64(7)
	phrase := func(status, lastErr string) *store.SearchPhrase {
		return &store.SearchPhrase{ID: 3, EnvironmentID: 1, Phrase: "cold brew", RunStatus: status, LastRunError: lastErr, CreatedBy: &by}
	}
	ctx := context.Background()
	long := "ai: " + strings.Repeat("model\nnot found ", 30)
	const idle, ok, failed, cancelled = store.PhraseIdle, store.PhraseSucceeded, store.PhraseFailed, store.PhraseCancelled
	s.tell(ctx, phrase(ok, ""), 0, idle)                        // nothing new
	s.tell(ctx, phrase(cancelled, "cancelled"), 0, ok)          // cancelled
	s.tell(ctx, nil, 0, idle)                                   // ended by another job
	s.tell(ctx, &store.SearchPhrase{RunStatus: failed}, 0, ok)  // its creator is gone
	s.tell(ctx, phrase(failed, "ai: still down"), 0, failed)    // the same streak
	s.tell(ctx, phrase(ok, "serp search: down"), 3, failed)     // news
	s.tell(ctx, phrase(ok, ""), 1, ok)                          // news
	s.tell(ctx, phrase(failed, "ai: model not found"), 0, idle) // news
	s.tell(ctx, phrase(failed, long), 0, cancelled)             // news
	want := []string{
		`7|run.succeeded|Scheduled search for "cold brew" found 3 new ideas|serp search: down|/api/search-phrases/3/ideas`,
		`7|run.succeeded|Scheduled search for "cold brew" found 1 new idea||/api/search-phrases/3/ideas`,
		`7|run.failed|Scheduled search for "cold brew" failed|ai: model not found|/api/search-phrases/3`,
		`7|run.failed|Scheduled search for "cold brew" failed|` + notify.Preview(long, 200) + `|/api/search-phrases/3`,
	}
	if p := notify.Preview(long, 200); len(p) > 210 || strings.Contains(p, "\n") {
		t.Errorf("preview %q", p)
	}
	if !slices.Equal(n.notes, want) {
		t.Errorf("notes:\n got %q\nwant %q", n.notes, want)
	}
}

// Without a notifier nobody is told, and without a clock the service
// reads the time.
func TestNilDeps(t *testing.T) {
	t.Parallel()
	s := New(Deps{Jobs: &fakeRunner{kinds: map[string]jobs.Kind{}}})
	by := int64(7)
	s.tell(context.Background(), &store.SearchPhrase{ID: 3, RunStatus: store.PhraseFailed, LastRunError: "x", CreatedBy: &by}, 0, store.PhraseIdle)
	if s.now == nil || s.now().IsZero() {
		t.Error("no clock")
	}
}

// modelOnly is an engine with no SerpApi credential and a model that
// answers text.
type modelOnly struct{ text string }

func (modelOnly) Effective(context.Context, *int64) (engine.Effective, error) {
	return engine.Effective{}, nil
}
func (modelOnly) Plan(context.Context, engine.Call) (string, string, error) {
	return "openai", "gpt-4o-mini", nil
}
func (m modelOnly) Generate(context.Context, engine.Call) (*engine.Result, error) {
	return &engine.Result{Text: m.text}, nil
}
func (modelOnly) SERP(context.Context, *int64) (*serp.Client, error) { return nil, nil }

// A run that ends itself plans the scheduler before its handler returns,
// that is before the runner records the job's end: whoever sees the job
// ended sees the phrase's next run planned (the job's end hook, which
// runs after, used to be the first to plan it).
func TestRunEndPlansBeforeTheJobEnds(t *testing.T) {
	t.Parallel()
	db, clock, env, r, s := openService(t, modelOnly{text: "cold brew ratio\ncold brew at home"})
	ctx := context.Background()
	p, err := db.CreateSearchPhrase(ctx, store.NewSearchPhrase{EnvironmentID: env.ID, Phrase: "Cold brew", PhraseKey: "cold brew",
		Locale: "en", IsActive: true, RefreshInterval: MinInterval})
	if err != nil {
		t.Fatal(err)
	}
	if p, err = s.Run(ctx, store.Everything, p.ID); err != nil {
		t.Fatal(err)
	}
	job, err := db.JobByID(ctx, *p.RunJobID)
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute)
	before := r.replans
	if err := r.kinds[RunJob].Handle(ctx, job); err != nil {
		t.Fatal(err)
	}
	if r.replans != before+1 {
		t.Errorf("the run's end replanned %d times, want once", r.replans-before)
	}
	after, err := db.SearchPhraseByID(ctx, p.ID)
	if err != nil || after.RunStatus != store.PhraseSucceeded || after.LastRunIdeas != 2 {
		t.Fatalf("after the run: %+v %v", after, err)
	}
	at, ok, err := r.kinds[ScheduleJob].Next(ctx, clock.Now())
	if want := clock.Now().Add(MinInterval); err != nil || !ok || !at.Equal(want) || after.NextRunAt == nil || !after.NextRunAt.Equal(want) {
		t.Errorf("the plan at the run's end: %v %v %v, next_run_at %v, want %v", at, ok, err, after.NextRunAt, want)
	}
}
