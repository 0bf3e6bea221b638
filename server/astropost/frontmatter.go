package astropost

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/copydesk/copydesk/store"
)

// Render is the file of a post: YAML front matter that the official Astro
// blog starter's content schema accepts, then the Markdown body.
//
//   - title and description are always double-quoted, with YAML's
//     escapes: unquoted, "Q&A: x" is a mapping inside a mapping (the build
//     fails) and "Issue #42" is "Issue" followed by a comment.
//   - pubDate and updatedDate are ISO 8601 timestamps in UTC, which the
//     schema's z.coerce.date() reads whether the YAML parser hands it a
//     date or a string.
//   - heroImage is left out, or an https URL, or a relative path (the
//     service checked the image is there; a /public-style path fails the
//     build, since image() resolves it as a file next to the post).
//   - categories, tags and draft are extra keys the starter's schema
//     ignores (see docs/guide/astro.md for the two lines that make draft hide a
//     post); the front matter keys of an imported file that copydesk does
//     not know follow, as they were.
func Render(p *store.AstroPost) string {
	var b strings.Builder
	b.WriteString("---\n")
	b.WriteString("title: " + quote(p.Title) + "\n")
	b.WriteString("description: " + quote(p.Description) + "\n")
	b.WriteString("pubDate: " + isoDate(p.PubDate) + "\n")
	if p.UpdatedDate != nil {
		b.WriteString("updatedDate: " + isoDate(*p.UpdatedDate) + "\n")
	}
	if p.HeroImage != "" {
		b.WriteString("heroImage: " + quote(p.HeroImage) + "\n")
	}
	writeList(&b, "categories", p.Categories)
	writeList(&b, "tags", p.Tags)
	if p.Draft {
		b.WriteString("draft: true\n")
	}
	if extra := strings.TrimRight(p.ExtraFrontMatter, "\n"); extra != "" {
		b.WriteString(extra + "\n")
	}
	b.WriteString("---\n")
	if body := strings.TrimLeft(p.Body, "\r\n"); body != "" {
		b.WriteString("\n" + body)
		if !strings.HasSuffix(body, "\n") {
			b.WriteString("\n")
		}
	}
	return b.String()
}

func writeList(b *strings.Builder, key string, terms []store.TermRef) {
	if len(terms) == 0 {
		return
	}
	names := make([]string, len(terms))
	for i, t := range terms {
		names[i] = quote(t.Name)
	}
	b.WriteString(key + ": [" + strings.Join(names, ", ") + "]\n")
}

func isoDate(t time.Time) string { return t.UTC().Truncate(time.Second).Format(time.RFC3339) }

// quote writes s as a YAML double-quoted scalar. Backslash and quote are
// escaped, and so is everything outside YAML's printable set (control
// characters, DEL, C1, surrogates cannot occur in Go strings) plus the
// characters a reader may take for a line break or a byte order mark
// (U+0085, U+2028, U+2029, U+FEFF), so the value stays on its line and
// reads back exactly.
func quote(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '\\':
			b.WriteString(`\\`)
		case '"':
			b.WriteString(`\"`)
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		case '\r':
			b.WriteString(`\r`)
		case 0:
			b.WriteString(`\0`)
		default:
			switch {
			case r < 0x20 || (r >= 0x7f && r <= 0x9f):
				fmt.Fprintf(&b, `\x%02X`, r)
			case r == 0x2028 || r == 0x2029 || r == 0xfeff || r == 0xfffe || r == 0xffff:
				fmt.Fprintf(&b, `\u%04X`, r)
			default:
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// digest is the hex SHA-256 of a file's text.
func digest(text string) string {
	h := sha256.Sum256([]byte(text))
	return hex.EncodeToString(h[:])
}

// parsed is a Markdown file read back: its known front matter and body.
type parsed struct {
	Title       string
	Description string
	PubDate     time.Time
	UpdatedDate *time.Time
	HeroImage   string
	Draft       bool
	Categories  []string
	Tags        []string
	Extra       string // unknown keys, as YAML
	Body        string
}

// splitFrontMatter cuts a file into its front matter (between a first line
// "---" and the next line "---") and its body.
func splitFrontMatter(text string) (fm, body string, ok bool) {
	text = strings.TrimPrefix(text, "\uFEFF")
	first, rest, found := strings.Cut(text, "\n")
	if !found || strings.TrimRight(first, "\r \t") != "---" {
		return "", text, false
	}
	var fmLines []string
	for {
		line, next, more := strings.Cut(rest, "\n")
		if strings.TrimRight(line, "\r \t") == "---" {
			return strings.Join(fmLines, "\n"), strings.TrimLeft(next, "\r\n"), true
		}
		fmLines = append(fmLines, line)
		if !more {
			return "", text, false
		}
		rest = next
	}
}

// parseFile reads a post file as the starter's schema would: title and
// pubDate are required, description defaults to empty.
func parseFile(text string) (*parsed, error) {
	if !utf8.ValidString(text) {
		return nil, fmt.Errorf("not UTF-8 text")
	}
	fm, body, ok := splitFrontMatter(text)
	if !ok {
		return nil, fmt.Errorf("no front matter (a first line --- and a closing ---)")
	}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(fm), &doc); err != nil {
		return nil, fmt.Errorf("front matter: %v", err)
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("front matter is not a mapping of keys to values")
	}
	m := doc.Content[0]
	p := &parsed{Body: body}
	extra := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		var err error
		switch k.Value {
		case "title":
			err = v.Decode(&p.Title)
		case "description":
			err = v.Decode(&p.Description)
		case "pubDate":
			p.PubDate, err = nodeDate(v)
		case "updatedDate":
			var t time.Time
			if t, err = nodeDate(v); err == nil {
				p.UpdatedDate = &t
			}
		case "heroImage":
			err = v.Decode(&p.HeroImage)
		case "draft":
			err = v.Decode(&p.Draft)
		case "categories":
			p.Categories, err = nodeStrings(v)
		case "tags":
			p.Tags, err = nodeStrings(v)
		default:
			extra.Content = append(extra.Content, k, v)
		}
		if err != nil {
			return nil, fmt.Errorf("front matter %s: %v", k.Value, err)
		}
	}
	if strings.TrimSpace(p.Title) == "" {
		return nil, fmt.Errorf("front matter has no title, which the blog schema requires")
	}
	if p.PubDate.IsZero() {
		return nil, fmt.Errorf("front matter has no pubDate, which the blog schema requires")
	}
	if len(extra.Content) > 0 {
		var buf bytes.Buffer
		enc := yaml.NewEncoder(&buf)
		enc.SetIndent(2)
		if err := enc.Encode(extra); err != nil {
			return nil, fmt.Errorf("front matter: %v", err)
		}
		if err := enc.Close(); err != nil {
			return nil, fmt.Errorf("front matter: %v", err)
		}
		p.Extra = buf.String()
	}
	return p, nil
}

// dateLayouts are the ways front matter writes a date that JavaScript's
// Date (z.coerce.date) also reads: ISO 8601 and the starter's "Jul 08 2022".
var dateLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02", "Jan 02 2006", "Jan 2 2006",
	"January 2 2006", "January 2, 2006", "Jan 2, 2006"}

func nodeDate(v *yaml.Node) (time.Time, error) {
	var t time.Time
	if v.Tag == "!!timestamp" && v.Decode(&t) == nil {
		return t.UTC(), nil
	}
	var s string
	if err := v.Decode(&s); err != nil {
		return time.Time{}, err
	}
	s = strings.TrimSpace(s)
	for _, l := range dateLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t.UTC(), nil
		}
	}
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.UnixMilli(ms).UTC(), nil
	}
	return time.Time{}, fmt.Errorf("%q is not a date", s)
}

func nodeStrings(v *yaml.Node) ([]string, error) {
	if v.Kind == yaml.ScalarNode {
		var s string
		if err := v.Decode(&s); err != nil || s == "" {
			return nil, err
		}
		return []string{s}, nil
	}
	var out []string
	return out, v.Decode(&out)
}
