package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/copydesk/copydesk/store/storetest"
)

// TestInstancesRestoreOffline: `copydesk restore FILE --database URL`
// refuses while an instance serves the database and a file that is not a
// whole snapshot; with the instances stopped it replaces the database's
// content with a SQLite installation's snapshot, keeps the previous
// content, and an instance started after serves the snapshot's accounts,
// not the replaced ones. Skipped without COPYDESK_TEST_DATABASE.
func TestInstancesRestoreOffline(t *testing.T) {
	storetest.RequirePostgres(t)
	t.Parallel()
	key := "COPYDESK_SECRET_KEY=" + strings.Repeat("0123456789abcdef", 3)
	sqliteDir := t.TempDir()
	_, errOut, code := runEnv(t, []string{key}, adminPass+"\n", "users", "create", "--init", "--data-dir", sqliteDir,
		"--email", "ann@example.com", "--username", "ann", "--role", "super_admin", "--password-stdin")
	if code != 0 {
		t.Fatalf("users create on SQLite: exit %d\n%s", code, errOut)
	}
	snap := filepath.Join(t.TempDir(), "snapshot.db")
	if _, errOut, code := runEnv(t, []string{key}, "", "backup", "--data-dir", sqliteDir, "--out", snap); code != 0 {
		t.Fatalf("backup: exit %d\n%s", code, errOut)
	}

	env := []string{key, "COPYDESK_DATABASE=" + storetest.NewPostgres(t)}
	pgDir := t.TempDir()
	// No --init: with --database (here COPYDESK_DATABASE) the database is
	// the instance, and the data directory need not hold one.
	if _, errOut, code := runEnv(t, env, adminPass+"\n", "users", "create", "--data-dir", pgDir,
		"--email", "bob@example.com", "--username", "bob", "--role", "super_admin", "--password-stdin"); code != 0 {
		t.Fatalf("users create on PostgreSQL: exit %d\n%s", code, errOut)
	}
	base, p := startServer(t, pgDir, nil, env...)
	login(t, base, "bob@example.com", adminPass)
	if _, errOut, code := runEnv(t, env, "", "restore", "--data-dir", pgDir, snap); code == 0 || !strings.Contains(errOut, "is serving") {
		t.Fatalf("restore while an instance serves: exit %d\n%s", code, errOut)
	}
	p.stop(syscall.SIGTERM)

	cut := filepath.Join(t.TempDir(), "cut.db")
	b, err := os.ReadFile(snap)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cut, b[:len(b)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := runEnv(t, env, "", "restore", "--data-dir", pgDir, cut); code == 0 || !strings.Contains(errOut, "is not restorable") {
		t.Fatalf("restore of a cut-off file: exit %d\n%s", code, errOut)
	}

	out, errOut, code := runEnv(t, env, "", "restore", "--data-dir", pgDir, snap)
	if code != 0 || !strings.Contains(out, "every table verified") || !strings.Contains(out, "the previous content is kept as ") {
		t.Fatalf("restore: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	kept := strings.TrimSpace(out[strings.LastIndex(out, "the previous content is kept as ")+len("the previous content is kept as "):])
	if _, err := os.Stat(kept); err != nil {
		t.Fatalf("the previous content's snapshot: %v", err)
	}

	base, _ = startServer(t, pgDir, nil, env...)
	login(t, base, "ann@example.com", adminPass)
	if status, _ := httpJSON(t, "POST", base+"/api/auth/login", "", loginBody("bob@example.com", adminPass)); status != 401 {
		t.Fatalf("bob, whom the restore replaced, signs in with %d, want 401", status)
	}
}
