package ai

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The tests run the real clients against httptest servers that speak each
// provider's wire format.

const testKey = "sk-test-0123456789abcdefWXYZ"

// wantUsage is the usage every fake answer reports, in each provider's
// own terms.
var wantUsage = Usage{InputTokens: 12, OutputTokens: 7, CachedTokens: 5}

// wire is one provider's wire format.
type wire struct {
	kind       string
	prefix     string // path prefix carried by the BaseURL
	genPath    string // path of a generation, under prefix
	modelsPath string // path of the model list, under prefix
	model      string // the model the fake server reports
	stopReason string
	// success is the JSON body of a finished generation.
	success func(text string) string
	// stream gives the SSE frames of a streamed generation of deltas; the
	// last frame is the terminal one.
	stream func(deltas []string) []string
	// garbage is an SSE frame with invalid JSON.
	garbage string
	// streamError is an error event inside a 200 stream.
	streamError string
	// apiError is the JSON body of an error response.
	apiError func(errType, msg string) string
	// models is the JSON body of a model list page.
	models func(ids []string, more bool) string
}

var wires = []wire{openAIWire(OpenAI, ""), openAIWire(OpenAICompatible, "/v1"), anthropicWire()}

func openAIWire(kind, prefix string) wire {
	chunk := func(choices string, usage string) string {
		return fmt.Sprintf(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":%s,"usage":%s}`+"\n\n", choices, usage)
	}
	usage := `{"prompt_tokens":12,"completion_tokens":7,"total_tokens":19,"prompt_tokens_details":{"cached_tokens":5}}`
	return wire{
		kind:       kind,
		prefix:     prefix,
		genPath:    "/chat/completions",
		modelsPath: "/models",
		model:      "gpt-test",
		stopReason: "stop",
		success: func(text string) string {
			b, _ := json.Marshal(text)
			return `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-test",` +
				`"choices":[{"index":0,"message":{"role":"assistant","content":` + string(b) + `},"finish_reason":"stop","logprobs":null}],` +
				`"usage":` + usage + `}`
		},
		stream: func(deltas []string) []string {
			frames := []string{chunk(`[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]`, "null")}
			for _, d := range deltas {
				b, _ := json.Marshal(d)
				frames = append(frames, chunk(`[{"index":0,"delta":{"content":`+string(b)+`},"finish_reason":null}]`, "null"))
			}
			frames = append(frames,
				chunk(`[{"index":0,"delta":{},"finish_reason":"stop"}]`, "null"),
				chunk(`[]`, usage),
				"data: [DONE]\n\n")
			return frames
		},
		garbage:     "data: {\"id\":\"chatcmpl-1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}\n\n",
		streamError: `data: {"error":{"message":"The server had an error while processing your request.","type":"server_error"}}` + "\n\n",
		apiError: func(errType, msg string) string {
			b, _ := json.Marshal(msg)
			return `{"error":{"message":` + string(b) + `,"type":"` + errType + `","param":null,"code":null}}`
		},
		models: func(ids []string, more bool) string {
			var data []string
			for _, id := range ids {
				data = append(data, `{"id":"`+id+`","object":"model","created":1,"owned_by":"test"}`)
			}
			return `{"object":"list","data":[` + strings.Join(data, ",") + `]}`
		},
	}
}

func anthropicWire() wire {
	event := func(name, data string) string { return "event: " + name + "\ndata: " + data + "\n\n" }
	return wire{
		kind:       Anthropic,
		genPath:    "/v1/messages",
		modelsPath: "/v1/models",
		model:      "claude-test",
		stopReason: "end_turn",
		success: func(text string) string {
			b, _ := json.Marshal(text)
			return `{"id":"msg_1","type":"message","role":"assistant","model":"claude-test",` +
				`"content":[{"type":"text","text":` + string(b) + `}],"stop_reason":"end_turn","stop_sequence":null,` +
				`"usage":{"input_tokens":7,"cache_creation_input_tokens":0,"cache_read_input_tokens":5,"output_tokens":7}}`
		},
		stream: func(deltas []string) []string {
			frames := []string{
				event("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":7,"cache_creation_input_tokens":0,"cache_read_input_tokens":5,"output_tokens":1}}}`),
				event("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`),
				event("ping", `{"type":"ping"}`),
			}
			for _, d := range deltas {
				b, _ := json.Marshal(d)
				frames = append(frames, event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":`+string(b)+`}}`))
			}
			return append(frames,
				event("content_block_stop", `{"type":"content_block_stop","index":0}`),
				event("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":7}}`),
				event("message_stop", `{"type":"message_stop"}`))
		},
		garbage:     "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\n\n",
		streamError: event("error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`),
		apiError: func(errType, msg string) string {
			b, _ := json.Marshal(msg)
			return `{"type":"error","error":{"type":"` + errType + `","message":` + string(b) + `}}`
		},
		models: func(ids []string, more bool) string {
			var data []string
			for _, id := range ids {
				data = append(data, `{"type":"model","id":"`+id+`","display_name":"`+id+`","created_at":"2025-01-01T00:00:00Z"}`)
			}
			return fmt.Sprintf(`{"data":[%s],"has_more":%v,"first_id":%q,"last_id":%q}`,
				strings.Join(data, ","), more, ids[0], ids[len(ids)-1])
		},
	}
}

// fake is a provider's server: handle answers every request.
type fake struct {
	t        *testing.T
	w        wire
	srv      *httptest.Server
	attempts atomic.Int32

	mu       sync.Mutex
	handle   http.HandlerFunc
	requests []recorded
}

type recorded struct {
	method, path string
	header       http.Header
	body         map[string]any
}

func newFake(t *testing.T, w wire, handle http.HandlerFunc) *fake {
	t.Helper()
	f := &fake{t: t, w: w, handle: handle}
	f.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		f.attempts.Add(1)
		rec := recorded{method: r.Method, path: r.URL.Path, header: r.Header.Clone()}
		if b, _ := io.ReadAll(r.Body); len(b) > 0 {
			if err := json.Unmarshal(b, &rec.body); err != nil {
				t.Errorf("request body is not JSON: %v: %s", err, b)
			}
		}
		f.mu.Lock()
		f.requests = append(f.requests, rec)
		handle := f.handle
		f.mu.Unlock()
		handle(rw, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// config is a Config for the fake, with a short timeout and no retries.
func (f *fake) config() Config {
	return Config{
		Kind:       f.w.kind,
		APIKey:     testKey,
		BaseURL:    f.srv.URL + f.w.prefix,
		Timeout:    5 * time.Second,
		MaxRetries: NoRetries,
	}
}

func (f *fake) provider(mod ...func(*Config)) Provider {
	f.t.Helper()
	cfg := f.config()
	for _, m := range mod {
		m(&cfg)
	}
	p, err := New(cfg)
	if err != nil {
		f.t.Fatalf("New: %v", err)
	}
	return p
}

func (f *fake) lastRequest() recorded {
	f.t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.requests) == 0 {
		f.t.Fatal("the server got no request")
	}
	return f.requests[len(f.requests)-1]
}

// Handlers.

func jsonAnswer(status int, body string, header ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

func sseAnswer(frames ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for _, f := range frames {
			_, _ = io.WriteString(w, f)
			w.(http.Flusher).Flush()
		}
	}
}

// waitForClient blocks until the client goes away (or 5s pass).
func waitForClient(r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-time.After(5 * time.Second):
	}
}

// testRequest is the request every generation test sends.
func testRequest() Request {
	temp := 0.25
	return Request{
		Model:  "the-model",
		System: "You are a copy editor.",
		Messages: []Message{
			{Role: "user", Content: "Fix: teh cat"},
			{Role: "assistant", Content: "the cat"},
			{Role: "user", Content: "And: a dog"},
		},
		Temperature: &temp,
		MaxTokens:   300,
	}
}

func collect(p Provider, ctx context.Context, req Request) (*Response, []string, error) {
	var pieces []string
	res, err := p.Stream(ctx, req, func(s string) error {
		pieces = append(pieces, s)
		return nil
	})
	return res, pieces, err
}

// asError fails the test unless err is an *Error.
func asError(t *testing.T, err error) *Error {
	t.Helper()
	if err == nil {
		t.Fatal("no error")
	}
	e, ok := err.(*Error)
	if !ok {
		t.Fatalf("error is %T (%v), want *ai.Error", err, err)
	}
	if strings.Contains(err.Error(), testKey) {
		t.Fatalf("error contains the API key: %v", err)
	}
	return e
}
