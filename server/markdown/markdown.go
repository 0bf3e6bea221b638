// Package markdown renders a post's Markdown as the HTML WordPress gets:
// CommonMark (goldmark) with the GitHub extensions writers use, tables,
// strikethrough and task lists.
//
// Why the three extensions are adapted here rather than imported from
// goldmark's extension package: importing that package runs its init at
// every start of the binary, `copydesk version` included, and its Linkify
// regular expressions (with {2,256} repetitions) alone allocate about
// 260 KB there. On the machines copydesk runs on a first touch of a page
// costs tens of microseconds (about 27 µs on the 2-core test VM), so that
// init was a quarter of the start-up time of `copydesk version`
// (docs/DECISIONS.md, "Footprint and releases"). Linkify, which turns bare
// URLs into links, is left out: generated articles write links as
// Markdown links, and Linkify's e-mail scan is quadratic on crafted input
// (goldmark issue 595), which an API that renders anyone's text must not
// have.
package markdown

import (
	"bytes"
	"sync"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/renderer/html"
)

// converter is built on first use, not at start.
var converter = sync.OnceValue(func() goldmark.Markdown {
	return goldmark.New(goldmark.WithExtensions(Table, Strikethrough, TaskList),
		// HTML in the Markdown (and the HTML a sync pulls from the site) goes
		// through as is: WordPress filters it by the user's capabilities.
		goldmark.WithRendererOptions(html.WithUnsafe()))
})

// Render turns Markdown into HTML.
func Render(md string) (string, error) {
	var buf bytes.Buffer
	if err := converter().Convert([]byte(md), &buf); err != nil {
		return "", err
	}
	return buf.String(), nil
}
