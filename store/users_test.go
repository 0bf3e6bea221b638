package store_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/copydesk/copydesk/store"
)

func TestCreateUser(t *testing.T) {
	ctx := context.Background()

	t.Run("OK", func(t *testing.T) {
		db, _ := openDB(t)
		u, err := db.CreateUser(ctx, store.NewUser{Email: "Ann@Example.com", Username: "ann", FullName: "Ann A",
			PasswordHash: "h", Role: store.RoleEditor})
		if err != nil {
			t.Fatal(err)
		}
		if u.ID <= 0 || u.Email != "Ann@Example.com" || u.Username != "ann" || u.FullName != "Ann A" ||
			u.PasswordHash != "h" || u.Role != store.RoleEditor {
			t.Errorf("CreateUser returned %+v", u)
		}
		if !u.IsActive || u.TOTPEnabled || u.AvatarVersion != 0 || u.LastLoginAt != nil {
			t.Errorf("a new user should be active, without 2FA, avatar or login: %+v", u)
		}
		if !u.CreatedAt.Equal(t0) || !u.UpdatedAt.Equal(t0) {
			t.Errorf("CreatedAt, UpdatedAt = %v, %v; want the clock's %v", u.CreatedAt, u.UpdatedAt, t0)
		}
	})

	tests := []struct {
		name  string
		user  store.NewUser
		kind  store.Kind
		field string // the message names it
	}{
		{"DuplicateEmail", store.NewUser{Email: "taken@example.com", Username: "other", Role: store.RoleViewer}, store.KindConflict, "email"},
		{"DuplicateEmailOtherCase", store.NewUser{Email: "TAKEN@Example.COM", Username: "other", Role: store.RoleViewer}, store.KindConflict, "email"},
		{"DuplicateUsername", store.NewUser{Email: "other@example.com", Username: "taken", Role: store.RoleViewer}, store.KindConflict, "username"},
		{"DuplicateUsernameOtherCase", store.NewUser{Email: "other@example.com", Username: "TaKeN", Role: store.RoleViewer}, store.KindConflict, "username"},
		{"UnknownRole", store.NewUser{Email: "other@example.com", Username: "other", Role: "root"}, store.KindInvalid, "user"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db, _ := openDB(t)
			mustUser(t, db, "taken", store.RoleViewer)
			_, err := db.CreateUser(ctx, tt.user)
			wantKind(t, err, tt.kind)
			if !strings.Contains(store.Message(err), tt.field) {
				t.Errorf("message %q does not name %q", store.Message(err), tt.field)
			}
			if tt.kind == store.KindConflict {
				if want := "a user with this " + tt.field + " already exists"; store.Message(err) != want {
					t.Errorf("message %q, want %q", store.Message(err), want)
				}
			}
			if _, total, _ := db.ListUsers(ctx, store.UserFilter{Page: store.Page{Page: 1, PerPage: 10}}); total != 1 {
				t.Errorf("%d users after a refused CreateUser, want 1", total)
			}
		})
	}
}

func TestUserByEmail(t *testing.T) {
	ctx := context.Background()
	db, _ := openDB(t)
	want := mustUser(t, db, "mixed", store.RoleViewer)

	for _, email := range []string{"mixed@example.com", "MIXED@EXAMPLE.COM", "Mixed@Example.com", "  mixed@example.com "} {
		t.Run("Found/"+strings.TrimSpace(email), func(t *testing.T) {
			u, err := db.UserByEmail(ctx, email)
			if err != nil {
				t.Fatal(err)
			}
			if u.ID != want.ID {
				t.Errorf("UserByEmail(%q) found user %d, want %d", email, u.ID, want.ID)
			}
		})
	}
	t.Run("NotFound", func(t *testing.T) {
		_, err := db.UserByEmail(ctx, "nobody@example.com")
		wantKind(t, err, store.KindNotFound)
	})
	t.Run("ByIDNotFound", func(t *testing.T) {
		_, err := db.UserByID(ctx, 999)
		wantKind(t, err, store.KindNotFound)
	})
}

func TestListUsers(t *testing.T) {
	ctx := context.Background()
	db, _ := openDB(t)
	type row struct {
		username, fullName string
		role               store.Role
		active             bool
	}
	// Ordered by id. The names are chosen so that an unescaped '%' or '_'
	// would match more rows than the literal text does.
	rows := []row{
		{"alice", "Alice Admin", store.RoleAdmin, true},
		{"bob", "Bob 100% Real", store.RoleEditor, true},
		{"carol", "Carol 100 Points", store.RoleViewer, false},
		{"dave_d", "Dave", store.RoleViewer, true},
		{"davexd", "Dave Too", store.RoleViewer, true},
		{"eve", `Eve Back\slash`, store.RoleViewer, false},
	}
	for _, r := range rows {
		u, err := db.CreateUser(ctx, store.NewUser{Email: r.username + "@example.com", Username: r.username,
			FullName: r.fullName, PasswordHash: "h", Role: r.role})
		if err != nil {
			t.Fatal(err)
		}
		if !r.active {
			if _, err := db.SetUserActive(ctx, u.ID, false); err != nil {
				t.Fatal(err)
			}
		}
	}
	all := store.Page{Page: 1, PerPage: 50}
	tests := []struct {
		name      string
		filter    store.UserFilter
		want      []string
		wantTotal int
	}{
		{"All", store.UserFilter{Page: all}, []string{"alice", "bob", "carol", "dave_d", "davexd", "eve"}, 6},
		{"ByRole", store.UserFilter{Role: store.RoleViewer, Page: all}, []string{"carol", "dave_d", "davexd", "eve"}, 4},
		{"ActiveOnly", store.UserFilter{IsActive: ptr(true), Page: all}, []string{"alice", "bob", "dave_d", "davexd"}, 4},
		{"InactiveOnly", store.UserFilter{IsActive: ptr(false), Page: all}, []string{"carol", "eve"}, 2},
		{"RoleAndActive", store.UserFilter{Role: store.RoleViewer, IsActive: ptr(true), Page: all}, []string{"dave_d", "davexd"}, 2},
		{"QMatchesEmail", store.UserFilter{Q: "alice@", Page: all}, []string{"alice"}, 1},
		{"QMatchesFullNameIgnoringCase", store.UserFilter{Q: "ADMIN", Page: all}, []string{"alice"}, 1},
		{"QPercentIsLiteral", store.UserFilter{Q: "100%", Page: all}, []string{"bob"}, 1},
		{"QUnderscoreIsLiteral", store.UserFilter{Q: "dave_d", Page: all}, []string{"dave_d"}, 1},
		{"QBackslashIsLiteral", store.UserFilter{Q: `k\s`, Page: all}, []string{"eve"}, 1},
		{"QTrimmed", store.UserFilter{Q: "  carol  ", Page: all}, []string{"carol"}, 1},
		{"QNoMatch", store.UserFilter{Q: "zzz", Page: all}, []string{}, 0},
		{"QWithRole", store.UserFilter{Q: "dave", Role: store.RoleViewer, IsActive: ptr(true), Page: all}, []string{"dave_d", "davexd"}, 2},
		{"SecondPage", store.UserFilter{Page: store.Page{Page: 2, PerPage: 4}}, []string{"davexd", "eve"}, 6},
		{"FilteredPage", store.UserFilter{Role: store.RoleViewer, Page: store.Page{Page: 2, PerPage: 3}}, []string{"eve"}, 4},
		{"PastTheEnd", store.UserFilter{Page: store.Page{Page: 9, PerPage: 4}}, []string{}, 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			users, total, err := db.ListUsers(ctx, tt.filter)
			if err != nil {
				t.Fatal(err)
			}
			got := []string{}
			for _, u := range users {
				got = append(got, u.Username)
			}
			if !slices.Equal(got, tt.want) || total != tt.wantTotal {
				t.Errorf("ListUsers = %v (total %d), want %v (total %d)", got, total, tt.want, tt.wantTotal)
			}
		})
	}
}

// revoked reports, for each session, whether it was revoked.
func revoked(t *testing.T, db *store.DB, sessions ...*store.Session) []bool {
	t.Helper()
	out := make([]bool, len(sessions))
	for i, s := range sessions {
		got, _, err := db.SessionWithUser(context.Background(), s.ID)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = got.RevokedAt != nil
	}
	return out
}

func TestUpdateUser(t *testing.T) {
	ctx := context.Background()

	t.Run("PasswordRevokesOtherSessions", func(t *testing.T) {
		db, clk := openDB(t)
		u := mustUser(t, db, "pw", store.RoleViewer)
		other := mustUser(t, db, "other", store.RoleViewer)
		s1, keep, s3 := mustSession(t, db, u.ID), mustSession(t, db, u.ID), mustSession(t, db, u.ID)
		bystander := mustSession(t, db, other.ID)
		clk.Advance(time.Second)
		got, err := db.UpdateUser(ctx, u.ID, store.UserUpdate{PasswordHash: ptr("new-hash"), KeepSession: keep.ID})
		if err != nil {
			t.Fatal(err)
		}
		if got.PasswordHash != "new-hash" {
			t.Errorf("PasswordHash = %q, want new-hash", got.PasswordHash)
		}
		if want := []bool{true, false, true, false}; !slices.Equal(revoked(t, db, s1, keep, s3, bystander), want) {
			t.Errorf("revoked (s1, kept, s3, other user's) = %v, want %v", revoked(t, db, s1, keep, s3, bystander), want)
		}
	})

	t.Run("PasswordWithoutKeepRevokesAll", func(t *testing.T) {
		db, _ := openDB(t)
		u := mustUser(t, db, "pw", store.RoleViewer)
		s1, s2 := mustSession(t, db, u.ID), mustSession(t, db, u.ID)
		if _, err := db.UpdateUser(ctx, u.ID, store.UserUpdate{PasswordHash: ptr("new-hash")}); err != nil {
			t.Fatal(err)
		}
		if got := revoked(t, db, s1, s2); !slices.Equal(got, []bool{true, true}) {
			t.Errorf("revoked = %v, want both", got)
		}
	})

	t.Run("ProfileKeepsSessions", func(t *testing.T) {
		db, clk := openDB(t)
		u := mustUser(t, db, "prof", store.RoleViewer)
		s := mustSession(t, db, u.ID)
		clk.Advance(5 * time.Second)
		got, err := db.UpdateUser(ctx, u.ID, store.UserUpdate{FullName: ptr("New Name"), Email: ptr("new@example.com"), Username: ptr("renamed")})
		if err != nil {
			t.Fatal(err)
		}
		if got.FullName != "New Name" || got.Email != "new@example.com" || got.Username != "renamed" || got.PasswordHash != u.PasswordHash {
			t.Errorf("UpdateUser returned %+v", got)
		}
		if !got.UpdatedAt.Equal(clk.Now()) || !got.CreatedAt.Equal(t0) {
			t.Errorf("CreatedAt, UpdatedAt = %v, %v; want %v, %v", got.CreatedAt, got.UpdatedAt, t0, clk.Now())
		}
		if revoked(t, db, s)[0] {
			t.Error("a profile change without a password revoked the session")
		}
	})

	t.Run("NothingToChange", func(t *testing.T) {
		db, _ := openDB(t)
		u := mustUser(t, db, "same", store.RoleViewer)
		got, err := db.UpdateUser(ctx, u.ID, store.UserUpdate{})
		if err != nil || got.ID != u.ID {
			t.Fatalf("UpdateUser with nothing = %+v, %v", got, err)
		}
	})

	t.Run("DuplicateEmailConflict", func(t *testing.T) {
		db, _ := openDB(t)
		u := mustUser(t, db, "first", store.RoleViewer)
		mustUser(t, db, "second", store.RoleViewer)
		_, err := db.UpdateUser(ctx, u.ID, store.UserUpdate{Email: ptr("SECOND@example.com")})
		wantKind(t, err, store.KindConflict)
	})

	t.Run("UnknownUserNotFound", func(t *testing.T) {
		db, _ := openDB(t)
		_, err := db.UpdateUser(ctx, 42, store.UserUpdate{FullName: ptr("x")})
		wantKind(t, err, store.KindNotFound)
	})
}

func TestSetUserRole(t *testing.T) {
	ctx := context.Background()

	t.Run("RefusesDemotingLastSuperAdmin", func(t *testing.T) {
		db, _ := openDB(t)
		sa := mustUser(t, db, "root", store.RoleSuperAdmin)
		mustUser(t, db, "helper", store.RoleAdmin)
		_, err := db.SetUserRole(ctx, sa.ID, store.RoleAdmin)
		wantKind(t, err, store.KindConflict)
		if got, _ := db.UserByID(ctx, sa.ID); got.Role != store.RoleSuperAdmin {
			t.Errorf("role is %s after a refused demotion", got.Role)
		}
	})

	t.Run("AllowsDemotingWithAnotherActiveSuperAdmin", func(t *testing.T) {
		db, _ := openDB(t)
		sa := mustUser(t, db, "root", store.RoleSuperAdmin)
		mustUser(t, db, "root2", store.RoleSuperAdmin)
		got, err := db.SetUserRole(ctx, sa.ID, store.RoleViewer)
		if err != nil {
			t.Fatal(err)
		}
		if got.Role != store.RoleViewer {
			t.Errorf("role = %s, want viewer", got.Role)
		}
	})

	t.Run("DisabledSuperAdminDoesNotCount", func(t *testing.T) {
		db, _ := openDB(t)
		sa := mustUser(t, db, "root", store.RoleSuperAdmin)
		sa2 := mustUser(t, db, "root2", store.RoleSuperAdmin)
		if _, err := db.SetUserActive(ctx, sa2.ID, false); err != nil {
			t.Fatal(err)
		}
		_, err := db.SetUserRole(ctx, sa.ID, store.RoleAdmin)
		wantKind(t, err, store.KindConflict)
	})

	t.Run("KeepingSuperAdminIsFine", func(t *testing.T) {
		db, _ := openDB(t)
		sa := mustUser(t, db, "root", store.RoleSuperAdmin)
		if _, err := db.SetUserRole(ctx, sa.ID, store.RoleSuperAdmin); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("PromotesAnyone", func(t *testing.T) {
		db, _ := openDB(t)
		v := mustUser(t, db, "viewer", store.RoleViewer)
		got, err := db.SetUserRole(ctx, v.ID, store.RoleSuperAdmin)
		if err != nil || got.Role != store.RoleSuperAdmin {
			t.Fatalf("SetUserRole = %+v, %v", got, err)
		}
		if n, _ := db.CountActiveSuperAdmins(ctx); n != 1 {
			t.Errorf("CountActiveSuperAdmins = %d, want 1", n)
		}
	})

	t.Run("UnknownRoleInvalid", func(t *testing.T) {
		db, _ := openDB(t)
		v := mustUser(t, db, "viewer", store.RoleViewer)
		_, err := db.SetUserRole(ctx, v.ID, "root")
		wantKind(t, err, store.KindInvalid)
	})

	t.Run("UnknownUserNotFound", func(t *testing.T) {
		db, _ := openDB(t)
		_, err := db.SetUserRole(ctx, 77, store.RoleAdmin)
		wantKind(t, err, store.KindNotFound)
		_, err = db.SetUserRole(ctx, 77, store.RoleSuperAdmin)
		wantKind(t, err, store.KindNotFound)
	})
}

func TestSetUserActive(t *testing.T) {
	ctx := context.Background()

	t.Run("RefusesDisablingLastSuperAdmin", func(t *testing.T) {
		db, _ := openDB(t)
		sa := mustUser(t, db, "root", store.RoleSuperAdmin)
		s := mustSession(t, db, sa.ID)
		_, err := db.SetUserActive(ctx, sa.ID, false)
		wantKind(t, err, store.KindConflict)
		if got, _ := db.UserByID(ctx, sa.ID); !got.IsActive {
			t.Error("the last super_admin was disabled")
		}
		if revoked(t, db, s)[0] {
			t.Error("a refused disable revoked the session")
		}
	})

	t.Run("AllowsDisablingWithAnotherActiveSuperAdmin", func(t *testing.T) {
		db, _ := openDB(t)
		sa := mustUser(t, db, "root", store.RoleSuperAdmin)
		mustUser(t, db, "root2", store.RoleSuperAdmin)
		got, err := db.SetUserActive(ctx, sa.ID, false)
		if err != nil {
			t.Fatal(err)
		}
		if got.IsActive {
			t.Error("IsActive still true")
		}
		if n, _ := db.CountActiveSuperAdmins(ctx); n != 1 {
			t.Errorf("CountActiveSuperAdmins = %d, want 1", n)
		}
	})

	t.Run("DisablingRevokesAllSessions", func(t *testing.T) {
		db, _ := openDB(t)
		u := mustUser(t, db, "gone", store.RoleEditor)
		other := mustUser(t, db, "stays", store.RoleEditor)
		s1, s2, bystander := mustSession(t, db, u.ID), mustSession(t, db, u.ID), mustSession(t, db, other.ID)
		if _, err := db.SetUserActive(ctx, u.ID, false); err != nil {
			t.Fatal(err)
		}
		if got := revoked(t, db, s1, s2, bystander); !slices.Equal(got, []bool{true, true, false}) {
			t.Errorf("revoked = %v, want [true true false]", got)
		}
		if list, _, _ := db.ListActiveSessions(ctx, u.ID, store.Page{Page: 1, PerPage: 50}); len(list) != 0 {
			t.Errorf("%d active sessions after disabling", len(list))
		}
	})

	t.Run("Reenable", func(t *testing.T) {
		db, _ := openDB(t)
		u := mustUser(t, db, "back", store.RoleViewer)
		if _, err := db.SetUserActive(ctx, u.ID, false); err != nil {
			t.Fatal(err)
		}
		got, err := db.SetUserActive(ctx, u.ID, true)
		if err != nil || !got.IsActive {
			t.Fatalf("SetUserActive(true) = %+v, %v", got, err)
		}
		if n, _ := db.CountActiveUsers(ctx); n != 1 {
			t.Errorf("CountActiveUsers = %d, want 1", n)
		}
	})

	t.Run("UnknownUserNotFound", func(t *testing.T) {
		db, _ := openDB(t)
		_, err := db.SetUserActive(ctx, 5, true)
		wantKind(t, err, store.KindNotFound)
		_, err = db.SetUserActive(ctx, 5, false)
		wantKind(t, err, store.KindNotFound)
	})
}
