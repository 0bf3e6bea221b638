package server_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/copydesk/copydesk/server"
	"github.com/copydesk/copydesk/server/auth"
	"github.com/copydesk/copydesk/server/authbench"
	"github.com/copydesk/copydesk/store"
)

// BenchmarkLogin signs in through the router with the real password hash
// cost (argon2id, 19 MiB, 2 passes).
func BenchmarkLogin(b *testing.B) {
	real := auth.DefaultHasher
	e := newEnv(b, func(c *server.Config) { c.Hasher = &real })
	e.user(b, "bench", store.RoleViewer)
	body := `{"email":"bench@example.com","password":"password-bench"}`
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		req := httptest.NewRequest("POST", "/api/auth/login", strings.NewReader(body))
		w := httptest.NewRecorder()
		e.h.ServeHTTP(w, req)
		if w.Code != 200 {
			b.Fatalf("%d %s", w.Code, w.Body)
		}
	}
}

// BenchmarkLoginUnknownEmail costs about what BenchmarkLogin costs: an
// unknown address is checked against a dummy hash of the same cost.
func BenchmarkLoginUnknownEmail(b *testing.B) {
	real := auth.DefaultHasher
	noThrottle := auth.ThrottlePolicy{}
	e := newEnv(b, func(c *server.Config) { c.Hasher = &real; c.Throttle = &noThrottle })
	body := `{"email":"nobody@example.com","password":"password-bench"}`
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		req := httptest.NewRequest("POST", "/api/auth/login", strings.NewReader(body))
		w := httptest.NewRecorder()
		e.h.ServeHTTP(w, req)
		if w.Code != 401 {
			b.Fatalf("%d %s", w.Code, w.Body)
		}
	}
}

// BenchmarkMe is GET /api/auth/me with a valid token: signature, session and
// user checked against the database on every request.
func BenchmarkMe(b *testing.B) {
	e := newEnv(b)
	e.clock = nil
	e.app.DB.Now = func() time.Time { return time.Now().UTC() }
	_, tok := e.user(b, "bench", store.RoleViewer)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req := httptest.NewRequest("GET", "/api/auth/me", nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			w := httptest.NewRecorder()
			e.h.ServeHTTP(w, req)
			if w.Code != 200 {
				b.Fatalf("%d %s", w.Code, w.Body)
			}
		}
	})
}

// BenchmarkBareJWT is the yardstick for BenchmarkMe: a Gin handler that only
// verifies the same kind of JWT.
func BenchmarkBareJWT(b *testing.B) {
	h, tok := authbench.BareHandler([]byte(testSecret))
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req := httptest.NewRequest("GET", "/me", nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != 200 {
				b.Fatalf("%d", w.Code)
			}
		}
	})
}

// agentsEnv is a server with n global agents, written straight into its
// file, and an admin's and an editor's tokens (see benchEnv).
func agentsEnv(b *testing.B, n int) (h http.Handler, admin, editor string) {
	return benchEnv(b, func(ctx context.Context, conn *sql.DB, _ *server.App) error {
		return authbench.FillAgents(ctx, conn, n, false)
	})
}

// benchEnv is a server with an admin and an editor signed in and rows that
// fill writes straight into its file. It is opened again once they are in,
// as a server restarted on its data: Open gathers the statistics SQLite
// plans by.
func benchEnv(b *testing.B, fill func(ctx context.Context, conn *sql.DB, app *server.App) error) (h http.Handler, admin, editor string) {
	ctx := context.Background()
	cfg := server.Config{DataDir: b.TempDir(), SecretKey: testSecret, Hasher: &cheapHasher, Version: "test"}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	app, err := server.Open(ctx, cfg, log)
	if err != nil {
		b.Fatal(err)
	}
	tokens := map[store.Role]string{}
	for _, role := range []store.Role{store.RoleAdmin, store.RoleEditor} {
		email := string(role) + "@example.com"
		if _, err := app.Auth.CreateUser(ctx, auth.NewAccount{Email: email, Username: string(role), Password: "password-bench",
			Role: role}); err != nil {
			b.Fatal(err)
		}
		g, err := app.Auth.Login(ctx, auth.LoginInput{Email: email, Password: "password-bench"})
		if err != nil {
			b.Fatal(err)
		}
		tokens[role] = g.Token
	}
	conn, err := sql.Open("sqlite", "file:"+app.DB.Path()+"?_pragma=busy_timeout(10000)")
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	if err := fill(ctx, conn, app); err != nil {
		b.Fatal(err)
	}
	app.Close()
	if app, err = server.Open(ctx, cfg, log); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { app.Close() })
	return app.Server.Handler(), tokens[store.RoleAdmin], tokens[store.RoleEditor]
}

// serveParallel sends the same request through h from every benchmark
// goroutine and wants status want.
func serveParallel(b *testing.B, h http.Handler, method, path, token, body string, want int) {
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req := httptest.NewRequest(method, path, strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("Content-Type", "application/json")
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != want {
				b.Fatalf("%d %s", w.Code, w.Body)
			}
		}
	})
}

// BenchmarkListAgents is GET /api/agents?per_page=50 over 10,000 agents,
// for an admin and for an editor (who sees them all: they are global).
func BenchmarkListAgents(b *testing.B) {
	h, admin, editor := agentsEnv(b, 10000)
	b.Run("Admin", func(b *testing.B) { serveParallel(b, h, "GET", "/api/agents?per_page=50", admin, "", 200) })
	b.Run("Editor", func(b *testing.B) { serveParallel(b, h, "GET", "/api/agents?per_page=50", editor, "", 200) })
}

// BenchmarkBareListAgents is the yardstick for BenchmarkListAgents: JWT,
// COUNT(*) and 50 rows of 10,000 in name order.
func BenchmarkBareListAgents(b *testing.B) {
	bare, err := authbench.OpenBareAgents(context.Background(), filepath.Join(b.TempDir(), "bare.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer bare.Close()
	if err := bare.Fill(context.Background(), 10000); err != nil {
		b.Fatal(err)
	}
	h, tok := bare.Handler([]byte(testSecret))
	serveParallel(b, h, "GET", "/agents?per_page=50", tok, "", 200)
}

const benchAgent = `{"name":"Bench writer","kind":"writer"}`

// BenchmarkCreateAgent is POST /api/agents of a global agent by an admin.
func BenchmarkCreateAgent(b *testing.B) {
	h, admin, _ := agentsEnv(b, 0)
	serveParallel(b, h, "POST", "/api/agents", admin, benchAgent, 201)
}

// BenchmarkBareCreateAgent is the yardstick for BenchmarkCreateAgent: JWT
// and one INSERT ... RETURNING.
func BenchmarkBareCreateAgent(b *testing.B) {
	bare, err := authbench.OpenBareAgents(context.Background(), filepath.Join(b.TempDir(), "bare.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer bare.Close()
	h, tok := bare.Handler([]byte(testSecret))
	serveParallel(b, h, "POST", "/agents", tok, benchAgent, 201)
}

// BenchmarkListWordPressPosts is GET /api/wordpress-posts?per_page=50 over
// 10,000 posts of one environment (each in a category and with two tags),
// for an admin and for an editor granted that environment; and the first
// page of one category.
func BenchmarkListWordPressPosts(b *testing.B) {
	h, admin, editor := benchEnv(b, func(ctx context.Context, conn *sql.DB, _ *server.App) error { return fillPosts(ctx, conn, 10000) })
	b.Run("Admin", func(b *testing.B) { serveParallel(b, h, "GET", "/api/wordpress-posts?per_page=50", admin, "", 200) })
	b.Run("Editor", func(b *testing.B) { serveParallel(b, h, "GET", "/api/wordpress-posts?per_page=50", editor, "", 200) })
	b.Run("Category", func(b *testing.B) {
		serveParallel(b, h, "GET", "/api/wordpress-posts?per_page=50&category_id=3", editor, "", 200)
	})
	b.Run("Categories", func(b *testing.B) { serveParallel(b, h, "GET", "/api/cms/categories?per_page=50", editor, "", 200) })
}

// BenchmarkListKeywords is the Keywords screen's GET /api/seo/keywords over
// 10,000 keywords of one environment, as an editor granted it: the first
// page of 50 in keyword order, the last page, by volume descending, a text
// search and an intent with a status.
func BenchmarkListKeywords(b *testing.B) {
	h, admin, editor := benchEnv(b, func(ctx context.Context, conn *sql.DB, _ *server.App) error { return fillKeywords(ctx, conn, 10000) })
	const list = "/api/seo/keywords?environment_id=1&per_page=50"
	b.Run("Admin", func(b *testing.B) { serveParallel(b, h, "GET", list, admin, "", 200) })
	b.Run("Editor", func(b *testing.B) { serveParallel(b, h, "GET", list, editor, "", 200) })
	b.Run("LastPage", func(b *testing.B) { serveParallel(b, h, "GET", list+"&page=200", editor, "", 200) })
	b.Run("ByVolume", func(b *testing.B) { serveParallel(b, h, "GET", list+"&sort=-search_volume", editor, "", 200) })
	b.Run("Search", func(b *testing.B) { serveParallel(b, h, "GET", list+"&q=trail+shoes", editor, "", 200) })
	b.Run("IntentStatus", func(b *testing.B) {
		serveParallel(b, h, "GET", list+"&intent=commercial&status=planned&sort=-difficulty", editor, "", 200)
	})
}

// fillKeywords writes an environment (granted to every editor) with n
// keywords, their metrics, intents and statuses spread.
func fillKeywords(ctx context.Context, conn *sql.DB, n int) error {
	now := "2026-01-01T00:00:00.000Z"
	words := []string{"running", "trail", "shoes", "best", "cheap", "women", "waterproof", "review", "garden", "compost", "seed", "tomato"}
	statuses := []string{"new", "planned", "in_progress", "published", "ignored"}
	return fillRows(ctx, conn, []fillStmt{
		{`INSERT INTO environments (id, name, slug, created_at, updated_at) VALUES (1, 'Blog', 'blog', ?, ?)`, 1,
			func(int) []any { return []any{now, now} }},
		{`INSERT INTO user_environments (user_id, environment_id) SELECT id, 1 FROM users WHERE role = 'editor'`, 1,
			func(int) []any { return nil }},
		{`INSERT INTO seo_keywords (environment_id, keyword, keyword_key, search_volume, difficulty, cpc, currency, intent, status,
			source, created_at, updated_at) VALUES (1, ?, ?, ?, ?, ?, 'USD', ?, ?, 'import', ?, ?)`, n, func(i int) []any {
			kw := fmt.Sprintf("%s %s %s %d", words[i%len(words)], words[(i/7)%len(words)], words[(i/31)%len(words)], i)
			return []any{kw, kw, (i * 7919) % 100000, i % 101, float64(i%1200) / 100, i % 16, statuses[i%len(statuses)], now, now}
		}},
	})
}

// fillStmt is a statement fillRows runs n times, with args(i) for i from 1.
type fillStmt struct {
	query string
	n     int
	args  func(i int) []any
}

// fillRows runs the statements in one transaction.
func fillRows(ctx context.Context, conn *sql.DB, stmts []fillStmt) error {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, st := range stmts {
		prep, err := tx.PrepareContext(ctx, st.query)
		if err != nil {
			return err
		}
		for i := 1; i <= st.n; i++ {
			if _, err := prep.ExecContext(ctx, st.args(i)...); err != nil {
				prep.Close()
				return err
			}
		}
		prep.Close()
	}
	return tx.Commit()
}

// fillPosts writes an environment (granted to every editor) with 20
// categories, 50 tags and n posts.
func fillPosts(ctx context.Context, conn *sql.DB, n int) error {
	now := "2026-01-01T00:00:00.000Z"
	return fillRows(ctx, conn, []fillStmt{
		{`INSERT INTO environments (id, name, slug, created_at, updated_at) VALUES (1, 'Blog', 'blog', ?, ?)`, 1,
			func(int) []any { return []any{now, now} }},
		{`INSERT INTO user_environments (user_id, environment_id) SELECT id, 1 FROM users WHERE role = 'editor'`, 1,
			func(int) []any { return nil }},
		{`INSERT INTO cms_categories (environment_id, name, slug, created_at, updated_at) VALUES (1, ?, ?, ?, ?)`, 20,
			func(i int) []any {
				return []any{fmt.Sprintf("Category %d", i), fmt.Sprintf("category-%d", i), now, now}
			}},
		{`INSERT INTO cms_tags (environment_id, name, slug, created_at, updated_at) VALUES (1, ?, ?, ?, ?)`, 50,
			func(i int) []any { return []any{fmt.Sprintf("Tag %d", i), fmt.Sprintf("tag-%d", i), now, now} }},
		{`INSERT INTO wordpress_posts (environment_id, title, content, slug, status, sync_status, created_at, updated_at)
			VALUES (1, ?, ?, ?, ?, 'local', ?, ?)`, n, func(i int) []any {
			return []any{fmt.Sprintf("Post %d", i), strings.Repeat("Some words. ", 200), fmt.Sprintf("post-%d", i),
				[]string{"draft", "publish"}[i%2], now, now}
		}},
		{`INSERT INTO wordpress_post_categories (post_id, category_id) VALUES (?, ?)`, n, func(i int) []any { return []any{i, 1 + i%20} }},
		{`INSERT INTO wordpress_post_tags (post_id, tag_id) VALUES (?, ?), (?, ?)`, n,
			func(i int) []any { return []any{i, 1 + i%50, i, 1 + (i+25)%50} }},
	})
}
