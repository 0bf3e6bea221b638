// Package clustertest starts copydesk instances as real processes sharing
// one PostgreSQL database, for the tests of what several instances do
// together: a job taken over when its instance dies, recurring work firing
// once per slot, events and revocations crossing instances.
//
// The binary is built once per test process (Binary). Each test gets a
// database of its own (storetest.NewPostgres) and skips, saying why, when
// COPYDESK_TEST_DATABASE is unset.
//
//	c := clustertest.New(t, clustertest.Options{Args: []string{"--lease", "2s"}})
//	a, b := c.Start(t), c.Start(t)
//	... a.URL, b.URL ...
//	a.Kill() // kill -9
package clustertest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/copydesk/copydesk/store/storetest"
)

var (
	buildOnce sync.Once
	buildPath string
	buildErr  error
)

// Binary returns the path of a copydesk binary built from this module, once
// per test process (in a temporary folder removed when the process exits
// is not possible from a test helper: it is left in os.TempDir's
// copydesk-clustertest-* folder, a few tens of megabytes).
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		out, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			buildErr = fmt.Errorf("go env GOMOD: %w", err)
			return
		}
		root := filepath.Dir(strings.TrimSpace(string(out)))
		dir, err := os.MkdirTemp("", "copydesk-clustertest-")
		if err != nil {
			buildErr = err
			return
		}
		buildPath = filepath.Join(dir, "copydesk")
		cmd := exec.Command("go", "build", "-o", buildPath, ".")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, b)
		}
	})
	if buildErr != nil {
		t.Fatalf("clustertest: %v", buildErr)
	}
	return buildPath
}

// Options tunes a Cluster.
type Options struct {
	// Args are added to every instance's `copydesk serve` (e.g. "--lease",
	// "2s").
	Args []string
	// Env is added to every instance's environment ("NAME=value").
	Env []string
}

// Cluster is one installation: a PostgreSQL database and a secret key that
// its instances share.
type Cluster struct {
	Database  string // postgres://... of the test's own database
	SecretKey string
	bin       string
	opt       Options
	n         int
}

// New makes a cluster's database and key; it skips the test when
// COPYDESK_TEST_DATABASE is unset.
func New(t testing.TB, opt Options) *Cluster {
	t.Helper()
	storetest.RequirePostgres(t)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	return &Cluster{Database: storetest.NewPostgres(t), SecretKey: hex.EncodeToString(key), bin: Binary(t), opt: opt}
}

// Instance is one running `copydesk serve`.
type Instance struct {
	Name string // "a", "b", ...
	URL  string // http://127.0.0.1:PORT
	cmd  *exec.Cmd
	log  *syncBuffer
	done chan struct{}
}

// Start starts one more instance, with its own data directory, and waits
// until it answers /api/health; it is stopped when the test ends, and its
// log is printed if the test failed.
func (c *Cluster) Start(t testing.TB, args ...string) *Instance {
	t.Helper()
	name := string(rune('a' + c.n))
	c.n++
	addr := freeAddr(t)
	all := append([]string{"serve", "--database", c.Database, "--data-dir", t.TempDir(), "--http", addr}, c.opt.Args...)
	all = append(all, args...)
	in := &Instance{Name: name, URL: "http://" + addr, log: &syncBuffer{}, done: make(chan struct{})}
	in.cmd = exec.Command(c.bin, all...)
	in.cmd.Env = append(append(os.Environ(), "COPYDESK_SECRET_KEY="+c.SecretKey), c.opt.Env...)
	in.cmd.Stdout, in.cmd.Stderr = in.log, in.log
	if err := in.cmd.Start(); err != nil {
		t.Fatalf("clustertest: start instance %s: %v", name, err)
	}
	go func() { _ = in.cmd.Wait(); close(in.done) }()
	t.Cleanup(func() {
		in.Stop()
		if t.Failed() {
			t.Logf("instance %s log:\n%s", name, in.Log())
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(in.URL + "/api/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return in
			}
		}
		select {
		case <-in.done:
			t.Fatalf("clustertest: instance %s exited while starting:\n%s", name, in.Log())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("clustertest: instance %s did not answer /api/health within 30s:\n%s", name, in.Log())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Kill kills the instance with SIGKILL (kill -9) and waits until it is gone.
func (in *Instance) Kill() {
	_ = in.cmd.Process.Signal(syscall.SIGKILL)
	<-in.done
}

// Stop stops the instance as an operator would (SIGTERM), killing it after
// 10 s; stopping a stopped instance does nothing.
func (in *Instance) Stop() {
	select {
	case <-in.done:
		return
	default:
	}
	_ = in.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-in.done:
	case <-time.After(10 * time.Second):
		in.Kill()
	}
}

// Exited waits at most d for the instance to end on its own, and reports
// whether it did.
func (in *Instance) Exited(d time.Duration) bool {
	select {
	case <-in.done:
		return true
	case <-time.After(d):
		return false
	}
}

// Log is what the instance wrote so far (stdout and stderr).
func (in *Instance) Log() string { return in.log.String() }

// WaitLog waits until the instance's log holds s, at most d; it reports
// whether it did.
func (in *Instance) WaitLog(ctx context.Context, s string, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if strings.Contains(in.Log(), s) {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return strings.Contains(in.Log(), s)
}

// freeAddr is a loopback address with a port free a moment ago.
func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("clustertest: %v", err)
	}
	defer l.Close()
	return l.Addr().String()
}

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
