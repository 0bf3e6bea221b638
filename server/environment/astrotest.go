package environment

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/copydesk/copydesk/store"
)

// AstroCheck is one thing TestAstro looked at. Status is ok, failed,
// warning (worth knowing, posts still work) or skipped (an earlier check
// failed, so this one could not be made).
type AstroCheck struct {
	Name   string
	Status string
	Detail string
}

// AstroTest is what the server found at an environment's Astro project:
// OK when no check failed, so posts can be written there.
type AstroTest struct {
	OK          bool
	Detail      string
	ProjectPath string
	ContentDir  string
	Checks      []AstroCheck
}

// TestAstro looks at the Astro project an environment's saved
// configuration names, in order: the folder exists and is a folder; it is
// allowed here (under --astro-roots, not the data directory); it looks
// like an Astro project; the content folder the posts go to exists; the
// server can write a file there (made and removed at once); and, as a
// warning only, whether the project's own astro command is installed
// (node_modules/.bin/astro: copydesk writes files, the site's build is
// yours). A folder that is not allowed is looked at no further. An
// environment without an Astro project is a 409.
func (s *Service) TestAstro(ctx context.Context, sc store.Scope, id int64) (*AstroTest, error) {
	env, err := s.Get(ctx, sc, id)
	if err != nil {
		return nil, err
	}
	a := env.Configuration.Astro
	if a == nil || a.ProjectPath == "" {
		return nil, store.Conflict("environment %d (%s) has no Astro project to test: set configuration.astro.project_path "+
			"with PUT /api/environments/%d/configuration", env.ID, env.Name, env.ID)
	}
	return s.astro.test(a), nil
}

func (p AstroPlaces) test(a *store.AstroConfig) *AstroTest {
	t := &AstroTest{ProjectPath: a.ProjectPath, ContentDir: a.ContentDir}
	add := func(name, status, format string, args ...any) bool {
		t.Checks = append(t.Checks, AstroCheck{Name: name, Status: status, Detail: fmt.Sprintf(format, args...)})
		return status != "failed" && status != "skipped"
	}
	skipRest := func(from int, why string) {
		for _, n := range []string{"folder", "allowed", "astro_project", "content_folder", "writable", "astro_command"}[from:] {
			add(n, "skipped", "not checked: %s", why)
		}
	}
	fi, err := os.Stat(a.ProjectPath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		add("folder", "failed", "%s does not exist on the server", a.ProjectPath)
		skipRest(1, "the project folder does not exist")
		return t.finish()
	case err != nil:
		add("folder", "failed", "%s cannot be read by the server: %v", a.ProjectPath, unwrap(err))
		skipRest(1, "the project folder cannot be read")
		return t.finish()
	case !fi.IsDir():
		add("folder", "failed", "%s is a file, not a folder", a.ProjectPath)
		skipRest(1, "the project path is not a folder")
		return t.finish()
	}
	add("folder", "ok", "%s exists and is a folder", a.ProjectPath)
	if err := p.allowed(a.ProjectPath); err != nil {
		add("allowed", "failed", "%s", err)
		skipRest(2, "the server does not look into a folder it may not use")
		return t.finish()
	}
	add("allowed", "ok", "under one of the folders --astro-roots names, away from the data directory")
	if looksLikeAstro(a.ProjectPath) {
		add("astro_project", "ok", "an Astro project: astro.config.* or a package.json naming astro")
	} else {
		add("astro_project", "failed", "not an Astro project: no astro.config.* and no package.json naming astro")
	}
	content := filepath.Join(a.ProjectPath, a.ContentDir)
	fi, err = os.Stat(content)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		add("content_folder", "failed", "the content folder %s does not exist: create it (mkdir -p %s); the server does not make it", content, content)
		add("writable", "skipped", "not checked: the content folder does not exist")
	case err != nil:
		add("content_folder", "failed", "the content folder %s cannot be read: %v", content, unwrap(err))
		add("writable", "skipped", "not checked: the content folder cannot be read")
	case !fi.IsDir():
		add("content_folder", "failed", "%s is a file, not a folder", content)
		add("writable", "skipped", "not checked: the content path is not a folder")
	default:
		add("content_folder", "ok", "the content folder %s exists", content)
		f, err := os.CreateTemp(content, ".copydesk-test-*")
		if err != nil {
			add("writable", "failed", "the server cannot write in %s: %v", content, unwrap(err))
		} else {
			name := f.Name()
			_ = f.Close()
			if err := os.Remove(name); err != nil {
				add("writable", "failed", "the server wrote %s but cannot remove it: %v", name, unwrap(err))
			} else {
				add("writable", "ok", "the server wrote and removed a file in %s", content)
			}
		}
	}
	bin := filepath.Join(a.ProjectPath, "node_modules", ".bin", "astro")
	if fi, err := os.Stat(bin); err == nil && !fi.IsDir() && fi.Mode().Perm()&0o111 != 0 {
		add("astro_command", "ok", "%s is installed", bin)
	} else {
		add("astro_command", "warning", "no runnable %s: run npm install in the project to build the site (copydesk only writes the posts' files)", bin)
	}
	return t.finish()
}

// allowed is checkAstro's rule about where a project may be, without the
// existence and Astro checks TestAstro reports on their own.
func (p AstroPlaces) allowed(path string) error {
	if len(p.Roots) == 0 {
		//lint:ignore ST1005 Astro is a name
		return errors.New("Astro projects are off on this server: start it with --astro-roots (COPYDESK_ASTRO_ROOTS) naming the folders they may live under")
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return fmt.Errorf("%s cannot be resolved: %v", path, unwrap(err))
	}
	if p.DataDir != "" {
		if data, err := filepath.EvalSymlinks(p.DataDir); err == nil && (within(real, data) || within(data, real)) {
			return errors.New("the data directory and the folders holding it cannot be an Astro project")
		}
	}
	for _, root := range p.Roots {
		if r, err := filepath.EvalSymlinks(root); err == nil && within(real, r) {
			return nil
		}
	}
	return fmt.Errorf("not under one of the folders --astro-roots names (%s)", strings.Join(p.Roots, ", "))
}

func (t *AstroTest) finish() *AstroTest {
	var failed []string
	for _, c := range t.Checks {
		if c.Status == "failed" {
			failed = append(failed, c.Name)
		}
	}
	t.OK = len(failed) == 0
	if t.OK {
		t.Detail = "posts can be written to " + filepath.Join(t.ProjectPath, t.ContentDir)
	} else {
		t.Detail = "failed: " + strings.Join(failed, ", ")
	}
	return t
}

func unwrap(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
