package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/copydesk/copydesk/server"
	"github.com/copydesk/copydesk/store"
)

// Tests of /api/seo/scout, against a local SerpApi and a local OpenAI-
// compatible provider. Identifiers are prefixed "scout" (the fake SerpApi
// "serpFake", shared with the strategy tests).

// serpFake is a local server speaking SerpApi's search.json for the
// engines google (organic results, related searches, people also ask) and
// google_autocomplete, from what a test sets per query (in lower case);
// fail makes every
// call answer 401 as SerpApi does for a bad key.
type serpFake struct {
	srv *httptest.Server

	mu        sync.Mutex
	calls     []url.Values
	organic   map[string][]string // query -> result links
	related   map[string][]string
	questions map[string][]string
	complete  map[string][]string
	fail      bool
}

func newSERPFake(t *testing.T) *serpFake {
	t.Helper()
	f := &serpFake{organic: map[string][]string{}, related: map[string][]string{}, questions: map[string][]string{}, complete: map[string][]string{}}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		f.mu.Lock()
		defer f.mu.Unlock()
		f.calls = append(f.calls, q)
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path != "/search.json" {
			w.WriteHeader(404)
			fmt.Fprint(w, `{"error":"Not found."}`)
			return
		}
		if f.fail || q.Get("api_key") != "sk-test-good-key-0001" {
			w.WriteHeader(401)
			fmt.Fprint(w, `{"error":"Invalid API key. Your API key should be here: https://serpapi.com/manage-api-key"}`)
			return
		}
		meta := map[string]any{"id": "1", "status": "Success"}
		key := strings.ToLower(q.Get("q"))
		switch q.Get("engine") {
		case "google":
			var organic, related, questions []map[string]any
			for i, link := range f.organic[key] {
				organic = append(organic, map[string]any{"position": i + 1, "title": "Result " + link, "link": link, "snippet": "..."})
			}
			for _, s := range f.related[key] {
				related = append(related, map[string]any{"query": s, "link": "https://www.google.com/search?q=" + url.QueryEscape(s)})
			}
			for _, s := range f.questions[key] {
				questions = append(questions, map[string]any{"question": s, "snippet": "An answer.", "title": "A page"})
			}
			_ = json.NewEncoder(w).Encode(map[string]any{"search_metadata": meta, "search_parameters": map[string]any{"q": q.Get("q")},
				"organic_results": organic, "related_searches": related, "related_questions": questions})
		case "google_autocomplete":
			var sugg []map[string]any
			for i, s := range f.complete[key] {
				sugg = append(sugg, map[string]any{"value": s, "relevance": 600 - i, "type": "QUERY"})
			}
			_ = json.NewEncoder(w).Encode(map[string]any{"search_metadata": meta, "suggestions": sugg})
		default:
			w.WriteHeader(400)
			fmt.Fprint(w, `{"error":"Unsupported engine."}`)
		}
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *serpFake) Calls() []url.Values {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

func (f *serpFake) Fail(on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = on
}

// scoutLLM answers every chat completion with answer(n) for the n-th call
// (from 1), recording the requests.
type scoutLLM struct {
	mu       sync.Mutex
	requests []map[string]any
	url      string
}

func newScoutLLM(t *testing.T, answer func(n int) string) *scoutLLM {
	t.Helper()
	l := &scoutLLM{}
	srv := agOpenAI(t, func(w http.ResponseWriter, r *http.Request) {
		var req map[string]any
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			t.Errorf("provider got a body that is not JSON: %v", err)
		}
		l.mu.Lock()
		l.requests = append(l.requests, req)
		n := len(l.requests)
		l.mu.Unlock()
		agCompletion(w, answer(n))
	})
	l.url = srv.URL + "/v1"
	return l
}

func (l *scoutLLM) Requests() []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.requests)
}

// lastUser is the last user message of a request.
func lastUser(req map[string]any) string {
	msgs := req["messages"].([]any)
	return msgs[len(msgs)-1].(map[string]any)["content"].(string)
}

// scoutWait polls a run until it ends.
func scoutWait(t *testing.T, e *env, tok string, id int64) map[string]any {
	t.Helper()
	return waitQueued(t, e, tok, fmt.Sprintf("/api/seo/scout/runs/%d", id))
}

// waitQueued polls GET path until the status of what it answers is no
// longer queued or running (a scout run, a strategy), and returns that.
func waitQueued(t *testing.T, e *env, tok, path string) map[string]any {
	t.Helper()
	var last map[string]any
	agWaitFor(t, path+" ends", func() bool {
		r := e.do(t, "GET", path, tok, nil)
		if r.Code != 200 {
			t.Fatalf("GET %s: %d %s", path, r.Code, r.Body)
		}
		last = r.Data()
		return last["status"] != "queued" && last["status"] != "running"
	})
	return last
}

// scoutCandidates maps a run's candidates by keyword.
func scoutCandidates(run map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, c := range run["candidates"].([]any) {
		m := c.(map[string]any)
		out[m["keyword"].(string)] = m
	}
	return out
}

func strs(v any) string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return strings.Join(out, ",")
}

// scoutSeed gives envA a search phrase with two ideas, a web source with
// two items and the keyword "cold brew ratio", written straight to the
// store (before any job runs).
func scoutSeed(t *testing.T, f *agFixture) {
	t.Helper()
	ctx := context.Background()
	db := f.e.app.DB
	p, err := db.CreateSearchPhrase(ctx, store.NewSearchPhrase{EnvironmentID: f.envA, Phrase: "Cold Brew", PhraseKey: "cold brew", Locale: "en", IsActive: true})
	if err != nil {
		t.Fatal(err)
	}
	p, err = db.QueueSearchPhraseRun(ctx, p.ID, store.RunJob{Kind: "search.run", MaxAttempts: 1, Payload: func(id int64) any { return map[string]int64{"phrase_id": id} }})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.FinishSearchPhraseRun(ctx, p.ID, *p.RunJobID, store.PhraseRunOutcome{Status: store.PhraseSucceeded, Ideas: []store.NewSearchIdea{
		{Idea: "cold brew vs iced coffee", IdeaKey: "cold brew vs iced coffee", Source: "serp", Kind: "related"},
		{Idea: "Cold brew ratio", IdeaKey: "cold brew ratio", Source: "ai", Kind: "related"},
	}}); err != nil {
		t.Fatal(err)
	}
	src, err := db.CreateWebSource(ctx, store.NewWebSource{EnvironmentID: f.envA, URL: "https://coffee.example/feed", Kind: store.SourceRSS,
		IsActive: false, FetchInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.RecordWebSourceFetch(ctx, src.ID, store.WebFetch{URL: src.URL, Items: []store.NewWebItem{
		{Key: "1", Title: "Cold brew vs iced coffee"},
		{Key: "2", Title: "Our roastery celebrates its tenth anniversary with a week of free tastings for everyone in town"},
	}}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateKeyword(ctx, store.NewKeyword{EnvironmentID: f.envA, Keyword: "Cold Brew Ratio", Status: store.KeywordNew, Source: "manual"}); err != nil {
		t.Fatal(err)
	}
}

const scoutAIAnswer = `{"keywords": [
	{"keyword": "cold brew ratio", "intent": ["informational"]},
	{"keyword": "best cold brew maker", "intent": ["commercial", "transactional"]},
	{"keyword": "How to make cold brew?", "intent": "informational"}]}`

// TestScoutRun: a run reads every source, de-duplicates what they found
// against each other and the environment's keywords, scores it, and
// meters the model's calls as scout.
func TestScoutRun(t *testing.T) {
	t.Parallel()
	f := agSetup(t)
	scoutSeed(t, f)
	serp := newSERPFake(t)
	serp.related["cold brew"] = []string{"Cold Brew Ratio", "cold brew concentrate"}
	serp.questions["cold brew"] = []string{"How to make cold brew?", "Is cold brew stronger than coffee?"}
	serp.complete["cold brew"] = []string{"cold brew maker", "best cold brew maker"}
	f.e.credential(t, "serp", serp.srv.URL, "", &f.envA)
	llm := newScoutLLM(t, func(int) string { return scoutAIAnswer })
	agConfigure(t, f.e, llm.url)
	agRunJobs(t, f.e)

	r := f.e.do(t, "POST", "/api/seo/scout/runs", f.edATok, map[string]any{"environment_id": f.envA})
	if r.Code != 202 || r.Data()["status"] != "queued" {
		t.Fatalf("start: %d %s", r.Code, r.Body)
	}
	// Without seeds, the environment's active search phrases are asked.
	if got := strs(r.Data()["seeds"]); got != "Cold Brew" {
		t.Fatalf("seeds %q", got)
	}
	run := scoutWait(t, f.e, f.viewATok, agID(r.Data()))
	if run["status"] != "succeeded" || run["notes"] != "" {
		t.Fatalf("run %v", run)
	}
	cands := scoutCandidates(run)
	want := map[string]struct {
		foundBy, intent string
		score           float64
	}{
		// Google and the idea, the web item: 40 + 30 + 30 (all of the seed).
		"cold brew vs iced coffee":          {"idea_serp,web", "", 40 + 15 + 30},
		"cold brew concentrate":             {"serp_related", "", 40 + 30},
		"How to make cold brew":             {"ai,serp_question", "informational", 40 + 15 + 30},
		"Is cold brew stronger than coffee": {"serp_question", "", 40 + 30},
		"cold brew maker":                   {"serp_autocomplete", "", 40 + 30},
		"best cold brew maker":              {"ai,serp_autocomplete", "commercial,transactional", 40 + 15 + 30},
	}
	for kw, w := range want {
		c := cands[kw]
		if c == nil {
			t.Errorf("no candidate %q in %v", kw, cands)
			continue
		}
		if strs(c["found_by"]) != w.foundBy || strs(c["intent"]) != w.intent || c["score"] != w.score || c["status"] != "new" {
			t.Errorf("%q: %v; want found_by %s, intent %s, score %v", kw, c, w.foundBy, w.intent, w.score)
		}
	}
	// The keyword the environment has is left out however it was found
	// (an idea, Google's related search, the model); the headline is no
	// keyword.
	if len(cands) != len(want) {
		t.Errorf("candidates %v; want exactly %d", cands, len(want))
	}
	if run["gathered"] != float64(len(want)+1) || run["known"] != 1.0 || run["candidate_count"] != float64(len(want)) {
		t.Errorf("counts: gathered %v known %v candidates %v", run["gathered"], run["known"], run["candidate_count"])
	}
	// Best first, then by keyword.
	var order []string
	for _, c := range run["candidates"].([]any) {
		order = append(order, c.(map[string]any)["keyword"].(string))
	}
	if strings.Join(order, "|") != "best cold brew maker|cold brew vs iced coffee|How to make cold brew|"+
		"cold brew concentrate|cold brew maker|Is cold brew stronger than coffee" {
		t.Errorf("order %q", order)
	}

	// SerpApi was asked about the seed, in the environment's language.
	calls := serp.Calls()
	if len(calls) != 2 || calls[0].Get("engine") != "google" || calls[1].Get("engine") != "google_autocomplete" ||
		calls[0].Get("q") != "Cold Brew" || calls[0].Get("hl") != "en" {
		t.Errorf("serp calls %v", calls)
	}
	// The model was asked once, about the seed, metered as scout.
	reqs := llm.Requests()
	if len(reqs) != 1 || !strings.Contains(lastUser(reqs[0]), `"Cold Brew"`) {
		t.Errorf("model requests %v", reqs)
	}
	if n, items := agUsage(t, f.e, f.adminTok, "&source=scout"); n != 1 || items[0]["environment_id"] != float64(f.envA) {
		t.Errorf("usage: %d %v", n, items)
	}

	t.Run("List", func(t *testing.T) {
		r := f.e.do(t, "GET", fmt.Sprintf("/api/seo/scout/runs?environment_id=%d&status=succeeded&sort=-candidate_count", f.envA), f.viewATok, nil)
		if r.Code != 200 || r.Data()["total"] != 1.0 {
			t.Fatalf("%d %s", r.Code, r.Body)
		}
		if items := agItems(r.Data()); items[0]["candidates"] != nil {
			t.Fatalf("a list holds no candidates: %v", items[0])
		}
		for _, q := range []string{"sort=score", "status=done", "environment_id=0"} {
			if r := f.e.do(t, "GET", "/api/seo/scout/runs?"+q, f.viewATok, nil); r.Code != 422 {
				t.Errorf("%s: %d %s", q, r.Code, r.Body)
			}
		}
		if r := f.e.do(t, "GET", fmt.Sprintf("/api/seo/scout/runs?environment_id=%d", f.envB), f.edATok, nil); r.Code != 404 {
			t.Errorf("another environment: %d %s", r.Code, r.Body)
		}
		if r := f.e.do(t, "GET", "/api/seo/scout/runs", f.edBTok, nil); r.Code != 200 || r.Data()["total"] != 0.0 {
			t.Errorf("edB sees %s", r.Body)
		}
	})

	t.Run("Accept", func(t *testing.T) {
		id := agID(run)
		accept := func(tok string, ids ...any) resp {
			return f.e.do(t, "POST", fmt.Sprintf("/api/seo/scout/runs/%d/accept", id), tok, map[string]any{"candidates": ids})
		}
		maker, howTo, concentrate := agID(cands["best cold brew maker"]), agID(cands["How to make cold brew"]), agID(cands["cold brew concentrate"])
		// Someone adds one of them by hand meanwhile.
		if _, err := f.e.app.DB.CreateKeyword(context.Background(), store.NewKeyword{EnvironmentID: f.envA, Keyword: "COLD BREW CONCENTRATE",
			Status: store.KeywordNew, Source: "manual"}); err != nil {
			t.Fatal(err)
		}
		if r := accept(f.edBTok, maker); r.Code != 404 {
			t.Fatalf("another environment's editor: %d %s", r.Code, r.Body)
		}
		if r := accept(f.edATok, maker, 999999); r.Code != 422 || !strings.Contains(r.Detail(), "no candidate with id 999999") {
			t.Fatalf("unknown candidate: %d %s", r.Code, r.Body)
		}
		for _, body := range []any{map[string]any{}, map[string]any{"candidates": []int{}}, map[string]any{"candidates": []int{0}}} {
			if r := f.e.do(t, "POST", fmt.Sprintf("/api/seo/scout/runs/%d/accept", id), f.edATok, body); r.Code != 422 {
				t.Errorf("%v: %d %s", body, r.Code, r.Body)
			}
		}
		r := accept(f.edATok, maker, howTo, concentrate, maker)
		if r.Code != 200 || r.Data()["created"] != 2.0 || r.Data()["skipped"] != 1.0 || len(r.Data()["keyword_ids"].([]any)) != 2 {
			t.Fatalf("accept: %d %s", r.Code, r.Body)
		}
		k, err := f.e.app.DB.KeywordByID(context.Background(), int64(r.Data()["keyword_ids"].([]any)[0].(float64)))
		if err != nil || k.Keyword != "best cold brew maker" || k.Source != "scout" || k.Status != "new" ||
			!slices.Equal(k.Intent, []string{"commercial", "transactional"}) || k.EnvironmentID != f.envA {
			t.Fatalf("keyword %+v %v", k, err)
		}
		again := accept(f.edATok, maker, howTo)
		if again.Code != 200 || again.Data()["created"] != 0.0 || again.Data()["skipped"] != 2.0 {
			t.Fatalf("again: %s", again.Body)
		}
		after := scoutCandidates(scoutWait(t, f.e, f.viewATok, id))
		if after["best cold brew maker"]["status"] != "accepted" || after["cold brew concentrate"]["status"] != "exists" ||
			after["cold brew concentrate"]["keyword_id"] == nil || after["cold brew maker"]["status"] != "new" {
			t.Fatalf("statuses %v", after)
		}
		if r := f.e.do(t, "GET", fmt.Sprintf("/api/seo/scout/runs/%d", id), f.viewATok, nil); r.Data()["accepted_count"] != 2.0 {
			t.Fatalf("accepted_count %v", r.Data()["accepted_count"])
		}
	})
}

// TestScoutSourcesThatFail: a source that fails or cannot be used is a
// note; the model is asked again once when its answer does not parse.
func TestScoutSourcesThatFail(t *testing.T) {
	t.Parallel()
	f := agSetup(t)
	serp := newSERPFake(t)
	serp.Fail(true)
	f.e.credential(t, "serp", serp.srv.URL, "", &f.envA)
	var mu sync.Mutex
	answers := []string{"Sure! Here are some keywords: cold brew, iced coffee", scoutAIAnswer}
	llm := newScoutLLM(t, func(n int) string {
		mu.Lock()
		defer mu.Unlock()
		return answers[min(n, len(answers))-1]
	})
	agConfigure(t, f.e, llm.url)
	agRunJobs(t, f.e)

	start := func(body map[string]any) map[string]any {
		t.Helper()
		r := f.e.do(t, "POST", "/api/seo/scout/runs", f.edATok, body)
		if r.Code != 202 {
			t.Fatalf("start: %d %s", r.Code, r.Body)
		}
		return scoutWait(t, f.e, f.edATok, agID(r.Data()))
	}
	run := start(map[string]any{"environment_id": f.envA, "seeds": []string{"cold brew", "Cold  Brew", "espresso"}})
	if run["status"] != "succeeded" || strs(run["seeds"]) != "cold brew,espresso" {
		t.Fatalf("run %v", run)
	}
	// SerpApi's 401 stops the SERP calls at once, without the key.
	if !strings.Contains(run["notes"].(string), "serp search: serp: 401 Invalid API key") || strings.Contains(run["notes"].(string), "sk-test") {
		t.Errorf("notes %q", run["notes"])
	}
	if n := len(serp.Calls()); n != 1 {
		t.Errorf("%d serp calls after a 401; want 1", n)
	}
	reqs := llm.Requests()
	if len(reqs) != 2 || !strings.Contains(lastUser(reqs[1]), "could not be used: the answer holds no JSON object") {
		t.Fatalf("model requests %d: %v", len(reqs), reqs)
	}
	if c := scoutCandidates(run); c["best cold brew maker"] == nil || strs(c["best cold brew maker"]["found_by"]) != "ai" {
		t.Fatalf("candidates %v", c)
	}

	// Twice unreadable: a note; with only the model asked, the run fails.
	mu.Lock()
	answers = []string{"no", "still no"}
	mu.Unlock()
	run = start(map[string]any{"environment_id": f.envA, "seeds": []string{"tea"}, "sources": []string{"ai"}})
	if run["status"] != "failed" || !strings.Contains(run["error"].(string), "not the JSON asked for, twice") || run["candidates"].([]any) == nil {
		t.Fatalf("run %v", run)
	}
	// With a local source too, the same answer leaves a succeeded run with a
	// note.
	run = start(map[string]any{"environment_id": f.envA, "seeds": []string{"tea"}, "sources": []string{"ai", "web"}})
	if run["status"] != "succeeded" || !strings.Contains(run["notes"].(string), "ai: the model's answer was not the JSON asked for") ||
		strs(run["sources"]) != "web,ai" {
		t.Fatalf("run %v", run)
	}
	// Environment C has no serp credential: a note.
	run = start(map[string]any{"environment_id": f.envC, "seeds": []string{"tea"}, "sources": []string{"serp", "ideas"}})
	if run["status"] != "succeeded" || !strings.Contains(run["notes"].(string), "serp: skipped: no serp credential is usable") {
		t.Fatalf("run %v", run)
	}
}

func TestScoutRunRefused(t *testing.T) {
	t.Parallel()
	f := agSetup(t) // no AI provider, no serp credential
	cases := []struct {
		name   string
		tok    string
		body   any
		code   int
		detail string
	}{
		{"Viewer", f.viewATok, map[string]any{"environment_id": f.envA}, 403, ""},
		{"NoEnvironment", f.edATok, map[string]any{"seeds": []string{"x"}}, 422, "environment_id"},
		{"AnotherEnvironment", f.edATok, map[string]any{"environment_id": f.envB}, 422, "environment_id: no environment"},
		{"UnknownSource", f.edATok, map[string]any{"environment_id": f.envA, "sources": []string{"bing"}}, 422, "sources"},
		{"TooManySeeds", f.edATok, map[string]any{"environment_id": f.envA, "seeds": strings.Fields("a b c d e f g h i j k")}, 422, "seeds"},
		{"EmptySeed", f.edATok, map[string]any{"environment_id": f.envA, "seeds": []string{"  "}}, 422, "seeds[0]: must not be empty"},
		{"SeedWithControl", f.edATok, map[string]any{"environment_id": f.envA, "seeds": []string{"a\u0007b"}}, 422, "seeds"},
		{"LongSeed", f.edATok, map[string]any{"environment_id": f.envA, "seeds": []string{strings.Repeat("x", 201)}}, 422, "seeds"},
		{"RemoteWithoutSeeds", f.edATok, map[string]any{"environment_id": f.envA, "sources": []string{"serp", "ai"}}, 422, "seeds: serp and ai ask about seed phrases"},
		{"NothingToAsk", f.edATok, map[string]any{"environment_id": f.envA, "seeds": []string{"x"}, "sources": []string{"serp", "ai"}}, 409,
			"nothing to ask: no serp credential is usable in this environment"},
		{"NotJSON", f.edATok, "{", 400, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := f.e.do(t, "POST", "/api/seo/scout/runs", c.tok, c.body)
			if r.Code != c.code || !strings.Contains(r.Detail(), c.detail) {
				t.Fatalf("%d %s; want %d with %q", r.Code, r.Body, c.code, c.detail)
			}
		})
	}
	// Local sources need nothing configured; a queued run's candidates
	// cannot be accepted yet; nothing is left running.
	r := f.e.do(t, "POST", "/api/seo/scout/runs", f.edATok, map[string]any{"environment_id": f.envA, "sources": []string{"ideas"}})
	if r.Code != 202 {
		t.Fatalf("%d %s", r.Code, r.Body)
	}
	id := agID(r.Data())
	if r := f.e.do(t, "POST", fmt.Sprintf("/api/seo/scout/runs/%d/accept", id), f.edATok, map[string]any{"candidates": []int{1}}); r.Code != 409 {
		t.Fatalf("accept a queued run: %d %s", r.Code, r.Body)
	}
	for _, p := range []string{"/api/seo/scout/runs/999999", "/api/seo/scout/runs/abc"} {
		if r := f.e.do(t, "GET", p, f.edATok, nil); r.Code != 404 && r.Code != 422 {
			t.Errorf("%s: %d", p, r.Code)
		}
	}
	if r := f.e.do(t, "GET", fmt.Sprintf("/api/seo/scout/runs/%d", id), f.edBTok, nil); r.Code != 404 {
		t.Errorf("another environment's run: %d", r.Code)
	}
	agRunJobs(t, f.e)
	if run := scoutWait(t, f.e, f.edATok, id); run["status"] != "succeeded" || run["candidate_count"] != 0.0 {
		t.Fatalf("run %v", run)
	}
}

// scoutJobOf is the job of a scout run, as the store has it.
func scoutJobOf(t *testing.T, e *env, runID int64) *store.Job {
	t.Helper()
	ctx := context.Background()
	run, err := e.app.DB.ScoutRunByID(ctx, runID)
	if err != nil || run.JobID == nil {
		t.Fatalf("run %d: %+v %v", runID, run, err)
	}
	job, err := e.app.DB.JobByID(ctx, *run.JobID)
	if err != nil {
		t.Fatal(err)
	}
	return job
}

// TestScoutCancel: a queued or running run is cancelled by an editor of
// its environment, at once; a running run's model call is cut, what it had
// gathered is dropped, and the job's ending does not turn it into failed.
func TestScoutCancel(t *testing.T) {
	t.Parallel()
	cancelPath := func(id int64) string { return fmt.Sprintf("/api/seo/scout/runs/%d/cancel", id) }

	t.Run("Queued", func(t *testing.T) {
		t.Parallel()
		f := agSetup(t)
		scoutSeed(t, f)
		// No runner yet: the run waits in the queue.
		r := f.e.do(t, "POST", "/api/seo/scout/runs", f.edATok, map[string]any{"environment_id": f.envA, "sources": []string{"ideas"}})
		if r.Code != 202 {
			t.Fatalf("start: %d %s", r.Code, r.Body)
		}
		id := agID(r.Data())
		for _, c := range []struct {
			name, tok string
			code      int
		}{{"Viewer", f.viewATok, 403}, {"AnotherEnvironment", f.edBTok, 404}} {
			if r := f.e.do(t, "POST", cancelPath(id), c.tok, nil); r.Code != c.code {
				t.Errorf("%s: %d %s; want %d", c.name, r.Code, r.Body, c.code)
			}
		}
		if r := f.e.do(t, "DELETE", fmt.Sprintf("/api/seo/scout/runs/%d", id), f.edATok, nil); r.Code != 409 || !strings.Contains(r.Detail(), "cancel it first") {
			t.Errorf("delete a queued run: %d %s", r.Code, r.Body)
		}
		r = f.e.do(t, "POST", cancelPath(id), f.edATok, nil)
		if d := r.Data(); r.Code != 200 || d["status"] != "cancelled" || d["error"] != "cancelled by alice" || d["finished_at"] == nil || d["started_at"] != nil {
			t.Fatalf("cancel: %d %s", r.Code, r.Body)
		}
		if job := scoutJobOf(t, f.e, id); job.Status != store.JobCancelled {
			t.Errorf("job %+v", job)
		}
		if r := f.e.do(t, "POST", cancelPath(id), f.edATok, nil); r.Code != 409 || !strings.Contains(r.Detail(), "already cancelled") {
			t.Errorf("cancel twice: %d %s", r.Code, r.Body)
		}
		// Started later, the runner skips it: a run queued after it runs.
		agRunJobs(t, f.e)
		r = f.e.do(t, "POST", "/api/seo/scout/runs", f.edATok, map[string]any{"environment_id": f.envA, "sources": []string{"ideas"}})
		if next := scoutWait(t, f.e, f.edATok, agID(r.Data())); next["status"] != "succeeded" || next["candidate_count"] != 1.0 {
			t.Fatalf("next run: %v", next)
		}
		if run := scoutWait(t, f.e, f.edATok, id); run["status"] != "cancelled" || run["started_at"] != nil || len(run["candidates"].([]any)) != 0 {
			t.Errorf("the cancelled run ran: %v", run)
		}
	})

	t.Run("Running", func(t *testing.T) {
		t.Parallel()
		f := agSetup(t)
		scoutSeed(t, f)
		b := agBlockingOpenAI(t)
		agConfigure(t, f.e, b.srv.URL+"/v1")
		agRunJobs(t, f.e)
		// The ideas are read, then the model is asked, and holds.
		r := f.e.do(t, "POST", "/api/seo/scout/runs", f.edATok, map[string]any{"environment_id": f.envA, "seeds": []string{"cold brew"},
			"sources": []string{"ideas", "ai"}})
		if r.Code != 202 {
			t.Fatalf("start: %d %s", r.Code, r.Body)
		}
		id := agID(r.Data())
		agWaitChan(t, b.started, "the model call")
		if r := f.e.do(t, "GET", fmt.Sprintf("/api/seo/scout/runs/%d", id), f.viewATok, nil); r.Data()["status"] != "running" {
			t.Fatalf("while the model works: %s", r.Body)
		}
		if r := f.e.do(t, "DELETE", fmt.Sprintf("/api/seo/scout/runs/%d", id), f.edATok, nil); r.Code != 409 || !strings.Contains(r.Detail(), "is running: cancel it first") {
			t.Errorf("delete a running run: %d %s", r.Code, r.Body)
		}
		if r := f.e.do(t, "POST", cancelPath(id), f.viewATok, nil); r.Code != 403 {
			t.Errorf("viewer cancels: %d", r.Code)
		}
		r = f.e.do(t, "POST", cancelPath(id), f.edATok, nil)
		if d := r.Data(); r.Code != 200 || d["status"] != "cancelled" || d["started_at"] == nil || d["finished_at"] == nil {
			t.Fatalf("cancel: %d %s", r.Code, r.Body)
		}
		agWaitChan(t, b.gone, "the model call being cut")
		var job *store.Job
		agWaitFor(t, "the run's job ends", func() bool {
			job = scoutJobOf(t, f.e, id)
			return job.Status.Final()
		})
		if job.Status != store.JobCancelled {
			t.Errorf("job %+v", job)
		}
		// The job has ended, its OnFinish with it: the run is still
		// cancelled by alice, and the ideas it had read left no candidate.
		run := scoutWait(t, f.e, f.edATok, id)
		if run["status"] != "cancelled" || run["error"] != "cancelled by alice" || run["candidate_count"] != 0.0 || len(run["candidates"].([]any)) != 0 {
			t.Errorf("after the job ended: %v", run)
		}
		if n := b.requests.Load(); n != 1 {
			t.Errorf("model calls: %d", n)
		}
		if r := f.e.do(t, "POST", cancelPath(id), f.edATok, nil); r.Code != 409 {
			t.Errorf("cancel twice: %d %s", r.Code, r.Body)
		}
		// Cancelled, it can be deleted.
		if r := f.e.do(t, "DELETE", fmt.Sprintf("/api/seo/scout/runs/%d", id), f.edATok, nil); r.Code != 200 {
			t.Errorf("delete: %d %s", r.Code, r.Body)
		}
	})

	t.Run("Finished", func(t *testing.T) {
		t.Parallel()
		f := agSetup(t)
		agRunJobs(t, f.e)
		r := f.e.do(t, "POST", "/api/seo/scout/runs", f.edATok, map[string]any{"environment_id": f.envA, "sources": []string{"web"}})
		id := agID(r.Data())
		if run := scoutWait(t, f.e, f.edATok, id); run["status"] != "succeeded" {
			t.Fatalf("run %v", run)
		}
		r = f.e.do(t, "POST", cancelPath(id), f.edATok, nil)
		if r.Code != 409 || r.Detail() != fmt.Sprintf("scout run %d already succeeded: only a queued or running run can be cancelled", id) {
			t.Fatalf("cancel a finished run: %d %s", r.Code, r.Body)
		}
		for _, p := range []string{"/api/seo/scout/runs/999999/cancel", "/api/seo/scout/runs/0/cancel", "/api/seo/scout/runs/abc/cancel"} {
			if r := f.e.do(t, "POST", p, f.edATok, nil); r.Code != 404 && r.Code != 422 {
				t.Errorf("%s: %d %s", p, r.Code, r.Body)
			}
		}
	})
}

// TestScoutDelete: a finished run goes with its candidates; the keywords
// accepted from it stay.
func TestScoutDelete(t *testing.T) {
	t.Parallel()
	f := agSetup(t)
	scoutSeed(t, f)
	agRunJobs(t, f.e)
	r := f.e.do(t, "POST", "/api/seo/scout/runs", f.edATok, map[string]any{"environment_id": f.envA, "sources": []string{"ideas", "web"}})
	id := agID(r.Data())
	run := scoutWait(t, f.e, f.edATok, id)
	cands := scoutCandidates(run)
	vs := cands["cold brew vs iced coffee"]
	if run["status"] != "succeeded" || vs == nil {
		t.Fatalf("run %v", run)
	}
	r = f.e.do(t, "POST", fmt.Sprintf("/api/seo/scout/runs/%d/accept", id), f.edATok, map[string]any{"candidates": []int64{agID(vs)}})
	if r.Code != 200 || r.Data()["created"] != 1.0 {
		t.Fatalf("accept: %d %s", r.Code, r.Body)
	}
	kwID := int64(r.Data()["keyword_ids"].([]any)[0].(float64))

	path := fmt.Sprintf("/api/seo/scout/runs/%d", id)
	for _, c := range []struct {
		name, tok string
		code      int
	}{{"Viewer", f.viewATok, 403}, {"AnotherEnvironment", f.edBTok, 404}} {
		if r := f.e.do(t, "DELETE", path, c.tok, nil); r.Code != c.code {
			t.Errorf("%s: %d %s; want %d", c.name, r.Code, r.Body, c.code)
		}
	}
	r = f.e.do(t, "DELETE", path, f.edATok, nil)
	if r.Code != 200 || r.Data()["deleted"] != true || agID(r.Data()) != id {
		t.Fatalf("delete: %d %s", r.Code, r.Body)
	}
	if r := f.e.do(t, "GET", path, f.edATok, nil); r.Code != 404 {
		t.Errorf("GET after delete: %d %s", r.Code, r.Body)
	}
	if r := f.e.do(t, "DELETE", path, f.edATok, nil); r.Code != 404 {
		t.Errorf("delete twice: %d %s", r.Code, r.Body)
	}
	if c, err := f.e.app.DB.ScoutCandidates(context.Background(), id); err != nil || len(c) != 0 {
		t.Errorf("candidates left: %v %v", c, err)
	}
	if r := f.e.do(t, "GET", fmt.Sprintf("/api/seo/keywords/%d", kwID), f.viewATok, nil); r.Code != 200 || r.Data()["source"] != "scout" {
		t.Errorf("the accepted keyword: %d %s", r.Code, r.Body)
	}
	if r := f.e.do(t, "GET", fmt.Sprintf("/api/seo/scout/runs?environment_id=%d", f.envA), f.viewATok, nil); r.Data()["total"] != 0.0 {
		t.Errorf("list after delete: %s", r.Body)
	}
}

// A scout run a dead process left queued, with no job to finish it, fails
// when the server starts; a cancelled run stays cancelled.
func TestScoutOrphanRunFailsAtStart(t *testing.T) {
	t.Parallel()
	f := agSetup(t, func(c *server.Config) { c.HTTPAddr = "127.0.0.1:0"; c.NoScheduler = true })
	ctx := context.Background()
	db := f.e.app.DB
	var runs [2]*store.ScoutRun
	for i := range runs {
		r, err := db.CreateScoutRunWithJob(ctx, store.NewScoutRun{EnvironmentID: f.envA, Seeds: []string{"tea"}, Sources: []string{"ideas"}},
			store.RunJob{Kind: "seo.scout", MaxAttempts: 1, Payload: func(id int64) any { return map[string]int64{"run_id": id} }})
		if err != nil {
			t.Fatal(err)
		}
		runs[i] = r
	}
	orphan, cancelled := runs[0], runs[1]
	if _, err := db.FinishScoutRun(ctx, cancelled.ID, store.ScoutOutcome{Status: store.RunCancelled, Error: "cancelled by alice"}); err != nil {
		t.Fatal(err)
	}
	for _, r := range runs { // their jobs gone, as after a crash mid-way
		if _, err := db.CancelJob(ctx, *r.JobID); err != nil {
			t.Fatal(err)
		}
	}
	serveApp(t, f.e)
	var m map[string]any
	agWaitFor(t, "the orphan run to fail", func() bool {
		m = f.e.do(t, "GET", fmt.Sprintf("/api/seo/scout/runs/%d", orphan.ID), f.edATok, nil).Data()
		return m["status"] == "failed"
	})
	if m["error"] != "interrupted by a restart" || m["finished_at"] == nil {
		t.Errorf("orphan run: %v", m)
	}
	if m := f.e.do(t, "GET", fmt.Sprintf("/api/seo/scout/runs/%d", cancelled.ID), f.edATok, nil).Data(); m["status"] != "cancelled" ||
		m["error"] != "cancelled by alice" {
		t.Errorf("cancelled run: %v", m)
	}
}

// One environment has at most --max-queued (3) scout runs queued or
// running: the fourth is a 409 naming them (an editor queued 200, each a
// SerpApi and model spend); another environment is not held up.
func TestScoutRunsCapped(t *testing.T) {
	t.Parallel()
	f := agSetup(t) // no job runner: the runs stay queued
	body := map[string]any{"environment_id": f.envA, "sources": []string{"ideas"}}
	var ids []string
	for i := 0; i < 3; i++ {
		r := f.e.do(t, "POST", "/api/seo/scout/runs", f.edATok, body)
		if r.Code != 202 {
			t.Fatalf("run %d: %d %s", i+1, r.Code, r.Body)
		}
		ids = append(ids, fmt.Sprint(agID(r.Data())))
	}
	r := f.e.do(t, "POST", "/api/seo/scout/runs", f.edATok, body)
	if r.Code != 409 || !strings.Contains(r.Detail(), "scout runs "+strings.Join(ids, ", ")+" of this environment are queued or running") {
		t.Fatalf("a fourth run: %d %s", r.Code, r.Body)
	}
	if r := f.e.do(t, "POST", "/api/seo/scout/runs", f.adminTok, map[string]any{"environment_id": f.envB, "sources": []string{"ideas"}}); r.Code != 202 {
		t.Fatalf("another environment: %d %s", r.Code, r.Body)
	}
}
