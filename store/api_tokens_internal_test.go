package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func openTokenDB(t *testing.T) (*DB, *User) {
	t.Helper()
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "tokens.db"), Options{Readers: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	u, err := db.CreateUser(ctx, NewUser{Email: "ann@example.com", Username: "ann", PasswordHash: "x", Role: RoleEditor})
	if err != nil {
		t.Fatal(err)
	}
	return db, u
}

func newToken(t *testing.T, db *DB, n NewAPIToken) *APIToken {
	t.Helper()
	h := sha256.Sum256([]byte(n.Name))
	n.Hash, n.Prefix = h[:], "cdk_"+n.Name
	tok, err := db.CreateAPIToken(context.Background(), n)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestAPITokenLookupPlan: the lookup of every request with an API token
// is one search of the unique index on the hash, whatever the hash: a
// made-up token costs that and nothing more.
func TestAPITokenLookupPlan(t *testing.T) {
	db, _ := openTokenDB(t)
	rows, err := db.r.Query(`EXPLAIN QUERY PLAN `+apiTokenWithUserQuery, []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	joined := strings.Join(plan, "; ")
	if len(plan) != 2 || !strings.Contains(plan[0], "USING INDEX api_tokens_hash (secret_hash=?)") ||
		!strings.Contains(plan[1], "SEARCH u USING INTEGER PRIMARY KEY") {
		t.Errorf("plan of the token lookup: %s", joined)
	}
}

func TestAPITokens(t *testing.T) {
	ctx := context.Background()

	t.Run("RoundTrip", func(t *testing.T) {
		db, u := openTokenDB(t)
		envA, err := db.CreateEnvironment(ctx, NewEnvironment{Name: "A", Slug: "a"})
		if err != nil {
			t.Fatal(err)
		}
		exp := db.Now().Add(time.Hour).Truncate(time.Millisecond)
		tok := newToken(t, db, NewAPIToken{UserID: u.ID, Name: "one", ReadOnly: true, Limited: true, EnvironmentIDs: []int64{envA.ID, envA.ID},
			ExpiresAt: &exp})
		got, user, err := db.APITokenWithUser(ctx, tok.Hash)
		if err != nil {
			t.Fatal(err)
		}
		if got.ID != tok.ID || !got.ReadOnly || !got.Limited || len(got.EnvironmentIDs) != 1 || got.EnvironmentIDs[0] != envA.ID ||
			!got.ExpiresAt.Equal(exp) || got.Prefix != "cdk_one" || !bytes.Equal(got.Hash, tok.Hash) || got.LastUsedAt != nil {
			t.Errorf("APITokenWithUser = %+v", got)
		}
		if user.ID != u.ID || user.Email != u.Email || user.Role != RoleEditor || !user.IsActive || user.PasswordHash != "" {
			t.Errorf("its user = %+v", user)
		}
		if _, _, err := db.APITokenWithUser(ctx, make([]byte, 32)); KindOf(err) != KindNotFound {
			t.Errorf("an unknown hash: %v", err)
		}
		// Deleting its environment leaves the token limited, to nothing.
		if err := db.DeleteEnvironment(ctx, envA.ID); err != nil {
			t.Fatal(err)
		}
		if got, _, err = db.APITokenWithUser(ctx, tok.Hash); err != nil || !got.Limited || len(got.EnvironmentIDs) != 0 {
			t.Errorf("after its environment was deleted: %+v %v", got, err)
		}
	})

	t.Run("UnknownEnvironmentInvalid", func(t *testing.T) {
		db, u := openTokenDB(t)
		h := sha256.Sum256([]byte("x"))
		_, err := db.CreateAPIToken(ctx, NewAPIToken{UserID: u.ID, Name: "x", Prefix: "cdk_x", Hash: h[:], Limited: true, EnvironmentIDs: []int64{77}})
		if KindOf(err) != KindInvalid || !strings.Contains(Message(err), "no environment with id 77") {
			t.Errorf("got %v", err)
		}
		if _, _, err := db.APITokenWithUser(ctx, h[:]); KindOf(err) != KindNotFound {
			t.Errorf("the refused token was stored: %v", err)
		}
	})

	t.Run("ListAndRevoke", func(t *testing.T) {
		db, u := openTokenDB(t)
		other, err := db.CreateUser(ctx, NewUser{Email: "bob@example.com", Username: "bob", PasswordHash: "x", Role: RoleViewer})
		if err != nil {
			t.Fatal(err)
		}
		a := newToken(t, db, NewAPIToken{UserID: u.ID, Name: "a"})
		b := newToken(t, db, NewAPIToken{UserID: u.ID, Name: "b"})
		newToken(t, db, NewAPIToken{UserID: other.ID, Name: "c"})
		list, total, err := db.ListAPITokens(ctx, u.ID, Page{Page: 1, PerPage: 50})
		if err != nil || total != 2 || len(list) != 2 || list[0].ID != b.ID || list[1].ID != a.ID {
			t.Fatalf("ListAPITokens = %+v %d %v", list, total, err)
		}
		if err := db.RevokeAPIToken(ctx, other.ID, a.ID); KindOf(err) != KindNotFound {
			t.Errorf("another user revoked it: %v", err)
		}
		mark := db.ChangeMark()
		if err := db.RevokeAPIToken(ctx, u.ID, a.ID); err != nil {
			t.Fatal(err)
		}
		// The principal cache holds tokens: a revocation must make it stale.
		if db.ChangeMark() == mark {
			t.Error("revoking a token did not move the ChangeMark")
		}
		if err := db.RevokeAPIToken(ctx, u.ID, a.ID); KindOf(err) != KindNotFound {
			t.Errorf("revoked twice: %v", err)
		}
		if list, total, _ := db.ListAPITokens(ctx, u.ID, Page{Page: 1, PerPage: 50}); total != 1 || list[0].ID != b.ID {
			t.Errorf("after the revocation: %+v %d", list, total)
		}
		got, _, err := db.APITokenWithUser(ctx, a.Hash)
		if err != nil || got.RevokedAt == nil {
			t.Errorf("the revoked token reads %+v %v", got, err)
		}
	})

	t.Run("CreateMovesTheChangeMark", func(t *testing.T) {
		db, u := openTokenDB(t)
		mark := db.ChangeMark()
		newToken(t, db, NewAPIToken{UserID: u.ID, Name: "a"})
		if db.ChangeMark() == mark {
			t.Error("making a token did not move the ChangeMark")
		}
	})

	t.Run("RestoreRevokesEveryToken", func(t *testing.T) {
		// endSessions runs on the restored database (Replace): an older
		// snapshot must not bring back tokens revoked since.
		db, u := openTokenDB(t)
		a := newToken(t, db, NewAPIToken{UserID: u.ID, Name: "a"})
		if err := db.endSessions(ctx); err != nil {
			t.Fatal(err)
		}
		got, _, err := db.APITokenWithUser(ctx, a.Hash)
		if err != nil || got.RevokedAt == nil {
			t.Errorf("after a restore the token reads %+v %v", got, err)
		}
	})
}

// Tokens revoked or expired before the cutoff are deleted with their
// environments; the others stay.
func TestPruneAPITokens(t *testing.T) {
	ctx := context.Background()
	db, u := openTokenDB(t)
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	db.Now = func() time.Time { return now }
	env, err := db.CreateEnvironment(ctx, NewEnvironment{Name: "A", Slug: "a"})
	if err != nil {
		t.Fatal(err)
	}
	at := func(d time.Duration) *time.Time { v := now.Add(d); return &v }
	revokedOld := newToken(t, db, NewAPIToken{UserID: u.ID, Name: "revoked-old", Limited: true, EnvironmentIDs: []int64{env.ID}})
	if err := db.RevokeAPIToken(ctx, u.ID, revokedOld.ID); err != nil {
		t.Fatal(err)
	}
	expiredOld := newToken(t, db, NewAPIToken{UserID: u.ID, Name: "expired-old", ExpiresAt: at(time.Hour)})
	live := newToken(t, db, NewAPIToken{UserID: u.ID, Name: "live", ExpiresAt: at(90 * 24 * time.Hour)})
	forever := newToken(t, db, NewAPIToken{UserID: u.ID, Name: "forever"})
	now = now.Add(48 * time.Hour)
	revokedNew := newToken(t, db, NewAPIToken{UserID: u.ID, Name: "revoked-new"})
	if err := db.RevokeAPIToken(ctx, u.ID, revokedNew.ID); err != nil {
		t.Fatal(err)
	}
	n, err := db.PruneAPITokens(ctx, now.Add(-time.Hour))
	if err != nil || n != 2 {
		t.Fatalf("pruned %d, %v; want 2", n, err)
	}
	var left []int64
	rows, err := db.r.QueryContext(ctx, `SELECT id FROM api_tokens ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		left = append(left, id)
	}
	if want := []int64{live.ID, forever.ID, revokedNew.ID}; fmt.Sprint(left) != fmt.Sprint(want) {
		t.Fatalf("left %v, want %v (expired-old %d, revoked-old %d gone)", left, want, expiredOld.ID, revokedOld.ID)
	}
	var envRows int
	if err := db.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM api_token_environments`).Scan(&envRows); err != nil || envRows != 0 {
		t.Fatalf("%d environment rows of pruned tokens left (%v)", envRows, err)
	}
}
