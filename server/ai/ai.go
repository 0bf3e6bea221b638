// Package ai is copydesk's one interface over the LLM providers: OpenAI's
// Chat Completions (and every server that speaks it: Ollama, OpenRouter,
// vLLM, LM Studio, Groq) and Anthropic's Messages API, each plain and
// streamed, with usage. It speaks both wire formats itself, over net/http
// and a small Server-Sent Events reader (sse.go): the official SDKs cost
// 18 MB of binary and most of a build's memory for the sliver of them
// copydesk used (docs/DECISIONS.md). It knows nothing of copydesk's
// database: the engine (server/engine) resolves credentials and settings,
// and records usage.
package ai

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Provider kinds.
const (
	OpenAI           = "openai"
	Anthropic        = "anthropic"
	OpenAICompatible = "openai_compatible"
)

// Message is one turn of a conversation.
type Message struct {
	Role    string // "user" or "assistant"
	Content string
}

// Request is one generation.
type Request struct {
	Model       string
	System      string
	Messages    []Message
	Temperature *float64 // nil: the provider's default
	MaxTokens   int      // 0: the provider's default (Anthropic requires one: 1024)
}

// Usage is what a call consumed.
type Usage struct {
	InputTokens  int64
	OutputTokens int64
	CachedTokens int64 // input tokens served from the provider's prompt cache
}

// Response is a finished generation.
type Response struct {
	Text  string
	Model string // as the provider reports it
	// StopReason is why the model stopped, in the provider's own words
	// (OpenAI's finish_reason, Anthropic's stop_reason); Stop gives it
	// copydesk's.
	StopReason string
	Usage      Usage
	// Partial marks the Response of a stream that failed after its answer
	// began: Text is what came before the failure, Usage what the
	// provider had reported by then (often nothing).
	Partial bool
}

// partial is what a stream that failed returns beside its error: out,
// marked Partial, if its answer had begun; nil otherwise.
func partial(out *Response, started bool) *Response {
	if !started {
		return nil
	}
	out.Partial = true
	return out
}

// Why a generation stopped, in copydesk's words: the stop reason of a run,
// a chat reply or a live generation.
const (
	StopEnd       = "stop"           // the model finished its answer (or met a stop sequence)
	StopLength    = "length"         // cut off at the max tokens limit: the answer is truncated
	StopFilter    = "content_filter" // the provider withheld the rest
	StopToolCalls = "tool_calls"     // the model asked for a tool
	StopCancelled = "cancelled"      // stopped or cancelled by someone, or by the server stopping
	StopError     = "error"          // the call failed
	StopOther     = "other"          // a reason the provider gave that copydesk does not know
)

// Stop is a provider's stop reason in copydesk's words: OpenAI's
// finish_reason (stop, length, content_filter, tool_calls,
// function_call), which OpenAI-compatible servers send too (Ollama's
// done_reason stop, length, load and unload reach its OpenAI API as
// finish_reason), and Anthropic's stop_reason (end_turn, stop_sequence,
// max_tokens, model_context_window_exceeded, refusal, tool_use, pause_turn).
// "" stays "": the provider said nothing.
func Stop(reason string) string {
	switch strings.ToLower(strings.TrimSpace(reason)) {
	case "":
		return ""
	case "stop", "end_turn", "stop_sequence", "eos", "load", "unload", "pause_turn":
		return StopEnd
	case "length", "max_tokens", "model_length", "model_context_window_exceeded":
		return StopLength
	case "content_filter", "refusal", "safety":
		return StopFilter
	case "tool_calls", "tool_use", "function_call":
		return StopToolCalls
	}
	return StopOther
}

// Provider generates text.
type Provider interface {
	// Kind is OpenAI, Anthropic or OpenAICompatible.
	Kind() string
	// Generate runs a request to completion.
	Generate(ctx context.Context, req Request) (*Response, error)
	// Stream runs a request and calls onDelta with each piece of text as it
	// arrives; an error from onDelta stops the stream and is returned. The
	// final Response carries the whole text and the usage. A stream that
	// fails after its answer began (cut off, an error event, onDelta's
	// error, cancellation) returns, with the error, a Response marked
	// Partial with the text streamed so far and whatever usage and model
	// the provider reported before the failure; a call that failed before
	// any answer returns nil.
	Stream(ctx context.Context, req Request, onDelta func(text string) error) (*Response, error)
	// Models lists the model ids the credential can use: a cheap call that
	// proves the credential works.
	Models(ctx context.Context) ([]string, error)
}

// Config builds a Provider.
type Config struct {
	Kind    string
	APIKey  string
	BaseURL string // required for OpenAICompatible; optional override otherwise (tests)
	// Timeout bounds one attempt of a request (default 2 minutes); the
	// caller's context bounds the whole call.
	Timeout time.Duration
	// MaxRetries is how often a 429, 5xx or connection failure is retried,
	// with exponential backoff (default 2).
	MaxRetries int
	// HTTPClient, when set, is used for every request (tests, proxies).
	HTTPClient *http.Client
}

// Error is a failed provider call, with the provider's own message. It
// never contains the API key.
type Error struct {
	Provider  string
	Status    int    // HTTP status from the provider; 0 when none (network, timeout)
	Type      string // the provider's error type ("rate_limit_error", "overloaded_error"), when it gave one
	Code      string // the provider's error code (OpenAI's "model_not_found"), when it gave one
	Message   string // the provider's message, or what went wrong
	Retryable bool   // worth trying again later (429, 5xx, timeout, network)
	// Err is the cause when callers may look for it with errors.As: an
	// *outbound.AddressError when the address guard refused the call.
	Err error
}

func (e *Error) Unwrap() error { return e.Err }

func (e *Error) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("%s: %d %s", e.Provider, e.Status, e.Message)
	}
	return e.Provider + ": " + e.Message
}

// ErrUnknownKind is returned by New for a provider kind it does not know.
var ErrUnknownKind = errors.New("ai: unknown provider kind")
