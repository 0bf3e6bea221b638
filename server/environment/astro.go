package environment

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"github.com/copydesk/copydesk/store"
)

// AstroPlaces confine Astro projects: an environment's project_path is a
// folder the server reads, writes and deletes *.md files in, so an admin
// may name only a folder under one of Roots (serve --astro-roots), never
// the data directory or one holding it, and only one that exists and is
// an Astro project, when the configuration is saved.
type AstroPlaces struct {
	// Roots are the folders Astro projects may live under; none turns
	// Astro projects off.
	Roots []string
	// DataDir is the data directory, always refused.
	DataDir string
}

// CheckAstro judges an Astro configuration saved earlier, when it is
// used: the roots may have changed, or it was saved before there were
// any (astropost opens no folder it refuses).
func (s *Service) CheckAstro(a *store.AstroConfig) error { return s.astro.checkAstro(a) }

// checkAstro judges an Astro configuration's project folder where it is
// on disk (symlinks followed).
func (p AstroPlaces) checkAstro(a *store.AstroConfig) error {
	const field = "configuration.astro.project_path"
	if len(p.Roots) == 0 {
		return store.Invalid("%s: %v", field, p.allowed(""))
	}
	real, err := filepath.EvalSymlinks(a.ProjectPath)
	if err != nil {
		return store.Invalid("%s: %s is not an existing folder on the server", field, a.ProjectPath)
	}
	if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
		return store.Invalid("%s: %s is not an existing folder on the server", field, a.ProjectPath)
	}
	if err := p.allowed(real); err != nil {
		return store.Invalid("%s: %v", field, err)
	}
	if !looksLikeAstro(real) {
		return store.Invalid("%s: %s is not an Astro project: it has no astro.config.* and no package.json naming astro", field, a.ProjectPath)
	}
	return nil
}

// within reports whether path is dir or inside it.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// looksLikeAstro: an astro.config.* file, or a package.json with astro
// among its dependencies.
func looksLikeAstro(dir string) bool {
	if m, _ := filepath.Glob(filepath.Join(dir, "astro.config.*")); len(m) > 0 {
		return true
	}
	b, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		return false
	}
	var pkg struct {
		Dependencies    map[string]any `json:"dependencies"`
		DevDependencies map[string]any `json:"devDependencies"`
	}
	if json.Unmarshal(b, &pkg) != nil {
		return false
	}
	_, dep := pkg.Dependencies["astro"]
	_, dev := pkg.DevDependencies["astro"]
	return dep || dev
}
