package server_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/copydesk/copydesk/server"
	"github.com/copydesk/copydesk/server/agent"
	"github.com/copydesk/copydesk/server/metrics"
	"github.com/copydesk/copydesk/store"
)

// Tests of the Prometheus metrics (serve --metrics, docs/metrics.md): off
// by default, the bearer token, the private listener, and the counters
// after a mixed workload, compared before and after (never timed).

const mxToken = "metrics-token-for-tests-0123456789"

func withMetrics(token string) envOption {
	return func(c *server.Config) { c.Metrics, c.MetricsToken = true, token }
}

// mxScrape reads /metrics through the router with the token and parses
// it into series → value.
func mxScrape(t *testing.T, e *env) map[string]float64 {
	t.Helper()
	r := e.do(t, "GET", "/metrics", mxToken, nil)
	if r.Code != 200 {
		t.Fatalf("GET /metrics: %d %s", r.Code, r.Body)
	}
	if ct := r.Header.Get("Content-Type"); ct != metrics.ContentType {
		t.Errorf("content type %q, want %q", ct, metrics.ContentType)
	}
	return mxParse(t, r.Body)
}

// mxParse reads the samples of the text format: each line that is not a
// comment is a series and a value.
func mxParse(t *testing.T, text string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			t.Fatalf("not a sample: %q", line)
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("sample %q: %v", line, err)
		}
		if _, dup := out[line[:i]]; dup {
			t.Errorf("series %s appears twice", line[:i])
		}
		out[line[:i]] = v
	}
	return out
}

func TestMetricsOffByDefault(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, tok := range []string{"", mxToken} {
		if r := e.do(t, "GET", "/metrics", tok, nil); r.Code != 404 {
			t.Errorf("GET /metrics without --metrics (token %q): %d, want 404", tok, r.Code)
		}
	}
	if e.app.Metrics != nil {
		t.Error("a registry was made without --metrics")
	}
}

func TestMetricsToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withMetrics(mxToken))
	for _, c := range []struct{ name, header string }{
		{"no header", ""},
		{"wrong token", "Bearer " + mxToken + "x"},
		{"a prefix of the token", "Bearer " + mxToken[:10]},
		{"empty token", "Bearer "},
		{"another scheme", "Basic " + mxToken},
	} {
		req := httptest.NewRequest("GET", "/metrics", nil)
		if c.header != "" {
			req.Header.Set("Authorization", c.header)
		}
		r := e.send(t, req)
		if r.Code != 401 || !strings.Contains(r.Detail(), "--metrics-token") || r.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("%s: %d %v %s", c.name, r.Code, r.Header, r.Body)
		}
		if strings.Contains(r.Body, "go_goroutines") {
			t.Errorf("%s: metrics were sent", c.name)
		}
	}
	// A user's access token is not the metrics token.
	_, userTok := e.user(t, "root", "super_admin")
	if r := e.do(t, "GET", "/metrics", userTok, nil); r.Code != 401 {
		t.Errorf("a super_admin's access token: %d, want 401", r.Code)
	}
	m := mxScrape(t, e)
	for _, s := range []string{"go_goroutines", "process_cpu_seconds_total", metrics.Series(metrics.DBConnectionsMax, "pool", "writer")} {
		if _, ok := m[s]; !ok {
			t.Errorf("no %s in the metrics", s)
		}
	}
	if m[metrics.Series(metrics.DBConnectionsMax, "pool", "writer")] != 1 {
		t.Errorf("writer pool max: %v, want 1", m[metrics.Series(metrics.DBConnectionsMax, "pool", "writer")])
	}
	if r := e.do(t, "HEAD", "/metrics", mxToken, nil); r.Code != 200 || r.Body != "" {
		t.Errorf("HEAD /metrics: %d %q", r.Code, r.Body)
	}
}

// mxWorkload is a mixed workload: health checks, an unknown route, an
// agent that does not exist, and an agent run (a job whose model call
// goes to a local OpenAI stand-in), waited for to its job's end.
func mxWorkload(t *testing.T, f *agFixture) (runJobKind string) {
	t.Helper()
	e := f.e
	for range 3 {
		if r := e.do(t, "GET", "/api/health", "", nil); r.Code != 200 {
			t.Fatalf("health: %d", r.Code)
		}
	}
	if r := e.do(t, "GET", "/api/no-such-thing", f.edATok, nil); r.Code != 404 {
		t.Fatalf("unknown route: %d", r.Code)
	}
	if r := e.do(t, "GET", "/api/agents/987654", f.edATok, nil); r.Code != 404 {
		t.Fatalf("unknown agent: %d", r.Code)
	}
	if r := e.do(t, "BREW", "/api/health", "", nil); r.Code != 405 && r.Code != 404 {
		t.Fatalf("BREW: %d", r.Code)
	}
	ag := agCreate(t, e, f.edATok, map[string]any{"environment_id": f.envA, "name": "Metered", "kind": "writer", "system_prompt": "Write."})
	run := agExecute(t, e, f.edATok, agID(ag), map[string]any{"input": "Tea"})
	if job := agWaitJob(t, e, agID(run)); job.Status != "succeeded" {
		t.Fatalf("the run's job: %s %s", job.Status, job.LastError)
	}
	return agent.RunJob
}

func mxSetup(t *testing.T) *agFixture {
	t.Helper()
	f := agSetup(t, withMetrics(mxToken))
	fake := fakeOpenAI(t, func(n int, req map[string]any) (int, string) { return 200, "Tea is a drink." })
	agConfigure(t, f.e, fake.URL+"/v1")
	agRunJobs(t, f.e)
	return f
}

func TestMetricsMoveWithTheWorkload(t *testing.T) {
	t.Parallel()
	f := mxSetup(t)
	e := f.e
	before := mxScrape(t, e)
	kind := mxWorkload(t, f)
	// The job's attempt is counted once its outcome is recorded, a moment
	// after the job's row says so.
	attempts := metrics.Series(metrics.JobAttempts, "kind", kind, "outcome", "succeeded")
	var after map[string]float64
	agWaitFor(t, "the attempt counted", func() bool {
		after = mxScrape(t, e)
		return after[attempts] > before[attempts]
	})

	model := []string{"provider", "openai", "model", "gpt-4o-mini", "source", "execution"}
	lbl := func(extra ...string) []string { return append(append([]string(nil), model...), extra...) }
	for _, c := range []struct {
		series string
		delta  float64
	}{
		{metrics.Series(metrics.HTTPRequests, "route", "/api/health", "method", "GET", "status", "200"), 3},
		{metrics.Series(metrics.HTTPRequestDuration+"_count", "route", "/api/health", "method", "GET"), 3},
		{metrics.Series(metrics.HTTPRequests, "route", "unmatched", "method", "GET", "status", "404"), 1},
		{metrics.Series(metrics.HTTPRequests, "route", "/api/agents/:id", "method", "GET", "status", "404"), 1},
		{metrics.Series(metrics.HTTPRequests, "route", "/api/agents", "method", "POST", "status", "201"), 1},
		{metrics.Series(metrics.HTTPRequests, "route", "/api/agents/:id/execute", "method", "POST", "status", "202"), 1},
		{attempts, 1},
		{metrics.Series(metrics.JobAttemptDuration+"_count", "kind", kind), 1},
		{metrics.Series(metrics.ModelCalls, lbl("status", "ok")...), 1},
		// The stand-in reports 1000 input and 500 output tokens.
		{metrics.Series(metrics.ModelTokens, lbl("type", "input")...), 1000},
		{metrics.Series(metrics.ModelTokens, lbl("type", "output")...), 500},
	} {
		if got := after[c.series] - before[c.series]; got != c.delta {
			t.Errorf("%s moved by %v, want %v", c.series, got, c.delta)
		}
	}
	// gpt-4o-mini: 800 input at $0.15, 200 cached at $0.075, 500 output
	// at $0.60 per million.
	cost := metrics.Series(metrics.ModelCost, model...)
	if got, want := after[cost]-before[cost], (800*0.15+200*0.075+500*0.60)/1e6; got < want*0.999 || got > want*1.001 {
		t.Errorf("%s moved by %v, want %v", cost, got, want)
	}
	// The unknown method is one label value, whatever was sent.
	other := 0.0
	for s, v := range after {
		if strings.HasPrefix(s, metrics.HTTPRequests+"{") && strings.Contains(s, `method="other"`) {
			other += v
		}
		if strings.Contains(s, "987654") || strings.Contains(s, "BREW") || strings.Contains(s, "no-such-thing") {
			t.Errorf("a raw path or method is a label value: %s", s)
		}
	}
	if other != 1 {
		t.Errorf("requests with an unknown method: %v, want 1", other)
	}
	// The queue's gauges are there for every registered kind, the run's
	// included, and nothing is waiting now.
	for _, name := range []string{metrics.JobsQueued, metrics.JobsRunning, metrics.JobsScheduled, metrics.JobsOldestAge} {
		s := metrics.Series(name, "kind", kind)
		if v, ok := after[s]; !ok || v != 0 {
			t.Errorf("%s: %v (present %v), want 0", s, v, ok)
		}
	}
	// The writer was used; its waits are a counter that exists.
	if _, ok := after[metrics.DBWriteLockWaits]; !ok {
		t.Errorf("no %s", metrics.DBWriteLockWaits)
	}
	if after[metrics.Series(metrics.DBConnectionsOpen, "pool", "writer")] != 1 {
		t.Errorf("writer connections open: %v", after[metrics.Series(metrics.DBConnectionsOpen, "pool", "writer")])
	}
}

// A queued job that nobody runs shows in the depth and the age of the
// oldest, by the store's clock.
func TestMetricsJobQueue(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withMetrics(mxToken))
	ctx := context.Background()
	job := store.NewJob{Kind: agent.RunJob, Payload: map[string]int{"run_id": 1}}
	if _, err := e.app.DB.EnqueueJob(ctx, job); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(90 * time.Second)
	if _, err := e.app.DB.EnqueueJob(ctx, job); err != nil {
		t.Fatal(err)
	}
	job.RunAfter = e.clock.Now().Add(time.Hour) // a retry's backoff: not a backlog
	if _, err := e.app.DB.EnqueueJob(ctx, job); err != nil {
		t.Fatal(err)
	}
	m := mxScrape(t, e)
	if got := m[metrics.Series(metrics.JobsQueued, "kind", agent.RunJob)]; got != 2 {
		t.Errorf("queued %s: %v, want 2", agent.RunJob, got)
	}
	if got := m[metrics.Series(metrics.JobsScheduled, "kind", agent.RunJob)]; got != 1 {
		t.Errorf("scheduled %s: %v, want 1", agent.RunJob, got)
	}
	if got := m[metrics.Series(metrics.JobsOldestAge, "kind", agent.RunJob)]; got != 90 {
		t.Errorf("oldest queued %s: %v s, want 90", agent.RunJob, got)
	}
}

// The stream gauge counts an open event stream until it ends.
func TestMetricsEventStreams(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withMetrics(mxToken))
	e.app.DB.Now = func() time.Time { return time.Now().UTC() }
	srv := httptest.NewServer(e.h)
	defer srv.Close()
	_, tok := e.user(t, "alice", "viewer")
	open := metrics.Series(metrics.EventStreams, "route", "/api/notifications/stream")
	s := openStream(t, srv.URL+"/api/notifications/stream", tok)
	agWaitFor(t, "the stream counted", func() bool { return mxScrape(t, e)[open] == 1 })
	s.resp.Body.Close()
	agWaitFor(t, "the stream's end counted", func() bool { return mxScrape(t, e)[open] == 0 })
	m := mxScrape(t, e)
	if _, ok := m[metrics.Series(metrics.HTTPRequestDuration+"_count", "route", "/api/notifications/stream", "method", "GET")]; ok {
		t.Error("an event stream is in the duration histogram")
	}
	if m[metrics.Series(metrics.HTTPRequests, "route", "/api/notifications/stream", "method", "GET", "status", "200")] != 1 {
		t.Error("the event stream's request is not counted")
	}
}

// --metrics-http: the private listener answers /metrics without a token,
// nothing else, and stops with the server; the API's listener has no
// /metrics without a token set.
func TestMetricsPrivateListener(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(c *server.Config) { c.Metrics, c.MetricsListener = true, l })
	stop := serveApp(t, e)
	base := "http://" + l.Addr().String()
	get := func(url string) (int, string) {
		t.Helper()
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get(base + "/metrics"); code != 200 || !strings.Contains(body, "# TYPE go_goroutines gauge") {
		t.Errorf("private /metrics: %d %s", code, truncate(body, 300))
	}
	if code, _ := get(base + "/api/health"); code != 404 {
		t.Errorf("the private listener served /api/health: %d", code)
	}
	if code, _ := get("http://" + e.app.Addr() + "/metrics"); code != 404 {
		t.Errorf("the API's listener served /metrics without a token configured: %d", code)
	}
	if !stop("stop") {
		return
	}
	if c, err := net.DialTimeout("tcp", l.Addr().String(), time.Second); err == nil {
		c.Close()
		t.Error("the metrics listener is still open after the server stopped")
	}
}

// promtool (Debian's prometheus package; .ci/run installs it) lints the
// whole answer after a mixed workload: names, types, HELP texts, suffixes.
func TestMetricsPassPromtool(t *testing.T) {
	t.Parallel()
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool is not on PATH (apt-get install prometheus): the metrics' lint is not checked")
	}
	f := mxSetup(t)
	mxWorkload(t, f)
	srv := httptest.NewServer(f.e.h)
	defer srv.Close()
	s := openStream(t, srv.URL+"/api/notifications/stream", f.viewATok)
	defer s.resp.Body.Close()
	r := f.e.do(t, "GET", "/metrics", mxToken, nil)
	if r.Code != 200 {
		t.Fatalf("GET /metrics: %d", r.Code)
	}
	path := filepath.Join(t.TempDir(), "metrics.txt")
	if err := os.WriteFile(path, []byte(r.Body), 0o600); err != nil {
		t.Fatal(err)
	}
	in, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = in
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	} else {
		t.Logf("promtool check metrics: %s", fmt.Sprint(strings.TrimSpace(string(out))))
	}
}
