package slug_test

import (
	"strings"
	"testing"

	"github.com/copydesk/copydesk/server/slug"
)

func TestMake(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, want string }{
		{"Café Olé", "cafe-ole"},
		{"  Hello,   World!  ", "hello-world"},
		{"Straße", "strasse"},
		{"Æsir & Øl", "aesir-and-ol"},
		{"Łódź", "lodz"},
		{"Ångström über naïve", "angstrom-uber-naive"},
		{"e\u0301te\u0301", "ete"}, // decomposed accents
		{"ＡＢＣ１２３", "abc123"},       // full-width forms
		{"Issue #42: Q&A", "issue-42-q-and-a"},
		{"---", ""},
		{"日本語", ""},
		{"🙂🙃", ""},
		{"Crème brûlée 2024", "creme-brulee-2024"},
	} {
		if got := slug.Make(c.name, slug.Max); got != c.want {
			t.Errorf("Make(%q) = %q, want %q", c.name, got, c.want)
		}
		if got := slug.Make(c.name, slug.Max); got != "" && !slug.Valid(got, slug.Max) {
			t.Errorf("Make(%q) = %q is not valid", c.name, got)
		}
	}
}

func TestMakeCutsAtMax(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("word ", 40)
	got := slug.Make(long, slug.Max)
	if len(got) > slug.Max || !slug.Valid(got, slug.Max) || strings.HasSuffix(got, "-") {
		t.Fatalf("Make(long) = %q (%d chars)", got, len(got))
	}
	one := strings.Repeat("a", 200)
	if got := slug.Make(one, 10); got != strings.Repeat("a", 10) {
		t.Fatalf("Make(aaaa…, 10) = %q", got)
	}
}

func TestValid(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		s  string
		ok bool
	}{
		{"cafe-ole", true}, {"a", true}, {"a1-b2", true},
		{"", false}, {"-a", false}, {"a-", false}, {"a--b", false}, {"Café", false}, {"A", false},
		{"a_b", false}, {"../x", false}, {"a/b", false}, {"a\x00b", false}, {strings.Repeat("a", 97), false},
		{strings.Repeat("a", 96), true},
	} {
		if got := slug.Valid(c.s, slug.Max); got != c.ok {
			t.Errorf("Valid(%q) = %v, want %v", c.s, got, c.ok)
		}
	}
}

func TestGenerated(t *testing.T) {
	t.Parallel()
	g := slug.Generated("Café", "category", slug.Max)
	if a, b, c := g(7, 1), g(7, 2), g(7, 3); a != "cafe" || b != "cafe-2" || c != "cafe-3" {
		t.Fatalf("tries = %q %q %q", a, b, c)
	}
	g = slug.Generated("日本", "tag", slug.Max)
	if a, b := g(12, 1), g(12, 2); a != "tag-12" || b != "tag-12-2" {
		t.Fatalf("tries = %q %q", a, b)
	}
	long := slug.Generated(strings.Repeat("x", 200), "post", slug.Max)
	if s := long(1, 12); len(s) > slug.Max || !strings.HasSuffix(s, "-12") || !slug.Valid(s, slug.Max) {
		t.Fatalf("long try = %q (%d)", s, len(s))
	}
}
