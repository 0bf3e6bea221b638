package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"
)

// walkthroughBlocks returns the shell blocks of the README's first-hour
// walk-through, in order.
func walkthroughBlocks(t *testing.T) []string {
	t.Helper()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "<!-- walkthrough -->")
	section, _, ok2 := strings.Cut(rest, "<!-- /walkthrough -->")
	if !ok || !ok2 {
		t.Fatal("README.md has no <!-- walkthrough --> ... <!-- /walkthrough --> section")
	}
	var blocks []string
	for _, m := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(section, -1) {
		blocks = append(blocks, m[1])
	}
	if len(blocks) < 4 {
		t.Fatalf("the walk-through has %d shell blocks; want the steps of the first hour", len(blocks))
	}
	return blocks
}

// fakeOpenAI is an OpenAI-compatible server (as Ollama or vLLM are): the
// models list and chat completions, streamed with usage as the real API
// streams them.
func fakeOpenAI(t *testing.T, model string) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"object":"list","data":[{"id":%q,"object":"model","created":1731000000,"owned_by":"library"}]}`, model)
	})
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model  string `json:"model"`
			Stream bool   `json:"stream"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model != model {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprintf(w, `{"error":{"message":"model %q not found","type":"invalid_request_error","code":"model_not_found"}}`, req.Model)
			return
		}
		words := []string{"Compost", " turns", " kitchen", " scraps", " into", " soil."}
		if !req.Stream {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1731000000,"model":%q,`+
				`"choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],`+
				`"usage":{"prompt_tokens":31,"completion_tokens":6,"total_tokens":37}}`, model, strings.Join(words, ""))
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := func(delta, finish string) {
			fin := "null"
			if finish != "" {
				fin = fmt.Sprintf("%q", finish)
			}
			fmt.Fprintf(w, "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1731000000,\"model\":%q,"+
				"\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":%s}]}\n\n", model, delta, fin)
		}
		chunk(`{"role":"assistant","content":""}`, "")
		for _, word := range words {
			chunk(fmt.Sprintf(`{"content":%q}`, word), "")
		}
		chunk(`{}`, "stop")
		fmt.Fprintf(w, "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1731000000,\"model\":%q,"+
			"\"choices\":[],\"usage\":{\"prompt_tokens\":31,\"completion_tokens\":6,\"total_tokens\":37}}\n\n", model)
		fmt.Fprint(w, "data: [DONE]\n\n")
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// TestREADMEWalkthrough runs the README's first-hour blocks, as written,
// in one bash against the built binary, answering its two prompts as a
// user would: the password, then the code from an authenticator app.
func TestREADMEWalkthrough(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"bash", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("the walk-through needs %s (.ci/run installs it): %v", tool, err)
		}
	}
	dir := t.TempDir()
	createUser(t, dir, adminEmail, "admin", "super_admin", adminPass)
	// The Astro project of the walk-through, as `npm create astro` makes
	// it, under a folder the server lets Astro projects live in.
	blog := t.TempDir()
	if err := os.WriteFile(filepath.Join(blog, "astro.config.mjs"), []byte("export default {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	base, _ := startServer(t, dir, []string{"--astro-roots", blog})
	const model = "llama3.2"
	llm := fakeOpenAI(t, model)

	script := "set -euo pipefail\n" + strings.Join(walkthroughBlocks(t), "\n")
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir = t.TempDir()
	cmd.Env = childEnv("BASE="+base, "EMAIL="+adminEmail, "LLM_URL="+llm.URL+"/v1", "MODEL="+model, "BLOG="+blog)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(stdin, adminPass+"\n"); err != nil {
		t.Fatal(err)
	}

	var out strings.Builder
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		out.WriteString(line + "\n")
		if key, ok := strings.CutPrefix(line, "authenticator key: "); ok {
			code, err := totp.GenerateCodeCustom(key, time.Now(), totp.ValidateOpts{Period: 30, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
			if err != nil {
				t.Fatalf("the printed key %q is not a TOTP secret: %v", key, err)
			}
			if _, err := io.WriteString(stdin, code+"\n"); err != nil {
				t.Fatal(err)
			}
			stdin.Close()
		}
	}
	err = cmd.Wait()
	transcript := out.String()
	if err != nil {
		t.Fatalf("the walk-through failed: %v\nstdout:\n%s\nstderr:\n%s", err, transcript, stderr.String())
	}

	for _, want := range []string{
		`"email":"` + adminEmail + `","role":"super_admin"`, // signed in
		"event: delta", "event: done", // the run streamed
		`title: "Composting in three sentences"`, "Compost turns kitchen scraps into soil.", // the Astro file
		`"input_tokens":31,"output_tokens":6`, // and its cost was counted
		"signed out",
	} {
		if !strings.Contains(transcript, want) {
			t.Errorf("the transcript lacks %q:\n%s", want, transcript)
		}
	}
	if n := len(regexp.MustCompile(`(?m)^[0-9a-z]{4,6}-[0-9a-z]{4,6}$`).FindAllString(transcript, -1)); n != 10 {
		t.Errorf("%d recovery codes printed, want 10:\n%s", n, transcript)
	}
	// 2FA is on for real: a sign-in without a code is refused.
	resp, raw := do(t, "POST", base+"/api/auth/login", "", strings.NewReader(`{"email":"`+adminEmail+`","password":"`+adminPass+`"}`), "application/json")
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(raw), "two-factor code is required") {
		t.Errorf("sign-in without a code after the walk-through: %d %s", resp.StatusCode, raw)
	}
	if _, err := os.Stat(filepath.Join(blog, "src", "content", "blog", "composting-in-three-sentences.md")); err != nil {
		t.Errorf("the Astro post's file: %v", err)
	}
	if backups, _ := filepath.Glob(filepath.Join(dir, "backups", "copydesk-*.db")); len(backups) != 1 {
		t.Errorf("backups after the walk-through: %v, want one", backups)
	}
}
