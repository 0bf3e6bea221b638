package server_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"

	"github.com/copydesk/copydesk/server"
	"github.com/copydesk/copydesk/server/auth"
	"github.com/copydesk/copydesk/store"
)

func TestRegister(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.user(t, "taken", store.RoleViewer)
	cases := []struct {
		name   string
		body   any
		status int
		detail string
	}{
		{"OK", map[string]any{"email": "new@example.com", "username": "new-user", "password": "long-enough", "full_name": "New User"}, 201, ""},
		{"DuplicateEmail", map[string]any{"email": "TAKEN@example.com", "username": "other", "password": "long-enough"}, 409, "email"},
		{"DuplicateUsername", map[string]any{"email": "x@example.com", "username": "Taken", "password": "long-enough"}, 409, "username"},
		{"WeakPassword", map[string]any{"email": "y@example.com", "username": "yy-user", "password": "short"}, 422, "password: must be at least 8"},
		{"BadEmail", map[string]any{"email": "not-an-email", "username": "zz-user", "password": "long-enough"}, 422, "email:"},
		{"EmailWithoutDomainDot", map[string]any{"email": "a@localhost", "username": "zz-user", "password": "long-enough"}, 422, "email:"},
		{"BadUsername", map[string]any{"email": "z@example.com", "username": "a b", "password": "long-enough"}, 422, "username:"},
		{"MissingPassword", map[string]any{"email": "z@example.com", "username": "zz-user"}, 422, "password: is required"},
		{"UnknownField", map[string]any{"email": "z@example.com", "username": "zz-user", "password": "long-enough", "role": "super_admin"}, 422, "role: is not a known field"},
		{"WrongType", map[string]any{"email": 5, "username": "zz-user", "password": "long-enough"}, 422, "email: must be a string"},
		{"MalformedJSON", `{"email": "z@example.com",`, 400, "not valid JSON"},
		{"Empty", "", 400, "empty"},
		{"NotAnObject", `[1,2]`, 400, "JSON object"},
		{"TrailingData", `{"email":"a@example.com"} {}`, 400, "single JSON object"},
		{"TooLarge", `{"email":"` + strings.Repeat("a", 2<<20) + `"}`, 413, "larger than"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := e.do(t, "POST", "/api/auth/register", "", c.body)
			if r.Code != c.status {
				t.Fatalf("got %d, want %d: %s", r.Code, c.status, r.Body)
			}
			if c.detail != "" && !strings.Contains(r.Detail(), c.detail) {
				t.Fatalf("detail %q does not mention %q", r.Detail(), c.detail)
			}
			if c.status == 201 {
				d := r.Data()
				if d["role"] != "viewer" || d["is_active"] != true || d["full_name"] != "New User" {
					t.Fatalf("unexpected user: %v", d)
				}
				// The new account has no environment and can sign in.
				tok := e.login(t, "new@example.com", "long-enough")
				list := e.do(t, "GET", "/api/environments", tok, nil)
				if list.Data()["total"].(float64) != 0 {
					t.Fatalf("new user sees environments: %s", list.Body)
				}
			}
		})
	}
	// Nothing was half-written by the failures.
	users, total, err := e.app.DB.ListUsers(context.Background(), store.UserFilter{Page: store.Page{Page: 1, PerPage: 50}})
	if err != nil || total != 2 {
		t.Fatalf("want 2 users after the cases, got %d (%v): %v", total, err, users)
	}
}

func TestRegistrationCanBeClosed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, admin := e.user(t, "admin", store.RoleAdmin)
	if r := e.do(t, "PUT", "/api/settings/system", admin, map[string]any{"registration_open": false}); r.Code != 200 || r.Data()["registration_open"] != false {
		t.Fatalf("close registration: %d %s", r.Code, r.Body)
	}
	r := e.do(t, "POST", "/api/auth/register", "", map[string]any{"email": "n@example.com", "username": "nnn", "password": "long-enough"})
	if r.Code != 403 || !strings.Contains(r.Detail(), "registration is closed") {
		t.Fatalf("got %d %s", r.Code, r.Body)
	}
	if r := e.do(t, "GET", "/api/settings/system", admin, nil); r.Data()["registration_open"] != false {
		t.Fatalf("setting not kept: %s", r.Body)
	}
	e.do(t, "PUT", "/api/settings/system", admin, map[string]any{"registration_open": true})
	if r := e.do(t, "POST", "/api/auth/register", "", map[string]any{"email": "n@example.com", "username": "nnn", "password": "long-enough"}); r.Code != 201 {
		t.Fatalf("reopened registration: %d %s", r.Code, r.Body)
	}
}

func TestLogin(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	u, _ := e.user(t, "alice", store.RoleEditor)
	t.Run("OK", func(t *testing.T) {
		r := e.do(t, "POST", "/api/auth/login", "", map[string]any{"email": "ALICE@example.com", "password": "password-alice"})
		if r.Code != 200 {
			t.Fatalf("%d %s", r.Code, r.Body)
		}
		m := r.JSON()
		if m["token_type"] != "bearer" || m["access_token"] == "" || m["data"] != nil {
			t.Fatalf("login is not the bare token object: %s", r.Body)
		}
		user := m["user"].(map[string]any)
		for _, k := range []string{"id", "email", "username", "role", "is_active"} {
			if _, ok := user[k]; !ok {
				t.Fatalf("user lacks %s: %v", k, user)
			}
		}
		if user["role"] != "editor" || user["id"].(float64) != float64(u.ID) || user["last_login_at"] == nil {
			t.Fatalf("unexpected user %v", user)
		}
	})
	t.Run("WrongPasswordAndUnknownEmailLookTheSame", func(t *testing.T) {
		a := e.do(t, "POST", "/api/auth/login", "", map[string]any{"email": "alice@example.com", "password": "wrong-password"})
		b := e.do(t, "POST", "/api/auth/login", "", map[string]any{"email": "nobody@example.com", "password": "wrong-password"})
		if a.Code != 401 || b.Code != 401 || a.Detail() != b.Detail() {
			t.Fatalf("%d %q vs %d %q", a.Code, a.Detail(), b.Code, b.Detail())
		}
	})
	t.Run("MissingField", func(t *testing.T) {
		r := e.do(t, "POST", "/api/auth/login", "", map[string]any{"email": "alice@example.com"})
		if r.Code != 422 || !strings.Contains(r.Detail(), "password") {
			t.Fatalf("%d %s", r.Code, r.Body)
		}
	})
	t.Run("Disabled", func(t *testing.T) {
		if _, err := e.app.DB.SetUserActive(context.Background(), u.ID, false); err != nil {
			t.Fatal(err)
		}
		defer e.app.DB.SetUserActive(context.Background(), u.ID, true)
		r := e.do(t, "POST", "/api/auth/login", "", map[string]any{"email": "alice@example.com", "password": "password-alice"})
		if r.Code != 403 || !strings.Contains(r.Detail(), "disabled") {
			t.Fatalf("%d %s", r.Code, r.Body)
		}
		// A wrong password for a disabled account says nothing about it.
		r = e.do(t, "POST", "/api/auth/login", "", map[string]any{"email": "alice@example.com", "password": "nope-nope"})
		if r.Code != 401 {
			t.Fatalf("%d %s", r.Code, r.Body)
		}
	})
}

func TestLoginSlowsDownThenLocks(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.user(t, "bob", store.RoleViewer)
	p := auth.DefaultThrottle
	wrong := map[string]any{"email": "bob@example.com", "password": "wrong-password"}
	right := map[string]any{"email": "bob@example.com", "password": "password-bob"}
	for i := 1; i <= p.LockAfter; i++ {
		r := e.do(t, "POST", "/api/auth/login", "", wrong)
		if r.Code != 401 {
			t.Fatalf("failure %d: got %d %s", i, r.Code, r.Body)
		}
		if i >= p.FreeFailures && i < p.LockAfter {
			// Straight away, the next try is refused without being checked...
			r := e.do(t, "POST", "/api/auth/login", "", right)
			if r.Code != 429 || r.Header.Get("Retry-After") == "" || !strings.Contains(r.Detail(), "wait") {
				t.Fatalf("after failure %d: want 429 with Retry-After, got %d %s", i, r.Code, r.Body)
			}
			// ...and allowed once the delay has passed.
			secs := r.Header.Get("Retry-After")
			var n int
			fmt.Sscan(secs, &n)
			e.clock.Advance(time.Duration(n) * time.Second)
		}
	}
	r := e.do(t, "POST", "/api/auth/login", "", right)
	if r.Code != 429 || !strings.Contains(r.Detail(), "locked") {
		t.Fatalf("want the account locked, got %d %s", r.Code, r.Body)
	}
	// The same for an address with no account: the lock reveals nothing.
	for i := 0; i < p.LockAfter; i++ {
		e.do(t, "POST", "/api/auth/login", "", map[string]any{"email": "ghost@example.com", "password": "x-x-x-x-x"})
		e.clock.Advance(p.MaxDelay)
	}
	e.clock.Advance(-time.Duration(p.LockAfter) * p.MaxDelay)
	if r := e.do(t, "POST", "/api/auth/login", "", map[string]any{"email": "ghost@example.com", "password": "x-x-x-x-x"}); r.Code != 429 {
		t.Fatalf("unknown address not locked: %d %s", r.Code, r.Body)
	}
	e.clock.Advance(p.LockFor + time.Second)
	if r := e.do(t, "POST", "/api/auth/login", "", right); r.Code != 200 {
		t.Fatalf("after the lock: %d %s", r.Code, r.Body)
	}
	// Success cleared the count: three fresh failures cost nothing.
	for i := 0; i < p.FreeFailures-1; i++ {
		if r := e.do(t, "POST", "/api/auth/login", "", wrong); r.Code != 401 {
			t.Fatalf("%d %s", r.Code, r.Body)
		}
	}
	if r := e.do(t, "POST", "/api/auth/login", "", right); r.Code != 200 {
		t.Fatalf("%d %s", r.Code, r.Body)
	}
}

func totpCode(t testing.TB, secret string, at time.Time) string {
	t.Helper()
	code, err := totp.GenerateCodeCustom(secret, at, totp.ValidateOpts{Period: 30, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
	if err != nil {
		t.Fatal(err)
	}
	return code
}

func TestTwoFactor(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, tok := e.user(t, "carol", store.RoleViewer)
	login := func(code string) resp {
		body := map[string]any{"email": "carol@example.com", "password": "password-carol"}
		if code != "" {
			body["totp_code"] = code
		}
		return e.do(t, "POST", "/api/auth/login", "", body)
	}

	if r := e.do(t, "POST", "/api/auth/2fa/verify", tok, map[string]any{"code": "123456"}); r.Code != 409 {
		t.Fatalf("verify before setup: %d %s", r.Code, r.Body)
	}
	setup := e.do(t, "POST", "/api/auth/2fa/setup", tok, nil)
	if setup.Code != 200 {
		t.Fatalf("setup: %d %s", setup.Code, setup.Body)
	}
	d := setup.Data()
	secret := d["secret"].(string)
	if !strings.HasPrefix(d["otpauth_url"].(string), "otpauth://totp/copydesk:carol@example.com?") ||
		!strings.Contains(d["otpauth_url"].(string), "secret="+secret) {
		t.Fatalf("otpauth_url: %v", d["otpauth_url"])
	}
	qr := d["qr_code"].(string)
	png, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(qr, "data:image/png;base64,"))
	if !strings.HasPrefix(qr, "data:image/png;base64,") || err != nil || string(png[1:4]) != "PNG" {
		t.Fatalf("qr_code is not a PNG data URL")
	}
	if r := e.do(t, "POST", "/api/auth/2fa/verify", tok, map[string]any{"code": "000000"}); r.Code != 422 {
		t.Fatalf("wrong code: %d %s", r.Code, r.Body)
	}
	// Until verified, 2FA is off: login needs no code.
	if r := login(""); r.Code != 200 {
		t.Fatalf("login before verify: %d %s", r.Code, r.Body)
	}
	v := e.do(t, "POST", "/api/auth/2fa/verify", tok, map[string]any{"code": totpCode(t, secret, e.clock.Now())})
	if v.Code != 200 {
		t.Fatalf("verify: %d %s", v.Code, v.Body)
	}
	codes := v.Data()["recovery_codes"].([]any)
	if len(codes) != 10 {
		t.Fatalf("want 10 recovery codes, got %d", len(codes))
	}
	if r := e.do(t, "GET", "/api/auth/me", tok, nil); r.Data()["two_factor_enabled"] != true {
		t.Fatalf("me: %s", r.Body)
	}
	if r := e.do(t, "POST", "/api/auth/2fa/setup", tok, nil); r.Code != 409 {
		t.Fatalf("setup while on: %d", r.Code)
	}

	t.Run("CodeRequired", func(t *testing.T) {
		r := login("")
		if r.Code != 401 || !strings.Contains(r.Detail(), "two-factor code is required") {
			t.Fatalf("%d %s", r.Code, r.Body)
		}
	})
	t.Run("WrongCode", func(t *testing.T) {
		if r := login("999999"); r.Code != 401 || !strings.Contains(r.Detail(), "not valid") {
			t.Fatalf("%d %s", r.Code, r.Body)
		}
	})
	t.Run("CodeUsedOnce", func(t *testing.T) {
		// The code that verified the setup is spent.
		if r := login(totpCode(t, secret, e.clock.Now())); r.Code != 401 {
			t.Fatalf("replayed setup code: %d %s", r.Code, r.Body)
		}
		e.clock.Advance(30 * time.Second)
		code := totpCode(t, secret, e.clock.Now())
		if r := login(code); r.Code != 200 {
			t.Fatalf("fresh code: %d %s", r.Code, r.Body)
		}
		if r := login(code); r.Code != 401 || !strings.Contains(r.Detail(), "already used") {
			t.Fatalf("replayed code: %d %s", r.Code, r.Body)
		}
	})
	t.Run("RecoveryCodeOnce", func(t *testing.T) {
		rc := strings.ToUpper(codes[0].(string))
		if r := login(rc); r.Code != 200 {
			t.Fatalf("recovery code: %d %s", r.Code, r.Body)
		}
		if r := login(rc); r.Code != 401 {
			t.Fatalf("recovery code reused: %d %s", r.Code, r.Body)
		}
	})
	t.Run("Disable", func(t *testing.T) {
		if r := e.do(t, "POST", "/api/auth/2fa/disable", tok, map[string]any{}); r.Code != 422 {
			t.Fatalf("no proof: %d %s", r.Code, r.Body)
		}
		if r := e.do(t, "POST", "/api/auth/2fa/disable", tok, map[string]any{"code": "111111"}); r.Code != 422 {
			t.Fatalf("wrong code: %d %s", r.Code, r.Body)
		}
		if r := e.do(t, "POST", "/api/auth/2fa/disable", tok, map[string]any{"password": "wrong-password"}); r.Code != 422 {
			t.Fatalf("wrong password: %d %s", r.Code, r.Body)
		}
		e.clock.Advance(30 * time.Second)
		if r := e.do(t, "POST", "/api/auth/2fa/disable", tok, map[string]any{"code": totpCode(t, secret, e.clock.Now())}); r.Code != 200 || r.Data()["two_factor_enabled"] != false {
			t.Fatalf("disable: %d %s", r.Code, r.Body)
		}
		if r := login(""); r.Code != 200 {
			t.Fatalf("login after disable: %d %s", r.Code, r.Body)
		}
		if r := e.do(t, "POST", "/api/auth/2fa/disable", tok, map[string]any{"password": "password-carol"}); r.Code != 409 {
			t.Fatalf("disable twice: %d %s", r.Code, r.Body)
		}
	})
	t.Run("DisableWithPassword", func(t *testing.T) {
		s := e.do(t, "POST", "/api/auth/2fa/setup", tok, nil).Data()["secret"].(string)
		e.clock.Advance(30 * time.Second)
		if r := e.do(t, "POST", "/api/auth/2fa/verify", tok, map[string]any{"code": totpCode(t, s, e.clock.Now())}); r.Code != 200 {
			t.Fatalf("verify: %d %s", r.Code, r.Body)
		}
		if r := e.do(t, "POST", "/api/auth/2fa/disable", tok, map[string]any{"password": "password-carol"}); r.Code != 200 {
			t.Fatalf("disable with password: %d %s", r.Code, r.Body)
		}
	})
}

func TestTOTPSecretIsSealedAtRest(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	u, tok := e.user(t, "dave", store.RoleViewer)
	secret := e.do(t, "POST", "/api/auth/2fa/setup", tok, nil).Data()["secret"].(string)
	got, err := e.app.DB.UserByID(context.Background(), u.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.TOTPPending) == 0 || strings.Contains(string(got.TOTPPending), secret) {
		t.Fatal("the pending TOTP secret is stored in the clear")
	}
}

func TestRefresh(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *server.Config) { c.TokenTTL = time.Hour; c.SessionTTL = 150 * time.Minute })
	_, tok := e.user(t, "erin", store.RoleViewer)

	e.clock.Advance(50 * time.Minute)
	r := e.do(t, "POST", "/api/auth/refresh", tok, nil)
	if r.Code != 200 || r.JSON()["token_type"] != "bearer" || r.JSON()["user"] == nil {
		t.Fatalf("refresh: %d %s", r.Code, r.Body)
	}
	tok2 := r.JSON()["access_token"].(string)
	if tok2 == tok {
		t.Fatal("refresh returned the same token")
	}
	exp, _ := time.Parse(time.RFC3339, r.JSON()["expires_at"].(string))
	if want := e.clock.Now().Add(time.Hour); !exp.Equal(want) {
		t.Fatalf("expires_at %v, want %v", exp, want)
	}
	// Same session: still one active session.
	if s := e.do(t, "GET", "/api/auth/sessions", tok2, nil); s.Data()["total"].(float64) != 1 {
		t.Fatalf("sessions: %s", s.Body)
	}
	// The old token expires on its own schedule.
	e.clock.Advance(11 * time.Minute)
	if r := e.do(t, "GET", "/api/auth/me", tok, nil); r.Code != 401 || !strings.Contains(r.Detail(), "expired") {
		t.Fatalf("old token after expiry: %d %s", r.Code, r.Body)
	}
	// Refresh never goes past the session's absolute end (150 min).
	e.clock.Advance(39 * time.Minute)
	r = e.do(t, "POST", "/api/auth/refresh", tok2, nil)
	if r.Code != 200 {
		t.Fatalf("second refresh: %d %s", r.Code, r.Body)
	}
	tok3 := r.JSON()["access_token"].(string)
	exp, _ = time.Parse(time.RFC3339, r.JSON()["expires_at"].(string))
	end := time.Date(2026, 11, 21, 14, 30, 0, 0, time.UTC)
	if !exp.Equal(end) {
		t.Fatalf("expires_at %v, want the session end %v", exp, end)
	}
	e.clock.Advance(50 * time.Minute)
	if r := e.do(t, "POST", "/api/auth/refresh", tok3, nil); r.Code != 401 {
		t.Fatalf("refresh past the session end: %d %s", r.Code, r.Body)
	}
	// A body on refresh is not expected, but harmless: no 500.
	if r := e.do(t, "POST", "/api/auth/refresh", "", nil); r.Code != 401 {
		t.Fatalf("refresh without token: %d", r.Code)
	}
}

func TestBadTokens(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	u, tok := e.user(t, "frank", store.RoleViewer)
	sign := func(method jwt.SigningMethod, key any, claims jwt.MapClaims) string {
		s, err := jwt.NewWithClaims(method, claims).SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	now := e.clock.Now()
	claims := func() jwt.MapClaims {
		return jwt.MapClaims{"sub": fmt.Sprint(u.ID), "sid": 1, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
	}
	otherKey := []byte("another-key-another-key-another-key!")
	noneTok := sign(jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, claims())
	_, edKey, _ := ed25519.GenerateKey(rand.Reader)
	cases := []struct{ name, header string }{
		{"Missing", ""},
		{"NotBearer", "Basic " + tok},
		{"BearerNoToken", "Bearer "},
		{"Garbage", "Bearer not.a.jwt"},
		{"WrongKey", "Bearer " + sign(jwt.SigningMethodHS256, otherKey, claims())},
		{"AlgNone", "Bearer " + noneTok},
		{"EdDSA", "Bearer " + sign(jwt.SigningMethodEdDSA, edKey, claims())},
		{"TamperedPayload", "Bearer " + tamper(tok)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var r resp
			if c.header == "" {
				r = e.do(t, "GET", "/api/auth/me", "", nil)
			} else {
				r = e.do(t, "GET", "/api/auth/me", "", nil, "Authorization", c.header)
			}
			if r.Code != 401 {
				t.Fatalf("got %d %s", r.Code, r.Body)
			}
			if r.Header.Get("WWW-Authenticate") == "" {
				t.Fatal("no WWW-Authenticate header")
			}
		})
	}
	t.Run("Expired", func(t *testing.T) {
		e.clock.Advance(61 * time.Minute)
		defer e.clock.Advance(-61 * time.Minute)
		if r := e.do(t, "GET", "/api/auth/me", tok, nil); r.Code != 401 {
			t.Fatalf("got %d", r.Code)
		}
	})
	t.Run("Revoked", func(t *testing.T) {
		_, tok := e.user(t, "gina", store.RoleViewer)
		list := e.do(t, "GET", "/api/auth/sessions", tok, nil).Data()["items"].([]any)
		id := list[0].(map[string]any)["id"].(float64)
		if r := e.do(t, "DELETE", fmt.Sprintf("/api/auth/sessions/%d", int(id)), tok, nil); r.Code != 200 {
			t.Fatalf("revoke own current session: %d %s", r.Code, r.Body)
		}
		if r := e.do(t, "GET", "/api/auth/me", tok, nil); r.Code != 401 || !strings.Contains(r.Detail(), "revoked") {
			t.Fatalf("revoked token: %d %s", r.Code, r.Body)
		}
	})
}

// tamper changes the payload of a JWT while keeping its signature.
func tamper(tok string) string {
	parts := strings.Split(tok, ".")
	payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
	payload = []byte(strings.Replace(string(payload), `"sub":"`, `"sub":"9`, 1))
	parts[1] = base64.RawURLEncoding.EncodeToString(payload)
	return strings.Join(parts, ".")
}

func TestProfile(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.user(t, "other", store.RoleViewer)
	_, tok := e.user(t, "hank", store.RoleViewer)
	second := e.login(t, "hank@example.com", "password-hank")

	cases := []struct {
		name   string
		body   any
		status int
		detail string
	}{
		{"Rename", map[string]any{"username": "hank2", "full_name": "Hank Hill"}, 200, ""},
		{"TakenUsername", map[string]any{"username": "OTHER"}, 409, "username"},
		{"BadUsername", map[string]any{"username": "x"}, 422, "username:"},
		{"LongFullName", map[string]any{"full_name": strings.Repeat("n", 101)}, 422, "full_name:"},
		{"EmailNeedsPassword", map[string]any{"email": "hank@example.org"}, 422, "current_password: is required"},
		{"EmailWrongPassword", map[string]any{"email": "hank@example.org", "current_password": "nope-nope"}, 422, "current_password: is incorrect"},
		{"EmailTaken", map[string]any{"email": "other@example.com", "current_password": "password-hank"}, 409, "email"},
		{"ShortNewPassword", map[string]any{"new_password": "short", "current_password": "password-hank"}, 422, "new_password:"},
		{"UnknownField", map[string]any{"role": "admin"}, 422, "role"},
		{"NullIsNoChange", map[string]any{"username": nil}, 200, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := e.do(t, "PUT", "/api/auth/me", tok, c.body)
			if r.Code != c.status || !strings.Contains(r.Detail(), c.detail) {
				t.Fatalf("got %d %s", r.Code, r.Body)
			}
		})
	}
	if me := e.do(t, "GET", "/api/auth/me", tok, nil).Data(); me["username"] != "hank2" || me["full_name"] != "Hank Hill" || me["email"] != "hank@example.com" {
		t.Fatalf("profile after the cases: %v", me)
	}
	t.Run("ChangeEmail", func(t *testing.T) {
		r := e.do(t, "PUT", "/api/auth/me", tok, map[string]any{"email": "hank@example.org", "current_password": "password-hank"})
		if r.Code != 200 || r.Data()["email"] != "hank@example.org" {
			t.Fatalf("%d %s", r.Code, r.Body)
		}
	})
	t.Run("ChangePasswordEndsOtherSessions", func(t *testing.T) {
		r := e.do(t, "PUT", "/api/auth/me", tok, map[string]any{"new_password": "brand-new-password", "current_password": "password-hank"})
		if r.Code != 200 {
			t.Fatalf("%d %s", r.Code, r.Body)
		}
		if r := e.do(t, "GET", "/api/auth/me", second, nil); r.Code != 401 {
			t.Fatalf("other session still works: %d", r.Code)
		}
		if r := e.do(t, "GET", "/api/auth/me", tok, nil); r.Code != 200 {
			t.Fatalf("own session ended: %d", r.Code)
		}
		e.login(t, "hank@example.org", "brand-new-password")
		if r := e.do(t, "POST", "/api/auth/login", "", map[string]any{"email": "hank@example.org", "password": "password-hank"}); r.Code != 401 {
			t.Fatalf("old password still works: %d", r.Code)
		}
	})
}

func TestAvatar(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	u, tok := e.user(t, "ivy", store.RoleViewer)
	_, other := e.user(t, "jack", store.RoleViewer)
	img := pngBytes(t, 32, 32)

	r := e.upload(t, "/api/auth/me/avatar", tok, "file", "me.png", img)
	if r.Code != 200 {
		t.Fatalf("upload: %d %s", r.Code, r.Body)
	}
	url, _ := r.Data()["avatar_url"].(string)
	if !strings.HasPrefix(url, fmt.Sprintf("/api/auth/avatars/%d?v=", u.ID)) {
		t.Fatalf("avatar_url %q", url)
	}
	if me := e.do(t, "GET", "/api/auth/me", tok, nil).Data(); me["avatar_url"] != url {
		t.Fatalf("profile avatar_url %v", me["avatar_url"])
	}
	got := e.do(t, "GET", url, other, nil)
	if got.Code != 200 || got.Header.Get("Content-Type") != "image/png" || got.Body != string(img) {
		t.Fatalf("serving the avatar: %d %s", got.Code, got.Header.Get("Content-Type"))
	}
	if again := e.do(t, "GET", url, other, nil, "If-None-Match", got.Header.Get("ETag")); again.Code != 304 {
		t.Fatalf("conditional get: %d", again.Code)
	}

	cases := []struct {
		name    string
		field   string
		content []byte
		status  int
	}{
		{"TooLarge", "file", append(append([]byte{}, img...), make([]byte, 2<<20)...), 413},
		{"NotAnImage", "file", []byte("just some text, not an image at all"), 422},
		{"TruncatedPNG", "file", img[:len(img)/2], 422},
		{"WrongField", "avatar", img, 422},
		{"HugeCanvas", "file", pngBytes(t, 2049, 1), 422},
		{"GIF", "file", gifBytes(t), 200},
		{"JPEG", "file", jpegBytes(t), 200},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := e.upload(t, "/api/auth/me/avatar", tok, c.field, "x", c.content)
			if r.Code != c.status {
				t.Fatalf("got %d %s", r.Code, r.Body)
			}
		})
	}
	t.Run("NotMultipart", func(t *testing.T) {
		if r := e.do(t, "POST", "/api/auth/me/avatar", tok, map[string]any{"file": "x"}); r.Code != 422 {
			t.Fatalf("got %d %s", r.Code, r.Body)
		}
	})
	t.Run("Delete", func(t *testing.T) {
		r := e.do(t, "DELETE", "/api/auth/me/avatar", tok, nil)
		if r.Code != 200 || r.Data()["avatar_url"] != nil {
			t.Fatalf("%d %s", r.Code, r.Body)
		}
		if r := e.do(t, "GET", fmt.Sprintf("/api/auth/avatars/%d", u.ID), tok, nil); r.Code != 404 {
			t.Fatalf("deleted avatar still served: %d", r.Code)
		}
		if r := e.do(t, "GET", "/api/auth/avatars/abc", tok, nil); r.Code != 404 {
			t.Fatalf("bad id: %d", r.Code)
		}
	})
}

func TestSessions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, a := e.user(t, "kim", store.RoleViewer)
	b := e.do(t, "POST", "/api/auth/login", "", map[string]any{"email": "kim@example.com", "password": "password-kim"},
		"User-Agent", "phone-app/1.0").JSON()["access_token"].(string)
	_, stranger := e.user(t, "lee", store.RoleViewer)

	list := e.do(t, "GET", "/api/auth/sessions", a, nil).Data()
	items := list["items"].([]any)
	if list["total"].(float64) != 2 || len(items) != 2 {
		t.Fatalf("sessions: %v", list)
	}
	var otherID float64
	current := 0
	for _, it := range items {
		s := it.(map[string]any)
		if s["current"] == true {
			current++
		} else {
			otherID = s["id"].(float64)
			if s["user_agent"] != "phone-app/1.0" {
				t.Fatalf("user agent not recorded: %v", s)
			}
		}
	}
	if current != 1 {
		t.Fatalf("want exactly one current session, got %d", current)
	}
	path := fmt.Sprintf("/api/auth/sessions/%d", int(otherID))
	if r := e.do(t, "DELETE", path, stranger, nil); r.Code != 404 {
		t.Fatalf("another user's session: %d %s", r.Code, r.Body)
	}
	if r := e.do(t, "GET", "/api/auth/me", b, nil); r.Code != 200 {
		t.Fatalf("before revoke: %d", r.Code)
	}
	if r := e.do(t, "DELETE", path, a, nil); r.Code != 200 {
		t.Fatalf("revoke: %d %s", r.Code, r.Body)
	}
	if r := e.do(t, "GET", "/api/auth/me", b, nil); r.Code != 401 {
		t.Fatalf("revoked token still works: %d", r.Code)
	}
	if r := e.do(t, "DELETE", path, a, nil); r.Code != 404 {
		t.Fatalf("revoke twice: %d", r.Code)
	}
	for _, bad := range []string{"abc", "0", "-1", "99999999999999999999"} {
		if r := e.do(t, "DELETE", "/api/auth/sessions/"+bad, a, nil); r.Code != 404 {
			t.Fatalf("id %q: %d", bad, r.Code)
		}
	}
	if n := e.do(t, "GET", "/api/auth/sessions", a, nil).Data()["total"].(float64); n != 1 {
		t.Fatalf("after revoke: %v sessions", n)
	}
}

func TestLicense(t *testing.T) {
	t.Parallel()
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	_, otherPriv, _ := ed25519.GenerateKey(rand.Reader)
	e := newEnv(t, func(c *server.Config) { c.LicensePublicKey = base64.StdEncoding.EncodeToString(pub) })
	_, tok := e.user(t, "mia", store.RoleViewer)
	_, tok2 := e.user(t, "ned", store.RoleViewer)
	now := e.clock.Now()
	issue := func(k ed25519.PrivateKey, id string, exp *time.Time) string {
		key, err := auth.SignLicense(k, auth.LicensePayload{ID: id, Licensee: "Acme", Plan: "team", Seats: 5, IssuedAt: now.Add(-48 * time.Hour), ExpiresAt: exp})
		if err != nil {
			t.Fatal(err)
		}
		return key
	}
	in30 := now.Add(30 * 24 * time.Hour)
	yesterday := now.Add(-24 * time.Hour)
	valid := issue(priv, "lic-valid-1", &in30)

	if r := e.do(t, "GET", "/api/auth/license", tok, nil); r.Code != 200 || r.Data()["state"] != "inactive" || r.Data()["plan"] != nil {
		t.Fatalf("initial: %s", r.Body)
	}
	bad := []struct{ name, key, detail string }{
		{"Garbage", "hello", "not a copydesk license key"},
		{"ForeignSignature", issue(otherPriv, "lic-foreign", &in30), "signature does not match"},
		{"Tampered", strings.Replace(valid, valid[10:14], "AAAA", 1), "not valid"},
		{"Expired", issue(priv, "lic-expired", &yesterday), "expired"},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			r := e.do(t, "POST", "/api/auth/license/activate", tok, map[string]any{"license_key": c.key})
			if r.Code != 422 || !strings.Contains(r.Detail(), c.detail) {
				t.Fatalf("got %d %s", r.Code, r.Body)
			}
		})
	}
	r := e.do(t, "POST", "/api/auth/license/activate", tok, map[string]any{"license_key": valid})
	if r.Code != 200 || r.Data()["state"] != "active" || r.Data()["plan"] != "team" || r.Data()["seats"].(float64) != 5 || r.Data()["seats_in_use"].(float64) != 2 {
		t.Fatalf("activate: %d %s", r.Code, r.Body)
	}
	if r := e.do(t, "POST", "/api/auth/license/activate", tok, map[string]any{"license_key": valid}); r.Code != 200 {
		t.Fatalf("activate again on the same account: %d %s", r.Code, r.Body)
	}
	if r := e.do(t, "POST", "/api/auth/license/activate", tok2, map[string]any{"license_key": valid}); r.Code != 409 {
		t.Fatalf("same key on another account: %d %s", r.Code, r.Body)
	}
	e.clock.Advance(31 * 24 * time.Hour)
	// Tokens expired during the jump; sign in again.
	tok = e.login(t, "mia@example.com", "password-mia")
	tok2 = e.login(t, "ned@example.com", "password-ned")
	if r := e.do(t, "GET", "/api/auth/license", tok2, nil); r.Data()["state"] != "inactive" {
		t.Fatalf("other account: %s", r.Body)
	}
	if r := e.do(t, "GET", "/api/auth/license", tok, nil); r.Data()["state"] != "expired" {
		t.Fatalf("after expiry: %s", r.Body)
	}
	if r := e.do(t, "POST", "/api/auth/license/deactivate", tok, nil); r.Code != 200 || r.Data()["state"] != "inactive" {
		t.Fatalf("deactivate: %d %s", r.Code, r.Body)
	}
	perpetual := issue(priv, "lic-perpetual", nil)
	if r := e.do(t, "POST", "/api/auth/license/activate", tok2, map[string]any{"license_key": perpetual}); r.Code != 200 || r.Data()["expires_at"] != nil {
		t.Fatalf("perpetual: %d %s", r.Code, r.Body)
	}
}

func TestUserAdministration(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	super, superTok := e.user(t, "root", store.RoleSuperAdmin)
	admin, adminTok := e.user(t, "boss", store.RoleAdmin)
	viewer, viewerTok := e.user(t, "vic", store.RoleViewer)
	for i := 0; i < 4; i++ {
		e.user(t, fmt.Sprintf("filler%d", i), store.RoleEditor)
	}
	envA, _ := e.app.DB.CreateEnvironment(ctx, store.NewEnvironment{Name: "A", Slug: "a"})

	t.Run("List", func(t *testing.T) {
		cases := []struct {
			query  string
			status int
			total  float64
			items  int
		}{
			{"", 200, 7, 7},
			{"?per_page=2&page=2", 200, 7, 2},
			{"?per_page=5&page=9", 200, 7, 0},
			{"?role=editor", 200, 4, 4},
			{"?role=super_admin", 200, 1, 1},
			{"?q=FILLER", 200, 4, 4},
			{"?q=%25", 200, 0, 0},
			{"?is_active=true", 200, 7, 7},
			{"?per_page=500", 422, 0, 0},
			{"?per_page=0", 422, 0, 0},
			{"?page=-1", 422, 0, 0},
			{"?page=abc", 422, 0, 0},
			{"?is_active=maybe", 422, 0, 0},
			{"?role=god", 422, 0, 0},
		}
		for _, c := range cases {
			r := e.do(t, "GET", "/api/auth/users"+c.query, adminTok, nil)
			if r.Code != c.status {
				t.Fatalf("%s: %d %s", c.query, r.Code, r.Body)
			}
			if c.status == 200 {
				d := r.Data()
				if d["total"].(float64) != c.total || len(d["items"].([]any)) != c.items {
					t.Fatalf("%s: total %v items %d", c.query, d["total"], len(d["items"].([]any)))
				}
			}
		}
	})
	role := func(tok string, id int64, role string) resp {
		return e.do(t, "PUT", fmt.Sprintf("/api/auth/users/%d/role", id), tok, map[string]any{"role": role})
	}
	status := func(tok string, id int64, active bool) resp {
		return e.do(t, "PUT", fmt.Sprintf("/api/auth/users/%d/status", id), tok, map[string]any{"is_active": active})
	}
	t.Run("Roles", func(t *testing.T) {
		checks := []struct {
			name   string
			r      resp
			status int
		}{
			{"AdminPromotesViewer", role(adminTok, viewer.ID, "editor"), 200},
			{"AdminGrantsSuper", role(adminTok, viewer.ID, "super_admin"), 403},
			{"AdminDemotesSuper", role(adminTok, super.ID, "viewer"), 403},
			{"UnknownRole", role(adminTok, viewer.ID, "owner"), 422},
			{"UnknownUser", role(adminTok, 9999, "viewer"), 404},
			{"LastSuperDemotesSelf", role(superTok, super.ID, "admin"), 409},
			{"SuperGrantsSuper", role(superTok, admin.ID, "super_admin"), 200},
		}
		for _, c := range checks {
			if c.r.Code != c.status {
				t.Errorf("%s: got %d %s", c.name, c.r.Code, c.r.Body)
			}
		}
		// Role changes apply on the very next request.
		if r := e.do(t, "GET", "/api/auth/users", adminTok, nil); r.Code != 200 {
			t.Fatalf("promoted admin: %d", r.Code)
		}
		if r := role(superTok, super.ID, "admin"); r.Code != 200 {
			t.Fatalf("demote self with another super around: %d %s", r.Code, r.Body)
		}
		if r := e.do(t, "PUT", "/api/settings/system", superTok, map[string]any{}); r.Code != 200 {
			t.Fatalf("demoted to admin still may use admin routes: %d", r.Code)
		}
		if r := role(superTok, admin.ID, "viewer"); r.Code != 403 {
			t.Fatalf("a demoted super_admin acts as one: %d %s", r.Code, r.Body)
		}
		// Restore for the next subtests.
		if r := role(adminTok, super.ID, "super_admin"); r.Code != 200 {
			t.Fatalf("restore: %d %s", r.Code, r.Body)
		}
	})
	t.Run("Status", func(t *testing.T) {
		if r := status(adminTok, admin.ID, false); r.Code != 409 {
			t.Fatalf("disable self: %d %s", r.Code, r.Body)
		}
		if r := status(viewerTok, admin.ID, false); r.Code != 403 {
			t.Fatalf("viewer disables: %d", r.Code)
		}
		if r := status(superTok, viewer.ID, false); r.Code != 200 || r.Data()["is_active"] != false {
			t.Fatalf("disable: %d %s", r.Code, r.Body)
		}
		if r := e.do(t, "GET", "/api/auth/me", viewerTok, nil); r.Code != 401 {
			t.Fatalf("disabled user's token still works: %d", r.Code)
		}
		if r := e.do(t, "POST", "/api/auth/login", "", map[string]any{"email": "vic@example.com", "password": "password-vic"}); r.Code != 403 {
			t.Fatalf("disabled login: %d", r.Code)
		}
		if r := status(superTok, viewer.ID, true); r.Code != 200 {
			t.Fatalf("enable: %d", r.Code)
		}
		e.login(t, "vic@example.com", "password-vic")
		if r := e.do(t, "PUT", fmt.Sprintf("/api/auth/users/%d/status", viewer.ID), superTok, map[string]any{}); r.Code != 422 {
			t.Fatalf("missing is_active: %d %s", r.Code, r.Body)
		}
		if r := e.do(t, "PUT", fmt.Sprintf("/api/auth/users/%d/status", viewer.ID), superTok, map[string]any{"is_active": "no"}); r.Code != 422 {
			t.Fatalf("string is_active: %d %s", r.Code, r.Body)
		}
	})
	t.Run("LastSuperAdmin", func(t *testing.T) {
		// Demote the second super_admin so root is the last one again.
		if r := role(superTok, admin.ID, "admin"); r.Code != 200 {
			t.Fatalf("%d %s", r.Code, r.Body)
		}
		if r := status(superTok, super.ID, false); r.Code != 409 {
			t.Fatalf("disable the last super_admin (self): %d %s", r.Code, r.Body)
		}
		if r := status(adminTok, super.ID, false); r.Code != 403 {
			t.Fatalf("admin disables super_admin: %d %s", r.Code, r.Body)
		}
	})
	t.Run("Environments", func(t *testing.T) {
		path := fmt.Sprintf("/api/auth/users/%d/environments", viewer.ID)
		cases := []struct {
			body   any
			status int
		}{
			{map[string]any{"environment_ids": []int64{envA.ID, envA.ID}}, 200},
			{map[string]any{"environment_ids": []int64{envA.ID, 777}}, 422},
			{map[string]any{"environment_ids": []int64{0}}, 422},
			{map[string]any{"environment_ids": "all"}, 422},
			{map[string]any{}, 422},
		}
		for _, c := range cases {
			r := e.do(t, "PUT", path, adminTok, c.body)
			if r.Code != c.status {
				t.Fatalf("%v: %d %s", c.body, r.Code, r.Body)
			}
		}
		ids, _ := e.app.DB.UserEnvironmentIDs(ctx, viewer.ID)
		if len(ids) != 1 || ids[0] != envA.ID {
			t.Fatalf("grants after the failed requests: %v", ids)
		}
		if r := e.do(t, "PUT", fmt.Sprintf("/api/auth/users/%d/environments", 4242), adminTok, map[string]any{"environment_ids": []int64{}}); r.Code != 404 {
			t.Fatalf("unknown user: %d", r.Code)
		}
		if r := e.do(t, "PUT", path, adminTok, map[string]any{"environment_ids": []int64{}}); r.Code != 200 || len(r.Data()["environment_ids"].([]any)) != 0 {
			t.Fatalf("clear: %d %s", r.Code, r.Body)
		}
	})
}

func TestErrorConventions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, tok := e.user(t, "olga", store.RoleViewer)
	cases := []struct {
		name, method, path string
		body               any
		status             int
	}{
		{"UnknownRoute", "GET", "/api/nothing-here", nil, 404},
		{"UnknownRootRoute", "GET", "/nothing", nil, 404},
		{"WrongMethod", "PATCH", "/api/auth/me", nil, 405},
		{"MalformedJSON", "PUT", "/api/auth/me", "{", 400},
		{"TooLarge", "PUT", "/api/auth/me", `{"full_name":"` + strings.Repeat("x", 1<<20) + `"}`, 413},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := e.do(t, c.method, c.path, tok, c.body)
			if r.Code != c.status {
				t.Fatalf("got %d %s", r.Code, r.Body)
			}
			if d := r.Detail(); d == "" || len(r.JSON()) != 1 {
				t.Fatalf("error body is not {detail}: %s", r.Body)
			}
		})
	}
	t.Run("HealthAndHeaders", func(t *testing.T) {
		r := e.do(t, "GET", "/api/health", "", nil)
		if r.Code != 200 || r.Data()["status"] != "ok" || r.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Fatalf("%d %s %v", r.Code, r.Body, r.Header)
		}
	})
	t.Run("Docs", func(t *testing.T) {
		for _, p := range []string{"/openapi.json", "/docs", "/redoc", "/docs/assets/swagger-ui/swagger-ui-bundle.js", "/redoc/assets/redoc/redoc.standalone.js"} {
			r := e.send(t, httptestRequest("GET", p))
			if r.Code != http.StatusOK {
				t.Fatalf("%s: %d", p, r.Code)
			}
		}
	})
}
