// Package feed reads web sources: RSS and Atom feeds (with
// github.com/mmcdole/gofeed) and pages (readable text extracted with
// codeberg.org/readeck/go-readability/v2), over a conditional GET.
//
// A fetch goes through the HTTP client it is given, which is the
// server's outbound one (server/outbound): its address guard and its
// redirect limit apply to every hop. Fetch adds a time limit on the whole
// fetch and a size cap on the answer.
package feed

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	readability "codeberg.org/readeck/go-readability/v2"
	"github.com/mmcdole/gofeed"
	"golang.org/x/net/html"

	"github.com/copydesk/copydesk/server/outbound"
)

// Kinds of source.
const (
	RSS  = "rss"
	Atom = "atom"
	Page = "page"
)

// Defaults of Options.
const (
	DefaultMaxBytes = 5 << 20
	DefaultTimeout  = 30 * time.Second
	// DefaultMaxItems bounds the items taken from one feed: the newest
	// entries come first in every feed seen in practice.
	DefaultMaxItems = 200
)

// Lengths items are cut to (in characters).
const (
	MaxTitle   = 500
	MaxSummary = 2000
	MaxContent = 100_000
	MaxLink    = 2048
	MaxGUID    = 500
)

// UserAgent names copydesk to the sites it reads.
const UserAgent = "copydesk (feed reader; +https://github.com/copydesk/copydesk)"

// Options tunes a Fetcher.
type Options struct {
	MaxBytes int64         // the largest answer read; DefaultMaxBytes when 0
	Timeout  time.Duration // the whole fetch, redirects included; DefaultTimeout when 0
	MaxItems int           // DefaultMaxItems when 0
}

// Fetcher reads sources through one HTTP client.
type Fetcher struct {
	http *http.Client
	opt  Options
}

// New returns a fetcher over hc; nil means outbound.Default().
func New(hc *http.Client, opt Options) *Fetcher {
	if hc == nil {
		hc = outbound.Default()
	}
	if opt.MaxBytes <= 0 {
		opt.MaxBytes = DefaultMaxBytes
	}
	if opt.Timeout <= 0 {
		opt.Timeout = DefaultTimeout
	}
	if opt.MaxItems <= 0 {
		opt.MaxItems = DefaultMaxItems
	}
	return &Fetcher{http: hc, opt: opt}
}

// Request is one fetch: the address, the kind, and the validators of the
// last answer, sent as If-None-Match and If-Modified-Since.
type Request struct {
	URL          string
	Kind         string
	ETag         string
	LastModified string
}

// Result is what a fetch found.
type Result struct {
	Status int
	// NotModified: the server answered 304 to the validators; there are
	// no items, and the validators stay as they were.
	NotModified bool
	// ETag and LastModified are the new answer's validators.
	ETag         string
	LastModified string
	Items        []Item
}

// Item is a feed entry, or the readable text of a page.
type Item struct {
	GUID      string
	Link      string
	Title     string
	Summary   string // plain text
	Content   string // plain text; pages only
	Published *time.Time
}

// Key is what identifies the item within its source: its guid, else its
// link, else a digest of its title and summary.
func (it Item) Key() string {
	switch {
	case it.GUID != "":
		return it.GUID
	case it.Link != "":
		return it.Link
	}
	return digest(it.Title + "\n" + it.Summary)
}

// Error is a fetch that got an answer that is not a success, or that
// could not be read: Status is the HTTP status (0 when there was none).
type Error struct {
	Status  int
	Message string
	// RetryAfter is the Retry-After header of a 429 or 503 answer, as sent
	// (seconds, or an HTTP date): see RetryAfter.
	RetryAfter string
}

func (e *Error) Error() string {
	if e.Status == 0 {
		return e.Message
	}
	return fmt.Sprintf("HTTP %d: %s", e.Status, e.Message)
}

// Fetch fetches a source and reads its items. A failure is an error whose
// text says what went wrong in the source's terms (a refused address, a
// timeout, an HTTP status, XML that does not parse); an *Error carries the
// status when there was an answer.
func (f *Fetcher) Fetch(ctx context.Context, r Request) (*Result, error) {
	ctx, cancel := context.WithTimeout(ctx, f.opt.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.URL, nil)
	if err != nil {
		return nil, fmt.Errorf("the address cannot be fetched: %w", err)
	}
	req.Header.Set("User-Agent", UserAgent)
	switch r.Kind {
	case Page:
		req.Header.Set("Accept", "text/html,application/xhtml+xml;q=0.9,*/*;q=0.1")
	default:
		req.Header.Set("Accept", "application/rss+xml,application/atom+xml,application/xml;q=0.9,text/xml;q=0.9,*/*;q=0.1")
	}
	if r.ETag != "" {
		req.Header.Set("If-None-Match", r.ETag)
	}
	if r.LastModified != "" {
		req.Header.Set("If-Modified-Since", r.LastModified)
	}
	res, err := f.http.Do(req)
	if err != nil {
		return nil, transportError(ctx, err, f.opt.Timeout)
	}
	defer res.Body.Close()
	out := &Result{Status: res.StatusCode, ETag: validator(res.Header.Get("ETag")), LastModified: validator(res.Header.Get("Last-Modified"))}
	switch {
	case res.StatusCode == http.StatusNotModified:
		out.NotModified, out.ETag, out.LastModified = true, "", ""
		return out, nil
	case res.StatusCode < 200 || res.StatusCode > 299:
		fe := &Error{Status: res.StatusCode, Message: http.StatusText(res.StatusCode)}
		if res.StatusCode == http.StatusTooManyRequests || res.StatusCode == http.StatusServiceUnavailable {
			fe.RetryAfter = strings.TrimSpace(res.Header.Get("Retry-After"))
		}
		return nil, fe
	}
	body, err := f.read(res)
	if err != nil {
		return nil, transportError(ctx, err, f.opt.Timeout)
	}
	if r.Kind == Page {
		it, err := readPage(res, body)
		if err != nil {
			return nil, &Error{Status: res.StatusCode, Message: err.Error()}
		}
		out.Items = []Item{it}
		return out, nil
	}
	items, err := readFeed(body, res.Request.URL, f.opt.MaxItems)
	if err != nil {
		return nil, &Error{Status: res.StatusCode, Message: err.Error()}
	}
	out.Items = items
	return out, nil
}

// maxValidator bounds a validator kept for the next request: real ones are
// a quoted hash or a date, and a longer one is not worth sending back.
const maxValidator = 512

func validator(v string) string {
	if len(v) > maxValidator {
		return ""
	}
	return v
}

// read reads the answer's body up to the size cap: a larger one is an
// error, never a cut answer (which would parse as something else).
func (f *Fetcher) read(res *http.Response) ([]byte, error) {
	if res.ContentLength > f.opt.MaxBytes {
		return nil, &Error{Status: res.StatusCode, Message: fmt.Sprintf("the answer is %d bytes, more than the %d a source may send", res.ContentLength, f.opt.MaxBytes)}
	}
	body, err := io.ReadAll(io.LimitReader(res.Body, f.opt.MaxBytes+1))
	if err != nil {
		return nil, err
	}
	if int64(len(body)) > f.opt.MaxBytes {
		return nil, &Error{Status: res.StatusCode, Message: fmt.Sprintf("the answer is larger than the %d bytes a source may send", f.opt.MaxBytes)}
	}
	return body, nil
}

// transportError says why no answer came, without Go's wrapping: the
// address guard's refusal, the time limit, or the network's error (the
// redirect limit's among them).
func transportError(ctx context.Context, err error, timeout time.Duration) error {
	var fe *Error
	var addr *outbound.AddressError
	switch {
	case errors.As(err, &fe):
		return fe
	case errors.As(err, &addr):
		return addr
	case ctx.Err() != nil && errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("no complete answer within %s: %w", timeout, context.DeadlineExceeded)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return fmt.Errorf("the request failed: %w", err)
}

// readFeed parses an RSS, Atom (or JSON) feed; gofeed detects which.
func readFeed(body []byte, base *url.URL, limit int) ([]Item, error) {
	parsed, err := gofeed.NewParser().Parse(bytes.NewReader(body))
	if errors.Is(err, gofeed.ErrFeedTypeNotDetected) {
		return nil, errors.New("the answer is not an RSS or Atom feed")
	}
	if err != nil {
		return nil, fmt.Errorf("the feed cannot be read: %s", outbound.Excerpt(err.Error(), 300))
	}
	items := make([]Item, 0, min(len(parsed.Items), limit))
	for _, e := range parsed.Items {
		if len(items) == limit {
			break
		}
		it := Item{
			GUID:  cut(strings.TrimSpace(e.GUID), MaxGUID),
			Link:  cut(absolute(base, e.Link), MaxLink),
			Title: cut(collapse(Text(e.Title)), MaxTitle),
		}
		summary := e.Description
		if strings.TrimSpace(summary) == "" {
			summary = e.Content
		}
		it.Summary = cut(collapse(Text(summary)), MaxSummary)
		switch {
		case e.PublishedParsed != nil:
			t := e.PublishedParsed.UTC()
			it.Published = &t
		case e.UpdatedParsed != nil:
			t := e.UpdatedParsed.UTC()
			it.Published = &t
		}
		if it.GUID == "" && it.Link == "" && it.Title == "" && it.Summary == "" {
			continue // nothing to show or to tell apart
		}
		items = append(items, it)
	}
	return items, nil
}

// readPage extracts a page's readable text. Its guid is a digest of that
// text, so a page that changes is a new item and one that does not is
// the same.
func readPage(res *http.Response, body []byte) (Item, error) {
	if mt, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type")); mt != "" && mt != "text/html" && mt != "application/xhtml+xml" {
		return Item{}, fmt.Errorf("the answer is %s, not an HTML page", mt)
	}
	page := res.Request.URL
	parser := readability.NewParser()
	art, err := parser.Parse(bytes.NewReader(body), page)
	if err != nil {
		return Item{}, fmt.Errorf("the page cannot be read: %s", outbound.Excerpt(err.Error(), 300))
	}
	var text strings.Builder
	if art.Node != nil {
		if err := art.RenderText(&text); err != nil {
			return Item{}, fmt.Errorf("the page cannot be read: %w", err)
		}
	}
	content := strings.TrimSpace(text.String())
	if content == "" {
		return Item{}, errors.New("the page has no readable text")
	}
	it := Item{GUID: "sha256:" + digest(content), Link: cut(page.String(), MaxLink), Title: cut(collapse(art.Title()), MaxTitle),
		Summary: cut(collapse(art.Excerpt()), MaxSummary), Content: cut(content, MaxContent)}
	if t, err := art.PublishedTime(); err == nil {
		t = t.UTC()
		it.Published = &t
	}
	return it, nil
}

// Text is the text of an HTML fragment (feeds put HTML in titles and
// descriptions): tags dropped, entities decoded, scripts and styles
// left out.
func Text(fragment string) string {
	if !strings.ContainsAny(fragment, "<&") {
		return fragment
	}
	z := html.NewTokenizer(strings.NewReader(fragment))
	var b strings.Builder
	skip := 0
	for {
		switch z.Next() {
		case html.ErrorToken:
			return b.String()
		case html.TextToken:
			if skip == 0 {
				b.Write(z.Text())
			}
		case html.StartTagToken:
			name, _ := z.TagName()
			switch string(name) {
			case "script", "style":
				skip++
			case "br", "p", "div", "li":
				b.WriteByte(' ')
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			if n := string(name); (n == "script" || n == "style") && skip > 0 {
				skip--
			}
		}
	}
}

// collapse makes every run of white space one space, and trims.
func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }

// cut shortens s to at most n characters, at a character boundary, and
// makes it valid UTF-8.
func cut(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for j := range s {
		if i == n {
			return s[:j]
		}
		i++
	}
	return s
}

// absolute resolves a link against the feed's address; a link that does
// not parse is kept as it is.
func absolute(base *url.URL, link string) string {
	link = strings.TrimSpace(link)
	if link == "" || base == nil {
		return link
	}
	u, err := url.Parse(link)
	if err != nil {
		return link
	}
	return base.ResolveReference(u).String()
}

func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:16])
}

// maxRetryAfter bounds a Retry-After read, so that a silly one cannot
// overflow a time.Duration; the caller caps it far lower anyway.
const maxRetryAfter = 365 * 24 * time.Hour

// RetryAfter is how long the answer that failed with err asked to be left
// alone: the Retry-After of a 429 or 503, in seconds or as an HTTP date
// read against now (the caller's clock). False when it asked nothing, or
// nothing that parses, or a time already past.
func RetryAfter(err error, now time.Time) (time.Duration, bool) {
	var fe *Error
	if !errors.As(err, &fe) || fe.RetryAfter == "" {
		return 0, false
	}
	var d time.Duration
	if secs, perr := strconv.ParseInt(fe.RetryAfter, 10, 64); perr == nil {
		if secs <= 0 {
			return 0, false
		}
		d = time.Duration(min(secs, int64(maxRetryAfter/time.Second))) * time.Second
	} else if at, perr := http.ParseTime(fe.RetryAfter); perr == nil {
		d = at.Sub(now)
	}
	if d <= 0 {
		return 0, false
	}
	return min(d, maxRetryAfter), true
}

// Status is the HTTP status an error carries, if any.
func Status(err error) (int, bool) {
	var fe *Error
	if errors.As(err, &fe) && fe.Status != 0 {
		return fe.Status, true
	}
	return 0, false
}
