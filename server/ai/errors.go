package ai

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/copydesk/copydesk/server/outbound"
)

// maxErrorBody bounds how much of an error response is kept for its message.
const maxErrorBody = 64 << 10

// maxMessage bounds Error.Message when it is made of something other than
// the provider's JSON message (an HTML error page from a proxy, say).
const maxMessage = 500

// errStreamIncomplete is what a stream that ends before its terminal event
// ("data: [DONE]", message_stop) fails with.
var errStreamIncomplete = errors.New("stream ended before it was complete (connection lost?)")

// errorInfo is what a provider's error JSON says.
type errorInfo struct {
	errType string // "rate_limit_error", "insufficient_quota", ...
	code    string // OpenAI's code: "rate_limit_exceeded", "model_not_found", ...
	message string
}

// errorFields reads {"error":{"type","code","message"}} (OpenAI, Anthropic,
// and the data of an error event in a stream) or {"type","code","message"}.
func errorFields(raw []byte) errorInfo {
	var v struct {
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
		Message json.RawMessage `json:"message"`
		Error   json.RawMessage `json:"error"`
	}
	if json.Unmarshal(raw, &v) != nil {
		return errorInfo{}
	}
	if len(v.Error) > 0 {
		var inner struct {
			Type    string          `json:"type"`
			Code    json.RawMessage `json:"code"`
			Message json.RawMessage `json:"message"`
		}
		if json.Unmarshal(v.Error, &inner) == nil {
			return errorInfo{errType: inner.Type, code: jsonScalar(inner.Code), message: jsonString(inner.Message)}
		}
		return errorInfo{errType: v.Type, message: jsonString(v.Error)} // {"error":"..."}
	}
	return errorInfo{errType: v.Type, code: jsonScalar(v.Code), message: jsonString(v.Message)}
}

// apiError is the *Error of an error response, or of an error event in a
// stream that started with a 200 (status 0: the status is the error
// type's).
func (c *common) apiError(status int, body []byte) *Error {
	info := errorFields(body)
	if status == 0 {
		status = statusForType(info.errType)
		if status == 0 {
			status = statusForType(info.code)
		}
	}
	msg := info.message
	if msg == "" {
		msg = messageFromBody(body)
	}
	if msg == "" {
		msg = http.StatusText(status)
	}
	if msg == "" {
		msg = "error from provider"
	}
	return &Error{
		Provider: c.kind,
		Status:   status,
		Type:     info.errType,
		Code:     info.code,
		Message:  c.scrub(msg),
		// OpenAI answers 429 both for a rate limit (wait and retry) and
		// for an account without credit (nothing to wait for).
		Retryable: retryableStatus(status) && info.errType != "insufficient_quota" && info.code != "insufficient_quota",
	}
}

// fail turns the error of a call into what Provider methods return: the
// context's error when the caller's context is done, an *Error otherwise.
// attempt is the context of the attempt that failed, whose deadline is
// the per-attempt timeout.
func (c *common) fail(ctx, attempt context.Context, err error) error {
	if err == nil {
		return nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		// The caller gave up: not the provider's fault, not to be retried.
		return fmt.Errorf("%s: %w", c.kind, ctxErr)
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	e = &Error{Provider: c.kind}
	var netErr net.Error
	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	var addrErr *outbound.AddressError
	var certErr *tls.CertificateVerificationError
	var authErr x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	switch {
	case errors.As(err, &addrErr):
		// The address guard: the base URL points where no call may go.
		e.Message, e.Err = addrErr.Error(), addrErr
	case attempt != nil && errors.Is(attempt.Err(), context.DeadlineExceeded),
		errors.Is(err, context.DeadlineExceeded),
		errors.As(err, &netErr) && netErr.Timeout():
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
	case errors.Is(err, outbound.ErrTooManyRedirects),
		errors.As(err, &certErr), errors.As(err, &authErr), errors.As(err, &hostErr):
		// Trying again meets the same redirects or certificate.
		e.Message = err.Error()
	case errors.As(err, &netErr) || errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed):
		e.Message = err.Error()
		e.Retryable = true
	default:
		e.Message = err.Error()
	}
	e.Message = c.scrub(truncate(e.Message))
	return e
}

// retryableStatus is the statuses worth another attempt: the SDKs' rule,
// kept.
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

// messageFromBody finds the message in an error body of another shape:
// {"error":"..."} (Ollama and others), {"message":"..."} or
// {"detail":"..."}; a body that is not JSON is its own message.
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
	for _, k := range []string{"error", "message", "detail"} {
		if s := jsonString(v[k]); s != "" {
			return s
		}
	}
	return truncate(string(body))
}

func jsonString(raw json.RawMessage) string {
	var s string
	if len(raw) == 0 || json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return strings.TrimSpace(s)
}

// jsonScalar reads a string or a number (OpenAI-compatible servers send
// error codes as either).
func jsonScalar(raw json.RawMessage) string {
	if s := jsonString(raw); s != "" {
		return s
	}
	var n json.Number
	if len(raw) > 0 && json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	return ""
}

func truncate(s string) string { return outbound.Excerpt(s, maxMessage) }

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
