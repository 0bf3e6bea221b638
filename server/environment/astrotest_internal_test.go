package environment

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/copydesk/copydesk/store"
)

// TestAstroTestNotAllowed: a saved folder that is no longer under the
// roots (or Astro projects turned off) is reported as not allowed and not
// looked into: no probe file is written.
func TestAstroTestNotAllowed(t *testing.T) {
	project := t.TempDir()
	content := filepath.Join(project, "src", "content", "blog")
	if err := os.MkdirAll(content, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(project, "astro.config.mjs"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	a := &store.AstroConfig{ProjectPath: project, ContentDir: "src/content/blog"}
	for name, p := range map[string]AstroPlaces{
		"OtherRoot": {Roots: []string{t.TempDir()}},
		"Off":       {},
		"DataDir":   {Roots: []string{project}, DataDir: filepath.Join(project, "data")},
	} {
		t.Run(name, func(t *testing.T) {
			if name == "DataDir" {
				if err := os.MkdirAll(p.DataDir, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			res := p.test(a)
			if res.OK || len(res.Checks) != 6 {
				t.Fatalf("%+v", res)
			}
			if res.Checks[0].Status != "ok" || res.Checks[1].Name != "allowed" || res.Checks[1].Status != "failed" {
				t.Fatalf("%+v", res.Checks)
			}
			for _, c := range res.Checks[2:] {
				if c.Status != "skipped" {
					t.Errorf("%s: %s, want skipped", c.Name, c.Status)
				}
			}
			if !strings.Contains(res.Detail, "allowed") {
				t.Errorf("detail %q", res.Detail)
			}
		})
	}
	if res := (AstroPlaces{Roots: []string{filepath.Dir(project)}}).test(a); !res.OK {
		t.Fatalf("under its root: %+v", res)
	}
}
