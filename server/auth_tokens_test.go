package server_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/copydesk/copydesk/store"
)

// apiToken makes an API token with the signed-in caller's JWT and returns
// its secret and id.
func (e *env) apiToken(t *testing.T, jwt string, body map[string]any) (string, int64) {
	t.Helper()
	if body["name"] == nil {
		body["name"] = "script"
	}
	r := e.do(t, "POST", "/api/auth/tokens", jwt, body)
	if r.Code != 201 {
		t.Fatalf("POST /api/auth/tokens: %d %s", r.Code, r.Body)
	}
	return r.Data()["token"].(string), int64(r.Data()["id"].(float64))
}

func (e *env) environment(t *testing.T, name string) *store.Environment {
	t.Helper()
	env, err := e.app.DB.CreateEnvironment(context.Background(), store.NewEnvironment{Name: name, Slug: strings.ToLower(name)})
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func TestAPITokenLifeCycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ann, jwt := e.user(t, "ann", store.RoleEditor)

	r := e.do(t, "POST", "/api/auth/tokens", jwt, map[string]any{"name": "n8n", "expires_at": "2026-12-31T23:59:59Z", "read_only": true})
	if r.Code != 201 {
		t.Fatalf("create: %d %s", r.Code, r.Body)
	}
	d := r.Data()
	secret := d["token"].(string)
	if !regexp.MustCompile(`^cdk_[a-z2-7]{52}$`).MatchString(secret) || d["prefix"] != secret[:12] || d["name"] != "n8n" ||
		d["read_only"] != true || d["environment_ids"] != nil || d["expires_at"] != "2026-12-31T23:59:59.000Z" || d["last_used_at"] != nil {
		t.Fatalf("created: %s", r.Body)
	}

	// The token is its user.
	r = e.do(t, "GET", "/api/auth/me", secret, nil)
	if r.Code != 200 || int64(r.Data()["id"].(float64)) != ann.ID {
		t.Fatalf("GET /me with the token: %d %s", r.Code, r.Body)
	}

	// The list shows it, used, without its secret.
	r = e.do(t, "GET", "/api/auth/tokens", jwt, nil)
	items := r.Data()["items"].([]any)
	if r.Code != 200 || len(items) != 1 || strings.Contains(r.Body, secret[12:]) {
		t.Fatalf("list: %d %s", r.Code, r.Body)
	}
	if it := items[0].(map[string]any); it["last_used_at"] != "2026-11-21T12:00:00.000Z" || it["expired"] != false || it["token"] != nil {
		t.Errorf("listed: %v", it)
	}
	// An admin sees the same in the user's list.
	_, rootJWT := e.user(t, "root", store.RoleSuperAdmin)
	r = e.do(t, "GET", fmt.Sprintf("/api/auth/users/%d/tokens", ann.ID), rootJWT, nil)
	if items := r.Data()["items"].([]any); r.Code != 200 || len(items) != 1 || r.Data()["total"] != 1.0 ||
		items[0].(map[string]any)["name"] != "n8n" || items[0].(map[string]any)["expired"] != false {
		t.Fatalf("the user's tokens: %d %s", r.Code, r.Body)
	}
	if r = e.do(t, "GET", "/api/auth/users/99999/tokens", rootJWT, nil); r.Code != 404 {
		t.Errorf("the tokens of no user: %d %s", r.Code, r.Body)
	}

	// Revoked, it is refused at its next request.
	id := int64(d["id"].(float64))
	if r = e.do(t, "DELETE", fmt.Sprintf("/api/auth/tokens/%d", id), jwt, nil); r.Code != 200 {
		t.Fatalf("revoke: %d %s", r.Code, r.Body)
	}
	if r = e.do(t, "GET", "/api/auth/me", secret, nil); r.Code != 401 || !strings.Contains(r.Detail(), "revoked") {
		t.Errorf("after the revocation: %d %s", r.Code, r.Body)
	}
	if r = e.do(t, "GET", "/api/auth/tokens", jwt, nil); r.Data()["total"] != 0.0 {
		t.Errorf("a revoked token is listed: %s", r.Body)
	}
}

func TestAPITokenBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	envA := e.environment(t, "A")
	ann, jwt := e.user(t, "ann", store.RoleEditor)
	if _, err := e.app.DB.SetUserEnvironments(ctx, ann.ID, []int64{envA.ID}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		body any
		want int
		says string
	}{
		{"NoName", map[string]any{}, 422, "name"},
		{"LongName", map[string]any{"name": strings.Repeat("n", 101)}, 422, "name"},
		{"Past", map[string]any{"name": "x", "expires_at": "2026-11-21T11:59:59Z"}, 422, "expires_at: must be in the future"},
		{"Now", map[string]any{"name": "x", "expires_at": "2026-11-21T12:00:00Z"}, 422, "expires_at: must be in the future"},
		{"NotATime", map[string]any{"name": "x", "expires_at": "next week"}, 422, "expires_at"},
		{"NoEnvironments", map[string]any{"name": "x", "environment_ids": []int64{}}, 422, "environment_ids"},
		{"NegativeEnvironment", map[string]any{"name": "x", "environment_ids": []int64{-1}}, 422, "environment_ids"},
		{"NotYours", map[string]any{"name": "x", "environment_ids": []int64{envA.ID, 999}}, 422, "no environment with id 999"},
		{"UnknownField", map[string]any{"name": "x", "scopes": "all"}, 422, "scopes"},
		{"ReadOnlyNotABool", map[string]any{"name": "x", "read_only": "yes"}, 422, "read_only"},
		{"Malformed", `{"name": "x"`, 400, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := e.do(t, "POST", "/api/auth/tokens", jwt, tt.body)
			if r.Code != tt.want || !strings.Contains(r.Detail(), tt.says) {
				t.Errorf("got %d %s, want %d saying %q", r.Code, r.Body, tt.want, tt.says)
			}
		})
	}
	if r := e.do(t, "GET", "/api/auth/tokens", jwt, nil); r.Data()["total"] != 0.0 {
		t.Errorf("a refused token was stored: %s", r.Body)
	}
	// A date alone is its midnight, and a moment to the second is kept.
	for body, want := range map[string]string{"2027-01-02": "2027-01-02T00:00:00.000Z", "2026-11-21T12:00:01Z": "2026-11-21T12:00:01.000Z"} {
		r := e.do(t, "POST", "/api/auth/tokens", jwt, map[string]any{"name": "x", "expires_at": body})
		if r.Code != 201 || r.Data()["expires_at"] != want {
			t.Errorf("expires_at %s: %d %s", body, r.Code, r.Body)
		}
	}
}

func TestAPITokenRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, jwt := e.user(t, "root", store.RoleSuperAdmin)
	secret, _ := e.apiToken(t, jwt, map[string]any{})
	readOnly, _ := e.apiToken(t, jwt, map[string]any{"read_only": true})

	t.Run("AccountRoutes", func(t *testing.T) {
		for _, route := range [][2]string{{"POST", "/api/auth/tokens"}, {"GET", "/api/auth/tokens"}, {"POST", "/api/auth/refresh"},
			{"PUT", "/api/auth/me"}, {"POST", "/api/auth/2fa/setup"}, {"GET", "/api/auth/users"}, {"POST", "/api/auth/logout"}} {
			var body any
			if route[0] == "POST" && route[1] == "/api/auth/tokens" {
				body = map[string]any{"name": "x"}
			} else if route[0] == "PUT" {
				body = map[string]any{"new_password": "another-password", "current_password": "password-root"}
			}
			r := e.do(t, route[0], route[1], secret, body)
			if r.Code != 403 || !strings.Contains(r.Detail(), "not with an API token: sign in") {
				t.Errorf("%s %s with a token: %d %s", route[0], route[1], r.Code, r.Body)
			}
		}
		// Nothing changed: the password is the old one.
		e.login(t, "root@example.com", "password-root")
	})

	t.Run("ReadOnly", func(t *testing.T) {
		r := e.do(t, "POST", "/api/environments", readOnly, map[string]any{"name": "New"})
		if r.Code != 403 || !strings.Contains(r.Detail(), "read-only") {
			t.Errorf("POST with a read-only token: %d %s", r.Code, r.Body)
		}
		for _, method := range []string{"GET", "HEAD"} {
			if r := e.do(t, method, "/api/environments", readOnly, nil); r.Code != 200 {
				t.Errorf("%s with a read-only token: %d %s", method, r.Code, r.Body)
			}
		}
		if r := e.do(t, "GET", "/api/environments?per_page=1", readOnly, nil); r.Data()["total"] != 0.0 {
			t.Errorf("the refused POST made an environment: %s", r.Body)
		}
	})

	t.Run("BadTokensAreCheapAndUncounted", func(t *testing.T) {
		// A flood of made-up tokens is answered 401 without a password hash
		// and counts against no address: the owner still signs in.
		start := time.Now()
		for i := 0; i < 200; i++ {
			bad := "cdk_" + strings.Repeat(string(rune('a'+i%26)), 52)
			if r := e.do(t, "GET", "/api/auth/me", bad, nil); r.Code != 401 || r.Detail() != "the API token is not valid" {
				t.Fatalf("a made-up token: %d %s", r.Code, r.Body)
			}
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("200 made-up tokens took %v", d)
		}
		lf, err := e.app.DB.LoginFailuresFor(context.Background(), "root@example.com")
		if err != nil || lf.Failures != 0 {
			t.Errorf("failures %+v %v", lf, err)
		}
		if r := e.do(t, "GET", "/api/auth/me", secret, nil); r.Code != 200 {
			t.Errorf("the real token after the flood: %d %s", r.Code, r.Body)
		}
	})
}

func TestAPITokenFollowsItsUser(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	envA := e.environment(t, "A")
	_, rootJWT := e.user(t, "root", store.RoleSuperAdmin)
	ann, annJWT := e.user(t, "ann", store.RoleAdmin)
	secret, _ := e.apiToken(t, annJWT, map[string]any{})
	envPath := fmt.Sprintf("/api/environments/%d", envA.ID)
	get := func(path string) int { return e.do(t, "GET", path, secret, nil).Code }
	if get("/api/configurations") != 200 || get(envPath) != 200 {
		t.Fatal("an admin's token cannot read what an admin reads")
	}
	// Lowered to viewer: the admin route is 403 and envA, not granted, 404.
	if r := e.do(t, "PUT", fmt.Sprintf("/api/auth/users/%d/role", ann.ID), rootJWT, map[string]any{"role": "viewer"}); r.Code != 200 {
		t.Fatalf("set role: %d %s", r.Code, r.Body)
	}
	if c := get("/api/configurations"); c != 403 {
		t.Errorf("after the demotion, an admin route: %d", c)
	}
	if c := get(envPath); c != 404 {
		t.Errorf("after the demotion, an environment not granted: %d", c)
	}
	// Granted, then taken away.
	grant := func(ids []int64) {
		if r := e.do(t, "PUT", fmt.Sprintf("/api/auth/users/%d/environments", ann.ID), rootJWT, map[string]any{"environment_ids": ids}); r.Code != 200 {
			t.Fatalf("grant: %d %s", r.Code, r.Body)
		}
	}
	grant([]int64{envA.ID})
	if c := get(envPath); c != 200 {
		t.Errorf("granted: %d", c)
	}
	grant([]int64{})
	if c := get(envPath); c != 404 {
		t.Errorf("the grant taken: %d", c)
	}
	// Disabled: 401; enabled again, the token works again.
	status := func(active bool) {
		if r := e.do(t, "PUT", fmt.Sprintf("/api/auth/users/%d/status", ann.ID), rootJWT, map[string]any{"is_active": active}); r.Code != 200 {
			t.Fatalf("status: %d %s", r.Code, r.Body)
		}
	}
	status(false)
	if r := e.do(t, "GET", "/api/auth/me", secret, nil); r.Code != 401 || !strings.Contains(r.Detail(), "disabled") {
		t.Errorf("disabled: %d %s", r.Code, r.Body)
	}
	status(true)
	if c := get("/api/auth/me"); c != 200 {
		t.Errorf("enabled again: %d", c)
	}
}

func TestAPITokenLimited(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	envs := []int64{e.environment(t, "A").ID, e.environment(t, "B").ID}
	_, jwt := e.user(t, "root", store.RoleSuperAdmin)
	secret, _ := e.apiToken(t, jwt, map[string]any{"environment_ids": []int64{envs[0]}})
	r := e.do(t, "GET", "/api/environments", secret, nil)
	items := r.Data()["items"].([]any)
	if r.Code != 200 || len(items) != 1 || int64(items[0].(map[string]any)["id"].(float64)) != envs[0] {
		t.Errorf("a token limited to A lists %s", r.Body)
	}
	if r := e.do(t, "GET", fmt.Sprintf("/api/environments/%d", envs[1]), secret, nil); r.Code != 404 {
		t.Errorf("B: %d %s", r.Code, r.Body)
	}
	// The whole instance is out of its reach: a backup holds every environment.
	if r := e.do(t, "POST", "/api/backup", secret, nil); r.Code != 403 || !strings.Contains(r.Detail(), "limited") {
		t.Errorf("a backup with a limited token: %d %s", r.Code, r.Body)
	}
}
