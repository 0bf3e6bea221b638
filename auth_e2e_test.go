package main

// End-to-end tests of account recovery from the shell and of the bound on
// password hashing, against the real binary (see main_test.go).

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"

	"github.com/copydesk/copydesk/server"
	"github.com/copydesk/copydesk/store"
)

// TestAccountRecoveryCommands: `users reset-2fa` and `users unlock` work on
// the data directory of a running server, which sees the change at once.
func TestAccountRecoveryCommands(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	createUser(t, dir, "lost@example.com", "lost", "viewer", "lost password")
	createUser(t, dir, "locked@example.com", "locked", "viewer", "locked password")
	base, _ := startServer(t, dir, nil)

	// lost@ turns 2FA on, then loses the authenticator.
	tok, _ := login(t, base, "lost@example.com", "lost password")
	status, body := httpJSON(t, "POST", base+"/api/auth/2fa/setup", tok, nil)
	secret, _ := wantData(t, "2fa setup", status, body, 200)["secret"].(string)
	code, err := totp.GenerateCodeCustom(secret, time.Now(), totp.ValidateOpts{Period: 30, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
	if err != nil {
		t.Fatal(err)
	}
	status, body = httpJSON(t, "POST", base+"/api/auth/2fa/verify", tok, map[string]string{"code": code, "current_password": "lost password"})
	wantData(t, "2fa verify", status, body, 200)
	status, body = httpJSON(t, "POST", base+"/api/auth/login", "", loginBody("lost@example.com", "lost password"))
	wantError(t, "login without a code", status, body, http.StatusUnauthorized)

	out := mustRun(t, "", "users", "reset-2fa", "--data-dir", dir, "--email", "LOST@example.com")
	if !strings.Contains(out, "two-factor authentication turned off") {
		t.Errorf("reset-2fa printed %q", out)
	}
	login(t, base, "lost@example.com", "lost password")
	if _, errOut, code := run(t, "", "users", "reset-2fa", "--data-dir", dir, "--email", "lost@example.com"); code == 0 || !strings.Contains(errOut, "not enabled") {
		t.Errorf("reset-2fa twice: exit %d, stderr %q", code, errOut)
	}
	if _, errOut, code := run(t, "", "users", "unlock", "--data-dir", dir, "--email", "nobody@example.com"); code == 0 || !strings.Contains(errOut, "not found") {
		t.Errorf("unlock of an unknown address: exit %d, stderr %q", code, errOut)
	}

	// locked@ is locked for an hour by someone guessing.
	lockAddress(t, dir, "locked@example.com")
	status, body = httpJSON(t, "POST", base+"/api/auth/login", "", loginBody("locked@example.com", "locked password"))
	wantError(t, "login while locked", status, body, http.StatusTooManyRequests)
	out = mustRun(t, "", "users", "unlock", "--data-dir", dir, "--email", "locked@example.com")
	if !strings.Contains(out, "sign-in unlocked") {
		t.Errorf("unlock printed %q", out)
	}
	login(t, base, "locked@example.com", "locked password")
}

// lockAddress writes the record of ten failed sign-ins and a lock that
// lasts an hour, as the server itself would, into the database of dir.
func lockAddress(t *testing.T, dir, email string) {
	t.Helper()
	db, err := store.Open(context.Background(), filepath.Join(dir, server.DBFile), store.Options{Announce: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	now := time.Now().UTC()
	until := now.Add(time.Hour)
	err = db.UpdateLoginFailures(context.Background(), email, func(store.LoginFailures) (store.LoginFailures, error) {
		return store.LoginFailures{Failures: 10, LastFailureAt: now, LockedUntil: &until}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestSignInFloodMemory drives the load of the review that ran the server
// out of memory: 400 sign-ins for addresses nobody has (which no
// per-address lock slows down), 200 at a time, each one an argon2id hash of
// 19 MiB. Unbounded, peak RSS went from 64 MiB to 3.7 GiB and /api/health
// took 4.7 s. With the bound on hashes at once, peak RSS stays under 400
// MiB, the requests beyond the bound get 503 with Retry-After, and health
// answers throughout.
func TestSignInFloodMemory(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads peak RSS from /proc")
	}
	const (
		signIns  = 400
		parallel = 200
		maxPeak  = 400 << 20
		// Health is polled all along; each answer must come within this.
		healthWithin = 2 * time.Second
	)
	base, p := startServer(t, filepath.Join(t.TempDir(), "data"), nil)
	pid := p.cmd.Process.Pid
	before := peakRSS(t, pid)

	stop := make(chan struct{})
	var healthWG sync.WaitGroup
	var slowest time.Duration
	var healthChecks int
	var healthErrs []string
	healthWG.Go(func() {
		hc := &http.Client{Timeout: healthWithin, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			start := time.Now()
			resp, err := hc.Get(base + "/api/health")
			took := time.Since(start)
			healthChecks++
			slowest = max(slowest, took)
			if err != nil {
				healthErrs = append(healthErrs, err.Error())
				continue
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				healthErrs = append(healthErrs, fmt.Sprintf("status %d after %s", resp.StatusCode, took))
			}
		}
	})

	flood := &http.Client{Timeout: time.Minute, Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: parallel}}
	jobs := make(chan int)
	var mu sync.Mutex
	statuses := map[int]int{}
	var problems []string
	var wg sync.WaitGroup
	for range parallel {
		wg.Go(func() {
			for i := range jobs {
				body, _ := json.Marshal(loginBody(fmt.Sprintf("nobody-%d@example.com", i), "not the password"))
				resp, err := flood.Post(base+"/api/auth/login", "application/json", bytes.NewReader(body))
				if err != nil {
					mu.Lock()
					problems = append(problems, err.Error())
					mu.Unlock()
					continue
				}
				var e struct {
					Detail string `json:"detail"`
				}
				decErr := json.NewDecoder(resp.Body).Decode(&e)
				resp.Body.Close()
				mu.Lock()
				statuses[resp.StatusCode]++
				switch {
				case resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusServiceUnavailable:
					problems = append(problems, fmt.Sprintf("status %d: %s", resp.StatusCode, e.Detail))
				case decErr != nil || e.Detail == "":
					problems = append(problems, fmt.Sprintf("status %d without a detail", resp.StatusCode))
				case resp.StatusCode == http.StatusServiceUnavailable:
					if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || s < 1 {
						problems = append(problems, fmt.Sprintf("503 with Retry-After %q", resp.Header.Get("Retry-After")))
					}
				}
				mu.Unlock()
			}
		})
	}
	start := time.Now()
	for i := range signIns {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	took := time.Since(start)
	close(stop)
	healthWG.Wait()
	peak := peakRSS(t, pid)

	t.Logf("%d sign-ins, %d at a time, in %s: %v; peak RSS %d MiB (%d MiB after start); %d health checks, slowest %s",
		signIns, parallel, took.Round(time.Millisecond), statuses, peak>>20, before>>20, healthChecks, slowest.Round(time.Millisecond))
	if len(problems) > 0 {
		t.Errorf("%d sign-ins were not a 401 or a 503 with Retry-After and a detail; first: %s", len(problems), problems[0])
	}
	if statuses[http.StatusUnauthorized] == 0 {
		t.Error("no sign-in was checked at all")
	}
	if peak >= maxPeak {
		t.Errorf("peak RSS %d MiB, want under %d MiB", peak>>20, maxPeak>>20)
	}
	if healthChecks == 0 || len(healthErrs) > 0 {
		t.Errorf("/api/health did not answer 200 within %s throughout: %d of %d checks failed, first: %v",
			healthWithin, len(healthErrs), healthChecks, healthErrs)
	}
}

// peakRSS is the peak resident set size of a process (VmHWM), in bytes.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) >= 2 && fields[0] == "VmHWM:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}
