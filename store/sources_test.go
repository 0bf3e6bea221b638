package store_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/copydesk/copydesk/store"
	"github.com/copydesk/copydesk/store/storetest"
)

func newSourcesEnv(t *testing.T, db *store.DB, slug string) int64 {
	t.Helper()
	env, err := db.CreateEnvironment(context.Background(), store.NewEnvironment{Name: slug, Slug: slug})
	if err != nil {
		t.Fatal(err)
	}
	return env.ID
}

// A run's ideas are stored once per phrase by key, the first finder kept;
// the run's end is written only for the job the phrase waits for.
func TestSearchPhraseRuns(t *testing.T) {
	t.Parallel()
	db, clock := storetest.OpenDB(t)
	ctx := context.Background()
	envID := newSourcesEnv(t, db, "a")
	p, err := db.CreateSearchPhrase(ctx, store.NewSearchPhrase{EnvironmentID: envID, Phrase: "Cold brew", PhraseKey: "cold brew", Locale: "en", IsActive: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateSearchPhrase(ctx, store.NewSearchPhrase{EnvironmentID: envID, Phrase: "COLD BREW", PhraseKey: "cold brew", Locale: "en"}); store.KindOf(err) != store.KindConflict ||
		store.Message(err) != "phrase: this environment has this phrase in this locale already" {
		t.Errorf("the same phrase twice: %v", err)
	}
	if _, err := db.CreateSearchPhrase(ctx, store.NewSearchPhrase{EnvironmentID: envID, Phrase: "cold brew", PhraseKey: "cold brew", Locale: "de"}); err != nil {
		t.Errorf("the phrase in another locale: %v", err)
	}
	job := store.RunJob{Kind: "search.run", MaxAttempts: 1, Payload: func(id int64) any { return map[string]int64{"phrase_id": id} }}
	queued, err := db.QueueSearchPhraseRun(ctx, p.ID, job)
	if err != nil || queued.RunStatus != store.PhraseQueued || queued.RunJobID == nil {
		t.Fatalf("queue: %+v, %v", queued, err)
	}
	if _, err := db.QueueSearchPhraseRun(ctx, p.ID, job); store.KindOf(err) != store.KindConflict {
		t.Errorf("a second run while one is queued: %v", err)
	}
	jobID := *queued.RunJobID
	if ok, err := db.StartSearchPhraseRun(ctx, p.ID, jobID+1000); ok || err != nil {
		t.Errorf("another job started the run: %v %v", ok, err)
	}
	if ok, err := db.StartSearchPhraseRun(ctx, p.ID, jobID); !ok || err != nil {
		t.Fatalf("start: %v %v", ok, err)
	}
	clock.Advance(time.Minute)
	ideas := []store.NewSearchIdea{
		{Idea: "cold brew ratio", IdeaKey: "cold brew ratio", Source: "serp", Kind: "related"},
		{Idea: "Cold Brew Ratio", IdeaKey: "cold brew ratio", Source: "ai", Kind: "related"},
		{Idea: "is cold brew stronger?", IdeaKey: "is cold brew stronger?", Source: "ai", Kind: "question"},
	}
	ended, n, err := db.FinishSearchPhraseRun(ctx, p.ID, jobID, store.PhraseRunOutcome{Status: store.PhraseSucceeded, Ideas: ideas, Error: "serp autocomplete: down"})
	if err != nil || n != 2 || ended == nil || ended.RunStatus != store.PhraseSucceeded {
		t.Fatalf("finish: %d %+v %v", n, ended, err)
	}
	// Another job's end changes nothing.
	if ended, n, err := db.FinishSearchPhraseRun(ctx, p.ID, jobID, store.PhraseRunOutcome{Status: store.PhraseFailed, Error: "late"}); n != 0 || ended != nil || err != nil {
		t.Errorf("a finished run ended again: %d %+v %v", n, ended, err)
	}
	got, err := db.SearchPhraseByID(ctx, p.ID)
	if err != nil || got.RunStatus != store.PhraseSucceeded || got.LastRunIdeas != 2 || got.LastRunError != "serp autocomplete: down" ||
		got.LastRunAt == nil || !got.LastRunAt.Equal(clock.Now()) {
		t.Errorf("after the run: %+v, %v", got, err)
	}
	list, total, err := db.ListSearchIdeas(ctx, p.ID, store.SearchIdeaFilter{Sort: store.Sort{Field: "idea"}, Page: store.Page{Page: 1, PerPage: 10}})
	if err != nil || total != 2 || list[0].Idea != "cold brew ratio" || list[0].Source != "serp" || list[1].Kind != "question" {
		t.Errorf("ideas: %d %+v %v", total, list, err)
	}
	// A second run adds only what is new.
	queued, err = db.QueueSearchPhraseRun(ctx, p.ID, job)
	if err != nil {
		t.Fatal(err)
	}
	_, n, err = db.FinishSearchPhraseRun(ctx, p.ID, *queued.RunJobID, store.PhraseRunOutcome{Status: store.PhraseSucceeded,
		Ideas: append(ideas, store.NewSearchIdea{Idea: "cold brew maker", IdeaKey: "cold brew maker", Source: "serp", Kind: "autocomplete"})})
	if err != nil || n != 1 {
		t.Errorf("second run: %d new, %v", n, err)
	}
	recent, total, err := db.ListRecentSearchIdeas(ctx, envID, store.RecentFilter{Since: new(clock.Now()), Page: store.Page{Page: 1, PerPage: 10}})
	if err != nil || total != 3 || recent[0].Idea != "cold brew maker" {
		t.Errorf("recent ideas: %d %+v %v", total, recent, err)
	}
}

// A watched phrase (active, with an interval) is due at once when created,
// never while a run is queued or running, and an interval after each
// run's end; the scheduler queues due runs only up to its batch, runs
// asked for by hand included.
func TestSearchPhraseSchedule(t *testing.T) {
	t.Parallel()
	db, clock := storetest.OpenDB(t)
	ctx := context.Background()
	envID := newSourcesEnv(t, db, "a")
	create := func(phrase string, active bool, interval time.Duration) *store.SearchPhrase {
		t.Helper()
		p, err := db.CreateSearchPhrase(ctx, store.NewSearchPhrase{EnvironmentID: envID, Phrase: phrase, PhraseKey: phrase, Locale: "en",
			IsActive: active, RefreshInterval: interval})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	next := func() (*time.Time, int) {
		t.Helper()
		at, inFlight, err := db.NextSearchPhraseRun(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return at, inFlight
	}
	if at, n := next(); at != nil || n != 0 {
		t.Errorf("nothing watched: %v, %d in flight", at, n)
	}
	week := 7 * 24 * time.Hour
	watched := create("cold brew", true, week)
	if watched.NextRunAt == nil || !watched.NextRunAt.Equal(clock.Now()) || watched.RefreshInterval != week {
		t.Errorf("a watched phrase is not due at once: %+v", watched)
	}
	for _, p := range []*store.SearchPhrase{create("on demand", true, 0), create("inactive", false, week)} {
		if p.NextRunAt != nil {
			t.Errorf("%q is due: %v", p.Phrase, p.NextRunAt)
		}
	}
	clock.Advance(time.Minute)
	later := create("iced latte", true, time.Hour)
	if at, _ := next(); at == nil || !at.Equal(*watched.NextRunAt) {
		t.Errorf("next: %v, want the earliest %v", at, watched.NextRunAt)
	}

	job := store.RunJob{Kind: "search.run", MaxAttempts: 1, Payload: func(id int64) any { return map[string]int64{"phrase_id": id} }}
	due := store.PhraseRunJob{Kind: job.Kind, MaxAttempts: 1, Payload: func(id int64, _ string) any { return job.Payload(id) }}
	// A run asked for by hand takes a place and is not due meanwhile.
	byHand, err := db.QueueSearchPhraseRun(ctx, watched.ID, job)
	if err != nil || byHand.NextRunAt != nil {
		t.Fatalf("run by hand: %+v %v", byHand, err)
	}
	if at, n := next(); at == nil || !at.Equal(*later.NextRunAt) || n != 1 {
		t.Errorf("next with a run in flight: %v, %d in flight", at, n)
	}
	// The batch is full with the run by hand: nothing is queued.
	if ids, err := db.QueueDueSearchPhraseRuns(ctx, clock.Now(), 1, due); err != nil || len(ids) != 0 {
		t.Errorf("queued past the batch: %v %v", ids, err)
	}
	ids, err := db.QueueDueSearchPhraseRuns(ctx, clock.Now(), 5, due)
	if err != nil || len(ids) != 1 || ids[0] != later.ID {
		t.Fatalf("due: %v %v", ids, err)
	}
	if ids, err := db.QueueDueSearchPhraseRuns(ctx, clock.Now(), 5, due); err != nil || len(ids) != 0 {
		t.Errorf("queued twice: %v %v", ids, err)
	}
	if at, n := next(); at != nil || n != 2 {
		t.Errorf("next with both in flight: %v, %d in flight", at, n)
	}

	// The end of a run, failed or not, makes it due an interval later.
	clock.Advance(time.Minute)
	ended, _, err := db.FinishSearchPhraseRun(ctx, watched.ID, *byHand.RunJobID, store.PhraseRunOutcome{Status: store.PhraseFailed, Error: "ai: down"})
	if err != nil || ended.NextRunAt == nil || !ended.NextRunAt.Equal(clock.Now().Add(week)) {
		t.Fatalf("after a run: %+v %v", ended, err)
	}
	// Changed while its run waits: still not due until the run ends.
	hour := time.Hour
	queued, _ := db.SearchPhraseByID(ctx, later.ID)
	if p, err := db.UpdateSearchPhrase(ctx, later.ID, store.SearchPhraseUpdate{RefreshInterval: &hour}); err != nil || p.NextRunAt != nil {
		t.Errorf("changed while queued: %+v %v", p, err)
	}
	off := false
	if p, err := db.UpdateSearchPhrase(ctx, later.ID, store.SearchPhraseUpdate{IsActive: &off}); err != nil || p.NextRunAt != nil {
		t.Errorf("deactivated while queued: %+v %v", p, err)
	}
	if ended, _, err := db.FinishSearchPhraseRun(ctx, later.ID, *queued.RunJobID, store.PhraseRunOutcome{Status: store.PhraseSucceeded}); err != nil ||
		ended.NextRunAt != nil {
		t.Errorf("an inactive phrase's run ended: %+v %v", ended, err)
	}
	// A new interval counts from the last run; none stops the schedule.
	day := 24 * time.Hour
	p, err := db.UpdateSearchPhrase(ctx, watched.ID, store.SearchPhraseUpdate{RefreshInterval: &day})
	if err != nil || !p.NextRunAt.Equal(p.LastRunAt.Add(day)) {
		t.Errorf("new interval: %+v %v", p, err)
	}
	var zero time.Duration
	if p, err := db.UpdateSearchPhrase(ctx, watched.ID, store.SearchPhraseUpdate{RefreshInterval: &zero}); err != nil || p.NextRunAt != nil {
		t.Errorf("no interval: %+v %v", p, err)
	}
	if at, n := next(); at != nil || n != 0 {
		t.Errorf("nothing due: %v, %d in flight", at, n)
	}
}

// A fetch stores each item once, keeps the validators of the last answer
// with content, and makes the source due an interval later; a source
// whose URL changed during the fetch keeps nothing of it.
func TestWebSourceFetches(t *testing.T) {
	t.Parallel()
	db, clock := storetest.OpenDB(t)
	ctx := context.Background()
	envID := newSourcesEnv(t, db, "a")
	src, err := db.CreateWebSource(ctx, store.NewWebSource{EnvironmentID: envID, URL: "https://a.example/feed", Kind: "rss", IsActive: true, FetchInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if src.NextFetchAt == nil || !src.NextFetchAt.Equal(clock.Now()) {
		t.Errorf("a new source is not due at once: %v", src.NextFetchAt)
	}
	if _, err := db.CreateWebSource(ctx, store.NewWebSource{EnvironmentID: envID, URL: "https://a.example/feed", Kind: "atom", FetchInterval: time.Hour}); store.KindOf(err) != store.KindConflict {
		t.Errorf("the same address twice: %v", err)
	}
	// record is RecordWebSourceFetch as the test reads it.
	record := func(id int64, f store.WebFetch) (int, *store.WebSource, error) {
		rec, err := db.RecordWebSourceFetch(ctx, id, f)
		if err != nil {
			return 0, nil, err
		}
		return rec.NewItems, rec.Source, nil
	}
	ok := 200
	published := clock.Now().Add(-time.Hour)
	items := []store.NewWebItem{{Key: "g1", GUID: "g1", Title: "One", PublishedAt: &published}, {Key: "https://a.example/2", Link: "https://a.example/2", Title: "Two"}}
	n, after, err := record(src.ID, store.WebFetch{URL: src.URL, Status: &ok, ETag: `"v1"`, LastModified: "Mon, 16 Nov 2026 09:30:00 GMT", Items: items})
	if err != nil || n != 2 || after.ETag != `"v1"` || *after.LastStatus != 200 || !after.NextFetchAt.Equal(clock.Now().Add(time.Hour)) {
		t.Fatalf("first fetch: %d %+v %v", n, after, err)
	}
	clock.Advance(time.Hour)
	notModified := 304
	n, after, err = record(src.ID, store.WebFetch{URL: src.URL, Status: &notModified, NotModified: true})
	if err != nil || n != 0 || after.ETag != `"v1"` || after.LastModified == "" || after.LastError != "" {
		t.Errorf("304: %d %+v %v", n, after, err)
	}
	failed := 500
	n, after, err = record(src.ID, store.WebFetch{URL: src.URL, Status: &failed, Error: "HTTP 500: Internal Server Error"})
	if err != nil || n != 0 || after.ETag != `"v1"` || after.LastError != "HTTP 500: Internal Server Error" || !after.NextFetchAt.Equal(clock.Now().Add(time.Hour)) {
		t.Errorf("failure: %d %+v %v", n, after, err)
	}
	// The same items again, and one new.
	n, _, err = record(src.ID, store.WebFetch{URL: src.URL, Status: &ok, Items: append(items, store.NewWebItem{Key: "g3", GUID: "g3"})})
	if err != nil || n != 1 {
		t.Errorf("again: %d new, %v", n, err)
	}
	// An item without a date comes last, newest first by default.
	list, total, err := db.ListWebItems(ctx, src.ID, store.WebItemFilter{Page: store.Page{Page: 1, PerPage: 10}})
	if err != nil || total != 3 || list[0].GUID != "g1" || list[2].PublishedAt != nil {
		t.Errorf("items: %d %+v %v", total, list, err)
	}
	// A new URL drops the validators and is due at once.
	url := "https://a.example/other"
	moved, err := db.UpdateWebSource(ctx, src.ID, store.WebSourceUpdate{URL: &url})
	if err != nil || moved.ETag != "" || moved.LastModified != "" || !moved.NextFetchAt.Equal(clock.Now()) {
		t.Errorf("moved: %+v %v", moved, err)
	}
	n, after, err = record(src.ID, store.WebFetch{URL: "https://a.example/feed", Status: &ok, ETag: `"old"`, Items: []store.NewWebItem{{Key: "g4"}}})
	if err != nil || n != 0 || after.ETag != "" {
		t.Errorf("a fetch of the old address was kept: %d %+v %v", n, after, err)
	}
	// Inactive: never due; active again: an interval after the last fetch.
	off, on := false, true
	if s, err := db.UpdateWebSource(ctx, src.ID, store.WebSourceUpdate{IsActive: &off}); err != nil || s.NextFetchAt != nil {
		t.Errorf("inactive: %+v %v", s, err)
	}
	if next, err := db.NextWebSourceFetch(ctx); err != nil || next != nil {
		t.Errorf("next with none active: %v %v", next, err)
	}
	s, err := db.UpdateWebSource(ctx, src.ID, store.WebSourceUpdate{IsActive: &on})
	if err != nil || !s.NextFetchAt.Equal(s.LastFetchedAt.Add(time.Hour)) {
		t.Errorf("active again: %+v %v", s, err)
	}
	due, err := db.DueWebSources(ctx, clock.Now().Add(2*time.Hour), 10)
	if err != nil || len(due) != 1 || due[0].ID != src.ID {
		t.Errorf("due: %+v %v", due, err)
	}
	if due, err := db.DueWebSources(ctx, clock.Now(), 10); err != nil || len(due) != 0 {
		t.Errorf("due before its time: %+v %v", due, err)
	}
}

// A failure adds one to consecutive_failures and a success (a 304 too)
// resets it, in the transaction that records the fetch, which plans the
// next one with the service's Delay; a new URL forgets the failures, and
// the list filters by them.
func TestWebSourceFailures(t *testing.T) {
	t.Parallel()
	db, clock := storetest.OpenDB(t)
	ctx := context.Background()
	envID := newSourcesEnv(t, db, "a")
	var src, healthy *store.WebSource
	for _, s := range []struct {
		to  **store.WebSource
		url string
	}{{&src, "https://a.example/feed"}, {&healthy, "https://b.example/feed"}} {
		var err error
		*s.to, err = db.CreateWebSource(ctx, store.NewWebSource{EnvironmentID: envID, URL: s.url, Kind: "rss", IsActive: true, FetchInterval: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
	}
	// A Delay that says what it was given: failures × a minute.
	var gotInterval time.Duration
	delay := func(interval time.Duration, failures int) time.Duration {
		gotInterval = interval
		return time.Duration(failures+1) * time.Minute
	}
	failed, ok, notModified := 500, 200, 304
	fail := store.WebFetch{URL: src.URL, Status: &failed, Error: "HTTP 500: Internal Server Error", Delay: delay}
	for n := 1; n <= 3; n++ {
		rec, err := db.RecordWebSourceFetch(ctx, src.ID, fail)
		if err != nil || !rec.Recorded || rec.FailuresBefore != n-1 || rec.FailuresAfter != n || rec.Source.ConsecutiveFailures != n ||
			!rec.Source.NextFetchAt.Equal(clock.Now().Add(time.Duration(n+1)*time.Minute)) || gotInterval != time.Hour {
			t.Fatalf("failure %d: %+v %+v %v (interval %s)", n, rec, rec.Source, err, gotInterval)
		}
	}
	failing := func(want bool) []int64 {
		t.Helper()
		list, total, err := db.ListWebSources(ctx, store.WebSourceFilter{Scope: store.Everything, Failing: &want, Page: store.Page{Page: 1, PerPage: 10}})
		if err != nil || total != len(list) {
			t.Fatalf("list failing=%v: %d %v", want, total, err)
		}
		var ids []int64
		for _, s := range list {
			ids = append(ids, s.ID)
		}
		return ids
	}
	if got := failing(true); len(got) != 1 || got[0] != src.ID {
		t.Errorf("failing: %v", got)
	}
	if got := failing(false); len(got) != 1 || got[0] != healthy.ID {
		t.Errorf("not failing: %v", got)
	}
	// Changing the interval plans again from the last fetch, backed off.
	interval := 2 * time.Hour
	s, err := db.UpdateWebSource(ctx, src.ID, store.WebSourceUpdate{FetchInterval: &interval, Delay: delay})
	if err != nil || s.ConsecutiveFailures != 3 || !s.NextFetchAt.Equal(s.LastFetchedAt.Add(4*time.Minute)) || gotInterval != 2*time.Hour {
		t.Errorf("new interval: %+v %v", s, err)
	}
	// A 304 is a success: the count resets.
	clock.Advance(time.Minute)
	rec, err := db.RecordWebSourceFetch(ctx, src.ID, store.WebFetch{URL: src.URL, Status: &notModified, NotModified: true, Delay: delay})
	if err != nil || rec.FailuresBefore != 3 || rec.FailuresAfter != 0 || rec.Source.ConsecutiveFailures != 0 || !rec.Source.NextFetchAt.Equal(clock.Now().Add(time.Minute)) {
		t.Errorf("304: %+v %+v %v", rec, rec.Source, err)
	}
	if _, err := db.RecordWebSourceFetch(ctx, src.ID, fail); err != nil {
		t.Fatal(err)
	}
	rec, err = db.RecordWebSourceFetch(ctx, src.ID, store.WebFetch{URL: src.URL, Status: &ok})
	if err != nil || rec.FailuresBefore != 1 || rec.FailuresAfter != 0 || rec.Source.ConsecutiveFailures != 0 || !rec.Source.NextFetchAt.Equal(clock.Now().Add(interval)) {
		t.Errorf("200 without a Delay: %+v %+v %v", rec, rec.Source, err)
	}
	// A new URL forgets the failures; a fetch of the old one is not kept.
	if _, err := db.RecordWebSourceFetch(ctx, src.ID, fail); err != nil {
		t.Fatal(err)
	}
	url := "https://a.example/other"
	if s, err := db.UpdateWebSource(ctx, src.ID, store.WebSourceUpdate{URL: &url, Delay: delay}); err != nil || s.ConsecutiveFailures != 0 {
		t.Errorf("moved: %+v %v", s, err)
	}
	rec, err = db.RecordWebSourceFetch(ctx, src.ID, fail)
	if err != nil || rec.Recorded || rec.Source.ConsecutiveFailures != 0 {
		t.Errorf("a failure of the old address: %+v %+v %v", rec, rec.Source, err)
	}
}

// A scheduled run's job carries the status the phrase's previous run
// ended with, which queueing overwrites: its end tells a new failure
// from one more of a streak by it.
func TestQueueDueSearchPhraseRunsPrevious(t *testing.T) {
	t.Parallel()
	db, clock := storetest.OpenDB(t)
	ctx := context.Background()
	envID := newSourcesEnv(t, db, "a")
	p, err := db.CreateSearchPhrase(ctx, store.NewSearchPhrase{EnvironmentID: envID, Phrase: "cold brew", PhraseKey: "cold brew", Locale: "en",
		IsActive: true, RefreshInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	due := store.PhraseRunJob{Kind: "search.run", MaxAttempts: 1, Payload: func(id int64, previous string) any {
		return map[string]any{"phrase_id": id, "previous": previous}
	}}
	for _, c := range []struct{ previous, ends string }{
		{store.PhraseIdle, store.PhraseFailed},
		{store.PhraseFailed, store.PhraseFailed},
		{store.PhraseFailed, store.PhraseSucceeded},
		{store.PhraseSucceeded, store.PhraseCancelled},
		{store.PhraseCancelled, store.PhraseSucceeded},
	} {
		if ids, err := db.QueueDueSearchPhraseRuns(ctx, clock.Now(), 5, due); err != nil || len(ids) != 1 {
			t.Fatalf("queue after %s: %v %v", c.previous, ids, err)
		}
		q, err := db.SearchPhraseByID(ctx, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		job, err := db.JobByID(ctx, *q.RunJobID)
		var pl struct{ Previous string }
		if err != nil || json.Unmarshal(job.Payload, &pl) != nil || pl.Previous != c.previous {
			t.Errorf("payload %s, want previous %q (%v)", job.Payload, c.previous, err)
		}
		ended, _, err := db.FinishSearchPhraseRun(ctx, p.ID, job.ID, store.PhraseRunOutcome{Status: c.ends, Error: "x"})
		if err != nil || ended == nil || ended.RunStatus != c.ends || ended.LastRunError != "x" {
			t.Fatalf("finish: %+v %v", ended, err)
		}
		clock.Advance(time.Hour)
	}
}
