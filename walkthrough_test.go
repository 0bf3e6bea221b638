package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"

	"github.com/copydesk/copydesk/server/publish/wordpress/wptest"
)

// noTestReasons are the only reasons a shell block of the README or the
// guide may give for not running in the walk-through (```sh no-test=REASON).
// Everything else runs, so nothing escapes by accident.
var noTestReasons = map[string]string{
	"serve":          "starts the server, which runs until stopped; the test starts the same binary itself",
	"install":        "installs software on the machine (Ollama, the binary, a systemd unit)",
	"release":        "needs the files of a release download",
	"slow":           "a build or benchmark that takes minutes",
	"docker":         "needs Docker",
	"node":           "needs Node and the network (npm create astro, astro build)",
	"real-wordpress": "brings up a real WordPress from Debian packages (root)",
	"stopped-server": "needs the server stopped (a restore from the shell); the test's server runs",
}

// shellLangs are fence languages that hold shell: only `sh` is allowed, so
// that every shell block is seen.
var shellLangs = map[string]bool{"sh": true, "bash": true, "shell": true, "console": true, "zsh": true}

var fenceRE = regexp.MustCompile("(?ms)^```([^\n`]*)\n(.*?)^```[ \t]*$")

// docBlocks returns the shell blocks of a Markdown page that run, in page
// order, and the reasons of those that do not; it fails on a shell block
// that is neither.
func docBlocks(t *testing.T, path string) (run []string, skipped []string) {
	t.Helper()
	page, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	run, skipped, problems := parseDocBlocks(string(page))
	for _, p := range problems {
		t.Errorf("%s: %s", path, p)
	}
	if len(run) == 0 {
		t.Errorf("%s has no shell block that runs", path)
	}
	return run, skipped
}

// parseDocBlocks splits a page's fenced blocks: the ```sh ones run, the
// ```sh no-test=REASON ones are skipped, and any other shell fence is a
// problem.
func parseDocBlocks(page string) (run, skipped, problems []string) {
	for _, m := range fenceRE.FindAllStringSubmatch(page, -1) {
		info, body := strings.Fields(m[1]), m[2]
		lang := ""
		if len(info) > 0 {
			lang = info[0]
		}
		switch {
		case lang == "":
			if strings.Contains(body, "curl ") || strings.Contains(body, "copydesk ") {
				problems = append(problems, "a shell block without a language; write ```sh (or ```sh no-test=REASON):\n"+body)
			}
			continue
		case !shellLangs[lang]:
			continue
		case lang != "sh":
			problems = append(problems, "a ```"+lang+" block; write ```sh so that the walk-through runs it:\n"+body)
			continue
		}
		if len(info) == 1 {
			run = append(run, body)
			continue
		}
		reason, ok := strings.CutPrefix(info[1], "no-test=")
		if _, known := noTestReasons[reason]; !ok || !known || len(info) > 2 {
			problems = append(problems, fmt.Sprintf("fence %q: the only mark is no-test=REASON, REASON one of %v", m[1], reasonNames()))
			continue
		}
		skipped = append(skipped, reason)
	}
	return run, skipped, problems
}

func reasonNames() []string {
	out := slices.Collect(maps.Keys(noTestReasons))
	slices.Sort(out)
	return out
}

// TestDocBlocksNothingEscapes: a shell block runs, or says why not with a
// reason from the list; anything else is a problem, not a silent skip.
func TestDocBlocksNothingEscapes(t *testing.T) {
	page := "```sh\necho one\n```\n" +
		"```sh no-test=docker\ndocker build .\n```\n" +
		"```sh no-test=flaky\ncurl -s x\n```\n" + // not a reason
		"```sh no-test\ncurl -s x\n```\n" + // no reason
		"```bash\ncurl -s x\n```\n" + // another shell
		"```\ncurl -s x\n```\n" + // unlabelled
		"```json\n{\"curl \": 1}\n```\n" + // not shell
		"```text\nevent: done\n```\n"
	run, skipped, problems := parseDocBlocks(page)
	if len(run) != 1 || run[0] != "echo one\n" {
		t.Errorf("run = %q", run)
	}
	if len(skipped) != 1 || skipped[0] != "docker" {
		t.Errorf("skipped = %q", skipped)
	}
	if len(problems) != 4 {
		t.Errorf("%d problems, want 4 (unknown reason, no reason, bash, unlabelled):\n%s", len(problems), strings.Join(problems, "\n"))
	}
}

// fakeOpenAI is an OpenAI-compatible server (as Ollama or vLLM are): the
// models list and chat completions, streamed with usage as the real API
// streams them. It answers in the form each caller asks for: an article
// (TITLE:/DESCRIPTION:/---), scout's JSON keywords, search queries one per
// line, or else a sentence.
func fakeOpenAI(t *testing.T, model string) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"object":"list","data":[{"id":%q,"object":"model","created":1731000000,"owned_by":"library"}]}`, model)
	})
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model    string `json:"model"`
			Stream   bool   `json:"stream"`
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model != model {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprintf(w, `{"error":{"message":"model %q not found","type":"invalid_request_error","code":"model_not_found"}}`, req.Model)
			return
		}
		var prompt strings.Builder
		for _, m := range req.Messages {
			prompt.WriteString(m.Content)
		}
		answer := "Compost turns kitchen scraps into soil."
		switch p := prompt.String(); {
		case strings.Contains(p, "TITLE:"):
			answer = "TITLE: Cold brew at home\nDESCRIPTION: A ratio, a jar and a night.\n---\n# Cold brew at home\n\n" + answer
		case strings.Contains(p, `{"keywords"`):
			answer = `{"keywords": [{"keyword": "cold brew ratio", "intent": ["informational"]}, ` +
				`{"keyword": "cold brew maker", "intent": ["commercial"]}, {"keyword": "cold brew concentrate recipe", "intent": ["informational"]}]}`
		case strings.Contains(p, "one query per line"):
			answer = "cold brew ratio\nhow long to steep cold brew"
		}
		words := strings.SplitAfter(answer, " ")
		if !req.Stream {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1731000000,"model":%q,`+
				`"choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],`+
				`"usage":{"prompt_tokens":31,"completion_tokens":6,"total_tokens":37}}`, model, answer)
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
			b, _ := json.Marshal(word)
			chunk(fmt.Sprintf(`{"content":%s}`, b), "")
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

// pageTimeout bounds one page's shell. A page takes 5 to 40 s when the
// pages run side by side on 2 cores, most of it starting curl and jq
// (about 150 of them on the longest page); a machine shared with other
// builds has made that 60 s.
const pageTimeout = 3 * time.Minute

// docEmail is the super_admin's address the pages use by default.
const docEmail = "you@example.com"

// docPage is one page the walk-through runs: its blocks in one bash, in a
// folder holding ./copydesk, against a server on ./copydesk_data.
type docPage struct {
	path string
	// user: the test creates the super_admin first (guide pages start
	// signed in from the README); the README creates it itself.
	user bool
	// astro: the server allows Astro projects under a folder, and BLOG is
	// a project there.
	astro bool
	// want: what the transcript must hold.
	want []string
	// check runs after the page, with its data directory and the blog.
	check func(t *testing.T, base, dataDir, blog string, transcript string)
}

// guidePages are the guide's pages, in the order the index lists them.
var guidePages = []docPage{
	{path: "docs/guide/api.md", user: true, want: []string{`"role":"super_admin"`, "signed out"}},
	{path: "docs/guide/wordpress.md", user: true, want: []string{`"remote_status":"draft"`, "future", `"sync_status":"synced"`}},
	{path: "docs/guide/astro.md", user: true, astro: true, want: []string{`title: "Q&A: Issue #42"`, `"applied"`}},
	{path: "docs/guide/keywords-and-campaigns.md", user: true, astro: true, want: []string{`"format":"semrush"`, "cold brew ratio", `"status":"active"`}},
	{path: "docs/guide/autopilot.md", user: true, astro: true, want: []string{`"state":"running"`, `"step":"publish"`}},
	{path: "docs/guide/chat-and-live.md", user: true, astro: true, want: []string{"event: done", `"role":"assistant"`, "event: snapshot"}},
	{path: "docs/guide/costs.md", user: true, want: []string{`"input_tokens":31`, "source,"}},
	{path: "docs/guide/backups.md", user: true, want: []string{`"ok":true`, "restored"}},
	{path: "docs/guide/operations.md", user: true, want: []string{"super_admin", "v0.0.0-e2e"}},
}

// TestREADMEWalkthrough runs every shell block of the README, then of
// each guide page, as written, one bash per page against the built binary,
// answering the prompts as a user would: the password, then codes from an
// authenticator app (TOTP computed here, as oathtool would).
func TestREADMEWalkthrough(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"bash", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("the walk-through needs %s (.ci/run installs it): %v", tool, err)
		}
	}
	const model = "qwen2.5:3b"
	llm := fakeOpenAI(t, model)
	wp := wptest.New()
	t.Cleanup(wp.Close)

	readme := docPage{path: "README.md", astro: true, want: []string{
		`"email":"` + docEmail + `","role":"super_admin"`,      // signed in
		`{"two_factor_enabled":true,"recovery_codes_left":10}`, // signed in again, with a code
		"event: delta", "event: done", // the run streamed
		`title: "Composting in three sentences"`, "Compost turns kitchen scraps into soil.", // the Astro file
		`"input_tokens":31,"output_tokens":6`, // and its cost was counted
		"\nsigned out\n",
	}, check: func(t *testing.T, base, dataDir, blog, transcript string) {
		if n := len(regexp.MustCompile(`(?m)^[0-9a-z]{4,6}-[0-9a-z]{4,6}$`).FindAllString(transcript, -1)); n != 10 {
			t.Errorf("%d recovery codes printed, want 10:\n%s", n, transcript)
		}
		// 2FA is on for real: a sign-in without a code is refused.
		resp, raw := do(t, "POST", base+"/api/auth/login", "", strings.NewReader(`{"email":"`+docEmail+`","password":"`+adminPass+`"}`), "application/json")
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(raw), "two-factor code is required") {
			t.Errorf("sign-in without a code after the walk-through: %d %s", resp.StatusCode, raw)
		}
		if _, err := os.Stat(filepath.Join(blog, "src", "content", "blog", "composting-in-three-sentences.md")); err != nil {
			t.Errorf("the Astro post's file: %v", err)
		}
		if backups, _ := filepath.Glob(filepath.Join(dataDir, "backups", "copydesk-*.db")); len(backups) != 1 {
			t.Errorf("backups after the walk-through: %v, want one", backups)
		}
	}}
	env := []string{"LLM_URL=" + llm.URL + "/v1", "MODEL=" + model,
		"COPYDESK_WP_URL=" + wp.URL, "COPYDESK_WP_USER=" + wp.User, "COPYDESK_WP_APP_PASSWORD=" + wp.Password}
	for _, page := range append([]docPage{readme}, guidePages...) {
		t.Run(strings.TrimSuffix(filepath.Base(page.path), ".md"), func(t *testing.T) {
			t.Parallel()
			runDocPage(t, page, env)
		})
	}
}

func runDocPage(t *testing.T, page docPage, env []string) {
	blocks, _ := docBlocks(t, page.path)
	if t.Failed() {
		return
	}
	// The page's shell: a folder holding ./copydesk, as `make build`
	// leaves it, and the data directory ./copydesk_data the commands
	// default to.
	work := t.TempDir()
	if err := os.Symlink(binPath, filepath.Join(work, "copydesk")); err != nil {
		t.Fatal(err)
	}
	dataDir := filepath.Join(work, "copydesk_data")
	if page.user {
		createUser(t, dataDir, docEmail, "admin", "super_admin", adminPass)
	}
	var args []string
	blog := ""
	if page.astro {
		// An Astro project as `npm create astro` makes it, under the
		// folder the server lets projects live in.
		sites := t.TempDir()
		blog = filepath.Join(sites, "blog")
		if err := os.MkdirAll(filepath.Join(blog, "src", "content", "blog"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(blog, "astro.config.mjs"), []byte("export default {}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		args = []string{"--astro-roots", sites}
		env = append(slices.Clone(env), "BLOG="+blog)
	}
	base, _ := startServer(t, dataDir, args)

	script := "set -euo pipefail\n" + strings.Join(blocks, "\n")
	ctx, cancel := context.WithTimeout(context.Background(), pageTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir = work
	cmd.Env = childEnv(append([]string{"BASE=" + base, "HOME=" + t.TempDir()}, env...)...)
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
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The password, and an empty code where a guide page asks for one
	// (2FA is off in its fresh data directory).
	answers := adminPass + "\n"
	if page.user {
		answers += "\n"
	}
	if _, err := io.WriteString(stdin, answers); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		out.WriteString(line + "\n")
		if key, ok := strings.CutPrefix(line, "authenticator key: "); ok {
			// The code the app shows now, then its next one (each
			// code is accepted once; the server accepts the next step).
			now := time.Now()
			for _, at := range []time.Time{now, now.Add(30 * time.Second)} {
				code, err := totp.GenerateCodeCustom(key, at, totp.ValidateOpts{Period: 30, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
				if err != nil {
					t.Fatalf("the printed key %q is not a TOTP secret: %v", key, err)
				}
				if _, err := io.WriteString(stdin, code+"\n"); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	stdin.Close()
	err = cmd.Wait()
	transcript := out.String()
	if err != nil {
		t.Fatalf("%s failed: %v\nstdout:\n%s\nstderr:\n%s", page.path, err, transcript, stderr.String())
	}
	t.Logf("%s: %d blocks in %s", page.path, len(blocks), time.Since(start).Round(time.Millisecond))
	if testing.Verbose() {
		t.Logf("transcript:\n%s", transcript)
	}
	for _, want := range page.want {
		if !strings.Contains(transcript, want) {
			t.Errorf("the transcript of %s lacks %q:\n%s\nstderr:\n%s", page.path, want, transcript, stderr.String())
		}
	}
	if page.check != nil {
		page.check(t, base, dataDir, blog, transcript)
	}
}

// TestGuideIndexListsEveryPage keeps the walk-through and the guide in
// step: every page in docs/guide is run, and the index links each.
func TestGuideIndexListsEveryPage(t *testing.T) {
	index, err := os.ReadFile("docs/guide/README.md")
	if err != nil {
		t.Fatal(err)
	}
	// The index is not run: it must hold no shell block.
	if run, skipped, problems := parseDocBlocks(string(index)); len(run)+len(skipped)+len(problems) != 0 {
		t.Errorf("docs/guide/README.md holds shell blocks, which the walk-through does not run: put them on a page")
	}
	files, _ := filepath.Glob("docs/guide/*.md")
	run := map[string]bool{}
	for _, p := range guidePages {
		run[p.path] = true
	}
	for _, f := range files {
		if filepath.Base(f) == "README.md" {
			continue
		}
		if !run[f] {
			t.Errorf("%s is not in guidePages: the walk-through does not run it", f)
		}
		if !strings.Contains(string(index), "("+filepath.Base(f)+")") {
			t.Errorf("docs/guide/README.md does not link %s", filepath.Base(f))
		}
	}
	if len(run) != len(files)-1 {
		t.Errorf("guidePages lists %d pages, docs/guide has %d", len(run), len(files)-1)
	}
}
