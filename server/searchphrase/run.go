package searchphrase

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/copydesk/copydesk/server/ai"
	"github.com/copydesk/copydesk/server/engine"
	"github.com/copydesk/copydesk/server/jobs"
	"github.com/copydesk/copydesk/server/serp"
	"github.com/copydesk/copydesk/server/valid"
	"github.com/copydesk/copydesk/store"
)

// RunJob is the job kind of a run. It is tried once: a run asks paid
// services, and running it again is the user's call (the ideas of a
// second run are merged, never doubled).
const RunJob = "search.run"

// Sources and kinds of ideas.
const (
	SourceSERP = "serp"
	SourceAI   = "ai"

	KindRelated      = "related"      // Google's related searches; the model's queries
	KindQuestion     = "question"     // "people also ask"; the model's questions
	KindAutocomplete = "autocomplete" // Google's autocomplete
)

// Bounds of a run.
const (
	// serpTimeout bounds each SerpApi call.
	serpTimeout = 30 * time.Second
	// aiIdeas is how many queries the model is asked for, maxAIIdeas how
	// many of its lines are taken at most.
	aiIdeas    = 20
	maxAIIdeas = 40
	// MaxIdea is the longest idea kept, in characters.
	MaxIdea = 200
)

type payload struct {
	PhraseID int64  `json:"phrase_id"`
	UserID   *int64 `json:"user_id,omitempty"` // who asked; nil for the scheduler
	// Scheduled marks a run ScheduleJob queued: its end is told to the
	// phrase's creator when it found new ideas or failed.
	Scheduled bool `json:"scheduled,omitempty"`
	// Previous is the status the phrase's previous run ended with, as the
	// scheduler queued this one (queueing overwrites it): a scheduled
	// failure is told only when the run before did not fail.
	Previous string `json:"previous,omitempty"`
}

// Run queues a run of a phrase the scope sees. It is refused (409) when a
// run is queued or running already, or when there is nothing to ask: no
// serp credential usable in the phrase's environment and no AI provider.
// A watched phrase is not due while the run waits or runs; its end makes
// it due an interval later.
func (s *Service) Run(ctx context.Context, sc store.Scope, id int64) (*store.SearchPhrase, error) {
	p, err := s.Get(ctx, sc, id)
	if err != nil {
		return nil, err
	}
	client, serpErr := s.engine.SERP(ctx, &p.EnvironmentID)
	if client == nil {
		if _, _, err := s.engine.Plan(ctx, s.call(p, nil)); err != nil {
			return nil, nothingToAsk(serpErr, err)
		}
	}
	var user *int64
	if sc.UserID != 0 {
		user = &sc.UserID
	}
	p, err = s.db.QueueSearchPhraseRun(ctx, id, store.RunJob{Kind: RunJob, MaxAttempts: 1,
		Payload: func(id int64) any { return payload{PhraseID: id, UserID: user} }})
	if err != nil {
		return nil, err
	}
	s.jobs.Signal()
	s.plan.Now(ctx)
	return p, nil
}

// nothingToAsk is the 409 of a run with neither source usable.
func nothingToAsk(serpErr, aiErr error) error {
	serpPart := "no serp credential is usable in this environment (add one with POST /api/configurations, provider serp)"
	if serpErr != nil {
		serpPart = "the serp credential is not usable: " + store.Message(serpErr)
	}
	if store.KindOf(aiErr) != store.KindConflict {
		return aiErr
	}
	return store.Conflict("nothing to ask: %s, and the AI engine cannot run: %s", serpPart, store.Message(aiErr))
}

// runJob carries out a queued run.
func (s *Service) runJob(ctx context.Context, job *store.Job) error {
	var pl payload
	if err := json.Unmarshal(job.Payload, &pl); err != nil {
		return jobs.Permanent(fmt.Errorf("search run job %d: bad payload: %w", job.ID, err))
	}
	ok, err := s.db.StartSearchPhraseRun(ctx, pl.PhraseID, job.ID)
	if err != nil || !ok {
		return err // !ok: deleted, or another run took its place
	}
	p, err := s.db.SearchPhraseByID(ctx, pl.PhraseID)
	if err != nil {
		return jobs.Permanent(err)
	}
	ideas, notes, found := s.gather(ctx, p, pl.UserID)
	if ctx.Err() != nil {
		// Cancelled (jobFinished records it), stopped (it runs again
		// after the restart) or a restore (the database is replaced):
		// nothing is written here.
		return ctx.Err()
	}
	o := store.PhraseRunOutcome{Status: store.PhraseSucceeded, Ideas: ideas, Error: strings.Join(notes, "; ")}
	if !found {
		o.Status = store.PhraseFailed
	}
	after, added, err := s.db.FinishSearchPhraseRun(context.WithoutCancel(ctx), p.ID, job.ID, o)
	if err != nil {
		return err
	}
	// The run's end makes the phrase due again and frees a place in the
	// batch: the scheduler is planned now, before the runner records the
	// job's end, so that whoever sees the job ended sees the next plan too
	// (jobFinished's replan then finds nothing to change).
	s.plan.Now(context.WithoutCancel(ctx))
	if pl.Scheduled {
		s.tell(ctx, after, added, pl.Previous)
	}
	if !found {
		return jobs.Permanent(errors.New(o.Error))
	}
	return nil
}

// jobFinished ends the run of a job that ended without ending it
// (cancelled, or failed before it could say so), and plans the scheduler
// again after every run: a run that ended frees a place for a due phrase.
// A run that ended itself planned it already (runJob); the runner calls
// this after it recorded the job's end.
func (s *Service) jobFinished(ctx context.Context, job *store.Job) {
	ctx = context.WithoutCancel(ctx)
	defer s.plan.Now(ctx)
	var pl payload
	if err := json.Unmarshal(job.Payload, &pl); err != nil {
		s.log.Error("search run job with a bad payload", "job", job.ID, "err", err)
		return
	}
	status, why := jobs.Ending(job, store.PhraseFailed, store.PhraseCancelled)
	// Nothing is written (after is nil) when the run ended itself: the
	// phrase no longer waits for this job.
	after, _, err := s.db.FinishSearchPhraseRun(ctx, pl.PhraseID, job.ID, store.PhraseRunOutcome{Status: status, Error: why})
	if err != nil {
		s.log.Error("finish search phrase run", "phrase", pl.PhraseID, "job", job.ID, "err", err)
		return
	}
	if pl.Scheduled {
		s.tell(ctx, after, 0, pl.Previous)
	}
}

// gather asks every source that is usable for related queries: SerpApi's
// Google search (related searches, people also ask) and autocomplete,
// then the model. It returns the ideas in that order (the first finder of
// an idea is kept), a note for each source that failed, and whether any
// source answered.
func (s *Service) gather(ctx context.Context, p *store.SearchPhrase, user *int64) ([]store.NewSearchIdea, []string, bool) {
	var ideas []store.NewSearchIdea
	var notes []string
	found := false
	seen := map[string]bool{p.PhraseKey: true}
	add := func(text, source, kind string) {
		text = tidy(text)
		if text == "" || valid.Line("", text) != nil || valid.MaxLen("", text, MaxIdea) != nil {
			return
		}
		key := Key(text)
		if seen[key] {
			return
		}
		seen[key] = true
		ideas = append(ideas, store.NewSearchIdea{Idea: text, IdeaKey: key, Source: source, Kind: kind})
	}
	client, err := s.engine.SERP(ctx, &p.EnvironmentID)
	switch {
	case err != nil:
		notes = append(notes, "serp: "+store.Message(err))
	case client != nil:
		q := serp.QueryIn(p.Phrase, p.Locale)
		sctx, cancel := context.WithTimeout(ctx, serpTimeout)
		res, err := client.Search(sctx, q)
		cancel()
		if err != nil {
			notes = append(notes, "serp search: "+err.Error())
		} else {
			found = true
			for _, r := range res.Related {
				add(r.Query, SourceSERP, KindRelated)
			}
			for _, r := range res.Questions {
				add(r.Question, SourceSERP, KindQuestion)
			}
		}
		sctx, cancel = context.WithTimeout(ctx, serpTimeout)
		sugg, err := client.Autocomplete(sctx, q)
		cancel()
		if err != nil {
			notes = append(notes, "serp autocomplete: "+err.Error())
		} else {
			found = true
			for _, sg := range sugg {
				add(sg.Value, SourceSERP, KindAutocomplete)
			}
		}
	}
	if ctx.Err() != nil {
		return nil, nil, false
	}
	res, err := s.engine.Generate(ctx, s.call(p, user))
	if err != nil {
		notes = append(notes, "ai: "+store.Message(err))
		return ideas, notes, found
	}
	found = true
	for _, line := range ParseIdeas(res.Text) {
		kind := KindRelated
		if strings.HasSuffix(line, "?") {
			kind = KindQuestion
		}
		add(line, SourceAI, kind)
	}
	return ideas, notes, found
}

// call is the engine call of a run: the AI settings' credential and model
// for the phrase's environment, usage source "search".
func (s *Service) call(p *store.SearchPhrase, user *int64) engine.Call {
	return engine.Call{Source: "search", UserID: user, EnvironmentID: &p.EnvironmentID,
		System: "You research what people type into search engines. You answer with search queries only, one per line.",
		Messages: []ai.Message{{Role: "user", Content: fmt.Sprintf("List up to %d search queries that people who search for %q also search for, "+
			"in the language of the locale %s. Include questions people ask about it. Answer with one query per line and nothing else: "+
			"no numbering, no quotation marks, no explanations.", aiIdeas, p.Phrase, p.Locale)}}}
}

// ParseIdeas reads the model's answer: one query per line, with the
// list marks, numbering and quotation marks models add anyway taken off,
// and lines that are headings or remarks (ending in a colon) left out.
func ParseIdeas(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		line = strings.TrimLeft(line, "-*•·–— \t")
		if i := strings.IndexAny(line, ".)"); i > 0 && i <= 3 && allDigits(line[:i]) {
			line = strings.TrimSpace(line[i+1:])
		}
		line = strings.Trim(line, "\"'“”‘’`")
		line = strings.TrimSpace(line)
		if line == "" || strings.HasSuffix(line, ":") {
			continue
		}
		out = append(out, line)
		if len(out) == maxAIIdeas {
			break
		}
	}
	return out
}

func allDigits(s string) bool {
	for _, r := range s {
		if !unicode.IsDigit(r) {
			return false
		}
	}
	return s != ""
}
