// Package searchphrase holds the rules of search phrases
// (/api/search-phrases): queries an environment researches, each in a
// locale, and their runs, which ask SerpApi (when a serp credential is
// usable) and the AI engine (usage source "search") for related queries
// and keep them as the phrase's ideas, once each after normalisation.
//
// Who does what: everyone reads the phrases and ideas of their
// environments, editors and up write them and start runs; any other
// environment's phrase is not found. A run is background work on the job
// runner (a run asks several remote services, and a model can take
// minutes): POST …/run answers 202 and the phrase's run_status tells how
// it went.
//
// A phrase with a refresh interval is also watched: the recurring job
// kind ScheduleJob queues its runs when they are due (schedule.go), a few
// at a time, and tells the phrase's creator of a scheduled run that found
// new ideas or failed.
package searchphrase

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/copydesk/copydesk/server/engine"
	"github.com/copydesk/copydesk/server/environment"
	"github.com/copydesk/copydesk/server/jobs"
	"github.com/copydesk/copydesk/server/notify"
	"github.com/copydesk/copydesk/server/valid"
	"github.com/copydesk/copydesk/store"
)

// Store is what the service needs of the store.
type Store interface {
	SearchPhraseByID(ctx context.Context, id int64) (*store.SearchPhrase, error)
	ListSearchPhrases(ctx context.Context, f store.SearchPhraseFilter) ([]*store.SearchPhrase, int, error)
	CreateSearchPhrase(ctx context.Context, n store.NewSearchPhrase) (*store.SearchPhrase, error)
	UpdateSearchPhrase(ctx context.Context, id int64, up store.SearchPhraseUpdate) (*store.SearchPhrase, error)
	DeleteSearchPhrase(ctx context.Context, id int64) error
	DeleteSearchPhrases(ctx context.Context, sc store.Scope, ids []int64) (int, error)
	QueueSearchPhraseRun(ctx context.Context, id int64, j store.RunJob) (*store.SearchPhrase, error)
	NextSearchPhraseRun(ctx context.Context) (*time.Time, int, error)
	QueueDueSearchPhraseRuns(ctx context.Context, now time.Time, maxInFlight int, j store.PhraseRunJob) ([]int64, error)
	StartSearchPhraseRun(ctx context.Context, id, jobID int64) (bool, error)
	FinishSearchPhraseRun(ctx context.Context, id, jobID int64, o store.PhraseRunOutcome) (*store.SearchPhrase, int, error)
	ListSearchIdeas(ctx context.Context, phraseID int64, f store.SearchIdeaFilter) ([]*store.SearchIdea, int, error)
}

// Runner is the job runner (server/jobs) that carries runs out and plans
// the scheduled ones.
type Runner interface {
	Register(kind string, k jobs.Kind)
	Signal()
	Replan(ctx context.Context, kind string) error
}

// Deps are what the service works with.
type Deps struct {
	Store        Store
	Environments environment.Getter
	Engine       engine.Searcher
	Jobs         Runner
	Notify       notify.ToUser // nil: nobody is told
	Log          *slog.Logger
	Now          func() time.Time // the store's clock
}

// Service implements the phrase rules and carries out runs.
type Service struct {
	db     Store
	envs   environment.Getter
	engine engine.Searcher
	jobs   Runner
	notify notify.ToUser
	log    *slog.Logger
	plan   jobs.Plan // ScheduleJob, replanned after a change
	now    func() time.Time
}

// New returns the service and registers its job kinds with d.Jobs.
func New(d Deps) *Service {
	s := &Service{db: d.Store, envs: d.Environments, engine: d.Engine, jobs: d.Jobs, notify: d.Notify, log: d.Log, now: d.Now}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.plan = jobs.Plan{Jobs: s.jobs, Kind: ScheduleJob, Log: s.log, What: "search phrases: plan the next scheduled run"}
	if s.now == nil {
		s.now = time.Now
	}
	s.jobs.Register(RunJob, jobs.Kind{Handle: s.runJob, OnFinish: s.jobFinished, Background: true})
	s.jobs.Register(ScheduleJob, jobs.Kind{Handle: s.queueDue, Next: s.next})
	return s
}

// Limits of the fields. The refresh interval has the web sources' bounds
// (websource.MinInterval, MaxInterval), so that both kinds of source read
// alike; 0 is no schedule.
const (
	MaxPhrase   = 200
	maxLocale   = 35
	MinInterval = 5 * time.Minute
	MaxInterval = 30 * 24 * time.Hour
)

// Key is the one normal form of a phrase or an idea, in which two are the
// same: Unicode NFC, lower case, single spaces, trimmed. The SEO
// keywords use the same rule for theirs: it is theirs (store.KeywordKey).
func Key(s string) string { return store.KeywordKey(s) }

// tidy is how a phrase or an idea is shown: NFC, single spaces, trimmed,
// its letter case kept.
func tidy(s string) string { return store.KeywordDisplay(s) }

// checkPhrase tidies a phrase and checks it: one line, 1 to MaxPhrase
// characters.
func checkPhrase(raw string) (phrase, key string, err error) {
	if err := valid.Line("phrase", raw); err != nil {
		return "", "", err
	}
	phrase = tidy(raw)
	if phrase == "" {
		return "", "", store.Invalid("phrase: must not be empty")
	}
	if err := valid.MaxLen("phrase", phrase, MaxPhrase); err != nil {
		return "", "", err
	}
	return phrase, Key(phrase), nil
}

func checkLocale(l string) error {
	if err := valid.MaxLen("locale", l, maxLocale); err != nil {
		return err
	}
	return valid.Language("locale", l)
}

// checkInterval accepts 0 (on demand only) or whole seconds from
// MinInterval to MaxInterval.
func checkInterval(d time.Duration) error {
	if d != 0 && (d < MinInterval || d > MaxInterval || d%time.Second != 0) {
		return store.Invalid("refresh_interval: must be 0 (no schedule) or whole seconds from %d (5 minutes) to %d (30 days)",
			int64(MinInterval/time.Second), int64(MaxInterval/time.Second))
	}
	return nil
}

// Input is a phrase to create.
type Input struct {
	EnvironmentID int64
	Phrase        string
	Locale        string // "": the environment's AI language
	IsActive      bool
	// RefreshInterval is the time between scheduled runs; 0 (the
	// default): on demand only.
	RefreshInterval time.Duration
}

// Change holds the fields to change; nil leaves one alone.
type Change struct {
	Phrase          *string
	Locale          *string
	IsActive        *bool
	RefreshInterval *time.Duration
}

// ListQuery narrows a list of phrases.
type ListQuery struct {
	EnvironmentID *int64 // an environment the caller does not see is 404
	IsActive      *bool
	Q             string
	Sort          store.Sort
	Page          store.Page
}

// List lists the phrases the scope sees.
func (s *Service) List(ctx context.Context, sc store.Scope, q ListQuery) ([]*store.SearchPhrase, int, error) {
	if q.EnvironmentID != nil {
		if _, err := s.envs.Get(ctx, sc, *q.EnvironmentID); err != nil {
			return nil, 0, err
		}
	}
	return s.db.ListSearchPhrases(ctx, store.SearchPhraseFilter{Scope: sc, EnvironmentID: q.EnvironmentID, IsActive: q.IsActive,
		Q: q.Q, Sort: q.Sort, Page: q.Page})
}

// Get returns a phrase the scope sees.
func (s *Service) Get(ctx context.Context, sc store.Scope, id int64) (*store.SearchPhrase, error) {
	return store.Seen(ctx, id, s.db.SearchPhraseByID, func(p *store.SearchPhrase) bool { return sc.Sees(p.EnvironmentID) }, "search phrase")
}

// Create makes a phrase in an environment the scope sees. Without a
// locale it takes the environment's AI language (the AI content
// settings'). An active phrase with a refresh interval is due at once.
func (s *Service) Create(ctx context.Context, sc store.Scope, in Input) (*store.SearchPhrase, error) {
	if _, err := s.envs.Get(ctx, sc, in.EnvironmentID); err != nil {
		return nil, err
	}
	phrase, key, err := checkPhrase(in.Phrase)
	if err != nil {
		return nil, err
	}
	if err := checkInterval(in.RefreshInterval); err != nil {
		return nil, err
	}
	locale := strings.TrimSpace(in.Locale)
	if locale == "" {
		eff, err := s.engine.Effective(ctx, &in.EnvironmentID)
		if err != nil {
			return nil, err
		}
		locale = eff.Language
	}
	if err := checkLocale(locale); err != nil {
		return nil, err
	}
	n := store.NewSearchPhrase{EnvironmentID: in.EnvironmentID, Phrase: phrase, PhraseKey: key, Locale: locale, IsActive: in.IsActive,
		RefreshInterval: in.RefreshInterval}
	if sc.UserID != 0 {
		n.CreatedBy = &sc.UserID
	}
	p, err := s.db.CreateSearchPhrase(ctx, n)
	if err != nil {
		return nil, err
	}
	if p.NextRunAt != nil {
		s.plan.Now(ctx)
	}
	return p, nil
}

// Update changes a phrase the scope sees. Its ideas stay: they were found
// for the phrase as it was, and the next run adds those of the new one.
// When it is next due is store.UpdateSearchPhrase's rule.
func (s *Service) Update(ctx context.Context, sc store.Scope, id int64, ch Change) (*store.SearchPhrase, error) {
	if _, err := s.Get(ctx, sc, id); err != nil {
		return nil, err
	}
	up := store.SearchPhraseUpdate{IsActive: ch.IsActive, RefreshInterval: ch.RefreshInterval}
	if ch.RefreshInterval != nil {
		if err := checkInterval(*ch.RefreshInterval); err != nil {
			return nil, err
		}
	}
	if ch.Phrase != nil {
		phrase, key, err := checkPhrase(*ch.Phrase)
		if err != nil {
			return nil, err
		}
		up.Phrase, up.PhraseKey = &phrase, &key
	}
	if ch.Locale != nil {
		l := strings.TrimSpace(*ch.Locale)
		if err := checkLocale(l); err != nil {
			return nil, err
		}
		up.Locale = &l
	}
	p, err := s.db.UpdateSearchPhrase(ctx, id, up)
	if err != nil {
		return nil, err
	}
	s.plan.Now(ctx)
	return p, nil
}

// Delete deletes a phrase the scope sees, with its ideas.
func (s *Service) Delete(ctx context.Context, sc store.Scope, id int64) error {
	if _, err := s.Get(ctx, sc, id); err != nil {
		return err
	}
	if err := s.db.DeleteSearchPhrase(ctx, id); err != nil {
		return err
	}
	s.plan.Now(ctx)
	return nil
}

// DeleteMany deletes the phrases of ids the scope sees, with their ideas,
// and says how many; the others are skipped.
func (s *Service) DeleteMany(ctx context.Context, sc store.Scope, ids []int64) (int, error) {
	n, err := s.db.DeleteSearchPhrases(ctx, sc, ids)
	if err == nil && n > 0 {
		s.plan.Now(ctx)
	}
	return n, err
}

// Ideas lists the ideas of a phrase the scope sees.
func (s *Service) Ideas(ctx context.Context, sc store.Scope, id int64, f store.SearchIdeaFilter) ([]*store.SearchIdea, int, error) {
	if _, err := s.Get(ctx, sc, id); err != nil {
		return nil, 0, err
	}
	return s.db.ListSearchIdeas(ctx, id, f)
}
