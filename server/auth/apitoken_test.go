package auth

import (
	"bytes"
	"context"
	"crypto/sha256"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/copydesk/copydesk/store"
)

// tokenFor makes an API token for name (who signs in first) and returns
// it with its secret.
func (f *fixture) tokenFor(t *testing.T, name string, in NewToken) (*store.APIToken, string) {
	t.Helper()
	if in.Name == "" {
		in.Name = "script"
	}
	tok, secret, err := f.svc.CreateToken(context.Background(), f.principal(t, f.login(t, name).Token), in)
	if err != nil {
		t.Fatalf("CreateToken: %v", err)
	}
	return tok, secret
}

func (f *fixture) env(t *testing.T, name string) int64 {
	t.Helper()
	e, err := f.db.CreateEnvironment(context.Background(), store.NewEnvironment{Name: name, Slug: strings.ToLower(name)})
	if err != nil {
		t.Fatal(err)
	}
	return e.ID
}

func (f *fixture) grant(t *testing.T, userID int64, envs ...int64) {
	t.Helper()
	if _, err := f.db.SetUserEnvironments(context.Background(), userID, envs); err != nil {
		t.Fatal(err)
	}
}

func TestCreateToken(t *testing.T) {
	ctx := context.Background()

	t.Run("OK", func(t *testing.T) {
		f := newFixture(t)
		ann := f.user(t, "ann", store.RoleEditor)
		exp := f.clk.Now().Add(90*24*time.Hour + 7*time.Second)
		tok, secret := f.tokenFor(t, "ann", NewToken{Name: "  n8n publishing ", ExpiresAt: &exp})
		if !regexp.MustCompile(`^cdk_[a-z2-7]{52}$`).MatchString(secret) {
			t.Errorf("secret %q is not cdk_ and 32 bytes of base32", secret)
		}
		if tok.Name != "n8n publishing" || tok.UserID != ann.ID || tok.ReadOnly || tok.Limited || !tok.ExpiresAt.Equal(exp) {
			t.Errorf("token = %+v", tok)
		}
		if tok.Prefix != secret[:12] {
			t.Errorf("prefix %q, want the secret's first 12 characters", tok.Prefix)
		}
		want := sha256.Sum256([]byte(secret))
		if !bytes.Equal(tok.Hash, want[:]) {
			t.Error("the stored hash is not the SHA-256 of the secret")
		}
		// The database holds the hash and the prefix, never the secret.
		raw, err := f.db.OpenRaw()
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		rows, err := raw.Query(`SELECT * FROM api_tokens`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			for i, v := range vals {
				if b, ok := v.([]byte); ok {
					v = string(b)
				}
				if s, ok := v.(string); ok && strings.Contains(s, secret[len(tok.Prefix):]) {
					t.Errorf("column %s holds the secret", cols[i])
				}
			}
		}
		p := f.principal(t, secret)
		if p.Token == nil || p.Token.ID != tok.ID || p.Session != nil || p.User.ID != ann.ID {
			t.Fatalf("principal = %+v", p)
		}
	})

	t.Run("SecretsDiffer", func(t *testing.T) {
		f := newFixture(t)
		f.user(t, "ann", store.RoleViewer)
		_, a := f.tokenFor(t, "ann", NewToken{})
		_, b := f.tokenFor(t, "ann", NewToken{})
		if a == b || a[:12] == b[:12] {
			t.Errorf("two tokens share a secret or a prefix: %s %s", a, b)
		}
	})

	invalid := []struct {
		name string
		in   func(f *fixture, envA, envB int64) NewToken
		msg  string
	}{
		{"EmptyName", func(*fixture, int64, int64) NewToken { return NewToken{Name: "   "} }, "name: must not be empty"},
		{"LongName", func(*fixture, int64, int64) NewToken { return NewToken{Name: strings.Repeat("x", 101)} }, "name: must be at most 100"},
		{"ControlInName", func(*fixture, int64, int64) NewToken { return NewToken{Name: "a\u202Eb"} }, "name:"},
		{"ExpiresNow", func(f *fixture, _, _ int64) NewToken {
			now := f.clk.Now()
			return NewToken{Name: "x", ExpiresAt: &now}
		}, "expires_at: must be in the future"},
		{"ExpiredYesterday", func(f *fixture, _, _ int64) NewToken {
			y := f.clk.Now().Add(-24 * time.Hour)
			return NewToken{Name: "x", ExpiresAt: &y}
		}, "expires_at: must be in the future"},
		{"NoEnvironment", func(*fixture, int64, int64) NewToken { return NewToken{Name: "x", EnvironmentIDs: []int64{}} },
			"environment_ids: name at least one"},
		{"NotGranted", func(_ *fixture, envA, envB int64) NewToken {
			return NewToken{Name: "x", EnvironmentIDs: []int64{envA, envB}}
		},
			"environment_ids: you have no environment with id"},
		{"Unknown", func(_ *fixture, envA, _ int64) NewToken {
			return NewToken{Name: "x", EnvironmentIDs: []int64{envA, 999}}
		},
			"environment_ids: you have no environment with id 999"},
	}
	for _, tt := range invalid {
		t.Run(tt.name+"Invalid", func(t *testing.T) {
			f := newFixture(t)
			ann := f.user(t, "ann", store.RoleEditor)
			envA, envB := f.env(t, "A"), f.env(t, "B")
			f.grant(t, ann.ID, envA)
			p := f.principal(t, f.login(t, "ann").Token)
			_, _, err := f.svc.CreateToken(ctx, p, tt.in(f, envA, envB))
			if e := wantErr(t, err, store.KindInvalid); !strings.Contains(e.Message, tt.msg) {
				t.Errorf("message %q, want it to say %q", e.Message, tt.msg)
			}
			if list, _, _ := f.db.ListAPITokens(ctx, ann.ID, store.Page{Page: 1, PerPage: 50}); len(list) != 0 {
				t.Errorf("a refused token was stored: %+v", list)
			}
		})
	}

	t.Run("AdminUnknownEnvironmentInvalid", func(t *testing.T) {
		f := newFixture(t)
		f.user(t, "root", store.RoleAdmin)
		_, _, err := f.svc.CreateToken(ctx, f.principal(t, f.login(t, "root").Token), NewToken{Name: "x", EnvironmentIDs: []int64{999}})
		if e := wantErr(t, err, store.KindInvalid); !strings.Contains(e.Message, "no environment with id 999") {
			t.Errorf("message %q", e.Message)
		}
	})

	t.Run("AtMostMaxTokensPerUser", func(t *testing.T) {
		f := newFixture(t)
		f.user(t, "ann", store.RoleViewer)
		p := f.principal(t, f.login(t, "ann").Token)
		var first *store.APIToken
		for i := 0; i < MaxTokensPerUser; i++ {
			tok, _, err := f.svc.CreateToken(ctx, p, NewToken{Name: "loop"})
			if err != nil {
				t.Fatalf("token %d: %v", i+1, err)
			}
			if first == nil {
				first = tok
			}
		}
		_, _, err := f.svc.CreateToken(ctx, p, NewToken{Name: "one more"})
		if e := wantErr(t, err, store.KindConflict); !strings.Contains(e.Message, "revoke one") {
			t.Errorf("message %q", e.Message)
		}
		if err := f.svc.RevokeToken(ctx, p, first.ID); err != nil {
			t.Fatal(err)
		}
		if _, _, err := f.svc.CreateToken(ctx, p, NewToken{Name: "one more"}); err != nil {
			t.Errorf("after a revocation: %v", err)
		}
	})

	t.Run("ExpiresToTheSecond", func(t *testing.T) {
		f := newFixture(t)
		f.user(t, "ann", store.RoleViewer)
		exp := f.clk.Now().Add(time.Second)
		_, secret := f.tokenFor(t, "ann", NewToken{ExpiresAt: &exp})
		f.clk.Advance(999 * time.Millisecond)
		f.principal(t, secret)
		f.clk.Advance(time.Millisecond)
		_, err := f.svc.Authenticate(ctx, secret)
		if e := wantErr(t, err, store.KindUnauthorized); !strings.Contains(e.Message, "expired") {
			t.Errorf("message %q", e.Message)
		}
	})

	t.Run("NotWithAToken", func(t *testing.T) {
		f := newFixture(t)
		f.user(t, "ann", store.RoleAdmin)
		tok, secret := f.tokenFor(t, "ann", NewToken{})
		p := f.principal(t, secret)
		_, _, err := f.svc.CreateToken(ctx, p, NewToken{Name: "another"})
		wantErr(t, err, store.KindForbidden)
		_, _, err = f.svc.Tokens(ctx, p, store.Page{Page: 1, PerPage: 50})
		wantErr(t, err, store.KindForbidden)
		wantErr(t, f.svc.RevokeToken(ctx, p, tok.ID), store.KindForbidden)
		_, _, err = f.svc.UserTokens(ctx, p, p.User.ID, store.Page{Page: 1, PerPage: 50})
		wantErr(t, err, store.KindForbidden)
		wantErr(t, f.svc.RevokeUserToken(ctx, p, p.User.ID, tok.ID), store.KindForbidden)
		_, err = f.svc.Refresh(ctx, p)
		wantErr(t, err, store.KindForbidden)
		newPassword := "another-password"
		_, err = f.svc.UpdateProfile(ctx, p, ProfileUpdate{NewPassword: &newPassword, CurrentPassword: password("ann")})
		wantErr(t, err, store.KindForbidden)
		_, err = f.svc.SetupTOTP(ctx, p)
		wantErr(t, err, store.KindForbidden)
		_, err = f.svc.DisableTOTP(ctx, p, "", password("ann"))
		wantErr(t, err, store.KindForbidden)
		wantErr(t, f.svc.Logout(ctx, p), store.KindForbidden)
		_, _, err = f.svc.Sessions(ctx, p, store.Page{Page: 1, PerPage: 50})
		wantErr(t, err, store.KindForbidden)
		// The token still works: nothing above touched it.
		f.principal(t, secret)
	})
}

func TestAuthenticateAPIToken(t *testing.T) {
	ctx := context.Background()

	refused := []struct {
		name string
		// token makes ann's token and does what should stop it.
		token func(t *testing.T, f *fixture) string
		msg   string
	}{
		{"Revoked", func(t *testing.T, f *fixture) string {
			tok, secret := f.tokenFor(t, "ann", NewToken{})
			f.principal(t, secret) // cached
			if err := f.svc.RevokeToken(ctx, f.principal(t, f.login(t, "ann").Token), tok.ID); err != nil {
				t.Fatal(err)
			}
			return secret
		}, "revoked"},
		{"RevokedByAnAdmin", func(t *testing.T, f *fixture) string {
			tok, secret := f.tokenFor(t, "ann", NewToken{})
			f.principal(t, secret)
			f.user(t, "root", store.RoleAdmin)
			if err := f.svc.RevokeUserToken(ctx, f.principal(t, f.login(t, "root").Token), tok.UserID, tok.ID); err != nil {
				t.Fatal(err)
			}
			return secret
		}, "revoked"},
		{"Expired", func(t *testing.T, f *fixture) string {
			exp := f.clk.Now().Add(time.Hour)
			_, secret := f.tokenFor(t, "ann", NewToken{ExpiresAt: &exp})
			f.principal(t, secret)
			f.clk.Advance(time.Hour)
			return secret
		}, "expired"},
		{"UserDisabled", func(t *testing.T, f *fixture) string {
			tok, secret := f.tokenFor(t, "ann", NewToken{})
			f.principal(t, secret)
			if _, err := f.db.SetUserActive(ctx, tok.UserID, false); err != nil {
				t.Fatal(err)
			}
			return secret
		}, "disabled"},
		{"Unknown", func(t *testing.T, f *fixture) string {
			s, err := newAPISecret()
			if err != nil {
				t.Fatal(err)
			}
			return s
		}, "not valid"},
		{"OneCharacterChanged", func(t *testing.T, f *fixture) string {
			_, secret := f.tokenFor(t, "ann", NewToken{})
			last := "a"
			if secret[len(secret)-1] == 'a' {
				last = "b"
			}
			return secret[:len(secret)-1] + last
		}, "not valid"},
		{"Upper", func(t *testing.T, f *fixture) string {
			_, secret := f.tokenFor(t, "ann", NewToken{})
			return "cdk_" + strings.ToUpper(secret[4:])
		}, "not valid"},
		{"Short", func(t *testing.T, f *fixture) string { return "cdk_abc" }, "not valid"},
		{"Long", func(t *testing.T, f *fixture) string {
			_, secret := f.tokenFor(t, "ann", NewToken{})
			return secret + "a"
		}, "not valid"},
	}
	for _, tt := range refused {
		t.Run(tt.name+"Unauthorized", func(t *testing.T) {
			f := newFixture(t)
			f.user(t, "ann", store.RoleEditor)
			secret := tt.token(t, f)
			_, err := f.svc.Authenticate(ctx, secret)
			if e := wantErr(t, err, store.KindUnauthorized); !strings.Contains(e.Message, tt.msg) {
				t.Errorf("message %q, want it to say %q", e.Message, tt.msg)
			}
		})
	}

	t.Run("FailuresAreNotSignInFailures", func(t *testing.T) {
		// Token lookups go nowhere near the per-address throttle: a flood
		// of bad tokens locks nobody out, and a good one is not slowed.
		f := newFixture(t, func(c *Config) { c.Throttle = DefaultThrottle })
		f.user(t, "ann", store.RoleEditor)
		_, secret := f.tokenFor(t, "ann", NewToken{})
		for i := 0; i < 50; i++ {
			bad, _ := newAPISecret()
			_, err := f.svc.Authenticate(ctx, bad)
			wantErr(t, err, store.KindUnauthorized)
		}
		lf, err := f.db.LoginFailuresFor(ctx, "ann@example.com")
		if err != nil || lf.Failures != 0 {
			t.Errorf("failed token lookups counted as sign-in failures: %+v %v", lf, err)
		}
		f.principal(t, secret)
		f.login(t, "ann")
	})

	t.Run("TouchedAtMostOnceAMinute", func(t *testing.T) {
		f := newFixture(t)
		f.user(t, "ann", store.RoleEditor)
		_, secret := f.tokenFor(t, "ann", NewToken{})
		used := func() *time.Time {
			t.Helper()
			list, _, err := f.svc.Tokens(ctx, f.principal(t, f.login(t, "ann").Token), store.Page{Page: 1, PerPage: 50})
			if err != nil || len(list) != 1 {
				t.Fatalf("Tokens = %v, %v", list, err)
			}
			return list[0].LastUsedAt
		}
		if u := used(); u != nil {
			t.Fatalf("a token never used has last_used_at %v", u)
		}
		first := f.clk.Now()
		f.principal(t, secret)
		mark := f.db.ChangeMark()
		f.clk.Advance(30 * time.Second)
		f.principal(t, secret)
		if f.db.ChangeMark() != mark {
			t.Error("a second use within the minute wrote")
		}
		if u := used(); u == nil || !u.Equal(first) {
			t.Errorf("last_used_at = %v, want %v", u, first)
		}
		f.clk.Advance(31 * time.Second)
		f.principal(t, secret)
		if u := used(); u == nil || !u.Equal(f.clk.Now()) {
			t.Errorf("last_used_at = %v, want %v", u, f.clk.Now())
		}
	})
}

func TestAPITokenScope(t *testing.T) {
	ctx := context.Background()

	t.Run("FollowsTheUser", func(t *testing.T) {
		// A grant taken away and a lower role are seen at the token's next
		// request, though its principal was cached.
		f := newFixture(t)
		ann := f.user(t, "ann", store.RoleAdmin)
		envA, envB := f.env(t, "A"), f.env(t, "B")
		f.grant(t, ann.ID, envA, envB)
		_, secret := f.tokenFor(t, "ann", NewToken{})
		if p := f.principal(t, secret); !p.Scope.Admin {
			t.Fatalf("an admin's token has scope %+v", p.Scope)
		}
		if _, err := f.db.SetUserRole(ctx, ann.ID, store.RoleEditor); err != nil {
			t.Fatal(err)
		}
		if p := f.principal(t, secret); p.Scope.Admin || !p.Scope.Sees(envA) || !p.Scope.Sees(envB) || p.User.Role != store.RoleEditor {
			t.Fatalf("after demotion: role %s scope %+v", p.User.Role, p.Scope)
		}
		f.grant(t, ann.ID, envA)
		if p := f.principal(t, secret); !p.Scope.Sees(envA) || p.Scope.Sees(envB) {
			t.Fatalf("after the grant of B was taken: scope %+v", p.Scope)
		}
	})

	t.Run("LimitedIntersectsTheGrants", func(t *testing.T) {
		f := newFixture(t)
		ann := f.user(t, "ann", store.RoleEditor)
		envA, envB, envC := f.env(t, "A"), f.env(t, "B"), f.env(t, "C")
		f.grant(t, ann.ID, envA, envB, envC)
		tok, secret := f.tokenFor(t, "ann", NewToken{EnvironmentIDs: []int64{envB, envA, envA}})
		if !tok.Limited || len(tok.EnvironmentIDs) != 2 || tok.EnvironmentIDs[0] != envA || tok.EnvironmentIDs[1] != envB {
			t.Fatalf("token environments %v (limited %v)", tok.EnvironmentIDs, tok.Limited)
		}
		if p := f.principal(t, secret); !p.Scope.Sees(envA) || !p.Scope.Sees(envB) || p.Scope.Sees(envC) {
			t.Fatalf("scope %+v", p.Scope)
		}
		f.grant(t, ann.ID, envB, envC)
		if p := f.principal(t, secret); p.Scope.Sees(envA) || !p.Scope.Sees(envB) || p.Scope.Sees(envC) {
			t.Fatalf("after A was taken from the user: scope %+v", p.Scope)
		}
		f.grant(t, ann.ID, envC)
		if p := f.principal(t, secret); p.Scope.Sees(envA) || p.Scope.Sees(envB) || p.Scope.Sees(envC) || len(p.Scope.Envs) != 0 {
			t.Fatalf("the user has none of the token's environments, yet it sees %+v", p.Scope)
		}
	})

	t.Run("LimitedAdmin", func(t *testing.T) {
		f := newFixture(t)
		f.user(t, "root", store.RoleSuperAdmin)
		envA, envB := f.env(t, "A"), f.env(t, "B")
		_, secret := f.tokenFor(t, "root", NewToken{EnvironmentIDs: []int64{envA}})
		p := f.principal(t, secret)
		if p.Scope.Admin || !p.Scope.Sees(envA) || p.Scope.Sees(envB) {
			t.Fatalf("an admin's token limited to A has scope %+v", p.Scope)
		}
		if err := f.db.DeleteEnvironment(ctx, envA); err != nil {
			t.Fatal(err)
		}
		// Its one environment gone, the token sees nothing, not everything.
		if p := f.principal(t, secret); p.Scope.Admin || p.Scope.Sees(envB) || len(p.Scope.Envs) != 0 {
			t.Fatalf("after its environment was deleted: scope %+v", p.Scope)
		}
	})
}

func TestAllows(t *testing.T) {
	session := &Principal{User: &store.User{Role: store.RoleAdmin}, Session: &store.Session{}}
	plain := &Principal{User: &store.User{Role: store.RoleAdmin}, Token: &store.APIToken{}}
	readOnly := &Principal{User: &store.User{Role: store.RoleAdmin}, Token: &store.APIToken{ReadOnly: true}}
	limited := &Principal{User: &store.User{Role: store.RoleAdmin}, Token: &store.APIToken{Limited: true}}
	uses := map[string]Use{
		"read":          {MinRole: store.RoleViewer},
		"write":         {Write: true, MinRole: store.RoleEditor},
		"account":       {MinRole: store.RoleViewer, Account: true},
		"account write": {Write: true, MinRole: store.RoleViewer, Account: true},
		"admin read":    {MinRole: store.RoleAdmin},
		"admin write":   {Write: true, MinRole: store.RoleAdmin},
	}
	// "" allowed; otherwise a word of the refusal's message.
	want := map[*Principal]map[string]string{
		session:  {},
		plain:    {"account": "not with an API token", "account write": "not with an API token"},
		readOnly: {"write": "read-only", "account": "not with an API token", "account write": "not with an API token", "admin write": "read-only"},
		limited: {"account": "not with an API token", "account write": "not with an API token", "admin read": "limited",
			"admin write": "limited"},
	}
	for p, refused := range want {
		for name, u := range uses {
			err := p.Allows(u)
			switch msg := refused[name]; {
			case msg == "" && err != nil:
				t.Errorf("%+v on %s: refused: %v", p.Token, name, err)
			case msg != "" && (store.KindOf(err) != store.KindForbidden || !strings.Contains(store.Message(err), msg)):
				t.Errorf("%+v on %s: %v, want 403 saying %q", p.Token, name, err, msg)
			}
		}
	}
}

func TestUserTokens(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.user(t, "ann", store.RoleEditor)
	f.user(t, "root", store.RoleSuperAdmin)
	admin := f.user(t, "adm", store.RoleAdmin)
	annTok, annSecret := f.tokenFor(t, "ann", NewToken{Name: "ann's"})
	rootTok, rootSecret := f.tokenFor(t, "root", NewToken{Name: "root's"})
	adm := f.principal(t, f.login(t, "adm").Token)
	page := store.Page{Page: 1, PerPage: 50}

	t.Run("AdminListsAnyone", func(t *testing.T) {
		for _, tok := range []*store.APIToken{annTok, rootTok} {
			list, total, err := f.svc.UserTokens(ctx, adm, tok.UserID, page)
			if err != nil || total != 1 || list[0].ID != tok.ID {
				t.Errorf("UserTokens(%d) = %v %d %v", tok.UserID, list, total, err)
			}
		}
		_, _, err := f.svc.UserTokens(ctx, adm, 999, page)
		wantErr(t, err, store.KindNotFound)
	})
	t.Run("EditorForbidden", func(t *testing.T) {
		_, _, err := f.svc.UserTokens(ctx, f.principal(t, f.login(t, "ann").Token), rootTok.UserID, page)
		wantErr(t, err, store.KindForbidden)
	})
	t.Run("AdminMayNotRevokeASuperAdmins", func(t *testing.T) {
		wantErr(t, f.svc.RevokeUserToken(ctx, adm, rootTok.UserID, rootTok.ID), store.KindForbidden)
		f.principal(t, rootSecret)
	})
	t.Run("WrongUserNotFound", func(t *testing.T) {
		wantErr(t, f.svc.RevokeUserToken(ctx, adm, admin.ID, annTok.ID), store.KindNotFound)
		wantErr(t, f.svc.RevokeToken(ctx, adm, annTok.ID), store.KindNotFound)
		f.principal(t, annSecret)
	})
	t.Run("AdminRevokes", func(t *testing.T) {
		if err := f.svc.RevokeUserToken(ctx, adm, annTok.UserID, annTok.ID); err != nil {
			t.Fatal(err)
		}
		_, err := f.svc.Authenticate(ctx, annSecret)
		wantErr(t, err, store.KindUnauthorized)
		wantErr(t, f.svc.RevokeUserToken(ctx, adm, annTok.UserID, annTok.ID), store.KindNotFound) // once
		if list, total, err := f.svc.UserTokens(ctx, adm, annTok.UserID, page); err != nil || total != 0 || len(list) != 0 {
			t.Errorf("a revoked token is listed: %v %d %v", list, total, err)
		}
	})
	t.Run("SuperAdminRevokes", func(t *testing.T) {
		root := f.principal(t, f.login(t, "root").Token)
		if err := f.svc.RevokeUserToken(ctx, root, rootTok.UserID, rootTok.ID); err != nil {
			t.Fatal(err)
		}
		_, err := f.svc.Authenticate(ctx, rootSecret)
		wantErr(t, err, store.KindUnauthorized)
	})
}
