// Package slug is the one slug rule of every slugged thing in copydesk's
// content (CMS categories and tags, WordPress and Astro posts): ASCII
// lower-case letters, digits and single dashes, at most a given length,
// made from a name with its accents folded away. Uniqueness is the
// store's (a unique index per environment); how a taken generated slug
// moves on (-2, -3, ...) is Nth.
package slug

import (
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"golang.org/x/text/runes"
	"golang.org/x/text/transform"
	"golang.org/x/text/unicode/norm"
)

// Max is the longest slug of the content groups.
const Max = 96

var pattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`) })

// Valid reports whether s is a slug of at most max characters: lower-case
// ASCII letters and digits in groups joined by single dashes.
func Valid(s string, max int) bool { return len(s) <= max && pattern().MatchString(s) }

// special are letters that are not a base letter plus a combining mark, so
// decomposing them leaves nothing ASCII; they are spelt the way the
// languages that use them write them without the letter.
var special = map[rune]string{
	'ß': "ss", 'ẞ': "ss", 'æ': "ae", 'Æ': "ae", 'œ': "oe", 'Œ': "oe", 'ø': "o", 'Ø': "o",
	'ł': "l", 'Ł': "l", 'đ': "d", 'Đ': "d", 'ð': "d", 'Ð': "d", 'þ': "th", 'Þ': "th",
	'ı': "i", 'ħ': "h", 'Ħ': "h", 'ŋ': "n", 'Ŋ': "n", 'ĸ': "k", 'ŀ': "l", 'Ŀ': "l",
	'&': " and ",
}

// fold removes the combining marks a canonical decomposition leaves
// (é → e + ´ → e), then recomposes whatever is left.
func fold(s string) string {
	t := transform.Chain(norm.NFD, runes.Remove(runes.In(unicode.Mn)), norm.NFC)
	out, _, err := transform.String(t, s)
	if err != nil {
		return s
	}
	return out
}

// Make makes a slug of at most max characters from a name: accents folded
// ("Café Olé" → "cafe-ole"), a few letters spelt out (ß → ss, æ → ae,
// ø → o, ł → l, & → and), everything else that is not an ASCII letter or
// digit a dash between words. It returns "" when nothing is left (a name in
// Chinese or made of emoji): the caller then names the thing by its id.
func Make(name string, max int) string {
	var b strings.Builder
	dash := false
	add := func(r rune) {
		if r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			b.WriteRune(unicode.ToLower(r))
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	for _, r := range fold(norm.NFKC.String(name)) {
		if s, ok := special[r]; ok {
			for _, sr := range s {
				add(sr)
			}
			continue
		}
		add(r)
	}
	return cut(strings.Trim(b.String(), "-"), max)
}

// cut shortens a slug to at most max characters, at a word boundary when
// one is near, never leaving a dash at the end.
func cut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	s = s[:max]
	if i := strings.LastIndexByte(s, '-'); i > max/2 {
		s = s[:i]
	}
	return strings.Trim(s, "-")
}

// Nth is the n-th try of a generated slug: base itself first, then
// base-2, base-3, ..., shortened so that the suffix fits in max.
func Nth(base string, n, max int) string {
	if n <= 1 {
		return cut(base, max)
	}
	suffix := "-" + strconv.Itoa(n)
	return cut(base, max-len(suffix)) + suffix
}

// ForID is the slug of a thing whose name has nothing to slug: its kind
// and its id ("category-12").
func ForID(kind string, id int64) string { return kind + "-" + strconv.FormatInt(id, 10) }

// Generated returns the slug tries of a name for a store that inserts the
// row first and then names it (the id is known then): Make(name), with -2,
// -3, ... when taken, or kind-<id>, -2, ... when the name has nothing to
// slug.
func Generated(name, kind string, max int) func(id int64, try int) string {
	base := Make(name, max)
	return func(id int64, try int) string {
		if base == "" {
			return Nth(ForID(kind, id), try, max)
		}
		return Nth(base, try, max)
	}
}
