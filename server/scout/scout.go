// Package scout discovers candidate keywords for an environment
// (/api/seo/scout): a run, on the job runner, reads the environment's
// search-phrase ideas and web-source item titles, asks SerpApi (when a
// serp credential is usable) for Google's related searches, "people also
// ask" and autocomplete of the seed phrases, and asks the AI engine (usage
// source scout) for related keywords with their intent. The candidates
// are de-duplicated against each other and the environment's keywords in
// the keywords' normal form (store.KeywordKey), scored (Score), and kept
// with the run until some are accepted as keywords (source scout).
//
// Who does what: everyone reads the runs of their environments; editors
// and up start, cancel and delete runs and accept candidates. Any other
// environment's run is not found.
package scout

import (
	"context"
	"log/slog"
	"slices"
	"strings"

	"github.com/copydesk/copydesk/server/engine"
	"github.com/copydesk/copydesk/server/environment"
	"github.com/copydesk/copydesk/server/jobs"
	"github.com/copydesk/copydesk/server/notify"
	"github.com/copydesk/copydesk/server/valid"
	"github.com/copydesk/copydesk/server/webhook"
	"github.com/copydesk/copydesk/store"
)

// Store is what the service needs of the store.
type Store interface {
	CreateScoutRunWithJob(ctx context.Context, n store.NewScoutRun, j store.RunJob) (*store.ScoutRun, error)
	ScoutRunByID(ctx context.Context, id int64) (*store.ScoutRun, error)
	ListScoutRuns(ctx context.Context, f store.ScoutRunFilter) ([]*store.ScoutRun, int, error)
	StartScoutRun(ctx context.Context, id int64) (bool, error)
	FinishScoutRun(ctx context.Context, id int64, o store.ScoutOutcome) (*store.ScoutRun, error)
	ScoutCandidates(ctx context.Context, runID int64) ([]*store.ScoutCandidate, error)
	AcceptScoutCandidates(ctx context.Context, runID int64, ids []int64) (store.AcceptResult, error)
	DeleteScoutRun(ctx context.Context, id int64) error
	ExistingKeywordKeys(ctx context.Context, envID int64, keys []string) (map[string]bool, error)

	ListSearchPhrases(ctx context.Context, f store.SearchPhraseFilter) ([]*store.SearchPhrase, int, error)
	ListRecentSearchIdeas(ctx context.Context, envID int64, f store.RecentFilter) ([]*store.SearchIdea, int, error)
	ListRecentWebItems(ctx context.Context, envID int64, f store.RecentFilter) ([]*store.WebItem, int, error)
}

// Deps are what the service works with.
type Deps struct {
	Store        Store
	Environments environment.Getter
	Engine       engine.Searcher
	Jobs         jobs.Queue
	Notify       notify.ToUser   // when set, a run tells whoever started it how it ended
	Hooks        webhook.Emitter // run.succeeded, run.failed; nil: none
	Log          *slog.Logger
	// MaxQueued is how many runs an environment may have queued or
	// running; 0: DefaultMaxQueued.
	MaxQueued int
}

// DefaultMaxQueued bounds the queued or running scout runs and strategy
// builds of one environment: each spends SerpApi searches and model
// calls, and one editor once queued 200.
const DefaultMaxQueued = 3

// Service starts scout runs, carries them out and accepts candidates.
type Service struct {
	db     Store
	envs   environment.Getter
	engine engine.Searcher
	jobs   jobs.Queue
	notify notify.ToUser
	hooks  webhook.Emitter
	log    *slog.Logger
	runs   jobs.Owned[store.ScoutRun]
}

// New returns the service and registers its job kind with d.Jobs.
func New(d Deps) *Service {
	s := &Service{db: d.Store, envs: d.Environments, engine: d.Engine, jobs: d.Jobs, notify: d.Notify, hooks: webhook.Or(d.Hooks), log: d.Log}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	limit := d.MaxQueued
	if limit <= 0 {
		limit = DefaultMaxQueued
	}
	// A run's work is one job.
	s.runs = jobs.Owned[store.ScoutRun]{Noun: "scout run", Short: "run", CancelAt: "/api/seo/scout/runs/%d/cancel",
		Failed: store.RunFailed, Cancelled: store.RunCancelled,
		Info: func(r *store.ScoutRun) (int64, int64, string, bool, *int64) {
			return r.ID, r.EnvironmentID, r.Status, r.Finished(), r.JobID
		},
		Kind: RunJob, Limit: limit, Jobs: d.Jobs, Log: s.log,
		ByID: d.Store.ScoutRunByID, Start: d.Store.StartScoutRun, Remove: d.Store.DeleteScoutRun,
		Find: func(ctx context.Context, sc store.Scope, q ListQuery) ([]*store.ScoutRun, int, error) {
			return d.Store.ListScoutRuns(ctx, store.ScoutRunFilter{Scope: sc, EnvironmentID: q.EnvironmentID, Status: q.Status, Sort: q.Sort, Page: q.Page})
		},
		End: func(ctx context.Context, id int64, status, why string) (*store.ScoutRun, error) {
			return d.Store.FinishScoutRun(ctx, id, store.ScoutOutcome{Status: status, Error: why})
		}}
	s.jobs.Register(RunJob, jobs.Kind{Handle: s.runJob, OnFinish: s.jobFinished, Background: true})
	return s
}

// The sources a run reads.
const (
	SourceIdeas = "ideas" // the environment's search-phrase ideas
	SourceWeb   = "web"   // the titles of its web-source items
	SourceSERP  = "serp"  // SerpApi, for the seeds
	SourceAI    = "ai"    // the AI engine, for the seeds
)

// Sources are every source, in the order a run reads them.
var Sources = []string{SourceIdeas, SourceWeb, SourceSERP, SourceAI}

// Bounds of a run's input.
const (
	// MaxSeeds is how many seed phrases a run asks about: each costs two
	// SerpApi searches (a search and an autocomplete).
	MaxSeeds = 10
	// MaxSeed is the longest seed, in characters.
	MaxSeed = 200
	// MaxAccept is how many candidates one accept takes.
	MaxAccept = 500
)

// StartInput is what a caller asks a run for.
type StartInput struct {
	EnvironmentID int64
	// Seeds are the phrases SerpApi and the model are asked about; none:
	// the environment's active search phrases (the newest MaxSeeds).
	Seeds []string
	// Sources are what to read; none: all of Sources.
	Sources []string
}

// Start checks a run and queues it. It is refused (409) when it could
// find nothing: only remote sources asked for, and neither a serp
// credential nor an AI provider usable.
func (s *Service) Start(ctx context.Context, sc store.Scope, in StartInput) (*store.ScoutRun, error) {
	if _, err := environment.For(ctx, s.envs, sc, in.EnvironmentID); err != nil {
		return nil, err
	}
	sources, err := checkSources(in.Sources)
	if err != nil {
		return nil, err
	}
	seeds, err := checkSeeds(in.Seeds)
	if err != nil {
		return nil, err
	}
	if in.Seeds == nil {
		if seeds, err = s.defaultSeeds(ctx, sc, in.EnvironmentID); err != nil {
			return nil, err
		}
	}
	local := slices.Contains(sources, SourceIdeas) || slices.Contains(sources, SourceWeb)
	if !local {
		if len(seeds) == 0 {
			return nil, store.Invalid("seeds: serp and ai ask about seed phrases: give seeds, or add active search phrases to the environment")
		}
		if err := s.checkRemote(ctx, in.EnvironmentID, sources); err != nil {
			return nil, err
		}
	}
	n := store.NewScoutRun{EnvironmentID: in.EnvironmentID, Seeds: seeds, Sources: sources}
	if sc.UserID != 0 {
		n.UserID = &sc.UserID
	}
	return s.runs.Queue(func(j store.RunJob) (*store.ScoutRun, error) { return s.db.CreateScoutRunWithJob(ctx, n, j) },
		func(id int64) any { return payload{RunID: id} })
}

// checkSources is the sources asked for, in Sources' order, or all.
func checkSources(in []string) ([]string, error) {
	if len(in) == 0 {
		return slices.Clone(Sources), nil
	}
	var out []string
	for _, src := range Sources {
		if slices.Contains(in, src) {
			out = append(out, src)
		}
	}
	for _, src := range in {
		if !slices.Contains(Sources, src) {
			return nil, store.Invalid("sources: %q is not a source (%s)", src, strings.Join(Sources, ", "))
		}
	}
	return out, nil
}

// checkSeeds tidies the seeds, once each by key.
func checkSeeds(in []string) ([]string, error) {
	out := []string{}
	seen := map[string]bool{}
	for i, seed := range in {
		seed = store.KeywordDisplay(seed)
		if seed == "" {
			return nil, store.Invalid("seeds[%d]: must not be empty", i)
		}
		if err := valid.Line("seeds", seed); err != nil {
			return nil, err
		}
		if err := valid.MaxLen("seeds", seed, MaxSeed); err != nil {
			return nil, err
		}
		if key := store.KeywordKey(seed); !seen[key] {
			seen[key] = true
			out = append(out, seed)
		}
	}
	if len(out) > MaxSeeds {
		return nil, store.Invalid("seeds: at most %d", MaxSeeds)
	}
	return out, nil
}

// defaultSeeds are the environment's active search phrases, the newest
// first.
func (s *Service) defaultSeeds(ctx context.Context, sc store.Scope, envID int64) ([]string, error) {
	active := true
	phrases, _, err := s.db.ListSearchPhrases(ctx, store.SearchPhraseFilter{Scope: sc, EnvironmentID: &envID, IsActive: &active,
		Page: store.Page{Page: 1, PerPage: MaxSeeds}})
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(phrases))
	for _, p := range phrases {
		out = append(out, p.Phrase)
	}
	return checkSeeds(out)
}

// checkRemote refuses a run of remote sources only when none of them can
// be asked.
func (s *Service) checkRemote(ctx context.Context, envID int64, sources []string) error {
	var why []string
	if slices.Contains(sources, SourceSERP) {
		client, err := s.engine.SERP(ctx, &envID)
		switch {
		case client != nil:
			return nil
		case err != nil:
			why = append(why, "the serp credential is not usable: "+store.Message(err))
		default:
			why = append(why, "no serp credential is usable in this environment (add one with POST /api/configurations, provider serp)")
		}
	}
	if slices.Contains(sources, SourceAI) {
		_, _, err := s.engine.Plan(ctx, engine.Call{Source: usageSource, EnvironmentID: &envID, Messages: probe})
		if err == nil {
			return nil
		}
		if store.KindOf(err) != store.KindConflict {
			return err
		}
		why = append(why, "the AI engine cannot run: "+store.Message(err))
	}
	return store.Conflict("nothing to ask: %s", strings.Join(why, "; "))
}

// Get returns a run the scope sees, with its candidates best first.
func (s *Service) Get(ctx context.Context, sc store.Scope, id int64) (*store.ScoutRun, []*store.ScoutCandidate, error) {
	return jobs.GetWith(ctx, s.runs, sc, id, s.db.ScoutCandidates)
}

// ListQuery narrows List.
type ListQuery = jobs.OwnedQuery

// List lists the runs the scope sees; an environment it does not see is
// not found.
func (s *Service) List(ctx context.Context, sc store.Scope, q ListQuery) ([]*store.ScoutRun, int, error) {
	return s.runs.List(ctx, sc, q)
}

// Accept turns candidates of a succeeded run into keywords of its
// environment; those it has by now are skipped.
func (s *Service) Accept(ctx context.Context, sc store.Scope, id int64, candidates []int64) (store.AcceptResult, error) {
	run, err := s.runs.Get(ctx, sc, id)
	if err != nil {
		return store.AcceptResult{}, err
	}
	if run.Status != store.RunSucceeded {
		return store.AcceptResult{}, store.Conflict("scout run %d is %s: only a succeeded run's candidates can be accepted", run.ID, run.Status)
	}
	if len(candidates) == 0 || len(candidates) > MaxAccept {
		return store.AcceptResult{}, store.Invalid("candidates: give 1 to %d candidate ids", MaxAccept)
	}
	return s.db.AcceptScoutCandidates(ctx, run.ID, candidates)
}

// Cancel cancels a queued or running run the scope sees, saying who did;
// a finished one is a conflict. The ending is recorded first, then the
// job is cancelled (jobs.Owned.Cancel), which cuts the SerpApi or model
// call under way. What the run had gathered is dropped with it:
// candidates are written only when a run succeeds, and half a run's
// sources would score them differently.
func (s *Service) Cancel(ctx context.Context, sc store.Scope, id int64, by string) (*store.ScoutRun, error) {
	return s.runs.Cancel(ctx, sc, id, by)
}

// Delete deletes a finished run the scope sees, with its candidates; the
// keywords accepted from it stay. A queued or running run is a conflict:
// cancel it first.
func (s *Service) Delete(ctx context.Context, sc store.Scope, id int64) error {
	return s.runs.Delete(ctx, sc, id)
}
