// Package wordpress talks to a WordPress site's REST API (/wp-json/wp/v2)
// with an application password.
package wordpress

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/copydesk/copydesk/server/outbound"
)

// Client is a WordPress REST API client for one site and user.
type Client struct {
	base     string
	username string
	password string
	http     *http.Client
}

// New returns a client for the site at baseURL (e.g. https://example.com),
// signing in as username with an application password; a nil hc is
// outbound.Default().
func New(baseURL, username, appPassword string, hc *http.Client) *Client {
	if hc == nil {
		hc = outbound.Default()
	}
	return &Client{base: strings.TrimRight(baseURL, "/"), username: username, password: appPassword, http: hc}
}

// User is the signed-in WordPress user.
type User struct {
	ID    int64    `json:"id"`
	Name  string   `json:"name"`
	Slug  string   `json:"slug"`
	Roles []string `json:"roles"`
}

// Error is a failed WordPress call with the site's own code and message,
// or the start of its answer when that is not WordPress's JSON.
type Error struct {
	Status  int
	Code    string
	Message string
}

func (e *Error) Error() string {
	if e.Code != "" {
		return fmt.Sprintf("wordpress: %d %s: %s", e.Status, e.Code, e.Message)
	}
	return fmt.Sprintf("wordpress: %d %s", e.Status, e.Message)
}

// Me returns the user the application password belongs to: a cheap call
// that proves the credential works.
func (c *Client) Me(ctx context.Context) (*User, error) {
	var u User
	if err := c.get(ctx, "/wp-json/wp/v2/users/me?context=edit", &u); err != nil {
		return nil, err
	}
	return &u, nil
}

func (c *Client) get(ctx context.Context, path string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return fmt.Errorf("wordpress: %w", err)
	}
	req.SetBasicAuth(c.username, c.password)
	req.Header.Set("Accept", "application/json")
	res, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("wordpress: %w", err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 4<<20))
	if err != nil {
		return fmt.Errorf("wordpress: %w", err)
	}
	if res.StatusCode >= 300 {
		var wpErr struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		}
		if json.Unmarshal(body, &wpErr) == nil && wpErr.Message != "" {
			return &Error{Status: res.StatusCode, Code: wpErr.Code, Message: wpErr.Message}
		}
		msg := outbound.Excerpt(string(body), 500)
		if msg == "" {
			msg = http.StatusText(res.StatusCode)
		}
		return &Error{Status: res.StatusCode, Message: msg}
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("wordpress: the site did not answer with JSON (is this the WordPress address?): %w", err)
	}
	return nil
}
