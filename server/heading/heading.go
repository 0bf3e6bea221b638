// Package heading finds the title of a Markdown text: its first heading.
// Save-as-post takes a post's title from a run's output this way for both
// targets (WordPress and Astro), so the two agree on which heading it is
// and on what is left of the text.
package heading

import "strings"

// Title is the text of the first ATX heading of md ("# Title",
// "## Title") outside fenced and indented code, and the body that goes
// with it: md without that heading when it is of level 1 (the page shows
// the title itself), md as it is for a deeper one (a section heading that
// stays in the body). ok is false when md has no heading.
func Title(md string) (title, body string, ok bool) {
	lines := strings.SplitAfter(md, "\n")
	fence := ""
	for i, raw := range lines {
		line := strings.TrimRight(raw, "\r\n")
		trimmed := strings.TrimLeft(line, " ")
		indent := len(line) - len(trimmed)
		if fence != "" {
			// A fence closes with a run of its character at least as long,
			// and nothing else on the line.
			if indent <= 3 && strings.HasPrefix(trimmed, fence) && strings.Trim(trimmed, fence[:1]+" \t") == "" {
				fence = ""
			}
			continue
		}
		if indent > 3 {
			continue // indented code
		}
		if f := Fence(trimmed); f != "" {
			fence = f
			continue
		}
		n := len(trimmed) - len(strings.TrimLeft(trimmed, "#"))
		if n < 1 || n > 6 || (len(trimmed) > n && trimmed[n] != ' ' && trimmed[n] != '\t') {
			continue
		}
		t := strings.TrimSpace(trimmed[n:])
		t = strings.TrimSpace(strings.TrimRight(t, "#")) // closing sequence
		if t == "" {
			continue
		}
		if n > 1 {
			return t, md, true
		}
		return t, strings.TrimLeft(strings.Join(lines[:i], "")+strings.Join(lines[i+1:], ""), "\r\n"), true
	}
	return "", md, false
}

// Fence is the code fence a line (without its indentation) opens: a run
// of three or more backticks or tildes (``` or ~~~~), or "". A backtick
// fence's info string cannot hold a backtick.
func Fence(line string) string {
	for _, c := range []string{"`", "~"} {
		run := len(line) - len(strings.TrimLeft(line, c))
		if run >= 3 {
			if c == "`" && strings.Contains(line[run:], "`") {
				return ""
			}
			return line[:run]
		}
	}
	return ""
}

// maxLineTitle bounds a title taken from a first line (FirstLine).
const maxLineTitle = 120

// FirstLine is a title for Markdown without a heading: its first line of
// text, outside code, without list, quote and emphasis markers, cut at a
// word before maxLineTitle characters (with "…"). ok is false when md has
// no such line.
func FirstLine(md string) (title string, ok bool) {
	fence := ""
	for _, raw := range strings.Split(md, "\n") {
		line := strings.TrimSpace(raw)
		if fence != "" {
			if strings.HasPrefix(line, fence) && strings.Trim(line, fence[:1]+" \t") == "" {
				fence = ""
			}
			continue
		}
		if f := Fence(line); f != "" {
			fence = f
			continue
		}
		line = strings.TrimLeft(line, ">-+*#0123456789.) \t")
		line = strings.NewReplacer("**", "", "__", "", "`", "").Replace(line)
		line = strings.TrimSpace(strings.Trim(line, "*_~ \t"))
		if line == "" {
			continue
		}
		if r := []rune(line); len(r) > maxLineTitle {
			cut := string(r[:maxLineTitle])
			if i := strings.LastIndex(cut, " "); i > maxLineTitle/2 {
				cut = cut[:i]
			}
			line = strings.TrimRight(cut, " ,;:.") + "…"
		}
		return line, true
	}
	return "", false
}
