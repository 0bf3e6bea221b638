package ai

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/copydesk/copydesk/server/outbound"
)

// Defaults New applies to a Config.
const (
	// DefaultTimeout bounds one attempt when Config.Timeout is 0.
	DefaultTimeout = 2 * time.Minute
	// DefaultMaxRetries is used when Config.MaxRetries is 0.
	DefaultMaxRetries = 2
	// NoRetries, as Config.MaxRetries, makes every call a single attempt
	// (0 selects DefaultMaxRetries).
	NoRetries = -1
	// DefaultAnthropicMaxTokens is the max_tokens sent to Anthropic when
	// Request.MaxTokens is 0: the Messages API requires one.
	DefaultAnthropicMaxTokens = 1024
)

// ErrInvalidConfig is wrapped by the errors New returns for a Config it
// cannot use (other than an unknown kind, which is ErrUnknownKind).
var ErrInvalidConfig = errors.New("ai: invalid provider config")

// ErrInvalidRequest is wrapped by the errors Generate and Stream return for
// a Request they refuse before calling the provider.
var ErrInvalidRequest = errors.New("ai: invalid request")

// New builds the Provider for cfg.Kind.
//
// APIKey is required for OpenAI and Anthropic; OpenAICompatible allows an
// empty key (a local Ollama), and then sends no Authorization header.
// Surrounding whitespace of the key is ignored. BaseURL is required for
// OpenAICompatible and otherwise replaces the provider's public endpoint.
// For the OpenAI kinds it is the API root with its version, to which
// "chat/completions" and "models" are added (https://api.openai.com/v1,
// http://localhost:11434/v1); for Anthropic it is the host, to which
// "v1/messages" and "v1/models" are added (https://api.anthropic.com).
//
// Timeout 0 means DefaultTimeout and a negative Timeout no per-attempt
// limit. The limit covers an attempt from its request to the end of its
// response body: for Stream, the whole stream. MaxRetries 0 means
// DefaultMaxRetries and a negative MaxRetries (NoRetries) a single
// attempt. Retried are 408, 409, 429, 5xx and connection failures (as the
// provider's x-should-retry header says, when it says), after the wait the
// provider asks for in Retry-After-Ms or Retry-After, or else an
// exponential backoff with jitter (0.5 s doubling up to 8 s). A requested
// wait longer than a minute, or than the caller's context has left, is not
// waited for: the call fails at once with a retryable *Error. A stream
// that has started is never retried.
//
// Nothing comes from the process environment (OPENAI_API_KEY,
// ANTHROPIC_BASE_URL, ...): a Provider talks only to cfg.BaseURL with
// cfg.APIKey. An Anthropic key is not sent on to another host when a
// response redirects there.
func New(cfg Config) (Provider, error) {
	cfg.APIKey = strings.TrimSpace(cfg.APIKey)
	cfg.BaseURL = strings.TrimSpace(cfg.BaseURL)
	switch cfg.Kind {
	case OpenAI, OpenAICompatible, Anthropic:
	default:
		return nil, fmt.Errorf("%w: %q", ErrUnknownKind, cfg.Kind)
	}
	if cfg.APIKey == "" && cfg.Kind != OpenAICompatible {
		return nil, fmt.Errorf("%w: %s needs an API key", ErrInvalidConfig, cfg.Kind)
	}
	if cfg.BaseURL == "" && cfg.Kind == OpenAICompatible {
		return nil, fmt.Errorf("%w: %s needs a base URL (e.g. http://localhost:11434/v1)", ErrInvalidConfig, cfg.Kind)
	}
	if cfg.BaseURL != "" {
		if err := checkBaseURL(cfg.BaseURL); err != nil {
			return nil, fmt.Errorf("%w: base URL: %v", ErrInvalidConfig, err)
		}
	}
	switch {
	case cfg.Timeout == 0:
		cfg.Timeout = DefaultTimeout
	case cfg.Timeout < 0:
		cfg.Timeout = 0
	}
	switch {
	case cfg.MaxRetries == 0:
		cfg.MaxRetries = DefaultMaxRetries
	case cfg.MaxRetries < 0:
		cfg.MaxRetries = 0
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = outbound.Default()
	}
	c := common{kind: cfg.Kind, apiKey: cfg.APIKey, timeout: cfg.Timeout, maxRetries: cfg.MaxRetries,
		baseURL: strings.TrimRight(cfg.BaseURL, "/"), http: hc}
	if cfg.Kind == Anthropic {
		return newAnthropic(c), nil
	}
	return newOpenAI(c), nil
}

// checkBaseURL accepts an absolute http(s) URL without credentials in it.
func checkBaseURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("not a URL")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("scheme must be http or https, not %q", u.Scheme)
	}
	if u.Host == "" {
		return errors.New("no host")
	}
	if u.User != nil {
		return errors.New("credentials belong in the API key, not the URL")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return errors.New("no query or fragment allowed")
	}
	return nil
}

// common is what both providers share: the HTTP exchange, retries and
// errors.
type common struct {
	kind       string // Kind(), and Error.Provider
	apiKey     string
	timeout    time.Duration // of one attempt; 0: none
	maxRetries int
	baseURL    string // without a trailing slash
	http       *http.Client
	// auth sets the headers that carry the key.
	auth func(http.Header)
}

func (c *common) Kind() string { return c.kind }

// checkRequest refuses what no provider would accept.
func checkRequest(req Request) error {
	if strings.TrimSpace(req.Model) == "" {
		return fmt.Errorf("%w: no model", ErrInvalidRequest)
	}
	if len(req.Messages) == 0 {
		return fmt.Errorf("%w: no messages", ErrInvalidRequest)
	}
	for i, m := range req.Messages {
		if m.Role != "user" && m.Role != "assistant" {
			return fmt.Errorf("%w: message %d: role %q (want user or assistant)", ErrInvalidRequest, i, m.Role)
		}
	}
	if req.MaxTokens < 0 {
		return fmt.Errorf("%w: negative max tokens", ErrInvalidRequest)
	}
	return nil
}
