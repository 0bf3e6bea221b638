package auth

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/copydesk/copydesk/server/keyring"
	"github.com/copydesk/copydesk/store"
	"github.com/copydesk/copydesk/store/storetest"
)

// serviceT0 is where the fixture's clock starts.
var serviceT0 = storetest.T0

// fixture is a Service over a fresh database with a clock at serviceT0.
type fixture struct {
	svc *Service
	db  *store.DB
	clk *storetest.Clock
}

// newFixture builds the service with a cheap hasher, a one-hour token, a
// one-day session and no throttling; tune changes any of that.
func newFixture(t *testing.T, tune ...func(*Config)) *fixture {
	t.Helper()
	db, clk := storetest.OpenDB(t)
	keys, err := keyring.New([]byte(strings.Repeat("k", keyring.MinSecretLen)))
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Hasher = cheapHasher
	cfg.TokenTTL = time.Hour
	cfg.SessionTTL = 24 * time.Hour
	cfg.Throttle = ThrottlePolicy{}
	for _, f := range tune {
		f(&cfg)
	}
	svc, err := New(db, keys, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{svc: svc, db: db, clk: clk}
}

func password(name string) string { return name + "-password" }

// user creates name@example.com with password(name).
func (f *fixture) user(t *testing.T, name string, role store.Role) *store.User {
	t.Helper()
	u, err := f.svc.CreateUser(context.Background(), NewAccount{Email: name + "@example.com", Username: name,
		Password: password(name), Role: role})
	if err != nil {
		t.Fatalf("CreateUser %s: %v", name, err)
	}
	return u
}

func (f *fixture) login(t *testing.T, name string) *Grant {
	t.Helper()
	g, err := f.svc.Login(context.Background(), LoginInput{Email: name + "@example.com", Password: password(name)})
	if err != nil {
		t.Fatalf("Login %s: %v", name, err)
	}
	return g
}

func (f *fixture) principal(t *testing.T, token string) *Principal {
	t.Helper()
	p, err := f.svc.Authenticate(context.Background(), token)
	if err != nil {
		t.Fatalf("Authenticate: %v", err)
	}
	return p
}

// wantErr fails unless err is a *store.Error of kind want.
func wantErr(t *testing.T, err error, want store.Kind) *store.Error {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want kind %d", want)
	}
	if store.KindOf(err) != want {
		t.Fatalf("got %v (kind %d), want kind %d", err, store.KindOf(err), want)
	}
	return err.(*store.Error)
}

func TestLogin(t *testing.T) {
	ctx := context.Background()

	t.Run("OK", func(t *testing.T) {
		f := newFixture(t)
		u := f.user(t, "ann", store.RoleEditor)
		g, err := f.svc.Login(ctx, LoginInput{Email: "  ANN@example.com ", Password: password("ann"), IP: "192.0.2.7", UserAgent: "ua"})
		if err != nil {
			t.Fatal(err)
		}
		if g.User.ID != u.ID || g.Session.UserID != u.ID || g.Session.IP != "192.0.2.7" || g.User.LastLoginAt == nil {
			t.Errorf("grant = %+v / %+v", g.User, g.Session)
		}
		if !g.ExpiresAt.Equal(serviceT0.Add(time.Hour)) || !g.Session.ExpiresAt.Equal(serviceT0.Add(24*time.Hour)) {
			t.Errorf("token ends %v, session ends %v", g.ExpiresAt, g.Session.ExpiresAt)
		}
		p := f.principal(t, g.Token)
		if p.User.ID != u.ID || p.Session.ID != g.Session.ID {
			t.Errorf("Authenticate gave user %d session %d", p.User.ID, p.Session.ID)
		}
	})

	t.Run("WrongPasswordLooksLikeUnknownEmail", func(t *testing.T) {
		f := newFixture(t)
		f.user(t, "ann", store.RoleViewer)
		_, wrong := f.svc.Login(ctx, LoginInput{Email: "ann@example.com", Password: "not-the-password"})
		_, unknown := f.svc.Login(ctx, LoginInput{Email: "nobody@example.com", Password: "not-the-password"})
		a, b := wantErr(t, wrong, store.KindUnauthorized), wantErr(t, unknown, store.KindUnauthorized)
		if a.Message != b.Message {
			t.Errorf("wrong password says %q, unknown e-mail says %q: they must not differ", a.Message, b.Message)
		}
	})

	t.Run("EmptyFieldsUnauthorized", func(t *testing.T) {
		f := newFixture(t)
		f.user(t, "ann", store.RoleViewer)
		for _, in := range []LoginInput{{Email: "ann@example.com"}, {Password: password("ann")}, {Email: "  ", Password: "x"}} {
			_, err := f.svc.Login(ctx, in)
			wantErr(t, err, store.KindUnauthorized)
		}
	})

	t.Run("DisabledUserForbidden", func(t *testing.T) {
		f := newFixture(t)
		u := f.user(t, "ann", store.RoleViewer)
		if _, err := f.db.SetUserActive(ctx, u.ID, false); err != nil {
			t.Fatal(err)
		}
		_, err := f.svc.Login(ctx, LoginInput{Email: "ann@example.com", Password: password("ann")})
		wantErr(t, err, store.KindForbidden)
		_, err = f.svc.Login(ctx, LoginInput{Email: "ann@example.com", Password: "wrong-password"})
		wantErr(t, err, store.KindUnauthorized)
		if list, _, _ := f.db.ListActiveSessions(ctx, u.ID, store.Page{Page: 1, PerPage: 50}); len(list) != 0 {
			t.Errorf("a disabled user got %d sessions", len(list))
		}
	})
}

func TestLoginLockout(t *testing.T) {
	ctx := context.Background()
	lock := func(c *Config) {
		c.Throttle = ThrottlePolicy{FreeFailures: 100, BaseDelay: time.Second, MaxDelay: time.Minute, LockAfter: 3, LockFor: 10 * time.Minute}
	}
	for _, known := range []bool{true, false} {
		name := "KnownAddress"
		if !known {
			name = "UnknownAddress"
		}
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, lock)
			if known {
				f.user(t, "ann", store.RoleViewer)
			}
			try := func(pw string) error {
				_, err := f.svc.Login(ctx, LoginInput{Email: "ann@example.com", Password: pw})
				return err
			}
			for range 3 {
				wantErr(t, try("wrong-password"), store.KindUnauthorized)
			}
			// The third failure locked the address for ten minutes, even
			// against the right password.
			e := wantErr(t, try(password("ann")), store.KindRetryLater)
			if e.RetryAfter != 600 || !strings.Contains(e.Message, "locked") {
				t.Errorf("locked: RetryAfter %d (want 600), message %q", e.RetryAfter, e.Message)
			}
			f.clk.Advance(10*time.Minute - time.Second)
			if e := wantErr(t, try(password("ann")), store.KindRetryLater); e.RetryAfter != 1 {
				t.Errorf("one second before the end: RetryAfter %d, want 1", e.RetryAfter)
			}
			f.clk.Advance(time.Second)
			err := try(password("ann"))
			if known && err != nil {
				t.Fatalf("the correct password after the lock ran out: %v", err)
			}
			if !known {
				wantErr(t, err, store.KindUnauthorized)
			}
		})
	}
}

func TestLoginDelay(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, func(c *Config) {
		c.Throttle = ThrottlePolicy{FreeFailures: 2, BaseDelay: 30 * time.Second, MaxDelay: time.Minute}
	})
	f.user(t, "ann", store.RoleViewer)
	try := func(pw string) error {
		_, err := f.svc.Login(ctx, LoginInput{Email: "ann@example.com", Password: pw})
		return err
	}
	failures := func() int {
		lf, err := f.db.LoginFailuresFor(ctx, "ann@example.com")
		if err != nil {
			t.Fatal(err)
		}
		return lf.Failures
	}

	t.Run("FreeFailuresNotDelayed", func(t *testing.T) {
		wantErr(t, try("wrong-1"), store.KindUnauthorized)
		wantErr(t, try("wrong-2"), store.KindUnauthorized)
	})
	t.Run("InsideWindowRefusedEvenWhenCorrect", func(t *testing.T) {
		e := wantErr(t, try(password("ann")), store.KindRetryLater)
		if e.RetryAfter != 30 || !strings.Contains(e.Message, "wait") {
			t.Errorf("RetryAfter %d (want 30), message %q", e.RetryAfter, e.Message)
		}
		f.clk.Advance(29 * time.Second)
		if e := wantErr(t, try(password("ann")), store.KindRetryLater); e.RetryAfter != 1 {
			t.Errorf("RetryAfter %d, want 1", e.RetryAfter)
		}
		if n := failures(); n != 2 {
			t.Errorf("refused attempts were counted: %d failures, want 2", n)
		}
	})
	t.Run("AfterWindowAllowed", func(t *testing.T) {
		f.clk.Advance(time.Second)
		if err := try(password("ann")); err != nil {
			t.Fatal(err)
		}
		if n := failures(); n != 0 {
			t.Errorf("%d failures left after a success, want 0", n)
		}
	})
}

func TestLoginSuccessClearsFailures(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, func(c *Config) {
		c.Throttle = ThrottlePolicy{FreeFailures: 5, BaseDelay: time.Hour, MaxDelay: time.Hour, LockAfter: 6, LockFor: time.Hour}
	})
	f.user(t, "ann", store.RoleViewer)
	fail := func(n int) {
		for range n {
			_, err := f.svc.Login(ctx, LoginInput{Email: "ann@example.com", Password: "wrong-password"})
			wantErr(t, err, store.KindUnauthorized)
		}
	}
	fail(4)
	f.login(t, "ann")
	if lf, _ := f.db.LoginFailuresFor(ctx, "ann@example.com"); lf.Failures != 0 {
		t.Fatalf("%d failures after a success, want 0", lf.Failures)
	}
	// Had the success not cleared the count, these would reach the
	// delay (after 5) and the lock (at 6).
	fail(4)
	f.login(t, "ann")
}

func TestLoginTwoFactor(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	u := f.user(t, "ann", store.RoleViewer)
	p := f.principal(t, f.login(t, "ann").Token)
	setup, err := f.svc.SetupTOTP(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	step := func() int64 { return f.clk.Now().Unix() / totpPeriod }
	verifyCode := codeAt(t, setup.Secret, step())
	if wrong := "000000"; wrong != verifyCode {
		_, err := f.svc.VerifyTOTP(ctx, p, wrong, password("ann"))
		wantErr(t, err, store.KindInvalid)
	}
	_, err = f.svc.VerifyTOTP(ctx, p, verifyCode, "")
	wantErr(t, err, store.KindInvalid)
	_, err = f.svc.VerifyTOTP(ctx, p, verifyCode, "wrong-password")
	if e := wantErr(t, err, store.KindInvalid); e.Message != "current_password: is incorrect" {
		t.Errorf("wrong password: %q", e.Message)
	}
	recovery, err := f.svc.VerifyTOTP(ctx, p, verifyCode, password("ann"))
	if err != nil {
		t.Fatal(err)
	}
	if len(recovery) != RecoveryCodeCount {
		t.Fatalf("got %d recovery codes", len(recovery))
	}
	_, err = f.svc.VerifyTOTP(ctx, p, verifyCode, password("ann"))
	wantErr(t, err, store.KindConflict)

	login := func(code, pw string) error {
		_, err := f.svc.Login(ctx, LoginInput{Email: "ann@example.com", Password: pw, TOTPCode: code})
		return err
	}
	t.Run("NoCodeAsksForOne", func(t *testing.T) {
		e := wantErr(t, login("", password("ann")), store.KindUnauthorized)
		if e.Message != msgTOTPRequired {
			t.Errorf("message %q, want %q", e.Message, msgTOTPRequired)
		}
	})
	t.Run("NoCodeIsNotAFailure", func(t *testing.T) {
		// The first step of every two-factor sign-in: the right password
		// alone. It costs none of the failures the throttle allows.
		before, err := f.db.LoginFailuresFor(ctx, "ann@example.com")
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			wantErr(t, login("", password("ann")), store.KindUnauthorized)
		}
		if lf, _ := f.db.LoginFailuresFor(ctx, "ann@example.com"); lf.Failures != before.Failures {
			t.Errorf("%d failures after asking for the code 3 times, want %d", lf.Failures, before.Failures)
		}
		// A wrong password without a code still counts.
		wantErr(t, login("", "wrong-password"), store.KindUnauthorized)
		if lf, _ := f.db.LoginFailuresFor(ctx, "ann@example.com"); lf.Failures != before.Failures+1 {
			t.Errorf("%d failures after a wrong password, want %d", lf.Failures, before.Failures+1)
		}
	})
	t.Run("VerifyingCodeCannotBeReplayed", func(t *testing.T) {
		e := wantErr(t, login(verifyCode, password("ann")), store.KindUnauthorized)
		if !strings.Contains(e.Message, "already used") {
			t.Errorf("message %q does not say the code was used", e.Message)
		}
	})
	t.Run("FreshCodeAcceptedOnce", func(t *testing.T) {
		f.clk.Advance(totpPeriod * time.Second)
		code := codeAt(t, setup.Secret, step())
		if err := login(code, password("ann")); err != nil {
			t.Fatal(err)
		}
		wantErr(t, login(code, password("ann")), store.KindUnauthorized)
	})
	t.Run("WrongPasswordWithGoodCode", func(t *testing.T) {
		f.clk.Advance(totpPeriod * time.Second)
		e := wantErr(t, login(codeAt(t, setup.Secret, step()), "wrong-password"), store.KindUnauthorized)
		if e.Message != msgBadCredentials {
			t.Errorf("message %q, want %q", e.Message, msgBadCredentials)
		}
	})
	t.Run("RecoveryCodeAcceptedOnce", func(t *testing.T) {
		code := strings.ToUpper(recovery[3])
		if err := login(code, password("ann")); err != nil {
			t.Fatal(err)
		}
		// Entered again, it says so, as a TOTP code entered again does.
		e := wantErr(t, login(code, password("ann")), store.KindUnauthorized)
		if e.Message != msgRecoveryCodeUsed {
			t.Errorf("message %q, want %q", e.Message, msgRecoveryCodeUsed)
		}
		// A code that was never one of hers is not valid, not "used".
		e = wantErr(t, login("AAAAA-BBBBB", password("ann")), store.KindUnauthorized)
		if e.Message != msgTOTPInvalid {
			t.Errorf("message %q, want %q", e.Message, msgTOTPInvalid)
		}
		if n, _ := f.db.RecoveryCodesLeft(ctx, u.ID); n != RecoveryCodeCount-1 {
			t.Errorf("%d recovery codes left, want %d", n, RecoveryCodeCount-1)
		}
	})
	t.Run("DisableWithPassword", func(t *testing.T) {
		p := f.principal(t, f.login2FA(t, "ann", recovery[0]).Token)
		_, err := f.svc.DisableTOTP(ctx, p, "", "wrong-password")
		wantErr(t, err, store.KindInvalid)
		if _, err := f.svc.DisableTOTP(ctx, p, "", password("ann")); err != nil {
			t.Fatal(err)
		}
		if err := login("", password("ann")); err != nil {
			t.Errorf("login after disabling 2FA: %v", err)
		}
	})
}

func (f *fixture) login2FA(t *testing.T, name, code string) *Grant {
	t.Helper()
	g, err := f.svc.Login(context.Background(), LoginInput{Email: name + "@example.com", Password: password(name), TOTPCode: code})
	if err != nil {
		t.Fatalf("Login %s with a code: %v", name, err)
	}
	return g
}

func TestRefresh(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, func(c *Config) { c.TokenTTL, c.SessionTTL = time.Hour, 2*time.Hour })
	f.user(t, "ann", store.RoleViewer)
	g := f.login(t, "ann")
	end := g.Session.ExpiresAt
	if !end.Equal(serviceT0.Add(2 * time.Hour)) {
		t.Fatalf("session ends %v", end)
	}
	var last *Principal

	t.Run("ExtendsByTokenTTL", func(t *testing.T) {
		f.clk.Advance(50 * time.Minute)
		p := f.principal(t, g.Token)
		ng, err := f.svc.Refresh(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		want := serviceT0.Add(110 * time.Minute)
		if !ng.ExpiresAt.Equal(want) || !ng.Session.TokenExpiresAt.Equal(want) {
			t.Errorf("refreshed token ends %v (session records %v), want %v", ng.ExpiresAt, ng.Session.TokenExpiresAt, want)
		}
		g = ng
	})

	t.Run("NeverPastSessionEnd", func(t *testing.T) {
		f.clk.Advance(50 * time.Minute)
		last = f.principal(t, g.Token)
		ng, err := f.svc.Refresh(ctx, last)
		if err != nil {
			t.Fatal(err)
		}
		if !ng.ExpiresAt.Equal(end) {
			t.Errorf("refreshed token ends %v, want the session's end %v", ng.ExpiresAt, end)
		}
		c, err := f.svc.tokens.Parse(ng.Token)
		if err != nil {
			t.Fatal(err)
		}
		if c.ExpiresAt.After(end) {
			t.Errorf("the token's exp %v is past the session's end %v", c.ExpiresAt.Time, end)
		}
		g = ng
	})

	t.Run("RefusedAtSessionEnd", func(t *testing.T) {
		f.clk.Advance(20 * time.Minute)
		_, err := f.svc.Authenticate(ctx, g.Token)
		wantErr(t, err, store.KindUnauthorized)
		_, err = f.svc.Refresh(ctx, last)
		wantErr(t, err, store.KindUnauthorized)
	})

	t.Run("RefusedAfterRevoke", func(t *testing.T) {
		f := newFixture(t)
		f.user(t, "bob", store.RoleViewer)
		p := f.principal(t, f.login(t, "bob").Token)
		if err := f.svc.RevokeSession(ctx, p, p.Session.ID); err != nil {
			t.Fatal(err)
		}
		_, err := f.svc.Refresh(ctx, p)
		wantErr(t, err, store.KindUnauthorized)
	})
}

func TestAuthenticate(t *testing.T) {
	ctx := context.Background()

	t.Run("TouchesSession", func(t *testing.T) {
		f := newFixture(t)
		f.user(t, "ann", store.RoleViewer)
		g := f.login(t, "ann")
		f.clk.Advance(2 * time.Minute)
		p := f.principal(t, g.Token)
		if !p.Session.LastSeenAt.Equal(f.clk.Now()) {
			t.Errorf("LastSeenAt = %v, want %v", p.Session.LastSeenAt, f.clk.Now())
		}
		if list, _, _ := f.svc.Sessions(ctx, p, store.Page{Page: 1, PerPage: 50}); len(list) != 1 || !list[0].LastSeenAt.Equal(f.clk.Now()) {
			t.Errorf("the touch was not stored: %+v", list)
		}
	})

	refused := []struct {
		name  string
		token func(t *testing.T, f *fixture) string
	}{
		{"AfterRevokeSession", func(t *testing.T, f *fixture) string {
			g := f.login(t, "ann")
			if err := f.svc.RevokeSession(ctx, f.principal(t, g.Token), g.Session.ID); err != nil {
				t.Fatal(err)
			}
			return g.Token
		}},
		{"AfterRevokeFromOtherSession", func(t *testing.T, f *fixture) string {
			g := f.login(t, "ann")
			other := f.principal(t, f.login(t, "ann").Token)
			if err := f.svc.RevokeSession(ctx, other, g.Session.ID); err != nil {
				t.Fatal(err)
			}
			return g.Token
		}},
		{"AfterUserDisabled", func(t *testing.T, f *fixture) string {
			g := f.login(t, "ann")
			if _, err := f.db.SetUserActive(ctx, g.User.ID, false); err != nil {
				t.Fatal(err)
			}
			return g.Token
		}},
		{"UserDisabledBehindTheStoresBack", func(t *testing.T, f *fixture) string {
			// Defence in depth: a user marked inactive without the session
			// revocation SetUserActive does is still refused.
			g := f.login(t, "ann")
			raw, err := f.db.OpenRaw()
			if err != nil {
				t.Fatal(err)
			}
			defer raw.Close()
			if _, err := raw.Exec(`UPDATE users SET is_active = 0 WHERE id = ?`, g.User.ID); err != nil {
				t.Fatal(err)
			}
			return g.Token
		}},
		{"AfterSessionPruned", func(t *testing.T, f *fixture) string {
			g := f.login(t, "ann")
			if err := f.db.RevokeSession(ctx, g.User.ID, g.Session.ID); err != nil {
				t.Fatal(err)
			}
			f.clk.Advance(time.Second)
			if n, err := f.db.PruneSessions(ctx, f.clk.Now()); err != nil || n != 1 {
				t.Fatalf("PruneSessions = %d, %v", n, err)
			}
			return g.Token
		}},
		{"ExpiredToken", func(t *testing.T, f *fixture) string {
			g := f.login(t, "ann")
			f.clk.Advance(time.Hour)
			return g.Token
		}},
		{"TokenNamesAnotherUsersSession", func(t *testing.T, f *fixture) string {
			bob := f.user(t, "bob", store.RoleViewer)
			g := f.login(t, "ann")
			return mustIssue(t, f.svc.tokens, bob.ID, g.Session.ID, f.clk.Now().Add(time.Hour))
		}},
		{"Garbage", func(t *testing.T, f *fixture) string { return "garbage" }},
	}
	for _, tt := range refused {
		t.Run(tt.name+"Unauthorized", func(t *testing.T) {
			f := newFixture(t)
			f.user(t, "ann", store.RoleViewer)
			tok := tt.token(t, f)
			p, err := f.svc.Authenticate(ctx, tok)
			if err == nil {
				t.Fatalf("Authenticate accepted the token: user %d session %d", p.User.ID, p.Session.ID)
			}
			wantErr(t, err, store.KindUnauthorized)
		})
	}
}
