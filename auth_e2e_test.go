package main

// End-to-end tests of account recovery from the shell and of the bound on
// password hashing, against the real binary (see main_test.go).

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"

	"github.com/copydesk/copydesk/server"
	"github.com/copydesk/copydesk/store"
)

// TestAccountRecoveryCommands: `users reset-2fa` and `users unlock` work on
// the data directory of a running server, which sees the change at once.
func TestAccountRecoveryCommands(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	createUser(t, dir, "lost@example.com", "lost", "viewer", "lost password")
	createUser(t, dir, "locked@example.com", "locked", "viewer", "locked password")
	base, _ := startServer(t, dir, nil)

	// lost@ turns 2FA on, then loses the authenticator.
	tok, _ := login(t, base, "lost@example.com", "lost password")
	status, body := httpJSON(t, "POST", base+"/api/auth/2fa/setup", tok, nil)
	secret, _ := wantData(t, "2fa setup", status, body, 200)["secret"].(string)
	code, err := totp.GenerateCodeCustom(secret, time.Now(), totp.ValidateOpts{Period: 30, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
	if err != nil {
		t.Fatal(err)
	}
	status, body = httpJSON(t, "POST", base+"/api/auth/2fa/verify", tok, map[string]string{"code": code, "current_password": "lost password"})
	wantData(t, "2fa verify", status, body, 200)
	status, body = httpJSON(t, "POST", base+"/api/auth/login", "", loginBody("lost@example.com", "lost password"))
	wantError(t, "login without a code", status, body, http.StatusUnauthorized)

	out := mustRun(t, "", "users", "reset-2fa", "--data-dir", dir, "--email", "LOST@example.com")
	if !strings.Contains(out, "two-factor authentication turned off") {
		t.Errorf("reset-2fa printed %q", out)
	}
	login(t, base, "lost@example.com", "lost password")
	if _, errOut, code := run(t, "", "users", "reset-2fa", "--data-dir", dir, "--email", "lost@example.com"); code == 0 || !strings.Contains(errOut, "not enabled") {
		t.Errorf("reset-2fa twice: exit %d, stderr %q", code, errOut)
	}
	if _, errOut, code := run(t, "", "users", "unlock", "--data-dir", dir, "--email", "nobody@example.com"); code == 0 || !strings.Contains(errOut, "not found") {
		t.Errorf("unlock of an unknown address: exit %d, stderr %q", code, errOut)
	}

	// locked@ is locked for an hour by someone guessing.
	lockAddress(t, dir, "locked@example.com")
	status, body = httpJSON(t, "POST", base+"/api/auth/login", "", loginBody("locked@example.com", "locked password"))
	wantError(t, "login while locked", status, body, http.StatusTooManyRequests)
	out = mustRun(t, "", "users", "unlock", "--data-dir", dir, "--email", "locked@example.com")
	if !strings.Contains(out, "sign-in unlocked") {
		t.Errorf("unlock printed %q", out)
	}
	login(t, base, "locked@example.com", "locked password")
}

// lockAddress writes the record of ten failed sign-ins and a lock that
// lasts an hour, as the server itself would, into the database of dir.
func lockAddress(t *testing.T, dir, email string) {
	t.Helper()
	db, err := store.Open(context.Background(), filepath.Join(dir, server.DBFile), store.Options{Announce: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	now := time.Now().UTC()
	until := now.Add(time.Hour)
	err = db.UpdateLoginFailures(context.Background(), email, func(store.LoginFailures) (store.LoginFailures, error) {
		return store.LoginFailures{Failures: 10, LastFailureAt: now, LockedUntil: &until}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
