package engine_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/copydesk/copydesk/server/ai"
	"github.com/copydesk/copydesk/server/engine"
	"github.com/copydesk/copydesk/store"
)

func TestContextWindow(t *testing.T) {
	overrides := map[string]int{"llama3.1": 131072, "gpt-4o-mini": 64000}
	cases := []struct {
		name, model string
		overrides   map[string]int
		want        int
		known       bool
	}{
		{"Exact", "gpt-4o", nil, 128000, true},
		{"Dated", "claude-sonnet-4-5-20250929", nil, 200000, true},
		{"Latest", "claude-3-5-haiku-latest", nil, 200000, true},
		{"OtherModelOfAFamily", "gpt-4o-audio-preview", nil, engine.DefaultContextWindow, false},
		{"OverrideWins", "gpt-4o-mini", overrides, 64000, true},
		{"OverrideNamesAFamily", "llama3.1-8b-instruct", overrides, 131072, true},
		{"Unknown", "qwen2.5:7b", overrides, engine.DefaultContextWindow, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, known := engine.ContextWindow(c.model, c.overrides)
			if got != c.want || known != c.known {
				t.Fatalf("ContextWindow(%q) = %d, %v; want %d, %v", c.model, got, known, c.want, c.known)
			}
		})
	}
	// Every model with a price has a context window.
	windows := engine.BuiltinContextWindows()
	for m := range engine.BuiltinPrices() {
		if windows[m] == 0 {
			t.Errorf("%s has a price but no context window", m)
		}
	}
}

func TestTokenEstimate(t *testing.T) {
	for _, c := range []struct {
		text string
		want int64
	}{{"", 0}, {"a", 1}, {"abcd", 1}, {"abcde", 2}, {strings.Repeat("word ", 100), 125}, {"日本語", 3}} {
		if got := engine.EstimateTokens(c.text); got != c.want {
			t.Errorf("EstimateTokens(%q) = %d, want %d", c.text, got, c.want)
		}
	}
	if got := engine.PromptBudget(8192, 1000); got != 6472 {
		t.Errorf("PromptBudget(8192, 1000) = %d, want 90%% of 7192", got)
	}
	if got := engine.PromptBudget(1000, 2000); got != 0 {
		t.Errorf("PromptBudget with the answer over the window = %d, want 0", got)
	}
}

func TestTrim(t *testing.T) {
	long := strings.Repeat("x", 400) // 100 tokens + 4 overhead
	msgs := []ai.Message{{Role: "user", Content: long}, {Role: "assistant", Content: long}, {Role: "user", Content: long},
		{Role: "assistant", Content: long}, {Role: "user", Content: "last"}}
	cases := []struct {
		name        string
		budget      int64
		wantDropped int
	}{
		{"AllFit", 1000, 0},
		// 4 x 104 + 5 = 421: without the first two, 213 fit in 220.
		{"OldestGo", 220, 2},
		// Without the first one, 317 fit in 320, but would start with the
		// assistant: its question went, so it goes too.
		{"NoLeadingReply", 320, 2},
		{"LastAlwaysKept", 1, 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			kept, dropped := engine.Trim("", msgs, c.budget)
			if dropped != c.wantDropped || len(kept) != len(msgs)-c.wantDropped || kept[len(kept)-1].Content != "last" {
				t.Fatalf("dropped %d (kept %d), want %d", dropped, len(kept), c.wantDropped)
			}
			if kept[0].Role != "user" {
				t.Fatalf("kept starts with %s", kept[0].Role)
			}
		})
	}
}

// Effective carries the context window overrides of every level, the
// environment's over the global ones.
func TestEffectiveContextWindows(t *testing.T) {
	r := newRig(t, engine.Options{})
	envID := r.env(t, "Blog")
	r.settings(t, store.AISettings{ContextWindows: map[string]int{"llama3.1": 32768, "mistral": 32000}})
	r.settings(t, store.AISettings{EnvironmentID: &envID, ContextWindows: map[string]int{"llama3.1": 131072}})
	eff, err := r.eng.Effective(context.Background(), &envID)
	if err != nil {
		t.Fatal(err)
	}
	if eff.ContextWindow("llama3.1") != 131072 || eff.ContextWindow("mistral-7b") != 32000 || eff.ContextWindow("gpt-4o") != 128000 {
		t.Fatalf("context windows: %v", eff.ContextWindows)
	}
}

// Messages hold only user and assistant turns; system text is the call's
// System, and a call names its usage source. Both are refused before any
// provider call.
func TestCallRules(t *testing.T) {
	r := newRig(t, engine.Options{})
	f := newLLM(t, nil)
	cred := r.credential(t, "openai", f.URL(), goodKey, "gpt-4o-mini", nil)
	cases := []struct {
		name string
		call engine.Call
		want string
	}{
		{"SystemMessage", engine.Call{Source: "cie", Messages: []ai.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hi"}}},
			"messages[0]: a message cannot have the system role"},
		{"UnknownRole", engine.Call{Source: "cie", Messages: []ai.Message{{Role: "tool", Content: "x"}}}, `role "tool"`},
		{"NoSource", engine.Call{Messages: hello}, `source ""`},
		{"UnknownSource", engine.Call{Source: "magic", Messages: hello}, `source "magic"`},
		{"NoMessages", engine.Call{Source: "cie"}, "at least one message"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.call.CredentialID = &cred
			for _, stream := range []bool{false, true} {
				var err error
				if stream {
					_, err = r.eng.Stream(context.Background(), c.call, func(string) error { return nil })
				} else {
					_, err = r.eng.Generate(context.Background(), c.call)
				}
				if store.KindOf(err) != store.KindInvalid || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("stream %v: err = %v, want invalid with %q", stream, err, c.want)
				}
			}
		})
	}
	if n := len(f.Requests()); n != 0 {
		t.Fatalf("%d provider calls for refused calls", n)
	}
	if n := len(r.usage(t)); n != 0 {
		t.Fatalf("%d usage events for refused calls", n)
	}
	// The system text reaches the provider as its system message.
	if _, err := r.eng.Generate(context.Background(), engine.Call{Source: "cie", CredentialID: &cred, System: "Be brief.", Messages: hello}); err != nil {
		t.Fatal(err)
	}
	msgs := f.Requests()[0]["messages"].([]any)
	if first := msgs[0].(map[string]any); first["role"] != "system" || first["content"] != "Be brief." || len(msgs) != 2 {
		t.Fatalf("messages sent: %v", msgs)
	}
}

// A stream cut off mid-answer returns what was streamed with the error,
// and records its usage: estimated when the provider had sent none, and
// marked so.
func TestCutOffStreamRecordsEstimatedUsage(t *testing.T) {
	r := newRig(t, engine.Options{})
	f := newLLM(t, func(n int, req map[string]any, w http.ResponseWriter, _ *http.Request) {
		// Two pieces and the finish chunk, then the connection ends:
		// no usage chunk, no [DONE].
		streamChunks(w, "gpt-4o-mini", []string{"Hello ", "wonderful wor"}, false)
	})
	envID := r.env(t, "Blog")
	cred := r.credential(t, "openai", f.URL(), goodKey, "gpt-4o-mini", nil)
	call := engine.Call{Source: "cie", UserID: &r.user.ID, EnvironmentID: &envID, CredentialID: &cred,
		System: "Be brief.", Messages: []ai.Message{{Role: "user", Content: "Say hello to the whole wide world."}}}
	var streamed strings.Builder
	res, err := r.eng.Stream(context.Background(), call, func(s string) error { streamed.WriteString(s); return nil })
	if err == nil || store.KindOf(err) != store.KindRemote || !strings.Contains(err.Error(), "connection lost") {
		t.Fatalf("err = %v", err)
	}
	if res == nil || !res.Partial || res.Text != "Hello wonderful wor" || res.Text != streamed.String() || !res.UsageEstimated {
		t.Fatalf("result %+v", res)
	}
	wantIn := engine.EstimatePrompt(call.System, call.Messages)
	wantOut := engine.EstimateTokens("Hello wonderful wor")
	if res.Usage.InputTokens != wantIn || res.Usage.OutputTokens != wantOut || wantIn == 0 || wantOut != 5 {
		t.Fatalf("usage %+v, want %d in and %d out", res.Usage, wantIn, wantOut)
	}
	evs := r.usage(t)
	if len(evs) != 1 {
		t.Fatalf("%d usage events", len(evs))
	}
	ev := evs[0]
	if ev.Status != "error" || !ev.Estimated || ev.Source != "cie" || ev.InputTokens != wantIn || ev.OutputTokens != wantOut ||
		ev.Cost == nil || ev.Cost.USD() <= 0 || ev.EnvironmentID == nil || *ev.EnvironmentID != envID {
		t.Fatalf("usage event %+v", ev)
	}

	// A complete stream's usage is the provider's, not estimated.
	ok := newLLM(t, func(n int, req map[string]any, w http.ResponseWriter, _ *http.Request) {
		streamChunks(w, "gpt-4o-mini", []string{"Hi."}, true)
		w.Write([]byte("data: [DONE]\n\n"))
	})
	cred2 := r.credential(t, "openai", ok.URL(), goodKey, "gpt-4o-mini", nil)
	call.CredentialID = &cred2
	if res, err := r.eng.Stream(context.Background(), call, func(string) error { return nil }); err != nil || res.UsageEstimated || res.Partial {
		t.Fatalf("complete stream: %+v, %v", res, err)
	}
	if ev := r.usage(t)[0]; ev.Estimated || ev.Status != "ok" || ev.InputTokens != 1000 {
		t.Fatalf("complete stream's usage event %+v", ev)
	}
}

// A usage event that cannot be stored is reported (and the answer stands).
func TestRecordFailureIsReported(t *testing.T) {
	var reported []error
	r := newRig(t, engine.Options{OnRecordError: func(err error) { reported = append(reported, err) }})
	f := newLLM(t, nil)
	cred := r.credential(t, "openai", f.URL(), goodKey, "gpt-4o-mini", nil)
	// An environment that does not exist: the event's reference fails.
	gone := int64(9999)
	res, err := r.eng.Generate(context.Background(), engine.Call{Source: "chat", EnvironmentID: &gone, CredentialID: &cred, Messages: hello})
	if err != nil || res.Text == "" {
		t.Fatalf("Generate = %+v, %v", res, err)
	}
	if len(reported) != 1 || !strings.Contains(reported[0].Error(), "record usage of a chat call") {
		t.Fatalf("reported %v", reported)
	}
}
