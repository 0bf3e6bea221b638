package store_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/copydesk/copydesk/store"
)

func hashes(codes ...string) [][]byte {
	out := make([][]byte, len(codes))
	for i, c := range codes {
		out[i] = []byte("hash:" + c)
	}
	return out
}

func TestEnableTOTP(t *testing.T) {
	ctx := context.Background()

	t.Run("OK", func(t *testing.T) {
		db, _ := openDB(t)
		u := mustUser(t, db, "tfa", store.RoleViewer)
		if err := db.SetTOTPPending(ctx, u.ID, []byte("pending")); err != nil {
			t.Fatal(err)
		}
		if got, _ := db.UserByID(ctx, u.ID); !bytes.Equal(got.TOTPPending, []byte("pending")) || got.TOTPEnabled {
			t.Fatalf("after SetTOTPPending: pending %q, enabled %v", got.TOTPPending, got.TOTPEnabled)
		}
		if err := db.EnableTOTP(ctx, u.ID, []byte("sealed"), 1000, hashes("a", "b", "c")); err != nil {
			t.Fatal(err)
		}
		got, _ := db.UserByID(ctx, u.ID)
		if !got.TOTPEnabled || !bytes.Equal(got.TOTPSecret, []byte("sealed")) || got.TOTPPending != nil || got.TOTPLastStep != 1000 {
			t.Errorf("after EnableTOTP: enabled %v, secret %q, pending %q, last step %d",
				got.TOTPEnabled, got.TOTPSecret, got.TOTPPending, got.TOTPLastStep)
		}
		if n, _ := db.RecoveryCodesLeft(ctx, u.ID); n != 3 {
			t.Errorf("RecoveryCodesLeft = %d, want 3", n)
		}
	})

	t.Run("TwiceConflict", func(t *testing.T) {
		db, _ := openDB(t)
		u := mustUser(t, db, "tfa", store.RoleViewer)
		if err := db.EnableTOTP(ctx, u.ID, []byte("first"), 10, hashes("a", "b")); err != nil {
			t.Fatal(err)
		}
		wantKind(t, db.EnableTOTP(ctx, u.ID, []byte("second"), 20, hashes("c", "d", "e")), store.KindConflict)
		got, _ := db.UserByID(ctx, u.ID)
		if !bytes.Equal(got.TOTPSecret, []byte("first")) || got.TOTPLastStep != 10 {
			t.Errorf("a refused EnableTOTP changed the secret to %q, step %d", got.TOTPSecret, got.TOTPLastStep)
		}
		if n, _ := db.RecoveryCodesLeft(ctx, u.ID); n != 2 {
			t.Errorf("a refused EnableTOTP changed the recovery codes: %d left, want 2", n)
		}
		if ok, _ := db.UseRecoveryCode(ctx, u.ID, []byte("hash:c")); ok {
			t.Error("a recovery code of the refused EnableTOTP works")
		}
	})

	t.Run("PendingUnknownUserNotFound", func(t *testing.T) {
		db, _ := openDB(t)
		wantKind(t, db.SetTOTPPending(ctx, 99, []byte("x")), store.KindNotFound)
	})

	t.Run("DisableClearsEverything", func(t *testing.T) {
		db, _ := openDB(t)
		u := mustUser(t, db, "tfa", store.RoleViewer)
		if err := db.EnableTOTP(ctx, u.ID, []byte("sealed"), 10, hashes("a")); err != nil {
			t.Fatal(err)
		}
		if err := db.DisableTOTP(ctx, u.ID); err != nil {
			t.Fatal(err)
		}
		got, _ := db.UserByID(ctx, u.ID)
		if got.TOTPEnabled || got.TOTPSecret != nil || got.TOTPLastStep != 0 {
			t.Errorf("after DisableTOTP: enabled %v, secret %q, step %d", got.TOTPEnabled, got.TOTPSecret, got.TOTPLastStep)
		}
		if n, _ := db.RecoveryCodesLeft(ctx, u.ID); n != 0 {
			t.Errorf("%d recovery codes left after DisableTOTP", n)
		}
		if err := db.EnableTOTP(ctx, u.ID, []byte("again"), 5, nil); err != nil {
			t.Errorf("EnableTOTP after DisableTOTP: %v", err)
		}
	})
}

func TestUseTOTPStep(t *testing.T) {
	ctx := context.Background()
	db, _ := openDB(t)
	u := mustUser(t, db, "steps", store.RoleViewer)
	other := mustUser(t, db, "other", store.RoleViewer)
	if err := db.EnableTOTP(ctx, u.ID, []byte("s"), 100, nil); err != nil {
		t.Fatal(err)
	}
	// In order: each use depends on the ones before it.
	steps := []struct {
		name string
		step int64
		want bool
	}{
		{"SameAsEnablingRefused", 100, false},
		{"OlderRefused", 99, false},
		{"NextAccepted", 101, true},
		{"NextAgainRefused", 101, false},
		{"SkipAheadAccepted", 105, true},
		{"BetweenRefused", 103, false},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			got, err := db.UseTOTPStep(ctx, u.ID, st.step)
			if err != nil {
				t.Fatal(err)
			}
			if got != st.want {
				t.Errorf("UseTOTPStep(%d) = %v, want %v", st.step, got, st.want)
			}
		})
	}
	t.Run("OtherUserUnaffected", func(t *testing.T) {
		if ok, err := db.UseTOTPStep(ctx, other.ID, 101); err != nil || !ok {
			t.Errorf("UseTOTPStep for another user = %v, %v; want true", ok, err)
		}
	})
}

func TestUseRecoveryCode(t *testing.T) {
	ctx := context.Background()
	db, _ := openDB(t)
	u := mustUser(t, db, "rc", store.RoleViewer)
	other := mustUser(t, db, "other", store.RoleViewer)
	if err := db.EnableTOTP(ctx, u.ID, []byte("s"), 1, hashes("one", "two")); err != nil {
		t.Fatal(err)
	}
	if err := db.EnableTOTP(ctx, other.ID, []byte("s"), 1, hashes("theirs")); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name      string
		userID    int64
		code      string
		want      bool
		wantLeft  int
		wantSpent bool // RecoveryCodeSpent afterwards
	}{
		{"FirstUseAccepted", u.ID, "one", true, 1, true},
		{"SecondUseRefused", u.ID, "one", false, 1, true},
		{"UnknownRefused", u.ID, "nope", false, 1, false},
		{"OtherUsersCodeRefused", u.ID, "theirs", false, 1, false},
		{"LastCodeAccepted", u.ID, "two", true, 0, true},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			got, err := db.UseRecoveryCode(ctx, st.userID, []byte("hash:"+st.code))
			if err != nil {
				t.Fatal(err)
			}
			if got != st.want {
				t.Errorf("UseRecoveryCode(%s) = %v, want %v", st.code, got, st.want)
			}
			if n, _ := db.RecoveryCodesLeft(ctx, u.ID); n != st.wantLeft {
				t.Errorf("RecoveryCodesLeft = %d, want %d", n, st.wantLeft)
			}
			if spent, err := db.RecoveryCodeSpent(ctx, st.userID, []byte("hash:"+st.code)); err != nil || spent != st.wantSpent {
				t.Errorf("RecoveryCodeSpent(%s) = %v, %v; want %v", st.code, spent, err, st.wantSpent)
			}
		})
	}
	if n, _ := db.RecoveryCodesLeft(ctx, other.ID); n != 1 {
		t.Errorf("the other user's codes changed: %d left, want 1", n)
	}
}

// TestKeyRecoveryCodes: codes stored before migration 0006 (a plain
// digest) are not usable as they are, and KeyRecoveryCodes rewrites them,
// once, as the MAC of that digest.
func TestKeyRecoveryCodes(t *testing.T) {
	ctx := context.Background()
	path := before0006(t)
	raw := rawDB(t, path)
	for _, q := range []string{
		`INSERT INTO users (id, email, username, password_hash, role, totp_enabled, created_at, updated_at) VALUES
			(1, 'old@example.com', 'old', 'h', 'viewer', 1, '2025-01-01T00:00:00.000Z', '2025-01-01T00:00:00.000Z')`,
		`INSERT INTO recovery_codes (user_id, code_hash) VALUES (1, CAST('digest:one' AS BLOB)), (1, CAST('digest:two' AS BLOB))`,
	} {
		if _, err := raw.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	raw.Close()
	db, err := store.Open(ctx, path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if ok, _ := db.UseRecoveryCode(ctx, 1, []byte("digest:one")); ok {
		t.Fatal("an unkeyed code was accepted by its plain digest")
	}
	mac := func(d []byte) []byte { return append([]byte("mac:"), d...) }
	if n, err := db.KeyRecoveryCodes(ctx, mac); err != nil || n != 2 {
		t.Fatalf("KeyRecoveryCodes = %d, %v; want 2 rewritten", n, err)
	}
	if n, err := db.KeyRecoveryCodes(ctx, mac); err != nil || n != 0 {
		t.Fatalf("KeyRecoveryCodes again = %d, %v; want nothing left to do", n, err)
	}
	if ok, _ := db.UseRecoveryCode(ctx, 1, []byte("mac:digest:one")); !ok {
		t.Error("a keyed old code is not accepted by its MAC")
	}
	if n, _ := db.RecoveryCodesLeft(ctx, 1); n != 1 {
		t.Errorf("%d codes left, want 1", n)
	}
	var stored []byte
	if err := rawDB(t, path).QueryRow(`SELECT code_hash FROM recovery_codes WHERE user_id = 1 AND used_at IS NULL`).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(stored, []byte("mac:digest:two")) {
		t.Errorf("stored %q, want the MAC of the old digest", stored)
	}
}
