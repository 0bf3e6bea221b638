package valid_test

import (
	"strings"
	"testing"

	"github.com/copydesk/copydesk/server/valid"
	"github.com/copydesk/copydesk/store"
)

func TestLine(t *testing.T) {
	for v, ok := range map[string]bool{"plain": true, "tab\there": false, "nul\x00": false, "del\x7f": false, "new\nline": false, "ünïcode ✓": true, "": true} {
		err := valid.Line("name", v)
		if (err == nil) != ok || (err != nil && (store.KindOf(err) != store.KindInvalid || !strings.HasPrefix(store.Message(err), "name: "))) {
			t.Errorf("Line(%q) = %v", v, err)
		}
	}
}

func TestMaxLen(t *testing.T) {
	if err := valid.MaxLen("name", strings.Repeat("é", 3), 3); err != nil {
		t.Errorf("counts bytes, not characters: %v", err)
	}
	if err := valid.MaxLen("name", "abcd", 3); store.Message(err) != "name: must be at most 3 characters" {
		t.Errorf("MaxLen over = %v", err)
	}
}

func TestLanguage(t *testing.T) {
	for tag, ok := range map[string]bool{"en": true, "pt-BR": true, "zh-Hant-TW": true, "gsw": true,
		"": false, "e": false, "EN": false, "english": false, "en_US": false, "en-": false} {
		if err := valid.Language("language", tag); (err == nil) != ok {
			t.Errorf("Language(%q) = %v", tag, err)
		}
	}
}

func TestSiteURL(t *testing.T) {
	for raw, want := range map[string]string{
		"https://example.com":            "https://example.com",
		" https://example.com/ ":         "https://example.com",
		"http://localhost:11434/v1//":    "http://localhost:11434/v1",
		"https://example.com/blog/path/": "https://example.com/blog/path",
		"":                               "",
		"example.com":                    "",
		"ftp://example.com":              "",
		"javascript:alert(1)":            "",
		"https://":                       "",
		"http://:8080":                   "",
		"https://u:p@example.com":        "",
		"https://example.com/?":          "",
		"https://example.com/?a=1":       "",
		"https://example.com/#top":       "",
		"https://exa mple.com":           "",
	} {
		got, ok := valid.SiteURL(raw)
		if got != want || ok != (want != "") {
			t.Errorf("SiteURL(%q) = %q, %v; want %q", raw, got, ok, want)
		}
	}
}
