package server_test

import (
	"bytes"
	"context"
	"log/slog"
	"math"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/copydesk/copydesk/server"
	"github.com/copydesk/copydesk/store"
	"github.com/copydesk/copydesk/store/storetest"
)

// syncBuffer is a log sink the server may write from any goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// newLoggedEnv is newEnv with the server's log kept.
func newLoggedEnv(t *testing.T) (*env, *syncBuffer) {
	t.Helper()
	dir := t.TempDir()
	storetest.WriteDB(t, filepath.Join(dir, server.DBFile))
	logs := &syncBuffer{}
	cfg := server.Config{DataDir: dir, SecretKey: testSecret, Hasher: &cheapHasher, Version: "test"}
	app, err := server.Open(context.Background(), cfg, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { app.Close() })
	c := storetest.NewClock(envT0)
	app.DB.Now = c.Now
	return &env{t: t, app: app, clock: c, h: app.Server.Handler()}, logs
}

// A response JSON cannot hold (a row with an infinite number, as a cost
// stored before prices were bounded; costs are integers now, so here a
// temperature the service would refuse, stored directly) was an empty 200
// that nobody heard about; it is a logged 500 with a detail.
func TestUnencodableResponseIsLogged500(t *testing.T) {
	e, logs := newLoggedEnv(t)
	_, admin := e.user(t, "admin", store.RoleAdmin)
	inf := math.Inf(1)
	if _, err := e.app.DB.PutAISettings(context.Background(), store.AISettings{Temperature: &inf}); err != nil {
		t.Fatal(err)
	}
	r := e.do(t, "GET", "/api/settings/ai-content", admin, nil)
	if r.Code != http.StatusInternalServerError || r.Detail() == "" {
		t.Fatalf("got %d %q, want 500 with a detail", r.Code, r.Body)
	}
	if got := r.Header.Get("Content-Type"); !strings.HasPrefix(got, "application/json") {
		t.Fatalf("Content-Type = %q", got)
	}
	if l := logs.String(); !strings.Contains(l, "encoding the response") || !strings.Contains(l, "/api/settings/ai-content") {
		t.Fatalf("not logged: %s", l)
	}
}

// 1e308 USD per million tokens made a run cost +Inf; prices are bounded.
func TestPriceOverrideBounded(t *testing.T) {
	e := newEnv(t)
	_, admin := e.user(t, "admin", store.RoleAdmin)
	for _, c := range []struct {
		name  string
		price map[string]any
	}{
		{"Huge", map[string]any{"input": 1e308, "output": 1}},
		{"OutputAboveMax", map[string]any{"input": 1, "output": 10000.5}},
		{"CachedAboveMax", map[string]any{"input": 1, "output": 1, "cached_input": 1e300}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := e.do(t, "PUT", "/api/settings/ai-content", admin, map[string]any{"price_overrides": map[string]any{"m": c.price}})
			if r.Code != http.StatusUnprocessableEntity || !strings.Contains(r.Detail(), "price_overrides.m") {
				t.Fatalf("got %d %s, want 422 naming price_overrides.m", r.Code, r.Body)
			}
		})
	}
	r := e.do(t, "PUT", "/api/settings/ai-content", admin, map[string]any{"monthly_budget_usd": 1e308})
	if r.Code != http.StatusUnprocessableEntity || !strings.Contains(r.Detail(), "monthly_budget_usd") {
		t.Fatalf("budget: got %d %s, want 422", r.Code, r.Body)
	}
	r = e.do(t, "PUT", "/api/settings/ai-content", admin, map[string]any{"price_overrides": map[string]any{"m": map[string]any{"input": 10000, "output": 10000}}})
	if r.Code != http.StatusOK {
		t.Fatalf("the largest price: got %d %s", r.Code, r.Body)
	}
}

// ?to=9999-12-31 meant the end of that day, year 10000, which JSON cannot
// hold: every analytics route answered an empty 200.
func TestAnalyticsDatesBounded(t *testing.T) {
	e := newEnv(t)
	_, admin := e.user(t, "admin", store.RoleAdmin)
	for _, path := range []string{"/api/token-analytics/usage", "/api/token-analytics/summary", "/api/token-analytics/series",
		"/api/token-analytics/costs"} {
		r := e.do(t, "GET", path+"?to=9999-12-31", admin, nil)
		if r.Code != http.StatusUnprocessableEntity || !strings.HasPrefix(r.Detail(), "to:") {
			t.Fatalf("%s: got %d %s, want 422 naming to", path, r.Code, r.Body)
		}
	}
	if r := e.do(t, "GET", "/api/token-analytics/summary?from=2000-01-01&to=9999-12-30", admin, nil); r.Code != http.StatusOK {
		t.Fatalf("widest range: got %d %s", r.Code, r.Body)
	}
}
