// Package lexical compares keywords by their words, without any provider:
// the terms of a keyword (its words in the keywords' normal form, English
// stop words left out, each reduced by a light suffix stemmer) and the
// similarity of two term sets. The scout scores candidates by how much of
// a seed they contain; strategies cluster keywords by Jaccard similarity
// when they have no SERP data.
//
// The stemmer is deliberately small (plurals, -ing, -ed, -ly): it only
// needs to map "shoe"/"shoes" and "brew"/"brewing" to one term, the same
// way every time. Words of other languages keep their form; they compare
// well enough as they are.
package lexical

import (
	"slices"
	"strings"
	"sync"
	"unicode"

	"github.com/copydesk/copydesk/store"
)

// Terms are the distinct terms of s, sorted: s in the keywords' normal
// form (store.KeywordKey), split at anything that is not a letter or a
// digit, without stop words, each stemmed.
func Terms(s string) []string {
	words := strings.FieldsFunc(store.KeywordKey(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	out := make([]string, 0, len(words))
	for _, w := range words {
		if stopWords()[w] {
			continue
		}
		out = append(out, Stem(w))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Stem reduces an English word by its most common endings: plurals
// ("shoes", "boxes", "recipes"), -ing and -ed, a doubled consonant they
// leave ("running"), and a final e ("bake", "baked" and "baking" are all
// "bak"). It never leaves fewer than three letters, so short words stay
// as they are. It need not make words, only the same term of every form.
func Stem(w string) string {
	if !isASCII(w) {
		return w
	}
	cut := func(suffix, with string) bool {
		if !strings.HasSuffix(w, suffix) || len(w)-len(suffix)+len(with) < 3 {
			return false
		}
		w = w[:len(w)-len(suffix)] + with
		return true
	}
	switch {
	case cut("sses", "ss"), cut("ies", "y"):
	case strings.HasSuffix(w, "ches") || strings.HasSuffix(w, "shes") || strings.HasSuffix(w, "xes") || strings.HasSuffix(w, "zes"):
		cut("es", "")
	case strings.HasSuffix(w, "ss") || strings.HasSuffix(w, "us") || strings.HasSuffix(w, "is"):
	case cut("s", ""):
	case cut("ing", ""), cut("ed", ""):
		if n := len(w); n > 3 && w[n-1] == w[n-2] && !strings.ContainsRune("aeiouls", rune(w[n-1])) {
			w = w[:n-1]
		}
	}
	if n := len(w); n > 3 && w[n-1] == 'e' {
		w = w[:n-1]
	}
	return w
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// Jaccard is |a ∩ b| / |a ∪ b| for two sorted term sets; 0 when both are
// empty.
func Jaccard(a, b []string) float64 {
	common := Common(a, b)
	union := len(a) + len(b) - common
	if union == 0 {
		return 0
	}
	return float64(common) / float64(union)
}

// Containment is the share of b's terms that a has: 1 when a holds every
// term of b; 0 when b is empty.
func Containment(a, b []string) float64 {
	if len(b) == 0 {
		return 0
	}
	return float64(Common(a, b)) / float64(len(b))
}

// Common counts the terms two sorted sets share.
func Common(a, b []string) int {
	n, i, j := 0, 0, 0
	for i < len(a) && j < len(b) {
		switch strings.Compare(a[i], b[j]) {
		case 0:
			n++
			i++
			j++
		case -1:
			i++
		default:
			j++
		}
	}
	return n
}

// stopWords are English function words and the filler of search queries,
// which say nothing about a topic.
// They are built on first use: nothing is built at start.
var stopWords = sync.OnceValue(func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a about above after again against all am an and any are as at be because been before being
		below between both but by can could did do does doing down during each few for from further had has have having he her here
		hers herself him himself his how i if in into is it its itself just me more most my myself no nor not of off on once only
		or other our ours ourselves out over own same she should so some such than that the their theirs them themselves then there
		these they this those through to too under until up very was we were what when where which while who whom why will with
		would you your yours yourself yourselves vs versus`) {
		m[w] = true
	}
	return m
})
