package environment

import (
	"path/filepath"
	"strings"
	"time"

	"github.com/copydesk/copydesk/server/valid"
	"github.com/copydesk/copydesk/store"
)

// Defaults of a configuration, filled in where a field is left out.
const (
	defaultLanguage      = "en"
	defaultTimezone      = "UTC"
	defaultPostStatus    = "draft"
	defaultAstroContents = "src/content/blog"
)

// NormalizeConfig is the one set of rules of an environment's
// configuration: it fills the defaults, cleans paths and addresses, and
// checks every field, naming the first one that is wrong as
// "configuration.<field>". The configuration is judged as a whole, so a
// create, an update and a replace all store the same thing.
func NormalizeConfig(c *store.EnvironmentConfig) error {
	if c.Language == "" {
		c.Language = defaultLanguage
	}
	if err := valid.Language("configuration.language", c.Language); err != nil {
		return err
	}
	if c.Timezone == "" {
		c.Timezone = defaultTimezone
	}
	// "Local" is the server's own zone, which says nothing about the site.
	if _, err := time.LoadLocation(c.Timezone); err != nil || strings.EqualFold(c.Timezone, "local") {
		return store.Invalid("configuration.timezone: must be an IANA time zone like UTC or Europe/Berlin")
	}
	if c.DefaultAgentID != nil && *c.DefaultAgentID <= 0 {
		return store.Invalid("configuration.default_agent_id: must be a positive id")
	}
	if c.DefaultArchetypeID != nil && *c.DefaultArchetypeID <= 0 {
		return store.Invalid("configuration.default_archetype_id: must be a positive id")
	}
	if c.WordPress != nil {
		if err := normalizeWordPress(c.WordPress); err != nil {
			return err
		}
	}
	if c.Astro != nil {
		return normalizeAstro(c.Astro)
	}
	return nil
}

func normalizeWordPress(wp *store.WordPressConfig) error {
	addr, ok := valid.SiteURL(wp.BaseURL)
	if !ok {
		return store.Invalid("configuration.wordpress.base_url: must be the http or https address of the WordPress site, like https://example.com")
	}
	wp.BaseURL = addr
	if wp.CredentialID != nil && *wp.CredentialID <= 0 {
		return store.Invalid("configuration.wordpress.credential_id: must be a positive id")
	}
	switch wp.DefaultStatus {
	case "":
		wp.DefaultStatus = defaultPostStatus
	case "draft", "publish", "pending", "private":
	default:
		return store.Invalid("configuration.wordpress.default_status: must be one of draft, publish, pending, private")
	}
	return nil
}

// normalizeAstro keeps the content folder inside the project: posts are
// written there, so it must not lead anywhere else on the server.
func normalizeAstro(a *store.AstroConfig) error {
	if err := valid.Line("configuration.astro.project_path", a.ProjectPath); err != nil {
		return err
	}
	if err := valid.Line("configuration.astro.content_dir", a.ContentDir); err != nil {
		return err
	}
	if a.ProjectPath == "" || !filepath.IsAbs(a.ProjectPath) {
		return store.Invalid("configuration.astro.project_path: must be the absolute path of the Astro project on the server")
	}
	a.ProjectPath = filepath.Clean(a.ProjectPath)
	if a.ContentDir == "" {
		a.ContentDir = defaultAstroContents
	}
	cd := filepath.ToSlash(filepath.Clean(a.ContentDir))
	if filepath.IsAbs(a.ContentDir) || cd == ".." || strings.HasPrefix(cd, "../") {
		return store.Invalid("configuration.astro.content_dir: must be a folder inside the project, like src/content/blog")
	}
	a.ContentDir = cd
	return nil
}
