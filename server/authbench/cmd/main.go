// Command authbench (go run ./server/authbench/cmd) measures GET /api/auth/me of a real copydesk (token
// signature, session and user checked against SQLite on every request)
// against a bare Gin handler that only verifies the same kind of JWT, side
// by side on loopback with wrk. Run it with `make perf-me`; the README's
// performance section quotes its output.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"time"

	"github.com/copydesk/copydesk/server"
	"github.com/copydesk/copydesk/server/auth"
	"github.com/copydesk/copydesk/server/authbench"
	"github.com/copydesk/copydesk/store"
)

func main() {
	conns := flag.Int("connections", 50, "wrk connections")
	threads := flag.Int("threads", 2, "wrk threads")
	dur := flag.Duration("duration", 10*time.Second, "length of each wrk run")
	rounds := flag.Int("rounds", 3, "alternating rounds per server")
	flag.Parse()
	if err := run(*conns, *threads, *dur, *rounds); err != nil {
		fmt.Fprintln(os.Stderr, "authbench:", err)
		os.Exit(1)
	}
}

func run(conns, threads int, dur time.Duration, rounds int) error {
	if _, err := exec.LookPath("wrk"); err != nil {
		return fmt.Errorf("wrk is not installed (Debian package wrk): %w", err)
	}
	dir, err := os.MkdirTemp("", "authbench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	app, err := server.Open(ctx, server.Config{DataDir: dir, HTTPAddr: "127.0.0.1:0", Version: "bench"}, log)
	if err != nil {
		return err
	}
	defer app.Close()
	if _, err := app.Auth.CreateUser(ctx, auth.NewAccount{Email: "bench@example.com", Username: "bench", Password: "bench-password", Role: store.RoleEditor}); err != nil {
		return err
	}
	g, err := app.Auth.Login(ctx, auth.LoginInput{Email: "bench@example.com", Password: "bench-password"})
	if err != nil {
		return err
	}
	if err := app.Listen(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx) }()
	defer func() { cancel(); <-done }() // stop serving before the database closes

	bare, bareTok, err := startBare(app.Keys.JWTKey())
	if err != nil {
		return err
	}
	defer bare.Close()

	targets := []struct{ name, url, token string }{
		{"bare Gin + JWT verify", "http://" + bare.Addr().String() + "/me", bareTok},
		{"copydesk GET /api/auth/me", "http://" + app.Addr() + "/api/auth/me", g.Token},
	}
	for _, t := range targets { // both must answer 200 before measuring
		req, _ := http.NewRequest("GET", t.url, nil)
		req.Header.Set("Authorization", "Bearer "+t.token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		res.Body.Close()
		if res.StatusCode != 200 {
			return fmt.Errorf("%s answered %d", t.name, res.StatusCode)
		}
	}
	fmt.Printf("wrk -t%d -c%d -d%s, %d alternating rounds, GOMAXPROCS=%s\n", threads, conns, dur, rounds, os.Getenv("GOMAXPROCS"))
	sums := make([]float64, len(targets))
	for r := 0; r < rounds; r++ {
		for i, t := range targets {
			rps, err := wrk(t.url, t.token, conns, threads, dur)
			if err != nil {
				return err
			}
			sums[i] += rps
			fmt.Printf("round %d  %-28s %10.0f req/s\n", r+1, t.name, rps)
		}
	}
	bareAvg, meAvg := sums[0]/float64(rounds), sums[1]/float64(rounds)
	fmt.Printf("\naverage  %-28s %10.0f req/s\naverage  %-28s %10.0f req/s\nratio    %.0f%%\n",
		targets[0].name, bareAvg, targets[1].name, meAvg, 100*meAvg/bareAvg)
	return nil
}

var rpsLine = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
var non2xx = regexp.MustCompile(`Non-2xx or 3xx responses: (\d+)`)

func wrk(url, token string, conns, threads int, dur time.Duration) (float64, error) {
	out, err := exec.Command("wrk", "-t"+strconv.Itoa(threads), "-c"+strconv.Itoa(conns), "-d"+dur.String(),
		"-H", "Authorization: Bearer "+token, url).CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("wrk: %w: %s", err, out)
	}
	if m := non2xx.FindSubmatch(out); m != nil {
		return 0, fmt.Errorf("wrk saw %s error responses from %s", m[1], url)
	}
	m := rpsLine.FindSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("wrk output without Requests/sec: %s", out)
	}
	return strconv.ParseFloat(string(m[1]), 64)
}

// startBare serves authbench.BareHandler on loopback.
func startBare(key []byte) (net.Listener, string, error) {
	h, tok := authbench.BareHandler(key)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	go http.Serve(l, h)
	return l, tok, nil
}
