package server_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/copydesk/copydesk/server"
	"github.com/copydesk/copydesk/server/auth"
	"github.com/copydesk/copydesk/store"
)

// TestPasswordHashingBusy: with every password hash slot taken, the routes
// that hash a password answer 503 with Retry-After and a detail, and the
// rest of the API answers as usual.
func TestPasswordHashingBusy(t *testing.T) {
	t.Parallel()
	limit := auth.NewHashLimit(1, time.Millisecond)
	e := newEnv(t, func(c *server.Config) { c.Hashes = limit })
	_, tok := e.user(t, "ann", store.RoleViewer)
	release, err := limit.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	requests := []struct {
		name, method, path, token string
		body                      any
	}{
		{"Login", "POST", "/api/auth/login", "", map[string]any{"email": "nobody@example.com", "password": "whatever-it-is"}},
		{"Register", "POST", "/api/auth/register", "", map[string]any{"email": "new@example.com", "username": "newbie", "password": "long-enough"}},
		{"ChangeEmail", "PUT", "/api/auth/me", tok, map[string]any{"email": "ann@example.org", "current_password": "password-ann"}},
		{"ChangePassword", "PUT", "/api/auth/me", tok, map[string]any{"new_password": "brand-new-password", "current_password": "password-ann"}},
	}
	for _, rq := range requests {
		t.Run(rq.name, func(t *testing.T) {
			r := e.do(t, rq.method, rq.path, rq.token, rq.body)
			if r.Code != 503 || !strings.Contains(r.Detail(), "busy") {
				t.Fatalf("got %d %s, want 503 saying the server is busy", r.Code, r.Body)
			}
			if s, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || s < 1 {
				t.Errorf("Retry-After %q, want a number of seconds", r.Header.Get("Retry-After"))
			}
		})
	}
	if r := e.do(t, "GET", "/api/auth/me", tok, nil); r.Code != 200 || r.Data()["email"] != "ann@example.com" {
		t.Fatalf("a request that needs no hash while all are taken: %d %s", r.Code, r.Body)
	}
	if r := e.do(t, "GET", "/api/health", "", nil); r.Code != 200 {
		t.Fatalf("health while all hashes are taken: %d %s", r.Code, r.Body)
	}
	release()
	e.login(t, "ann@example.com", "password-ann")
}
