// Package wordpress talks to a WordPress site's REST API (wp/v2) with an
// application password. It honours what real WordPress 6.x does, which is
// easy to get wrong:
//
//   - Public endpoints ignore bad or unusable credentials and still answer
//     200 (with public data only): Me (users/me) is the credential check.
//   - Sites with plain permalinks answer only at ?rest_route=/wp/v2/...:
//     a 404 or an HTML answer at /wp-json/ switches the client there.
//   - Application passwords over plain HTTP work only on sites whose
//     environment type is local: a 401 over http says so.
//   - Unknown category or tag ids are dropped without an error: callers
//     check the terms of the post WordPress answers with (Missing).
//   - A duplicate term is a 400 term_exists whose data.term_id is the
//     existing term: CreateTerm returns that id.
//   - A publish with a future date becomes future: Post.Status is what
//     WordPress answered.
//   - Terms cannot be trashed: DeleteTerm sends force=true.
//   - Errors are {code, message, data: {status}}: *Error keeps them.
package wordpress

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/copydesk/copydesk/server/outbound"
)

// Client is a WordPress REST API client for one site and user. It is safe
// for concurrent use.
type Client struct {
	base     string
	username string
	password string
	http     *http.Client

	// Timeout bounds one attempt (default 30 s). A timeout is not retried:
	// the site may have done what was asked.
	Timeout time.Duration
	// Retries is how often a call that failed with 429, a 5xx or a network
	// error is tried again (default 2; negative: never). Creates are never
	// retried here: their outcome is unknown (see CreatePost).
	Retries int
	// Backoff is the wait before retry n (from 1); default 500 ms × 2^(n-1).
	Backoff func(n int) time.Duration

	// plain: the site answers only at ?rest_route=; shared with the
	// copies WithRetries makes, so one detection serves them all.
	plain *atomic.Bool
}

// New returns a client for the site at baseURL (e.g. https://example.com),
// signing in as username with an application password; a nil hc is
// outbound.Default(); the caller's guard on outbound addresses goes in hc.
func New(baseURL, username, appPassword string, hc *http.Client) *Client {
	if hc == nil {
		hc = outbound.Default()
	}
	return &Client{base: strings.TrimRight(baseURL, "/"), username: username, password: appPassword, http: hc, Retries: 2,
		plain: new(atomic.Bool)}
}

// WithRetries is a copy of the client that retries n times (negative:
// never). A caller with its own retry loop around several calls uses
// WithRetries(-1), so that one retry budget, not two nested ones, bounds
// what the site gets.
func (c *Client) WithRetries(n int) *Client {
	cp := *c
	cp.Retries = n
	return &cp
}

// Plain reports whether the client found the site on plain permalinks.
func (c *Client) Plain() bool { return c.plain.Load() }

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
	// TermID is data.term_id of a term_exists error: the existing term.
	TermID int64
	hint   string
}

func (e *Error) Error() string {
	msg := e.Message
	if e.hint != "" {
		msg += " (" + e.hint + ")"
	}
	if e.Code != "" {
		return fmt.Sprintf("wordpress: %d %s: %s", e.Status, e.Code, msg)
	}
	return fmt.Sprintf("wordpress: %d %s", e.Status, msg)
}

// ErrTimeout is wrapped by the error of an attempt that got no answer in
// time.
var ErrTimeout = errors.New("wordpress: no answer in time")

// Retryable reports whether err is worth another attempt: 429, 5xx and
// network errors; not a timeout (the site may have done it), not another
// answer.
func Retryable(err error) bool {
	var we *Error
	if errors.As(err, &we) {
		return we.Status == http.StatusTooManyRequests || we.Status >= 500
	}
	return err != nil && !errors.Is(err, ErrTimeout) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// Answered reports whether err is an answer of the site (an *Error): the
// site received the call and refused it, so it did nothing. Any other
// error leaves the outcome of a write unknown.
func Answered(err error) bool {
	var we *Error
	return errors.As(err, &we)
}

// Me returns the user the application password belongs to: the one call
// that proves the credential works (public endpoints answer 200 anyway).
func (c *Client) Me(ctx context.Context) (*User, error) {
	var u User
	if err := c.call(ctx, http.MethodGet, "/wp/v2/users/me", url.Values{"context": {"edit"}}, nil, &u, true); err != nil {
		return nil, err
	}
	return &u, nil
}

// Rendered is a field WordPress sends raw (context=edit) and rendered.
type Rendered struct {
	Raw      string `json:"raw"`
	Rendered string `json:"rendered"`
}

// Text is the raw text when WordPress sent it, else the rendered one.
func (r Rendered) Text() string {
	if r.Raw != "" {
		return r.Raw
	}
	return r.Rendered
}

// Post is a wp/v2 post as WordPress answers it.
type Post struct {
	ID            int64    `json:"id"`
	DateGMT       *string  `json:"date_gmt"` // null for a draft with no date
	ModifiedGMT   string   `json:"modified_gmt"`
	Slug          string   `json:"slug"`
	Status        string   `json:"status"`
	Link          string   `json:"link"`
	Title         Rendered `json:"title"`
	Content       Rendered `json:"content"`
	Excerpt       Rendered `json:"excerpt"`
	Categories    []int64  `json:"categories"`
	Tags          []int64  `json:"tags"`
	FeaturedMedia int64    `json:"featured_media"`
}

// TimeFormat is WordPress's GMT date format (no zone).
const TimeFormat = "2006-01-02T15:04:05"

// Modified is when WordPress last changed the post, in UTC.
func (p *Post) Modified() time.Time {
	t, _ := time.Parse(TimeFormat, p.ModifiedGMT)
	return t
}

// Missing lists the ids of want that the post does not carry: WordPress
// drops unknown term ids without an error.
func Missing(want, got []int64) []int64 {
	have := map[int64]bool{}
	for _, id := range got {
		have[id] = true
	}
	var out []int64
	for _, id := range want {
		if !have[id] {
			out = append(out, id)
		}
	}
	return out
}

// PostInput is what a create or update sends.
type PostInput struct {
	Title         string  `json:"title"`
	Content       string  `json:"content"`
	Excerpt       string  `json:"excerpt"`
	Slug          string  `json:"slug"`
	Status        string  `json:"status"`
	DateGMT       string  `json:"date_gmt,omitempty"`
	Categories    []int64 `json:"categories"`
	Tags          []int64 `json:"tags"`
	FeaturedMedia int64   `json:"featured_media,omitempty"`
}

// CreatePost creates a post. It is tried once: when it fails with anything
// but an answer of the site (Answered), the post may exist there, and the
// caller looks it up (FindPostBySlug) before creating it again.
func (c *Client) CreatePost(ctx context.Context, in PostInput) (*Post, error) {
	var p Post
	if err := c.call(ctx, http.MethodPost, "/wp/v2/posts", nil, in, &p, false); err != nil {
		return nil, err
	}
	return &p, nil
}

// UpdatePost overwrites a post's fields with in (a repeat does the same).
func (c *Client) UpdatePost(ctx context.Context, id int64, in PostInput) (*Post, error) {
	var p Post
	if err := c.call(ctx, http.MethodPost, "/wp/v2/posts/"+strconv.FormatInt(id, 10), nil, in, &p, true); err != nil {
		return nil, err
	}
	return &p, nil
}

// SetStatus changes only a post's status (unpublish: draft).
func (c *Client) SetStatus(ctx context.Context, id int64, status string) (*Post, error) {
	var p Post
	if err := c.call(ctx, http.MethodPost, "/wp/v2/posts/"+strconv.FormatInt(id, 10), nil, map[string]string{"status": status}, &p, true); err != nil {
		return nil, err
	}
	return &p, nil
}

// Post reads a post with its raw fields.
func (c *Client) Post(ctx context.Context, id int64) (*Post, error) {
	var p Post
	if err := c.call(ctx, http.MethodGet, "/wp/v2/posts/"+strconv.FormatInt(id, 10), url.Values{"context": {"edit"}}, nil, &p, true); err != nil {
		return nil, err
	}
	return &p, nil
}

// FindPostBySlug looks a post up by slug in every status (drafts
// included); nil when there is none. See FindPostsBySlug.
func (c *Client) FindPostBySlug(ctx context.Context, slug string) (*Post, error) {
	ps, err := c.FindPostsBySlug(ctx, slug)
	if err != nil || len(ps) == 0 {
		return nil, err
	}
	return &ps[0], nil
}

// FindPostsBySlug lists the posts with a slug in every status but trash,
// with their raw fields. WordPress makes a slug unique only when a post
// is published, so several drafts can share one.
func (c *Client) FindPostsBySlug(ctx context.Context, slug string) ([]Post, error) {
	var ps []Post
	q := url.Values{"slug": {slug}, "status": {"any"}, "context": {"edit"}}
	if err := c.call(ctx, http.MethodGet, "/wp/v2/posts", q, nil, &ps, true); err != nil {
		return nil, err
	}
	return ps, nil
}

// LatestPostID is the highest id of the site's posts in every status but
// trash; 0 when it has none. WordPress gives ids in increasing order, so
// a post made after this call has a greater id: what tells a post a
// create made from one the site had.
func (c *Client) LatestPostID(ctx context.Context) (int64, error) {
	var ps []Post
	q := url.Values{"status": {"any"}, "context": {"edit"}, "per_page": {"1"}, "orderby": {"id"}, "order": {"desc"}}
	if err := c.call(ctx, http.MethodGet, "/wp/v2/posts", q, nil, &ps, true); err != nil {
		return 0, err
	}
	if len(ps) == 0 {
		return 0, nil
	}
	return ps[0].ID, nil
}

// TrashPost moves a post to the trash.
func (c *Client) TrashPost(ctx context.Context, id int64) error {
	var p Post
	return c.call(ctx, http.MethodDelete, "/wp/v2/posts/"+strconv.FormatInt(id, 10), nil, nil, &p, true)
}

// Posts reads page (from 1) of every post, perPage at most 100, and the
// number of pages (X-WP-TotalPages).
func (c *Client) Posts(ctx context.Context, page, perPage int) ([]Post, int, error) {
	var ps []Post
	q := url.Values{"status": {"any"}, "context": {"edit"}, "page": {strconv.Itoa(page)}, "per_page": {strconv.Itoa(perPage)},
		"orderby": {"id"}, "order": {"asc"}}
	h, err := c.callHeader(ctx, http.MethodGet, "/wp/v2/posts", q, nil, &ps, true)
	if err != nil {
		return nil, 0, err
	}
	pages, _ := strconv.Atoi(h.Get("X-WP-TotalPages"))
	return ps, pages, nil
}

// Taxonomies of terms, as the REST routes name them.
const (
	Categories = "categories"
	Tags       = "tags"
)

// Term is a category or tag.
type Term struct {
	ID          int64  `json:"id"`
	Name        string `json:"name"`
	Slug        string `json:"slug"`
	Description string `json:"description,omitempty"`
	Parent      int64  `json:"parent,omitempty"`
}

// CreateTerm creates a term of taxonomy (Categories, Tags) and returns its
// id; when WordPress has one already (400 term_exists), that one's id.
func (c *Client) CreateTerm(ctx context.Context, taxonomy string, t Term) (int64, error) {
	var out Term
	body := map[string]any{"name": t.Name, "slug": t.Slug}
	if t.Description != "" {
		body["description"] = t.Description
	}
	if taxonomy == Categories && t.Parent > 0 {
		body["parent"] = t.Parent
	}
	err := c.call(ctx, http.MethodPost, "/wp/v2/"+taxonomy, nil, body, &out, true)
	var we *Error
	if errors.As(err, &we) && we.Code == "term_exists" && we.TermID > 0 {
		return we.TermID, nil
	}
	if err != nil {
		return 0, err
	}
	return out.ID, nil
}

// Terms reads the terms of taxonomy with the given ids (at most 100).
func (c *Client) Terms(ctx context.Context, taxonomy string, ids []int64) ([]Term, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.FormatInt(id, 10)
	}
	var out []Term
	q := url.Values{"include": {strings.Join(s, ",")}, "per_page": {"100"}, "context": {"edit"}}
	return out, c.call(ctx, http.MethodGet, "/wp/v2/"+taxonomy, q, nil, &out, true)
}

// DeleteTerm deletes a term for good: terms cannot be trashed, so a
// delete without force=true fails (501 rest_trash_not_supported).
func (c *Client) DeleteTerm(ctx context.Context, taxonomy string, id int64) error {
	var out json.RawMessage
	return c.call(ctx, http.MethodDelete, "/wp/v2/"+taxonomy+"/"+strconv.FormatInt(id, 10), url.Values{"force": {"true"}}, nil, &out, true)
}

// Media is an uploaded file.
type Media struct {
	ID        int64  `json:"id"`
	SourceURL string `json:"source_url"`
}

// UploadMedia uploads a file to the media library. Like a create, it is
// tried once.
func (c *Client) UploadMedia(ctx context.Context, filename, contentType string, data []byte) (*Media, error) {
	var m Media
	raw := rawBody{data: data, contentType: contentType,
		disposition: mime.FormatMediaType("attachment", map[string]string{"filename": filename})}
	if err := c.call(ctx, http.MethodPost, "/wp/v2/media", nil, raw, &m, false); err != nil {
		return nil, err
	}
	return &m, nil
}

// rawBody is a request body sent as is (a media upload).
type rawBody struct {
	data                     []byte
	contentType, disposition string
}

// maxAnswer bounds what is read of one answer (a page of 100 posts with
// their content).
const maxAnswer = 32 << 20

func (c *Client) call(ctx context.Context, method, route string, q url.Values, body, out any, retry bool) error {
	_, err := c.callHeader(ctx, method, route, q, body, out, retry)
	return err
}

// callHeader makes a call, retrying (when retry) 429, 5xx and network
// errors with backoff, and decodes the answer into out.
func (c *Client) callHeader(ctx context.Context, method, route string, q url.Values, body, out any, retry bool) (http.Header, error) {
	attempts := 1
	if retry && c.Retries > 0 {
		attempts += c.Retries
	}
	var err error
	var h http.Header
	for n := 1; n <= attempts; n++ {
		if n > 1 {
			select {
			case <-ctx.Done():
				return nil, err
			case <-time.After(c.backoff(n - 1)):
			}
		}
		h, err = c.attempt(ctx, method, route, q, body, out)
		if err == nil || !Retryable(err) {
			return h, err
		}
	}
	return nil, err
}

func (c *Client) backoff(n int) time.Duration {
	if c.Backoff != nil {
		return c.Backoff(n)
	}
	return 500 * time.Millisecond << (n - 1)
}

// attempt makes one call; when the site turns out to use plain permalinks
// (a 404 or an HTML answer under /wp-json/), it switches to ?rest_route=
// and makes the call there, once.
func (c *Client) attempt(ctx context.Context, method, route string, q url.Values, body, out any) (http.Header, error) {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	failed := func(err error) error {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return fmt.Errorf("wordpress: %s %s: %w after %s", method, route, ErrTimeout, timeout)
		}
		return fmt.Errorf("wordpress: %s %s: %w", method, route, err)
	}
	plain := c.plain.Load()
	res, data, err := c.send(actx, c.url(route, q, plain), method, body)
	if err != nil {
		return nil, failed(err)
	}
	if !plain && notREST(res, data) {
		// The call at ?rest_route= failing is the call's failure (a
		// network error is retried as any other), not the 404 before it:
		// that would say the site has no REST API.
		res2, data2, err := c.send(actx, c.url(route, q, true), method, body)
		if err != nil {
			return nil, failed(err)
		}
		if !notREST(res2, data2) {
			c.plain.Store(true)
			res, data = res2, data2
		}
	}
	return res.Header, c.decode(res, data, out)
}

// notREST reports an answer that did not come from the REST API: a 404
// that is not WordPress's JSON, or HTML (the site's front page or its 404
// page), which is what /wp-json/ gives on plain permalinks.
func notREST(res *http.Response, data []byte) bool {
	if isJSON(res) {
		return false
	}
	return res.StatusCode == http.StatusNotFound || strings.HasPrefix(res.Header.Get("Content-Type"), "text/html")
}

func isJSON(res *http.Response) bool {
	ct, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type"))
	return ct == "application/json" || strings.HasSuffix(ct, "+json")
}

// url is where route answers: /wp-json/<route>, or ?rest_route=<route> on
// plain permalinks.
func (c *Client) url(route string, q url.Values, plain bool) string {
	if plain {
		u := c.base + "/?rest_route=" + route
		if len(q) > 0 {
			u += "&" + q.Encode()
		}
		return u
	}
	u := c.base + "/wp-json" + route
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return u
}

func (c *Client) send(ctx context.Context, u, method string, body any) (*http.Response, []byte, error) {
	var rd io.Reader
	contentType, disposition := "", ""
	switch b := body.(type) {
	case nil:
	case rawBody:
		rd, contentType, disposition = bytes.NewReader(b.data), b.contentType, b.disposition
	default:
		j, err := json.Marshal(b)
		if err != nil {
			return nil, nil, err
		}
		rd, contentType = bytes.NewReader(j), "application/json"
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, nil, err
	}
	req.SetBasicAuth(c.username, c.password)
	req.Header.Set("Accept", "application/json")
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if disposition != "" {
		req.Header.Set("Content-Disposition", disposition)
	}
	res, err := c.http.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, maxAnswer))
	if err != nil {
		return nil, nil, err
	}
	return res, data, nil
}

// decode turns an answer into out, or into an *Error with WordPress's own
// code and message.
func (c *Client) decode(res *http.Response, data []byte, out any) error {
	if res.StatusCode >= 300 {
		var wpErr struct {
			Code    string `json:"code"`
			Message string `json:"message"`
			Data    struct {
				Status int   `json:"status"`
				TermID int64 `json:"term_id"`
			} `json:"data"`
		}
		e := &Error{Status: res.StatusCode, Message: http.StatusText(res.StatusCode)}
		if json.Unmarshal(data, &wpErr) == nil && wpErr.Message != "" {
			e.Code, e.Message, e.TermID = wpErr.Code, wpErr.Message, wpErr.Data.TermID
		} else if res.StatusCode == http.StatusNotFound {
			e.Message = "no WordPress REST API at " + c.base + " (neither /wp-json/ nor ?rest_route= answered): is this the site's address?"
		} else if excerpt := outbound.Excerpt(string(data), 500); excerpt != "" {
			e.Message = excerpt // not WordPress's JSON (a proxy's page, say): what it said
		}
		if res.StatusCode == http.StatusUnauthorized && strings.HasPrefix(c.base, "http://") {
			e.hint = "over plain http, WordPress accepts application passwords only when its environment type is local " +
				"(WP_ENVIRONMENT_TYPE); use https, or check the username and application password"
		}
		return e
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("wordpress: the site did not answer with JSON (is this the WordPress address?): %w", err)
	}
	return nil
}
