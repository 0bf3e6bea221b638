//go:build unix

package server_test

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
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/copydesk/copydesk/store"
)

// BenchmarkLiveWatchers: 200 watchers on one live session, over real HTTP
// through the router (an httptest server), while the job runner carries
// out a generation of 200 deltas that a local provider streams every
// 10 ms, about the pace of a fast model. Each delta carries the time the
// provider wrote it; each watcher notes when it read it.
//
// The watchers run in a child process (this test binary again, as
// TestLiveWatcherProcess), so that the CPU time measured here is the
// server's: the router, the engine reading the provider's stream, the
// broker and the 200 streams it writes (and the local provider, which
// only writes one chunk every 10 ms). It reports the delivery latency of
// a delta (p50, p99, max: from the provider's write to a watcher's read)
// and the server's CPU time per generation and as a share of one core.
//
//	go test -run '^$' -bench LiveWatchers -benchtime 3x ./server/
func BenchmarkLiveWatchers(b *testing.B) {
	const watchers, deltas, pace = 200, 200, 10 * time.Millisecond
	e := newEnv(b)
	e.app.DB.Now = func() time.Time { return time.Now().UTC() }
	ctx := context.Background()
	env, err := e.app.DB.CreateEnvironment(ctx, store.NewEnvironment{Name: "Bench", Slug: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	admin, tok := e.user(b, "bench", store.RoleAdmin)
	prov := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/chat/completions") {
			w.WriteHeader(404)
			return
		}
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := func(body string) {
			fmt.Fprintf(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o-mini\",%s}\n\n", body)
			w.(http.Flusher).Flush()
		}
		for range deltas {
			time.Sleep(pace)
			chunk(`"choices":[{"index":0,"delta":{"content":"` + strconv.FormatInt(time.Now().UnixNano(), 10) + ` "},"finish_reason":null}]`)
		}
		chunk(`"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]`)
		chunk(`"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":400,"total_tokens":412}`)
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	b.Cleanup(prov.Close)
	cred := e.credential(b, "openai", prov.URL+"/v1", "gpt-4o-mini", nil)
	if _, err := e.app.DB.PutAISettings(ctx, store.AISettings{CredentialID: &cred.ID}); err != nil {
		b.Fatal(err)
	}
	a, err := e.app.DB.CreateAgent(ctx, store.AgentInput{EnvironmentID: &env.ID, Name: "Writer", Kind: "writer", IsActive: true}, admin.ID)
	if err != nil {
		b.Fatal(err)
	}
	sess, err := e.app.DB.CreateLiveSession(ctx, store.NewLiveSession{EnvironmentID: env.ID, AgentID: a.ID, Title: "Bench"})
	if err != nil {
		b.Fatal(err)
	}
	runCtx, stopJobs := context.WithCancel(ctx)
	jobsDone := make(chan error, 1)
	go func() { jobsDone <- e.app.Jobs.Run(runCtx) }()
	b.Cleanup(func() { stopJobs(); <-jobsDone })
	srv := httptest.NewServer(e.h)
	b.Cleanup(srv.Close)

	child := exec.Command(os.Args[0], "-test.run=^TestLiveWatcherProcess$")
	child.Env = append(os.Environ(), fmt.Sprintf("COPYDESK_LIVE_WATCH=%s %s %d", srv.URL+fmt.Sprintf("/api/live-agents/sessions/%d/stream", sess.ID), tok, watchers))
	stdin, _ := child.StdinPipe()
	stdout, _ := child.StdoutPipe()
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { stdin.Close(); _ = child.Wait() })
	lines := bufio.NewScanner(stdout)
	lines.Buffer(make([]byte, 0, 1<<20), 64<<20)
	readLine := func() string {
		if !lines.Scan() {
			b.Fatalf("the watchers' process ended: %v", lines.Err())
		}
		return lines.Text()
	}
	for line := readLine(); line != "ready"; line = readLine() {
	}

	var all []int64
	var resyncs int
	var cpu, wall time.Duration
	b.ResetTimer()
	for range b.N {
		before, start := cpuTime(b), time.Now()
		r := e.do(b, "POST", fmt.Sprintf("/api/live-agents/sessions/%d/generate", sess.ID), tok, map[string]any{"prompt": "Go."})
		if r.Code != 202 {
			b.Fatalf("generate: %d %s", r.Code, r.Body)
		}
		var got watchReport
		if err := json.Unmarshal([]byte(readLine()), &got); err != nil {
			b.Fatal(err)
		}
		cpu += cpuTime(b) - before
		wall += time.Since(start)
		all, resyncs = append(all, got.Latencies...), resyncs+got.Resyncs
	}
	b.StopTimer()
	slices.Sort(all)
	at := func(q float64) float64 { return float64(all[int(q*float64(len(all)-1))]) / 1e6 }
	b.ReportMetric(at(0.50), "p50-ms")
	b.ReportMetric(at(0.99), "p99-ms")
	b.ReportMetric(at(1), "max-ms")
	b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "server-cpu-ms/op")
	b.ReportMetric(100*cpu.Seconds()/wall.Seconds(), "server-cpu-%")
	// A watcher that fell behind gets the text in a resync instead of
	// the deltas it missed, whose latency is then not measured.
	b.ReportMetric(float64(resyncs)/float64(b.N), "resyncs/op")
	b.ReportMetric(float64(len(all))/float64(b.N), "deltas-read/op")
}

// watchReport is what the watchers' process says of one generation.
type watchReport struct {
	Latencies []int64 `json:"latencies_ns"` // of every delta every watcher read
	Resyncs   int     `json:"resyncs"`
}

// cpuTime is the CPU time this process has used, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestLiveWatcherProcess is BenchmarkLiveWatchers' watchers, run in a
// process of their own: skipped unless COPYDESK_LIVE_WATCH says where
// ("URL TOKEN N"). It opens N streams, says "ready" once each has its
// snapshot, then for each generation prints, once every stream has its
// `done`, every delta's delivery latency (a watchReport, one JSON line).
// It ends when its standard input closes.
func TestLiveWatcherProcess(t *testing.T) {
	spec := os.Getenv("COPYDESK_LIVE_WATCH")
	if spec == "" {
		t.Skip("run by BenchmarkLiveWatchers")
	}
	var url, tok string
	var n int
	if _, err := fmt.Sscan(spec, &url, &tok, &n); err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n}}
	results := make(chan watchReport, n)
	var ready sync.WaitGroup
	ready.Add(n)
	for range n {
		req, _ := http.NewRequest("GET", url, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		res, err := client.Do(req)
		if err != nil || res.StatusCode != 200 {
			t.Fatalf("watch: %v %v", res, err)
		}
		go func() {
			defer res.Body.Close()
			sc := bufio.NewScanner(res.Body)
			sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
			var name string
			var mine watchReport
			for sc.Scan() {
				line := sc.Text()
				switch {
				case strings.HasPrefix(line, "event: "):
					name = strings.TrimPrefix(line, "event: ")
				case strings.HasPrefix(line, "data: ") && name == "snapshot":
					ready.Done()
				case strings.HasPrefix(line, "data: ") && name == "delta":
					now := time.Now().UnixNano()
					var d struct{ Text string }
					_ = json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &d)
					sent, _ := strconv.ParseInt(strings.TrimSpace(d.Text), 10, 64)
					mine.Latencies = append(mine.Latencies, now-sent)
				case strings.HasPrefix(line, "data: ") && name == "resync":
					mine.Resyncs++
				case strings.HasPrefix(line, "data: ") && name == "done":
					results <- mine
					mine = watchReport{}
				}
			}
		}()
	}
	ready.Wait()
	fmt.Println("ready")
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	for {
		var all watchReport
		for range n {
			r := <-results
			all.Latencies, all.Resyncs = append(all.Latencies, r.Latencies...), all.Resyncs+r.Resyncs
		}
		out, _ := json.Marshal(all)
		fmt.Println(string(out))
	}
}
