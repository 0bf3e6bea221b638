package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestTokensDoc runs the shell blocks of docs/tokens.md, as written, in one
// bash against the built binary, answering the password prompt.
func TestTokensDoc(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"bash", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("the tokens page needs %s (.ci/run installs it): %v", tool, err)
		}
	}
	page, err := os.ReadFile("docs/tokens.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(page), "<!-- tokens -->")
	section, _, ok2 := strings.Cut(rest, "<!-- /tokens -->")
	if !ok || !ok2 {
		t.Fatal("docs/tokens.md has no <!-- tokens --> ... <!-- /tokens --> section")
	}
	var blocks []string
	for _, m := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(section, -1) {
		blocks = append(blocks, m[1])
	}
	if len(blocks) < 4 {
		t.Fatalf("docs/tokens.md has %d shell blocks", len(blocks))
	}

	dir := t.TempDir()
	createUser(t, dir, adminEmail, "admin", "super_admin", adminPass)
	base, _ := startServer(t, dir, nil)
	// Two environments, so that the limited token's list shows one.
	resp, raw := do(t, "POST", base+"/api/auth/login", "", strings.NewReader(`{"email":"`+adminEmail+`","password":"`+adminPass+`"}`), "application/json")
	var login struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.Unmarshal(raw, &login); err != nil || resp.StatusCode != 200 {
		t.Fatalf("login: %d %s", resp.StatusCode, raw)
	}
	var envID string
	for _, name := range []string{"Blog", "Shop"} {
		resp, raw := do(t, "POST", base+"/api/environments", login.AccessToken, strings.NewReader(`{"name":"`+name+`"}`), "application/json")
		var env struct {
			Data struct {
				ID json.Number `json:"id"`
			} `json:"data"`
		}
		if err := json.Unmarshal(raw, &env); err != nil || resp.StatusCode != 201 {
			t.Fatalf("environment: %d %s", resp.StatusCode, raw)
		}
		if envID == "" {
			envID = env.Data.ID.String()
		}
	}

	script := "set -euo pipefail\n" + strings.Join(blocks, "\n")
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir = t.TempDir()
	cmd.Env = childEnv("BASE="+base, "EMAIL="+adminEmail, "ENV_ID="+envID)
	cmd.Stdin = strings.NewReader(adminPass + "\n")
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("the tokens page failed: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	transcript := stdout.String()
	for _, want := range []string{
		`{"email":"` + adminEmail + `","role":"super_admin"}`, // the token is its user
		`{"total":2}`,                 // and sees what they see
		"this API token is read-only", // a read-only token changes nothing
		"[" + envID + "]",             // a limited one sees its environment
		`"name":"nightly report"`,     // the list
		`"revoked":true`,
		"the API token was revoked", // and a revoked token is refused
	} {
		if !strings.Contains(transcript, want) {
			t.Errorf("the transcript lacks %q:\n%s", want, transcript)
		}
	}
	if regexp.MustCompile(`cdk_[a-z2-7]{20,}`).MatchString(transcript) {
		t.Errorf("the page prints a whole token:\n%s", transcript)
	}
}
