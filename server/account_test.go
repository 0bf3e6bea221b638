package server_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/copydesk/copydesk/store"
)

// Tests of the account routes beyond the specification's list: sign-out,
// the sessions list as a list, the 2FA status with the recovery codes
// left, and an admin reading a user's environment grants.

func TestLogout(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, laptop := e.user(t, "lou", store.RoleViewer)
	phone := e.login(t, "lou@example.com", "password-lou")

	r := e.do(t, "POST", "/api/auth/logout", laptop, nil)
	if r.Code != 200 || r.Data()["revoked"] != true || r.JSON()["message"] == "" {
		t.Fatalf("logout: %d %s", r.Code, r.Body)
	}
	sessionID := r.Data()["id"]
	after := []struct {
		name, method, path string
	}{
		{"Me", "GET", "/api/auth/me"},
		{"Refresh", "POST", "/api/auth/refresh"},
		{"LogoutAgain", "POST", "/api/auth/logout"},
	}
	for _, c := range after {
		t.Run("EndedToken/"+c.name, func(t *testing.T) {
			if r := e.do(t, c.method, c.path, laptop, nil); r.Code != 401 {
				t.Fatalf("got %d %s", r.Code, r.Body)
			}
		})
	}
	t.Run("OtherSessionsStay", func(t *testing.T) {
		list := e.do(t, "GET", "/api/auth/sessions", phone, nil).Data()
		items := list["items"].([]any)
		if list["total"] != 1.0 || len(items) != 1 || items[0].(map[string]any)["id"] == sessionID || items[0].(map[string]any)["current"] != true {
			t.Fatalf("sessions after logout: %v", list)
		}
	})
	t.Run("SignInAgain", func(t *testing.T) {
		if r := e.do(t, "GET", "/api/auth/me", e.login(t, "lou@example.com", "password-lou"), nil); r.Code != 200 {
			t.Fatalf("%d %s", r.Code, r.Body)
		}
	})
	t.Run("Anonymous", func(t *testing.T) {
		if r := e.do(t, "POST", "/api/auth/logout", "", nil); r.Code != 401 {
			t.Fatalf("%d %s", r.Code, r.Body)
		}
	})
}

func TestSessionsList(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, tok := e.user(t, "sam", store.RoleViewer)
	for i := 0; i < 4; i++ {
		e.clock.Advance(time.Second)
		e.login(t, "sam@example.com", "password-sam")
	}
	var seen []float64
	for page := 1; page <= 3; page++ {
		r := e.do(t, "GET", fmt.Sprintf("/api/auth/sessions?per_page=2&page=%d", page), tok, nil)
		d := r.Data()
		if r.Code != 200 || d["total"] != 5.0 || d["page"] != float64(page) || d["per_page"] != 2.0 {
			t.Fatalf("page %d: %d %s", page, r.Code, r.Body)
		}
		for _, it := range d["items"].([]any) {
			seen = append(seen, it.(map[string]any)["id"].(float64))
		}
	}
	if len(seen) != 5 {
		t.Fatalf("the pages hold %v", seen)
	}
	for i := 1; i < len(seen); i++ {
		if seen[i] >= seen[i-1] {
			t.Fatalf("not newest first: %v", seen)
		}
	}
	if d := e.do(t, "GET", "/api/auth/sessions", tok, nil).Data(); d["page"] != 1.0 || d["per_page"] != 50.0 {
		t.Fatalf("defaults: %v", d)
	}
	for _, q := range []string{"?per_page=0", "?per_page=201", "?page=0", "?page=x", "?limit=2"} {
		if r := e.do(t, "GET", "/api/auth/sessions"+q, tok, nil); r.Code != 422 {
			t.Errorf("%s: %d %s", q, r.Code, r.Body)
		}
	}
}

func TestTwoFactorStatusAndRecoveryCodes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, tok := e.user(t, "rita", store.RoleViewer)
	status := func() map[string]any {
		t.Helper()
		r := e.do(t, "GET", "/api/auth/2fa", tok, nil)
		if r.Code != 200 {
			t.Fatalf("status: %d %s", r.Code, r.Body)
		}
		return r.Data()
	}
	login := func(code string) resp {
		return e.do(t, "POST", "/api/auth/login", "", map[string]any{"email": "rita@example.com", "password": "password-rita", "totp_code": code})
	}
	if s := status(); s["two_factor_enabled"] != false || s["setup_pending"] != false || s["recovery_codes_left"] != 0.0 {
		t.Fatalf("off: %v", s)
	}
	setup := e.do(t, "POST", "/api/auth/2fa/setup", tok, nil).Data()
	if s := status(); s["two_factor_enabled"] != false || s["setup_pending"] != true {
		t.Fatalf("pending: %v", s)
	}
	secret := setup["secret"].(string)
	v := e.do(t, "POST", "/api/auth/2fa/verify", tok, map[string]any{"code": totpCode(t, secret, e.clock.Now()), "current_password": "password-rita"})
	codes := v.Data()["recovery_codes"].([]any)
	if s := status(); s["two_factor_enabled"] != true || s["setup_pending"] != false || s["recovery_codes_left"] != 10.0 {
		t.Fatalf("on: %v", s)
	}

	// Entering a code a second time says "already used", for a TOTP code
	// and a recovery code alike.
	e.clock.Advance(30 * time.Second)
	totp := totpCode(t, secret, e.clock.Now())
	recovery := codes[0].(string)
	for _, code := range []string{totp, recovery} {
		if r := login(code); r.Code != 200 {
			t.Fatalf("first use of %s: %d %s", code, r.Code, r.Body)
		}
		if r := login(code); r.Code != 401 || !strings.Contains(r.Detail(), "already used") {
			t.Errorf("second use of %s: %d %s", code, r.Code, r.Body)
		}
	}
	if r := login("zzzzz-zzzzz"); r.Code != 401 || r.Detail() != "the two-factor code is not valid" {
		t.Errorf("a code never issued: %d %s", r.Code, r.Body)
	}
	if s := status(); s["recovery_codes_left"] != 9.0 {
		t.Fatalf("after one recovery code: %v", s)
	}
	t.Run("DisableWithAUsedRecoveryCode", func(t *testing.T) {
		r := e.do(t, "POST", "/api/auth/2fa/disable", tok, map[string]any{"code": recovery})
		if r.Code != 422 || !strings.HasPrefix(r.Detail(), "code: ") || !strings.Contains(r.Detail(), "already used") {
			t.Fatalf("%d %s", r.Code, r.Body)
		}
		if s := status(); s["two_factor_enabled"] != true {
			t.Fatalf("disabled by a used code: %v", s)
		}
	})
}

func TestReadUserEnvironments(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	_, admin := e.user(t, "boss", store.RoleAdmin)
	super, _ := e.user(t, "root", store.RoleSuperAdmin)
	vic, _ := e.user(t, "vic", store.RoleViewer)
	a, _ := e.app.DB.CreateEnvironment(ctx, store.NewEnvironment{Name: "A", Slug: "a"})
	b, _ := e.app.DB.CreateEnvironment(ctx, store.NewEnvironment{Name: "B", Slug: "b"})
	path := func(id int64) string { return fmt.Sprintf("/api/auth/users/%d/environments", id) }
	ids := func(r resp) string { return fmt.Sprint(r.Data()["environment_ids"]) }

	if r := e.do(t, "GET", path(vic.ID), admin, nil); r.Code != 200 || ids(r) != "[]" || r.Data()["user_id"] != float64(vic.ID) {
		t.Fatalf("none granted: %d %s", r.Code, r.Body)
	}
	if r := e.do(t, "PUT", path(vic.ID), admin, map[string]any{"environment_ids": []int64{b.ID, a.ID}}); r.Code != 200 {
		t.Fatalf("PUT: %d %s", r.Code, r.Body)
	}
	if r := e.do(t, "GET", path(vic.ID), admin, nil); r.Code != 200 || ids(r) != fmt.Sprint([]float64{float64(a.ID), float64(b.ID)}) {
		t.Fatalf("after PUT: %d %s", r.Code, r.Body)
	}
	// Reading is not changing: an admin reads a super_admin's grants.
	if r := e.do(t, "GET", path(super.ID), admin, nil); r.Code != 200 {
		t.Fatalf("a super_admin's: %d %s", r.Code, r.Body)
	}
	for _, p := range []string{path(9999), "/api/auth/users/x/environments", "/api/auth/users/0/environments"} {
		if r := e.do(t, "GET", p, admin, nil); r.Code != 404 {
			t.Errorf("%s: %d %s", p, r.Code, r.Body)
		}
	}
}
