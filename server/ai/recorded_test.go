package ai

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The bodies in testdata/ are what the providers send, byte for byte in
// their formats (ids and keys changed): OpenAI's pretty-printed JSON and
// its chunks with "obfuscation" padding, Ollama's and OpenRouter's
// compatible streams (OpenRouter's with its comment lines), Anthropic's
// compact JSON and its named events, ping and thinking blocks included.

const (
	jsonType = "application/json"
	sseType  = "text/event-stream; charset=utf-8"
)

func TestRecordedBodies(t *testing.T) {
	sat := []string{"The", " cat", " sat", " on", " the", " mat", "."}
	cases := []struct {
		name   string
		wire   wire
		call   string // Generate, Stream or Models
		file   string
		status int
		header []string // response headers, in pairs
		// retries is Config.MaxRetries; attempts the requests it makes.
		retries, attempts int

		want       *Response
		wantDeltas []string
		wantModels []string
		wantErr    *Error // Provider is filled in
	}{
		{name: "openai plain", wire: openAIWire(OpenAI, ""), call: "Generate", file: "openai/chat_completion.json",
			want: &Response{Text: "The cat sat on the mat.", Model: "gpt-4o-mini-2024-07-18", StopReason: "stop",
				Usage: Usage{InputTokens: 1546, OutputTokens: 8, CachedTokens: 1408}}},
		{name: "openai streamed", wire: openAIWire(OpenAI, ""), call: "Stream", file: "openai/chat_completion_stream.txt",
			want: &Response{Text: "The cat sat on the mat.", Model: "gpt-4o-mini-2024-07-18", StopReason: "stop",
				Usage: Usage{InputTokens: 1546, OutputTokens: 8, CachedTokens: 1408}}, wantDeltas: sat},
		{name: "openai stream without [DONE]", wire: openAIWire(OpenAI, ""), call: "Stream", file: "openai/stream_without_done.txt",
			wantDeltas: sat, wantErr: &Error{Message: errStreamIncomplete.Error(), Retryable: true}},
		{name: "openai invalid key", wire: openAIWire(OpenAI, ""), call: "Generate", file: "openai/error_invalid_api_key.json",
			status: 401, retries: 2, attempts: 1,
			wantErr: &Error{Status: 401, Type: "invalid_request_error", Code: "invalid_api_key",
				Message: "Incorrect API key provided: sk-test-*****************WXYZ. You can find your API key at https://platform.openai.com/account/api-keys."}},
		{name: "openai rate limit", wire: openAIWire(OpenAI, ""), call: "Stream", file: "openai/error_rate_limit.json",
			status: 429, header: []string{"Retry-After-Ms", "1", "X-Ratelimit-Reset-Tokens", "182ms"}, retries: 2, attempts: 3,
			wantErr: &Error{Status: 429, Type: "tokens", Code: "rate_limit_exceeded", Retryable: true,
				Message: "Rate limit reached for gpt-4o-mini in organization org-Xq3vL8bTn2RkD5mYw1Hc7sPe on tokens per min (TPM): Limit 200000, Used 199850, Requested 757. Please try again in 182ms. Visit https://platform.openai.com/account/rate-limits to learn more."}},
		{name: "openai quota exhausted", wire: openAIWire(OpenAI, ""), call: "Generate", file: "openai/error_insufficient_quota.json",
			status: 429, retries: 2, attempts: 1,
			wantErr: &Error{Status: 429, Type: "insufficient_quota", Code: "insufficient_quota",
				Message: "You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors."}},
		{name: "openai unknown model", wire: openAIWire(OpenAI, ""), call: "Generate", file: "openai/error_model_not_found.json",
			status: 404, wantErr: &Error{Status: 404, Type: "invalid_request_error", Code: "model_not_found",
				Message: "The model `gpt-9` does not exist or you do not have access to it."}},
		{name: "openai models", wire: openAIWire(OpenAI, ""), call: "Models", file: "openai/models.json",
			wantModels: []string{"gpt-4o-mini", "gpt-4o-mini-2024-07-18", "o3-mini"}},

		{name: "ollama plain", wire: openAIWire(OpenAICompatible, "/v1"), call: "Generate", file: "compatible/ollama_completion.json",
			want: &Response{Text: "The cat sat on the mat.", Model: "llama3.1:8b", StopReason: "stop",
				Usage: Usage{InputTokens: 26, OutputTokens: 8}}},
		{name: "ollama streamed", wire: openAIWire(OpenAICompatible, "/v1"), call: "Stream", file: "compatible/ollama_stream.txt",
			want: &Response{Text: "The cat sat on the mat.", Model: "llama3.1:8b", StopReason: "stop",
				Usage: Usage{InputTokens: 26, OutputTokens: 8}}, wantDeltas: sat},
		{name: "ollama unknown model", wire: openAIWire(OpenAICompatible, "/v1"), call: "Stream", file: "compatible/ollama_error_model_not_found.json",
			status: 404, retries: 2, attempts: 1,
			wantErr: &Error{Status: 404, Type: "api_error", Message: `model "llama9" not found, try pulling it first`}},
		{name: "ollama models", wire: openAIWire(OpenAICompatible, "/v1"), call: "Models", file: "compatible/ollama_models.json",
			wantModels: []string{"llama3.1:8b", "qwen2.5:7b"}},
		{name: "openrouter streamed with comments", wire: openAIWire(OpenAICompatible, "/api/v1"), call: "Stream", file: "compatible/openrouter_stream.txt",
			want: &Response{Text: "The cat sat on the mat.", Model: "openai/gpt-4o-mini", StopReason: "stop",
				Usage: Usage{InputTokens: 1546, OutputTokens: 8, CachedTokens: 1408}}, wantDeltas: sat},

		// Anthropic's input_tokens leave out the cache: 21 + 1187 written
		// + 2048 read are the input.
		{name: "anthropic plain", wire: anthropicWire(), call: "Generate", file: "anthropic/message.json",
			want: &Response{Text: "The cat sat on the mat.", Model: "claude-sonnet-4-5-20250929", StopReason: "end_turn",
				Usage: Usage{InputTokens: 3256, OutputTokens: 11, CachedTokens: 2048}}},
		{name: "anthropic streamed", wire: anthropicWire(), call: "Stream", file: "anthropic/message_stream.txt",
			want: &Response{Text: "The cat sat on the mat.", Model: "claude-sonnet-4-5-20250929", StopReason: "end_turn",
				Usage: Usage{InputTokens: 3256, OutputTokens: 11, CachedTokens: 2048}},
			wantDeltas: []string{"The cat", " sat on the", " mat."}},
		{name: "anthropic streamed with thinking", wire: anthropicWire(), call: "Stream", file: "anthropic/thinking_stream.txt",
			want: &Response{Text: "the cat", Model: "claude-sonnet-4-5-20250929", StopReason: "end_turn",
				Usage: Usage{InputTokens: 48, OutputTokens: 87}},
			wantDeltas: []string{"the cat"}},
		{name: "anthropic stream without message_stop", wire: anthropicWire(), call: "Stream", file: "anthropic/stream_without_message_stop.txt",
			wantDeltas: []string{"The cat", " sat on the", " mat."}, wantErr: &Error{Message: errStreamIncomplete.Error(), Retryable: true}},
		{name: "anthropic overloaded mid-stream", wire: anthropicWire(), call: "Stream", file: "anthropic/stream_overloaded.txt",
			retries: 2, attempts: 1, wantDeltas: []string{"The cat"},
			wantErr: &Error{Status: 529, Type: "overloaded_error", Message: "Overloaded", Retryable: true}},
		{name: "anthropic overloaded", wire: anthropicWire(), call: "Generate", file: "anthropic/error_overloaded.json",
			status: 529, header: []string{"X-Should-Retry", "true", "Retry-After-Ms", "1"}, retries: 1, attempts: 2,
			wantErr: &Error{Status: 529, Type: "overloaded_error", Message: "Overloaded", Retryable: true}},
		{name: "anthropic invalid key", wire: anthropicWire(), call: "Models", file: "anthropic/error_authentication.json",
			status: 401, header: []string{"X-Should-Retry", "false"}, retries: 2, attempts: 1,
			wantErr: &Error{Status: 401, Type: "authentication_error", Message: "invalid x-api-key"}},
		{name: "anthropic rate limit beyond the wait", wire: anthropicWire(), call: "Stream", file: "anthropic/error_rate_limit.json",
			// Two minutes is more than a call waits: it fails at once,
			// retryable, for the job runner to try later.
			status: 429, header: []string{"Retry-After", "120", "Anthropic-Ratelimit-Input-Tokens-Remaining", "0"}, retries: 2, attempts: 1,
			wantErr: &Error{Status: 429, Type: "rate_limit_error", Retryable: true,
				Message: truncate("This request would exceed the rate limit for your organization (5c6e1f2a-8d3b-4e7f-9a1c-2b4d6f8e0a13) of 30,000 input tokens per minute. For details, refer to: https://docs.claude.com/en/api/rate-limits. You can see the response headers for current usage. Please reduce the prompt length or the maximum tokens requested, or try again later. You may also contact sales at https://www.anthropic.com/contact-sales to discuss your options for a rate limit increase.")}},
		{name: "anthropic unknown model", wire: anthropicWire(), call: "Generate", file: "anthropic/error_not_found.json",
			status: 404, wantErr: &Error{Status: 404, Type: "not_found_error", Message: "model: claude-9"}},
		{name: "anthropic models", wire: anthropicWire(), call: "Models", file: "anthropic/models.json",
			wantModels: []string{"claude-sonnet-4-5-20250929", "claude-opus-4-1-20250805", "claude-3-5-haiku-20241022"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			body, err := os.ReadFile(filepath.Join("testdata", c.file))
			if err != nil {
				t.Fatal(err)
			}
			status, ctype := c.status, jsonType
			if status == 0 {
				status = http.StatusOK
			}
			if strings.HasSuffix(c.file, ".txt") {
				ctype = sseType
			}
			f := newFake(t, c.wire, func(w http.ResponseWriter, r *http.Request) {
				for i := 0; i+1 < len(c.header); i += 2 {
					w.Header().Set(c.header[i], c.header[i+1])
				}
				w.Header().Set("Content-Type", ctype)
				w.WriteHeader(status)
				_, _ = w.Write(body)
			})
			retries := c.retries
			if retries == 0 {
				retries = NoRetries
			}
			p := f.provider(func(cfg *Config) { cfg.MaxRetries = retries })

			var res *Response
			var deltas, models []string
			switch c.call {
			case "Generate":
				res, err = p.Generate(context.Background(), testRequest())
			case "Stream":
				res, deltas, err = collect(p, context.Background(), testRequest())
			case "Models":
				models, err = p.Models(context.Background())
			}

			if c.wantErr != nil {
				e := asError(t, err)
				want := *c.wantErr
				want.Provider = c.wire.kind
				if !reflect.DeepEqual(*e, want) {
					t.Errorf("error = %#v\nwant    %#v", *e, want)
				}
				if res != nil && (c.call != "Stream" || !res.Partial || res.Text != strings.Join(deltas, "")) {
					t.Errorf("a failed call returned %+v", res)
				}
			} else if err != nil {
				t.Fatalf("%s: %v", c.call, err)
			}
			if c.want != nil && !reflect.DeepEqual(res, c.want) {
				t.Errorf("response = %+v\nwant       %+v", res, c.want)
			}
			if !reflect.DeepEqual(deltas, c.wantDeltas) {
				t.Errorf("deltas = %q, want %q", deltas, c.wantDeltas)
			}
			if !reflect.DeepEqual(models, c.wantModels) {
				t.Errorf("models = %q, want %q", models, c.wantModels)
			}
			wantAttempts := int32(c.attempts)
			if wantAttempts == 0 {
				wantAttempts = 1
			}
			if got := f.attempts.Load(); got != wantAttempts {
				t.Errorf("%d attempts, want %d", got, wantAttempts)
			}
		})
	}
}
