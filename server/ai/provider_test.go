package ai

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/copydesk/copydesk/server/outbound"
)

func TestGenerate(t *testing.T) {
	for _, w := range wires {
		t.Run(w.kind, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, w, jsonAnswer(http.StatusOK, w.success("A dog.")))
			p := f.provider()
			if p.Kind() != w.kind {
				t.Errorf("Kind() = %q, want %q", p.Kind(), w.kind)
			}
			res, err := p.Generate(context.Background(), testRequest())
			if err != nil {
				t.Fatalf("Generate: %v", err)
			}
			want := &Response{Text: "A dog.", Model: w.model, StopReason: w.stopReason, Usage: wantUsage}
			if !reflect.DeepEqual(res, want) {
				t.Errorf("Generate = %+v, want %+v", res, want)
			}
			checkSent(t, f, false)
		})
	}
}

func TestStream(t *testing.T) {
	deltas := []string{"A ", "dog", ", barking", "."}
	for _, w := range wires {
		t.Run(w.kind, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, w, sseAnswer(w.stream(deltas)...))
			res, pieces, err := collect(f.provider(), context.Background(), testRequest())
			if err != nil {
				t.Fatalf("Stream: %v", err)
			}
			if !reflect.DeepEqual(pieces, deltas) {
				t.Errorf("onDelta got %q, want %q", pieces, deltas)
			}
			want := &Response{Text: "A dog, barking.", Model: w.model, StopReason: w.stopReason, Usage: wantUsage}
			if !reflect.DeepEqual(res, want) {
				t.Errorf("Stream = %+v, want %+v", res, want)
			}
			checkSent(t, f, true)
		})
	}
}

// checkSent checks what the server received for testRequest.
func checkSent(t *testing.T, f *fake, stream bool) {
	t.Helper()
	got := f.lastRequest()
	if got.method != http.MethodPost || got.path != f.w.prefix+f.w.genPath {
		t.Errorf("request %s %s, want POST %s", got.method, got.path, f.w.prefix+f.w.genPath)
	}
	b := got.body
	if b["model"] != "the-model" {
		t.Errorf("model = %v", b["model"])
	}
	if b["temperature"] != 0.25 {
		t.Errorf("temperature = %v", b["temperature"])
	}
	if s, _ := b["stream"].(bool); s != stream {
		t.Errorf("stream = %v, want %v", b["stream"], stream)
	}
	type msg struct{ role, content string }
	var msgs []msg
	switch f.w.kind {
	case Anthropic:
		if h := got.header.Get("X-Api-Key"); h != testKey {
			t.Errorf("X-Api-Key = %q", h)
		}
		if got.header.Get("Anthropic-Version") == "" {
			t.Error("no Anthropic-Version header")
		}
		if got.header.Get("Authorization") != "" {
			t.Error("Authorization header sent to Anthropic")
		}
		if b["max_tokens"] != 300.0 {
			t.Errorf("max_tokens = %v", b["max_tokens"])
		}
		system, _ := b["system"].([]any)
		if len(system) != 1 || system[0].(map[string]any)["text"] != "You are a copy editor." {
			t.Errorf("system = %v", b["system"])
		}
		for _, m := range b["messages"].([]any) {
			m := m.(map[string]any)
			blocks := m["content"].([]any)
			if len(blocks) != 1 || blocks[0].(map[string]any)["type"] != "text" {
				t.Errorf("content = %v", m["content"])
			}
			msgs = append(msgs, msg{m["role"].(string), blocks[0].(map[string]any)["text"].(string)})
		}
	default:
		if h := got.header.Get("Authorization"); h != "Bearer "+testKey {
			t.Errorf("Authorization = %q", h)
		}
		maxField, otherField := "max_completion_tokens", "max_tokens"
		if f.w.kind == OpenAICompatible {
			maxField, otherField = otherField, maxField
		}
		if b[maxField] != 300.0 || b[otherField] != nil {
			t.Errorf("%s = %v, %s = %v", maxField, b[maxField], otherField, b[otherField])
		}
		if stream {
			opts, _ := b["stream_options"].(map[string]any)
			if opts["include_usage"] != true {
				t.Errorf("stream_options = %v", b["stream_options"])
			}
		}
		for _, m := range b["messages"].([]any) {
			m := m.(map[string]any)
			msgs = append(msgs, msg{m["role"].(string), m["content"].(string)})
		}
		if len(msgs) == 0 || msgs[0] != (msg{"system", "You are a copy editor."}) {
			t.Errorf("first message = %v, want the system prompt", msgs)
		} else {
			msgs = msgs[1:]
		}
	}
	want := []msg{{"user", "Fix: teh cat"}, {"assistant", "the cat"}, {"user", "And: a dog"}}
	if !reflect.DeepEqual(msgs, want) {
		t.Errorf("messages = %v, want %v", msgs, want)
	}
}

func TestRequestDefaults(t *testing.T) {
	// No system prompt, temperature or max tokens: nothing is sent for them,
	// except Anthropic's required max_tokens.
	for _, w := range wires {
		t.Run(w.kind, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, w, jsonAnswer(http.StatusOK, w.success("ok")))
			_, err := f.provider().Generate(context.Background(), Request{
				Model: "m", Messages: []Message{{Role: "user", Content: "hi"}},
			})
			if err != nil {
				t.Fatalf("Generate: %v", err)
			}
			b := f.lastRequest().body
			for _, k := range []string{"system", "temperature", "max_completion_tokens"} {
				if _, ok := b[k]; ok {
					t.Errorf("%s sent: %v", k, b[k])
				}
			}
			wantMax := any(nil)
			if w.kind == Anthropic {
				wantMax = float64(DefaultAnthropicMaxTokens)
			}
			if b["max_tokens"] != wantMax {
				t.Errorf("max_tokens = %v, want %v", b["max_tokens"], wantMax)
			}
			if msgs := b["messages"].([]any); len(msgs) != 1 {
				t.Errorf("messages = %v", msgs)
			}
		})
	}
}

func TestAPIError(t *testing.T) {
	// The provider's message quotes the key: it must come back masked.
	msg := "Incorrect API key provided: " + testKey + ". You can find your API key at https://example.com."
	for _, w := range wires {
		t.Run(w.kind, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, w, jsonAnswer(http.StatusUnauthorized, w.apiError("authentication_error", msg)))
			p := f.provider(func(c *Config) { c.MaxRetries = 2 })
			calls := map[string]func() error{
				"Generate": func() error { _, err := p.Generate(context.Background(), testRequest()); return err },
				"Stream":   func() error { _, _, err := collect(p, context.Background(), testRequest()); return err },
				"Models":   func() error { _, err := p.Models(context.Background()); return err },
			}
			for name, call := range calls {
				before := f.attempts.Load()
				e := asError(t, call())
				wantMsg := strings.ReplaceAll(msg, testKey, "sk-...WXYZ")
				if e.Status != http.StatusUnauthorized || e.Message != wantMsg || e.Retryable || e.Provider != w.kind {
					t.Errorf("%s: error = %#v, want status 401, message %q, not retryable", name, e, wantMsg)
				}
				if n := f.attempts.Load() - before; n != 1 {
					t.Errorf("%s: %d attempts, want 1 (a 401 is not retried)", name, n)
				}
			}
		})
	}
}

func TestUnparsedErrorBodies(t *testing.T) {
	// Error bodies in other shapes than the providers' own still give the
	// status and the message.
	cases := []struct {
		name, body string
		status     int
		want       string
		retryable  bool
	}{
		{"error string", `{"error":"model \"llama9\" not found, try pulling it first"}`, 404, `model "llama9" not found, try pulling it first`, false},
		{"html", "<html><body>502 Bad Gateway</body></html>", 502, "<html><body>502 Bad Gateway</body></html>", true},
		{"empty", "", 503, "Service Unavailable", true},
		{"detail", `{"detail":"Not authenticated"}`, 403, "Not authenticated", false},
	}
	for _, w := range wires {
		for _, c := range cases {
			t.Run(w.kind+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				f := newFake(t, w, jsonAnswer(c.status, c.body))
				_, err := f.provider().Generate(context.Background(), testRequest())
				e := asError(t, err)
				if e.Status != c.status || e.Message != c.want || e.Retryable != c.retryable {
					t.Errorf("error = %#v, want %d %q retryable=%v", e, c.status, c.want, c.retryable)
				}
			})
		}
	}
}

func TestMalformedResponse(t *testing.T) {
	for _, w := range wires {
		t.Run(w.kind, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, w, jsonAnswer(http.StatusOK, `{"id":"x","choices":[nope]}`))
			_, err := f.provider(func(c *Config) { c.MaxRetries = 2 }).Generate(context.Background(), testRequest())
			e := asError(t, err)
			if e.Status != 0 || e.Retryable || !strings.Contains(e.Message, "malformed") {
				t.Errorf("error = %#v, want a malformed response", e)
			}
		})
	}
}

func TestConcurrentCalls(t *testing.T) {
	// One Provider serves many goroutines; each call's errors are its own.
	for _, w := range wires {
		t.Run(w.kind, func(t *testing.T) {
			t.Parallel()
			ok := sseAnswer(w.stream([]string{"a", "b"})...)
			f := newFake(t, w, func(rw http.ResponseWriter, r *http.Request) {
				if r.Header.Get("X-Fail") != "" {
					jsonAnswer(http.StatusBadRequest, w.apiError("invalid_request_error", "bad"))(rw, r)
					return
				}
				ok(rw, r)
			})
			bad := f.provider(func(c *Config) {
				c.HTTPClient = &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
					r = r.Clone(r.Context())
					r.Header.Set("X-Fail", "1")
					return http.DefaultTransport.RoundTrip(r)
				})}
			})
			good := f.provider()
			var wg sync.WaitGroup
			for i := 0; i < 8; i++ {
				wg.Add(2)
				go func() {
					defer wg.Done()
					res, _, err := collect(good, context.Background(), testRequest())
					if err != nil || res.Text != "ab" {
						t.Errorf("good call: %v, %v", res, err)
					}
				}()
				go func() {
					defer wg.Done()
					_, _, err := collect(bad, context.Background(), testRequest())
					if e := asError(t, err); e.Status != 400 || e.Message != "bad" {
						t.Errorf("bad call: %#v", e)
					}
				}()
			}
			wg.Wait()
		})
	}
}

func TestRetry(t *testing.T) {
	for _, w := range wires {
		t.Run(w.kind, func(t *testing.T) {
			t.Parallel()
			t.Run("429 then success", func(t *testing.T) {
				for _, stream := range []bool{false, true} {
					var n atomic.Int32
					rateLimited := jsonAnswer(http.StatusTooManyRequests, w.apiError("rate_limit_error", "slow down"), "retry-after-ms", "1")
					ok := jsonAnswer(http.StatusOK, w.success("done"))
					if stream {
						ok = sseAnswer(w.stream([]string{"done"})...)
					}
					f := newFake(t, w, func(rw http.ResponseWriter, r *http.Request) {
						if n.Add(1) == 1 {
							rateLimited(rw, r)
							return
						}
						ok(rw, r)
					})
					p := f.provider(func(c *Config) { c.MaxRetries = 3 })
					start := time.Now()
					var res *Response
					var err error
					if stream {
						res, _, err = collect(p, context.Background(), testRequest())
					} else {
						res, err = p.Generate(context.Background(), testRequest())
					}
					if err != nil {
						t.Fatalf("stream=%v: %v", stream, err)
					}
					if res.Text != "done" {
						t.Errorf("stream=%v: text %q", stream, res.Text)
					}
					if got := f.attempts.Load(); got != 2 {
						t.Errorf("stream=%v: %d attempts, want 2", stream, got)
					}
					if d := time.Since(start); d > 2*time.Second {
						t.Errorf("stream=%v: took %v: retry-after-ms not honoured?", stream, d)
					}
				}
			})
			t.Run("500 until retries run out", func(t *testing.T) {
				f := newFake(t, w, jsonAnswer(http.StatusInternalServerError, w.apiError("api_error", "Internal server error"), "retry-after-ms", "1"))
				p := f.provider(func(c *Config) { c.MaxRetries = 2 })
				_, err := p.Generate(context.Background(), testRequest())
				e := asError(t, err)
				if e.Status != 500 || !e.Retryable || e.Message != "Internal server error" {
					t.Errorf("error = %#v", e)
				}
				if got := f.attempts.Load(); got != 3 {
					t.Errorf("%d attempts, want MaxRetries+1 = 3", got)
				}
			})
			t.Run("default retries", func(t *testing.T) {
				f := newFake(t, w, jsonAnswer(http.StatusServiceUnavailable, w.apiError("overloaded_error", "busy"), "retry-after-ms", "1"))
				p := f.provider(func(c *Config) { c.MaxRetries = 0 })
				_, err := p.Generate(context.Background(), testRequest())
				if e := asError(t, err); e.Status != 503 || !e.Retryable {
					t.Errorf("error = %#v", e)
				}
				if got := f.attempts.Load(); got != DefaultMaxRetries+1 {
					t.Errorf("%d attempts, want %d", got, DefaultMaxRetries+1)
				}
			})
		})
	}
}

func TestRetryAfter(t *testing.T) {
	// What the provider says of retrying is followed within the call's
	// budget: a wait longer than a minute, or than the caller's context
	// has left, is not waited for; the call fails at once with a
	// retryable error for the job runner to try later.
	past := time.Now().Add(-time.Hour).UTC().Format(http.TimeFormat)
	cases := []struct {
		name      string
		status    int
		header    []string
		deadline  time.Duration // of the caller's context; 0 none
		attempts  int32
		retryable bool
	}{
		{"longer than a minute", 429, []string{"Retry-After", "61"}, 0, 1, true},
		{"longer than the caller has", 429, []string{"Retry-After", "30"}, time.Minute / 2, 1, true},
		{"in milliseconds, longer than a minute", 503, []string{"Retry-After-Ms", "90000"}, 0, 1, true},
		{"an HTTP date in the past", 429, []string{"Retry-After", past}, 0, 3, true},
		{"x-should-retry false", 503, []string{"X-Should-Retry", "false"}, 0, 1, true},
		{"x-should-retry true", 400, []string{"X-Should-Retry", "true", "Retry-After-Ms", "0"}, 0, 3, false},
	}
	for _, w := range wires {
		for _, c := range cases {
			t.Run(w.kind+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				f := newFake(t, w, jsonAnswer(c.status, w.apiError("rate_limit_error", "slow down"), c.header...))
				ctx := context.Background()
				if c.deadline > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, c.deadline)
					defer cancel()
				}
				_, err := f.provider(func(c *Config) { c.MaxRetries = 2 }).Generate(ctx, testRequest())
				// An *Error, not the caller's deadline: the call did not
				// sit out a wait it could not finish.
				e := asError(t, err)
				if e.Status != c.status || e.Retryable != c.retryable {
					t.Errorf("error = %#v, want status %d retryable=%v", e, c.status, c.retryable)
				}
				if got := f.attempts.Load(); got != c.attempts {
					t.Errorf("%d attempts, want %d", got, c.attempts)
				}
			})
		}
	}
}

func TestTimeout(t *testing.T) {
	for _, w := range wires {
		t.Run(w.kind+"/Generate", func(t *testing.T) {
			t.Parallel()
			f := newFake(t, w, func(rw http.ResponseWriter, r *http.Request) {
				waitForClient(r)
			})
			p := f.provider(func(c *Config) { c.Timeout = 100 * time.Millisecond })
			start := time.Now()
			_, err := p.Generate(context.Background(), testRequest())
			checkTimeout(t, f, err, time.Since(start))
		})
		t.Run(w.kind+"/stream stalls", func(t *testing.T) {
			// The per-attempt timeout covers the whole stream, not only
			// the wait for its headers.
			t.Parallel()
			frames := w.stream([]string{"first"})
			f := newFake(t, w, func(rw http.ResponseWriter, r *http.Request) {
				sseAnswer(frames[:len(frames)-3]...)(rw, r)
				waitForClient(r)
			})
			// Long enough for the first frame to arrive on a loaded
			// machine (100 ms was not, once, under -race beside the
			// browser tests).
			p := f.provider(func(c *Config) { c.Timeout = 500 * time.Millisecond })
			start := time.Now()
			_, pieces, err := collect(p, context.Background(), testRequest())
			checkTimeout(t, f, err, time.Since(start))
			if len(pieces) != 1 {
				t.Errorf("onDelta got %q", pieces)
			}
		})
	}
}

func checkTimeout(t *testing.T, f *fake, err error, elapsed time.Duration) {
	t.Helper()
	e := asError(t, err)
	if e.Status != 0 || !e.Retryable || !strings.Contains(e.Message, "timed out") {
		t.Errorf("error = %#v, want a retryable timeout", e)
	}
	if elapsed > 2*time.Second {
		t.Errorf("took %v with a 100ms timeout", elapsed)
	}
	if got := f.attempts.Load(); got != 1 {
		t.Errorf("%d attempts, want 1", got)
	}
}

func TestCancel(t *testing.T) {
	for _, w := range wires {
		t.Run(w.kind, func(t *testing.T) {
			t.Parallel()
			t.Run("Generate", func(t *testing.T) {
				f := newFake(t, w, func(rw http.ResponseWriter, r *http.Request) { waitForClient(r) })
				ctx, cancel := context.WithCancel(context.Background())
				time.AfterFunc(50*time.Millisecond, cancel)
				start := time.Now()
				_, err := f.provider(func(c *Config) { c.MaxRetries = 2 }).Generate(ctx, testRequest())
				checkCanceled(t, err, start)
			})
			t.Run("mid-stream", func(t *testing.T) {
				frames := w.stream([]string{"first"})
				f := newFake(t, w, func(rw http.ResponseWriter, r *http.Request) {
					// Everything up to the first delta, then nothing.
					sseAnswer(frames[:len(frames)-3]...)(rw, r)
					waitForClient(r)
				})
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				var pieces []string
				start := time.Now()
				_, err := f.provider(func(c *Config) { c.MaxRetries = 2 }).Stream(ctx, testRequest(), func(s string) error {
					pieces = append(pieces, s)
					time.AfterFunc(20*time.Millisecond, cancel)
					return nil
				})
				checkCanceled(t, err, start)
				if !reflect.DeepEqual(pieces, []string{"first"}) {
					t.Errorf("onDelta got %q", pieces)
				}
			})
			t.Run("deadline", func(t *testing.T) {
				f := newFake(t, w, func(rw http.ResponseWriter, r *http.Request) { waitForClient(r) })
				ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
				defer cancel()
				_, _, err := collect(f.provider(), ctx, testRequest())
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("error = %v, want context.DeadlineExceeded", err)
				}
				var e *Error
				if errors.As(err, &e) {
					t.Errorf("the caller's deadline came back as a provider error: %#v", e)
				}
			})
		})
	}
}

func checkCanceled(t *testing.T, err error, start time.Time) {
	t.Helper()
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v (%T), want context.Canceled", err, err)
	}
	var e *Error
	if errors.As(err, &e) {
		t.Errorf("cancellation came back as a provider error: %#v", e)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %v to return after cancellation", d)
	}
}

func TestBrokenStream(t *testing.T) {
	for _, w := range wires {
		frames := w.stream([]string{"one", "two"})
		cases := []struct {
			name      string
			handle    http.HandlerFunc
			retryable bool
			message   string
		}{
			{"garbage JSON", sseAnswer(append(frames[:3:3], w.garbage)...), false, "malformed"},
			{"ends without terminal event", sseAnswer(frames[:len(frames)-1]...), true, "connection lost"},
			{"ends after the first chunks", sseAnswer(frames[:3]...), true, "connection lost"},
			{"connection dropped", func(rw http.ResponseWriter, r *http.Request) {
				sseAnswer(frames[:4]...)(rw, r)
				conn, buf, err := rw.(http.Hijacker).Hijack()
				if err != nil {
					t.Errorf("hijack: %v", err)
					return
				}
				_ = buf.Flush()
				_ = conn.Close()
			}, true, "connection lost"},
			{"cut mid-line", func(rw http.ResponseWriter, r *http.Request) {
				last := frames[len(frames)-1]
				sseAnswer(append(frames[:len(frames)-1:len(frames)-1], last[:len(last)-6])...)(rw, r)
			}, true, "connection lost"},
		}
		for _, c := range cases {
			t.Run(w.kind+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				f := newFake(t, w, c.handle)
				res, deltas, err := collect(f.provider(func(c *Config) { c.MaxRetries = 2 }), context.Background(), testRequest())
				// What was streamed before the break comes back with the
				// error, marked partial: it has been paid for.
				if res == nil || !res.Partial || res.Text != strings.Join(deltas, "") {
					t.Errorf("a broken stream returned %+v after deltas %q; want the partial text", res, deltas)
				}
				// Anthropic reports the input in message_start, before any
				// text: that count is kept. OpenAI reports usage only at
				// the end, so a stream cut off early has none.
				if wantIn := map[string]int64{Anthropic: 12}[w.kind]; c.name == "ends after the first chunks" && res != nil && res.Usage.InputTokens != wantIn {
					t.Errorf("partial usage %+v, want %d input tokens", res.Usage, wantIn)
				}
				e := asError(t, err)
				if e.Retryable != c.retryable || !strings.Contains(e.Message, c.message) || e.Status != 0 {
					t.Errorf("error = %#v, want retryable=%v and %q", e, c.retryable, c.message)
				}
				if got := f.attempts.Load(); got != 1 {
					t.Errorf("%d attempts: a stream that started is not retried", got)
				}
			})
		}
	}
}

func TestStreamErrorEvent(t *testing.T) {
	for _, w := range wires {
		t.Run(w.kind, func(t *testing.T) {
			t.Parallel()
			frames := w.stream([]string{"one"})
			f := newFake(t, w, sseAnswer(append(frames[:4:4], w.streamError)...))
			_, _, err := collect(f.provider(), context.Background(), testRequest())
			e := asError(t, err)
			wantStatus, wantMsg := 500, "The server had an error while processing your request."
			if w.kind == Anthropic {
				wantStatus, wantMsg = 529, "Overloaded"
			}
			if e.Status != wantStatus || e.Message != wantMsg || !e.Retryable {
				t.Errorf("error = %#v, want %d %q retryable", e, wantStatus, wantMsg)
			}
		})
	}
}

func TestOnDeltaError(t *testing.T) {
	stop := errors.New("client went away")
	for _, w := range wires {
		t.Run(w.kind, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, w, sseAnswer(w.stream([]string{"one", "two", "three"})...))
			var pieces []string
			res, err := f.provider().Stream(context.Background(), testRequest(), func(s string) error {
				pieces = append(pieces, s)
				if len(pieces) == 2 {
					return stop
				}
				return nil
			})
			if err != stop || res == nil || !res.Partial || res.Text != "onetwo" {
				t.Errorf("Stream = %+v, %v; want the partial text \"onetwo\", the onDelta error as is", res, err)
			}
			if !reflect.DeepEqual(pieces, []string{"one", "two"}) {
				t.Errorf("onDelta got %q after returning an error", pieces)
			}
		})
	}
}

func TestModels(t *testing.T) {
	for _, w := range wires {
		t.Run(w.kind, func(t *testing.T) {
			t.Parallel()
			var want []string
			f := newFake(t, w, func(rw http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodGet || r.URL.Path != w.prefix+w.modelsPath {
					t.Errorf("request %s %s", r.Method, r.URL.Path)
				}
				if w.kind == Anthropic && r.URL.Query().Get("after_id") == "" {
					// Anthropic pages: the client asks for the next one.
					jsonAnswer(http.StatusOK, w.models([]string{"claude-a", "claude-b"}, true))(rw, r)
					return
				}
				if w.kind == Anthropic && r.URL.Query().Get("after_id") != "claude-b" {
					t.Errorf("after_id = %q", r.URL.Query().Get("after_id"))
				}
				jsonAnswer(http.StatusOK, w.models([]string{"m-1", "m-2"}, false))(rw, r)
			})
			want = []string{"m-1", "m-2"}
			if w.kind == Anthropic {
				want = []string{"claude-a", "claude-b", "m-1", "m-2"}
			}
			ids, err := f.provider().Models(context.Background())
			if err != nil {
				t.Fatalf("Models: %v", err)
			}
			if !reflect.DeepEqual(ids, want) {
				t.Errorf("Models = %q, want %q", ids, want)
			}
		})
	}
}

func TestCompatibleWithoutKey(t *testing.T) {
	// A local Ollama needs no key, and the OPENAI_* environment the SDKs
	// read must not leak to it (nor redirect the calls).
	t.Setenv("OPENAI_API_KEY", "sk-from-the-environment")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	t.Setenv("OPENAI_ORG_ID", "org-env")
	w := openAIWire(OpenAICompatible, "/v1")
	f := newFake(t, w, jsonAnswer(http.StatusOK, w.success("hi")))
	p := f.provider(func(c *Config) { c.APIKey = "" })
	if _, err := p.Generate(context.Background(), testRequest()); err != nil {
		t.Fatalf("Generate: %v", err)
	}
	got := f.lastRequest()
	if h := got.header.Get("Authorization"); h != "" {
		t.Errorf("Authorization = %q, want none", h)
	}
	if h := got.header.Get("OpenAI-Organization"); h != "" {
		t.Errorf("OpenAI-Organization = %q, want none", h)
	}
}

func TestAnthropicIgnoresEnvironment(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-from-the-environment")
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "token-from-the-environment")
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1")
	w := anthropicWire()
	f := newFake(t, w, jsonAnswer(http.StatusOK, w.success("hi")))
	if _, err := f.provider().Generate(context.Background(), testRequest()); err != nil {
		t.Fatalf("Generate: %v", err)
	}
	got := f.lastRequest()
	if h := got.header.Get("X-Api-Key"); h != testKey {
		t.Errorf("X-Api-Key = %q", h)
	}
	if h := got.header.Get("Authorization"); h != "" {
		t.Errorf("Authorization = %q, want none", h)
	}
}

func TestHTTPClient(t *testing.T) {
	for _, w := range wires {
		t.Run(w.kind, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, w, jsonAnswer(http.StatusOK, w.success("hi")))
			var used atomic.Int32
			client := &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
				used.Add(1)
				return http.DefaultTransport.RoundTrip(r)
			})}
			p := f.provider(func(c *Config) { c.HTTPClient = client })
			if _, err := p.Generate(context.Background(), testRequest()); err != nil {
				t.Fatalf("Generate: %v", err)
			}
			if used.Load() != 1 {
				t.Errorf("the Config's HTTP client made %d requests, want 1", used.Load())
			}
		})
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestConnectionRefused(t *testing.T) {
	for _, w := range wires {
		t.Run(w.kind, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, w, jsonAnswer(http.StatusOK, "{}"))
			cfg := f.config()
			f.srv.Close() // nothing listens any more
			p, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			_, err = p.Generate(context.Background(), testRequest())
			if e := asError(t, err); e.Status != 0 || !e.Retryable {
				t.Errorf("error = %#v, want a retryable network error", e)
			}
		})
	}
}

func TestNew(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		want error // nil: valid
	}{
		{"openai", Config{Kind: OpenAI, APIKey: "k"}, nil},
		{"openai with base URL", Config{Kind: OpenAI, APIKey: "k", BaseURL: "https://proxy.example.com/v1"}, nil},
		{"openai without key", Config{Kind: OpenAI}, ErrInvalidConfig},
		{"openai with blank key", Config{Kind: OpenAI, APIKey: " \n"}, ErrInvalidConfig},
		{"anthropic", Config{Kind: Anthropic, APIKey: "k"}, nil},
		{"anthropic without key", Config{Kind: Anthropic}, ErrInvalidConfig},
		{"compatible without key", Config{Kind: OpenAICompatible, BaseURL: "http://localhost:11434/v1"}, nil},
		{"compatible without base URL", Config{Kind: OpenAICompatible, APIKey: "k"}, ErrInvalidConfig},
		{"relative base URL", Config{Kind: OpenAICompatible, BaseURL: "localhost:11434/v1"}, ErrInvalidConfig},
		{"ftp base URL", Config{Kind: OpenAI, APIKey: "k", BaseURL: "ftp://example.com"}, ErrInvalidConfig},
		{"base URL with credentials", Config{Kind: OpenAICompatible, BaseURL: "http://u:p@localhost/v1"}, ErrInvalidConfig},
		{"unknown kind", Config{Kind: "gemini", APIKey: "k"}, ErrUnknownKind},
		{"no kind", Config{APIKey: "k"}, ErrUnknownKind},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := New(c.cfg)
			if c.want == nil {
				if err != nil || p == nil || p.Kind() != c.cfg.Kind {
					t.Fatalf("New = %v, %v", p, err)
				}
				return
			}
			if !errors.Is(err, c.want) || p != nil {
				t.Fatalf("New = %v, %v; want %v", p, err, c.want)
			}
		})
	}
}

func TestInvalidRequest(t *testing.T) {
	for _, w := range wires {
		t.Run(w.kind, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, w, jsonAnswer(http.StatusOK, w.success("hi")))
			p := f.provider()
			for _, req := range []Request{
				{Messages: []Message{{Role: "user", Content: "hi"}}},
				{Model: "m"},
				{Model: "m", Messages: []Message{{Role: "system", Content: "hi"}}},
				{Model: "m", Messages: []Message{{Role: "user", Content: "hi"}}, MaxTokens: -1},
			} {
				if _, err := p.Generate(context.Background(), req); !errors.Is(err, ErrInvalidRequest) {
					t.Errorf("Generate(%+v) = %v, want ErrInvalidRequest", req, err)
				}
				if _, err := p.Stream(context.Background(), req, nil); !errors.Is(err, ErrInvalidRequest) {
					t.Errorf("Stream(%+v) = %v, want ErrInvalidRequest", req, err)
				}
			}
			if n := f.attempts.Load(); n != 0 {
				t.Errorf("%d requests sent for invalid requests", n)
			}
		})
	}
}

func TestScrub(t *testing.T) {
	c := common{apiKey: testKey}
	if got := c.scrub("key " + testKey + " and " + testKey); got != "key sk-...WXYZ and sk-...WXYZ" {
		t.Errorf("scrub = %q", got)
	}
	short := common{apiKey: "abc123"}
	if got := short.scrub("bad key abc123"); got != "bad key ***" {
		t.Errorf("scrub = %q", got)
	}
	none := common{}
	if got := none.scrub("no key"); got != "no key" {
		t.Errorf("scrub = %q", got)
	}
}

func TestRefusedAddress(t *testing.T) {
	// The address guard's refusal is an *Error that says so, is not
	// retried, and carries the *outbound.AddressError.
	for _, w := range wires {
		t.Run(w.kind, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, w, jsonAnswer(http.StatusOK, w.success("hi")))
			p := f.provider(func(c *Config) {
				c.MaxRetries = 2
				c.HTTPClient = outbound.NewClient(outbound.Options{RefusePrivate: true})
			})
			_, err := p.Generate(context.Background(), testRequest())
			e := asError(t, err)
			var ae *outbound.AddressError
			if e.Retryable || e.Status != 0 || !errors.As(err, &ae) || !strings.HasPrefix(e.Message, "address 127.0.0.1 is not allowed") {
				t.Errorf("error = %#v", e)
			}
			if n := f.attempts.Load(); n != 0 {
				t.Errorf("the server got %d requests", n)
			}
		})
	}
}

func TestRedirectKeepsKeyHome(t *testing.T) {
	// A redirect to another host does not take the key along.
	for _, w := range wires {
		t.Run(w.kind, func(t *testing.T) {
			t.Parallel()
			other := newFake(t, w, jsonAnswer(http.StatusOK, w.success("elsewhere")))
			f := newFake(t, w, func(rw http.ResponseWriter, r *http.Request) {
				to := strings.Replace(other.srv.URL, "127.0.0.1", "localhost", 1) + r.URL.Path
				http.Redirect(rw, r, to, http.StatusTemporaryRedirect)
			})
			res, err := f.provider().Generate(context.Background(), testRequest())
			if err != nil || res.Text != "elsewhere" {
				t.Fatalf("Generate = %+v, %v", res, err)
			}
			h := other.lastRequest().header
			if h.Get("X-Api-Key") != "" || h.Get("Authorization") != "" {
				t.Errorf("the other host got the key: %v", h)
			}
		})
	}
}
