package strategy_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/copydesk/copydesk/server/strategy"
	"github.com/copydesk/copydesk/store"
)

func vol(n int64) *int64 { return &n }

// kw is a keyword of the fixed sets below; its id is its place in the set.
func kw(id int64, text string, volume *int64, urls ...string) strategy.Keyword {
	return strategy.Keyword{ID: id, Text: text, Key: store.KeywordKey(text), Volume: volume, URLs: urls}
}

// urls makes n result URLs of a site: site.example/1 ... /n from first.
func urls(site string, from, n int) []string {
	out := make([]string, n)
	for i := range n {
		out[i] = fmt.Sprintf("https://%s.example/%d", site, from+i)
	}
	return out
}

// render writes clusters as "pillar: member, member | ..." by text.
func render(gs []strategy.Group, kws []strategy.Keyword) string {
	text := map[int64]string{}
	for _, k := range kws {
		text[k.ID] = k.Text
	}
	parts := make([]string, len(gs))
	for i, g := range gs {
		if g.Members[0] != g.Pillar || g.Name != text[g.Pillar] {
			return fmt.Sprintf("cluster %d: pillar %d is not first or not its name (%+v)", i, g.Pillar, g)
		}
		names := make([]string, len(g.Members))
		for j, id := range g.Members {
			names[j] = text[id]
		}
		parts[i] = names[0] + ": " + strings.Join(names[1:], ", ")
	}
	return strings.Join(parts, " | ")
}

// serpSet is a fixed set with top-10 results: the two coffee keywords
// share 3 URLs, "cold brew ratio" shares 2 with each, the espresso pair
// shares 4, and "french press" has no SERP data.
func serpSet() []strategy.Keyword {
	coffee := urls("brew", 1, 10)
	howTo := append(urls("brew", 1, 3), urls("howto", 1, 7)...)
	ratio := append(urls("brew", 2, 2), urls("ratio", 1, 8)...)
	machine := urls("machine", 1, 10)
	best := append(urls("machine", 3, 4), urls("best", 1, 6)...)
	return []strategy.Keyword{
		kw(1, "cold brew coffee", vol(5000), coffee...),
		kw(2, "how to make cold brew", vol(3000), howTo...),
		kw(3, "cold brew ratio", vol(1000), ratio...),
		kw(4, "espresso machine", vol(8000), machine...),
		kw(5, "best espresso machine", vol(2000), best...),
		kw(6, "french press", nil),
	}
}

func TestSERPOverlap(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		minShared int
		want      string
	}{
		{"Default3", 3, "espresso machine: best espresso machine | cold brew coffee: how to make cold brew | cold brew ratio:  | french press: "},
		{"Two", 2, "espresso machine: best espresso machine | cold brew coffee: how to make cold brew, cold brew ratio | french press: "},
		{"Five", 5, "espresso machine:  | cold brew coffee:  | how to make cold brew:  | best espresso machine:  | cold brew ratio:  | french press: "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			kws := serpSet()
			if got := render(strategy.SERPOverlap(kws, c.minShared), kws); got != c.want {
				t.Fatalf("got  %s\nwant %s", got, c.want)
			}
		})
	}
}

func TestSERPURLsCompareNormalised(t *testing.T) {
	t.Parallel()
	a := []string{"https://www.Example.com/a/", "http://example.com/b#top", "https://example.com/c?x=1"}
	b := []string{"https://example.com/a", "https://EXAMPLE.com/b", "https://www.example.com/c?x=1"}
	kws := []strategy.Keyword{kw(1, "one", vol(2), a...), kw(2, "two", vol(1), b...)}
	if got := render(strategy.SERPOverlap(kws, 3), kws); got != "one: two" {
		t.Fatalf("got %s; want the same three URLs seen as shared", got)
	}
	for _, bad := range []string{"", "not a url", "/relative/path"} {
		if got := strategy.SERPURL(bad); got != "" {
			t.Errorf("SERPURL(%q) = %q; want nothing", bad, got)
		}
	}
	// A URL listed twice counts once.
	kws = []strategy.Keyword{kw(1, "one", vol(2), "https://x.example/1", "https://x.example/1", "https://x.example/1"),
		kw(2, "two", vol(1), "https://x.example/1")}
	if got := render(strategy.SERPOverlap(kws, 2), kws); got != "one:  | two: " {
		t.Fatalf("got %s; want no link from one URL repeated", got)
	}
}

// lexicalSet is a fixed set without SERP data.
func lexicalSet() []strategy.Keyword {
	return []strategy.Keyword{
		kw(1, "running shoes", vol(9000)),
		kw(2, "best running shoes", vol(4000)),
		kw(3, "running shoes for women", vol(2500)),
		kw(4, "trail running", vol(1200)),
		kw(5, "trail running tips", vol(300)),
		kw(6, "how to clean suede", vol(500)),
		kw(7, "cleaning suede shoes", vol(800)),
		kw(8, "the and of", nil),
	}
}

func TestLexical(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		threshold float64
		want      string
	}{
		{"Half", 0.5, "running shoes: best running shoes, running shoes for women | trail running: trail running tips | " +
			"cleaning suede shoes: how to clean suede | the and of: "},
		// At 0.3 "trail running" links to "running shoes" (1 of 3 terms
		// shared), and the trail keywords come along: linking is
		// transitive. "cleaning suede shoes" shares 1 of 4 and stays out.
		{"Third", 0.3, "running shoes: best running shoes, running shoes for women, trail running, trail running tips | " +
			"cleaning suede shoes: how to clean suede | the and of: "},
		{"Strict", 0.9, "running shoes:  | best running shoes:  | running shoes for women:  | trail running:  | " +
			"cleaning suede shoes:  | how to clean suede:  | trail running tips:  | the and of: "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			kws := lexicalSet()
			if got := render(strategy.Lexical(kws, c.threshold), kws); got != c.want {
				t.Fatalf("got  %s\nwant %s", got, c.want)
			}
		})
	}
}

// TestClusteringIsDeterministic: the same keywords in any order give the
// same clusters in the same order.
func TestClusteringIsDeterministic(t *testing.T) {
	t.Parallel()
	rnd := rand.New(rand.NewPCG(7, 11))
	for _, m := range []struct {
		name string
		set  func() []strategy.Keyword
		run  func([]strategy.Keyword) []strategy.Group
	}{
		{"SERP", serpSet, func(k []strategy.Keyword) []strategy.Group { return strategy.SERPOverlap(k, 3) }},
		{"Lexical", lexicalSet, func(k []strategy.Keyword) []strategy.Group { return strategy.Lexical(k, 0.5) }},
	} {
		t.Run(m.name, func(t *testing.T) {
			want := m.run(m.set())
			for range 20 {
				kws := m.set()
				rnd.Shuffle(len(kws), func(i, j int) { kws[i], kws[j] = kws[j], kws[i] })
				got := m.run(kws)
				if !slices.EqualFunc(got, want, func(a, b strategy.Group) bool {
					return a.Name == b.Name && a.Pillar == b.Pillar && slices.Equal(a.Members, b.Members)
				}) {
					t.Fatalf("shuffled input gave %+v; want %+v", got, want)
				}
			}
		})
	}
}

func TestPillarRule(t *testing.T) {
	t.Parallel()
	d := func(n int64) *int64 { return &n }
	cases := []struct {
		name string
		kws  []strategy.Keyword
		want int64
	}{
		{"HighestVolume", []strategy.Keyword{kw(1, "a b c", vol(10)), kw(2, "a b", vol(300)), kw(3, "a", vol(20))}, 2},
		{"VolumeBeatsUnknown", []strategy.Keyword{kw(1, "a", nil), kw(2, "a b", vol(1))}, 2},
		{"TieLowerDifficulty", []strategy.Keyword{{ID: 1, Text: "x", Key: "x", Volume: vol(50), Difficulty: d(70)},
			{ID: 2, Text: "y y", Key: "y y", Volume: vol(50), Difficulty: d(20)}}, 2},
		{"TieShorter", []strategy.Keyword{kw(1, "cold brew at home", vol(50)), kw(2, "cold brew", vol(50))}, 2},
		{"TieKey", []strategy.Keyword{kw(1, "bbb", vol(50)), kw(2, "aaa", vol(50))}, 2},
		{"NoVolumesShorter", []strategy.Keyword{kw(1, "cold brew recipe", nil), kw(2, "cold brew", nil)}, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := strategy.Arrange(c.kws)
			if g.Pillar != c.want || g.Members[0] != c.want {
				t.Fatalf("pillar %d (members %v); want %d", g.Pillar, g.Members, c.want)
			}
		})
	}
}

func TestParseRefined(t *testing.T) {
	t.Parallel()
	kws := lexicalSet()
	good := []struct {
		name string
		text string
		want string
	}{
		{"NamesAndAMove", "```json\n" + `{"clusters":[
			{"name":"Running shoes","keywords":["running shoes","best running shoes","running shoes for women","cleaning suede shoes"]},
			{"name":"Trail running","keywords":["Trail Running","trail running tips"]},
			{"name":"Shoe care","keywords":["how to clean suede"]},
			{"name":"","keywords":["the and of"]},
			{"name":"Empty","keywords":[]}]}` + "\n```",
			// cleaning suede shoes moved; the pillar rule and the order
			// apply again; an unnamed cluster is named after its pillar.
			"Running shoes=running shoes: best running shoes, running shoes for women, cleaning suede shoes | " +
				"Trail running=trail running: trail running tips | Shoe care=how to clean suede:  | the and of=the and of: "},
	}
	for _, c := range good {
		gs, err := strategy.ParseRefined(c.text, kws)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		text := map[int64]string{}
		for _, k := range kws {
			text[k.ID] = k.Text
		}
		var parts []string
		for _, g := range gs {
			var rest []string
			for _, id := range g.Members[1:] {
				rest = append(rest, text[id])
			}
			parts = append(parts, g.Name+"="+text[g.Pillar]+": "+strings.Join(rest, ", "))
		}
		if got := strings.Join(parts, " | "); got != c.want {
			t.Fatalf("%s:\ngot  %s\nwant %s", c.name, got, c.want)
		}
	}
	all := `"running shoes","best running shoes","running shoes for women","trail running","trail running tips","how to clean suede","cleaning suede shoes","the and of"`
	bad := []struct{ name, text, want string }{
		{"NotJSON", "Running shoes: running shoes, best running shoes", "no JSON object"},
		{"WrongShape", `{"groups":[]}`, `no "clusters" list`},
		{"Invented", `{"clusters":[{"name":"x","keywords":[` + all + `,"hiking boots"]}]}`, `"hiking boots", which is not one of the keywords`},
		{"Twice", `{"clusters":[{"name":"x","keywords":[` + all + `]},{"name":"y","keywords":["trail running"]}]}`, `"trail running" is in more than one cluster`},
		{"LeftOut", `{"clusters":[{"name":"x","keywords":["running shoes"]}]}`, `leaves out "best running shoes"`},
	}
	for _, c := range bad {
		if _, err := strategy.ParseRefined(c.text, kws); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v; want one with %q", c.name, err, c.want)
		}
	}
}
