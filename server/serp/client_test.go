package serp_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/copydesk/copydesk/server/serp"
)

const key = "serp-test-key-0123456789abcdef"

// fakeSerpAPI answers as SerpApi does: /search.json with engine google
// (organic results, related searches, people also ask) or
// google_autocomplete (suggestions), and /account.json; a wrong key is a
// 401 with {"error"}. It records the query of each request.
type fakeSerpAPI struct {
	*httptest.Server
	mu      sync.Mutex
	queries []url.Values
}

func newFake(t *testing.T) *fakeSerpAPI {
	f := &fakeSerpAPI{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		f.mu.Lock()
		f.queries = append(f.queries, q)
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		if q.Get("api_key") != key {
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"error": "Invalid API key. Your API key should be here: https://serpapi.com/manage-api-key"}`))
			return
		}
		switch {
		case r.URL.Path == "/account.json":
			w.Write([]byte(`{"account_id":"1","api_key":"` + key + `","account_email":"ann@example.com","plan_name":"Developer","total_searches_left":4990,"this_month_usage":10}`))
		case r.URL.Path == "/search.json" && q.Get("engine") == "google" && q.Get("q") == "nothing at all":
			w.Write([]byte(`{"search_metadata":{"id":"1","status":"Success"},"search_parameters":{"engine":"google","q":"nothing at all"},` +
				`"search_information":{"organic_results_state":"Fully empty"},"error":"Google hasn't returned any results for this query."}`))
		case r.URL.Path == "/search.json" && q.Get("engine") == "google":
			w.Write([]byte(`{
  "search_metadata": {"id": "6561f0", "status": "Success", "json_endpoint": "https://serpapi.com/searches/x/6561f0.json", "total_time_taken": 1.2},
  "search_parameters": {"engine": "google", "q": "cold brew", "google_domain": "google.com", "hl": "en", "gl": "us", "device": "desktop"},
  "search_information": {"query_displayed": "cold brew", "total_results": 98100000},
  "organic_results": [
    {"position": 1, "title": "Cold Brew Coffee Recipe", "link": "https://www.example.com/cold-brew", "displayed_link": "https://www.example.com › cold-brew", "snippet": "Steep for 12 hours."},
    {"position": 2, "title": "What is cold brew?", "link": "https://en.example.org/wiki/Cold_brew", "snippet": "A method..."}
  ],
  "related_questions": [
    {"question": "Is cold brew stronger than coffee?", "snippet": "Usually, yes.", "title": "Cold brew strength", "link": "https://a.example/q1"},
    {"question": "How long does cold brew last?", "snippet": "Two weeks.", "link": "https://a.example/q2"}
  ],
  "related_searches": [
    {"block_position": 1, "query": "cold brew ratio", "link": "https://www.google.com/search?q=cold+brew+ratio"},
    {"block_position": 1, "query": "cold brew recipe", "link": "https://www.google.com/search?q=cold+brew+recipe"}
  ]
}`))
		case r.URL.Path == "/search.json" && q.Get("engine") == "google_autocomplete":
			w.Write([]byte(`{
  "search_metadata": {"id": "6561f1", "status": "Success"},
  "search_parameters": {"engine": "google_autocomplete", "q": "cold brew", "hl": "en", "gl": "us"},
  "suggestions": [
    {"value": "cold brew maker", "relevance": 1250, "type": "QUERY", "serpapi_link": "https://serpapi.com/search.json?engine=google_autocomplete&q=cold+brew+maker"},
    {"value": "cold brew concentrate", "relevance": 601, "type": "QUERY", "serpapi_link": "https://serpapi.com/search.json?engine=google_autocomplete&q=cold+brew+concentrate"}
  ],
  "verbatim_relevance": 1300
}`))
		default:
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"error": "Unsupported ` + q.Get("engine") + ` search engine."}`))
		}
	}))
	t.Cleanup(f.Close)
	return f
}

func TestSearchAndAutocomplete(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	c := serp.New(f.URL, key, nil)
	ctx := context.Background()
	q := serp.Query{Q: "cold brew", Language: "en", Country: "us"}
	res, err := c.Search(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Related) != 2 || res.Related[0].Query != "cold brew ratio" || len(res.Questions) != 2 ||
		res.Questions[1].Question != "How long does cold brew last?" || len(res.Organic) != 2 || res.Organic[1].Link != "https://en.example.org/wiki/Cold_brew" {
		t.Errorf("search: %+v", res)
	}
	sugg, err := c.Autocomplete(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if len(sugg) != 2 || sugg[0] != (serp.Suggestion{Value: "cold brew maker", Relevance: 1250, Type: "QUERY"}) {
		t.Errorf("autocomplete: %+v", sugg)
	}
	for i, want := range []url.Values{
		{"engine": {"google"}, "q": {"cold brew"}, "hl": {"en"}, "gl": {"us"}, "api_key": {key}},
		{"engine": {"google_autocomplete"}, "q": {"cold brew"}, "hl": {"en"}, "gl": {"us"}, "api_key": {key}},
	} {
		if got := f.queries[i]; got.Encode() != want.Encode() {
			t.Errorf("request %d: %s, want %s", i, got.Encode(), want.Encode())
		}
	}
	// Without a language or country, the API's defaults apply.
	if _, err := c.Search(ctx, serp.Query{Q: "cold brew"}); err != nil {
		t.Fatal(err)
	}
	if got := f.queries[2]; got.Has("hl") || got.Has("gl") {
		t.Errorf("hl or gl sent without a locale: %s", got.Encode())
	}
	// Google finding nothing is an empty answer, not an error.
	empty, err := c.Search(ctx, serp.Query{Q: "nothing at all"})
	if err != nil || len(empty.Related)+len(empty.Questions)+len(empty.Organic) != 0 {
		t.Errorf("no results: %+v, %v", empty, err)
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	ctx := context.Background()
	_, err := serp.New(f.URL, "serp-wrong-key-0123456789", nil).Search(ctx, serp.Query{Q: "x"})
	var se *serp.Error
	if !errors.As(err, &se) || se.Status != 401 || !strings.HasPrefix(se.Message, "Invalid API key.") {
		t.Errorf("wrong key: %v", err)
	}
	if strings.Contains(err.Error(), "serp-wrong-key") {
		t.Errorf("the error shows the key: %v", err)
	}
	notJSON := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
		w.Write([]byte("<html>bad gateway for " + r.URL.Query().Get("api_key") + "</html>"))
	}))
	t.Cleanup(notJSON.Close)
	_, err = serp.New(notJSON.URL, key, nil).Autocomplete(ctx, serp.Query{Q: "x"})
	if !errors.As(err, &se) || se.Status != 502 || strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "bad gateway for ***") {
		t.Errorf("not JSON: %v", err)
	}
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	_, err = serp.New(closed.URL, key, nil).Search(ctx, serp.Query{Q: "x"})
	if err == nil || strings.Contains(err.Error(), key) || !strings.HasPrefix(err.Error(), "serp: request to "+closed.URL+" failed:") {
		t.Errorf("unreachable: %v", err)
	}
	acct, err := serp.New(f.URL, key, nil).Account(ctx)
	if err != nil || acct.Email != "ann@example.com" || acct.SearchesLeft != 4990 {
		t.Errorf("account: %+v, %v", acct, err)
	}
}
