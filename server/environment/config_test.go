package environment_test

import (
	"strings"
	"testing"

	"github.com/copydesk/copydesk/server/environment"
	"github.com/copydesk/copydesk/store"
	"github.com/copydesk/copydesk/store/storetest"
)

func ptr[T any](v T) *T { return &v }

func TestNormalizeConfig(t *testing.T) {
	wp := func(base string) store.EnvironmentConfig {
		return store.EnvironmentConfig{WordPress: &store.WordPressConfig{BaseURL: base}}
	}
	astro := func(project, content string) store.EnvironmentConfig {
		return store.EnvironmentConfig{Astro: &store.AstroConfig{ProjectPath: project, ContentDir: content}}
	}

	ok := []struct {
		name  string
		in    store.EnvironmentConfig
		check func(t *testing.T, c store.EnvironmentConfig)
	}{
		{"Defaults", store.EnvironmentConfig{}, func(t *testing.T, c store.EnvironmentConfig) {
			if c.Language != "en" || c.Timezone != "UTC" || c.WordPress != nil || c.Astro != nil {
				t.Errorf("got %+v, want language en, timezone UTC and nothing else", c)
			}
		}},
		{"KeepsValidLanguageAndZone", store.EnvironmentConfig{Language: "pt-BR", Timezone: "America/Sao_Paulo"}, func(t *testing.T, c store.EnvironmentConfig) {
			if c.Language != "pt-BR" || c.Timezone != "America/Sao_Paulo" {
				t.Errorf("got %q %q", c.Language, c.Timezone)
			}
		}},
		{"WordPressTrailingSlashDropped", wp("https://example.com/"), func(t *testing.T, c store.EnvironmentConfig) {
			if c.WordPress.BaseURL != "https://example.com" || c.WordPress.DefaultStatus != "draft" {
				t.Errorf("got %+v", c.WordPress)
			}
		}},
		{"WordPressSubpathTrimmed", wp("  http://localhost:8080/blog//  "), func(t *testing.T, c store.EnvironmentConfig) {
			if c.WordPress.BaseURL != "http://localhost:8080/blog" {
				t.Errorf("BaseURL = %q", c.WordPress.BaseURL)
			}
		}},
		{"WordPressStatusKept", store.EnvironmentConfig{WordPress: &store.WordPressConfig{BaseURL: "https://x.io", DefaultStatus: "publish", CredentialID: ptr(int64(1))}},
			func(t *testing.T, c store.EnvironmentConfig) {
				if c.WordPress.DefaultStatus != "publish" {
					t.Errorf("DefaultStatus = %q", c.WordPress.DefaultStatus)
				}
			}},
		{"AstroPathsCleaned", astro("/srv/site/./blog/../", "./src//content/posts/"), func(t *testing.T, c store.EnvironmentConfig) {
			if c.Astro.ProjectPath != "/srv/site" || c.Astro.ContentDir != "src/content/posts" {
				t.Errorf("got %+v", c.Astro)
			}
		}},
		{"AstroContentDirDefault", astro("/srv/site", ""), func(t *testing.T, c store.EnvironmentConfig) {
			if c.Astro.ContentDir != "src/content/blog" {
				t.Errorf("ContentDir = %q", c.Astro.ContentDir)
			}
		}},
		{"AstroDotsInsideNameAllowed", astro("/srv/site", "..drafts/x/../y"), func(t *testing.T, c store.EnvironmentConfig) {
			if c.Astro.ContentDir != "..drafts/y" {
				t.Errorf("ContentDir = %q", c.Astro.ContentDir)
			}
		}},
	}
	for _, tt := range ok {
		t.Run("OK/"+tt.name, func(t *testing.T) {
			c := tt.in
			if err := environment.NormalizeConfig(&c); err != nil {
				t.Fatalf("NormalizeConfig: %v", err)
			}
			tt.check(t, c)
		})
	}

	bad := []struct {
		name  string
		in    store.EnvironmentConfig
		field string
	}{
		{"LanguageUpperCase", store.EnvironmentConfig{Language: "EN"}, "configuration.language"},
		{"LanguageWord", store.EnvironmentConfig{Language: "english"}, "configuration.language"},
		{"LanguageOneLetter", store.EnvironmentConfig{Language: "e"}, "configuration.language"},
		{"TimezoneUnknown", store.EnvironmentConfig{Timezone: "Mars/Olympus_Mons"}, "configuration.timezone"},
		{"TimezoneLocal", store.EnvironmentConfig{Timezone: "Local"}, "configuration.timezone"},
		{"TimezonePath", store.EnvironmentConfig{Timezone: "../../etc/passwd"}, "configuration.timezone"},
		{"AgentIDZero", store.EnvironmentConfig{DefaultAgentID: ptr(int64(0))}, "configuration.default_agent_id"},
		{"ArchetypeIDNegative", store.EnvironmentConfig{DefaultArchetypeID: ptr(int64(-1))}, "configuration.default_archetype_id"},
		{"WordPressEmpty", wp(""), "configuration.wordpress.base_url"},
		{"WordPressFTP", wp("ftp://example.com"), "configuration.wordpress.base_url"},
		{"WordPressNoScheme", wp("example.com"), "configuration.wordpress.base_url"},
		{"WordPressJavascript", wp("javascript:alert(1)"), "configuration.wordpress.base_url"},
		{"WordPressMissingHost", wp("https://"), "configuration.wordpress.base_url"},
		{"WordPressMissingHostWithPath", wp("https:///wp"), "configuration.wordpress.base_url"},
		{"WordPressPortWithoutHost", wp("http://:8080"), "configuration.wordpress.base_url"},
		{"WordPressQuery", wp("https://example.com/?p=1"), "configuration.wordpress.base_url"},
		{"WordPressEmptyQuery", wp("https://example.com/?"), "configuration.wordpress.base_url"},
		{"WordPressFragment", wp("https://example.com/#top"), "configuration.wordpress.base_url"},
		{"WordPressUserInfo", wp("https://user:pass@example.com"), "configuration.wordpress.base_url"},
		{"WordPressUserOnly", wp("https://user@example.com"), "configuration.wordpress.base_url"},
		{"WordPressSpaceInHost", wp("https://exa mple.com"), "configuration.wordpress.base_url"},
		{"WordPressCredentialZero", store.EnvironmentConfig{WordPress: &store.WordPressConfig{BaseURL: "https://x.io", CredentialID: ptr(int64(0))}}, "configuration.wordpress.credential_id"},
		{"WordPressStatusUnknown", store.EnvironmentConfig{WordPress: &store.WordPressConfig{BaseURL: "https://x.io", DefaultStatus: "published"}}, "configuration.wordpress.default_status"},
		{"AstroProjectMissing", astro("", "src"), "configuration.astro.project_path"},
		{"AstroProjectRelative", astro("site/blog", "src"), "configuration.astro.project_path"},
		{"AstroContentParent", astro("/srv/site", ".."), "configuration.astro.content_dir"},
		{"AstroContentEscapes", astro("/srv/site", "../other/src"), "configuration.astro.content_dir"},
		{"AstroContentEscapesAfterClean", astro("/srv/site", "src/../../other"), "configuration.astro.content_dir"},
		{"AstroContentAbsolute", astro("/srv/site", "/etc"), "configuration.astro.content_dir"},
	}
	for _, tt := range bad {
		t.Run("Invalid/"+tt.name, func(t *testing.T) {
			c := tt.in
			err := environment.NormalizeConfig(&c)
			storetest.WantKind(t, err, store.KindInvalid)
			if !strings.HasPrefix(store.Message(err), tt.field+":") {
				t.Errorf("message %q does not start with %q", store.Message(err), tt.field+":")
			}
		})
	}
}

func TestSlugify(t *testing.T) {
	for in, want := range map[string]string{
		"My Blog!":                "my-blog",
		"  Café Blog  ":           "caf-blog",
		"already-a-slug":          "already-a-slug",
		"Tabs\tand\nnewlines":     "tabs-and-newlines",
		"2025 Review":             "2025-review",
		"":                        "environment",
		"!!!":                     "environment",
		"日本語":                     "environment",
		strings.Repeat("ab ", 40): strings.TrimSuffix(strings.Repeat("ab-", 19), "-"),
	} {
		got := environment.Slugify(in)
		if got != want {
			t.Errorf("Slugify(%q) = %q, want %q", in, got, want)
		}
		if !environment.ValidSlug(got) || len(got) > 56 {
			t.Errorf("Slugify(%q) = %q, which is no valid slug with room for a -50", in, got)
		}
	}
}

func TestValidSlug(t *testing.T) {
	for s, want := range map[string]bool{
		"blog": true, "my-blog-2": true, "a": true, strings.Repeat("a", 64): true,
		"": false, strings.Repeat("a", 65): false, "My-Blog": false, "-blog": false, "blog-": false,
		"my--blog": false, "my blog": false, "my_blog": false, "café": false,
	} {
		if got := environment.ValidSlug(s); got != want {
			t.Errorf("ValidSlug(%q) = %v, want %v", s, got, want)
		}
	}
}
