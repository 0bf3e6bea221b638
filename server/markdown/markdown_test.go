package markdown

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer/html"
)

// upstream is goldmark with its own extensions, the ones adapted here: the
// adaptation must render exactly as they do.
var upstream = goldmark.New(goldmark.WithExtensions(extension.Table, extension.Strikethrough, extension.TaskList),
	goldmark.WithRendererOptions(html.WithUnsafe()))

func upstreamRender(t testing.TB, md string) string {
	var buf bytes.Buffer
	if err := upstream.Convert([]byte(md), &buf); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// fixtures reads the inputs of goldmark's own extension test files
// (testdata, copied from goldmark v1.8.7's extension/_test).
func fixtures(t testing.TB) map[string]string {
	out := map[string]string{}
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) != 3 {
		t.Fatalf("fixtures: %v %v", files, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range strings.Split(string(b), "//= = = = = = = = = = = = = = = = = = = = = = = =//") {
			parts := strings.Split(c, "//- - - - - - - - -//\n")
			if len(parts) != 3 {
				continue
			}
			out[filepath.Base(f)+"#"+strings.TrimSpace(parts[0])+"/"+string(rune('a'+i%26))] = parts[1]
		}
	}
	if len(out) < 20 {
		t.Fatalf("read %d fixture cases; the format changed?", len(out))
	}
	return out
}

func TestRenderMatchesUpstream(t *testing.T) {
	t.Parallel()
	for name, md := range fixtures(t) {
		got, err := Render(md)
		if err != nil {
			t.Fatal(err)
		}
		if want := upstreamRender(t, md); got != want {
			t.Errorf("%s:\n%s\ngot:\n%s\nwant:\n%s", name, md, got, want)
		}
	}
}

func TestRender(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, md, want string }{
		{"Table", "| a | b | c | d |\n|:--|--:|:-:|---|\n| 1 | 2 | 3 | 4 |\n",
			"<table>\n<thead>\n<tr>\n<th style=\"text-align:left\">a</th>\n<th style=\"text-align:right\">b</th>\n" +
				"<th style=\"text-align:center\">c</th>\n<th>d</th>\n</tr>\n</thead>\n<tbody>\n<tr>\n" +
				"<td style=\"text-align:left\">1</td>\n<td style=\"text-align:right\">2</td>\n" +
				"<td style=\"text-align:center\">3</td>\n<td>4</td>\n</tr>\n</tbody>\n</table>\n"},
		{"NotADelimiterRow", "| a |\n| :: |\n", "<p>| a |\n| :: |</p>\n"},
		{"Strikethrough", "~~gone~~ here", "<p><del>gone</del> here</p>\n"},
		{"TaskList", "- [x] done\n- [ ] todo\n- [y] no box\n",
			"<ul>\n<li><input checked=\"\" disabled=\"\" type=\"checkbox\"> done</li>\n" +
				"<li><input disabled=\"\" type=\"checkbox\"> todo</li>\n<li>[y] no box</li>\n</ul>\n"},
		{"RawHTMLPassesThrough", "<figure><img src=\"a.png\"></figure>\n", "<figure><img src=\"a.png\"></figure>\n"},
		// Linkify is left out on purpose (markdown.go): a bare URL stays text.
		{"BareURLIsText", "see https://example.com/x", "<p>see https://example.com/x</p>\n"},
	}
	for _, c := range cases {
		got, err := Render(c.md)
		if err != nil || got != c.want {
			t.Errorf("%s: got %q, %v\nwant %q", c.name, got, err, c.want)
		}
	}
}

// FuzzRenderMatchesUpstream holds the adapted delimiter-row and task-box
// readers (hand-written where upstream has regular expressions) to
// upstream's output on any input.
func FuzzRenderMatchesUpstream(f *testing.F) {
	for _, md := range fixtures(f) {
		f.Add(md)
	}
	f.Add("| a |\n|\t:-:\f|\n")
	f.Add("- [\t]\tx\n- [X]\n")
	f.Fuzz(func(t *testing.T, md string) {
		got, err := Render(md)
		if err != nil {
			t.Fatal(err)
		}
		if want := upstreamRender(t, md); got != want {
			t.Fatalf("%q:\ngot  %q\nwant %q", md, got, want)
		}
	})
}
