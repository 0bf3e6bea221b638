// Package serp talks to a SerpApi-compatible keyword and search data API.
package serp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// DefaultBaseURL is SerpApi's address.
const DefaultBaseURL = "https://serpapi.com"

// Client calls the API with one key.
type Client struct {
	base string
	key  string
	http *http.Client
}

// New returns a client; an empty baseURL means DefaultBaseURL.
func New(baseURL, apiKey string, hc *http.Client) *Client {
	if baseURL == "" {
		baseURL = DefaultBaseURL
	}
	if hc == nil {
		hc = http.DefaultClient
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

// Account fetches the key's account: a call that costs no search credit and
// proves the key works.
func (c *Client) Account(ctx context.Context) (*Account, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/account.json?api_key="+url.QueryEscape(c.key), nil)
	if err != nil {
		return nil, fmt.Errorf("serp: %w", err)
	}
	res, err := c.http.Do(req)
	if err != nil {
		// The URL holds the key: report without it.
		return nil, fmt.Errorf("serp: request to %s failed", c.base)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("serp: %w", err)
	}
	var out struct {
		Account
		Error string `json:"error"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, fmt.Errorf("serp: %d: the API did not answer with JSON", res.StatusCode)
	}
	if res.StatusCode >= 300 || out.Error != "" {
		msg := out.Error
		if msg == "" {
			msg = http.StatusText(res.StatusCode)
		}
		return nil, fmt.Errorf("serp: %d %s", res.StatusCode, strings.ReplaceAll(msg, c.key, "***"))
	}
	return &out.Account, nil
}
