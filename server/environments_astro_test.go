package server_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAstroFolderTest: POST /api/environments/{id}/astro/test reports,
// check by check, what the server finds at the saved Astro folder, over
// real temporary folders changed between calls.
func TestAstroFolderTest(t *testing.T) {
	t.Parallel()
	e := newCMSEnv(t)
	path := fmt.Sprintf("/api/environments/%d/astro/test", e.envA)
	test := func(t *testing.T) (bool, map[string]string, map[string]string) {
		t.Helper()
		r := e.do(t, "POST", path, e.admin, nil)
		if r.Code != 200 {
			t.Fatalf("%d %s", r.Code, r.Body)
		}
		d := r.Data()
		status, detail := map[string]string{}, map[string]string{}
		for _, c := range d["checks"].([]any) {
			m := c.(map[string]any)
			status[m["name"].(string)] = m["status"].(string)
			detail[m["name"].(string)] = m["detail"].(string)
		}
		if len(status) != 6 {
			t.Fatalf("checks %v, want all six", status)
		}
		return d["ok"].(bool), status, detail
	}
	want := func(t *testing.T, status map[string]string, w map[string]string) {
		t.Helper()
		for k, v := range w {
			if status[k] != v {
				t.Errorf("%s: %s, want %s (all: %v)", k, status[k], v, status)
			}
		}
	}

	if r := e.do(t, "POST", path, e.admin, nil); r.Code != 409 || !strings.Contains(r.Detail(), "no Astro project") {
		t.Fatalf("without an Astro project: %d %s", r.Code, r.Body)
	}
	if r := e.do(t, "POST", "/api/environments/99999/astro/test", e.admin, nil); r.Code != 404 {
		t.Fatalf("unknown environment: %d %s", r.Code, r.Body)
	}

	project := astroProject(t, e, e.envA)
	content := filepath.Join(project, "src", "content", "blog")
	t.Run("Ready", func(t *testing.T) {
		ok, status, detail := test(t)
		if !ok {
			t.Fatalf("not ok: %v %v", status, detail)
		}
		want(t, status, map[string]string{"folder": "ok", "allowed": "ok", "astro_project": "ok", "content_folder": "ok", "writable": "ok", "astro_command": "warning"})
		if left, _ := filepath.Glob(filepath.Join(content, ".copydesk-test-*")); len(left) != 0 {
			t.Errorf("the probe file stayed: %v", left)
		}
	})
	t.Run("AstroInstalled", func(t *testing.T) {
		bin := filepath.Join(project, "node_modules", ".bin")
		if err := os.MkdirAll(bin, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(bin, "astro"), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		_, status, _ := test(t)
		want(t, status, map[string]string{"astro_command": "ok"})
	})
	if os.Geteuid() != 0 {
		t.Run("NotWritable", func(t *testing.T) {
			if err := os.Chmod(content, 0o555); err != nil {
				t.Fatal(err)
			}
			defer os.Chmod(content, 0o755)
			ok, status, detail := test(t)
			if ok {
				t.Error("ok with a read-only content folder")
			}
			want(t, status, map[string]string{"content_folder": "ok", "writable": "failed"})
			if !strings.Contains(detail["writable"], "permission denied") {
				t.Errorf("detail %q", detail["writable"])
			}
		})
	}
	t.Run("NoContentFolder", func(t *testing.T) {
		if err := os.Rename(content, content+".away"); err != nil {
			t.Fatal(err)
		}
		defer os.Rename(content+".away", content)
		ok, status, detail := test(t)
		if ok {
			t.Error("ok without a content folder")
		}
		want(t, status, map[string]string{"astro_project": "ok", "content_folder": "failed", "writable": "skipped"})
		if !strings.Contains(detail["content_folder"], "mkdir -p "+content) {
			t.Errorf("detail %q", detail["content_folder"])
		}
	})
	t.Run("NotAstro", func(t *testing.T) {
		pkg := filepath.Join(project, "package.json")
		if err := os.WriteFile(pkg, []byte(`{"dependencies":{"react":"^19"}}`), 0o644); err != nil {
			t.Fatal(err)
		}
		defer os.WriteFile(pkg, []byte(`{"dependencies":{"astro":"^5"}}`), 0o644)
		ok, status, _ := test(t)
		if ok {
			t.Error("ok without astro in package.json")
		}
		want(t, status, map[string]string{"astro_project": "failed", "writable": "ok"})
	})
	t.Run("FolderGone", func(t *testing.T) {
		if err := os.Rename(project, project+".away"); err != nil {
			t.Fatal(err)
		}
		defer os.Rename(project+".away", project)
		ok, status, _ := test(t)
		if ok {
			t.Error("ok without the folder")
		}
		want(t, status, map[string]string{"folder": "failed", "allowed": "skipped", "writable": "skipped", "astro_command": "skipped"})
	})
}
