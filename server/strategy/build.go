package strategy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/copydesk/copydesk/server/ai"
	"github.com/copydesk/copydesk/server/engine"
	"github.com/copydesk/copydesk/server/jobs"
	"github.com/copydesk/copydesk/server/serp"
	"github.com/copydesk/copydesk/server/valid"
	"github.com/copydesk/copydesk/store"
)

// BuildJob is the job kind that builds a strategy. It is tried once: a
// build may ask paid services.
const BuildJob = "seo.strategy"

// usageSource is what the model's calls are metered as: naming clusters
// is keyword research, the scout's kind of work.
const usageSource = "scout"

// probe stands in for the prompt when only planning a call.
var probe = []ai.Message{{Role: "user", Content: "strategy"}}

// Bounds of a build.
const (
	// SERPMaxAge is how long stored SERP data is used before it is
	// fetched again (when a serp credential is usable).
	SERPMaxAge = 30 * 24 * time.Hour
	// MaxSERPFetches bounds the SerpApi searches of one build (each costs
	// a credit); keywords left without data are grouped by their words.
	MaxSERPFetches = 200
	// maxRefine is how many keywords the model is shown at most.
	maxRefine = 300
	// serpTimeout bounds each SerpApi call.
	serpTimeout = 30 * time.Second
	// topResults is how many organic results count.
	topResults = 10
)

type payload struct {
	StrategyID int64 `json:"strategy_id"`
}

func itoa(i int) string { return strconv.Itoa(i) }

// buildJob builds a queued strategy.
func (s *Service) buildJob(ctx context.Context, job *store.Job) error {
	var p payload
	if err := json.Unmarshal(job.Payload, &p); err != nil {
		return jobs.Permanent(fmt.Errorf("strategy job %d: bad payload: %w", job.ID, err))
	}
	st, ok, err := s.builds.Begin(ctx, p.StrategyID)
	if err != nil || !ok {
		return err
	}
	o, err := s.build(ctx, st)
	if ctx.Err() != nil {
		return ctx.Err() // cancelled, stopped or a restore: see jobs.Handler
	}
	if err != nil {
		return err
	}
	if _, err := s.db.FinishStrategy(context.WithoutCancel(ctx), st.ID, o); err != nil && !store.IsNotFound(err) {
		return err
	}
	if o.Status == store.StrategyFailed {
		return jobs.Permanent(errors.New(o.Error))
	}
	return nil
}

// jobFinished ends the build of a job that ended without ending it, and
// tells whoever created the strategy how it went. It is called once per
// job, whatever ended it, so the note is sent once.
func (s *Service) jobFinished(ctx context.Context, job *store.Job) {
	var p payload
	if err := json.Unmarshal(job.Payload, &p); err != nil {
		s.log.Error("strategy job with a bad payload", "job", job.ID, "err", err)
		return
	}
	// A strategy ended already (built, failed by the handler, cancelled by
	// a user) is left as it is and returned as stored.
	st, ok := s.builds.JobEnded(ctx, job, p.StrategyID)
	if !ok {
		return
	}
	s.notifyBuilt(context.WithoutCancel(ctx), st)
}

// build groups a strategy's keywords. What goes wrong with a provider is
// a note, or the build's failure; an error is the store's.
func (s *Service) build(ctx context.Context, st *store.Strategy) (store.StrategyOutcome, error) {
	stored, more, err := s.db.KeywordsForStrategy(ctx, st.EnvironmentID, st.KeywordIDs, MaxKeywords)
	if err != nil {
		return store.StrategyOutcome{}, err
	}
	if len(stored) == 0 {
		return store.StrategyOutcome{Status: store.StrategyFailed, Error: "none of the strategy's keywords is left to group"}, nil
	}
	var notes []string
	if more {
		notes = append(notes, fmt.Sprintf("only the %d keywords of highest volume were grouped", MaxKeywords))
	}
	kws := make([]Keyword, len(stored))
	for i, k := range stored {
		kws[i] = keywordOf(k)
	}
	method := MethodLexical
	var groups []Group
	if st.Method != MethodLexical {
		withData, without, note, err := s.serpData(ctx, st, kws)
		if err != nil {
			return store.StrategyOutcome{}, err
		}
		if note != "" {
			notes = append(notes, note)
		}
		switch {
		case len(withData) > 0:
			method = MethodSERP
			groups = SERPOverlap(withData, st.MinShared)
			if len(without) > 0 {
				notes = append(notes, fmt.Sprintf("%d keywords without SERP data were grouped by their words", len(without)))
				groups = append(groups, Lexical(without, st.Similarity)...)
				SortGroups(groups, index(kws))
			}
		case st.Method == MethodSERP:
			return store.StrategyOutcome{Status: store.StrategyFailed, Error: "no SERP data could be had: " + strings.Join(notes, "; ")}, nil
		default:
			notes = append(notes, "grouped by words: no SERP data")
		}
	}
	if method == MethodLexical {
		groups = Lexical(kws, st.Similarity)
	}
	if st.Refine {
		refined, note := s.refine(ctx, st, groups, kws, method)
		if ctx.Err() != nil {
			return store.StrategyOutcome{}, ctx.Err()
		}
		groups = refined
		if note != "" {
			notes = append(notes, note)
		}
	}
	o := store.StrategyOutcome{Status: store.StrategyReady, UsedMethod: method, Notes: strings.Join(notes, "; ")}
	for _, g := range groups {
		pillar := g.Pillar
		o.Clusters = append(o.Clusters, store.ClusterInput{Name: g.Name, Pillar: &pillar, KeywordIDs: g.Members})
	}
	return o, nil
}

// serpData gives the keywords their top-10 URLs: stored ones that are
// fresh (or any stored ones, when no serp credential is usable), fetched
// ones for the rest while fetching works, up to MaxSERPFetches. It splits
// the keywords into those with SERP data and those without, with a note
// on what went wrong.
func (s *Service) serpData(ctx context.Context, st *store.Strategy, kws []Keyword) (with, without []Keyword, note string, err error) {
	ids := make([]int64, len(kws))
	for i, k := range kws {
		ids[i] = k.ID
	}
	stored, err := s.db.KeywordSERPs(ctx, ids)
	if err != nil {
		return nil, nil, "", err
	}
	client, cerr := s.engine.SERP(ctx, &st.EnvironmentID)
	switch {
	case cerr != nil:
		note = "serp: " + store.Message(cerr)
	case client == nil:
		note = "no serp credential is usable: only stored SERP data was used"
	}
	now := s.now()
	lang := "en"
	if eff, err := s.engine.Effective(ctx, &st.EnvironmentID); err == nil && eff.Language != "" {
		lang = eff.Language
	}
	fetched := 0
	for _, k := range kws {
		d, ok := stored[k.ID]
		usable := ok && d.Key == k.Key
		fresh := usable && !st.RefreshSERP && now.Sub(d.FetchedAt) < SERPMaxAge
		if client != nil && !fresh && note == "" {
			if fetched == MaxSERPFetches {
				note = fmt.Sprintf("SERP data was fetched for %d keywords, the most one build fetches", MaxSERPFetches)
			} else {
				sctx, cancel := context.WithTimeout(ctx, serpTimeout)
				res, ferr := client.Search(sctx, serp.QueryIn(k.Text, lang))
				cancel()
				if ctx.Err() != nil {
					return nil, nil, "", ctx.Err()
				}
				if ferr != nil {
					note = "serp search: " + ferr.Error() + ": stored SERP data was used for the other keywords"
				} else {
					fetched++
					urls := make([]string, 0, topResults)
					for _, r := range res.Organic {
						if len(urls) < topResults && r.Link != "" {
							urls = append(urls, r.Link)
						}
					}
					if err := s.db.PutKeywordSERP(ctx, k.ID, k.Key, urls); err != nil {
						return nil, nil, "", err
					}
					d, usable = store.KeywordSERP{KeywordID: k.ID, Key: k.Key, URLs: urls, FetchedAt: now}, true
				}
			}
		}
		if usable {
			k.URLs = d.URLs
			with = append(with, k)
		} else {
			without = append(without, k)
		}
	}
	return with, without, note, nil
}

// refine asks the model to name the clusters and move keywords that
// belong elsewhere, as JSON, once more with the error when the answer
// does not hold: every keyword once, none invented. Pillars and order
// follow the rules again afterwards. On failure the clusters stay as
// they were, with a note.
func (s *Service) refine(ctx context.Context, st *store.Strategy, groups []Group, kws []Keyword, method string) ([]Group, string) {
	if len(kws) > maxRefine {
		return groups, fmt.Sprintf("not refined by the model: it is shown at most %d keywords", maxRefine)
	}
	byID := index(kws)
	lang := "en"
	if eff, err := s.engine.Effective(ctx, &st.EnvironmentID); err == nil && eff.Language != "" {
		lang = eff.Language
	}
	call := engine.Call{Source: usageSource, UserID: st.CreatedBy, EnvironmentID: &st.EnvironmentID, System: refineSystem,
		Messages: []ai.Message{{Role: "user", Content: refinePrompt(groups, byID, method, lang)}}}
	var refined []Group
	err := engine.GenerateParsed(ctx, s.engine, call, refineFormat, func(text string) (err error) {
		refined, err = ParseRefined(text, kws)
		return err
	})
	var perr *engine.ParseError
	switch {
	case errors.As(err, &perr):
		return groups, "not refined by the model: its answer did not hold, twice: " + perr.Error()
	case err != nil:
		return groups, "not refined by the model: " + store.Message(err)
	}
	return refined, ""
}

const refineSystem = "You are an SEO strategist who plans pillar pages and topic clusters. You answer with JSON only."

const refineFormat = `Answer with exactly this JSON object and nothing else: {"clusters": [{"name": "...", "keywords": ["...", "..."]}]}. ` +
	`Use every keyword exactly once, written exactly as given, and no other keyword.`

func refinePrompt(groups []Group, byID map[int64]Keyword, method, lang string) string {
	how := "by the overlap of their Google results"
	if method == MethodLexical {
		how = "by the words they share"
	}
	type cluster struct {
		Keywords []string `json:"keywords"`
	}
	list := make([]cluster, len(groups))
	for i, g := range groups {
		for _, id := range g.Members {
			list[i].Keywords = append(list[i].Keywords, byID[id].Text)
		}
	}
	b, _ := json.Marshal(list) // strings always encode
	return fmt.Sprintf("These keywords of one website were grouped into topic clusters %s. Each cluster becomes a pillar page with "+
		"supporting pages. Give each cluster a short descriptive name (at most 60 characters) in the language %q. Move a keyword to "+
		"another cluster, merge clusters or split one only where a keyword clearly belongs elsewhere. %s\n\nClusters:\n%s",
		how, lang, refineFormat, b)
}

// ParseRefined reads the model's clusters: the JSON object refineFormat
// asks for, possibly in a code fence or after a sentence. Every keyword
// of kws must be in exactly one cluster, matched in the keywords' normal
// form; an empty cluster is dropped. Each cluster is arranged by the
// pillar rule, named as the model says (or after its pillar), and the
// clusters are ordered as SortGroups does.
func ParseRefined(text string, kws []Keyword) ([]Group, error) {
	obj, err := engine.JSONObject(text)
	if err != nil {
		return nil, err
	}
	var raw struct {
		Clusters *[]struct {
			Name     string   `json:"name"`
			Keywords []string `json:"keywords"`
		} `json:"clusters"`
	}
	if err := json.Unmarshal(obj, &raw); err != nil {
		return nil, fmt.Errorf("the JSON does not parse: %v", err)
	}
	if raw.Clusters == nil {
		return nil, errors.New(`the object has no "clusters" list`)
	}
	byKey := map[string]Keyword{}
	for _, k := range kws {
		byKey[k.Key] = k
	}
	placed := map[int64]bool{}
	var out []Group
	for i, c := range *raw.Clusters {
		var members []Keyword
		for _, text := range c.Keywords {
			k, ok := byKey[store.KeywordKey(text)]
			switch {
			case !ok:
				return nil, fmt.Errorf("cluster %d has %q, which is not one of the keywords", i+1, text)
			case placed[k.ID]:
				return nil, fmt.Errorf("%q is in more than one cluster", k.Text)
			}
			placed[k.ID] = true
			members = append(members, k)
		}
		if len(members) == 0 {
			continue
		}
		g := Arrange(members)
		if name := strings.TrimSpace(c.Name); name != "" && valid.Line("", name) == nil && valid.MaxLen("", name, maxName) == nil {
			g.Name = name
		}
		out = append(out, g)
	}
	for _, k := range kws {
		if !placed[k.ID] {
			return nil, fmt.Errorf("the answer leaves out %q", k.Text)
		}
	}
	SortGroups(out, index(kws))
	return out, nil
}
