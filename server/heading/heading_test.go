package heading_test

import (
	"strings"
	"testing"

	"github.com/copydesk/copydesk/server/heading"
)

func TestTitle(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, md, title, body string
		ok                    bool
	}{
		{"LevelOne", "# Hello\n\nText.", "Hello", "Text.", true},
		{"LevelOneAfterIntro", "Intro\n\n# Hello #\nText.", "Hello", "Intro\n\nText.", true},
		{"LevelTwoStays", "## Part\n\nText.", "Part", "## Part\n\nText.", true},
		{"FencedFirst", "```bash\n# install deps\n```\n# Real\n", "Real", "```bash\n# install deps\n```\n", true},
		{"LongerFenceNotClosedByShorter", "````\n```\n# no\n````\n# Yes\n", "Yes", "````\n```\n# no\n````\n", true},
		{"TildeFence", "~~~\n# no\n~~~\n## Yes\n", "Yes", "~~~\n# no\n~~~\n## Yes\n", true},
		{"UnclosedFence", "```\n# no\n", "", "```\n# no\n", false},
		{"IndentedCode", "    # no\n\nText.", "", "    # no\n\nText.", false},
		{"NoSpace", "#hashtag\n", "", "#hashtag\n", false},
		{"Empty", "", "", "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			title, body, ok := heading.Title(c.md)
			if title != c.title || body != c.body || ok != c.ok {
				t.Fatalf("Title(%q) = %q, %q, %v; want %q, %q, %v", c.md, title, body, ok, c.title, c.body, c.ok)
			}
		})
	}
}

func TestFirstLine(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("word ", 40)
	cases := []struct{ md, want string }{
		{"just text", "just text"},
		{"\n\n> - **Bold** start and `code`\nmore", "Bold start and code"},
		{"```\n# not this\n```\n1. First step\n", "First step"},
		{long, strings.TrimSpace(strings.Repeat("word ", 24)) + "…"},
		{"```\nonly code\n```", ""},
		{" \n\t\n", ""},
	}
	for _, c := range cases {
		got, ok := heading.FirstLine(c.md)
		if got != c.want || ok != (c.want != "") {
			t.Errorf("FirstLine(%q) = %q, %v; want %q", c.md, got, ok, c.want)
		}
	}
}
