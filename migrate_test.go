package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/copydesk/copydesk/server"
)

// TestMigrateCommand: a data directory copied into a new one, verified; a
// second copy into it refused (non-empty target, naming a table); a source
// whose data directory a server holds refused.
func TestMigrateCommand(t *testing.T) {
	dir := t.TempDir()
	a, b, c := filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "c")
	createUser(t, a, "ann@example.com", "ann", "admin", "a long enough password 1")
	out := mustRun(t, "", "migrate", "--from", a, "--to", b)
	if !strings.Contains(out, "every table verified") || !strings.Contains(out, "users ") {
		t.Fatalf("migrate: %s", out)
	}
	if _, errOut, code := run(t, "", "migrate", "--from", a, "--to", b); code == 0 || !strings.Contains(errOut, "its table users has 1 rows") {
		t.Fatalf("migrate into a non-empty target: exit %d, %s", code, errOut)
	}
	lock, err := server.LockDataDir(a, "a test server")
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Unlock()
	if _, errOut, code := run(t, "", "migrate", "--from", a, "--to", c); code == 0 || !strings.Contains(errOut, "stop the server first") {
		t.Fatalf("migrate from a served data directory: exit %d, %s", code, errOut)
	}
}
