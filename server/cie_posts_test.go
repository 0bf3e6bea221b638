package server_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/copydesk/copydesk/store"
)

// cieGeneration records a generation of the built-in how-to in
// environment envID, queued; with article set it then succeeds with it.
func cieGeneration(t *testing.T, e *cmsEnv, envID int64, article *store.CIEOutcome) int64 {
	t.Helper()
	ctx := context.Background()
	run, err := e.app.DB.CreateCIERunWithJob(ctx, store.NewCIERun{ArchetypeID: cieBuiltin(t, e.env, e.admin, "how-to"),
		EnvironmentID: envID, SystemPrompt: "s", UserPrompt: "u"},
		store.RunJob{Kind: "cie.generate", Payload: func(id int64) any { return map[string]int64{"run_id": id} }})
	if err != nil {
		t.Fatal(err)
	}
	if article != nil {
		o := *article
		o.Status, o.Attempts = store.RunSucceeded, 1
		if _, err := e.app.DB.FinishCIERun(ctx, run.ID, o); err != nil {
			t.Fatal(err)
		}
	}
	return run.ID
}

// A succeeded generation's article becomes a draft of either target in its
// environment, recording the generation; its title, description and body
// land where each target keeps them.
func TestSaveGenerationAsPost(t *testing.T) {
	t.Parallel()
	e := newCMSEnv(t)
	project := astroProject(t, e, e.envA)
	article := &store.CIEOutcome{Title: "Sourdough for beginners", Description: "How to bake your first loaf.",
		Body: "## Introduction\n\nFlour, water, salt and time."}
	done := cieGeneration(t, e, e.envA, article)
	queued := cieGeneration(t, e, e.envA, nil)
	failed := cieGeneration(t, e, e.envA, nil)
	if _, err := e.app.DB.FinishCIERun(context.Background(), failed, store.CIEOutcome{Status: store.RunFailed, Output: "Sure!",
		Error: "did not follow the article format"}); err != nil {
		t.Fatal(err)
	}
	ofB := cieGeneration(t, e, e.envB, article)
	path := func(id int64) string { return fmt.Sprintf("/api/cie/runs/%d/save-as-post", id) }

	refusals := []struct {
		name   string
		run    int64
		tok    string
		body   map[string]any
		code   int
		detail string
	}{
		{"Queued", queued, e.editor, map[string]any{"target": "wordpress"}, 409, "is queued"},
		{"Failed", failed, e.editor, map[string]any{"target": "astro"}, 409, "is failed"},
		{"OtherEnvironment", ofB, e.editor, map[string]any{"target": "astro"}, 404, "not found"},
		{"Missing", 999999, e.editor, map[string]any{"target": "wordpress"}, 404, "not found"},
		{"Viewer", done, e.viewer, map[string]any{"target": "wordpress"}, 403, ""},
		{"UnknownTarget", done, e.editor, map[string]any{"target": "blogger"}, 422, "target"},
		{"NoTarget", done, e.editor, map[string]any{}, 422, "target"},
		{"LongTitle", done, e.editor, map[string]any{"target": "astro", "title": strings.Repeat("x", 301)}, 422, "title"},
	}
	for _, c := range refusals {
		t.Run(c.name, func(t *testing.T) {
			r := e.do(t, "POST", path(c.run), c.tok, c.body)
			if r.Code != c.code || !strings.Contains(r.Detail(), c.detail) {
				t.Fatalf("%d %s; want %d with %q", r.Code, r.Body, c.code, c.detail)
			}
		})
	}
	// Nothing was saved by a refusal.
	for _, list := range []string{"/api/wordpress-posts", "/api/astro-posts"} {
		if r := e.do(t, "GET", list, e.admin, nil); r.Data()["total"] != 0.0 {
			t.Fatalf("%s after refusals: %s", list, r.Body)
		}
	}

	cases := []struct {
		target, title string
		check         func(t *testing.T, p map[string]any)
	}{
		{"wordpress", "", func(t *testing.T, p map[string]any) {
			if p["title"] != article.Title || p["excerpt"] != article.Description || p["content"] != article.Body ||
				p["status"] != "draft" || p["sync_status"] != "local" || p["environment_id"] != float64(e.envA) {
				t.Fatalf("post %v", p)
			}
		}},
		{"wordpress", "My own title", func(t *testing.T, p map[string]any) {
			if p["title"] != "My own title" || p["excerpt"] != article.Description {
				t.Fatalf("post %v", p)
			}
		}},
		{"astro", "", func(t *testing.T, p map[string]any) {
			if p["title"] != article.Title || p["description"] != article.Description || strings.TrimSpace(p["body"].(string)) != article.Body ||
				p["draft"] != true || p["environment_id"] != float64(e.envA) {
				t.Fatalf("post %v", p)
			}
			b, err := os.ReadFile(filepath.Join(project, "src", "content", "blog", p["slug"].(string)+".md"))
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{`title: "` + article.Title + `"`, `description: "` + article.Description + `"`, "draft: true", "Flour, water, salt and time."} {
				if !strings.Contains(string(b), want) {
					t.Errorf("file lacks %q:\n%s", want, b)
				}
			}
		}},
		{"astro", "My own title", func(t *testing.T, p map[string]any) {
			if p["title"] != "My own title" || p["slug"] != "my-own-title" || p["description"] != article.Description {
				t.Fatalf("post %v", p)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.target+"/"+c.title, func(t *testing.T) {
			r := e.do(t, "POST", path(done), e.editor, map[string]any{"target": c.target, "title": c.title})
			if r.Code != 201 || r.Data()["target"] != c.target {
				t.Fatalf("save: %d %s", r.Code, r.Body)
			}
			p := r.Data()[c.target].(map[string]any)
			if p["cie_run_id"] != float64(done) || p["run_id"] != nil {
				t.Fatalf("post records %v / %v, want generation %d", p["cie_run_id"], p["run_id"], done)
			}
			c.check(t, p)
			// The post as read back records the generation too.
			list := map[string]string{"wordpress": "/api/wordpress-posts/", "astro": "/api/astro-posts/"}[c.target]
			if g := e.do(t, "GET", fmt.Sprintf("%s%d", list, int64(p["id"].(float64))), e.viewer, nil); g.Code != 200 ||
				g.Data()["cie_run_id"] != float64(done) {
				t.Fatalf("read back: %d %s", g.Code, g.Body)
			}
		})
	}
}
