// Package serp talks to a SerpApi-compatible keyword and search data API.
package serp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"unicode"

	"github.com/copydesk/copydesk/server/outbound"
)

// DefaultBaseURL is SerpApi's address.
const DefaultBaseURL = "https://serpapi.com"

// Client calls the API with one key.
type Client struct {
	base string
	key  string
	http *http.Client
}

// New returns a client; an empty baseURL means DefaultBaseURL, a nil hc
// outbound.Default().
func New(baseURL, apiKey string, hc *http.Client) *Client {
	if baseURL == "" {
		baseURL = DefaultBaseURL
	}
	if hc == nil {
		hc = outbound.Default()
	}
	return &Client{base: strings.TrimRight(baseURL, "/"), key: apiKey, http: hc}
}

// Account is the account the key belongs to.
type Account struct {
	Email         string `json:"account_email"`
	PlanName      string `json:"plan_name"`
	SearchesLeft  int64  `json:"total_searches_left"`
	ThisMonthUsed int64  `json:"this_month_usage"`
}

// Error is an answer of the API that is not a success: its status and
// its message (the API's "error", or the start of a body that is not
// JSON). It never holds the key.
type Error struct {
	Status  int
	Message string
}

func (e *Error) Error() string { return fmt.Sprintf("serp: %d %s", e.Status, e.Message) }

// Account fetches the key's account: a call that costs no search credit and
// proves the key works.
func (c *Client) Account(ctx context.Context) (*Account, error) {
	var out Account
	if err := c.get(ctx, "/account.json", url.Values{}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Query is one search: the query, and the language (hl) and country (gl)
// Google answers for; empty ones are left to the API's defaults.
type Query struct {
	Q        string
	Language string // hl: en, de, pt-br
	Country  string // gl: us, de, br
}

// QueryIn is the query of phrase in a locale or language tag (en-US,
// pt-BR, de): its language as hl, its region, when it has one of two
// letters, as gl.
func QueryIn(phrase, locale string) Query {
	q := Query{Q: phrase}
	parts := strings.Split(locale, "-")
	q.Language = strings.ToLower(parts[0])
	for _, p := range parts[1:] {
		if len(p) == 2 && unicode.IsLetter(rune(p[0])) && unicode.IsLetter(rune(p[1])) {
			q.Country = strings.ToLower(p)
			break
		}
	}
	return q
}

// Search is what a Google search answered, the parts copydesk reads.
type Search struct {
	Organic []Organic `json:"organic_results"`
	// Related are the "related searches" at the foot of the page.
	Related []struct {
		Query string `json:"query"`
	} `json:"related_searches"`
	// Questions are the "people also ask" box.
	Questions []struct {
		Question string `json:"question"`
		Snippet  string `json:"snippet"`
	} `json:"related_questions"`
}

// Organic is a result of the first page.
type Organic struct {
	Position int    `json:"position"`
	Title    string `json:"title"`
	Link     string `json:"link"`
	Snippet  string `json:"snippet"`
}

// Search runs a Google search (engine google): one search credit.
func (c *Client) Search(ctx context.Context, q Query) (*Search, error) {
	var out Search
	if err := c.get(ctx, "/search.json", q.values("google"), &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Suggestion is one completion of Google's autocomplete.
type Suggestion struct {
	Value     string `json:"value"`
	Relevance int    `json:"relevance"`
	Type      string `json:"type"`
}

// Autocomplete asks Google's autocomplete for completions of q.Q (engine
// google_autocomplete): one search credit.
func (c *Client) Autocomplete(ctx context.Context, q Query) ([]Suggestion, error) {
	var out struct {
		Suggestions []Suggestion `json:"suggestions"`
	}
	if err := c.get(ctx, "/search.json", q.values("google_autocomplete"), &out); err != nil {
		return nil, err
	}
	return out.Suggestions, nil
}

func (q Query) values(engine string) url.Values {
	v := url.Values{"engine": {engine}, "q": {q.Q}}
	if q.Language != "" {
		v.Set("hl", q.Language)
	}
	if q.Country != "" {
		v.Set("gl", q.Country)
	}
	return v
}

// noResults is the error SerpApi answers, with a 200, for a search Google
// found nothing for: an empty answer, not a failure.
const noResults = "Google hasn't returned any results for this query."

// get calls path with params and the key, and decodes a successful answer
// into out. An answer that is not a success is an *Error.
func (c *Client) get(ctx context.Context, path string, params url.Values, out any) error {
	params.Set("api_key", c.key)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path+"?"+params.Encode(), nil)
	if err != nil {
		return fmt.Errorf("serp: %s", c.hide(err.Error()))
	}
	res, err := c.http.Do(req)
	if err != nil {
		// The URL holds the key: report the cause without it.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("serp: request to %s failed: %w", c.base, hidden{err, c.hide(err.Error())})
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, maxAnswer))
	if err != nil {
		return fmt.Errorf("serp: %s", c.hide(err.Error()))
	}
	var status struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal(body, &status); err != nil {
		msg := outbound.Excerpt(c.hide(string(body)), 500)
		if res.StatusCode < 300 || msg == "" {
			msg = strings.TrimSpace("the API did not answer with JSON: " + msg)
		}
		return &Error{Status: res.StatusCode, Message: msg}
	}
	if res.StatusCode >= 300 || (status.Error != "" && status.Error != noResults) {
		msg := status.Error
		if msg == "" {
			msg = http.StatusText(res.StatusCode)
		}
		return &Error{Status: res.StatusCode, Message: c.hide(msg)}
	}
	if err := json.Unmarshal(body, out); err != nil {
		return &Error{Status: res.StatusCode, Message: "the API's answer does not have the expected shape: " + c.hide(err.Error())}
	}
	return nil
}

// maxAnswer bounds what is read of one answer: a search's JSON is some
// hundred kilobytes.
const maxAnswer = 8 << 20

// hidden is a transport error whose text has the key hidden, still
// unwrapping to the original (an *outbound.AddressError, a timeout).
type hidden struct {
	err  error
	text string
}

func (h hidden) Error() string { return h.text }
func (h hidden) Unwrap() error { return h.err }

// hide replaces the key, wherever the API or the transport repeats it.
func (c *Client) hide(s string) string {
	if c.key == "" {
		return s
	}
	return strings.ReplaceAll(s, c.key, "***")
}
