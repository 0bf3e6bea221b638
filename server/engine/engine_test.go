package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/copydesk/copydesk/server/ai"
	"github.com/copydesk/copydesk/server/credential"
	"github.com/copydesk/copydesk/server/engine"
	"github.com/copydesk/copydesk/server/keyring"
	"github.com/copydesk/copydesk/server/notify"
	"github.com/copydesk/copydesk/store"
)

const goodKey = "sk-engine-good-key-0123456789AbCd"

// now is the fixed time of the store, mid-month so budgets stay in one
// month.
var now = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// rig is an engine over a temporary database.
type rig struct {
	db   *store.DB
	keys *keyring.Keyring
	eng  *engine.Engine
	user *store.User
}

func newRig(t *testing.T, opt engine.Options) *rig {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "engine.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	db.Now = func() time.Time { return now }
	keys, err := keyring.New([]byte("engine-test-secret-0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	n := notify.New(db, log)
	u, err := db.CreateUser(ctx, store.NewUser{Email: "ann@example.com", Username: "ann", PasswordHash: "x", Role: store.RoleEditor})
	if err != nil {
		t.Fatal(err)
	}
	if opt.OnRecordError == nil {
		// A usage event that cannot be stored fails the test.
		opt.OnRecordError = func(err error) { t.Errorf("usage not recorded: %v", err) }
	}
	return &rig{db: db, keys: keys, eng: engine.New(db, keys, n, log, opt), user: u}
}

func (r *rig) env(t *testing.T, name string) int64 {
	t.Helper()
	e, err := r.db.CreateEnvironment(context.Background(), store.NewEnvironment{Name: name, Slug: strings.ToLower(name)})
	if err != nil {
		t.Fatal(err)
	}
	return e.ID
}

func (r *rig) credential(t *testing.T, provider, baseURL, key, model string, envID *int64) int64 {
	t.Helper()
	c, err := r.db.CreateCredential(context.Background(), store.NewCredential{Name: provider, Provider: provider, BaseURL: baseURL,
		SecretHint: credential.Mask(key), DefaultModel: model, EnvironmentID: envID,
		Seal: func(id int64) ([]byte, error) { return r.keys.Seal([]byte(key), store.CredentialAAD(id)) }})
	if err != nil {
		t.Fatal(err)
	}
	return c.ID
}

func (r *rig) settings(t *testing.T, s store.AISettings) {
	t.Helper()
	if _, err := r.db.PutAISettings(context.Background(), s); err != nil {
		t.Fatal(err)
	}
}

func (r *rig) usage(t *testing.T) []*store.UsageEvent {
	t.Helper()
	list, _, err := r.db.ListUsage(context.Background(), store.UsageFilter{Scope: store.Everything}, store.Page{Page: 1, PerPage: 200})
	if err != nil {
		t.Fatal(err)
	}
	return list
}

// llm is a local server speaking the OpenAI Chat Completions wire format.
// handle answers the n-th chat request (from 1); nil answers with a
// completion of model "gpt-4o-mini".
type llm struct {
	*httptest.Server
	mu       sync.Mutex
	requests []map[string]any
	handle   func(n int, req map[string]any, w http.ResponseWriter, r *http.Request)
}

func newLLM(t *testing.T, handle func(n int, req map[string]any, w http.ResponseWriter, r *http.Request)) *llm {
	f := &llm{handle: handle}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != "POST" || r.URL.Path != "/v1/chat/completions" {
			w.WriteHeader(404)
			return
		}
		var req map[string]any
		json.NewDecoder(r.Body).Decode(&req)
		f.mu.Lock()
		f.requests = append(f.requests, req)
		n := len(f.requests)
		f.mu.Unlock()
		if f.handle != nil {
			f.handle(n, req, w, r)
			return
		}
		completion(w, "gpt-4o-mini", "Hello there.")
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *llm) URL() string { return f.Server.URL + "/v1" }

func (f *llm) Requests() []map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]map[string]any(nil), f.requests...)
}

// completion answers with 1000 input tokens (200 of them cached) and 500
// output tokens.
func completion(w http.ResponseWriter, model, text string) {
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","created":1,"model":%q,"choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],"usage":{"prompt_tokens":1000,"completion_tokens":500,"total_tokens":1500,"prompt_tokens_details":{"cached_tokens":200}}}`, model, text)
}

func apiError(w http.ResponseWriter, status int, msg string, headers ...string) {
	w.Header().Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		w.Header().Set(headers[i], headers[i+1])
	}
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"error":{"message":%q,"type":"invalid_request_error","code":null}}`, msg)
}

func streamChunks(w http.ResponseWriter, model string, words []string, usage bool) {
	w.Header().Set("Content-Type", "text/event-stream")
	for _, word := range words {
		fmt.Fprintf(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":%q,\"choices\":[{\"index\":0,\"delta\":{\"content\":%q},\"finish_reason\":null}]}\n\n", model, word)
		w.(http.Flusher).Flush()
	}
	fmt.Fprintf(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":%q,\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n", model)
	if usage {
		fmt.Fprintf(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":%q,\"choices\":[],\"usage\":{\"prompt_tokens\":1000,\"completion_tokens\":500,\"total_tokens\":1500,\"prompt_tokens_details\":{\"cached_tokens\":200}}}\n\n", model)
	}
}

var hello = []ai.Message{{Role: "user", Content: "Say hello."}}

func ptr[T any](v T) *T { return &v }

func near(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

// gpt4oMiniCost is what 1000 input tokens (200 cached) and 500 output
// tokens of gpt-4o-mini cost at its list prices ($0.15 input, $0.075
// cached input, $0.60 output per million).
const gpt4oMiniCost = (800*0.15 + 200*0.075 + 500*0.60) / 1e6

func TestGenerateRecordsUsage(t *testing.T) {
	r := newRig(t, engine.Options{})
	f := newLLM(t, func(n int, req map[string]any, w http.ResponseWriter, _ *http.Request) {
		// The provider reports the dated model id.
		completion(w, "gpt-4o-mini-2024-07-18", "Hello there.")
	})
	envID := r.env(t, "Blog")
	cred := r.credential(t, "openai", f.URL(), goodKey, "gpt-4o-mini", nil)
	r.settings(t, store.AISettings{CredentialID: &cred, Temperature: ptr(0.4), MaxOutputTokens: ptr(300)})
	agent, err := r.db.CreateAgent(context.Background(), store.AgentInput{Name: "Writer", Kind: "writer", IsActive: true}, r.user.ID)
	if err != nil {
		t.Fatal(err)
	}

	res, err := r.eng.Generate(context.Background(), engine.Call{Source: "execution", UserID: &r.user.ID, EnvironmentID: &envID,
		AgentID: &agent.ID, System: "Be brief.", Messages: hello})
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "Hello there." || res.Provider != "openai" || res.Model != "gpt-4o-mini-2024-07-18" || res.CredentialID != cred ||
		res.Usage != (ai.Usage{InputTokens: 1000, OutputTokens: 500, CachedTokens: 200}) || res.StopReason != "stop" {
		t.Fatalf("result: %+v", res)
	}
	if res.Cost == nil || !near(res.Cost.USD(), gpt4oMiniCost) {
		t.Fatalf("cost = %v, want %v", res.Cost, gpt4oMiniCost)
	}
	// What was sent: the settings' parameters and the system prompt.
	reqs := f.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	req := reqs[0]
	msgs, _ := req["messages"].([]any)
	if req["model"] != "gpt-4o-mini" || req["temperature"] != 0.4 || req["max_completion_tokens"] != 300.0 || len(msgs) != 2 ||
		msgs[0].(map[string]any)["role"] != "system" || msgs[0].(map[string]any)["content"] != "Be brief." {
		t.Fatalf("request: %v", req)
	}

	events := r.usage(t)
	if len(events) != 1 {
		t.Fatalf("%d usage events, want 1", len(events))
	}
	ev := events[0]
	if ev.Status != "ok" || ev.Error != "" || ev.Provider != "openai" || ev.Model != "gpt-4o-mini-2024-07-18" || ev.Source != "execution" ||
		ev.InputTokens != 1000 || ev.OutputTokens != 500 || ev.CachedTokens != 200 ||
		ev.UserID == nil || *ev.UserID != r.user.ID || ev.EnvironmentID == nil || *ev.EnvironmentID != envID ||
		ev.AgentID == nil || *ev.AgentID != agent.ID || ev.CredentialID == nil || *ev.CredentialID != cred || !ev.CreatedAt.Equal(now) {
		t.Fatalf("usage event: %+v", ev)
	}
	if ev.Cost == nil || !near(ev.Cost.USD(), gpt4oMiniCost) {
		t.Fatalf("usage cost = %v, want %v", ev.Cost, gpt4oMiniCost)
	}
}

// The call's own choices (an agent's) win over the settings, which win
// over the credential's default model.
func TestGenerateResolvesParameters(t *testing.T) {
	r := newRig(t, engine.Options{})
	f := newLLM(t, nil)
	envID := r.env(t, "Blog")
	global := r.credential(t, "openai", f.URL(), goodKey, "cred-default-model", nil)
	envCred := r.credential(t, "openai_compatible", f.URL(), "", "env-cred-model", &envID)
	other := r.credential(t, "openai", f.URL(), goodKey, "other-default", nil)

	cases := []struct {
		name     string
		settings []store.AISettings
		call     engine.Call
		want     map[string]any
	}{
		{"CredentialDefaultModel", []store.AISettings{{CredentialID: &global}}, engine.Call{},
			map[string]any{"model": "cred-default-model", "temperature": 0.7, "max_completion_tokens": 4096.0}},
		{"SettingsModel", []store.AISettings{{CredentialID: &global, Model: ptr("settings-model"), Temperature: ptr(0.0)}}, engine.Call{},
			map[string]any{"model": "settings-model", "temperature": 0.0}},
		{"EnvironmentOverride", []store.AISettings{{CredentialID: &global, Model: ptr("global-model")},
			{EnvironmentID: &envID, CredentialID: &envCred, MaxOutputTokens: ptr(77)}}, engine.Call{EnvironmentID: &envID},
			// openai_compatible sends max_tokens.
			map[string]any{"model": "global-model", "max_tokens": 77.0, "max_completion_tokens": nil}},
		{"CallWins", []store.AISettings{{CredentialID: &global, Model: ptr("settings-model"), Temperature: ptr(0.1), MaxOutputTokens: ptr(10)}},
			engine.Call{CredentialID: &other, Model: "call-model", Temperature: ptr(1.5), MaxTokens: 55},
			map[string]any{"model": "call-model", "temperature": 1.5, "max_completion_tokens": 55.0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r.settings(t, store.AISettings{})
			r.settings(t, store.AISettings{EnvironmentID: &envID})
			for _, s := range c.settings {
				r.settings(t, s)
			}
			before := len(f.Requests())
			c.call.Source, c.call.Messages = "chat", hello
			provider, model, err := r.eng.Plan(context.Background(), c.call)
			if err != nil || model != c.want["model"] {
				t.Fatalf("plan: %q %q %v", provider, model, err)
			}
			if len(f.Requests()) != before {
				t.Fatalf("Plan called the provider")
			}
			if _, err := r.eng.Generate(context.Background(), c.call); err != nil {
				t.Fatal(err)
			}
			req := f.Requests()[before]
			for k, v := range c.want {
				if req[k] != v {
					t.Errorf("%s = %#v, want %#v", k, req[k], v)
				}
			}
		})
	}
}

func TestAnthropicGenerate(t *testing.T) {
	r := newRig(t, engine.Options{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path != "/v1/messages" || req.Header.Get("X-Api-Key") != goodKey {
			w.WriteHeader(401)
			fmt.Fprint(w, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-haiku-4-5-20251001","content":[{"type":"text","text":"Hi."}],`+
			`"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":800,"output_tokens":500,"cache_read_input_tokens":200,"cache_creation_input_tokens":0}}`)
	}))
	t.Cleanup(srv.Close)
	cred := r.credential(t, "anthropic", srv.URL, goodKey, "claude-haiku-4-5", nil)
	res, err := r.eng.Generate(context.Background(), engine.Call{Source: "chat", CredentialID: &cred, Messages: hello})
	if err != nil {
		t.Fatal(err)
	}
	// claude-haiku-4-5: $1 input, $0.10 cache reads, $5 output per million;
	// the input count includes the 200 cached tokens.
	want := (800*1.0 + 200*0.10 + 500*5.0) / 1e6
	if res.Text != "Hi." || res.Usage != (ai.Usage{InputTokens: 1000, OutputTokens: 500, CachedTokens: 200}) || res.Cost == nil || !near(res.Cost.USD(), want) {
		t.Fatalf("result %+v, cost %v, want %v", res, res.Cost, want)
	}
	if ev := r.usage(t); len(ev) != 1 || ev[0].Provider != "anthropic" || ev[0].Cost == nil || !near(ev[0].Cost.USD(), want) {
		t.Fatalf("usage: %+v", ev)
	}
}

func TestProviderUnauthorized(t *testing.T) {
	const wrongKey = "sk-engine-wrong-key-9876543210ZyXw"
	r := newRig(t, engine.Options{})
	f := newLLM(t, func(n int, req map[string]any, w http.ResponseWriter, hr *http.Request) {
		// OpenAI's message names the key it was given.
		apiError(w, 401, "Incorrect API key provided: "+strings.TrimPrefix(hr.Header.Get("Authorization"), "Bearer ")+
			". You can find your API key at https://platform.openai.com/account/api-keys.")
	})
	cred := r.credential(t, "openai", f.URL(), wrongKey, "gpt-4o-mini", nil)
	res, err := r.eng.Generate(context.Background(), engine.Call{Source: "chat", UserID: &r.user.ID, CredentialID: &cred, Messages: hello})
	if err == nil {
		t.Fatalf("no error: %+v", res)
	}
	if store.KindOf(err) != store.KindRemote {
		t.Fatalf("kind %v: %v", store.KindOf(err), err)
	}
	msg := store.Message(err)
	if !strings.Contains(msg, "Incorrect API key provided") || !strings.Contains(msg, "401") {
		t.Fatalf("message %q lacks the provider's", msg)
	}
	if strings.Contains(err.Error(), wrongKey) || strings.Contains(msg, wrongKey) {
		t.Fatalf("the key is in the error: %q", err.Error())
	}
	if engine.Retryable(err) {
		t.Fatalf("a 401 is not retryable")
	}
	if n := len(f.Requests()); n != 1 {
		t.Fatalf("a 401 was retried: %d requests", n)
	}
	events := r.usage(t)
	if len(events) != 1 {
		t.Fatalf("%d usage events, want 1", len(events))
	}
	ev := events[0]
	if ev.Status != "error" || !strings.Contains(ev.Error, "Incorrect API key provided") || strings.Contains(ev.Error, wrongKey) ||
		ev.InputTokens != 0 || ev.Cost == nil || ev.Cost.USD() != 0 || ev.Model != "gpt-4o-mini" || ev.UserID == nil || *ev.UserID != r.user.ID {
		t.Fatalf("usage event: %+v", ev)
	}
	// The event's error is the client-safe message, once.
	if ev.Error != msg {
		if strings.Count(ev.Error, "Incorrect API key provided") > 1 {
			t.Fatal("bug: the usage event's error repeats the provider message (" + ev.Error + "): engine.record stores " +
				"providerError(callErr).Error(), i.e. store.Error's Message + \": \" + Err; it should store the Message only")
		}
		t.Fatalf("usage error %q, want %q", ev.Error, msg)
	}
}

func TestRateLimitThenSuccess(t *testing.T) {
	r := newRig(t, engine.Options{}) // default retries
	f := newLLM(t, func(n int, req map[string]any, w http.ResponseWriter, _ *http.Request) {
		if n == 1 {
			apiError(w, 429, "Rate limit reached for gpt-4o-mini", "retry-after-ms", "1")
			return
		}
		completion(w, "gpt-4o-mini", "Second time lucky.")
	})
	cred := r.credential(t, "openai", f.URL(), goodKey, "gpt-4o-mini", nil)
	start := time.Now()
	res, err := r.eng.Generate(context.Background(), engine.Call{Source: "chat", CredentialID: &cred, Messages: hello})
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "Second time lucky." || len(f.Requests()) != 2 {
		t.Fatalf("text %q after %d requests", res.Text, len(f.Requests()))
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("retry-after-ms: 1 was not honoured: %v", d)
	}
	events := r.usage(t)
	if len(events) != 1 || events[0].Status != "ok" || events[0].Cost == nil || !near(events[0].Cost.USD(), gpt4oMiniCost) {
		t.Fatalf("usage events: %d %+v", len(events), events)
	}
}

func TestRateLimitExhausted(t *testing.T) {
	r := newRig(t, engine.Options{MaxRetries: 1})
	f := newLLM(t, func(n int, req map[string]any, w http.ResponseWriter, _ *http.Request) {
		apiError(w, 429, "Rate limit reached for gpt-4o-mini", "retry-after-ms", "1")
	})
	cred := r.credential(t, "openai", f.URL(), goodKey, "gpt-4o-mini", nil)
	_, err := r.eng.Generate(context.Background(), engine.Call{Source: "chat", CredentialID: &cred, Messages: hello})
	if err == nil || store.KindOf(err) != store.KindRemote || !engine.Retryable(err) || !strings.Contains(err.Error(), "Rate limit reached") {
		t.Fatalf("err = %v", err)
	}
	if n := len(f.Requests()); n != 2 {
		t.Fatalf("MaxRetries 1: %d requests, want 2", n)
	}
	if ev := r.usage(t); len(ev) != 1 || ev[0].Status != "error" {
		t.Fatalf("usage: %+v", ev)
	}
}

func TestTimeout(t *testing.T) {
	r := newRig(t, engine.Options{Timeout: 100 * time.Millisecond, MaxRetries: -1})
	f := newLLM(t, func(n int, req map[string]any, w http.ResponseWriter, hr *http.Request) {
		select {
		case <-time.After(time.Second):
		case <-hr.Context().Done():
			return
		}
		completion(w, "gpt-4o-mini", "too late")
	})
	cred := r.credential(t, "openai", f.URL(), goodKey, "gpt-4o-mini", nil)
	start := time.Now()
	_, err := r.eng.Generate(context.Background(), engine.Call{Source: "chat", CredentialID: &cred, Messages: hello})
	elapsed := time.Since(start)
	if err == nil {
		t.Fatal("no error")
	}
	if !engine.Retryable(err) || store.KindOf(err) != store.KindRemote || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("err = %v (retryable %v)", err, engine.Retryable(err))
	}
	if elapsed > 700*time.Millisecond {
		t.Fatalf("took %v with a 100ms timeout", elapsed)
	}
	if n := len(f.Requests()); n != 1 {
		t.Fatalf("MaxRetries -1: %d requests", n)
	}
	if ev := r.usage(t); len(ev) != 1 || ev[0].Status != "error" || !strings.Contains(ev[0].Error, "timed out") {
		t.Fatalf("usage: %+v", ev)
	}
}

func TestCancelledCall(t *testing.T) {
	r := newRig(t, engine.Options{})
	started := make(chan struct{})
	f := newLLM(t, func(n int, req map[string]any, w http.ResponseWriter, hr *http.Request) {
		close(started)
		<-hr.Context().Done()
	})
	cred := r.credential(t, "openai", f.URL(), goodKey, "gpt-4o-mini", nil)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	_, err := r.eng.Generate(ctx, engine.Call{Source: "chat", CredentialID: &cred, Messages: hello})
	if !errors.Is(err, context.Canceled) || engine.Retryable(err) {
		t.Fatalf("err = %v", err)
	}
	// The usage event is recorded even though the caller's context is
	// done: as cancelled, not as an error.
	if ev := r.usage(t); len(ev) != 1 || ev[0].Status != store.UsageCancelled || ev[0].Error != "the call was stopped before it finished" {
		t.Fatalf("usage: %+v", ev)
	}
}

// A stream its caller stops (onDelta answers engine.ErrStopped: a chat
// reply stopped, a live generation cancelled) is recorded as cancelled,
// with the usage of what it streamed (estimated: the provider never said),
// and its result says cancelled.
func TestStoppedStreamIsCancelled(t *testing.T) {
	r := newRig(t, engine.Options{})
	f := newLLM(t, func(n int, req map[string]any, w http.ResponseWriter, hr *http.Request) {
		streamChunks(w, "gpt-4o-mini", []string{"One ", "two ", "three ", "four."}, true)
	})
	cred := r.credential(t, "openai", f.URL(), goodKey, "gpt-4o-mini", nil)
	pieces := 0
	res, err := r.eng.Stream(context.Background(), engine.Call{Source: "chat", CredentialID: &cred, Messages: hello}, func(string) error {
		if pieces++; pieces == 2 {
			return engine.ErrStopped
		}
		return nil
	})
	if !errors.Is(err, engine.ErrStopped) || res == nil || res.StopReason != ai.StopCancelled || res.Text != "One two " {
		t.Fatalf("res %+v, err %v", res, err)
	}
	ev := r.usage(t)
	if len(ev) != 1 || ev[0].Status != store.UsageCancelled || ev[0].OutputTokens == 0 || ev[0].InputTokens == 0 || !ev[0].Estimated ||
		ev[0].Cost == nil || ev[0].Cost.USD() <= 0 {
		t.Fatalf("usage: %+v", ev[0])
	}
	sum, err := r.db.UsageSummary(context.Background(), store.UsageFilter{Scope: store.Everything})
	if err != nil || sum.Calls != 1 || sum.Cancelled != 1 || sum.Errors != 0 || sum.OutputTokens != ev[0].OutputTokens || sum.Cost != *ev[0].Cost {
		t.Fatalf("summary %+v (%v): a cancelled call's tokens and cost count", sum, err)
	}
}

// The provider's stop reason comes back in copydesk's words: a reply cut
// off at max_tokens is "length", plain and streamed, OpenAI's and
// Anthropic's; a failed call is "error".
func TestStopReason(t *testing.T) {
	for _, c := range []struct{ raw, want string }{{"stop", ai.StopEnd}, {"length", ai.StopLength}, {"end_turn", ai.StopEnd},
		{"max_tokens", ai.StopLength}, {"stop_sequence", ai.StopEnd}, {"content_filter", ai.StopFilter}, {"tool_use", ai.StopToolCalls},
		{"", ""}, {"something_new", ai.StopOther}} {
		if got := ai.Stop(c.raw); got != c.want {
			t.Errorf("ai.Stop(%q) = %q, want %q", c.raw, got, c.want)
		}
	}
	r := newRig(t, engine.Options{})
	f := newLLM(t, func(n int, req map[string]any, w http.ResponseWriter, hr *http.Request) {
		if n == 3 {
			apiError(w, 400, "bad request")
			return
		}
		if stream, _ := req["stream"].(bool); stream {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Cut\"},\"finish_reason\":\"length\"}]}\n\n")
			fmt.Fprint(w, "data: [DONE]\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"c1","object":"chat.completion","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"Cut"},"finish_reason":"length"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`)
	})
	cred := r.credential(t, "openai", f.URL(), goodKey, "gpt-4o-mini", nil)
	call := engine.Call{Source: "chat", CredentialID: &cred, Messages: hello}
	if res, err := r.eng.Generate(context.Background(), call); err != nil || res.StopReason != ai.StopLength {
		t.Fatalf("generate: %+v, %v", res, err)
	}
	if res, err := r.eng.Stream(context.Background(), call, func(string) error { return nil }); err != nil || res.StopReason != ai.StopLength {
		t.Fatalf("stream: %+v, %v", res, err)
	}
	if res, err := r.eng.Generate(context.Background(), call); err == nil || res.StopReason != ai.StopError {
		t.Fatalf("failed: %+v, %v", res, err)
	}
	if ev := r.usage(t); len(ev) != 3 || ev[0].Status != store.UsageError {
		t.Fatalf("usage: %+v", ev)
	}
}

func TestStream(t *testing.T) {
	r := newRig(t, engine.Options{})
	garbage := func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o-mini\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"},\"finish_reason\":null}]}\n\n")
		fmt.Fprint(w, "data: {this is not json at all\n\n")
		fmt.Fprint(w, "data: [DONE]\n\n")
	}
	cases := []struct {
		name   string
		handle func(w http.ResponseWriter)
		ok     bool
		deltas string
	}{
		{"Complete", func(w http.ResponseWriter) {
			streamChunks(w, "gpt-4o-mini", []string{"Hello ", "streamed ", "world."}, true)
			fmt.Fprint(w, "data: [DONE]\n\n")
		}, true, "Hello |streamed |world.|"},
		{"GarbageLine", garbage, false, ""},
		{"CutShort", func(w http.ResponseWriter) { streamChunks(w, "gpt-4o-mini", []string{"Hello ", "wor"}, false) }, false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newLLM(t, func(n int, req map[string]any, w http.ResponseWriter, _ *http.Request) {
				if stream, _ := req["stream"].(bool); !stream {
					apiError(w, 400, "expected a streamed request")
					return
				}
				c.handle(w)
			})
			cred := r.credential(t, "openai", f.URL(), goodKey, "gpt-4o-mini", nil)
			before := len(r.usage(t))
			var deltas strings.Builder
			res, err := r.eng.Stream(context.Background(), engine.Call{Source: "live", CredentialID: &cred, Messages: hello},
				func(s string) error { deltas.WriteString(s + "|"); return nil })
			events := r.usage(t)
			if len(events) != before+1 {
				t.Fatalf("%d new usage events, want 1", len(events)-before)
			}
			ev := events[0]
			if c.ok {
				if err != nil || res.Text != "Hello streamed world." || deltas.String() != c.deltas {
					t.Fatalf("res %+v, deltas %q, err %v", res, deltas.String(), err)
				}
				if ev.Status != "ok" || ev.InputTokens != 1000 || ev.CachedTokens != 200 || ev.OutputTokens != 500 ||
					ev.Cost == nil || !near(ev.Cost.USD(), gpt4oMiniCost) || ev.Source != "live" {
					t.Fatalf("usage event: %+v", ev)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error: %+v", res)
			}
			if store.KindOf(err) != store.KindRemote {
				t.Fatalf("kind %v: %v", store.KindOf(err), err)
			}
			if ev.Status != "error" || ev.Error == "" {
				t.Fatalf("usage event: %+v", ev)
			}
		})
	}

	t.Run("MalformedJSONBody", func(t *testing.T) {
		f := newLLM(t, func(n int, req map[string]any, w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"id":"c1","choices":[{"index":0,"message":{"role":"assistant","content":"x"`)
		})
		cred := r.credential(t, "openai", f.URL(), goodKey, "gpt-4o-mini", nil)
		before := len(r.usage(t))
		_, err := r.eng.Generate(context.Background(), engine.Call{Source: "chat", CredentialID: &cred, Messages: hello})
		if err == nil || store.KindOf(err) != store.KindRemote {
			t.Fatalf("err = %v", err)
		}
		if ev := r.usage(t); len(ev) != before+1 || ev[0].Status != "error" {
			t.Fatalf("usage: %+v", ev[0])
		}
	})
}

// A server that ignores stream_options.include_usage (Ollama without its
// usage chunk, other OpenAI-compatible servers) ends a stream with no
// usage: the call is estimated and marked so, never recorded as 0 tokens,
// for streamed and plain calls alike.
func TestUsageNotReported(t *testing.T) {
	r := newRig(t, engine.Options{})
	f := newLLM(t, func(n int, req map[string]any, w http.ResponseWriter, _ *http.Request) {
		if stream, _ := req["stream"].(bool); stream {
			streamChunks(w, "gpt-4o-mini", []string{"Hello ", "streamed ", "world, at some length."}, false)
			fmt.Fprint(w, "data: [DONE]\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"c1","object":"chat.completion","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"Hello plain world, at some length."},"finish_reason":"stop"}]}`)
	})
	cred := r.credential(t, "openai", f.URL(), goodKey, "gpt-4o-mini", nil)
	call := engine.Call{Source: "chat", CredentialID: &cred, System: "You are terse.", Messages: hello}
	for _, streamed := range []bool{true, false} {
		var res *engine.Result
		var err error
		if streamed {
			res, err = r.eng.Stream(context.Background(), call, func(string) error { return nil })
		} else {
			res, err = r.eng.Generate(context.Background(), call)
		}
		if err != nil {
			t.Fatal(err)
		}
		wantIn, wantOut := engine.EstimatePrompt(call.System, call.Messages), engine.EstimateTokens(res.Text)
		if !res.UsageEstimated || res.Usage.InputTokens != wantIn || res.Usage.OutputTokens != wantOut || wantOut == 0 {
			t.Fatalf("streamed %v: usage %+v estimated %v, want %d in and %d out, estimated", streamed, res.Usage, res.UsageEstimated, wantIn, wantOut)
		}
		ev := r.usage(t)[0]
		if !ev.Estimated || ev.InputTokens != wantIn || ev.OutputTokens != wantOut || ev.Status != "ok" ||
			ev.Cost == nil || ev.Cost.USD() <= 0 {
			t.Fatalf("streamed %v: usage event %+v", streamed, ev)
		}
	}
	// A provider that reports its usage is never second-guessed.
	g := newLLM(t, func(n int, req map[string]any, w http.ResponseWriter, _ *http.Request) {
		completion(w, "gpt-4o-mini", "Hello.")
	})
	cred = r.credential(t, "openai", g.URL(), goodKey, "gpt-4o-mini", nil)
	res, err := r.eng.Generate(context.Background(), engine.Call{Source: "chat", CredentialID: &cred, Messages: hello})
	if err != nil || res.UsageEstimated || res.Usage.InputTokens != 1000 || res.Usage.OutputTokens != 500 {
		t.Fatalf("reported usage: %+v, %v", res, err)
	}
}

func TestUnknownModelHasNoCost(t *testing.T) {
	r := newRig(t, engine.Options{})
	f := newLLM(t, func(n int, req map[string]any, w http.ResponseWriter, _ *http.Request) {
		completion(w, req["model"].(string), "local answer")
	})
	cred := r.credential(t, "openai_compatible", f.URL(), "", "llama3.1:8b", nil)
	res, err := r.eng.Generate(context.Background(), engine.Call{Source: "chat", CredentialID: &cred, Messages: hello})
	if err != nil {
		t.Fatal(err)
	}
	if res.Cost != nil {
		t.Fatalf("cost of an unknown model = %v, want nil", res.Cost.USD())
	}
	ev := r.usage(t)
	if len(ev) != 1 || ev[0].Cost != nil || ev[0].Status != "ok" || ev[0].InputTokens != 1000 {
		t.Fatalf("usage: %+v (cost %v)", ev, ev[0].Cost)
	}
	// Priced by an override, the same model has a cost.
	r.settings(t, store.AISettings{PriceOverrides: map[string]store.Price{"llama3.1": {Input: 1, Output: 2}}})
	res, err = r.eng.Generate(context.Background(), engine.Call{Source: "chat", CredentialID: &cred, Model: "llama3.1-8b", Messages: hello})
	if err != nil {
		t.Fatal(err)
	}
	if res.Cost == nil || !near(res.Cost.USD(), (1000*1.0+500*2.0)/1e6) {
		t.Fatalf("overridden cost = %v", res.Cost)
	}
}

func TestResolveConflicts(t *testing.T) {
	r := newRig(t, engine.Options{})
	f := newLLM(t, nil)
	envA, envB := r.env(t, "A"), r.env(t, "B")
	noModel := r.credential(t, "openai", f.URL(), goodKey, "", nil)
	credB := r.credential(t, "openai", f.URL(), goodKey, "gpt-4o-mini", &envB)
	wp := r.credential(t, "wordpress", "https://wp.example", "app pass word", "", nil)
	other, _ := keyring.New([]byte("some-other-installation-secret-key-0123"))
	foreign, err := r.db.CreateCredential(context.Background(), store.NewCredential{Name: "foreign", Provider: "openai", BaseURL: f.URL(),
		SecretHint: "x", DefaultModel: "gpt-4o-mini",
		Seal: func(id int64) ([]byte, error) { return other.Seal([]byte(goodKey), store.CredentialAAD(id)) }})
	if err != nil {
		t.Fatal(err)
	}
	// Deleted last: SQLite would give its id to the next row.
	gone := r.credential(t, "openai", f.URL(), goodKey, "gpt-4o-mini", nil)
	if err := r.db.DeleteCredential(context.Background(), gone); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name   string
		call   engine.Call
		kind   store.Kind
		detail []string
	}{
		// noModel and foreign are usable everywhere, and nothing chooses
		// between them (TestOnlyCredential has none and one).
		{"SeveralUnchosen", engine.Call{}, store.KindConflict, []string{"2 AI credentials are usable here and none is chosen", "PUT /api/settings/ai-content"}},
		{"SeveralUnchosenInEnvironment", engine.Call{EnvironmentID: &envA}, store.KindConflict, []string{"none is chosen", "PUT /api/settings/ai-content"}},
		{"DeletedCredential", engine.Call{CredentialID: &gone}, store.KindConflict, []string{"no longer exists", "POST /api/configurations"}},
		{"WordPressCredential", engine.Call{CredentialID: &wp}, store.KindConflict, []string{"not an AI provider"}},
		{"OtherEnvironment", engine.Call{CredentialID: &credB, EnvironmentID: &envA}, store.KindConflict, []string{"another environment"}},
		{"EnvironmentCredentialWithoutEnvironment", engine.Call{CredentialID: &credB}, store.KindConflict, []string{"another environment"}},
		{"NoModel", engine.Call{CredentialID: &noModel}, store.KindConflict, []string{"no model is chosen", "default_model"}},
		{"ForeignSeal", engine.Call{CredentialID: &foreign.ID}, store.KindConflict, []string{"cannot be opened"}},
		{"NoMessages", engine.Call{CredentialID: &credB, EnvironmentID: &envB, Messages: []ai.Message{}}, store.KindInvalid, []string{"messages"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.call.Messages == nil {
				c.call.Messages = hello
			}
			c.call.Source = "chat"
			_, err := r.eng.Generate(context.Background(), c.call)
			if store.KindOf(err) != c.kind {
				t.Fatalf("kind %v, want %v: %v", store.KindOf(err), c.kind, err)
			}
			for _, s := range c.detail {
				if !strings.Contains(store.Message(err), s) {
					t.Errorf("detail %q lacks %q", store.Message(err), s)
				}
			}
			if c.kind == store.KindConflict {
				if _, _, perr := r.eng.Plan(context.Background(), c.call); store.KindOf(perr) != store.KindConflict {
					t.Errorf("Plan: %v", perr)
				}
			}
		})
	}
	if n := len(f.Requests()); n != 0 {
		t.Fatalf("the provider was called %d times", n)
	}
	if ev := r.usage(t); len(ev) != 0 {
		t.Fatalf("calls that never reached a provider recorded usage: %+v", ev)
	}
}

// TestOnlyCredential: with no credential chosen anywhere, the one AI
// credential usable where the call runs is used; none is a 409 that says
// how to add one, several a 409 that says to choose.
func TestOnlyCredential(t *testing.T) {
	r := newRig(t, engine.Options{})
	f := newLLM(t, nil)
	ctx := context.Background()
	envA, envB := r.env(t, "A"), r.env(t, "B")
	generate := func(env *int64) (*engine.Result, error) {
		return r.eng.Generate(ctx, engine.Call{Source: "chat", EnvironmentID: env, Messages: hello})
	}
	wantConflict := func(t *testing.T, env *int64, parts ...string) {
		t.Helper()
		_, err := generate(env)
		if store.KindOf(err) != store.KindConflict {
			t.Fatalf("got %v, want a conflict", err)
		}
		for _, p := range parts {
			if !strings.Contains(store.Message(err), p) {
				t.Errorf("detail %q lacks %q", store.Message(err), p)
			}
		}
	}
	wantUsed := func(t *testing.T, env *int64, cred int64) {
		t.Helper()
		res, err := generate(env)
		if err != nil {
			t.Fatal(err)
		}
		if res.CredentialID != cred {
			t.Fatalf("used credential %d, want %d", res.CredentialID, cred)
		}
		if eff, err := r.eng.Effective(ctx, env); err != nil || eff.CredentialID == nil || *eff.CredentialID != cred {
			t.Fatalf("Effective says %s (%v), want credential %d", deref(eff), err, cred)
		}
	}

	// A WordPress credential and an AI credential of another environment
	// do not count.
	r.credential(t, "wordpress", "https://wp.example", "app pass word", "", nil)
	onlyB := r.credential(t, "openai", f.URL(), goodKey, "gpt-4o-mini", &envB)
	t.Run("None", func(t *testing.T) {
		wantConflict(t, nil, "no AI provider is configured", "POST /api/configurations", "PUT /api/settings/ai-content")
		wantConflict(t, &envA, "no AI provider is configured")
	})
	t.Run("TheEnvironmentsOwn", func(t *testing.T) { wantUsed(t, &envB, onlyB) })
	global := r.credential(t, "openai_compatible", f.URL(), goodKey, "gpt-4o", nil)
	t.Run("OneGlobal", func(t *testing.T) {
		r.settings(t, store.AISettings{Temperature: ptr(0.1)}) // settings that choose no credential
		wantUsed(t, nil, global)
		wantUsed(t, &envA, global)
	})
	t.Run("GlobalBesideTheEnvironmentsOwn", func(t *testing.T) {
		wantConflict(t, &envB, "2 AI credentials are usable here and none is chosen", "PUT /api/settings/ai-content")
	})
	second := r.credential(t, "openai", f.URL(), goodKey, "gpt-4o-mini", nil)
	t.Run("TwoGlobal", func(t *testing.T) {
		wantConflict(t, nil, "2 AI credentials are usable here", "PUT /api/settings/ai-content")
		wantConflict(t, &envA, "none is chosen")
		if eff, _ := r.eng.Effective(ctx, nil); eff.CredentialID != nil {
			t.Fatalf("Effective picked %d among two", *eff.CredentialID)
		}
	})
	t.Run("Chosen", func(t *testing.T) {
		r.settings(t, store.AISettings{CredentialID: &second})
		wantUsed(t, nil, second)
		wantUsed(t, &envB, second)
	})
	if n := len(f.Requests()); n == 0 {
		t.Fatal("the provider was never called")
	}
}

func TestBudgetNotifications(t *testing.T) {
	r := newRig(t, engine.Options{})
	ctx := context.Background()
	f := newLLM(t, func(n int, req map[string]any, w http.ResponseWriter, _ *http.Request) {
		completion(w, "budget-model", "spent")
	})
	envA, envB := r.env(t, "Shop"), r.env(t, "Other")
	if _, err := r.db.SetUserEnvironments(ctx, r.user.ID, []int64{envA}); err != nil {
		t.Fatal(err)
	}
	outsider, err := r.db.CreateUser(ctx, store.NewUser{Email: "bob@example.com", Username: "bob", PasswordHash: "x", Role: store.RoleEditor})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.db.SetUserEnvironments(ctx, outsider.ID, []int64{envB}); err != nil {
		t.Fatal(err)
	}
	admin, err := r.db.CreateUser(ctx, store.NewUser{Email: "root@example.com", Username: "root", PasswordHash: "x", Role: store.RoleAdmin})
	if err != nil {
		t.Fatal(err)
	}
	cred := r.credential(t, "openai", f.URL(), goodKey, "budget-model", nil)
	// Each call: 500 output tokens at $600 per million = $0.30; input free.
	r.settings(t, store.AISettings{CredentialID: &cred,
		PriceOverrides: map[string]store.Price{"budget-model": {Input: 0, Output: 600, CachedInput: ptr(0.0)}}})
	r.settings(t, store.AISettings{EnvironmentID: &envA, MonthlyBudget: store.MicrosOfUSD(ptr(1.0))})
	// Spending of another month and of another environment does not count.
	lastMonth := now.AddDate(0, -1, 0)
	for _, ev := range []store.UsageEvent{
		{CreatedAt: lastMonth, Provider: "openai", Model: "budget-model", Cost: store.MicrosOfUSD(ptr(5.0)), Status: "ok", Source: "chat", EnvironmentID: &envA},
		{CreatedAt: now, Provider: "openai", Model: "budget-model", Cost: store.MicrosOfUSD(ptr(5.0)), Status: "ok", Source: "chat", EnvironmentID: &envB},
	} {
		if _, err := r.db.RecordUsage(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}

	budgetNotes := func(uid int64) []*store.Notification {
		t.Helper()
		list, _, err := r.db.ListNotifications(ctx, store.NotificationFilter{UserID: uid, Page: store.Page{Page: 1, PerPage: 100}})
		if err != nil {
			t.Fatal(err)
		}
		var out []*store.Notification
		for _, n := range list {
			if n.Kind == notify.BudgetReached {
				out = append(out, n)
			}
		}
		return out
	}
	// Spent after each call: 0.30, 0.60, 0.90 (crosses 80%), 1.20 (crosses
	// 100%), 1.50, 1.80.
	wantAfter := []int{0, 0, 1, 2, 2, 2}
	for i, want := range wantAfter {
		res, err := r.eng.Generate(ctx, engine.Call{Source: "execution", UserID: &r.user.ID, EnvironmentID: &envA, Messages: hello})
		if err != nil {
			t.Fatal(err)
		}
		if res.Cost == nil || !near(res.Cost.USD(), 0.30) {
			t.Fatalf("call %d cost %v, want 0.30", i+1, res.Cost)
		}
		if got := budgetNotes(r.user.ID); len(got) != want {
			t.Fatalf("after call %d (spent $%.2f): %d budget notifications, want %d", i+1, 0.3*float64(i+1), len(got), want)
		}
	}
	notes := budgetNotes(r.user.ID) // newest first
	for i, pct := range []string{"100%", "80%"} {
		n := notes[i]
		if !strings.Contains(n.Title, "Shop") || !strings.Contains(n.Title, pct) || n.EnvironmentID == nil || *n.EnvironmentID != envA ||
			!strings.Contains(n.Link, fmt.Sprint(envA)) {
			t.Errorf("notification %d: %+v", i, n)
		}
	}
	if !strings.Contains(notes[1].Body, "$0.90 of $1.00") || !strings.Contains(notes[0].Body, "$1.20 of $1.00") {
		t.Errorf("bodies: %q, %q", notes[1].Body, notes[0].Body)
	}
	if got := budgetNotes(admin.ID); len(got) != 2 {
		t.Errorf("admin: %d budget notifications, want 2", len(got))
	}
	if got := budgetNotes(outsider.ID); len(got) != 0 {
		t.Errorf("a user without the environment was notified: %+v", got)
	}

	// Environment B has no budget: its spending raises nothing.
	for i := 0; i < 2; i++ {
		if _, err := r.eng.Generate(ctx, engine.Call{Source: "chat", UserID: &outsider.ID, EnvironmentID: &envB, Messages: hello}); err != nil {
			t.Fatal(err)
		}
	}
	if got := budgetNotes(outsider.ID); len(got) != 0 {
		t.Errorf("no budget, yet notified: %+v", got)
	}

	// A new month starts over.
	now2 := now.AddDate(0, 1, 0)
	r.db.Now = func() time.Time { return now2 }
	for i := 0; i < 3; i++ {
		if _, err := r.eng.Generate(ctx, engine.Call{Source: "execution", EnvironmentID: &envA, Messages: hello}); err != nil {
			t.Fatal(err)
		}
	}
	if got := budgetNotes(r.user.ID); len(got) != 3 || !strings.Contains(got[0].Title, "80%") {
		t.Fatalf("next month: %d notifications", len(got))
	}
}

func TestEffective(t *testing.T) {
	r := newRig(t, engine.Options{})
	ctx := context.Background()
	envA, envB := r.env(t, "A"), r.env(t, "B")
	cred := r.credential(t, "openai", "http://127.0.0.1:1/v1", goodKey, "", nil)
	credA := r.credential(t, "openai", "http://127.0.0.1:1/v1", goodKey, "", &envA)

	eff, err := r.eng.Effective(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	// cred is the only AI credential usable outside an environment, and
	// nothing chooses one: it is the effective one.
	if eff.Temperature != 0.7 || eff.MaxOutputTokens != 4096 || eff.Tone != "professional" || eff.Language != "en" ||
		eff.TargetWordCount != 1200 || eff.CredentialID == nil || *eff.CredentialID != cred || eff.Model != "" ||
		eff.MonthlyBudget != nil || eff.PriceOverrides == nil {
		t.Fatalf("defaults: %+v", deref(eff))
	}

	r.settings(t, store.AISettings{CredentialID: &cred, Model: ptr("gpt-4o"), Temperature: ptr(0.3), Tone: ptr("friendly"),
		MonthlyBudget: store.MicrosOfUSD(ptr(10.0)), PriceOverrides: map[string]store.Price{"a": {Input: 1, Output: 1}, "b": {Input: 2, Output: 2}}})
	r.settings(t, store.AISettings{EnvironmentID: &envA, CredentialID: &credA, Temperature: ptr(0.0), Language: ptr("de"),
		TargetWordCount: ptr(500), PriceOverrides: map[string]store.Price{"b": {Input: 3, Output: 3}, "c": {Input: 4, Output: 4}}})

	cases := []struct {
		name string
		env  *int64
		want engine.Effective
	}{
		{"Global", nil, engine.Effective{CredentialID: &cred, Model: "gpt-4o", Temperature: 0.3, MaxOutputTokens: 4096, Tone: "friendly",
			Language: "en", TargetWordCount: 1200, MonthlyBudget: store.MicrosOfUSD(ptr(10.0)),
			PriceOverrides: map[string]store.Price{"a": {Input: 1, Output: 1}, "b": {Input: 2, Output: 2}}}},
		{"Override", &envA, engine.Effective{CredentialID: &credA, Model: "gpt-4o", Temperature: 0, MaxOutputTokens: 4096, Tone: "friendly",
			Language: "de", TargetWordCount: 500, MonthlyBudget: store.MicrosOfUSD(ptr(10.0)),
			PriceOverrides: map[string]store.Price{"a": {Input: 1, Output: 1}, "b": {Input: 3, Output: 3}, "c": {Input: 4, Output: 4}}}},
		{"NoOverride", &envB, engine.Effective{CredentialID: &cred, Model: "gpt-4o", Temperature: 0.3, MaxOutputTokens: 4096, Tone: "friendly",
			Language: "en", TargetWordCount: 1200, MonthlyBudget: store.MicrosOfUSD(ptr(10.0)),
			PriceOverrides: map[string]store.Price{"a": {Input: 1, Output: 1}, "b": {Input: 2, Output: 2}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := r.eng.Effective(ctx, c.env)
			if err != nil {
				t.Fatal(err)
			}
			if g, w := fmt.Sprintf("%+v", deref(got)), fmt.Sprintf("%+v", deref(c.want)); g != w {
				t.Fatalf("got  %s\nwant %s", g, w)
			}
		})
	}
	// Effective hands out its own map: changing it changes nothing stored.
	got, _ := r.eng.Effective(ctx, &envA)
	got.PriceOverrides["a"] = store.Price{Input: 99}
	again, _ := r.eng.Effective(ctx, &envA)
	if again.PriceOverrides["a"].Input != 1 {
		t.Fatalf("Effective shares its price map")
	}
	// The built-in defaults are not changed by merging.
	if engine.Defaults.Temperature != 0.7 || engine.Defaults.PriceOverrides != nil {
		t.Fatalf("Defaults changed: %+v", engine.Defaults)
	}
}

// deref renders the pointers of an Effective as values, for comparison.
func deref(e engine.Effective) string {
	cred, budget := "nil", "nil"
	if e.CredentialID != nil {
		cred = fmt.Sprint(*e.CredentialID)
	}
	if e.MonthlyBudget != nil {
		budget = fmt.Sprint(e.MonthlyBudget.USD())
	}
	prices, _ := json.Marshal(e.PriceOverrides) // sorted keys
	return fmt.Sprintf("cred=%s model=%q temp=%v max=%d tone=%q lang=%q words=%d budget=%s prices=%s",
		cred, e.Model, e.Temperature, e.MaxOutputTokens, e.Tone, e.Language, e.TargetWordCount, budget, prices)
}

func TestTestCredential(t *testing.T) {
	r := newRig(t, engine.Options{})
	ctx := context.Background()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if req.Header.Get("Authorization") != "Bearer "+goodKey {
			w.WriteHeader(401)
			fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s","type":"invalid_request_error"}}`,
				strings.TrimPrefix(req.Header.Get("Authorization"), "Bearer "))
			return
		}
		fmt.Fprint(w, `{"object":"list","data":[{"id":"zeta","object":"model","created":1,"owned_by":"x"},{"id":"alpha","object":"model","created":1,"owned_by":"x"}]}`)
	}))
	t.Cleanup(srv.Close)
	const wrong = "sk-engine-wrong-key-for-test-00001"
	for _, c := range []struct {
		key    string
		ok     bool
		models []string
	}{{goodKey, true, []string{"alpha", "zeta"}}, {wrong, false, nil}} {
		id := r.credential(t, "openai", srv.URL+"/v1", c.key, "", nil)
		cred, _ := r.db.CredentialByID(ctx, id)
		res, err := r.eng.TestCredential(ctx, cred)
		if err != nil {
			t.Fatal(err)
		}
		if res.OK != c.ok || fmt.Sprint(res.Models) != fmt.Sprint(c.models) || strings.Contains(res.Detail, c.key) {
			t.Fatalf("%+v", res)
		}
		cred, _ = r.db.CredentialByID(ctx, id)
		if cred.LastTestOK == nil || *cred.LastTestOK != c.ok || cred.LastTestedAt == nil || strings.Contains(cred.LastTestError, c.key) {
			t.Fatalf("recorded: %+v", cred)
		}
		if !c.ok && !strings.Contains(cred.LastTestError, "Incorrect API key provided") {
			t.Fatalf("last_test_error: %q", cred.LastTestError)
		}
	}
	// No usage is recorded for a test.
	if ev := r.usage(t); len(ev) != 0 {
		t.Fatalf("usage: %+v", ev)
	}
}

// A price override saved before prices were bounded (1e308) must not make
// a cost of +Inf, which JSON cannot hold: the call's cost is unknown.
func TestInfiniteCostIsUnknown(t *testing.T) {
	r := newRig(t, engine.Options{})
	f := newLLM(t, func(n int, req map[string]any, w http.ResponseWriter, _ *http.Request) {
		completion(w, req["model"].(string), "answer")
	})
	cred := r.credential(t, "openai_compatible", f.URL(), "", "llama3.1", nil)
	r.settings(t, store.AISettings{PriceOverrides: map[string]store.Price{"llama3.1": {Input: 1e308, Output: 1e308}}})
	res, err := r.eng.Generate(context.Background(), engine.Call{Source: "chat", CredentialID: &cred, Messages: hello})
	if err != nil {
		t.Fatal(err)
	}
	if res.Cost != nil {
		t.Fatalf("cost = %v, want nil", res.Cost.USD())
	}
	if ev := r.usage(t); len(ev) != 1 || ev[0].Cost != nil {
		t.Fatalf("usage: %+v", ev)
	}
}

// A tiny budget's notice tells the amounts apart: a $0.0004 call against a
// $0.000001 budget read "$0.0004 spent of $0.0000".
func TestBudgetNoticeDigits(t *testing.T) {
	r := newRig(t, engine.Options{})
	ctx := context.Background()
	f := newLLM(t, func(n int, req map[string]any, w http.ResponseWriter, _ *http.Request) {
		completion(w, "tiny-model", "spent")
	})
	env := r.env(t, "Tiny")
	if _, err := r.db.SetUserEnvironments(ctx, r.user.ID, []int64{env}); err != nil {
		t.Fatal(err)
	}
	cred := r.credential(t, "openai", f.URL(), goodKey, "tiny-model", nil)
	// 500 output tokens at $0.80 per million: $0.0004.
	r.settings(t, store.AISettings{CredentialID: &cred,
		PriceOverrides: map[string]store.Price{"tiny-model": {Input: 0, Output: 0.8, CachedInput: ptr(0.0)}}})
	r.settings(t, store.AISettings{EnvironmentID: &env, MonthlyBudget: store.MicrosOfUSD(ptr(0.000001))})
	if _, err := r.eng.Generate(ctx, engine.Call{Source: "execution", UserID: &r.user.ID, EnvironmentID: &env, Messages: hello}); err != nil {
		t.Fatal(err)
	}
	list, _, err := r.db.ListNotifications(ctx, store.NotificationFilter{UserID: r.user.ID, Page: store.Page{Page: 1, PerPage: 10}})
	if err != nil || len(list) == 0 {
		t.Fatalf("no notification (%v)", err)
	}
	if !strings.Contains(list[0].Body, "$0.0004 of $0.000001") {
		t.Fatalf("body %q", list[0].Body)
	}
}

// A model without a price costs nothing known, so only a budget in tokens
// bounds it: each call's 1,500 tokens count, and the token budget notifies
// at 80% and 100% once each, beside (not instead of) the money budget.
func TestTokenBudgetNotifications(t *testing.T) {
	r := newRig(t, engine.Options{})
	ctx := context.Background()
	f := newLLM(t, func(n int, req map[string]any, w http.ResponseWriter, _ *http.Request) {
		completion(w, "llama3.1:8b", "local") // 1000 input and 500 output tokens
	})
	env := r.env(t, "Shop")
	if _, err := r.db.SetUserEnvironments(ctx, r.user.ID, []int64{env}); err != nil {
		t.Fatal(err)
	}
	cred := r.credential(t, "openai_compatible", f.URL(), goodKey, "llama3.1:8b", nil)
	r.settings(t, store.AISettings{CredentialID: &cred})
	r.settings(t, store.AISettings{EnvironmentID: &env, MonthlyBudget: store.MicrosOfUSD(ptr(1.0)), MonthlyBudgetTokens: ptr[int64](4000)})
	notes := func() []string {
		list, _, err := r.db.ListNotifications(ctx, store.NotificationFilter{UserID: r.user.ID, Page: store.Page{Page: 1, PerPage: 100}})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, n := range list {
			if n.Kind == notify.BudgetReached {
				out = append(out, n.Title+" "+n.Body)
			}
		}
		return out
	}
	// Tokens after each call: 1,500, 3,000 (crosses none: 75%), 4,500
	// (crosses 80% and 100%), 6,000.
	for i, want := range []int{0, 0, 2, 2} {
		res, err := r.eng.Generate(ctx, engine.Call{Source: "chat", UserID: &r.user.ID, EnvironmentID: &env, Messages: hello})
		if err != nil || res.Cost != nil {
			t.Fatalf("call %d: cost %v, %v; want an unknown cost", i+1, res.Cost, err)
		}
		if got := notes(); len(got) != want {
			t.Fatalf("after call %d: %d budget notifications, want %d: %q", i+1, len(got), want, got)
		}
	}
	got := strings.Join(notes(), "\n")
	if !strings.Contains(got, "Shop has used 100% of its monthly AI token budget 4,500 tokens of 4,000 tokens in") ||
		!strings.Contains(got, "Shop has used 80% of its monthly AI token budget") || strings.Contains(got, "$") {
		t.Fatalf("notifications:\n%s", got)
	}
	if s := engine.Tokens(1234567); s != "1,234,567 tokens" {
		t.Fatalf("Tokens = %q", s)
	}
}
