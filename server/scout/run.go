package scout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/copydesk/copydesk/server/ai"
	"github.com/copydesk/copydesk/server/engine"
	"github.com/copydesk/copydesk/server/jobs"
	"github.com/copydesk/copydesk/server/notify"
	"github.com/copydesk/copydesk/server/serp"
	"github.com/copydesk/copydesk/server/webhook"
	"github.com/copydesk/copydesk/store"
)

// RunJob is the job kind of a scout run. It is tried once: a run asks
// paid services, and running it again is the user's call.
const RunJob = "seo.scout"

// usageSource is what the model's calls are metered as.
const usageSource = "scout"

// probe stands in for the prompt when only planning a call.
var probe = []ai.Message{{Role: "user", Content: "scout"}}

// Bounds of a run's reading.
const (
	// maxIdeas and maxItems are how many of the newest search-phrase
	// ideas and web items a run reads.
	maxIdeas = 500
	maxItems = 200
	// serpTimeout bounds each SerpApi call.
	serpTimeout = 30 * time.Second
	// aiKeywords is how many keywords the model is asked for.
	aiKeywords = 30
)

type payload struct {
	RunID int64 `json:"run_id"`
}

// runJob carries out a queued run.
func (s *Service) runJob(ctx context.Context, job *store.Job) error {
	var p payload
	if err := json.Unmarshal(job.Payload, &p); err != nil {
		return jobs.Permanent(fmt.Errorf("scout job %d: bad payload: %w", job.ID, err))
	}
	run, ok, err := s.runs.Begin(ctx, p.RunID)
	if err != nil || !ok {
		return err
	}
	o, err := s.gather(ctx, run)
	if ctx.Err() != nil {
		// Cancelled (jobFinished records it), stopped (it runs again after
		// the restart) or a restore (the database is replaced): nothing is
		// written here.
		return ctx.Err()
	}
	if err != nil {
		return err // jobFinished fails the run with the job's error
	}
	if _, err := s.db.FinishScoutRun(context.WithoutCancel(ctx), run.ID, o); err != nil && !store.IsNotFound(err) {
		return err // not found: its environment was deleted meanwhile
	}
	if o.Status == store.RunFailed {
		return jobs.Permanent(errors.New(o.Error))
	}
	return nil
}

// jobFinished ends the run of a job that ended without ending it.
func (s *Service) jobFinished(ctx context.Context, job *store.Job) {
	var p payload
	if err := json.Unmarshal(job.Payload, &p); err != nil {
		s.log.Error("scout job with a bad payload", "job", job.ID, "err", err)
		return
	}
	// A run that ended itself keeps its ending: this reads it.
	run, ok := s.runs.JobEnded(ctx, job, p.RunID)
	if !ok {
		return
	}
	if e, ok := webhook.RunEnded(webhook.RunScout, run.EnvironmentID, run.ID, run.Status, run.Error, nil); ok {
		s.hooks.Emit(ctx, e)
	}
	s.notifyRun(context.WithoutCancel(ctx), run)
}

// notifyRun tells whoever started a run how it ended, once, when its job
// ends. A cancelled run needs no word: someone stopped it on purpose (its
// error says who). The note is tagged with the run's environment.
func (s *Service) notifyRun(ctx context.Context, r *store.ScoutRun) {
	if s.notify == nil || r.UserID == nil || r.Status == store.RunCancelled {
		return
	}
	note := notify.Note{Kind: notify.RunSucceeded, Title: "Keyword scout finished",
		Body: fmt.Sprintf("%d candidate keywords (%d found, %d already keywords)", r.CandidateCount, r.Gathered, r.Known),
		Link: fmt.Sprintf("/api/seo/scout/runs/%d", r.ID), EnvironmentID: &r.EnvironmentID}
	if r.CandidateCount == 1 {
		note.Body = fmt.Sprintf("1 candidate keyword (%d found, %d already keywords)", r.Gathered, r.Known)
	}
	if r.Status == store.RunFailed {
		note.Kind, note.Title, note.Body = notify.RunFailed, "Keyword scout failed", notify.Preview(r.Error, 200)
	}
	s.notify.User(ctx, *r.UserID, note)
}

// gather reads every source the run asks for, in Sources' order, and
// makes the candidates. A remote source that is not usable or fails is a
// note, not an error; the run fails only when it read no source at all.
// An error is one of the store's.
func (s *Service) gather(ctx context.Context, run *store.ScoutRun) (store.ScoutOutcome, error) {
	c := NewCollector(run.Seeds)
	var notes []string
	read := false
	envID := run.EnvironmentID
	for _, src := range run.Sources {
		if ctx.Err() != nil {
			return store.ScoutOutcome{}, ctx.Err()
		}
		switch src {
		case SourceIdeas:
			ideas, _, err := s.db.ListRecentSearchIdeas(ctx, envID, store.RecentFilter{Page: store.Page{Page: 1, PerPage: maxIdeas}})
			if err != nil {
				return store.ScoutOutcome{}, err
			}
			for _, i := range ideas {
				by := FoundIdeaAI
				if i.Source == "serp" {
					by = FoundIdeaSERP
				}
				c.Add(i.Idea, by, 0)
			}
			read = true
		case SourceWeb:
			items, _, err := s.db.ListRecentWebItems(ctx, envID, store.RecentFilter{Page: store.Page{Page: 1, PerPage: maxItems}})
			if err != nil {
				return store.ScoutOutcome{}, err
			}
			for _, it := range items {
				c.Add(it.Title, FoundWeb, 0)
			}
			read = true
		case SourceSERP:
			ok, note := s.askSERP(ctx, run, c)
			read = read || ok
			if note != "" {
				notes = append(notes, note)
			}
		case SourceAI:
			ok, note := s.askAI(ctx, run, c)
			read = read || ok
			if note != "" {
				notes = append(notes, note)
			}
		}
	}
	if ctx.Err() != nil {
		return store.ScoutOutcome{}, ctx.Err()
	}
	known, err := s.db.ExistingKeywordKeys(ctx, envID, c.Keys())
	if err != nil {
		return store.ScoutOutcome{}, err
	}
	cands, gathered, dropped := c.Candidates(known, MaxCandidates)
	o := store.ScoutOutcome{Status: store.RunSucceeded, Notes: strings.Join(notes, "; "), Gathered: gathered, Known: dropped, Candidates: cands}
	if !read {
		o = store.ScoutOutcome{Status: store.RunFailed, Error: "no source could be read: " + o.Notes}
	}
	return o, nil
}

// askSERP asks SerpApi about each seed: a Google search (related
// searches, people also ask) and its autocomplete. It stops at the first
// failure, which is likely to repeat (a bad key, no credits left), and
// reports whether any call answered, with a note on what went wrong.
func (s *Service) askSERP(ctx context.Context, run *store.ScoutRun, c *Collector) (bool, string) {
	if len(run.Seeds) == 0 {
		return false, "serp: skipped: no seed phrases"
	}
	client, err := s.engine.SERP(ctx, &run.EnvironmentID)
	switch {
	case err != nil:
		return false, "serp: " + store.Message(err)
	case client == nil:
		return false, "serp: skipped: no serp credential is usable in this environment"
	}
	lang := s.language(ctx, run.EnvironmentID)
	answered := false
	for _, seed := range run.Seeds {
		q := serp.QueryIn(seed, lang)
		sctx, cancel := context.WithTimeout(ctx, serpTimeout)
		res, err := client.Search(sctx, q)
		cancel()
		if err != nil {
			return answered, "serp search: " + err.Error()
		}
		answered = true
		for _, r := range res.Related {
			c.Add(r.Query, FoundSERPRelated, 0)
		}
		for _, r := range res.Questions {
			c.Add(r.Question, FoundSERPQuestion, 0)
		}
		sctx, cancel = context.WithTimeout(ctx, serpTimeout)
		sugg, err := client.Autocomplete(sctx, q)
		cancel()
		if err != nil {
			return answered, "serp autocomplete: " + err.Error()
		}
		for _, sg := range sugg {
			c.Add(sg.Value, FoundSERPAutocomplete, 0)
		}
	}
	return answered, ""
}

// language is the environment's content language (its AI settings).
func (s *Service) language(ctx context.Context, envID int64) string {
	eff, err := s.engine.Effective(ctx, &envID)
	if err != nil || eff.Language == "" {
		return "en"
	}
	return eff.Language
}

// askAI asks the model for keywords related to the seeds, with their
// intent, as JSON; an answer that does not parse is asked again once with
// the error. It reports whether the model answered usably, with a note on
// what went wrong.
func (s *Service) askAI(ctx context.Context, run *store.ScoutRun, c *Collector) (bool, string) {
	if len(run.Seeds) == 0 {
		return false, "ai: skipped: no seed phrases"
	}
	call := engine.Call{Source: usageSource, UserID: run.UserID, EnvironmentID: &run.EnvironmentID, System: aiSystem,
		Messages: []ai.Message{{Role: "user", Content: aiPrompt(run.Seeds, s.language(ctx, run.EnvironmentID))}}}
	err := engine.GenerateParsed(ctx, s.engine, call, aiFormat, func(text string) error {
		kws, err := ParseKeywords(text)
		for _, k := range kws {
			c.Add(k.Keyword, FoundAI, k.Intent)
		}
		return err
	})
	var perr *engine.ParseError
	switch {
	case errors.As(err, &perr):
		return false, "ai: the model's answer was not the JSON asked for, twice: " + perr.Error()
	case err != nil:
		return false, "ai: " + store.Message(err)
	}
	return true, ""
}

const aiSystem = "You are an SEO keyword researcher. You answer with JSON only."

// aiFormat is the answer's structure, as the model is told it.
const aiFormat = `Answer with exactly this JSON object and nothing else: {"keywords": [{"keyword": "...", "intent": ["informational"]}]}. ` +
	`Each intent is one or more of informational, commercial, transactional, navigational.`

func aiPrompt(seeds []string, lang string) string {
	quoted := make([]string, len(seeds))
	for i, s := range seeds {
		quoted[i] = fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("List up to %d search keywords, in the language %q, that people use when they research these topics: %s. "+
		"Prefer specific keywords a website could write one article for, not the topics themselves. For each, estimate its search intent. %s",
		aiKeywords, lang, strings.Join(quoted, ", "), aiFormat)
}

// AIKeyword is a keyword the model suggested, with its intent bits.
type AIKeyword struct {
	Keyword string
	Intent  int
}

// ParseKeywords reads the model's answer: the JSON object aiFormat asks
// for, possibly inside a Markdown code fence or after a sentence. Intents
// may be a list or one string ("commercial, transactional"); names that
// are not intents are left out. An answer without a "keywords" list is an
// error that says what is wrong, for the model to correct.
func ParseKeywords(text string) ([]AIKeyword, error) {
	obj, err := engine.JSONObject(text)
	if err != nil {
		return nil, err
	}
	var raw struct {
		Keywords *[]struct {
			Keyword string          `json:"keyword"`
			Intent  json.RawMessage `json:"intent"`
		} `json:"keywords"`
	}
	if err := json.Unmarshal(obj, &raw); err != nil {
		return nil, fmt.Errorf("the JSON does not parse: %v", err)
	}
	if raw.Keywords == nil {
		return nil, errors.New(`the object has no "keywords" list`)
	}
	out := []AIKeyword{}
	for _, k := range *raw.Keywords {
		if strings.TrimSpace(k.Keyword) == "" {
			continue
		}
		out = append(out, AIKeyword{Keyword: k.Keyword, Intent: intentBits(k.Intent)})
	}
	return out, nil
}

// intentBits reads an intent given as a list or a string of names.
func intentBits(raw json.RawMessage) int {
	var names []string
	if err := json.Unmarshal(raw, &names); err != nil {
		var one string
		if json.Unmarshal(raw, &one) != nil {
			return 0
		}
		names = strings.FieldsFunc(one, func(r rune) bool { return r == ',' || r == '/' || r == ' ' || r == '|' })
	}
	bits := 0
	for _, n := range names {
		if b, ok := store.IntentBits([]string{strings.ToLower(strings.TrimSpace(n))}); ok {
			bits |= b
		}
	}
	return bits
}
