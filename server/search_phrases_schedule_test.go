package server_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/copydesk/copydesk/store"
)

// phraseSettled waits until a phrase's run has ended and its job too: the
// job's end comes after the run's notification, if it raises one, and
// after the scheduler's next plan (searchphrase's runJob makes both).
func phraseSettled(t *testing.T, e *env, tok string, id int64) map[string]any {
	t.Helper()
	p := phraseWait(t, e, tok, id)
	row, err := e.app.DB.SearchPhraseByID(context.Background(), id)
	if err != nil || row.RunJobID == nil {
		t.Fatalf("phrase %d: %+v %v", id, row, err)
	}
	agWaitFor(t, fmt.Sprintf("the job of phrase %d's run", id), func() bool {
		j, err := e.app.DB.JobByID(context.Background(), *row.RunJobID)
		if err != nil {
			t.Fatal(err)
		}
		return j.FinishedAt != nil
	})
	return p
}

// stamp reads a time of an answer; nil or anything else is the zero time.
func stamp(v any) time.Time {
	s, _ := v.(string)
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}

// phraseNotes lists the user's notifications about a phrase, newest first,
// as "kind|title|link".
func phraseNotes(t *testing.T, e *env, tok string, id int64) []string {
	t.Helper()
	var out []string
	for _, n := range myNotes(t, e, tok) {
		link, _ := n["link"].(string)
		if link == fmt.Sprintf("/api/search-phrases/%d", id) || strings.HasPrefix(link, fmt.Sprintf("/api/search-phrases/%d/", id)) {
			out = append(out, fmt.Sprintf("%s|%s|%s", n["kind"], n["title"], link))
		}
	}
	return out
}

// A watched phrase is run by the scheduler when due, through the same run
// as POST …/run, and is due again refresh_interval after each run ends;
// phrases on demand only or inactive are never run by it. A run asked for
// by hand while the phrase is due is the only run. The creator hears of
// scheduled runs that found new ideas or failed, never of empty ones nor
// of runs asked for by hand.
func TestSearchPhrasesScheduled(t *testing.T) {
	t.Parallel()
	f := agSetup(t)
	e := f.e
	// The store's clock from here on, where agSetup signed everyone in.
	e.clock.Set(time.Now().UTC().Truncate(time.Millisecond))
	e.app.DB.Now = e.clock.Now
	var mu sync.Mutex
	answer := func(n int, _ map[string]any) (int, string) { return 200, aiIdeasAnswer }
	provider := fakeOpenAI(t, func(n int, req map[string]any) (int, string) {
		mu.Lock()
		defer mu.Unlock()
		return answer(n, req)
	})
	agConfigure(t, e, provider.URL+"/v1")
	serp := newFakeSerp(t)
	e.credential(t, "serp", serp.URL, "", &f.envA)

	const every = 300 // seconds, the shortest interval
	watched := phraseCreate(t, e, f.edATok, map[string]any{"environment_id": f.envA, "phrase": "Cold brew", "locale": "en-US", "refresh_interval": every})
	if watched["refresh_interval"] != float64(every) || !stamp(watched["next_run_at"]).Equal(e.clock.Now()) {
		t.Fatalf("a watched phrase is not due at once: %v", watched)
	}
	onDemand := phraseCreate(t, e, f.edATok, map[string]any{"environment_id": f.envA, "phrase": "flat white"})
	inactive := phraseCreate(t, e, f.edATok, map[string]any{"environment_id": f.envA, "phrase": "iced latte", "refresh_interval": every,
		"is_active": false})
	for _, p := range []map[string]any{onDemand, inactive} {
		if p["next_run_at"] != nil {
			t.Errorf("%v is due", p)
		}
	}
	if onDemand["refresh_interval"] != float64(0) {
		t.Errorf("default interval: %v", onDemand["refresh_interval"])
	}
	const bounds = "refresh_interval: must be 0 (no schedule) or whole seconds from 300 (5 minutes) to 2592000 (30 days)"
	postCases(t, e, "/api/search-phrases", []postCase{
		{"IntervalTooShort", f.edATok, map[string]any{"environment_id": f.envA, "phrase": "x", "refresh_interval": 299}, 422, bounds},
		{"IntervalTooLong", f.edATok, map[string]any{"environment_id": f.envA, "phrase": "x", "refresh_interval": 2592001}, 422,
			"refresh_interval: must be at most 2592000"},
		{"IntervalNegative", f.edATok, map[string]any{"environment_id": f.envA, "phrase": "x", "refresh_interval": -1}, 422,
			"refresh_interval: must be at least 0"},
	})
	path := fmt.Sprintf("/api/search-phrases/%d", agID(onDemand))
	if r := e.do(t, "PUT", path, f.edATok, map[string]any{"refresh_interval": 60}); r.Code != 422 || r.Detail() != bounds {
		t.Errorf("update to 60 s: %d %s", r.Code, r.Body)
	}
	// Watched, then not: no longer due.
	if r := e.do(t, "PUT", path, f.edATok, map[string]any{"refresh_interval": 86400}); r.Code != 200 || r.Data()["next_run_at"] == nil {
		t.Errorf("watch: %d %s", r.Code, r.Body)
	}
	if r := e.do(t, "PUT", path, f.edATok, map[string]any{"refresh_interval": 0}); r.Code != 200 || r.Data()["next_run_at"] != nil {
		t.Errorf("stop watching: %d %s", r.Code, r.Body)
	}
	list := e.do(t, "GET", fmt.Sprintf("/api/search-phrases?environment_id=%d&is_active=false", f.envA), f.viewATok, nil)
	if items := agItems(list.Data()); len(items) != 1 || items[0]["phrase"] != "iced latte" {
		t.Errorf("is_active=false: %s", list.Body)
	}

	// Due, and asked for by hand before the scheduler could: one run.
	id := agID(watched)
	if r := e.do(t, "POST", fmt.Sprintf("/api/search-phrases/%d/run", id), f.edATok, nil); r.Code != 202 || r.Data()["next_run_at"] != nil {
		t.Fatalf("run by hand: %d %s", r.Code, r.Body)
	}
	startJobs(t, e)
	ran := phraseSettled(t, e, f.edATok, id)
	if ran["run_status"] != "succeeded" || agNum(ran["last_run_ideas"]) != 8 ||
		!stamp(ran["next_run_at"]).Equal(stamp(ran["last_run_at"]).Add(every*time.Second)) {
		t.Fatalf("after the run by hand: %v", ran)
	}
	if q := serp.Queries(); len(q) != 2 {
		t.Errorf("SerpApi was asked %q, want one run's two calls", q)
	}
	if notes := phraseNotes(t, e, f.edATok, id); notes != nil {
		t.Errorf("a run by hand raised %q", notes)
	}
	// The scheduler is planned for when the phrase is next due.
	planned, _, err := e.app.DB.ListJobs(context.Background(), store.JobFilter{Kind: "search.schedule", Status: store.JobQueued})
	if err != nil || len(planned) != 1 || !planned[0].RunAfter.Equal(stamp(ran["next_run_at"])) {
		t.Errorf("the scheduler's job: %+v %v", planned, err)
	}

	// Due again: the scheduler runs it; nothing new is no news.
	scheduledRun := func() map[string]any {
		t.Helper()
		before := ran["last_run_at"]
		e.clock.Advance(every * time.Second)
		agWaitFor(t, "the scheduled run", func() bool {
			return e.do(t, "GET", fmt.Sprintf("/api/search-phrases/%d", id), f.edATok, nil).Data()["last_run_at"] != before
		})
		ran = phraseSettled(t, e, f.edATok, id)
		if !stamp(ran["next_run_at"]).Equal(stamp(ran["last_run_at"]).Add(every * time.Second)) {
			t.Errorf("next_run_at %v, want last_run_at %v + the interval", ran["next_run_at"], ran["last_run_at"])
		}
		return ran
	}
	if got := scheduledRun(); got["run_status"] != "succeeded" || agNum(got["last_run_ideas"]) != 0 {
		t.Errorf("second run: %v", got)
	}
	if notes := phraseNotes(t, e, f.edATok, id); notes != nil {
		t.Errorf("an empty scheduled run raised %q", notes)
	}

	// New ideas are news.
	mu.Lock()
	answer = func(int, map[string]any) (int, string) { return 200, aiIdeasAnswer + "cold brew at home\n" }
	mu.Unlock()
	if got := scheduledRun(); got["run_status"] != "succeeded" || agNum(got["last_run_ideas"]) != 1 {
		t.Errorf("third run: %v", got)
	}
	want := []string{fmt.Sprintf(`run.succeeded|Scheduled search for "Cold brew" found 1 new idea|/api/search-phrases/%d/ideas`, id)}
	if notes := phraseNotes(t, e, f.edATok, id); fmt.Sprint(notes) != fmt.Sprint(want) {
		t.Errorf("notes %q, want %q", notes, want)
	}
	if notes := phraseNotes(t, e, f.viewATok, id); notes != nil {
		t.Errorf("someone other than the creator was told: %q", notes)
	}

	// Both sources failing is news.
	mu.Lock()
	answer = func(int, map[string]any) (int, string) { return 400, "model not found" }
	mu.Unlock()
	serp.mu.Lock()
	serp.fail = true
	serp.mu.Unlock()
	if got := scheduledRun(); got["run_status"] != "failed" || !strings.Contains(got["last_run_error"].(string), "model not found") {
		t.Errorf("fourth run: %v", got)
	}
	notes := phraseNotes(t, e, f.edATok, id)
	if len(notes) != 2 || !strings.HasPrefix(notes[0], fmt.Sprintf(`run.failed|Scheduled search for "Cold brew" failed|/api/search-phrases/%d`, id)) {
		t.Errorf("notes after a failure: %q", notes)
	}
	// Failing again is the same streak: no more news, every interval.
	if got := scheduledRun(); got["run_status"] != "failed" {
		t.Errorf("fifth run: %v", got)
	}
	if again := phraseNotes(t, e, f.edATok, id); len(again) != 2 {
		t.Errorf("a second failure in a row was told: %q", again)
	}
	// It answers again, then fails: a new streak is news again.
	mu.Lock()
	answer = func(int, map[string]any) (int, string) { return 200, aiIdeasAnswer }
	mu.Unlock()
	if got := scheduledRun(); got["run_status"] != "succeeded" {
		t.Errorf("sixth run: %v", got)
	}
	mu.Lock()
	answer = func(int, map[string]any) (int, string) { return 400, "model not found" }
	mu.Unlock()
	if got := scheduledRun(); got["run_status"] != "failed" {
		t.Errorf("seventh run: %v", got)
	}
	if again := phraseNotes(t, e, f.edATok, id); len(again) != 3 || !strings.HasPrefix(again[0], "run.failed|") {
		t.Errorf("notes after a new streak of failures: %q", again)
	}

	// Only the watched phrase was ever asked about.
	for _, q := range serp.Queries() {
		if !strings.Contains(q, "|Cold brew|") {
			t.Errorf("SerpApi was asked about another phrase: %q", q)
		}
	}
	for _, p := range []map[string]any{onDemand, inactive} {
		if r := e.do(t, "GET", fmt.Sprintf("/api/search-phrases/%d", agID(p)), f.edATok, nil); r.Data()["run_status"] != "idle" {
			t.Errorf("%s ran: %s", p["phrase"], r.Body)
		}
	}
}
