package auth

import (
	"bytes"
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/copydesk/copydesk/server/keyring"
	"github.com/copydesk/copydesk/store"
)

// enroll turns 2FA on for name (created by f.user) and returns its
// recovery codes.
func (f *fixture) enroll(t *testing.T, name string) []string {
	t.Helper()
	ctx := context.Background()
	p := f.principal(t, f.login(t, name).Token)
	setup, err := f.svc.SetupTOTP(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	codes, err := f.svc.VerifyTOTP(ctx, p, codeAt(t, setup.Secret, f.clk.Now().Unix()/totpPeriod), password(name))
	if err != nil {
		t.Fatal(err)
	}
	return codes
}

// rawDB opens the service's database file apart from the store.
func (f *fixture) rawDB(t *testing.T) *sql.DB {
	t.Helper()
	raw, err := f.db.OpenRaw()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	return raw
}

// TestRecoveryCodesStoredKeyed: what is stored of a recovery code is an
// HMAC under a key derived from secret.key, so a stolen database alone
// cannot be searched offline for the codes (50 bits each).
func TestRecoveryCodesStoredKeyed(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	u := f.user(t, "ann", store.RoleViewer)
	codes := f.enroll(t, "ann")

	rows, err := f.rawDB(t).Query(`SELECT code_hash FROM recovery_codes WHERE user_id = ?`, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]bool{}
	for rows.Next() {
		var h []byte
		if err := rows.Scan(&h); err != nil {
			t.Fatal(err)
		}
		stored[string(h)] = true
	}
	rows.Close()
	if len(stored) != RecoveryCodeCount {
		t.Fatalf("%d codes stored, want %d", len(stored), RecoveryCodeCount)
	}
	for _, c := range codes {
		if stored[string(hashRecoveryCode(c))] {
			t.Fatalf("recovery code %s is stored as its plain digest: anyone with the database can search for it", c)
		}
		if !stored[string(f.svc.keys.RecoveryCodeMAC(hashRecoveryCode(c)))] {
			t.Fatalf("recovery code %s is not stored as the HMAC of its digest", c)
		}
	}

	// The same database under another secret.key does not accept them.
	otherKeys, err := keyring.New([]byte(strings.Repeat("o", keyring.MinSecretLen)))
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Hasher, cfg.Throttle = cheapHasher, ThrottlePolicy{}
	other, err := New(f.db, otherKeys, cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = other.Login(ctx, LoginInput{Email: "ann@example.com", Password: password("ann"), TOTPCode: codes[0]})
	wantErr(t, err, store.KindUnauthorized)
	if _, err := f.svc.Login(ctx, LoginInput{Email: "ann@example.com", Password: password("ann"), TOTPCode: codes[0]}); err != nil {
		t.Fatalf("the code under its own key: %v", err)
	}
}

// TestOldRecoveryCodesKeyed: codes stored the old way (a plain digest, as
// a backup from before migration 0006 holds them) keep working: they are
// keyed at start, and before a recovery code is checked.
func TestOldRecoveryCodesKeyed(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	u := f.user(t, "ann", store.RoleViewer)
	f.enroll(t, "ann")
	raw := f.rawDB(t)
	old := []string{"abcde-fghij", "klmno-pqrst"}
	setOld := func() {
		t.Helper()
		if _, err := raw.Exec(`DELETE FROM recovery_codes WHERE user_id = ?`, u.ID); err != nil {
			t.Fatal(err)
		}
		for _, c := range old {
			if _, err := raw.Exec(`INSERT INTO recovery_codes (user_id, code_hash, keyed) VALUES (?, ?, 0)`, u.ID, hashRecoveryCode(c)); err != nil {
				t.Fatal(err)
			}
		}
	}
	login := func(code string) error {
		_, err := f.svc.Login(ctx, LoginInput{Email: "ann@example.com", Password: password("ann"), TOTPCode: code})
		return err
	}

	t.Run("AtStart", func(t *testing.T) {
		setOld()
		n, err := f.svc.KeyRecoveryCodes(ctx)
		if err != nil || n != len(old) {
			t.Fatalf("KeyRecoveryCodes = %d, %v; want %d", n, err, len(old))
		}
		var h []byte
		if err := raw.QueryRow(`SELECT code_hash FROM recovery_codes WHERE user_id = ? AND keyed = 1 LIMIT 1`, u.ID).Scan(&h); err != nil {
			t.Fatal(err)
		}
		if bytes.Equal(h, hashRecoveryCode(old[0])) || bytes.Equal(h, hashRecoveryCode(old[1])) {
			t.Fatal("a keyed code is still its plain digest")
		}
		if err := login(old[0]); err != nil {
			t.Fatalf("an old code after keying: %v", err)
		}
	})
	t.Run("BeforeUse", func(t *testing.T) {
		setOld() // as a restore of an older backup would leave them
		if err := login(strings.ToUpper(old[1])); err != nil {
			t.Fatalf("an old code right after a restore: %v", err)
		}
		wantErr(t, login(old[1]), store.KindUnauthorized)
		if n, _ := f.svc.KeyRecoveryCodes(ctx); n != 0 {
			t.Errorf("%d codes were left unkeyed after a recovery code was checked", n)
		}
	})
}
