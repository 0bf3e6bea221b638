// Package sanitize cleans the HTML copydesk sends to a WordPress site with
// an allow-list: the elements and attributes a post's Markdown renders to
// (headings, paragraphs, lists, links, images, tables, code, quotes, task
// lists), links and images with safe schemes only. Everything else is
// taken out: script and the elements that carry code or forms with all
// they hold, unknown elements keeping their text, event handlers, style
// beyond a table cell's alignment, and javascript:, data: or vbscript:
// addresses. The text itself is never lost: it is escaped.
//
// Why not bluemonday, the well-kept library for this: it compiles about 70
// regular expressions in its packages' init, about 5.5 ms and 1 MB at every
// start of the binary (measured with GODEBUG=inittrace=1), which the
// start-up budget cannot hold (docs/DECISIONS.md, "Footprint and
// releases"). The policy here is small and fixed, and golang.org/x/net/html,
// which copydesk already links for web sources, does the parsing and the
// escaping, as it does inside bluemonday.
package sanitize

import (
	"net/url"
	"regexp"
	"strings"
	"sync"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// HTML returns html with everything the policy does not allow taken out.
func HTML(s string) string {
	body := &html.Node{Type: html.ElementNode, DataAtom: atom.Body, Data: "body"}
	nodes, err := html.ParseFragment(strings.NewReader(s), body)
	if err != nil { // only a failing reader errs; a strings.Reader never does
		return html.EscapeString(s)
	}
	var b strings.Builder
	for _, n := range nodes {
		clean(&b, n)
	}
	return b.String()
}

// dropped elements go with all they hold: code, styles, frames, forms and
// foreign content.
var dropped = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Noscript: true, atom.Template: true, atom.Iframe: true,
	atom.Frame: true, atom.Frameset: true, atom.Object: true, atom.Embed: true, atom.Applet: true,
	atom.Form: true, atom.Button: true, atom.Select: true, atom.Textarea: true, atom.Option: true,
	atom.Svg: true, atom.Math: true, atom.Link: true, atom.Meta: true, atom.Base: true, atom.Head: true,
	atom.Title: true, atom.Xmp: true, atom.Plaintext: true, atom.Noembed: true, atom.Noframes: true,
	atom.Param: true, atom.Source: true, atom.Track: true, atom.Audio: true, atom.Video: true, atom.Canvas: true,
	atom.Dialog: true, atom.Slot: true,
}

// attrRule checks one attribute's value: the value to write, or false.
type attrRule func(val string) (string, bool)

func anyValue(val string) (string, bool) { return val, true }

func matching(pattern string) attrRule {
	re := regexp.MustCompile(pattern)
	return func(val string) (string, bool) {
		val = strings.TrimSpace(val)
		return val, re.MatchString(val)
	}
}

// policy is the allow-list: the elements kept, each with its attributes,
// and the attributes any of them may have. It is built on first use, so
// that its regular expressions cost nothing at start.
type policy struct {
	elements map[atom.Atom]map[string]attrRule
	global   map[string]attrRule
}

var thePolicy = sync.OnceValue(func() *policy {
	integer := matching(`^[0-9]{1,6}$`)
	cell := map[string]attrRule{"colspan": integer, "rowspan": integer, "align": matching(`^(?i)(left|right|center|justify)$`),
		"style": matching(`^text-align:\s*(left|right|center);?$`), "scope": matching(`^(?i)(row|col|rowgroup|colgroup)$`)}
	heading := map[string]attrRule{"id": anyValue}
	plain := map[string]attrRule{}
	m := map[atom.Atom]map[string]attrRule{
		atom.A:          {"href": safeURL(linkSchemes), "name": anyValue, "hreflang": anyValue},
		atom.Img:        {"src": safeURL(imageSchemes), "alt": anyValue, "width": integer, "height": integer},
		atom.Ol:         {"start": integer, "reversed": anyValue, "type": matching(`^[1aAiI]$`)},
		atom.Li:         {"value": integer},
		atom.Code:       {"class": matching(`^language-[A-Za-z0-9_+#.-]{1,40}$`)},
		atom.Td:         cell,
		atom.Th:         cell,
		atom.Col:        {"span": integer},
		atom.Colgroup:   {"span": integer},
		atom.Blockquote: {"cite": safeURL(linkSchemes)},
		atom.Q:          {"cite": safeURL(linkSchemes)},
		atom.Time:       {"datetime": anyValue},
		// Task lists: a checkbox (isCheckbox), nothing else of a form.
		atom.Input: {"type": matching(`^(?i)checkbox$`), "checked": anyValue, "disabled": anyValue},
		atom.H1:    heading, atom.H2: heading, atom.H3: heading, atom.H4: heading, atom.H5: heading, atom.H6: heading,
	}
	for _, a := range []atom.Atom{atom.P, atom.Br, atom.Hr, atom.Pre, atom.Em, atom.Strong, atom.B, atom.I, atom.U,
		atom.S, atom.Del, atom.Ins, atom.Sub, atom.Sup, atom.Mark, atom.Small, atom.Ul, atom.Dl, atom.Dt, atom.Dd,
		atom.Figure, atom.Figcaption, atom.Table, atom.Thead, atom.Tbody, atom.Tfoot, atom.Tr, atom.Caption,
		atom.Div, atom.Span, atom.Abbr, atom.Cite, atom.Kbd, atom.Samp, atom.Var, atom.Details, atom.Summary,
		atom.Strike, atom.Wbr, atom.Address, atom.Section, atom.Article, atom.Aside, atom.Header, atom.Footer} {
		m[a] = plain
	}
	return &policy{elements: m, global: map[string]attrRule{"title": anyValue, "lang": anyValue,
		"dir": matching(`^(?i)(ltr|rtl|auto)$`)}}
})

// The schemes a link or an image may use; an address without a scheme
// (relative, #fragment, //host) is kept.
var (
	linkSchemes  = map[string]bool{"http": true, "https": true, "mailto": true, "tel": true}
	imageSchemes = map[string]bool{"http": true, "https": true}
)

// safeURL keeps an address whose scheme is one of schemes. Browsers ignore
// tabs and line breaks in a URL and leading control characters and spaces
// ("java\tscript:", " javascript:"), so those are removed before the
// scheme is read, and what is written is the cleaned address.
func safeURL(schemes map[string]bool) attrRule {
	return func(val string) (string, bool) {
		val = strings.Map(func(r rune) rune {
			if r == '\t' || r == '\n' || r == '\r' {
				return -1
			}
			return r
		}, val)
		val = strings.TrimFunc(val, func(r rune) bool { return r <= ' ' })
		u, err := url.Parse(val)
		if err != nil {
			return "", false
		}
		if u.Scheme == "" {
			// No scheme by the parser's reading; refuse anything that a
			// browser might still take for one (a colon before any slash).
			if i := strings.IndexByte(val, ':'); i >= 0 && !strings.ContainsAny(val[:i], "/?#") {
				return "", false
			}
			return val, true
		}
		return val, schemes[strings.ToLower(u.Scheme)]
	}
}

// clean writes n as the policy allows it.
func clean(b *strings.Builder, n *html.Node) {
	switch n.Type {
	case html.TextNode:
		b.WriteString(html.EscapeString(n.Data))
		return
	case html.ElementNode:
	default: // comments, doctypes
		return
	}
	if dropped[n.DataAtom] || n.Namespace != "" || (n.DataAtom == atom.Input && !isCheckbox(n)) {
		return
	}
	pol := thePolicy()
	attrs, ok := pol.elements[n.DataAtom]
	if !ok { // unknown: its content stays, the element goes
		cleanChildren(b, n)
		return
	}
	b.WriteByte('<')
	b.WriteString(n.Data)
	for _, a := range n.Attr {
		if a.Namespace != "" {
			continue
		}
		rule, ok := attrs[a.Key]
		if !ok {
			rule, ok = pol.global[a.Key]
		}
		if !ok {
			continue
		}
		val, keep := rule(a.Val)
		if !keep {
			continue
		}
		b.WriteByte(' ')
		b.WriteString(a.Key)
		b.WriteString(`="`)
		b.WriteString(html.EscapeString(val))
		b.WriteByte('"')
	}
	b.WriteByte('>')
	if voidElements[n.DataAtom] {
		return
	}
	// The parser drops a newline right after <pre>: write one back where
	// the text begins with one, as html.Render does, so none is lost.
	if n.DataAtom == atom.Pre && n.FirstChild != nil && n.FirstChild.Type == html.TextNode &&
		strings.HasPrefix(n.FirstChild.Data, "\n") {
		b.WriteByte('\n')
	}
	cleanChildren(b, n)
	b.WriteString("</")
	b.WriteString(n.Data)
	b.WriteByte('>')
}

// isCheckbox: the only input kept is a task list's checkbox.
func isCheckbox(n *html.Node) bool {
	for _, a := range n.Attr {
		if a.Key == "type" && a.Namespace == "" {
			return strings.EqualFold(strings.TrimSpace(a.Val), "checkbox")
		}
	}
	return false
}

func cleanChildren(b *strings.Builder, n *html.Node) {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		clean(b, c)
	}
}

var voidElements = map[atom.Atom]bool{atom.Br: true, atom.Hr: true, atom.Img: true, atom.Input: true,
	atom.Col: true, atom.Wbr: true}
