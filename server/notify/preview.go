package notify

import (
	"strings"
	"unicode/utf8"
)

// Preview shortens text to n characters on a word boundary, with its
// whitespace collapsed, for the body of a note.
func Preview(text string, n int) string {
	text = strings.Join(strings.Fields(text), " ")
	if utf8.RuneCountInString(text) <= n {
		return text
	}
	r := []rune(text)[:n]
	if i := strings.LastIndex(string(r), " "); i > n/2 {
		return string(r)[:i] + "…"
	}
	return string(r) + "…"
}
