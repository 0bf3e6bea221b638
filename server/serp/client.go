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
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/account.json?api_key="+url.QueryEscape(c.key), nil)
	if err != nil {
		return nil, fmt.Errorf("serp: %w", err)
	}
	res, err := c.http.Do(req)
	if err != nil {
		// The URL holds the key: report the cause without it.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("serp: request to %s failed: %s", c.base, c.hide(err.Error()))
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("serp: %s", c.hide(err.Error()))
	}
	var out struct {
		Account
		Error string `json:"error"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		msg := outbound.Excerpt(c.hide(string(body)), 500)
		if res.StatusCode < 300 || msg == "" {
			msg = strings.TrimSpace("the API did not answer with JSON: " + msg)
		}
		return nil, &Error{Status: res.StatusCode, Message: msg}
	}
	if res.StatusCode >= 300 || out.Error != "" {
		msg := out.Error
		if msg == "" {
			msg = http.StatusText(res.StatusCode)
		}
		return nil, &Error{Status: res.StatusCode, Message: c.hide(msg)}
	}
	return &out.Account, nil
}

// hide replaces the key, wherever the API or the transport repeats it.
func (c *Client) hide(s string) string {
	if c.key == "" {
		return s
	}
	return strings.ReplaceAll(s, c.key, "***")
}
