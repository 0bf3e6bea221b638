// Package valid holds the rules for single values that several groups
// share: one-line text, lengths, language tags, the address of a remote
// site. Each failure is a store.Invalid error that names the field, so the
// 422 says which field broke which rule.
package valid

import (
	"net/url"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/copydesk/copydesk/store"
)

// Line refuses control characters (NUL, newlines, escapes) in a one-line
// value: names, ids, secrets that end up in HTTP headers.
func Line(field, v string) error {
	for _, r := range v {
		if r < 0x20 || r == 0x7f {
			return store.Invalid("%s: must not contain control characters", field)
		}
	}
	return nil
}

// MaxLen refuses a value of more than n characters (not bytes), in the
// words the request binding uses for the same limit.
func MaxLen(field, v string, n int) error {
	if utf8.RuneCountInString(v) > n {
		return store.Invalid("%s: must be at most %d characters", field, n)
	}
	return nil
}

var languagePattern = regexp.MustCompile(`^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$`)

// Language refuses anything but a language tag like en, de or pt-BR.
func Language(field, tag string) error {
	if !languagePattern.MatchString(tag) {
		return store.Invalid("%s: must be a language tag like en, de or pt-BR", field)
	}
	return nil
}

// SiteURL reads the address of a remote site (WordPress, an
// OpenAI-compatible server, a data API): http or https, with a host and
// without credentials, query or fragment, which a client adds itself. It
// returns the address without trailing slashes, so one site is written
// one way; ok is false for anything else.
func SiteURL(raw string) (addr string, ok bool) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil ||
		u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return "", false
	}
	return strings.TrimRight(u.String(), "/"), true
}
