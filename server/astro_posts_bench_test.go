package server_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"

	"github.com/copydesk/copydesk/server"
	"github.com/copydesk/copydesk/store"
)

// fillAstroPosts writes n Astro posts of one environment (granted to the
// editor), each under one of 20 categories and two of 50 tags, straight
// into the database: the list reads rows, not files.
func fillAstroPosts(n int) func(ctx context.Context, conn *sql.DB, app *server.App) error {
	return func(ctx context.Context, conn *sql.DB, app *server.App) error {
		env, err := app.DB.CreateEnvironment(ctx, store.NewEnvironment{Name: "Blog", Slug: "blog"})
		if err != nil {
			return err
		}
		editor, err := app.DB.UserByEmail(ctx, "editor@example.com")
		if err != nil {
			return err
		}
		if _, err := app.DB.SetUserEnvironments(ctx, editor.ID, []int64{env.ID}); err != nil {
			return err
		}
		tx, err := conn.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		stmts := []string{
			`WITH RECURSIVE i(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM i WHERE n < 20)
			 INSERT INTO cms_categories (environment_id, name, slug, created_at, updated_at)
			 SELECT ?1, 'Category ' || n, 'category-' || n, '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z' FROM i`,
			`WITH RECURSIVE i(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM i WHERE n < 50)
			 INSERT INTO cms_tags (environment_id, name, slug, created_at, updated_at)
			 SELECT ?1, 'Tag ' || n, 'tag-' || n, '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z' FROM i`,
			`WITH RECURSIVE i(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM i WHERE n < ?2)
			 INSERT INTO astro_posts (environment_id, title, description, slug, body, pub_date, draft, created_at, updated_at)
			 SELECT ?1, 'Post number ' || n, 'What post ' || n || ' is about', 'post-' || n, printf('%.2000c', 'x'),
			        strftime('%Y-%m-%dT%H:%M:%S.000Z', '2020-01-01', '+' || (n * 3) || ' hours'), n % 5 = 0,
			        '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z' FROM i`,
			`INSERT INTO astro_post_categories (post_id, category_id)
			 SELECT p.id, c.id FROM astro_posts p JOIN cms_categories c ON c.environment_id = ?1
			 WHERE p.environment_id = ?1 AND c.id % 20 = p.id % 20`,
			`INSERT INTO astro_post_tags (post_id, tag_id)
			 SELECT p.id, t.id FROM astro_posts p JOIN cms_tags t ON t.environment_id = ?1
			 WHERE p.environment_id = ?1 AND (t.id % 50 = p.id % 50 OR t.id % 50 = (p.id + 7) % 50)`,
		}
		for _, q := range stmts {
			if _, err := tx.ExecContext(ctx, q, env.ID, n); err != nil {
				return fmt.Errorf("%s: %w", q[:40], err)
			}
		}
		return tx.Commit()
	}
}

// BenchmarkListAstroPosts is GET /api/astro-posts?per_page=50 over 10,000
// posts with their categories and tags, for an admin and for an editor
// granted the environment, and the editor's list of one tag.
func BenchmarkListAstroPosts(b *testing.B) {
	h, admin, editor := benchEnv(b, fillAstroPosts(10000))
	b.Run("Admin", func(b *testing.B) { serveParallel(b, h, "GET", "/api/astro-posts?per_page=50", admin, "", 200) })
	b.Run("Editor", func(b *testing.B) { serveParallel(b, h, "GET", "/api/astro-posts?per_page=50", editor, "", 200) })
	b.Run("EditorTag", func(b *testing.B) {
		serveParallel(b, h, "GET", "/api/astro-posts?per_page=50&tag_id=3", editor, "", 200)
	})
}
