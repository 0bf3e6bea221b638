package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/copydesk/copydesk/store"
)

// fakeProvider is a local server that speaks the OpenAI API's wire format
// (GET /v1/models, POST /v1/chat/completions, plain and streamed), standing
// in for a remote LLM provider.
type fakeProvider struct {
	*httptest.Server
	mu       sync.Mutex
	requests []map[string]any
	// reply, when set, decides the answer: status, text; status >= 400 is
	// an error with text as the message.
	reply func(n int, req map[string]any) (int, string)
	// finish, when set, is the finish_reason of every answer ("length":
	// cut off at max_tokens); noUsage leaves the usage out, as servers
	// that ignore stream_options.include_usage do. Set before any call.
	finish  string
	noUsage bool
}

func (f *fakeProvider) Requests() []map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]map[string]any(nil), f.requests...)
}

func fakeOpenAI(t testing.TB, reply func(n int, req map[string]any) (int, string)) *fakeProvider {
	f := &fakeProvider{reply: reply}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == "GET" && strings.HasSuffix(r.URL.Path, "/models"):
			w.Header().Set("Content-Type", "application/json")
			if r.Header.Get("Authorization") != "Bearer sk-test-good-key-0001" {
				w.WriteHeader(401)
				fmt.Fprint(w, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`)
				return
			}
			fmt.Fprint(w, `{"object":"list","data":[{"id":"gpt-4o-mini","object":"model","created":1,"owned_by":"openai"},{"id":"gpt-4o","object":"model","created":1,"owned_by":"openai"}]}`)
		case r.Method == "POST" && strings.HasSuffix(r.URL.Path, "/chat/completions"):
			var req map[string]any
			json.NewDecoder(r.Body).Decode(&req)
			f.mu.Lock()
			f.requests = append(f.requests, req)
			n := len(f.requests)
			f.mu.Unlock()
			status, text := 200, "Generated text."
			if f.reply != nil {
				status, text = f.reply(n, req)
			}
			if status >= 400 {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("retry-after-ms", "1")
				w.WriteHeader(status)
				fmt.Fprintf(w, `{"error":{"message":%q,"type":"server_error"}}`, text)
				return
			}
			model, _ := req["model"].(string)
			finish := "stop"
			if f.finish != "" {
				finish = f.finish
			}
			if stream, _ := req["stream"].(bool); stream {
				w.Header().Set("Content-Type", "text/event-stream")
				words := strings.SplitAfter(text, " ")
				for _, word := range words {
					fmt.Fprintf(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":%q,\"choices\":[{\"index\":0,\"delta\":{\"content\":%q},\"finish_reason\":null}]}\n\n", model, word)
					w.(http.Flusher).Flush()
				}
				fmt.Fprintf(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":%q,\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":%q}]}\n\n", model, finish)
				if !f.noUsage {
					fmt.Fprintf(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":%q,\"choices\":[],\"usage\":{\"prompt_tokens\":1000,\"completion_tokens\":500,\"total_tokens\":1500,\"prompt_tokens_details\":{\"cached_tokens\":200}}}\n\n", model)
				}
				fmt.Fprint(w, "data: [DONE]\n\n")
				return
			}
			w.Header().Set("Content-Type", "application/json")
			usage := `,"usage":{"prompt_tokens":1000,"completion_tokens":500,"total_tokens":1500,"prompt_tokens_details":{"cached_tokens":200}}`
			if f.noUsage {
				usage = ""
			}
			fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","created":1,"model":%q,"choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":%q}]%s}`, model, text, finish, usage)
		default:
			w.WriteHeader(404)
		}
	}))
	t.Cleanup(f.Close)
	return f
}

// credential stores a credential directly, sealed like the API does.
func (e *env) credential(t testing.TB, provider, baseURL, model string, envID *int64) *store.Credential {
	t.Helper()
	secret := "sk-test-good-key-0001"
	c, err := e.app.DB.CreateCredential(context.Background(), store.NewCredential{Name: provider + " key", Provider: provider,
		BaseURL: baseURL, SecretHint: "sk-...0001", DefaultModel: model, EnvironmentID: envID,
		Seal: func(id int64) ([]byte, error) { return e.app.Keys.Seal([]byte(secret), store.CredentialAAD(id)) }})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
