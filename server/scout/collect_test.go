package scout_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/copydesk/copydesk/server/lexical"
	"github.com/copydesk/copydesk/server/scout"
	"github.com/copydesk/copydesk/server/serp"
	"github.com/copydesk/copydesk/store"
)

func TestTidy(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, want string }{
		{"  How to make   cold brew? ", "How to make cold brew"},
		{"“cold brew ratio”", "cold brew ratio"},
		{"- cold brew concentrate.", "cold brew concentrate"},
		{"Cafe\u0301 au lait!", "Caf\u00e9 au lait"},
		{"?!", ""},
	}
	for _, c := range cases {
		if got := scout.Tidy(c.in); got != c.want {
			t.Errorf("Tidy(%q) = %q; want %q", c.in, got, c.want)
		}
	}
}

// TestCollectorDeduplicates: candidates are one per normal form, across
// sources and against the environment's keywords.
func TestCollectorDeduplicates(t *testing.T) {
	t.Parallel()
	c := scout.NewCollector([]string{"cold brew"})
	adds := []struct {
		text, by string
		intent   int
		ok       bool
	}{
		{"cold brew ratio", scout.FoundIdeaSERP, 0, true},
		{"Cold  Brew Ratio", scout.FoundSERPRelated, 0, true},               // same key: merged
		{"cold brew ratio?", scout.FoundAI, 1, true},                        // tidied to the same key
		{"How to make cold brew?", scout.FoundSERPQuestion, 0, true},        // a question without its mark
		{"how to make cold brew", scout.FoundAI, 3, true},                   // same, intents kept
		{"Cafe\u0301 cold brew", scout.FoundWeb, 0, true},                   // NFC
		{"caf\u00e9 cold brew", scout.FoundSERPAutocomplete, 0, true},       // the same key
		{"iced coffee", scout.FoundAI, 4, true},                             // no seed terms
		{"best cold brew maker", scout.FoundSERPAutocomplete, 0, true},      // becomes known below
		{"", scout.FoundWeb, 0, false},                                      // nothing
		{"line\u0007bell", scout.FoundWeb, 0, false},                        // a control character
		{strings.Repeat("word ", 13), scout.FoundWeb, 0, false},             // a headline, not a keyword
		{strings.Repeat("x", scout.MaxKeyword+1), scout.FoundWeb, 0, false}, // too long
		{"!!!", scout.FoundWeb, 0, false},                                   // no letter
	}
	for _, a := range adds {
		if got := c.Add(a.text, a.by, a.intent); got != a.ok {
			t.Errorf("Add(%q) = %v; want %v", a.text, got, a.ok)
		}
	}
	known := map[string]bool{store.KeywordKey("Best Cold Brew Maker"): true}
	cands, gathered, dropped := c.Candidates(known, scout.MaxCandidates)
	if gathered != 5 || dropped != 1 {
		t.Fatalf("gathered %d, dropped %d; want 5 distinct, 1 known", gathered, dropped)
	}
	var got []string
	for _, k := range cands {
		got = append(got, k.Keyword+"|"+k.Key+"|"+strings.Join(k.FoundBy, ",")+"|"+strings.Join(store.IntentNames(k.Intent), ","))
	}
	want := []string{
		// 40 (serp) + 30 (three sources: ideas, serp, ai) + 30 (all of the seed)
		"cold brew ratio|cold brew ratio|ai,idea_serp,serp_related|informational",
		// 40 + 15 (web, serp) + 30; before the next by key
		"Café cold brew|café cold brew|serp_autocomplete,web|",
		// 40 + 15 (serp, ai) + 30
		"How to make cold brew|how to make cold brew|ai,serp_question|informational,commercial",
		// 0 + 0 + 0
		"iced coffee|iced coffee|ai|transactional",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("candidates:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	scores := []int{cands[0].Score, cands[1].Score, cands[2].Score, cands[3].Score}
	if !slices.Equal(scores, []int{100, 85, 85, 0}) {
		t.Fatalf("scores %v", scores)
	}
	if top, _, _ := c.Candidates(known, 2); len(top) != 2 || top[0].Key != "cold brew ratio" {
		t.Fatalf("limit: %v", top)
	}
}

func TestScore(t *testing.T) {
	t.Parallel()
	seeds := [][]string{lexical.Terms("cold brew coffee"), lexical.Terms("espresso")}
	cases := []struct {
		name    string
		foundBy []string
		text    string
		want    int
	}{
		{"AIOnlyUnrelated", []string{scout.FoundAI}, "green tea", 0},
		{"IdeaFromAI", []string{scout.FoundIdeaAI}, "green tea", 0},
		{"SERPPresence", []string{scout.FoundSERPAutocomplete}, "green tea", 40},
		{"IdeaFromSERPIsPresence", []string{scout.FoundIdeaSERP}, "green tea", 40},
		{"TwoSERPFeaturesOneSource", []string{scout.FoundSERPRelated, scout.FoundSERPQuestion}, "green tea", 40},
		{"WebAndAI", []string{scout.FoundWeb, scout.FoundAI}, "green tea", 15},
		{"AgreementCapped", []string{scout.FoundWeb, scout.FoundAI, scout.FoundIdeaAI, scout.FoundSERPRelated}, "green tea", 70},
		{"TwoThirdsOfASeed", []string{scout.FoundAI}, "cold brew", 20},
		{"AllOfASeed", []string{scout.FoundAI}, "espresso machine", 30},
		{"Everything", []string{scout.FoundSERPRelated, scout.FoundAI, scout.FoundWeb}, "best cold brew coffee", 100},
	}
	for _, c := range cases {
		if got := scout.Score(c.foundBy, lexical.Terms(c.text), seeds); got != c.want {
			t.Errorf("%s: Score = %d; want %d", c.name, got, c.want)
		}
	}
}

func TestParseKeywords(t *testing.T) {
	t.Parallel()
	good := []struct {
		name string
		text string
		want string
	}{
		{"Plain", `{"keywords":[{"keyword":"cold brew ratio","intent":["informational"]},{"keyword":"buy cold brew maker","intent":["commercial","transactional"]}]}`,
			"cold brew ratio:1 buy cold brew maker:6"},
		{"Fenced", "```json\n{\"keywords\":[{\"keyword\":\"a\",\"intent\":[\"navigational\"]}]}\n```", "a:8"},
		{"AfterASentence", "Here you go:\n{\"keywords\":[{\"keyword\":\"a\",\"intent\":\"commercial, transactional\"}]}", "a:6"},
		{"UnknownIntentsLeftOut", `{"keywords":[{"keyword":"a","intent":["local","Informational"]}]}`, "a:1"},
		{"EmptyKeywordsSkipped", `{"keywords":[{"keyword":"  "},{"keyword":"b"}]}`, "b:0"},
		{"NoneIsAnAnswer", `{"keywords":[]}`, ""},
	}
	for _, c := range good {
		kws, err := scout.ParseKeywords(c.text)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		var got []string
		for _, k := range kws {
			got = append(got, k.Keyword+":"+string(rune('0'+k.Intent)))
		}
		if strings.Join(got, " ") != c.want {
			t.Errorf("%s: got %q; want %q", c.name, strings.Join(got, " "), c.want)
		}
	}
	bad := []struct{ name, text, want string }{
		{"Prose", "cold brew ratio\niced coffee", "no JSON object"},
		{"Broken", `{"keywords":[{"keyword":"a",}]}`, "does not parse"},
		{"WrongShape", `{"results":["a"]}`, `no "keywords" list`},
		{"WrongType", `{"keywords":"a, b"}`, "does not parse"},
	}
	for _, c := range bad {
		if _, err := scout.ParseKeywords(c.text); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v; want one with %q", c.name, err, c.want)
		}
	}
}

func TestQuery(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ lang, hl, gl string }{{"en", "en", ""}, {"en-US", "en", "us"}, {"pt-BR", "pt", "br"}, {"zh-Hant-TW", "zh", "tw"}} {
		q := serp.QueryIn("x", c.lang)
		if q.Q != "x" || q.Language != c.hl || q.Country != c.gl {
			t.Errorf("Query(%q) = %+v; want hl %q gl %q", c.lang, q, c.hl, c.gl)
		}
	}
}
