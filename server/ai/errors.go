package ai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"unicode/utf8"
)

// maxErrorBody bounds how much of an error response is kept for its message.
const maxErrorBody = 64 << 10

// maxMessage bounds Error.Message when it is made of something other than
// the provider's JSON message (an HTML error page from a proxy, say).
const maxMessage = 500

// errStreamIncomplete is what a stream that ends before its terminal event
// ("data: [DONE]", message_stop) fails with.
var errStreamIncomplete = errors.New("stream ended before it was complete (connection lost?)")

// exchange observes the HTTP attempts of one call, through the SDK's
// middleware option: it keeps the status and body of the last attempt's
// response when that is an error. The SDKs turn an error response they
// cannot parse (an OpenAI-compatible server answering {"error":"..."}, a
// proxy's HTML page) into a bare JSON error without the status; this is
// how the status and the provider's message survive. One exchange serves
// one call: the SDKs run the attempts of a call one after another, on the
// caller's goroutine.
type exchange struct {
	status int
	body   []byte
	// sseDone makes a successful response body fail with
	// errStreamIncomplete when it ends before an SSE "data: [DONE]" line
	// (OpenAI streams, whose SDK treats a clean EOF like [DONE]).
	sseDone bool
}

func (x *exchange) middleware(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	x.status, x.body = 0, nil
	res, err := next(req)
	if err != nil || res == nil {
		return res, err
	}
	x.status = res.StatusCode
	if res.Body == nil {
		return res, nil
	}
	if res.StatusCode >= 400 {
		body, readErr := io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
		_ = res.Body.Close()
		x.body = body
		var rest io.Reader = bytes.NewReader(body)
		if readErr != nil {
			rest = io.MultiReader(rest, errReader{readErr})
		}
		res.Body = io.NopCloser(rest)
		return res, nil
	}
	if x.sseDone && res.StatusCode < 300 {
		res.Body = &sseDoneReader{rc: res.Body}
	}
	return res, nil
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// sseDoneReader passes an SSE body through and reports an end before the
// "data: [DONE]" line as errStreamIncomplete, so that a stream cut short
// is an error and not a shorter answer.
type sseDoneReader struct {
	rc   io.ReadCloser
	line []byte // the first bytes of the current line
	done bool
}

const sseDoneLine = "data: [DONE]"

func (r *sseDoneReader) Read(p []byte) (int, error) {
	n, err := r.rc.Read(p)
	if !r.done {
		for _, b := range p[:n] {
			if b == '\n' || b == '\r' {
				r.endLine()
				if r.done {
					break
				}
				continue
			}
			if len(r.line) < len(sseDoneLine) {
				r.line = append(r.line, b)
			}
		}
	}
	if err == io.EOF && !r.done {
		r.endLine() // a last line without its newline
		if !r.done {
			err = errStreamIncomplete
		}
	}
	return n, err
}

func (r *sseDoneReader) endLine() {
	v, ok := bytes.CutPrefix(r.line, []byte("data:"))
	if ok {
		v = bytes.TrimPrefix(v, []byte(" "))
		r.done = bytes.HasPrefix(v, []byte("[DONE]"))
	}
	r.line = r.line[:0]
}

func (r *sseDoneReader) Close() error { return r.rc.Close() }

// providerError is what the SDK told about a failed call, before it
// becomes an *Error.
type providerError struct {
	status  int    // HTTP status; 0 for an error event inside a stream
	message string // the provider's message
	errType string // the provider's error type, e.g. "rate_limit_error"
}

// fail turns an error from an SDK call into what Provider methods return:
// the context's error when the caller's context is done, an *Error
// otherwise. apiErr, when not nil, is what the SDK's own error type
// carried.
func (c *common) fail(ctx context.Context, x *exchange, err error, apiErr *providerError) error {
	if err == nil {
		return nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		// The caller gave up: not the provider's fault, not to be retried.
		return fmt.Errorf("%s: %w", c.kind, ctxErr)
	}
	if apiErr == nil && x != nil && x.status >= 400 {
		// An error response the SDK could not parse.
		apiErr = &providerError{status: x.status}
	}
	if apiErr != nil {
		if apiErr.status == 0 {
			apiErr.status = statusForType(apiErr.errType)
		}
		msg := apiErr.message
		if msg == "" && x != nil && x.status >= 400 {
			msg = messageFromBody(x.body)
		}
		if msg == "" {
			msg = http.StatusText(apiErr.status)
		}
		if msg == "" {
			msg = "error from provider"
		}
		return &Error{
			Provider:  c.kind,
			Status:    apiErr.status,
			Message:   c.scrub(msg),
			Retryable: retryableStatus(apiErr.status),
		}
	}

	e := &Error{Provider: c.kind}
	var netErr net.Error
	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &netErr) && netErr.Timeout()):
		// The per-attempt timeout (the caller's context is not done).
		e.Message = "request timed out"
		if c.timeout > 0 {
			e.Message += " after " + c.timeout.String()
		}
		e.Retryable = true
	case errors.Is(err, errStreamIncomplete):
		e.Message = err.Error()
		e.Retryable = true
	case errors.Is(err, io.ErrUnexpectedEOF):
		// A body cut short: chunked encoding without its end, or JSON
		// without its end.
		e.Message = "response cut short (connection lost?): " + err.Error()
		e.Retryable = true
	case errors.As(err, &syntaxErr) || errors.As(err, &typeErr):
		e.Message = "malformed response: " + err.Error()
	case errors.As(err, &netErr) || errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed):
		e.Message = err.Error()
		e.Retryable = true
	default:
		e.Message = err.Error()
	}
	e.Message = c.scrub(truncate(e.Message))
	return e
}

// retryableStatus is the SDKs' own rule for retrying a status.
func retryableStatus(status int) bool {
	return status == http.StatusRequestTimeout ||
		status == http.StatusConflict ||
		status == http.StatusTooManyRequests ||
		status >= http.StatusInternalServerError
}

// statusForType gives the HTTP status that goes with an error type, for an
// error reported inside a stream after a 200.
func statusForType(t string) int {
	switch t {
	case "invalid_request_error":
		return http.StatusBadRequest
	case "authentication_error":
		return http.StatusUnauthorized
	case "permission_error":
		return http.StatusForbidden
	case "not_found_error":
		return http.StatusNotFound
	case "request_too_large":
		return http.StatusRequestEntityTooLarge
	case "rate_limit_error", "rate_limit_exceeded":
		return http.StatusTooManyRequests
	case "api_error", "server_error":
		return http.StatusInternalServerError
	case "timeout_error":
		return http.StatusGatewayTimeout
	case "overloaded_error":
		return 529
	}
	return 0
}

// messageFromBody finds the message in an error body: {"error":{"message":
// "..."}} (OpenAI, Anthropic), {"error":"..."} (Ollama and others),
// {"message":"..."} or {"detail":"..."}; a body that is not JSON is its
// own message.
func messageFromBody(body []byte) string {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return ""
	}
	var v map[string]json.RawMessage
	if json.Unmarshal(body, &v) != nil {
		if !utf8.Valid(body) {
			return ""
		}
		return truncate(string(body))
	}
	if raw, ok := v["error"]; ok {
		var inner map[string]json.RawMessage
		if json.Unmarshal(raw, &inner) == nil {
			if s := jsonString(inner["message"]); s != "" {
				return s
			}
		}
		if s := jsonString(raw); s != "" {
			return s
		}
	}
	for _, k := range []string{"message", "detail"} {
		if s := jsonString(v[k]); s != "" {
			return s
		}
	}
	return truncate(string(body))
}

// errorFields reads {"error":{"type","message"}} or {"type","message"}:
// the error JSON of an Anthropic error, or the data of an error event.
func errorFields(raw string) (errType, message string) {
	var v struct {
		Type    string          `json:"type"`
		Message string          `json:"message"`
		Code    json.RawMessage `json:"code"`
		Error   json.RawMessage `json:"error"`
	}
	if json.Unmarshal([]byte(raw), &v) != nil {
		return "", ""
	}
	if len(v.Error) > 0 {
		var inner struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		}
		if json.Unmarshal(v.Error, &inner) == nil {
			return inner.Type, inner.Message
		}
		return v.Type, jsonString(v.Error)
	}
	return v.Type, v.Message
}

func jsonString(raw json.RawMessage) string {
	var s string
	if len(raw) == 0 || json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return strings.TrimSpace(s)
}

func truncate(s string) string {
	s = strings.TrimSpace(s)
	if len(s) <= maxMessage {
		return s
	}
	cut := maxMessage
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// scrub replaces the API key, wherever it appears in s, with a masked
// form.
func (c *common) scrub(s string) string {
	if c.apiKey == "" || !strings.Contains(s, c.apiKey) {
		return s
	}
	return strings.ReplaceAll(s, c.apiKey, maskKey(c.apiKey))
}

// maskKey shows at most the first 3 and the last 4 characters of a long
// key, as the providers' own messages do ("sk-...wxyz"), and nothing of a
// short one.
func maskKey(key string) string {
	if len(key) < 16 {
		return "***"
	}
	return key[:3] + "..." + key[len(key)-4:]
}
