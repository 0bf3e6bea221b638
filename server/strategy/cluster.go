package strategy

import (
	"cmp"
	"net/url"
	"slices"
	"strings"

	"github.com/copydesk/copydesk/server/lexical"
)

// The clustering itself: pure functions of the keywords, so that the same
// keywords give the same clusters in the same order whatever order they
// come in.
//
// Both methods link two keywords when they are similar enough and take
// the connected groups as clusters (single linkage): with SERP data, two
// keywords are linked when their top-10 results share at least minShared
// URLs (SERPOverlap); without it, when the Jaccard similarity of their
// terms (server/lexical) is at least the threshold (Lexical). Linking is
// transitive, so a chain of close keywords is one cluster even where its
// ends share little; a higher threshold, an edit, or the model's refining
// splits what should not be together.

// Keyword is what clustering knows of a keyword.
type Keyword struct {
	ID         int64
	Text       string
	Key        string // store.KeywordKey
	Volume     *int64
	Difficulty *int64
	URLs       []string // top-10 organic results, for SERPOverlap
}

// Group is a cluster: its pillar and its members, the pillar first.
type Group struct {
	Name    string
	Pillar  int64
	Members []int64
}

// SERPOverlap clusters keywords whose top-10 results share at least
// minShared URLs (compared by SERPURL). A keyword without URLs is a
// cluster of its own.
func SERPOverlap(kws []Keyword, minShared int) []Group {
	if minShared < 1 {
		minShared = 1
	}
	sets := make([]map[string]bool, len(kws))
	byURL := map[string][]int{}
	for i, k := range kws {
		sets[i] = map[string]bool{}
		for _, u := range k.URLs {
			n := SERPURL(u)
			if n == "" || sets[i][n] {
				continue
			}
			sets[i][n] = true
			byURL[n] = append(byURL[n], i)
		}
	}
	// Count the URLs each pair shares through the URLs' keyword lists,
	// which touches only pairs that share any.
	shared := map[[2]int]int{}
	for _, list := range byURL {
		for a := 0; a < len(list); a++ {
			for b := a + 1; b < len(list); b++ {
				shared[[2]int{list[a], list[b]}]++
			}
		}
	}
	u := newUnion(len(kws))
	for pair, n := range shared {
		if n >= minShared {
			u.join(pair[0], pair[1])
		}
	}
	return groups(kws, u)
}

// Lexical clusters keywords whose terms have a Jaccard similarity of at
// least threshold. A keyword without terms (only stop words) is a cluster
// of its own.
func Lexical(kws []Keyword, threshold float64) []Group {
	terms := make([][]string, len(kws))
	for i, k := range kws {
		terms[i] = lexical.Terms(k.Text)
	}
	u := newUnion(len(kws))
	for a := range kws {
		if len(terms[a]) == 0 {
			continue
		}
		for b := a + 1; b < len(kws); b++ {
			if len(terms[b]) > 0 && lexical.Jaccard(terms[a], terms[b]) >= threshold {
				u.join(a, b)
			}
		}
	}
	return groups(kws, u)
}

// SERPURL is the form result URLs are compared in: scheme and host in
// lower case without "www.", no fragment, no trailing slash; "" for what
// is not an absolute URL.
func SERPURL(raw string) string {
	p, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || p.Host == "" {
		return ""
	}
	host := strings.TrimPrefix(strings.ToLower(p.Host), "www.")
	path := strings.TrimRight(p.EscapedPath(), "/")
	out := host + path
	if p.RawQuery != "" {
		out += "?" + p.RawQuery
	}
	return out
}

// groups turns the union's sets into ordered clusters named after their
// pillars.
func groups(kws []Keyword, u *union) []Group {
	sets := map[int][]int{}
	for i := range kws {
		r := u.find(i)
		sets[r] = append(sets[r], i)
	}
	out := make([]Group, 0, len(sets))
	for _, members := range sets {
		ks := make([]Keyword, len(members))
		for j, i := range members {
			ks[j] = kws[i]
		}
		out = append(out, Arrange(ks))
	}
	SortGroups(out, index(kws))
	return out
}

// Arrange makes one cluster of ks: the pillar (see PillarFirst) first,
// then the others by volume, highest first, then by key; named after the
// pillar.
func Arrange(ks []Keyword) Group {
	ks = slices.Clone(ks)
	slices.SortFunc(ks, PillarFirst)
	g := Group{Name: ks[0].Text, Pillar: ks[0].ID, Members: make([]int64, len(ks))}
	for i, k := range ks {
		g.Members[i] = k.ID
	}
	return g
}

// PillarFirst orders keywords as pillar candidates: the pillar of a
// cluster is its keyword with the highest search volume (the page that
// can win the most searches, which the cluster pages then support). Ties
// (and keywords without a volume, which come last) go to the lower
// difficulty, then to the shorter keyword (the broader, head term), then
// by key and id, so the choice is the same every time.
func PillarFirst(a, b Keyword) int {
	if c := cmpKnown(a.Volume, b.Volume, true); c != 0 {
		return c
	}
	if c := cmpKnown(a.Difficulty, b.Difficulty, false); c != 0 {
		return c
	}
	if c := cmp.Compare(len([]rune(a.Key)), len([]rune(b.Key))); c != 0 {
		return c
	}
	if c := strings.Compare(a.Key, b.Key); c != 0 {
		return c
	}
	return cmp.Compare(a.ID, b.ID)
}

// SortGroups orders clusters by their total search volume, highest first
// (the biggest opportunity first), then by their pillar's key.
func SortGroups(gs []Group, kws map[int64]Keyword) {
	total := func(g Group) int64 {
		var n int64
		for _, id := range g.Members {
			if v := kws[id].Volume; v != nil {
				n += *v
			}
		}
		return n
	}
	slices.SortStableFunc(gs, func(a, b Group) int {
		if c := cmp.Compare(total(b), total(a)); c != 0 {
			return c
		}
		if c := strings.Compare(kws[a.Pillar].Key, kws[b.Pillar].Key); c != 0 {
			return c
		}
		return cmp.Compare(a.Pillar, b.Pillar)
	})
}

func index(kws []Keyword) map[int64]Keyword {
	m := make(map[int64]Keyword, len(kws))
	for _, k := range kws {
		m[k.ID] = k
	}
	return m
}

// cmpKnown orders known values before unknown ones, lower first, or
// higher first with desc.
func cmpKnown(a, b *int64, desc bool) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return 1
	case b == nil:
		return -1
	case desc:
		return cmp.Compare(*b, *a)
	}
	return cmp.Compare(*a, *b)
}

// union is a disjoint-set forest over 0..n-1.
type union struct{ parent []int }

func newUnion(n int) *union {
	u := &union{parent: make([]int, n)}
	for i := range u.parent {
		u.parent[i] = i
	}
	return u
}

func (u *union) find(i int) int {
	for u.parent[i] != i {
		u.parent[i] = u.parent[u.parent[i]]
		i = u.parent[i]
	}
	return i
}

func (u *union) join(a, b int) {
	if ra, rb := u.find(a), u.find(b); ra != rb {
		u.parent[max(ra, rb)] = min(ra, rb)
	}
}
