package main

import (
	"net/http"
	"strings"
	"testing"
)

// --signin-lock-after and --signin-lock-for set the lockout of repeated
// failed sign-ins; nonsense is refused before the server starts.
func TestServeSigninLock(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ flag, value, says string }{
		{"--signin-lock-after", "-1", "--signin-lock-after must be 0 (never lock) or more"},
		{"--signin-lock-for", "10s", "--signin-lock-for must be at least 1m"},
	} {
		_, errOut, code := run(t, "", "serve", "--data-dir", t.TempDir(), "--http", freeAddr(t), c.flag, c.value)
		if code == 0 || !strings.Contains(errOut, c.says) {
			t.Errorf("serve %s %s: exit %d\n%s", c.flag, c.value, code, errOut)
		}
	}

	dir := t.TempDir()
	createUser(t, dir, adminEmail, "admin", "super_admin", adminPass)
	base, _ := startServer(t, dir, []string{"--signin-lock-after", "2"})
	for i := 1; i <= 2; i++ {
		if status, body := httpJSON(t, "POST", base+"/api/auth/login", "", loginBody(adminEmail, "not the password")); status != http.StatusUnauthorized {
			t.Fatalf("failed sign-in %d: status %d, body %v", i, status, body)
		}
	}
	status, body := httpJSON(t, "POST", base+"/api/auth/login", "", loginBody(adminEmail, adminPass))
	if detail, _ := body["detail"].(string); status != http.StatusTooManyRequests || !strings.Contains(detail, "locked until") {
		t.Fatalf("the right password after two failures with --signin-lock-after 2: status %d, body %v", status, body)
	}
}
