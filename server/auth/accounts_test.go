package auth

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"strings"
	"testing"
	"time"

	"github.com/copydesk/copydesk/store"
)

func TestUpdateProfilePassword(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.user(t, "ann", store.RoleViewer)
	other := f.login(t, "ann")
	mine := f.login(t, "ann")
	p := f.principal(t, mine.Token)

	_, err := f.svc.UpdateProfile(ctx, p, ProfileUpdate{NewPassword: ptrTo("brand-new-password"), CurrentPassword: "wrong-password"})
	if e := wantErr(t, err, store.KindInvalid); !strings.HasPrefix(e.Message, "current_password:") {
		t.Errorf("message %q does not name current_password", e.Message)
	}
	_, err = f.svc.UpdateProfile(ctx, p, ProfileUpdate{NewPassword: ptrTo("brand-new-password")})
	wantErr(t, err, store.KindInvalid)

	if _, err := f.svc.UpdateProfile(ctx, p, ProfileUpdate{NewPassword: ptrTo("brand-new-password"), CurrentPassword: password("ann")}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Authenticate(ctx, mine.Token); err != nil {
		t.Errorf("the caller's own session ended with the password change: %v", err)
	}
	_, err = f.svc.Authenticate(ctx, other.Token)
	wantErr(t, err, store.KindUnauthorized)
	if _, err := f.svc.Login(ctx, LoginInput{Email: "ann@example.com", Password: "brand-new-password"}); err != nil {
		t.Errorf("login with the new password: %v", err)
	}
}

func ptrTo[T any](v T) *T { return &v }

func TestSetRole(t *testing.T) {
	ctx := context.Background()
	type users struct{ super, admin, editor *store.User }
	tests := []struct {
		name  string
		run   func(f *fixture, u users) (*store.User, error)
		want  store.Kind // KindInternal: success
		wantR store.Role
	}{
		{"AdminPromotesEditor", func(f *fixture, u users) (*store.User, error) {
			return f.svc.SetRole(ctx, u.admin, u.editor.ID, store.RoleAdmin)
		}, store.KindInternal, store.RoleAdmin},
		{"AdminCannotGrantSuperAdmin", func(f *fixture, u users) (*store.User, error) {
			return f.svc.SetRole(ctx, u.admin, u.editor.ID, store.RoleSuperAdmin)
		}, store.KindForbidden, ""},
		{"AdminCannotGrantThemselvesSuperAdmin", func(f *fixture, u users) (*store.User, error) {
			return f.svc.SetRole(ctx, u.admin, u.admin.ID, store.RoleSuperAdmin)
		}, store.KindForbidden, ""},
		{"AdminCannotChangeSuperAdmin", func(f *fixture, u users) (*store.User, error) {
			return f.svc.SetRole(ctx, u.admin, u.super.ID, store.RoleViewer)
		}, store.KindForbidden, ""},
		{"SuperAdminGrantsSuperAdmin", func(f *fixture, u users) (*store.User, error) {
			return f.svc.SetRole(ctx, u.super, u.editor.ID, store.RoleSuperAdmin)
		}, store.KindInternal, store.RoleSuperAdmin},
		{"LastSuperAdminKeepsRole", func(f *fixture, u users) (*store.User, error) {
			return f.svc.SetRole(ctx, u.super, u.super.ID, store.RoleAdmin)
		}, store.KindConflict, ""},
		{"SuperAdminStepsDownWhenAnotherExists", func(f *fixture, u users) (*store.User, error) {
			if _, err := f.svc.SetRole(ctx, u.super, u.admin.ID, store.RoleSuperAdmin); err != nil {
				return nil, err
			}
			return f.svc.SetRole(ctx, u.super, u.super.ID, store.RoleAdmin)
		}, store.KindInternal, store.RoleAdmin},
		{"UnknownRoleInvalid", func(f *fixture, u users) (*store.User, error) {
			return f.svc.SetRole(ctx, u.super, u.editor.ID, "owner")
		}, store.KindInvalid, ""},
		{"UnknownUserNotFound", func(f *fixture, u users) (*store.User, error) {
			return f.svc.SetRole(ctx, u.super, 999, store.RoleViewer)
		}, store.KindNotFound, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			u := users{f.user(t, "root", store.RoleSuperAdmin), f.user(t, "boss", store.RoleAdmin), f.user(t, "writer", store.RoleEditor)}
			got, err := tt.run(f, u)
			if tt.want != store.KindInternal {
				wantErr(t, err, tt.want)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Role != tt.wantR {
				t.Errorf("role = %s, want %s", got.Role, tt.wantR)
			}
		})
	}

	t.Run("TakesEffectOnNextRequest", func(t *testing.T) {
		f := newFixture(t)
		admin := f.user(t, "boss", store.RoleAdmin)
		ed := f.user(t, "writer", store.RoleEditor)
		tok := f.login(t, "writer").Token
		if _, err := f.svc.SetRole(ctx, admin, ed.ID, store.RoleViewer); err != nil {
			t.Fatal(err)
		}
		if p := f.principal(t, tok); p.User.Role != store.RoleViewer {
			t.Errorf("the next request sees role %s, want viewer", p.User.Role)
		}
	})
}

func TestSetActive(t *testing.T) {
	ctx := context.Background()

	t.Run("SelfDisableRefused", func(t *testing.T) {
		f := newFixture(t)
		f.user(t, "root", store.RoleSuperAdmin)
		root2 := f.user(t, "root2", store.RoleSuperAdmin) // so the last-super_admin rule is not what refuses
		admin := f.user(t, "boss", store.RoleAdmin)
		for _, u := range []*store.User{root2, admin} {
			_, err := f.svc.SetActive(ctx, u, u.ID, false)
			wantErr(t, err, store.KindConflict)
			if got, _ := f.db.UserByID(ctx, u.ID); !got.IsActive {
				t.Errorf("%s disabled themselves", u.Username)
			}
		}
	})

	t.Run("AdminCannotDisableSuperAdmin", func(t *testing.T) {
		f := newFixture(t)
		root := f.user(t, "root", store.RoleSuperAdmin)
		admin := f.user(t, "boss", store.RoleAdmin)
		_, err := f.svc.SetActive(ctx, admin, root.ID, false)
		wantErr(t, err, store.KindForbidden)
	})

	t.Run("DisableEndsSessionsAndLogins", func(t *testing.T) {
		f := newFixture(t)
		admin := f.user(t, "boss", store.RoleAdmin)
		ed := f.user(t, "writer", store.RoleEditor)
		tok := f.login(t, "writer").Token
		if _, err := f.svc.SetActive(ctx, admin, ed.ID, false); err != nil {
			t.Fatal(err)
		}
		_, err := f.svc.Authenticate(ctx, tok)
		wantErr(t, err, store.KindUnauthorized)
		_, err = f.svc.Login(ctx, LoginInput{Email: "writer@example.com", Password: password("writer")})
		wantErr(t, err, store.KindForbidden)

		if _, err := f.svc.SetActive(ctx, admin, ed.ID, true); err != nil {
			t.Fatal(err)
		}
		f.login(t, "writer")
	})
}

func TestRegister(t *testing.T) {
	ctx := context.Background()
	acct := NewAccount{Email: "new@example.com", Username: "newbie", Password: "long-enough", Role: store.RoleSuperAdmin}

	t.Run("OpenCreatesViewer", func(t *testing.T) {
		f := newFixture(t)
		u, err := f.svc.Register(ctx, acct)
		if err != nil {
			t.Fatal(err)
		}
		if u.Role != store.RoleViewer {
			t.Errorf("Register made a %s, want viewer whatever was asked", u.Role)
		}
		if ids, _ := f.db.UserEnvironmentIDs(ctx, u.ID); len(ids) != 0 {
			t.Errorf("a registered user has environments %v", ids)
		}
		_, err = f.svc.Register(ctx, acct)
		wantErr(t, err, store.KindConflict)
	})

	t.Run("ClosedForbidden", func(t *testing.T) {
		f := newFixture(t)
		if err := f.db.SetSystemSettings(ctx, store.SystemSettings{RegistrationOpen: false}); err != nil {
			t.Fatal(err)
		}
		_, err := f.svc.Register(ctx, acct)
		wantErr(t, err, store.KindForbidden)
		if _, err := f.db.UserByEmail(ctx, acct.Email); !store.IsNotFound(err) {
			t.Errorf("a closed registration created the user: %v", err)
		}
	})

	invalid := []struct {
		name, field string
		change      func(a *NewAccount)
	}{
		{"BadEmail", "email:", func(a *NewAccount) { a.Email = "not-an-address" }},
		{"EmailWithName", "email:", func(a *NewAccount) { a.Email = "Ann <ann@example.com>" }},
		{"EmailWithoutDot", "email:", func(a *NewAccount) { a.Email = "ann@localhost" }},
		{"ShortUsername", "username:", func(a *NewAccount) { a.Username = "ab" }},
		{"UsernameWithSpace", "username:", func(a *NewAccount) { a.Username = "ann smith" }},
		{"ShortPassword", "password:", func(a *NewAccount) { a.Password = "short" }},
		{"LongFullName", "full_name:", func(a *NewAccount) { a.FullName = strings.Repeat("x", 101) }},
		{"ControlInFullName", "full_name: must not contain control characters", func(a *NewAccount) { a.FullName = "Ann\x1b]0;pwned\x07" }},
		{"C1InFullName", "full_name: must not contain control characters", func(a *NewAccount) { a.FullName = "Ann\u0085Admin" }},
		{"BidiOverrideInFullName", "full_name: must not contain bidirectional", func(a *NewAccount) { a.FullName = "nimda\u202e" }},
		{"BidiIsolateInFullName", "full_name: must not contain bidirectional", func(a *NewAccount) { a.FullName = "\u2068Ann\u2069" }},
	}
	for _, tt := range invalid {
		t.Run("Invalid/"+tt.name, func(t *testing.T) {
			f := newFixture(t)
			a := acct
			tt.change(&a)
			_, err := f.svc.Register(ctx, a)
			if e := wantErr(t, err, store.KindInvalid); !strings.HasPrefix(e.Message, tt.field) {
				t.Errorf("message %q does not start with %q", e.Message, tt.field)
			}
		})
	}
}

func TestLicenseService(t *testing.T) {
	ctx := context.Background()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, func(c *Config) { c.LicensePublicKey = pub })
	a := f.user(t, "ann", store.RoleViewer)
	b := f.user(t, "bob", store.RoleViewer)
	sign := func(id string, exp time.Time) string {
		p := LicensePayload{ID: id, Licensee: "Ann", Plan: "pro", Seats: 3, IssuedAt: serviceT0.Add(-time.Hour), ExpiresAt: &exp}
		k, err := SignLicense(priv, p)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	key := sign("license-1", serviceT0.Add(24*time.Hour))

	t.Run("InactiveByDefault", func(t *testing.T) {
		st, err := f.svc.License(ctx, a.ID)
		if err != nil || st.State != LicenseInactive {
			t.Fatalf("License = %+v, %v; want inactive", st, err)
		}
	})
	t.Run("Activate", func(t *testing.T) {
		st, err := f.svc.ActivateLicense(ctx, a.ID, key)
		if err != nil {
			t.Fatal(err)
		}
		if st.State != LicenseActive || st.Payload.ID != "license-1" || st.SeatsInUse != 2 {
			t.Errorf("status = %+v", st)
		}
	})
	t.Run("SameKeyOtherAccountConflict", func(t *testing.T) {
		_, err := f.svc.ActivateLicense(ctx, b.ID, key)
		wantErr(t, err, store.KindConflict)
	})
	t.Run("ExpiredKeyInvalid", func(t *testing.T) {
		_, err := f.svc.ActivateLicense(ctx, b.ID, sign("license-2", serviceT0))
		wantErr(t, err, store.KindInvalid)
	})
	t.Run("ForgedKeyInvalid", func(t *testing.T) {
		_, otherPriv, _ := ed25519.GenerateKey(rand.Reader)
		exp := serviceT0.Add(time.Hour)
		k, _ := SignLicense(otherPriv, LicensePayload{ID: "license-3", Licensee: "x", Plan: "pro", Seats: 1, IssuedAt: serviceT0, ExpiresAt: &exp})
		_, err := f.svc.ActivateLicense(ctx, b.ID, k)
		wantErr(t, err, store.KindInvalid)
	})
	t.Run("ExpiresWhileActive", func(t *testing.T) {
		f.clk.Advance(24 * time.Hour)
		st, err := f.svc.License(ctx, a.ID)
		if err != nil || st.State != LicenseExpired {
			t.Fatalf("License = %+v, %v; want expired", st, err)
		}
	})
	t.Run("DeactivateFreesKey", func(t *testing.T) {
		if _, err := f.svc.DeactivateLicense(ctx, a.ID); err != nil {
			t.Fatal(err)
		}
		st, _ := f.svc.License(ctx, a.ID)
		if st.State != LicenseInactive {
			t.Errorf("state after deactivating = %s", st.State)
		}
	})
}
