package server_test

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/copydesk/copydesk/server"
	"github.com/copydesk/copydesk/server/auth"
	"github.com/copydesk/copydesk/server/authbench"
	"github.com/copydesk/copydesk/store"
)

// BenchmarkLogin signs in through the router with the real password hash
// cost (argon2id, 19 MiB, 2 passes).
func BenchmarkLogin(b *testing.B) {
	real := auth.DefaultHasher
	e := newEnv(b, func(c *server.Config) { c.Hasher = &real })
	e.user(b, "bench", store.RoleViewer)
	body := `{"email":"bench@example.com","password":"password-bench"}`
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		req := httptest.NewRequest("POST", "/api/auth/login", strings.NewReader(body))
		w := httptest.NewRecorder()
		e.h.ServeHTTP(w, req)
		if w.Code != 200 {
			b.Fatalf("%d %s", w.Code, w.Body)
		}
	}
}

// BenchmarkLoginUnknownEmail costs about what BenchmarkLogin costs: an
// unknown address is checked against a dummy hash of the same cost.
func BenchmarkLoginUnknownEmail(b *testing.B) {
	real := auth.DefaultHasher
	noThrottle := auth.ThrottlePolicy{}
	e := newEnv(b, func(c *server.Config) { c.Hasher = &real; c.Throttle = &noThrottle })
	body := `{"email":"nobody@example.com","password":"password-bench"}`
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		req := httptest.NewRequest("POST", "/api/auth/login", strings.NewReader(body))
		w := httptest.NewRecorder()
		e.h.ServeHTTP(w, req)
		if w.Code != 401 {
			b.Fatalf("%d %s", w.Code, w.Body)
		}
	}
}

// BenchmarkMe is GET /api/auth/me with a valid token: signature, session and
// user checked against the database on every request.
func BenchmarkMe(b *testing.B) {
	e := newEnv(b)
	e.clock = nil
	e.app.DB.Now = func() time.Time { return time.Now().UTC() }
	_, tok := e.user(b, "bench", store.RoleViewer)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req := httptest.NewRequest("GET", "/api/auth/me", nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			w := httptest.NewRecorder()
			e.h.ServeHTTP(w, req)
			if w.Code != 200 {
				b.Fatalf("%d %s", w.Code, w.Body)
			}
		}
	})
}

// BenchmarkBareJWT is the yardstick for BenchmarkMe: a Gin handler that only
// verifies the same kind of JWT.
func BenchmarkBareJWT(b *testing.B) {
	h, tok := authbench.BareHandler([]byte(testSecret))
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req := httptest.NewRequest("GET", "/me", nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != 200 {
				b.Fatalf("%d", w.Code)
			}
		}
	})
}
