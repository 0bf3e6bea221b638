package server_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/copydesk/copydesk/server/auth"
	"github.com/copydesk/copydesk/store"
)

// enableTwoFactor turns 2FA on for a signed-in user through the API.
func (e *env) enableTwoFactor(t *testing.T, tok, password string) {
	t.Helper()
	setup := e.do(t, "POST", "/api/auth/2fa/setup", tok, nil)
	if setup.Code != 200 {
		t.Fatalf("setup: %d %s", setup.Code, setup.Body)
	}
	code := totpCode(t, setup.Data()["secret"].(string), e.clock.Now())
	if r := e.do(t, "POST", "/api/auth/2fa/verify", tok, map[string]any{"code": code, "current_password": password}); r.Code != 200 {
		t.Fatalf("verify: %d %s", r.Code, r.Body)
	}
}

// lock gives an address the failed sign-ins of a lock that lasts an hour.
func (e *env) lock(t *testing.T, email string) {
	t.Helper()
	until := e.clock.Now().Add(time.Hour)
	err := e.app.DB.UpdateLoginFailures(context.Background(), email, func(store.LoginFailures) (store.LoginFailures, error) {
		return store.LoginFailures{Failures: 10, LastFailureAt: e.clock.Now(), LockedUntil: &until}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestAccountRecoveryByAdmin: an admin turns off the 2FA of a user who lost
// their authenticator and unlocks a locked address, with the rules of the
// other admin actions on users.
func TestAccountRecoveryByAdmin(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	super, superTok := e.user(t, "root", store.RoleSuperAdmin)
	admin, adminTok := e.user(t, "boss", store.RoleAdmin)
	vic, vicTok := e.user(t, "vic", store.RoleViewer)
	lou, louTok := e.user(t, "lou", store.RoleViewer)
	e.enableTwoFactor(t, vicTok, "password-vic")
	e.enableTwoFactor(t, superTok, "password-root")
	reset := func(tok string, id int64) resp {
		return e.do(t, "POST", fmt.Sprintf("/api/auth/users/%d/reset-2fa", id), tok, nil)
	}
	unlock := func(tok string, id int64) resp {
		return e.do(t, "POST", fmt.Sprintf("/api/auth/users/%d/unlock", id), tok, nil)
	}
	login := func(name string) resp {
		return e.do(t, "POST", "/api/auth/login", "", map[string]any{"email": name + "@example.com", "password": "password-" + name})
	}

	refused := []struct {
		name   string
		r      resp
		status int
	}{
		{"ViewerResets", reset(louTok, vic.ID), 403},
		{"ViewerUnlocks", unlock(louTok, vic.ID), 403},
		{"AdminResetsSuperAdmin", reset(adminTok, super.ID), 403},
		{"AdminUnlocksSuperAdmin", unlock(adminTok, super.ID), 403},
		{"AdminResetsOwn", reset(adminTok, admin.ID), 409},
		{"AdminUnlocksOwn", unlock(adminTok, admin.ID), 409},
		{"UnknownUser", reset(adminTok, 9999), 404},
		{"UnknownUserUnlock", unlock(adminTok, 9999), 404},
		{"WithoutTwoFactor", reset(adminTok, lou.ID), 409},
	}
	for _, c := range refused {
		t.Run("Refused/"+c.name, func(t *testing.T) {
			if c.r.Code != c.status {
				t.Fatalf("got %d, want %d: %s", c.r.Code, c.status, c.r.Body)
			}
		})
	}

	t.Run("ResetTwoFactor", func(t *testing.T) {
		if r := login("vic"); r.Code != 401 {
			t.Fatalf("before the reset vic needs a code: %d %s", r.Code, r.Body)
		}
		r := reset(adminTok, vic.ID)
		if r.Code != 200 || r.Data()["two_factor_enabled"] != false {
			t.Fatalf("reset: %d %s", r.Code, r.Body)
		}
		if r := login("vic"); r.Code != 200 {
			t.Fatalf("after the reset vic signs in with the password: %d %s", r.Code, r.Body)
		}
		if r := e.do(t, "GET", "/api/auth/me", vicTok, nil); r.Code != 200 {
			t.Fatalf("the reset ended vic's session: %d", r.Code)
		}
		if n, _ := e.app.DB.RecoveryCodesLeft(context.Background(), vic.ID); n != 0 {
			t.Errorf("%d recovery codes left after the reset", n)
		}
		if r := reset(adminTok, vic.ID); r.Code != 409 {
			t.Fatalf("reset twice: %d %s", r.Code, r.Body)
		}
		if r := reset(superTok, super.ID); r.Code != 409 {
			t.Fatalf("a super_admin resets their own: %d %s", r.Code, r.Body)
		}
	})
	t.Run("Unlock", func(t *testing.T) {
		e.lock(t, "LOU@example.com")
		if r := login("lou"); r.Code != 429 {
			t.Fatalf("locked: %d %s", r.Code, r.Body)
		}
		if r := unlock(adminTok, lou.ID); r.Code != 200 || r.Data()["id"] != float64(lou.ID) {
			t.Fatalf("unlock: %d %s", r.Code, r.Body)
		}
		if r := login("lou"); r.Code != 200 {
			t.Fatalf("after the unlock: %d %s", r.Code, r.Body)
		}
		if r := unlock(adminTok, lou.ID); r.Code != 200 {
			t.Fatalf("unlocking an address that is not locked: %d %s", r.Code, r.Body)
		}
	})
}

// TestUserListShowsSignInLock: an address locked by failed sign-ins shows
// its locked_until in the user administration's list, the others null; the
// unlock (or the end of the lock) makes it null again.
func TestUserListShowsSignInLock(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, adminTok := e.user(t, "boss", store.RoleAdmin)
	lou, _ := e.user(t, "lou", store.RoleViewer)
	vic, _ := e.user(t, "vic", store.RoleViewer)
	p := auth.DefaultThrottle
	for i := 0; i < p.LockAfter; i++ {
		r := e.do(t, "POST", "/api/auth/login", "", map[string]any{"email": "Lou@Example.com", "password": "wrong-password"})
		if r.Code != 401 {
			t.Fatalf("failure %d: %d %s", i+1, r.Code, r.Body)
		}
		e.clock.Advance(p.MaxDelay)
	}
	if r := e.do(t, "POST", "/api/auth/login", "", map[string]any{"email": "lou@example.com", "password": "password-lou"}); r.Code != 429 {
		t.Fatalf("want lou locked: %d %s", r.Code, r.Body)
	}
	// The clock ran past the admin's token: sign in again before each list.
	signIn := func() {
		t.Helper()
		r := e.do(t, "POST", "/api/auth/login", "", map[string]any{"email": "boss@example.com", "password": "password-boss"})
		if r.Code != 200 {
			t.Fatalf("admin sign-in: %d %s", r.Code, r.Body)
		}
		adminTok = r.JSON()["access_token"].(string)
	}
	locks := func() map[float64]any {
		t.Helper()
		signIn()
		r := e.do(t, "GET", "/api/auth/users?per_page=100", adminTok, nil)
		if r.Code != 200 {
			t.Fatalf("list: %d %s", r.Code, r.Body)
		}
		out := map[float64]any{}
		for _, it := range r.Data()["items"].([]any) {
			u := it.(map[string]any)
			v, ok := u["locked_until"]
			if !ok {
				t.Fatalf("no locked_until in %v", u)
			}
			out[u["id"].(float64)] = v
		}
		return out
	}
	got := locks()
	s, _ := got[float64(lou.ID)].(string)
	until, err := time.Parse(time.RFC3339, s)
	if err != nil || !until.After(e.clock.Now()) || until.After(e.clock.Now().Add(p.LockFor)) {
		t.Fatalf("lou's locked_until = %v (now %v, lock %v)", got[float64(lou.ID)], e.clock.Now(), p.LockFor)
	}
	if got[float64(vic.ID)] != nil {
		t.Fatalf("vic is not locked, got %v", got[float64(vic.ID)])
	}
	if r := e.do(t, "POST", fmt.Sprintf("/api/auth/users/%d/unlock", lou.ID), adminTok, nil); r.Code != 200 {
		t.Fatalf("unlock: %d %s", r.Code, r.Body)
	}
	if v := locks()[float64(lou.ID)]; v != nil {
		t.Fatalf("after the unlock lou's locked_until = %v", v)
	}
	// A lock that has ended is not shown, though its row is still there.
	e.lock(t, "lou@example.com")
	if locks()[float64(lou.ID)] == nil {
		t.Fatal("locked again, but locked_until is null")
	}
	e.clock.Advance(time.Hour + time.Second)
	if v := locks()[float64(lou.ID)]; v != nil {
		t.Fatalf("after the lock's end lou's locked_until = %v", v)
	}
}
