package store_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/copydesk/copydesk/store"
)

func TestCreateSession(t *testing.T) {
	ctx := context.Background()

	t.Run("RoundTrip", func(t *testing.T) {
		db, _ := openDB(t)
		u := mustUser(t, db, "sess", store.RoleEditor)
		tokExp, exp := t0.Add(time.Hour), t0.Add(48*time.Hour)
		s, err := db.CreateSession(ctx, store.NewSession{UserID: u.ID, TokenExpiresAt: tokExp, ExpiresAt: exp,
			IP: "203.0.113.9", UserAgent: "curl/8"})
		if err != nil {
			t.Fatal(err)
		}
		if s.ID <= 0 || s.UserID != u.ID || s.IP != "203.0.113.9" || s.UserAgent != "curl/8" || s.RevokedAt != nil {
			t.Errorf("CreateSession returned %+v", s)
		}
		if !s.CreatedAt.Equal(t0) || !s.LastSeenAt.Equal(t0) || !s.TokenExpiresAt.Equal(tokExp) || !s.ExpiresAt.Equal(exp) {
			t.Errorf("session times = created %v, seen %v, token %v, end %v", s.CreatedAt, s.LastSeenAt, s.TokenExpiresAt, s.ExpiresAt)
		}
		if !s.Active(t0) || s.Active(exp) {
			t.Error("Active should hold before ExpiresAt and not at it")
		}

		// SessionWithUser is the per-request read: it carries what
		// authentication needs and, by contract, no password hash or secret.
		got, gotUser, err := db.SessionWithUser(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.ID != s.ID || got.UserID != u.ID || !got.LastSeenAt.Equal(t0) || !got.ExpiresAt.Equal(exp) || got.RevokedAt != nil {
			t.Errorf("SessionWithUser session = %+v, want the fields of %+v", got, s)
		}
		if gotUser.ID != u.ID || gotUser.Email != u.Email || gotUser.Username != u.Username || gotUser.Role != store.RoleEditor ||
			!gotUser.IsActive || !gotUser.CreatedAt.Equal(t0) {
			t.Errorf("SessionWithUser user = %+v", gotUser)
		}
		if gotUser.PasswordHash != "" || gotUser.TOTPSecret != nil || gotUser.TOTPPending != nil {
			t.Errorf("SessionWithUser leaked secrets: hash %q, totp %v, pending %v", gotUser.PasswordHash, gotUser.TOTPSecret, gotUser.TOTPPending)
		}
		if gotUser.LastLoginAt == nil || !gotUser.LastLoginAt.Equal(t0) {
			t.Errorf("LastLoginAt = %v, want %v recorded by CreateSession", gotUser.LastLoginAt, t0)
		}
	})

	t.Run("LongUserAgentTruncated", func(t *testing.T) {
		db, _ := openDB(t)
		u := mustUser(t, db, "ua", store.RoleViewer)
		s, err := db.CreateSession(ctx, store.NewSession{UserID: u.ID, TokenExpiresAt: t0.Add(time.Hour),
			ExpiresAt: t0.Add(time.Hour), UserAgent: strings.Repeat("x", 2000)})
		if err != nil {
			t.Fatal(err)
		}
		if len(s.UserAgent) != 512 {
			t.Errorf("stored user agent has %d bytes, want 512", len(s.UserAgent))
		}
	})

	// A header may carry any bytes: stored as valid UTF-8 (PostgreSQL
	// refuses anything else), and cut at a character's start.
	t.Run("UserAgentStoredAsValidUTF8", func(t *testing.T) {
		db, _ := openDB(t)
		u := mustUser(t, db, "ua8", store.RoleViewer)
		for _, ua := range []string{"app \xe9t\xe9/1.0", strings.Repeat("é", 600)} {
			s, err := db.CreateSession(ctx, store.NewSession{UserID: u.ID, TokenExpiresAt: t0.Add(time.Hour),
				ExpiresAt: t0.Add(time.Hour), UserAgent: ua})
			if err != nil {
				t.Fatal(err)
			}
			if !utf8.ValidString(s.UserAgent) || len(s.UserAgent) > 512 || s.UserAgent == "" {
				t.Errorf("stored user agent %q (%d bytes): want valid UTF-8 of at most 512 bytes", s.UserAgent, len(s.UserAgent))
			}
		}
	})

	t.Run("UnknownUserInvalid", func(t *testing.T) {
		db, _ := openDB(t)
		_, err := db.CreateSession(ctx, store.NewSession{UserID: 404, TokenExpiresAt: t0.Add(time.Hour), ExpiresAt: t0.Add(time.Hour)})
		wantKind(t, err, store.KindInvalid)
	})

	t.Run("UnknownSessionNotFound", func(t *testing.T) {
		db, _ := openDB(t)
		_, _, err := db.SessionWithUser(ctx, 404)
		wantKind(t, err, store.KindNotFound)
	})
}

func TestRevokeSession(t *testing.T) {
	ctx := context.Background()

	t.Run("Own", func(t *testing.T) {
		db, clk := openDB(t)
		u := mustUser(t, db, "owner", store.RoleViewer)
		s := mustSession(t, db, u.ID)
		clk.Advance(time.Minute)
		if err := db.RevokeSession(ctx, u.ID, s.ID); err != nil {
			t.Fatal(err)
		}
		got, _, _ := db.SessionWithUser(ctx, s.ID)
		if got.RevokedAt == nil || !got.RevokedAt.Equal(clk.Now()) {
			t.Errorf("RevokedAt = %v, want %v", got.RevokedAt, clk.Now())
		}
		if got.Active(clk.Now()) {
			t.Error("a revoked session is still Active")
		}
	})

	t.Run("OtherUsersSessionNotFound", func(t *testing.T) {
		db, _ := openDB(t)
		owner := mustUser(t, db, "owner", store.RoleViewer)
		intruder := mustUser(t, db, "intruder", store.RoleAdmin)
		s := mustSession(t, db, owner.ID)
		wantKind(t, db.RevokeSession(ctx, intruder.ID, s.ID), store.KindNotFound)
		if revoked(t, db, s)[0] {
			t.Error("another user's call revoked the session")
		}
	})

	t.Run("TwiceNotFound", func(t *testing.T) {
		db, _ := openDB(t)
		u := mustUser(t, db, "owner", store.RoleViewer)
		s := mustSession(t, db, u.ID)
		if err := db.RevokeSession(ctx, u.ID, s.ID); err != nil {
			t.Fatal(err)
		}
		wantKind(t, db.RevokeSession(ctx, u.ID, s.ID), store.KindNotFound)
	})

	t.Run("EndedNotFound", func(t *testing.T) {
		db, clk := openDB(t)
		u := mustUser(t, db, "owner", store.RoleViewer)
		s := mustSession(t, db, u.ID)
		clk.Advance(31 * 24 * time.Hour)
		wantKind(t, db.RevokeSession(ctx, u.ID, s.ID), store.KindNotFound)
	})

	t.Run("RevokeUserSessionsKeepsOne", func(t *testing.T) {
		db, _ := openDB(t)
		u := mustUser(t, db, "owner", store.RoleViewer)
		s1, s2 := mustSession(t, db, u.ID), mustSession(t, db, u.ID)
		if err := db.RevokeUserSessions(ctx, u.ID, s2.ID); err != nil {
			t.Fatal(err)
		}
		if got := revoked(t, db, s1, s2); !got[0] || got[1] {
			t.Errorf("revoked = %v, want [true false]", got)
		}
	})
}

func TestExtendSession(t *testing.T) {
	ctx := context.Background()

	t.Run("OK", func(t *testing.T) {
		db, clk := openDB(t)
		u := mustUser(t, db, "ext", store.RoleViewer)
		s := mustSession(t, db, u.ID)
		clk.Advance(30 * time.Minute)
		newExp := clk.Now().Add(time.Hour)
		got, err := db.ExtendSession(ctx, s.ID, newExp)
		if err != nil {
			t.Fatal(err)
		}
		if !got.TokenExpiresAt.Equal(newExp) || !got.LastSeenAt.Equal(clk.Now()) || !got.ExpiresAt.Equal(s.ExpiresAt) {
			t.Errorf("after ExtendSession: token %v (want %v), seen %v (want %v), end %v (want %v)",
				got.TokenExpiresAt, newExp, got.LastSeenAt, clk.Now(), got.ExpiresAt, s.ExpiresAt)
		}
	})

	tests := []struct {
		name  string
		setup func(t *testing.T, db *store.DB, clk *clock, s *store.Session)
	}{
		{"AfterRevokeUnauthorized", func(t *testing.T, db *store.DB, _ *clock, s *store.Session) {
			if err := db.RevokeSession(ctx, s.UserID, s.ID); err != nil {
				t.Fatal(err)
			}
		}},
		{"AtExpiresAtUnauthorized", func(t *testing.T, _ *store.DB, clk *clock, s *store.Session) {
			clk.Advance(s.ExpiresAt.Sub(clk.Now()))
		}},
		{"PastExpiresAtUnauthorized", func(t *testing.T, _ *store.DB, clk *clock, s *store.Session) {
			clk.Advance(s.ExpiresAt.Sub(clk.Now()) + time.Second)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db, clk := openDB(t)
			u := mustUser(t, db, "ext", store.RoleViewer)
			s := mustSession(t, db, u.ID)
			tt.setup(t, db, clk, s)
			_, err := db.ExtendSession(ctx, s.ID, clk.Now().Add(time.Hour))
			wantKind(t, err, store.KindUnauthorized)
			if got := tokenExpiry(t, db, s.ID); got != s.TokenExpiresAt.Format(store.TimeFormat) {
				t.Errorf("a refused ExtendSession moved the token expiry to %s", got)
			}
		})
	}

	t.Run("UnknownUnauthorized", func(t *testing.T) {
		db, _ := openDB(t)
		_, err := db.ExtendSession(ctx, 404, t0.Add(time.Hour))
		wantKind(t, err, store.KindUnauthorized)
	})
}

func TestListActiveSessions(t *testing.T) {
	ctx := context.Background()
	db, clk := openDB(t)
	u := mustUser(t, db, "many", store.RoleViewer)
	other := mustUser(t, db, "other", store.RoleViewer)

	older := mustSession(t, db, u.ID)
	gone := mustSession(t, db, u.ID)
	if err := db.RevokeSession(ctx, u.ID, gone.ID); err != nil {
		t.Fatal(err)
	}
	shortToken, err := db.CreateSession(ctx, store.NewSession{UserID: u.ID,
		TokenExpiresAt: t0.Add(10 * time.Minute), ExpiresAt: t0.Add(24 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	shortLife, err := db.CreateSession(ctx, store.NewSession{UserID: u.ID,
		TokenExpiresAt: t0.Add(20 * time.Minute), ExpiresAt: t0.Add(20 * time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	newer := mustSession(t, db, u.ID)
	mustSession(t, db, other.ID)

	// ids reads every page of two, checking the total on each.
	ids := func() []int64 {
		t.Helper()
		out := []int64{}
		for page := 1; ; page++ {
			list, total, err := db.ListActiveSessions(ctx, u.ID, store.Page{Page: page, PerPage: 2})
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range list {
				out = append(out, s.ID)
			}
			if len(list) < 2 {
				if total != len(out) {
					t.Errorf("total %d, but the pages hold %d", total, len(out))
				}
				return out
			}
		}
	}
	steps := []struct {
		name    string
		advance time.Duration
		want    []int64
	}{
		{"ExcludesRevokedNewestFirst", 0, []int64{newer.ID, shortLife.ID, shortToken.ID, older.ID}},
		{"ExcludesTokenExpired", 10 * time.Minute, []int64{newer.ID, shortLife.ID, older.ID}},
		{"ExcludesEnded", 10 * time.Minute, []int64{newer.ID, older.ID}},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			clk.Advance(st.advance)
			if got := ids(); !slices.Equal(got, st.want) {
				t.Errorf("ListActiveSessions = %v, want %v", got, st.want)
			}
		})
	}
}

// tokenExpiry reads token_expires_at of a session straight from the file.
func tokenExpiry(t *testing.T, db *store.DB, id int64) string {
	t.Helper()
	var v string
	if err := rawOf(t, db).QueryRow(`SELECT token_expires_at FROM sessions WHERE id = ?`, id).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestPruneSessions(t *testing.T) {
	ctx := context.Background()
	db, clk := openDB(t)
	u := mustUser(t, db, "prune", store.RoleViewer)
	newSession := func(tokenFor, lifeFor time.Duration) *store.Session {
		t.Helper()
		s, err := db.CreateSession(ctx, store.NewSession{UserID: u.ID,
			TokenExpiresAt: t0.Add(tokenFor), ExpiresAt: t0.Add(lifeFor)})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	revokedEarly := newSession(10*time.Hour, 30*24*time.Hour)
	if err := db.RevokeSession(ctx, u.ID, revokedEarly.ID); err != nil {
		t.Fatal(err)
	}
	tokenRanOut := newSession(time.Hour, 30*24*time.Hour)
	ended := newSession(2*time.Hour, 2*time.Hour)
	live := newSession(10*time.Hour, 30*24*time.Hour)
	clk.Advance(3 * time.Hour)
	revokedLate := newSession(10*time.Hour, 30*24*time.Hour)
	if err := db.RevokeSession(ctx, u.ID, revokedLate.ID); err != nil {
		t.Fatal(err)
	}

	n, err := db.PruneSessions(ctx, t0.Add(3*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Errorf("PruneSessions deleted %d sessions, want 3", n)
	}
	for _, s := range []*store.Session{revokedEarly, tokenRanOut, ended} {
		if _, _, err := db.SessionWithUser(ctx, s.ID); !store.IsNotFound(err) {
			t.Errorf("session %d survived pruning (err %v)", s.ID, err)
		}
	}
	for _, s := range []*store.Session{live, revokedLate} {
		if _, _, err := db.SessionWithUser(ctx, s.ID); err != nil {
			t.Errorf("session %d was pruned too early: %v", s.ID, err)
		}
	}
}
