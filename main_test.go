package main

// End-to-end tests of the real binary: TestMain builds copydesk once with
// CGO_ENABLED=0, and every test runs it with os/exec against its own data
// directory and loopback port, talking to it over real HTTP.

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/copydesk/copydesk/store"
)

// binPath is the binary TestMain builds.
var binPath string

// The version and commit TestMain stamps the binary with, as make does.
const (
	buildinfoPkg = "github.com/copydesk/copydesk/internal/buildinfo"
	e2eVersion   = "v0.0.0-e2e"
	e2eCommit    = "0123456789abcdef0123456789abcdef01234567"
)

func TestMain(m *testing.M) {
	os.Exit(buildAndRun(m))
}

func buildAndRun(m *testing.M) int {
	dir, err := os.MkdirTemp("", "copydesk-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: temp dir:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	binPath = filepath.Join(dir, "copydesk")
	gocmd := "go"
	if p, err := exec.LookPath("go"); err == nil {
		gocmd = p
	}
	// The release build's tags and stamp (Makefile BUILDFLAGS), so that
	// what is measured here (TestStartupInitBudget, TestVersionFastPath)
	// is what users run.
	build := exec.Command(gocmd, "build", "-tags", "nomsgpack", "-ldflags",
		"-X "+buildinfoPkg+".version="+e2eVersion+" -X "+buildinfoPkg+".commit="+e2eCommit, "-o", binPath, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: go build failed: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// Generous bounds: only for waiting, never asserted as performance.
const (
	startTimeout = 15 * time.Second
	stopTimeout  = 15 * time.Second
	cmdTimeout   = 60 * time.Second
)

const (
	adminEmail = "a@example.com"
	adminPass  = "correct horse battery"
)

// ---- child processes ----

// childEnv is the parent's environment without any COPYDESK_* variable
// (so COPYDESK_SECRET_KEY is unset unless a test sets it), plus extra.
func childEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "COPYDESK_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// run runs a one-shot command with stdin and returns its output and exit code.
func run(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runEnv(t, nil, stdin, args...)
}

func runEnv(t *testing.T, env []string, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, binPath, args...)
	cmd.Dir = t.TempDir() // a stray default ./copydesk_data lands here, not in the repository
	cmd.Env = childEnv(env...)
	cmd.Stdin = strings.NewReader(stdin)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("copydesk %s: did not finish within %s\nstderr:\n%s", strings.Join(args, " "), cmdTimeout, e.String())
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("copydesk %s: %v", strings.Join(args, " "), err)
	}
	return o.String(), e.String(), cmd.ProcessState.ExitCode()
}

// mustRun runs a command that must succeed and returns its standard output.
func mustRun(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	out, errOut, code := run(t, stdin, args...)
	if code != 0 {
		t.Fatalf("copydesk %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// createUser makes an account with `users create`.
func createUser(t *testing.T, dataDir, email, username, role, password string) {
	t.Helper()
	out := mustRun(t, password+"\n", "users", "create", "--init", "--data-dir", dataDir, "--email", email,
		"--username", username, "--role", role, "--password-stdin")
	if want := fmt.Sprintf("%s (%s)", email, role); !strings.Contains(out, want) {
		t.Fatalf("users create: stdout %q does not mention %q", out, want)
	}
}

// syncBuffer is a bytes.Buffer the exec copier goroutine and the test can
// share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// proc is a running `copydesk serve`.
type proc struct {
	t       *testing.T
	cmd     *exec.Cmd
	base    string
	stdout  syncBuffer
	stderr  syncBuffer
	done    chan struct{}
	waitErr error
}

// stderrHas waits a little for s to show up on the process's stderr: the
// output reaches the buffer through a pipe and a copying goroutine, so a
// line written before the server answered may land after the answer.
func (p *proc) stderrHas(s string) bool {
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if strings.Contains(p.stderr.String(), s) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// freeAddr returns a loopback address nothing listens on right now.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// startServer runs `serve --http <free port> --data-dir dataDir extraArgs...`
// with env added to the child's environment, waits until /api/health answers
// 200 and returns the base URL and the process; the process is killed at
// the end of the test if it still runs. p.stop ends it with a signal.
func startServer(t *testing.T, dataDir string, extraArgs []string, env ...string) (string, *proc) {
	t.Helper()
	addr := freeAddr(t)
	args := append([]string{"serve", "--http", addr, "--data-dir", dataDir}, extraArgs...)
	p := launch(t, "http://"+addr, args, env)
	return p.base, p
}

// launch starts the binary with args and env and waits for base to be healthy.
func launch(t *testing.T, base string, args, env []string) *proc {
	t.Helper()
	cmd := exec.Command(binPath, args...)
	cmd.Dir = t.TempDir()
	cmd.Env = childEnv(env...)
	p := &proc{t: t, cmd: cmd, base: base, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = &p.stdout, &p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start copydesk: %v", err)
	}
	go func() { p.waitErr = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("copydesk %s\nstderr:\n%s", strings.Join(args, " "), p.stderr.String())
		}
	})
	deadline := time.Now().Add(startTimeout)
	for {
		select {
		case <-p.done:
			t.Fatalf("copydesk serve exited before it was healthy (exit %d)\nstderr:\n%s",
				cmd.ProcessState.ExitCode(), p.stderr.String())
		default:
		}
		if resp, err := healthClient.Get(base + "/api/health"); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("copydesk serve was not healthy at %s within %s\nstderr:\n%s", base, startTimeout, p.stderr.String())
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// stop sends sig, waits for the process to exit and returns its exit code.
func (p *proc) stop(sig os.Signal) int {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatalf("signal %v: %v", sig, err)
	}
	select {
	case <-p.done:
	case <-time.After(stopTimeout):
		p.t.Fatalf("copydesk serve did not exit within %s of %v\nstderr:\n%s", stopTimeout, sig, p.stderr.String())
	}
	return p.cmd.ProcessState.ExitCode()
}

// ---- HTTP ----

var (
	client       = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 4}}
	healthClient = &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
)

// do sends a request and returns the response (body closed) and its body.
func do(t *testing.T, method, url, token string, body io.Reader, contentType string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, url, err)
	}
	return resp, b
}

// httpJSON sends body (nil, raw []byte or string, an io.Reader, or a value
// to encode as JSON) and decodes the JSON object it gets back.
func httpJSON(t *testing.T, method, url, token string, body any) (int, map[string]any) {
	t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		r = bytes.NewReader(b)
	case string:
		r = strings.NewReader(b)
	case io.Reader:
		r = b
	default:
		enc, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		r = bytes.NewReader(enc)
	}
	ct := ""
	if r != nil {
		ct = "application/json"
	}
	resp, raw := do(t, method, url, token, r, ct)
	if len(raw) == 0 {
		return resp.StatusCode, nil
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "application/json" {
		t.Errorf("%s %s: Content-Type %q, want application/json", method, url, resp.Header.Get("Content-Type"))
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%s %s: status %d, body is not a JSON object: %v\n%.500s", method, url, resp.StatusCode, err, raw)
	}
	return resp.StatusCode, m
}

// wantError checks an error answer: the status and a body of exactly
// {"detail": "<non-empty text>"}. It returns the detail.
func wantError(t *testing.T, what string, status int, body map[string]any, want int) string {
	t.Helper()
	if status != want {
		t.Errorf("%s: status %d, want %d (body %v)", what, status, want, body)
	}
	d, ok := body["detail"].(string)
	if len(body) != 1 || !ok || d == "" {
		t.Errorf("%s: body %v, want exactly {\"detail\": \"...\"}", what, body)
	}
	return d
}

// wantData checks a success answer in the {"data","message"} envelope and
// returns data as an object.
func wantData(t *testing.T, what string, status int, body map[string]any, want int) map[string]any {
	t.Helper()
	if status != want {
		t.Fatalf("%s: status %d, want %d (body %v)", what, status, want, body)
	}
	if _, ok := body["message"].(string); len(body) != 2 || !ok {
		t.Errorf("%s: body keys %v, want exactly data and message", what, keys(body))
	}
	data, ok := body["data"].(map[string]any)
	if !ok {
		t.Fatalf("%s: data is %T, want an object", what, body["data"])
	}
	return data
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func loginBody(email, password string) map[string]string {
	return map[string]string{"email": email, "password": password}
}

// login signs in and returns the token and the whole bare response.
func login(t *testing.T, base, email, password string) (string, map[string]any) {
	t.Helper()
	status, body := httpJSON(t, "POST", base+"/api/auth/login", "", loginBody(email, password))
	if status != http.StatusOK {
		t.Fatalf("login %s: status %d, body %v", email, status, body)
	}
	tok, _ := body["access_token"].(string)
	if tok == "" {
		t.Fatalf("login %s: no access_token in %v", email, body)
	}
	return tok, body
}

func fileMode(t *testing.T, path string) fs.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatalf("stat: %v", err)
	}
	return fi.Mode().Perm()
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func hint(dataDir string) string {
	return binPath + " users create --data-dir " + dataDir +
		" --email you@example.com --username admin --role super_admin --password-stdin"
}

// ---- tests ----

func TestFirstStartCreatesDataDirAndKeys(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	base, p := startServer(t, dir, nil)

	if m := fileMode(t, dir); m&0o077 != 0 {
		t.Errorf("data dir mode %v: others can read it", m)
	}
	for _, name := range []string{"copydesk.db", "secret.key"} {
		if m := fileMode(t, filepath.Join(dir, name)); m != 0o600 {
			t.Errorf("%s mode %v, want 0600", name, m)
		}
	}
	if key, err := os.ReadFile(filepath.Join(dir, "secret.key")); err != nil || len(bytes.TrimSpace(key)) < 32 {
		t.Errorf("secret.key holds %d bytes (err %v), want at least 32", len(bytes.TrimSpace(key)), err)
	}
	if !p.stderrHas(hint(dir)) {
		t.Errorf("stderr does not hold the hint %q:\n%s", hint(dir), p.stderr.String())
	}

	resp, raw := do(t, "GET", base+"/api/health", "", nil, "")
	var health struct {
		Data struct {
			Status        string `json:"status"`
			SchemaVersion int    `json:"schema_version"`
		} `json:"data"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(raw, &health); err != nil || resp.StatusCode != 200 || health.Data.Status != "ok" || health.Data.SchemaVersion < 1 {
		t.Errorf("health: status %d body %s (err %v)", resp.StatusCode, raw, err)
	}
	if got := resp.Header.Get("X-Content-Type-Options"); got != "nosniff" {
		t.Errorf("X-Content-Type-Options %q, want nosniff", got)
	}
}

func TestUsersCommands(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")

	// Refusals that need no hashing.
	if _, errOut, code := run(t, adminPass+"\n", "users", "create", "--init", "--data-dir", dir, "--email", adminEmail, "--username", "admin"); code == 0 || !strings.Contains(errOut, "--password-stdin") {
		t.Errorf("create without --password-stdin: exit %d, stderr %q", code, errOut)
	}
	if _, errOut, code := run(t, "", "users", "create", "--init", "--data-dir", dir, "--email", adminEmail, "--username", "admin", "--password-stdin"); code == 0 || !strings.Contains(errOut, "no password") {
		t.Errorf("create with empty stdin: exit %d, stderr %q", code, errOut)
	}
	_, errOut, code := run(t, "short7!\n", "users", "create", "--init", "--data-dir", dir, "--email", adminEmail,
		"--username", "admin", "--role", "super_admin", "--password-stdin")
	if code == 0 || !strings.Contains(errOut, "password: must be at least 8 characters") {
		t.Errorf("weak password: exit %d, stderr %q; want non-zero and the 8-character rule", code, errOut)
	}
	if _, errOut, code := run(t, adminPass+"\n", "users", "create", "--init", "--data-dir", dir, "--email", "x@example.com",
		"--username", "xuser", "--role", "emperor", "--password-stdin"); code == 0 || !strings.Contains(errOut, "role") {
		t.Errorf("unknown role: exit %d, stderr %q", code, errOut)
	}

	// Before serving.
	createUser(t, dir, adminEmail, "admin", "super_admin", adminPass)
	_, errOut, code = run(t, "another password\n", "users", "create", "--data-dir", dir, "--email", adminEmail,
		"--username", "admin2", "--role", "viewer", "--password-stdin")
	if code == 0 || !strings.Contains(errOut, "already exists") {
		t.Errorf("duplicate e-mail: exit %d, stderr %q", code, errOut)
	}

	// While serving: the server sees the new account at once.
	base, p := startServer(t, dir, nil)
	// The hint would come before this line.
	if !p.stderrHas("copydesk is serving") {
		t.Errorf("no serving line:\n%s", p.stderr.String())
	}
	if strings.Contains(p.stderr.String(), "There is no super_admin") {
		t.Errorf("serve printed the no-super_admin hint although one exists:\n%s", p.stderr.String())
	}
	createUser(t, dir, "e@example.com", "editor1", "editor", "editor password")
	_, errOut, code = run(t, "another password\n", "users", "create", "--data-dir", dir, "--email", "E@Example.com",
		"--username", "editor2", "--role", "viewer", "--password-stdin")
	if code == 0 || !strings.Contains(errOut, "already exists") {
		t.Errorf("duplicate e-mail (other case) while serving: exit %d, stderr %q", code, errOut)
	}
	_, body := login(t, base, "e@example.com", "editor password")
	if u, _ := body["user"].(map[string]any); u["role"] != "editor" {
		t.Errorf("user created while serving: login user %v, want role editor", u)
	}

	out := mustRun(t, "", "users", "list", "--data-dir", dir)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "ID") {
		t.Fatalf("users list: want a header and 2 rows, got:\n%s", out)
	}
	for i, want := range [][]string{{"1", adminEmail, "admin", "super_admin", "true"}, {"2", "e@example.com", "editor1", "editor", "true"}} {
		if got := strings.Fields(lines[i+1]); len(got) < 5 || strings.Join(got[:5], " ") != strings.Join(want, " ") {
			t.Errorf("users list row %d: %q, want it to start with %q", i+1, lines[i+1], strings.Join(want, " "))
		}
	}
}

func TestHTTPAuthAndErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	createUser(t, dir, adminEmail, "admin", "super_admin", adminPass)
	base, _ := startServer(t, dir, nil)

	tok, body := login(t, base, adminEmail, adminPass)
	if body["token_type"] != "bearer" {
		t.Errorf("token_type %v, want bearer", body["token_type"])
	}
	if _, enveloped := body["data"]; enveloped {
		t.Errorf("login answer is enveloped; want the bare token object: %v", body)
	}
	u, ok := body["user"].(map[string]any)
	if !ok {
		t.Fatalf("login: user is %T", body["user"])
	}
	for _, k := range []string{"id", "email", "username", "role", "is_active"} {
		if _, ok := u[k]; !ok {
			t.Errorf("login user has no %q: %v", k, u)
		}
	}
	if u["email"] != adminEmail || u["username"] != "admin" || u["role"] != "super_admin" || u["is_active"] != true {
		t.Errorf("login user %v", u)
	}
	if id, _ := u["id"].(float64); id < 1 {
		t.Errorf("login user id %v", u["id"])
	}
	if _, ok := u["password_hash"]; ok {
		t.Errorf("login user leaks password_hash")
	}

	status, me := httpJSON(t, "GET", base+"/api/auth/me", tok, nil)
	data := wantData(t, "GET /api/auth/me", status, me, 200)
	if data["email"] != adminEmail || data["id"] != u["id"] || data["role"] != "super_admin" {
		t.Errorf("me: %v", data)
	}

	resp, raw := do(t, "GET", base+"/api/auth/me", "", nil, "")
	var noTok map[string]any
	_ = json.Unmarshal(raw, &noTok)
	wantError(t, "me without a token", resp.StatusCode, noTok, 401)
	if !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
		t.Errorf("401 without WWW-Authenticate: Bearer (got %q)", resp.Header.Get("WWW-Authenticate"))
	}
	status, body = httpJSON(t, "GET", base+"/api/auth/me", "not-a-jwt", nil)
	wantError(t, "me with a garbage token", status, body, 401)

	status, body = httpJSON(t, "GET", base+"/api/no/such/route", "", nil)
	wantError(t, "unknown route", status, body, 404)
	status, body = httpJSON(t, "GET", base+"/api/auth/login", "", nil)
	wantError(t, "GET on a POST route", status, body, 405)
	status, body = httpJSON(t, "DELETE", base+"/api/auth/me", tok, nil)
	wantError(t, "DELETE /api/auth/me", status, body, 405)

	status, body = httpJSON(t, "POST", base+"/api/auth/login", "", `{"email": "a@example.com", "password": `)
	wantError(t, "truncated JSON", status, body, 400)
	status, body = httpJSON(t, "POST", base+"/api/auth/login", "", `{email: nope}`)
	wantError(t, "malformed JSON", status, body, 400)
	status, body = httpJSON(t, "POST", base+"/api/auth/login", "", `[1, 2]`)
	wantError(t, "JSON array", status, body, 400)
	status, body = httpJSON(t, "POST", base+"/api/auth/login", "", map[string]string{"email": adminEmail})
	if d := wantError(t, "missing password", status, body, 422); !strings.Contains(d, "password") {
		t.Errorf("missing password: detail %q does not name the field", d)
	}
	status, body = httpJSON(t, "POST", base+"/api/auth/login", "", map[string]string{"email": adminEmail, "password": adminPass, "pasword": "x"})
	if d := wantError(t, "unknown field", status, body, 422); !strings.Contains(d, "pasword") {
		t.Errorf("unknown field: detail %q does not name it", d)
	}

	// Over 1 MiB: once with a Content-Length, once chunked (no length).
	big := append([]byte(`{"email": "`), bytes.Repeat([]byte("a"), 1<<20+16)...)
	big = append(big, `", "password": "x"}`...)
	status, body = httpJSON(t, "POST", base+"/api/auth/login", "", big)
	wantError(t, "1 MiB body with Content-Length", status, body, 413)
	status, body = httpJSON(t, "POST", base+"/api/auth/login", "", io.MultiReader(bytes.NewReader(big)))
	wantError(t, "1 MiB chunked body", status, body, 413)

	// The server is still fine after all that.
	status, me = httpJSON(t, "GET", base+"/api/auth/me", tok, nil)
	wantData(t, "me after errors", status, me, 200)
}

func TestSetPasswordWhileServingEndsSessions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	createUser(t, dir, adminEmail, "admin", "super_admin", adminPass)
	base, _ := startServer(t, dir, nil)

	tok, _ := login(t, base, adminEmail, adminPass)
	status, body := httpJSON(t, "GET", base+"/api/auth/me", tok, nil)
	wantData(t, "me before set-password", status, body, 200)

	_, errOut, code := run(t, "short\n", "users", "set-password", "--data-dir", dir, "--email", adminEmail, "--password-stdin")
	if code == 0 || !strings.Contains(errOut, "at least 8 characters") {
		t.Errorf("set-password with a weak password: exit %d, stderr %q", code, errOut)
	}
	_, errOut, code = run(t, "a new password\n", "users", "set-password", "--data-dir", dir, "--email", "nobody@example.com", "--password-stdin")
	if code == 0 || !strings.Contains(errOut, "not found") {
		t.Errorf("set-password for an unknown e-mail: exit %d, stderr %q", code, errOut)
	}
	// A failed set-password ends nothing.
	status, body = httpJSON(t, "GET", base+"/api/auth/me", tok, nil)
	wantData(t, "me after failed set-password", status, body, 200)

	const newPass = "a brand new password"
	out := mustRun(t, newPass+"\n", "users", "set-password", "--data-dir", dir, "--email", adminEmail, "--password-stdin")
	if !strings.Contains(out, "sessions were ended") {
		t.Errorf("set-password stdout %q", out)
	}

	status, body = httpJSON(t, "GET", base+"/api/auth/me", tok, nil)
	wantError(t, "old token after set-password", status, body, 401)

	tok2, _ := login(t, base, adminEmail, newPass)
	status, body = httpJSON(t, "GET", base+"/api/auth/me", tok2, nil)
	wantData(t, "me with the new token", status, body, 200)

	status, body = httpJSON(t, "POST", base+"/api/auth/login", "", loginBody(adminEmail, adminPass))
	wantError(t, "login with the old password", status, body, 401)
}

// srcAttr finds src and href attribute values in HTML.
var srcAttr = regexp.MustCompile(`(?i)\b(?:src|href|spec-url)\s*=\s*["']([^"']*)["']`)

func TestDocsServedLocally(t *testing.T) {
	t.Parallel()
	base, p := startServer(t, t.TempDir(), nil)
	// A first start's hint ends in the browser, at the console's address.
	if want := "Then open " + base + "/ in a browser and sign in."; !p.stderrHas(want) {
		t.Errorf("serve's first-start hint lacks %q:\n%s", want, p.stderr.String())
	}

	resp, raw := do(t, "GET", base+"/openapi.json", "", nil, "")
	if resp.StatusCode != 200 {
		t.Fatalf("/openapi.json: status %d", resp.StatusCode)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "application/json" {
		t.Errorf("/openapi.json Content-Type %q", resp.Header.Get("Content-Type"))
	}
	var doc struct {
		OpenAPI string                    `json:"openapi"`
		Paths   map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("/openapi.json is not valid JSON: %v", err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Errorf("openapi %q, want 3.x", doc.OpenAPI)
	}
	if _, ok := doc.Paths["/api/auth/login"]["post"]; !ok {
		t.Errorf("paths has no POST /api/auth/login (paths: %d)", len(doc.Paths))
	}

	assets := map[string]string{
		"/docs":  "/docs/assets/swagger-ui/swagger-ui-bundle.js",
		"/redoc": "/redoc/assets/redoc/redoc.standalone.js",
	}
	for page, script := range assets {
		resp, raw := do(t, "GET", base+page, "", nil, "")
		html := string(raw)
		if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); resp.StatusCode != 200 || mt != "text/html" {
			t.Errorf("%s: status %d, Content-Type %q", page, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		if !strings.Contains(html, script) {
			t.Errorf("%s does not load %s", page, script)
		}
		refs := srcAttr.FindAllStringSubmatch(html, -1)
		if len(refs) == 0 {
			t.Errorf("%s references no assets", page)
		}
		for _, m := range refs {
			ref := m[1]
			if strings.HasPrefix(ref, "data:") {
				continue
			}
			if !strings.HasPrefix(ref, "/") || strings.HasPrefix(ref, "//") {
				t.Errorf("%s references %q: want only local absolute paths (no CDN)", page, ref)
				continue
			}
			if r, _ := do(t, "GET", base+ref, "", nil, ""); r.StatusCode != 200 {
				t.Errorf("%s references %s, which answers %d", page, ref, r.StatusCode)
			}
		}
		for _, m := range regexp.MustCompile(`(?i)<(?:script|link)\b[^>]*>`).FindAllString(html, -1) {
			if strings.Contains(m, "http://") || strings.Contains(m, "https://") {
				t.Errorf("%s loads from the network: %s", page, m)
			}
		}
	}
	for _, script := range assets {
		resp, raw := do(t, "GET", base+script, "", nil, "")
		mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
		if resp.StatusCode != 200 || (mt != "text/javascript" && mt != "application/javascript") || len(raw) < 1000 {
			t.Errorf("%s: status %d, Content-Type %q, %d bytes", script, resp.StatusCode, resp.Header.Get("Content-Type"), len(raw))
		}
	}

	noRedirect := &http.Client{Timeout: 10 * time.Second, Transport: client.Transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	r, err := noRedirect.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(r.Body)
	r.Body.Close()
	// / is the web console (server/console.go); the docs stay where they are.
	if r.StatusCode != http.StatusOK || !strings.Contains(string(page), `<div id="app">`) ||
		!strings.Contains(r.Header.Get("Content-Security-Policy"), "script-src 'self'") {
		t.Errorf("GET /: status %d CSP %q, want the console's page", r.StatusCode, r.Header.Get("Content-Security-Policy"))
	}
	status, body := httpJSON(t, "GET", base+"/docs/assets/no-such-file.js", "", nil)
	if status != 404 {
		t.Errorf("missing asset: status %d body %v", status, body)
	}
}

func TestEnvironmentVariables(t *testing.T) {
	t.Parallel()
	root := t.TempDir()

	t.Run("env alone", func(t *testing.T) {
		dir := filepath.Join(root, "from-env")
		addr := freeAddr(t)
		p := launch(t, "http://"+addr, []string{"serve"}, []string{"COPYDESK_HTTP=" + addr, "COPYDESK_DATA_DIR=" + dir})
		if !exists(filepath.Join(dir, "copydesk.db")) || !exists(filepath.Join(dir, "secret.key")) {
			t.Errorf("COPYDESK_DATA_DIR %s: no copydesk.db / secret.key there", dir)
		}
		if !p.stderrHas(hint(dir)) {
			t.Errorf("hint does not name the data dir from COPYDESK_DATA_DIR:\n%s", p.stderr.String())
		}
		if code := p.stop(syscall.SIGTERM); code != 0 {
			t.Errorf("exit %d after SIGTERM", code)
		}
		// One-shot commands read it too.
		env := []string{"COPYDESK_DATA_DIR=" + dir}
		if out, errOut, code := runEnv(t, env, adminPass+"\n", "users", "create", "--email", adminEmail, "--username", "admin", "--role", "super_admin", "--password-stdin"); code != 0 {
			t.Fatalf("users create with COPYDESK_DATA_DIR: exit %d\n%s%s", code, out, errOut)
		}
		if out := mustRun(t, "", "users", "list", "--data-dir", dir); !strings.Contains(out, adminEmail) {
			t.Errorf("users list: %s", out)
		}
	})

	t.Run("flags win", func(t *testing.T) {
		envDir := filepath.Join(root, "env-loses")
		flagDir := filepath.Join(root, "flag-wins")
		envAddr, flagAddr := freeAddr(t), freeAddr(t)
		env := []string{"COPYDESK_HTTP=" + envAddr, "COPYDESK_DATA_DIR=" + envDir}
		// Healthy at the flag's address, so --http won.
		p := launch(t, "http://"+flagAddr, []string{"serve", "--http", flagAddr, "--data-dir", flagDir}, env)
		if !exists(filepath.Join(flagDir, "copydesk.db")) {
			t.Errorf("--data-dir %s not used", flagDir)
		}
		if exists(envDir) {
			t.Errorf("COPYDESK_DATA_DIR %s was created although --data-dir was given", envDir)
		}
		p.stop(syscall.SIGTERM)
	})

	t.Run("bad value", func(t *testing.T) {
		_, errOut, code := runEnv(t, []string{"COPYDESK_TOKEN_TTL=soon", "COPYDESK_HTTP=" + freeAddr(t)}, "", "serve", "--data-dir", filepath.Join(root, "bad"))
		if code == 0 || !strings.Contains(errOut, "COPYDESK_TOKEN_TTL") {
			t.Errorf("bad COPYDESK_TOKEN_TTL: exit %d, stderr %q", code, errOut)
		}
	})
}

func TestGracefulShutdown(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	createUser(t, dir, adminEmail, "admin", "super_admin", adminPass)

	base, p := startServer(t, dir, nil)
	tok, _ := login(t, base, adminEmail, adminPass)
	if code := p.stop(syscall.SIGTERM); code != 0 {
		t.Errorf("exit status %d after SIGTERM, want 0\nstderr:\n%s", code, p.stderr.String())
	}
	if errOut := p.stderr.String(); !strings.Contains(errOut, "shutting down") {
		t.Errorf("no shutdown line in the log after SIGTERM:\n%s", errOut)
	} else if lines := strings.Split(strings.TrimSpace(errOut), "\n"); !strings.Contains(lines[len(lines)-1], "msg=stopped") {
		t.Errorf("the log does not end with stopped after SIGTERM:\n%s", errOut)
	}
	walClean(t, dir)

	// The database opens again; the account and its session survived (same secret.key).
	base, p = startServer(t, dir, nil)
	status, body := httpJSON(t, "GET", base+"/api/auth/me", tok, nil)
	wantData(t, "token from before the restart", status, body, 200)
	tok2, _ := login(t, base, adminEmail, adminPass)
	status, body = httpJSON(t, "GET", base+"/api/auth/me", tok2, nil)
	wantData(t, "me after restart", status, body, 200)
	if code := p.stop(os.Interrupt); code != 0 {
		t.Errorf("exit status %d after SIGINT, want 0\nstderr:\n%s", code, p.stderr.String())
	}
	if errOut := p.stderr.String(); !strings.Contains(errOut, "shutting down") {
		t.Errorf("no shutdown line in the log after SIGINT:\n%s", errOut)
	}
	walClean(t, dir)

	if out := mustRun(t, "", "users", "list", "--data-dir", dir); !strings.Contains(out, adminEmail) {
		t.Errorf("users list after shutdown: %s", out)
	}
}

// TestShutdownFinishesInFlightRequest holds a request open inside its
// handler (the body is half sent), sends SIGTERM, and checks that the server
// stops accepting, still answers that request, and then exits 0.
func TestShutdownFinishesInFlightRequest(t *testing.T) {
	t.Parallel()
	base, p := startServer(t, t.TempDir(), nil)
	addr := strings.TrimPrefix(base, "http://")

	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(cmdTimeout))
	body := `{"email": "a@example.com"}`
	// Expect: 100-continue makes the server say when the handler starts
	// reading the body, so we know the request is in flight.
	fmt.Fprintf(conn, "POST /api/auth/login HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"+
		"Expect: 100-continue\r\nContent-Length: %d\r\n\r\n", addr, len(body))
	br := bufio.NewReader(conn)
	req, _ := http.NewRequest("POST", base+"/api/auth/login", nil)
	cont, err := http.ReadResponse(br, req)
	if err != nil || cont.StatusCode != http.StatusContinue {
		t.Fatalf("want 100 Continue, got %v (err %v)", cont, err)
	}
	io.WriteString(conn, body[:10])

	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// New connections are refused once the listener is closed.
	deadline := time.Now().Add(stopTimeout)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			break
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatalf("still accepting connections %s after SIGTERM", stopTimeout)
		}
		time.Sleep(25 * time.Millisecond)
	}
	select {
	case <-p.done:
		t.Fatalf("exited (status %d) with a request in flight\nstderr:\n%s", p.cmd.ProcessState.ExitCode(), p.stderr.String())
	default:
	}

	io.WriteString(conn, body[10:])
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		t.Fatalf("in-flight request got no answer: %v", err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	if d := wantError(t, "in-flight login without password", resp.StatusCode, m, 422); !strings.Contains(d, "password") {
		t.Errorf("detail %q", d)
	}

	select {
	case <-p.done:
	case <-time.After(stopTimeout):
		t.Fatalf("did not exit within %s after the in-flight request finished", stopTimeout)
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit status %d, want 0\nstderr:\n%s", code, p.stderr.String())
	}
	if !strings.Contains(p.stderr.String(), "shutting down") {
		t.Errorf("no shutdown line:\n%s", p.stderr.String())
	}
}

// walClean checks that a clean shutdown left the database file complete: no
// write-ahead log with content beside it.
func walClean(t *testing.T, dir string) {
	t.Helper()
	if fi, err := os.Stat(filepath.Join(dir, "copydesk.db-wal")); err == nil && fi.Size() > 0 {
		t.Errorf("copydesk.db-wal holds %d bytes after a clean shutdown", fi.Size())
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	want := fmt.Sprintf("copydesk %s\ncommit %s\n%s %s/%s\nschema %d\n",
		e2eVersion, e2eCommit, runtime.Version(), runtime.GOOS, runtime.GOARCH, store.SchemaVersion())
	// `version` alone is answered before the program initialises
	// (internal/buildinfo); `version --` goes through the command line
	// parser. Both must say the same.
	for _, args := range [][]string{{"version"}, {"version", "--"}, {"--version"}} {
		if out := mustRun(t, "", args...); out != want {
			t.Errorf("copydesk %s:\n%s\nwant:\n%s", strings.Join(args, " "), out, want)
		}
	}
}

// A flag a command does not know is named, with where to look: the
// subcommands of a command that has them, else the command's help.
func TestUnknownFlagSaysWhereToLook(t *testing.T) {
	t.Parallel()
	_, errOut, code := run(t, "", "users", "--data-dir", t.TempDir())
	if code == 0 || !strings.Contains(errOut, "unknown flag: --data-dir") ||
		!strings.Contains(errOut, `"copydesk users" takes its flags after a subcommand`) ||
		!strings.Contains(errOut, "copydesk users list") || !strings.Contains(errOut, "copydesk users create") {
		t.Fatalf("users --data-dir: exit %d\n%s", code, errOut)
	}
	_, errOut, code = run(t, "", "serve", "--no-such-flag")
	if code == 0 || !strings.Contains(errOut, "unknown flag: --no-such-flag") || !strings.Contains(errOut, "Run 'copydesk serve --help'") {
		t.Fatalf("serve --no-such-flag: exit %d\n%s", code, errOut)
	}
	if out := mustRun(t, "", "backup", "--help"); !strings.Contains(out, "Examples:") {
		t.Fatalf("backup --help has no examples:\n%s", out)
	}
}

var pubKeyLine = regexp.MustCompile(`(?m)^public key: (\S+)$`)

func keygen(t *testing.T, out string) string {
	t.Helper()
	stdout := mustRun(t, "", "license", "keygen", "--out", out)
	m := pubKeyLine.FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("license keygen printed no public key:\n%s", stdout)
	}
	return m[1]
}

func issue(t *testing.T, privKey string) string {
	t.Helper()
	key := strings.TrimSpace(mustRun(t, "", "license", "issue", "--private-key", privKey,
		"--licensee", "Acme", "--plan", "team", "--seats", "3", "--days", "30"))
	if !strings.HasPrefix(key, "CDL1.") || strings.ContainsAny(key, " \n") {
		t.Fatalf("license issue printed %q, want one key starting with CDL1.", key)
	}
	return key
}

func TestLicense(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pemPath := filepath.Join(dir, "k.pem")
	pub := keygen(t, pemPath)
	if m := fileMode(t, pemPath); m != 0o600 {
		t.Errorf("private key mode %v, want 0600", m)
	}
	if _, errOut, code := run(t, "", "license", "keygen", "--out", pemPath); code == 0 {
		t.Errorf("keygen over an existing file succeeded (stderr %q)", errOut)
	}
	key := issue(t, pemPath)
	otherPEM := filepath.Join(dir, "other.pem")
	keygen(t, otherPEM)
	foreignKey := issue(t, otherPEM)

	createUser(t, dir, adminEmail, "admin", "super_admin", adminPass)
	createUser(t, dir, "v@example.com", "viewer1", "viewer", "viewer password")
	base, _ := startServer(t, dir, []string{"--license-public-key", pub})
	adminTok, _ := login(t, base, adminEmail, adminPass)
	viewerTok, _ := login(t, base, "v@example.com", "viewer password")

	status, body := httpJSON(t, "GET", base+"/api/auth/license", adminTok, nil)
	if d := wantData(t, "license before activation", status, body, 200); d["state"] != "inactive" {
		t.Errorf("license before activation: %v", d)
	}

	status, body = httpJSON(t, "POST", base+"/api/auth/license/activate", adminTok, map[string]string{"license_key": key})
	checkActive := func(what string, d map[string]any) {
		t.Helper()
		if d["state"] != "active" || d["plan"] != "team" || d["seats"] != float64(3) || d["licensee"] != "Acme" {
			t.Errorf("%s: %v, want state active, plan team, seats 3, licensee Acme", what, d)
		}
		if kid, _ := d["key_id"].(string); !strings.HasPrefix(kid, "lic_") {
			t.Errorf("%s: key_id %v", what, d["key_id"])
		}
		if exp, _ := d["expires_at"].(string); exp == "" {
			t.Errorf("%s: no expires_at for a --days license", what)
		} else if at, err := time.Parse(time.RFC3339, exp); err != nil || at.Before(time.Now().Add(29*24*time.Hour)) || at.After(time.Now().Add(31*24*time.Hour)) {
			t.Errorf("%s: expires_at %s, want about 30 days from now", what, exp)
		}
	}
	checkActive("activate", wantData(t, "activate", status, body, 200))
	status, body = httpJSON(t, "GET", base+"/api/auth/license", adminTok, nil)
	checkActive("GET license", wantData(t, "GET license", status, body, 200))
	// Activating the same key again on the same account is not a conflict.
	status, body = httpJSON(t, "POST", base+"/api/auth/license/activate", adminTok, map[string]string{"license_key": key})
	checkActive("activate again", wantData(t, "activate again", status, body, 200))

	status, body = httpJSON(t, "POST", base+"/api/auth/license/activate", viewerTok, map[string]string{"license_key": key})
	wantError(t, "same key on a second account", status, body, 409)
	status, body = httpJSON(t, "POST", base+"/api/auth/license/activate", viewerTok, map[string]string{"license_key": foreignKey})
	if d := wantError(t, "key signed by another key", status, body, 422); !strings.Contains(d, "license_key") {
		t.Errorf("foreign key: detail %q does not name license_key", d)
	}
	status, body = httpJSON(t, "POST", base+"/api/auth/license/activate", viewerTok, map[string]string{"license_key": "CDL1.garbage.garbage"})
	wantError(t, "garbage key", status, body, 422)
	status, body = httpJSON(t, "GET", base+"/api/auth/license", viewerTok, nil)
	if d := wantData(t, "viewer license", status, body, 200); d["state"] != "inactive" {
		t.Errorf("viewer license after refused activations: %v", d)
	}

	// Once freed on the first account, the key moves.
	status, body = httpJSON(t, "POST", base+"/api/auth/license/deactivate", adminTok, nil)
	if d := wantData(t, "deactivate", status, body, 200); d["state"] != "inactive" {
		t.Errorf("deactivate: %v", d)
	}
	status, body = httpJSON(t, "POST", base+"/api/auth/license/activate", viewerTok, map[string]string{"license_key": key})
	checkActive("activate on the second account", wantData(t, "activate on the second account", status, body, 200))
}

func TestSecretKeyFromEnvironment(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	secret := "COPYDESK_SECRET_KEY=" + strings.Repeat("0123456789abcdef", 3) // 48 characters
	startServer(t, dir, nil, secret)
	if !exists(filepath.Join(dir, "copydesk.db")) {
		t.Errorf("no copydesk.db in %s", dir)
	}
	if exists(filepath.Join(dir, "secret.key")) {
		t.Errorf("secret.key was created although COPYDESK_SECRET_KEY is set")
	}

	short := filepath.Join(t.TempDir(), "short")
	_, errOut, code := runEnv(t, []string{"COPYDESK_SECRET_KEY=too-short"}, "", "serve", "--http", freeAddr(t), "--data-dir", short)
	if code == 0 || !strings.Contains(errOut, "at least 32") {
		t.Errorf("short COPYDESK_SECRET_KEY: exit %d, stderr %q", code, errOut)
	}
	if exists(filepath.Join(short, "secret.key")) {
		t.Errorf("secret.key was created although COPYDESK_SECRET_KEY is set (too short)")
	}
}

// TestBackupAndRestoreCommands: `copydesk backup` works while serve runs,
// `copydesk restore` refuses while serve holds the data directory, and
// after a stop it restores: data from before the snapshot is back, data from
// after it is gone, and the safety snapshot holds the pre-restore state.
func TestBackupAndRestoreCommands(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	createUser(t, dir, adminEmail, "admin", "super_admin", adminPass)
	base, p := startServer(t, dir, nil)
	tok, _ := login(t, base, adminEmail, adminPass)
	status, body := httpJSON(t, "POST", base+"/api/environments", tok, map[string]any{"name": "Before"})
	wantData(t, "create Before", status, body, 201)

	snap := filepath.Join(t.TempDir(), "snap.db")
	out := mustRun(t, "", "backup", "--data-dir", dir, "--out", snap)
	if !strings.Contains(out, "sha256 ") || !exists(snap) || !exists(snap+".json") {
		t.Fatalf("backup --out: %s", out)
	}
	if out := mustRun(t, "", "backup", "--data-dir", dir); !strings.Contains(out, filepath.Join(dir, "backups")) {
		t.Fatalf("backup into the data dir: %s", out)
	}
	status, body = httpJSON(t, "POST", base+"/api/environments", tok, map[string]any{"name": "After"})
	wantData(t, "create After", status, body, 201)

	_, errOut, code := run(t, "", "restore", "--data-dir", dir, snap)
	if code == 0 || !strings.Contains(errOut, "in use") || !strings.Contains(errOut, "copydesk serve (pid") {
		t.Fatalf("restore while serving: exit %d: %s", code, errOut)
	}
	// The API lists the snapshot the CLI put in the data dir.
	status, body = httpJSON(t, "GET", base+"/api/backup", tok, nil)
	if d := wantData(t, "list backups", status, body, 200); d["total"].(float64) != 1 {
		t.Fatalf("backups listed: %v", d)
	} else if v := d["items"].([]any)[0].(map[string]any)["copydesk_version"]; v == "" || v == nil {
		// The sidecar of a snapshot the CLI wrote into the data dir names
		// the copydesk that took it, as --out and the API do.
		t.Fatalf("backup without --out recorded copydesk_version %q", v)
	}
	if code := p.stop(syscall.SIGTERM); code != 0 {
		t.Fatalf("stop: exit %d", code)
	}

	bad := filepath.Join(t.TempDir(), "bad.db")
	os.WriteFile(bad, []byte(strings.Repeat("junk", 100)), 0o600)
	if _, errOut, code := run(t, "", "restore", "--data-dir", dir, bad); code == 0 || !strings.Contains(errOut, "not a SQLite database") {
		t.Fatalf("restore of junk: exit %d: %s", code, errOut)
	}
	// A snapshot with a trigger added is not copydesk's schema.
	tampered := filepath.Join(t.TempDir(), "tampered.db")
	b, err := os.ReadFile(snap)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(tampered, b, 0o600)
	conn, err := sql.Open("sqlite", tampered)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(`CREATE TRIGGER promote AFTER INSERT ON sessions BEGIN UPDATE users SET role = 'super_admin' WHERE id = NEW.user_id; END`); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	if _, errOut, code := run(t, "", "restore", "--data-dir", dir, tampered); code == 0 || !strings.Contains(errOut, `unexpected trigger "promote" on sessions`) {
		t.Fatalf("restore of a snapshot with a trigger added: exit %d: %s", code, errOut)
	}
	out = mustRun(t, "", "restore", "--data-dir", dir, snap)
	if !strings.Contains(out, "pre-restore") {
		t.Fatalf("restore: %s", out)
	}
	safety := strings.TrimSpace(out[strings.LastIndex(out, " ")+1:])
	// A server killed mid-upload left a partial file.
	leftover := filepath.Join(dir, "backups", ".tmp-upload-42.db")
	os.WriteFile(leftover, []byte("SQLite format 3\x00"), 0o600)

	base, _ = startServer(t, dir, nil)
	if exists(leftover) {
		t.Fatal("the partial upload of an earlier run is still there")
	}
	// The session of the token taken before the snapshot is in the
	// snapshot, but the restore ended every session.
	if status, body := httpJSON(t, "GET", base+"/api/auth/me", tok, nil); status != 401 {
		t.Fatalf("a token from before the restore: %d %v", status, body)
	}
	tok, _ = login(t, base, adminEmail, adminPass)
	status, body = httpJSON(t, "GET", base+"/api/environments", tok, nil)
	d := wantData(t, "environments after restore", status, body, 200)
	if d["total"].(float64) != 1 || d["items"].([]any)[0].(map[string]any)["name"] != "Before" {
		t.Fatalf("after restore: %v", d)
	}
	status, body = httpJSON(t, "GET", base+"/api/backup/"+filepath.Base(safety), tok, nil)
	if d := wantData(t, "safety snapshot", status, body, 200); d["kind"] != "pre-restore" {
		t.Fatalf("safety snapshot: %v", d)
	}
}

// TestShutdownEndsEventStreams: an open notification stream neither keeps
// the server from stopping nor makes it wait for the shutdown timeout.
func TestShutdownEndsEventStreams(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	createUser(t, dir, adminEmail, "admin", "super_admin", adminPass)
	base, p := startServer(t, dir, []string{"--shutdown-timeout", "60s"})
	tok, _ := login(t, base, adminEmail, adminPass)
	req, _ := http.NewRequest("GET", base+"/api/notifications/stream", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	first := make([]byte, 64)
	if n, err := resp.Body.Read(first); err != nil || !strings.Contains(string(first[:n]), "connected") {
		t.Fatalf("stream start: %q %v", first[:n], err)
	}
	start := time.Now()
	if code := p.stop(syscall.SIGTERM); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Fatalf("shutdown waited %s for the open stream", d)
	}
	if _, err := io.ReadAll(resp.Body); err != nil && !strings.Contains(err.Error(), "EOF") {
		t.Logf("stream ended with %v", err)
	}
}

// A mistyped --data-dir is an error that names the path, never a new empty
// instance; serve binds its address before it creates anything.
func TestDataDirMistakes(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	typo := filepath.Join(root, "typo")
	empty := filepath.Join(root, "empty")
	if err := os.Mkdir(empty, 0o700); err != nil {
		t.Fatal(err)
	}
	refused := []struct {
		name  string
		stdin string
		args  []string
		want  string
	}{
		{"list on a missing dir", "", []string{"users", "list", "--data-dir", typo}, typo + " does not exist"},
		{"list on a dir without a database", "", []string{"users", "list", "--data-dir", empty}, empty + " holds no copydesk database"},
		{"unlock", "", []string{"users", "unlock", "--data-dir", typo, "--email", adminEmail}, typo + " does not exist"},
		{"set-password", adminPass + "\n", []string{"users", "set-password", "--data-dir", typo, "--email", adminEmail, "--password-stdin"}, typo + " does not exist"},
		{"backup", "", []string{"backup", "--data-dir", typo}, typo + " does not exist"},
		{"create elsewhere without --init", adminPass + "\n", []string{"users", "create", "--data-dir", typo, "--email", adminEmail, "--username", "admin", "--password-stdin"}, "add --init"},
		{"restore into a missing dir", "", []string{"restore", "--data-dir", typo, filepath.Join(root, "x.db")}, "copy the old instance's secret.key"},
		{"restore without the key", "", []string{"restore", "--data-dir", empty, filepath.Join(root, "x.db")}, "no secret.key"},
		{"serve --http with a port only", "", []string{"serve", "--data-dir", typo, "--http", "18204"}, "did you mean 127.0.0.1:18204"},
	}
	for _, tc := range refused {
		_, errOut, code := run(t, tc.stdin, tc.args...)
		if code == 0 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%s: exit %d, stderr %q; want non-zero and %q", tc.name, code, errOut, tc.want)
		}
		if exists(typo) {
			t.Fatalf("%s created %s", tc.name, typo)
		}
		if entries, _ := os.ReadDir(empty); len(entries) != 0 {
			t.Fatalf("%s wrote into %s: %v", tc.name, empty, entries)
		}
	}

	// A port in use: serve fails before it makes the data directory.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, errOut, code := run(t, "", "serve", "--data-dir", typo, "--http", l.Addr().String()); code == 0 || !strings.Contains(errOut, "listen on") {
		t.Errorf("serve on a busy port: exit %d, stderr %q", code, errOut)
	}
	if exists(typo) {
		t.Errorf("serve on a busy port created %s", typo)
	}

	// users create --init makes the instance, and says where.
	_, errOut, code := run(t, adminPass+"\n", "users", "create", "--init", "--data-dir", typo, "--email", adminEmail, "--username", "admin", "--password-stdin")
	if code != 0 || !strings.Contains(errOut, "creating a new copydesk instance in "+typo) {
		t.Errorf("create --init: exit %d, stderr %q", code, errOut)
	}
	if out := mustRun(t, "", "users", "list", "--data-dir", typo); !strings.Contains(out, adminEmail) {
		t.Errorf("users list after create --init: %s", out)
	}
}

// At the default path, users create prepares a fresh install without
// --init (the README's first steps), and says loudly where.
func TestUsersCreateAtTheDefaultPath(t *testing.T) {
	t.Parallel()
	cwd := t.TempDir()
	cmd := exec.Command(binPath, "users", "create", "--email", adminEmail, "--username", "admin", "--password-stdin")
	cmd.Dir, cmd.Env, cmd.Stdin = cwd, childEnv(), strings.NewReader(adminPass+"\n")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "creating a new copydesk instance in "+filepath.Join(cwd, "copydesk_data")) {
		t.Fatalf("users create at the default path: %v\n%s", err, out)
	}
	if !exists(filepath.Join(cwd, "copydesk_data", "copydesk.db")) {
		t.Error("no database at the default path")
	}
}

// The container image's health check: exit 0 against a healthy server,
// non-zero (with the address) when nothing answers; COPYDESK_HTTP is read
// as serve reads it, 0.0.0.0 asked on loopback.
func TestHealthcheckCommand(t *testing.T) {
	t.Parallel()
	base, _ := startServer(t, t.TempDir(), nil)
	addr := strings.TrimPrefix(base, "http://")
	if out := mustRun(t, "", "healthcheck", "--http", addr); !strings.Contains(out, `"status":"ok"`) {
		t.Errorf("healthcheck: %s", out)
	}
	_, port, _ := net.SplitHostPort(addr)
	if out, errOut, code := runEnv(t, []string{"COPYDESK_HTTP=0.0.0.0:" + port}, "", "healthcheck"); code != 0 {
		t.Errorf("healthcheck with COPYDESK_HTTP=0.0.0.0:%s: exit %d\n%s%s", port, code, out, errOut)
	}
	free := freeAddr(t)
	if _, errOut, code := run(t, "", "healthcheck", "--http", free, "--timeout", "2s"); code == 0 || !strings.Contains(errOut, free) {
		t.Errorf("healthcheck with nothing listening: exit %d, stderr %q", code, errOut)
	}
}
