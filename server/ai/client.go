package ai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Retry timing.
const (
	// firstBackoff doubles with each retry, up to maxBackoff, less up to a
	// quarter of jitter so that callers that failed together do not retry
	// together.
	firstBackoff = 500 * time.Millisecond
	maxBackoff   = 8 * time.Second
	// maxRetryAfter is the longest Retry-After a call waits for. A
	// provider that asks for longer (a rate limit reset in minutes) gets no
	// retry inside the call: it fails at once with a retryable error, and
	// the job runner, which has its own backoff, decides.
	maxRetryAfter = time.Minute
	// maxBody bounds a whole (non-streamed) response.
	maxBody = 32 << 20
)

// anthropicVersion is the Messages API version copydesk speaks.
const anthropicVersion = "2023-06-01"

// reply is the successful response of one attempt; Close ends the
// attempt and its timeout.
type reply struct {
	*http.Response
	ctx    context.Context // the attempt's: its deadline is the per-attempt timeout
	cancel context.CancelFunc
}

func (r *reply) Close() {
	_ = r.Body.Close() // a body that was read: its close error changes nothing
	r.cancel()
}

// post sends a JSON request body.
func (c *common) post(ctx context.Context, path string, body any, stream bool) (*reply, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("%s: encode request: %w", c.kind, err)
	}
	return c.send(ctx, http.MethodPost, path, b, stream)
}

// send makes a call to the provider's path (relative to the base URL): it
// makes attempts until one answers 2xx, which it returns unread, or the
// failure is not worth another attempt, or MaxRetries retries were made.
// Retried: 408, 409, 429, 5xx (as the provider's x-should-retry header
// says, when it says) and connection failures, after the provider's
// Retry-After or an exponential backoff. Once a reply is returned nothing
// is retried: a stream that started has been paid for.
func (c *common) send(ctx context.Context, method, path string, body []byte, stream bool) (*reply, error) {
	url := c.baseURL + "/" + path
	for attempt := 0; ; attempt++ {
		r, header, err := c.try(ctx, method, url, body, stream)
		if err == nil {
			return r, nil
		}
		wait, again := c.retryAfter(ctx, attempt, err, header)
		if !again {
			return nil, err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("%s: %w", c.kind, ctx.Err())
		case <-t.C:
		}
	}
}

// try makes one attempt. A failure comes with the response's header, when
// there was a response.
func (c *common) try(ctx context.Context, method, url string, body []byte, stream bool) (*reply, http.Header, error) {
	var actx context.Context
	var cancel context.CancelFunc
	if c.timeout > 0 {
		actx, cancel = context.WithTimeout(ctx, c.timeout)
	} else {
		actx, cancel = context.WithCancel(ctx)
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(actx, method, url, rd)
	if err != nil {
		err = c.fail(ctx, actx, err)
		cancel()
		return nil, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if stream {
		req.Header.Set("Accept", "text/event-stream")
	} else {
		req.Header.Set("Accept", "application/json")
	}
	req.Header.Set("User-Agent", "copydesk")
	c.auth(req.Header)
	res, err := c.http.Do(req)
	if err != nil {
		err = c.fail(ctx, actx, err)
		cancel()
		return nil, nil, err
	}
	if res.StatusCode >= 300 {
		// What came of the body before an error is enough for the message.
		b, _ := io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
		_ = res.Body.Close()
		cancel()
		if err := ctx.Err(); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", c.kind, err)
		}
		return nil, res.Header, c.apiError(res.StatusCode, b)
	}
	return &reply{Response: res, ctx: actx, cancel: cancel}, nil, nil
}

// call makes a plain (not streamed) call and decodes its JSON answer into
// out: a POST of body as JSON, or a GET when body is nil.
func (c *common) call(ctx context.Context, path string, body, out any) error {
	var r *reply
	var err error
	if body != nil {
		r, err = c.post(ctx, path, body, false)
	} else {
		r, err = c.send(ctx, http.MethodGet, path, nil, false)
	}
	if err != nil {
		return err
	}
	defer r.Close()
	b, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return c.fail(ctx, r.ctx, err)
	}
	if len(b) > maxBody {
		return &Error{Provider: c.kind, Message: "malformed response: larger than 32 MiB"}
	}
	if err := json.Unmarshal(b, out); err != nil {
		return c.fail(ctx, r.ctx, err)
	}
	return nil
}

// stream posts body for a streamed answer and reads its events: read
// turns each into the text it adds and whether it is the terminal event;
// the text goes to onDelta as it comes (an error from onDelta ends the
// stream and is returned as it is). A stream that ends before its
// terminal event fails with errStreamIncomplete: the answer may be
// shorter than what was sent. stream returns the whole text; when the
// stream fails after its answer began (cut off, garbage, onDelta's error,
// cancellation), it returns the text read so far with the error, and
// started true: that text has been paid for.
func (c *common) stream(ctx context.Context, path string, body any, onDelta func(string) error,
	read func(sseEvent) (text string, done bool, err error)) (text string, started bool, err error) {
	r, err := c.post(ctx, path, body, true)
	if err != nil {
		return "", false, err
	}
	defer r.Close()
	events := newSSEReader(r.Body)
	var all strings.Builder
	for {
		ev, err := events.Next()
		if err == io.EOF {
			err = errStreamIncomplete
		}
		if err != nil {
			return all.String(), true, c.fail(ctx, r.ctx, err)
		}
		text, done, err := read(ev)
		if err != nil {
			return all.String(), true, c.fail(ctx, r.ctx, err)
		}
		if text != "" {
			all.WriteString(text)
			if onDelta != nil {
				if err := onDelta(text); err != nil {
					return all.String(), true, err
				}
			}
		}
		if done {
			return all.String(), true, nil
		}
	}
}

// retryAfter says whether a failed attempt is tried again, and after how
// long.
func (c *common) retryAfter(ctx context.Context, attempt int, err error, header http.Header) (time.Duration, bool) {
	var e *Error
	if attempt >= c.maxRetries || !errors.As(err, &e) {
		return 0, false
	}
	again := e.Retryable
	switch strings.ToLower(header.Get("X-Should-Retry")) {
	case "true":
		again = true
	case "false":
		again = false
	}
	if !again {
		return 0, false
	}
	wait, asked := retryAfterHeader(header)
	if !asked {
		wait = backoff(attempt)
	}
	if asked && wait > maxRetryAfter {
		return 0, false
	}
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < wait {
		// The caller could not wait that long: fail now, retryable.
		return 0, false
	}
	return wait, true
}

// retryAfterHeader reads Retry-After-Ms (OpenAI, Anthropic) or Retry-After
// (seconds or an HTTP date).
func retryAfterHeader(h http.Header) (time.Duration, bool) {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 && !math.IsInf(ms, 0) {
			return durationOf(ms, time.Millisecond), true
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 && !math.IsInf(s, 0) {
		return durationOf(s, time.Second), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0), true
	}
	return 0, false
}

// durationOf is n units, saturated rather than overflowing.
func durationOf(n float64, unit time.Duration) time.Duration {
	if n*float64(unit) >= math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(n * float64(unit))
}

// backoff is the wait before retry attempt+1 when the provider named none.
func backoff(attempt int) time.Duration {
	d := maxBackoff
	if attempt < 5 {
		d = min(firstBackoff<<attempt, maxBackoff)
	}
	return d - time.Duration(rand.Int64N(int64(d/4)+1))
}
