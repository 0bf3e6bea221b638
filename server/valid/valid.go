// Package valid holds the rules for single values that several groups
// share: one-line text, lengths, language tags, the address of a remote
// site. Each failure is a store.Invalid error that names the field, so the
// 422 says which field broke which rule.
package valid

import (
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/copydesk/copydesk/server/outbound"
	"github.com/copydesk/copydesk/store"
)

// Line is the one rule for one-line text: names, full names, subjects,
// ids, secrets that end up in HTTP headers, every short text field. It
// refuses control characters (C0 such as NUL, newlines and escapes, DEL,
// and C1), the line and paragraph separators, and the bidirectional
// embeddings, overrides and isolates (U+202A to U+202E, U+2066 to U+2069),
// which make a text show in another order than it is stored: a name
// "\u202Egpj.exe" reads "exe.jpg" on screen, and another user's name can be
// made to look like an admin's.
func Line(field, v string) error {
	for _, r := range v {
		if isControl(r) || r == '\u2028' || r == '\u2029' {
			return store.Invalid("%s: must not contain control characters", field)
		}
		if isBidiControl(r) {
			return store.Invalid("%s: must not contain bidirectional override characters (U+202A to U+202E, U+2066 to U+2069)", field)
		}
	}
	return nil
}

// Text is the rule for long texts that may span lines (descriptions,
// message bodies): line breaks (LF, CR) and tabs are allowed, other control
// characters are not. Bidirectional controls are left to long texts, where
// right-to-left writing may need them and nothing is identified by them.
func Text(field, v string) error {
	for _, r := range v {
		if isControl(r) && r != '\n' && r != '\r' && r != '\t' {
			return store.Invalid("%s: must not contain control characters other than line breaks and tabs", field)
		}
	}
	return nil
}

// isControl reports the C0 and C1 control characters and DEL.
func isControl(r rune) bool { return r < 0x20 || (r >= 0x7f && r <= 0x9f) }

// isBidiControl reports the explicit bidirectional formatting characters
// that change the order of what follows them: LRE, RLE, PDF, LRO, RLO and
// LRI, RLI, FSI, PDI. (The marks LRM and RLM change nothing by themselves.)
func isBidiControl(r rune) bool {
	return (r >= '\u202a' && r <= '\u202e') || (r >= '\u2066' && r <= '\u2069')
}

// MaxLen refuses a value of more than n characters (not bytes), in the
// words the request binding uses for the same limit.
func MaxLen(field, v string, n int) error {
	if utf8.RuneCountInString(v) > n {
		return store.Invalid("%s: must be at most %d characters", field, n)
	}
	return nil
}

// Name is a required one-line name of at most n characters, trimmed.
func Name(field, v string, n int) (string, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return "", store.Invalid("%s: must not be empty", field)
	}
	if err := Line(field, v); err != nil {
		return "", err
	}
	return v, MaxLen(field, v, n)
}

// LongText is an optional long text of at most n characters, trimmed.
func LongText(field, v string, n int) (string, error) {
	v = strings.TrimSpace(v)
	if err := Text(field, v); err != nil {
		return "", err
	}
	return v, MaxLen(field, v, n)
}

var languagePattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$`) })

// Language refuses anything but a language tag like en, de or pt-BR.
func Language(field, tag string) error {
	if !languagePattern().MatchString(tag) {
		return store.Invalid("%s: must be a language tag like en, de or pt-BR", field)
	}
	return nil
}

// SiteURL reads the address of a remote site (WordPress, an
// OpenAI-compatible server, a data API): http or https, with a host and
// without credentials, query or fragment, which a client adds itself. It
// returns the address without trailing slashes, so one site is written
// one way; ok is false for anything else, and for anything Line refuses.
func SiteURL(raw string) (addr string, ok bool) {
	raw = strings.TrimSpace(raw)
	u, err := url.Parse(raw)
	if err != nil || Line("", raw) != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil ||
		u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return "", false
	}
	return strings.TrimRight(u.String(), "/"), true
}

// CallURL reads an address a user gives for copydesk to call (a webhook's,
// a web source's): one line of at most max characters, http or https,
// with a host and without credentials. An address literal the outbound
// guard refuses (private ones too when refusePrivate) is refused now; a
// name is judged after resolution, at every call, since DNS may change.
// What the caller does with a fragment is its own rule.
func CallURL(field, raw string, max int, refusePrivate bool) (*url.URL, error) {
	raw = strings.TrimSpace(raw)
	if err := Line(field, raw); err != nil {
		return nil, err
	}
	if err := MaxLen(field, raw, max); err != nil {
		return nil, err
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil {
		return nil, store.Invalid("%s: must be an http or https address with a host and without credentials", field)
	}
	if ip, err := netip.ParseAddr(u.Hostname()); err == nil {
		if err := outbound.Check(ip, refusePrivate); err != nil {
			return nil, store.Invalid("%s: %s", field, err.Error())
		}
	}
	return u, nil
}
