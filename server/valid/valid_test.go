package valid_test

import (
	"strings"
	"testing"

	"github.com/copydesk/copydesk/server/valid"
	"github.com/copydesk/copydesk/store"
)

func TestLine(t *testing.T) {
	for v, ok := range map[string]bool{"plain": true, "tab\there": false, "nul\x00": false, "del\x7f": false, "new\nline": false,
		"ünïcode ✓": true, "": true, "عربي and עברית": true, "mark\u200fRLM": true,
		"c1\u0085next-line": false, "c1\u009bcsi": false, "line\u2028sep": false, "para\u2029sep": false,
		"\u202egpj.exe": false, "lre\u202a": false, "rle\u202b": false, "pdf\u202c": false, "lro\u202d": false,
		"lri\u2066": false, "rli\u2067": false, "fsi\u2068": false, "pdi\u2069": false} {
		err := valid.Line("name", v)
		if (err == nil) != ok || (err != nil && (store.KindOf(err) != store.KindInvalid || !strings.HasPrefix(store.Message(err), "name: "))) {
			t.Errorf("Line(%q) = %v", v, err)
		}
	}
	if err := valid.Line("full_name", "Ann\u202eevil"); !strings.Contains(store.Message(err), "bidirectional") {
		t.Errorf("a bidi override is refused as %q; the detail should say what it is", store.Message(err))
	}
}

func TestText(t *testing.T) {
	for v, ok := range map[string]bool{"one\ntwo": true, "crlf\r\nend": true, "tab\there": true, "\u202eright-to-left": true,
		"nul\x00": false, "esc\x1b[31m": false, "del\x7f": false, "c1\u0085": false} {
		err := valid.Text("description", v)
		if (err == nil) != ok || (err != nil && store.Message(err) != "description: must not contain control characters other than line breaks and tabs") {
			t.Errorf("Text(%q) = %v", v, err)
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
		"https://example.com/\u202e":     "",
	} {
		got, ok := valid.SiteURL(raw)
		if got != want || ok != (want != "") {
			t.Errorf("SiteURL(%q) = %q, %v; want %q", raw, got, ok, want)
		}
	}
}

// CallURL: an http(s) address with a host and no credentials, at most max
// characters; an address literal the outbound guard refuses is refused,
// a private one only when asked; the fragment is the caller's.
func TestCallURL(t *testing.T) {
	for _, c := range []struct {
		raw           string
		refusePrivate bool
		want          string // "" for a refusal
		detail        string
	}{
		{" https://blog.example/feed#top ", false, "https://blog.example/feed#top", ""},
		{"http://10.0.0.1/hook", false, "http://10.0.0.1/hook", ""},
		{"http://10.0.0.1/hook", true, "", "url: "},
		{"http://169.254.169.254/latest", false, "", "url: "},
		{"ftp://blog.example/feed", false, "", "url: must be an http or https address with a host and without credentials"},
		{"https://ann:pw@blog.example/", false, "", "url: must be an http or https address"},
		{"blog.example/feed", false, "", "url: must be an http or https address"},
		{"https://blog.example/\nx", false, "", "url: "},
		{"https://blog.example/" + strings.Repeat("a", 30), false, "", "url: "},
	} {
		u, err := valid.CallURL("url", c.raw, 40, c.refusePrivate)
		switch {
		case c.want != "" && (err != nil || u.String() != c.want):
			t.Errorf("CallURL(%q, %v) = %v, %v; want %s", c.raw, c.refusePrivate, u, err, c.want)
		case c.want == "" && (store.KindOf(err) != store.KindInvalid || !strings.HasPrefix(err.Error(), c.detail)):
			t.Errorf("CallURL(%q, %v): %v, want a refusal starting %q", c.raw, c.refusePrivate, err, c.detail)
		}
	}
}
