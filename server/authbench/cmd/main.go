// Command authbench (go run ./server/authbench/cmd) measures routes of a
// real copydesk against bare Gin handlers that do the least the same
// route must (package authbench), side by side on loopback with wrk, in
// alternating rounds:
//
//   - me: GET /api/auth/me (token signature, session and user checked
//     against SQLite on every request) against a handler that only
//     verifies the same kind of JWT (`make perf-me`);
//   - list: GET /api/agents?per_page=50 over 10,000 agents, as an admin
//     and as an editor, against a handler doing COUNT(*) and 50 rows in
//     name order in a table shaped like agents (`make perf-lists`);
//   - create: POST /api/agents against one INSERT ... RETURNING
//     (`make perf-lists`);
//   - signin: POST /api/auth/login with the default password hashing
//     cost, which is what it measures (no yardstick).
//
// With -database postgres://..., every scenario also runs against a
// copydesk on PostgreSQL, in a database of its own made on that server
// and dropped at the end, beside the SQLite one in the same alternating
// rounds (`make perf-engines`). The yardsticks stay SQLite's.
//
// It prints every round, then each target's median and its ratio to the
// median of its yardstick. docs/performance.md quotes it.
package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/copydesk/copydesk/server"
	"github.com/copydesk/copydesk/server/auth"
	"github.com/copydesk/copydesk/server/authbench"
	"github.com/copydesk/copydesk/store"
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver, for the benchmark's PostgreSQL databases
)

func main() {
	conns := flag.Int("connections", 50, "wrk connections")
	threads := flag.Int("threads", 2, "wrk threads")
	dur := flag.Duration("duration", 10*time.Second, "length of each wrk run")
	rounds := flag.Int("rounds", 3, "alternating rounds per server")
	agents := flag.Int("agents", 10000, "agents in the list scenario")
	benches := flag.String("bench", "me", "comma-separated scenarios: me, list, create, signin")
	database := flag.String("database", "", "a PostgreSQL server (postgres://USER@HOST:PORT/DB, a user that may create databases): each scenario runs on it too")
	flag.Parse()
	o := options{conns: *conns, threads: *threads, dur: *dur, rounds: *rounds, agents: *agents, benches: strings.Split(*benches, ","),
		database: *database}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "authbench:", err)
		os.Exit(1)
	}
}

type options struct {
	conns, threads, rounds, agents int
	dur                            time.Duration
	benches                        []string
	database                       string // a PostgreSQL server, or ""
}

// engine is where a copydesk under test keeps its data: SQLite in its
// data directory (url ""), or a PostgreSQL database.
type engine struct {
	name, url string
}

// target is one thing wrk measures; a yardstick has no base, a real route
// names the yardstick it is compared with.
type target struct {
	name, method, url, token, body string
	base                           string
	// lua, when set, is the wrk script that makes the requests (the
	// first request, for the 2xx check, is method, url and body).
	lua string
}

func run(o options) error {
	if _, err := exec.LookPath("wrk"); err != nil {
		return fmt.Errorf("wrk is not installed (Debian package wrk): %w", err)
	}
	dir, err := os.MkdirTemp("", "authbench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var c closers
	defer c.close()
	ctx := context.Background()

	engines := []engine{{name: "SQLite"}}
	if o.database != "" {
		if !store.IsPostgresURL(o.database) {
			return fmt.Errorf("-database must be a postgres:// address, not %q", store.RedactURL(o.database))
		}
		pg, err := newPostgres(ctx, &c, o.database)
		if err != nil {
			return err
		}
		engines = append(engines, engine{name: "PostgreSQL", url: pg})
	}
	var targets []target
	for _, b := range o.benches {
		var ts []target
		var err error
		switch b {
		case "me":
			ts, err = meTargets(ctx, &c, dir, engines)
		case "list":
			ts, err = listTargets(ctx, &c, dir, o.agents, engines)
		case "create":
			ts, err = createTargets(ctx, &c, dir, engines)
		case "signin":
			ts, err = signinTargets(ctx, &c, dir, engines)
		default:
			err = fmt.Errorf("unknown scenario %q (me, list, create, signin)", b)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", b, err)
		}
		targets = append(targets, ts...)
	}
	for _, t := range targets { // each must answer 2xx before measuring
		if err := once(t); err != nil {
			return err
		}
	}

	fmt.Printf("wrk -t%d -c%d -d%s, %d alternating rounds, GOMAXPROCS=%s\n", o.threads, o.conns, o.dur, o.rounds, os.Getenv("GOMAXPROCS"))
	results := make([][]float64, len(targets))
	for r := 0; r < o.rounds; r++ {
		for i, t := range targets {
			rps, err := wrk(t, o, dir)
			if err != nil {
				return err
			}
			results[i] = append(results[i], rps)
			fmt.Printf("round %d  %-50s %10.0f req/s\n", r+1, t.name, rps)
		}
	}
	fmt.Println()
	medians := map[string]float64{}
	for i, t := range targets {
		medians[t.name] = median(results[i])
		line := fmt.Sprintf("median   %-50s %10.0f req/s", t.name, medians[t.name])
		if t.base != "" {
			line += fmt.Sprintf("   %.2f× %s", medians[t.name]/medians[t.base], t.base)
		}
		fmt.Println(line)
	}
	return nil
}

// closers are what run started, closed last first.
type closers []func() error

func (c *closers) add(f func() error) { *c = append(*c, f) }

// close closes everything, saying what failed: the measurements are
// printed already.
func (c *closers) close() {
	for i := len(*c) - 1; i >= 0; i-- {
		if err := (*c)[i](); err != nil {
			fmt.Fprintln(os.Stderr, "authbench: closing:", err)
		}
	}
}

// open starts a copydesk in its own data directory (and, on PostgreSQL,
// in a database of its own) with an admin and an editor signed in, and
// with agents global agents, serving on loopback. The agents go straight
// into the database; then the server is opened again, as one restarted on
// its data (Open gathers the statistics SQLite plans by; PostgreSQL's are
// gathered by an ANALYZE).
func open(ctx context.Context, c *closers, dir string, e engine, agents int) (app *server.App, admin, editor string, err error) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := server.Config{DataDir: dir, HTTPAddr: "127.0.0.1:0", Version: "bench"}
	if e.url != "" {
		if cfg.Database, err = createDatabase(ctx, c, e.url); err != nil {
			return nil, "", "", err
		}
	}
	if app, err = server.Open(ctx, cfg, log); err != nil {
		return nil, "", "", err
	}
	tokens := map[store.Role]string{}
	for _, role := range []store.Role{store.RoleAdmin, store.RoleEditor} {
		name := "bench-" + string(role)
		if _, err := app.Auth.CreateUser(ctx, auth.NewAccount{Email: name + "@example.com", Username: name, Password: "bench-password",
			Role: role}); err != nil {
			_ = app.Close() // the error above is the one to report
			return nil, "", "", err
		}
		g, err := app.Auth.Login(ctx, auth.LoginInput{Email: name + "@example.com", Password: "bench-password"})
		if err != nil {
			_ = app.Close() // the error above is the one to report
			return nil, "", "", err
		}
		tokens[role] = g.Token
	}
	if agents > 0 {
		err := errors.Join(fillAgents(ctx, cfg, agents), app.Close())
		if err != nil {
			return nil, "", "", err
		}
		if app, err = server.Open(ctx, cfg, log); err != nil {
			return nil, "", "", err
		}
	}
	c.add(app.Close)
	if err := app.Listen(); err != nil {
		return nil, "", "", err
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- app.Run(runCtx) }()
	c.add(func() error { stop(); return <-done }) // stop serving before the database closes
	return app, tokens[store.RoleAdmin], tokens[store.RoleEditor], nil
}

// fillAgents writes n global agents into the copydesk database of cfg.
func fillAgents(ctx context.Context, cfg server.Config, n int) error {
	if cfg.Database != "" {
		conn, err := sql.Open("pgx", cfg.Database)
		if err != nil {
			return err
		}
		defer conn.Close()
		if err := authbench.FillAgents(ctx, conn, n, true); err != nil {
			return err
		}
		_, err = conn.ExecContext(ctx, `ANALYZE agents`)
		return err
	}
	conn, err := sql.Open("sqlite", "file:"+filepath.Join(cfg.DataDir, server.DBFile)+"?_pragma=busy_timeout(10000)")
	if err != nil {
		return err
	}
	defer conn.Close()
	return authbench.FillAgents(ctx, conn, n, false)
}

// newPostgres checks that the server at url answers, and returns url.
func newPostgres(ctx context.Context, c *closers, url string) (string, error) {
	admin, err := sql.Open("pgx", url)
	if err != nil {
		return "", err
	}
	c.add(admin.Close)
	var version string
	if err := admin.QueryRowContext(ctx, `SHOW server_version`).Scan(&version); err != nil {
		return "", fmt.Errorf("PostgreSQL at %s: %w", store.RedactURL(url), err)
	}
	fmt.Printf("PostgreSQL %s at %s\n", version, store.RedactURL(url))
	return url, nil
}

// createDatabase makes an empty database on the PostgreSQL server at
// server, dropped when the run ends, and returns its address.
func createDatabase(ctx context.Context, c *closers, server string) (string, error) {
	admin, err := sql.Open("pgx", server)
	if err != nil {
		return "", err
	}
	name := fmt.Sprintf("copydesk_bench_%d_%d", os.Getpid(), len(*c))
	if _, err := admin.ExecContext(ctx, `CREATE DATABASE `+name); err != nil {
		admin.Close()
		return "", err
	}
	c.add(func() error {
		defer admin.Close()
		_, err := admin.ExecContext(context.Background(), `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`)
		return err
	})
	u, err := neturl.Parse(server)
	if err != nil {
		return "", err
	}
	u.Path = "/" + name
	return u.String(), nil
}

// label names a copydesk target, with its engine when there are two.
func label(name string, e engine, engines []engine) string {
	if len(engines) == 1 {
		return name
	}
	return name + ", " + e.name
}

func meTargets(ctx context.Context, c *closers, dir string, engines []engine) ([]target, error) {
	var ts []target
	for i, e := range engines {
		app, _, editor, err := open(ctx, c, filepath.Join(dir, "me-"+e.name), e, 0)
		if err != nil {
			return nil, err
		}
		const bare = "bare Gin + JWT verify"
		if i == 0 {
			h, tok := authbench.BareHandler(app.Keys.JWTKey())
			url, err := serve(h)
			if err != nil {
				return nil, err
			}
			ts = append(ts, target{name: bare, method: "GET", url: url + "/me", token: tok})
		}
		ts = append(ts, target{name: label("copydesk GET /api/auth/me", e, engines), method: "GET",
			url: "http://" + app.Addr() + "/api/auth/me", token: editor, base: bare})
	}
	return ts, nil
}

func listTargets(ctx context.Context, c *closers, dir string, n int, engines []engine) ([]target, error) {
	bare, err := authbench.OpenBareAgents(ctx, filepath.Join(dir, "bare-list.db"))
	if err != nil {
		return nil, err
	}
	c.add(bare.Close)
	if err := bare.Fill(ctx, n); err != nil {
		return nil, err
	}
	base := fmt.Sprintf("bare list (COUNT + 50 of %d)", n)
	var ts []target
	for i, e := range engines {
		app, admin, editor, err := open(ctx, c, filepath.Join(dir, "list-"+e.name), e, n) // global agents: both users see them all
		if err != nil {
			return nil, err
		}
		if i == 0 {
			t, err := bareTarget(bare, app, target{name: base, method: "GET", url: "/agents?per_page=50"})
			if err != nil {
				return nil, err
			}
			ts = append(ts, t)
		}
		real := "http://" + app.Addr() + "/api/agents?per_page=50"
		ts = append(ts,
			target{name: label("copydesk GET /api/agents (admin)", e, engines), method: "GET", url: real, token: admin, base: base},
			target{name: label("copydesk GET /api/agents (editor)", e, engines), method: "GET", url: real, token: editor, base: base})
	}
	return ts, nil
}

// bareTarget serves the bare agents yardstick with app's signing key and
// makes t (its url a path) a request to it.
func bareTarget(bare *authbench.BareAgents, app *server.App, t target) (target, error) {
	h, tok := bare.Handler(app.Keys.JWTKey())
	url, err := serve(h)
	if err != nil {
		return t, err
	}
	t.url, t.token = url+t.url, tok
	return t, nil
}

func createTargets(ctx context.Context, c *closers, dir string, engines []engine) ([]target, error) {
	bare, err := authbench.OpenBareAgents(ctx, filepath.Join(dir, "bare-create.db"))
	if err != nil {
		return nil, err
	}
	c.add(bare.Close)
	const base = "bare create (INSERT … RETURNING)"
	const body = `{"name":"Bench writer","kind":"writer"}`
	var ts []target
	for i, e := range engines {
		app, admin, _, err := open(ctx, c, filepath.Join(dir, "create-"+e.name), e, 0)
		if err != nil {
			return nil, err
		}
		if i == 0 {
			t, err := bareTarget(bare, app, target{name: base, method: "POST", url: "/agents", body: body})
			if err != nil {
				return nil, err
			}
			ts = append(ts, t)
		}
		ts = append(ts, target{name: label("copydesk POST /api/agents (admin)", e, engines), method: "POST",
			url: "http://" + app.Addr() + "/api/agents", token: admin, body: body, base: base})
	}
	return ts, nil
}

// signinTargets sign in signinUsers editors in turn: the password hash at
// its default cost, a new session row and a token each. Many accounts, as
// a crowd signing in: one account's sign-ins in parallel are counted as
// attempts before their hash is checked (the throttle's rule), so more
// than its free tries at once would be held back. No yardstick: the hash
// is most of it, by design.
func signinTargets(ctx context.Context, c *closers, dir string, engines []engine) ([]target, error) {
	const signinUsers = 100
	var lua strings.Builder
	lua.WriteString("local bodies = {}\n")
	for i := range signinUsers {
		fmt.Fprintf(&lua, "bodies[%d] = '{\"email\":\"signin-%d@example.com\",\"password\":\"bench-password\"}'\n", i+1, i)
	}
	lua.WriteString(`local n = 0
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
request = function()
  n = n + 1
  return wrk.format(nil, nil, nil, bodies[(n % #bodies) + 1])
end
`)
	var ts []target
	for _, e := range engines {
		app, _, _, err := open(ctx, c, filepath.Join(dir, "signin-"+e.name), e, 0)
		if err != nil {
			return nil, err
		}
		for i := range signinUsers {
			name := fmt.Sprintf("signin-%d", i)
			if _, err := app.Auth.CreateUser(ctx, auth.NewAccount{Email: name + "@example.com", Username: name, Password: "bench-password",
				Role: store.RoleEditor}); err != nil {
				return nil, err
			}
		}
		ts = append(ts, target{name: label("copydesk POST /api/auth/login", e, engines), method: "POST",
			url: "http://" + app.Addr() + "/api/auth/login", body: `{"email":"signin-0@example.com","password":"bench-password"}`,
			lua: lua.String()})
	}
	return ts, nil
}

// serve serves h on loopback and returns its base URL.
func serve(h http.Handler) (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	go func() { _ = http.Serve(l, h) }() // until the process ends
	return "http://" + l.Addr().String(), nil
}

// once sends t's request once and wants a 2xx.
func once(t target) error {
	req, err := http.NewRequest(t.method, t.url, strings.NewReader(t.body))
	if err != nil {
		return err
	}
	if t.token != "" {
		req.Header.Set("Authorization", "Bearer "+t.token)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode/100 != 2 {
		return fmt.Errorf("%s answered %d: %s", t.name, res.StatusCode, b)
	}
	return nil
}

var rpsLine = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
var non2xx = regexp.MustCompile(`Non-2xx or 3xx responses: (\d+)`)

func wrk(t target, o options, dir string) (float64, error) {
	args := []string{"-t" + strconv.Itoa(o.threads), "-c" + strconv.Itoa(o.conns), "-d" + o.dur.String()}
	if t.token != "" {
		args = append(args, "-H", "Authorization: Bearer "+t.token)
	}
	if t.method != "GET" {
		script := filepath.Join(dir, "request.lua")
		lua := t.lua
		if lua == "" {
			lua = fmt.Sprintf("wrk.method = %q\nwrk.body = %q\nwrk.headers[\"Content-Type\"] = \"application/json\"\n", t.method, t.body)
		}
		if err := os.WriteFile(script, []byte(lua), 0o600); err != nil {
			return 0, err
		}
		args = append(args, "-s", script)
	}
	out, err := exec.Command("wrk", append(args, t.url)...).CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("wrk: %w: %s", err, out)
	}
	if m := non2xx.FindSubmatch(out); m != nil {
		return 0, fmt.Errorf("wrk saw %s error responses from %s", m[1], t.url)
	}
	m := rpsLine.FindSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("wrk output without Requests/sec: %s", out)
	}
	return strconv.ParseFloat(string(m[1]), 64)
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
