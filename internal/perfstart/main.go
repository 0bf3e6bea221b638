// Command perfstart measures how fast copydesk starts and how small it
// idles (make perf-start): the time from exec to the first 200 from
// /api/health on a fresh data directory, the resident memory once the server
// has idled, and the time `copydesk version` takes. It prints the medians
// of several rounds beside the targets of docs/DECISIONS.md, and beside
// them the time of `copydesk help`, which, unlike `version`, initialises
// the whole program first as every other command does
// (internal/buildinfo).
package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

func main() {
	bin := flag.String("bin", "./copydesk", "the copydesk binary to measure")
	rounds := flag.Int("rounds", 5, "rounds per figure; medians are printed")
	idle := flag.Duration("idle", 3*time.Second, "how long the server idles before its RSS is read")
	flag.Parse()
	if err := run(*bin, *rounds, *idle); err != nil {
		fmt.Fprintln(os.Stderr, "perfstart:", err)
		os.Exit(1)
	}
}

func run(bin string, rounds int, idle time.Duration) error {
	var starts, rss, versions, helps []float64
	for i := 0; i < rounds; i++ {
		st, kb, err := startOnce(bin, idle)
		if err != nil {
			return err
		}
		starts = append(starts, st.Seconds()*1000)
		rss = append(rss, float64(kb)/1024)
		t0 := time.Now()
		if out, err := exec.Command(bin, "version").CombinedOutput(); err != nil {
			return fmt.Errorf("version: %v: %s", err, out)
		}
		versions = append(versions, time.Since(t0).Seconds()*1000)
		t0 = time.Now()
		if out, err := exec.Command(bin, "help").CombinedOutput(); err != nil {
			return fmt.Errorf("help: %v: %s", err, out)
		}
		helps = append(helps, time.Since(t0).Seconds()*1000)
	}
	fmt.Printf("%-36s %10s %10s\n", "", "median", "target")
	fmt.Printf("%-36s %8.1fms %8s\n", "start to first /api/health 200", median(starts), "≤100ms")
	fmt.Printf("%-36s %8.1fMB %8s\n", "RSS at idle (fresh data dir)", median(rss), "≤35MB")
	fmt.Printf("%-36s %8.1fms %8s\n", "copydesk version", median(versions), "≤20ms")
	fmt.Printf("%-36s %8.1fms %8s\n", "copydesk help (whole init)", median(helps), "-")
	return nil
}

// startOnce starts the server on a fresh data directory and a free port,
// and returns the time to its first healthy answer and its RSS in KiB
// after idling.
func startOnce(bin string, idle time.Duration) (time.Duration, int, error) {
	dir, err := os.MkdirTemp("", "copydesk-perfstart-")
	if err != nil {
		return 0, 0, err
	}
	defer os.RemoveAll(dir)
	addr, err := freeAddr()
	if err != nil {
		return 0, 0, err
	}
	cmd := exec.Command(bin, "serve", "--http", addr, "--data-dir", filepath.Join(dir, "data"), "--log-level", "warn")
	cmd.Stdout, cmd.Stderr = nil, nil // its first-start advice is not the point here
	client := &http.Client{Timeout: time.Second}
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, 0, err
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	var took time.Duration
	for {
		resp, err := client.Get("http://" + addr + "/api/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				took = time.Since(t0)
				break
			}
		}
		if time.Since(t0) > 10*time.Second {
			return 0, 0, fmt.Errorf("no healthy answer from %s within 10s", addr)
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(idle)
	kb, err := rssKiB(cmd.Process.Pid)
	return took, kb, err
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// rssKiB reads VmRSS from /proc (Linux only, where the figures are taken).
func rssKiB(pid int) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("reading RSS (Linux only): %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			return strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
