package server_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/copydesk/copydesk/server"
	"github.com/copydesk/copydesk/store"
)

// fakeSerp answers as SerpApi does (/search.json, engine google or
// google_autocomplete), for the key e.credential stores; fail, when set,
// makes every search answer 500 with SerpApi's {"error"}.
type fakeSerp struct {
	*httptest.Server
	mu      sync.Mutex
	queries []string // engine, q, hl, gl of each request
	fail    bool
}

func newFakeSerp(t *testing.T) *fakeSerp {
	f := &fakeSerp{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		f.mu.Lock()
		f.queries = append(f.queries, strings.Join([]string{q.Get("engine"), q.Get("q"), q.Get("hl"), q.Get("gl")}, "|"))
		fail := f.fail
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		switch {
		case q.Get("api_key") != "sk-test-good-key-0001":
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error": "Invalid API key. Your API key should be here: https://serpapi.com/manage-api-key"}`)
		case fail:
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprint(w, `{"error": "Our servers are overloaded, please retry."}`)
		case r.URL.Path == "/search.json" && q.Get("engine") == "google":
			fmt.Fprintf(w, `{"search_metadata": {"id": "1", "status": "Success"},
  "search_parameters": {"engine": "google", "q": %q, "hl": %q, "gl": %q},
  "organic_results": [{"position": 1, "title": "Cold brew guide", "link": "https://www.example.com/cold-brew", "snippet": "Steep 12 hours."}],
  "related_questions": [
    {"question": "Is cold brew stronger than coffee?", "snippet": "Usually.", "link": "https://a.example/1"},
    {"question": "How long does cold brew last?", "snippet": "Two weeks.", "link": "https://a.example/2"}
  ],
  "related_searches": [
    {"block_position": 1, "query": "cold brew ratio", "link": "https://www.google.com/search?q=cold+brew+ratio"},
    {"block_position": 1, "query": "Cold  Brew", "link": "https://www.google.com/search?q=cold+brew"},
    {"block_position": 1, "query": "cold brew recipe", "link": "https://www.google.com/search?q=cold+brew+recipe"}
  ]}`, q.Get("q"), q.Get("hl"), q.Get("gl"))
		case r.URL.Path == "/search.json" && q.Get("engine") == "google_autocomplete":
			fmt.Fprint(w, `{"search_metadata": {"id": "2", "status": "Success"},
  "suggestions": [
    {"value": "cold brew maker", "relevance": 1250, "type": "QUERY"},
    {"value": "cold brew ratio", "relevance": 700, "type": "QUERY"}
  ], "verbatim_relevance": 1300}`)
		default:
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error": "Unsupported search engine."}`)
		}
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeSerp) Queries() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.queries)
}

// postCase is one POST of a table of creates: who sends what, and the
// status (and detail) expected.
type postCase struct {
	name   string
	tok    string
	body   map[string]any
	status int
	detail string
}

// postCases sends each case to path as a subtest and returns the answers
// by name.
func postCases(t *testing.T, e *env, path string, cases []postCase) map[string]resp {
	t.Helper()
	out := map[string]resp{}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := e.do(t, "POST", path, c.tok, c.body)
			if r.Code != c.status || (c.detail != "" && r.Detail() != c.detail) {
				t.Fatalf("%d %s; want %d %q", r.Code, r.Body, c.status, c.detail)
			}
			out[c.name] = r
		})
	}
	return out
}

// aiIdeasAnswer is the model's answer of a run: numbered, with a heading,
// a repeat of a SERP idea in another case, and the phrase itself.
const aiIdeasAnswer = "Related searches:\n1. Cold Brew Ratio\n2. cold brew vs iced coffee\n3. \"cold brew concentrate\"\n" +
	"4. Is cold brew bad for you?\n5. cold brew\n"

func phraseCreate(t *testing.T, e *env, tok string, body map[string]any) map[string]any {
	t.Helper()
	r := e.do(t, "POST", "/api/search-phrases", tok, body)
	if r.Code != 201 {
		t.Fatalf("create phrase %v: %d %s", body, r.Code, r.Body)
	}
	return r.Data()
}

// phraseWait polls a phrase until its run has ended.
func phraseWait(t *testing.T, e *env, tok string, id int64) map[string]any {
	t.Helper()
	var last map[string]any
	agWaitFor(t, fmt.Sprintf("the run of phrase %d", id), func() bool {
		r := e.do(t, "GET", fmt.Sprintf("/api/search-phrases/%d", id), tok, nil)
		if r.Code != 200 {
			t.Fatalf("get phrase: %d %s", r.Code, r.Body)
		}
		last = r.Data()
		s := last["run_status"]
		return s != "queued" && s != "running"
	})
	return last
}

// phraseIdeas lists a phrase's ideas as "source/kind/idea".
func phraseIdeas(t *testing.T, e *env, tok string, id int64, query string) []string {
	t.Helper()
	r := e.do(t, "GET", fmt.Sprintf("/api/search-phrases/%d/ideas?per_page=200&%s", id, query), tok, nil)
	if r.Code != 200 {
		t.Fatalf("ideas: %d %s", r.Code, r.Body)
	}
	var out []string
	for _, it := range agItems(r.Data()) {
		out = append(out, fmt.Sprintf("%s/%s/%s", it["source"], it["kind"], it["idea"]))
	}
	return out
}

func TestSearchPhrasesCRUD(t *testing.T) {
	t.Parallel()
	f := agSetup(t)
	e := f.e
	de := "de"
	if _, err := e.app.DB.PutAISettings(context.Background(), store.AISettings{EnvironmentID: &f.envC, Language: &de}); err != nil {
		t.Fatal(err)
	}
	created := phraseCreate(t, e, f.edATok, map[string]any{"environment_id": f.envA, "phrase": "  Cold   Brew ", "locale": "en-US"})
	if created["phrase"] != "Cold Brew" || created["locale"] != "en-US" || created["is_active"] != true || created["run_status"] != "idle" ||
		created["last_run_at"] != nil {
		t.Fatalf("created: %v", created)
	}
	id := agID(created)
	got := postCases(t, e, "/api/search-phrases", []postCase{
		{"SameAfterNormalising", f.edATok, map[string]any{"environment_id": f.envA, "phrase": "cold brew", "locale": "en-US"}, 409,
			"phrase: this environment has this phrase in this locale already"},
		{"OtherLocale", f.edATok, map[string]any{"environment_id": f.envA, "phrase": "cold brew", "locale": "en-GB"}, 201, ""},
		{"LocaleFromSettings", f.edATok, map[string]any{"environment_id": f.envC, "phrase": "Kaltbrühkaffee"}, 201, ""},
		{"Inactive", f.edATok, map[string]any{"environment_id": f.envA, "phrase": "iced latte", "is_active": false}, 201, ""},
		{"BadLocale", f.edATok, map[string]any{"environment_id": f.envA, "phrase": "x", "locale": "English"}, 422,
			"locale: must be a language tag like en, de or pt-BR"},
		{"Blank", f.edATok, map[string]any{"environment_id": f.envA, "phrase": "   "}, 422, "phrase: must not be empty"},
		{"ControlCharacters", f.edATok, map[string]any{"environment_id": f.envA, "phrase": "a\u202eb"}, 422,
			"phrase: must not contain bidirectional override characters (U+202A to U+202E, U+2066 to U+2069)"},
		{"TooLong", f.edATok, map[string]any{"environment_id": f.envA, "phrase": strings.Repeat("a", 201)}, 422, "phrase: must be at most 200 characters"},
		{"EnvironmentNotGranted", f.edATok, map[string]any{"environment_id": f.envB, "phrase": "x"}, 404, "environment not found"},
		{"Viewer", f.viewATok, map[string]any{"environment_id": f.envA, "phrase": "x"}, 403, ""},
	})
	if r, ok := got["LocaleFromSettings"]; ok && r.Data()["locale"] != "de" {
		t.Errorf("locale %v, want the environment's language de", r.Data()["locale"])
	}

	list := func(tok, query string) []string {
		t.Helper()
		r := e.do(t, "GET", "/api/search-phrases?"+query, tok, nil)
		if r.Code != 200 {
			t.Fatalf("list %s: %d %s", query, r.Code, r.Body)
		}
		var out []string
		for _, it := range agItems(r.Data()) {
			out = append(out, it["phrase"].(string)+"/"+it["locale"].(string))
		}
		return out
	}
	lists := []struct {
		tok, query string
		want       []string
	}{
		{f.viewATok, "", []string{"iced latte/en", "cold brew/en-GB", "Cold Brew/en-US"}}, // newest first; envC is not the viewer's
		{f.edATok, "sort=phrase", []string{"Cold Brew/en-US", "cold brew/en-GB", "iced latte/en", "Kaltbrühkaffee/de"}},
		{f.edATok, "sort=-phrase", []string{"Kaltbrühkaffee/de", "iced latte/en", "cold brew/en-GB", "Cold Brew/en-US"}},
		{f.edATok, fmt.Sprintf("environment_id=%d&is_active=true&sort=created_at", f.envA), []string{"Cold Brew/en-US", "cold brew/en-GB"}},
		{f.edATok, "q=brew&is_active=true&sort=-created_at", []string{"cold brew/en-GB", "Cold Brew/en-US"}},
		{f.edBTok, "", nil},
	}
	for _, l := range lists {
		if got := list(l.tok, l.query); !slices.Equal(got, l.want) {
			t.Errorf("list %q: %q, want %q", l.query, got, l.want)
		}
	}
	for query, detail := range map[string]string{
		"sort=locale":                            "sort: must be one of: phrase, -phrase, created_at, -created_at, last_run_at, -last_run_at",
		fmt.Sprintf("environment_id=%d", f.envB): "environment not found",
	} {
		r := e.do(t, "GET", "/api/search-phrases?"+query, f.viewATok, nil)
		if r.Code/100 != 4 || r.Detail() != detail {
			t.Errorf("list %s: %d %s", query, r.Code, r.Body)
		}
	}

	path := fmt.Sprintf("/api/search-phrases/%d", id)
	if r := e.do(t, "PUT", path, f.edATok, map[string]any{"phrase": "cold brew", "locale": "en-GB"}); r.Code != 409 {
		t.Errorf("rename onto another phrase: %d %s", r.Code, r.Body)
	}
	r := e.do(t, "PUT", path, f.edATok, map[string]any{"phrase": "Nitro cold brew", "is_active": false})
	if r.Code != 200 || r.Data()["phrase"] != "Nitro cold brew" || r.Data()["locale"] != "en-US" || r.Data()["is_active"] != false {
		t.Errorf("update: %d %s", r.Code, r.Body)
	}
	for _, tok := range []string{f.edBTok} {
		if r := e.do(t, "GET", path, tok, nil); r.Code != 404 {
			t.Errorf("another environment's phrase: %d %s", r.Code, r.Body)
		}
		if r := e.do(t, "GET", path+"/ideas", tok, nil); r.Code != 404 {
			t.Errorf("another environment's ideas: %d %s", r.Code, r.Body)
		}
	}
	if r := e.do(t, "DELETE", path, f.edATok, nil); r.Code != 200 {
		t.Errorf("delete: %d %s", r.Code, r.Body)
	}
	if r := e.do(t, "GET", path, f.edATok, nil); r.Code != 404 {
		t.Errorf("after delete: %d %s", r.Code, r.Body)
	}
	// Bulk delete skips what the caller does not see and what is gone.
	mine := phraseCreate(t, e, f.edATok, map[string]any{"environment_id": f.envA, "phrase": "flat white"})
	theirs := phraseCreate(t, e, f.edBTok, map[string]any{"environment_id": f.envB, "phrase": "flat white"})
	r = e.do(t, "POST", "/api/search-phrases/bulk-delete", f.edATok, map[string]any{"ids": []int64{agID(mine), agID(theirs), id, 99999}})
	if r.Code != 200 || agNum(r.Data()["changed"]) != 1 {
		t.Errorf("bulk delete: %d %s", r.Code, r.Body)
	}
	if r := e.do(t, "GET", fmt.Sprintf("/api/search-phrases/%d", agID(theirs)), f.edBTok, nil); r.Code != 200 {
		t.Errorf("another environment's phrase was deleted: %d %s", r.Code, r.Body)
	}
	if r := e.do(t, "POST", "/api/search-phrases/bulk-delete", f.edATok, map[string]any{"ids": []int64{}}); r.Code != 422 {
		t.Errorf("no ids: %d %s", r.Code, r.Body)
	}
}

// A run asks SerpApi (search and autocomplete) and the model, stores each
// idea once per phrase whatever its case or spacing, first finder kept,
// and a second run adds only what is new.
func TestSearchPhraseRun(t *testing.T) {
	t.Parallel()
	f := agSetup(t)
	e := f.e
	startJobs(t, e)
	provider := fakeOpenAI(t, func(int, map[string]any) (int, string) { return 200, aiIdeasAnswer })
	agConfigure(t, e, provider.URL+"/v1")
	serp := newFakeSerp(t)
	e.credential(t, "serp", serp.URL, "", &f.envA)

	p := phraseCreate(t, e, f.edATok, map[string]any{"environment_id": f.envA, "phrase": "Cold brew", "locale": "en-US"})
	id := agID(p)
	r := e.do(t, "POST", fmt.Sprintf("/api/search-phrases/%d/run", id), f.edATok, nil)
	if r.Code != 202 || r.Data()["run_status"] != "queued" {
		t.Fatalf("run: %d %s", r.Code, r.Body)
	}
	done := phraseWait(t, e, f.viewATok, id)
	if done["run_status"] != "succeeded" || done["last_run_error"] != "" || done["last_run_at"] == nil || agNum(done["last_run_ideas"]) != 8 {
		t.Fatalf("after the run: %v", done)
	}
	want := []string{
		"ai/question/Is cold brew bad for you?",
		"ai/related/cold brew concentrate",
		"ai/related/cold brew vs iced coffee",
		"serp/autocomplete/cold brew maker",
		"serp/question/How long does cold brew last?",
		"serp/question/Is cold brew stronger than coffee?",
		"serp/related/cold brew ratio",
		"serp/related/cold brew recipe",
	}
	got := phraseIdeas(t, e, f.viewATok, id, "sort=idea")
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("ideas:\n got %q\nwant %q", got, want)
	}
	if q := serp.Queries(); !slices.Equal(q, []string{"google|Cold brew|en|us", "google_autocomplete|Cold brew|en|us"}) {
		t.Errorf("SerpApi was asked %q", q)
	}
	reqs := provider.Requests()
	if len(reqs) != 1 || !strings.Contains(fmt.Sprint(reqs[0]["messages"]), `"Cold brew"`) {
		t.Errorf("provider requests: %v", reqs)
	}
	// The model's call is metered as search, in the phrase's environment.
	r = e.do(t, "GET", fmt.Sprintf("/api/token-analytics/usage?source=search&environment_id=%d", f.envA), f.viewATok, nil)
	if r.Code != 200 || agNum(r.Data()["total"]) != 1 {
		t.Errorf("usage of source search: %d %s", r.Code, r.Body)
	}
	if ai := phraseIdeas(t, e, f.viewATok, id, "source=ai&sort=-idea"); !slices.Equal(ai, []string{"ai/question/Is cold brew bad for you?",
		"ai/related/cold brew vs iced coffee", "ai/related/cold brew concentrate"}) {
		t.Errorf("source=ai: %q", ai)
	}
	if r := e.do(t, "GET", fmt.Sprintf("/api/search-phrases/%d/ideas?sort=kind", id), f.viewATok, nil); r.Code != 422 {
		t.Errorf("unknown sort: %d %s", r.Code, r.Body)
	}

	// Again: nothing new, nothing doubled.
	if r := e.do(t, "POST", fmt.Sprintf("/api/search-phrases/%d/run", id), f.edATok, nil); r.Code != 202 {
		t.Fatalf("second run: %d %s", r.Code, r.Body)
	}
	again := phraseWait(t, e, f.edATok, id)
	if again["run_status"] != "succeeded" || agNum(again["last_run_ideas"]) != 0 {
		t.Errorf("second run: %v", again)
	}
	if n := len(phraseIdeas(t, e, f.edATok, id, "")); n != 8 {
		t.Errorf("%d ideas after the second run, want 8", n)
	}
}

// One source failing leaves the other's ideas and says which failed; none
// usable is a 409 before anything is queued; both failing fails the run.
func TestSearchPhraseRunSources(t *testing.T) {
	t.Parallel()
	f := agSetup(t, func(c *server.Config) { c.ProviderRetries = -1 })
	e := f.e
	startJobs(t, e)
	run := func(envID int64, phrase string) map[string]any {
		t.Helper()
		p := phraseCreate(t, e, f.adminTok, map[string]any{"environment_id": envID, "phrase": phrase})
		r := e.do(t, "POST", fmt.Sprintf("/api/search-phrases/%d/run", agID(p)), f.adminTok, nil)
		if r.Code != 202 {
			t.Fatalf("run %q: %d %s", phrase, r.Code, r.Body)
		}
		return phraseWait(t, e, f.adminTok, agID(p))
	}

	// Nothing configured: a 409 that says what to add, and no job.
	p := phraseCreate(t, e, f.adminTok, map[string]any{"environment_id": f.envB, "phrase": "espresso"})
	r := e.do(t, "POST", fmt.Sprintf("/api/search-phrases/%d/run", agID(p)), f.adminTok, nil)
	if r.Code != 409 || !strings.HasPrefix(r.Detail(), "nothing to ask: no serp credential is usable in this environment") {
		t.Errorf("nothing configured: %d %s", r.Code, r.Body)
	}
	if r := e.do(t, "GET", fmt.Sprintf("/api/search-phrases/%d", agID(p)), f.adminTok, nil); r.Data()["run_status"] != "idle" {
		t.Errorf("a refused run changed the phrase: %s", r.Body)
	}

	// SerpApi only (no AI provider): its ideas, and a note on the model.
	serp := newFakeSerp(t)
	e.credential(t, "serp", serp.URL, "", &f.envB)
	done := run(f.envB, "cold brew")
	if done["run_status"] != "succeeded" || agNum(done["last_run_ideas"]) != 5 ||
		!strings.HasPrefix(done["last_run_error"].(string), "ai: no AI provider is configured") {
		t.Errorf("serp only: %v", done)
	}

	// SerpApi failing, the model answering: the model's ideas, and a note
	// for each SerpApi call.
	provider := fakeOpenAI(t, func(int, map[string]any) (int, string) { return 200, aiIdeasAnswer })
	agConfigure(t, e, provider.URL+"/v1")
	serp.mu.Lock()
	serp.fail = true
	serp.mu.Unlock()
	done = run(f.envB, "nitro cold brew")
	if done["run_status"] != "succeeded" || agNum(done["last_run_ideas"]) != 5 ||
		done["last_run_error"] != "serp search: serp: 500 Our servers are overloaded, please retry.; serp autocomplete: serp: 500 Our servers are overloaded, please retry." {
		t.Errorf("serp failing: %v", done)
	}

	// The model failing and no SERP credential: the run fails, saying why.
	failing := fakeOpenAI(t, func(int, map[string]any) (int, string) { return 400, "model not found" })
	agConfigure(t, e, failing.URL+"/v1")
	done = run(f.envA, "iced latte")
	if done["run_status"] != "failed" || !strings.HasPrefix(done["last_run_error"].(string), "ai: ") ||
		!strings.Contains(done["last_run_error"].(string), "model not found") || agNum(done["last_run_ideas"]) != 0 {
		t.Errorf("model failing: %v", done)
	}
}
