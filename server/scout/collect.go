package scout

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"unicode"

	"github.com/copydesk/copydesk/server/lexical"
	"github.com/copydesk/copydesk/server/valid"
	"github.com/copydesk/copydesk/store"
)

// Where a candidate was found (a candidate's found_by lists each). The
// families they belong to are the four sources a run reads: ideas, web,
// serp and ai.
const (
	FoundIdeaSERP         = "idea_serp"         // a search-phrase idea SerpApi found
	FoundIdeaAI           = "idea_ai"           // a search-phrase idea the model found
	FoundWeb              = "web"               // the title of a web-source item
	FoundSERPRelated      = "serp_related"      // Google's related searches, this run
	FoundSERPQuestion     = "serp_question"     // Google's "people also ask", this run
	FoundSERPAutocomplete = "serp_autocomplete" // Google's autocomplete, this run
	FoundAI               = "ai"                // the model, this run
)

// family is the source a found_by entry belongs to.
func family(found string) string {
	switch {
	case strings.HasPrefix(found, "idea_"):
		return SourceIdeas
	case strings.HasPrefix(found, "serp_"):
		return SourceSERP
	}
	return found // web, ai
}

// Bounds of candidates.
const (
	// MaxKeyword is the longest candidate, in characters, and MaxWords the
	// most words one has: a longer text (a headline) is not a keyword.
	MaxKeyword = 200
	MaxWords   = 12
	// MaxCandidates is how many candidates a run keeps, the best.
	MaxCandidates = 500
)

// Collector gathers candidates from every source, once each by their key
// (store.KeywordKey of the tidied text: the form keywords are unique in),
// keeping the first text found and every place it was found.
type Collector struct {
	seeds [][]string // the seeds' terms
	byKey map[string]*found
	order []string
}

type found struct {
	text   string
	by     []string
	intent int
}

// NewCollector starts a collection for a run with these seeds.
func NewCollector(seeds []string) *Collector {
	c := &Collector{byKey: map[string]*found{}}
	for _, s := range seeds {
		if t := lexical.Terms(s); len(t) > 0 {
			c.seeds = append(c.seeds, t)
		}
	}
	return c
}

// Add records text found by (a Found* value), with the intents the model
// gave it (IntentBits); it reports false for text that is not a keyword
// (empty, too long, a line with control characters).
func (c *Collector) Add(text, by string, intent int) bool {
	text = Tidy(text)
	if text == "" || len([]rune(text)) > MaxKeyword || len(strings.Fields(text)) > MaxWords || valid.Line("", text) != nil ||
		!strings.ContainsFunc(text, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) {
		return false
	}
	key := store.KeywordKey(text)
	f := c.byKey[key]
	if f == nil {
		f = &found{text: text}
		c.byKey[key] = f
		c.order = append(c.order, key)
	}
	if !slices.Contains(f.by, by) {
		f.by = append(f.by, by)
	}
	f.intent |= intent
	return true
}

// Keys are the keys collected, in the order first found.
func (c *Collector) Keys() []string { return slices.Clone(c.order) }

// Tidy is the text of a candidate as found, cleaned of what sources wrap
// around keywords: white space (single spaces, NFC), quotation marks, list
// marks, and the final punctuation of a question or a headline ("how to
// brew cold brew?" is the keyword "how to brew cold brew").
func Tidy(s string) string {
	s = store.KeywordDisplay(s)
	s = strings.TrimLeft(s, "-*•·–— ")
	s = strings.Trim(s, "\"'“”‘’`«» ")
	s = strings.TrimRight(s, ".,;:!?… ")
	return store.KeywordDisplay(s)
}

// Candidates are the candidates not among known (keys of the
// environment's keywords), scored (Score), best first (then by key), at
// most limit; gathered counts every distinct candidate found, dropped
// those known.
func (c *Collector) Candidates(known map[string]bool, limit int) (out []store.NewScoutCandidate, gathered, dropped int) {
	for _, key := range c.order {
		f := c.byKey[key]
		if known[key] {
			dropped++
			continue
		}
		by := slices.Clone(f.by)
		slices.Sort(by)
		out = append(out, store.NewScoutCandidate{Keyword: f.text, Key: key, FoundBy: by, Intent: f.intent,
			Score: Score(by, lexical.Terms(f.text), c.seeds)})
	}
	slices.SortFunc(out, func(a, b store.NewScoutCandidate) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return strings.Compare(a.Key, b.Key)
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out, len(c.order), dropped
}

// Score rates a candidate from 0 to 100 by the evidence that people
// search for it and that it belongs to the seeds' topic; no source of a
// run gives search volumes, so none counts:
//
//   - 40 for SERP presence: Google showed it (related searches, people
//     also ask, autocomplete), in this run or in a search-phrase idea;
//   - 15 for each source beyond the first that found it (ideas, web,
//     serp, ai), at most 30: sources that agree;
//   - up to 30 for relevance: the largest share of one seed's terms that
//     the candidate has (server/lexical), times 30, rounded.
func Score(foundBy []string, terms []string, seeds [][]string) int {
	score := 0
	families := map[string]bool{}
	for _, f := range foundBy {
		families[family(f)] = true
		if f == FoundIdeaSERP || strings.HasPrefix(f, "serp_") {
			score = 40
		}
	}
	score += 15 * min(max(len(families)-1, 0), 2)
	best := 0.0
	for _, s := range seeds {
		best = max(best, lexical.Containment(terms, s))
	}
	score += int(math.Round(30 * best))
	return min(score, 100)
}
