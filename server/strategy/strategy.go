// Package strategy groups an environment's keywords into pillar and
// cluster pages (/api/seo/strategies). A strategy is built on the job
// runner: with SERP data (the top-10 organic results of each keyword,
// fetched through server/serp when a serp credential is usable, and kept
// per keyword) two keywords share a cluster when their results share at
// least min_shared URLs; without it, when their words are alike
// (server/lexical). Either way the model may name and refine the
// clusters. Each cluster's pillar is its keyword of highest volume
// (PillarFirst). A built strategy can be edited, and turned into a
// campaign whose keywords come cluster by cluster, each pillar first,
// and applied: each cluster's name becomes its keywords' cluster field.
//
// Who does what: everyone reads the strategies of their environments;
// editors and up create, cancel, change, delete them and make campaigns of
// them. Any other environment's strategy is not found. Whoever created a
// strategy is told when its build ends, unless someone cancelled it.
package strategy

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/copydesk/copydesk/server/engine"
	"github.com/copydesk/copydesk/server/environment"
	"github.com/copydesk/copydesk/server/jobs"
	"github.com/copydesk/copydesk/server/notify"
	"github.com/copydesk/copydesk/server/scout"
	"github.com/copydesk/copydesk/server/seo"
	"github.com/copydesk/copydesk/server/valid"
	"github.com/copydesk/copydesk/store"
)

// Store is what the service needs of the store.
type Store interface {
	CreateStrategyWithJob(ctx context.Context, n store.NewStrategy, j store.RunJob) (*store.Strategy, error)
	StrategyByID(ctx context.Context, id int64) (*store.Strategy, error)
	ListStrategies(ctx context.Context, f store.StrategyFilter) ([]*store.Strategy, int, error)
	StartStrategy(ctx context.Context, id int64) (bool, error)
	FinishStrategy(ctx context.Context, id int64, o store.StrategyOutcome) (*store.Strategy, error)
	ReplaceStrategyClusters(ctx context.Context, id int64, name *string, clusters []store.ClusterInput) (*store.Strategy, error)
	StrategyClusters(ctx context.Context, strategyID int64) ([]*store.StrategyCluster, error)
	DeleteStrategy(ctx context.Context, id int64) error
	SetStrategyCampaign(ctx context.Context, id, campaignID int64) error
	ApplyStrategy(ctx context.Context, id int64, label func(name string) string, clearOthers bool) (store.StrategyApplied, error)
	KeywordsForStrategy(ctx context.Context, envID int64, ids []int64, limit int) ([]*store.Keyword, bool, error)
	KeywordSERPs(ctx context.Context, ids []int64) (map[int64]store.KeywordSERP, error)
	PutKeywordSERP(ctx context.Context, keywordID int64, key string, urls []string) error
}

// Deps are what the service works with.
type Deps struct {
	Store        Store
	Campaigns    Campaigns
	Environments environment.Getter
	Engine       engine.Searcher
	Jobs         jobs.Queue
	Notify       notify.ToUser
	Log          *slog.Logger
	Now          func() time.Time // the store's clock
	// MaxQueued is how many builds an environment may have queued or
	// running; 0: scout.DefaultMaxQueued.
	MaxQueued int
}

// Service holds the strategy rules and builds strategies.
type Service struct {
	db     Store
	envs   environment.Getter
	engine engine.Searcher
	jobs   jobs.Queue
	notify notify.ToUser
	log    *slog.Logger
	now    func() time.Time
	camps  Campaigns
	builds jobs.Owned[store.Strategy]
}

// Campaigns makes the campaign of a strategy: the SEO service, so that it
// follows the rules every campaign does (the agent and archetype usable in
// the environment, the environment's defaults, the keywords' checks).
type Campaigns interface {
	CreateCampaign(ctx context.Context, sc store.Scope, in seo.CampaignInput) (*store.Campaign, error)
}

// New returns the service and registers its job kind with d.Jobs.
func New(d Deps) *Service {
	s := &Service{db: d.Store, envs: d.Environments, engine: d.Engine, jobs: d.Jobs, notify: d.Notify, log: d.Log, now: d.Now,
		camps: d.Campaigns}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	limit := d.MaxQueued
	if limit <= 0 {
		limit = scout.DefaultMaxQueued
	}
	// A strategy's work is one job, its build.
	s.builds = jobs.Owned[store.Strategy]{Noun: "strategy", Short: "strategy", CancelAt: "/api/seo/strategies/%d/cancel",
		Failed: store.StrategyFailed, Cancelled: store.StrategyCancelled,
		Info: func(st *store.Strategy) (int64, int64, string, bool, *int64) {
			return st.ID, st.EnvironmentID, st.Status, !st.Building(), st.JobID
		},
		Kind: BuildJob, Limit: limit, Jobs: d.Jobs, Log: s.log,
		ByID: d.Store.StrategyByID, Start: d.Store.StartStrategy, Remove: d.Store.DeleteStrategy,
		Find: func(ctx context.Context, sc store.Scope, q ListQuery) ([]*store.Strategy, int, error) {
			return d.Store.ListStrategies(ctx, store.StrategyFilter{Scope: sc, EnvironmentID: q.EnvironmentID, Status: q.Status, Sort: q.Sort, Page: q.Page})
		},
		End: func(ctx context.Context, id int64, status, why string) (*store.Strategy, error) {
			return d.Store.FinishStrategy(ctx, id, store.StrategyOutcome{Status: status, Error: why})
		}}
	if s.now == nil {
		s.now = time.Now
	}
	s.jobs.Register(BuildJob, jobs.Kind{Handle: s.buildJob, OnFinish: s.jobFinished, Background: true})
	return s
}

// Methods of grouping.
const (
	MethodAuto    = "auto"    // SERP overlap when SERP data can be had, else lexical
	MethodSERP    = "serp"    // SERP overlap, or fail
	MethodLexical = "lexical" // words only, no provider
)

// Defaults and bounds.
const (
	DefaultMinShared  = 3
	DefaultSimilarity = 0.5
	MinSimilarity     = 0.05
	// MaxKeywords is how many keywords one strategy groups: those asked
	// for, or the environment's of highest volume.
	MaxKeywords = 1000
	// MaxClusters bounds an edit.
	MaxClusters = MaxKeywords
	maxName     = 100
)

// CreateInput is what a caller asks a strategy for.
type CreateInput struct {
	EnvironmentID int64
	Name          string
	Method        string   // default auto
	MinShared     *int     // default 3
	Similarity    *float64 // default 0.5
	Refine        bool
	RefreshSERP   bool
	KeywordIDs    []int64 // nil: the environment's keywords, but the ignored ones
}

// Create checks a strategy and queues its build. It is refused (409)
// when there is nothing to group, when method serp can have no SERP data
// (no serp credential usable, and not every keyword has stored data), and
// when refine is asked with no usable AI provider.
func (s *Service) Create(ctx context.Context, sc store.Scope, in CreateInput) (*store.Strategy, error) {
	if _, err := environment.For(ctx, s.envs, sc, in.EnvironmentID); err != nil {
		return nil, err
	}
	name, err := valid.Name("name", in.Name, maxName)
	if err != nil {
		return nil, err
	}
	p := store.StrategyParams{Method: in.Method, MinShared: DefaultMinShared, Similarity: DefaultSimilarity, Refine: in.Refine,
		RefreshSERP: in.RefreshSERP}
	if p.Method == "" {
		p.Method = MethodAuto
	}
	if !slices.Contains([]string{MethodAuto, MethodSERP, MethodLexical}, p.Method) {
		return nil, store.Invalid("method: must be auto, serp or lexical")
	}
	if in.MinShared != nil {
		if *in.MinShared < 1 || *in.MinShared > 10 {
			return nil, store.Invalid("min_shared: must be 1 to 10")
		}
		p.MinShared = *in.MinShared
	}
	if in.Similarity != nil {
		if *in.Similarity < MinSimilarity || *in.Similarity > 1 {
			return nil, store.Invalid("similarity: must be %g to 1", MinSimilarity)
		}
		p.Similarity = *in.Similarity
	}
	kws, err := s.keywords(ctx, in.EnvironmentID, in.KeywordIDs)
	if err != nil {
		return nil, err
	}
	if in.KeywordIDs != nil {
		p.KeywordIDs = idsOf(kws)
	}
	if p.Method == MethodSERP {
		if err := s.checkSERP(ctx, in.EnvironmentID, kws); err != nil {
			return nil, err
		}
	}
	if p.Refine {
		if _, _, err := s.engine.Plan(ctx, engine.Call{Source: usageSource, EnvironmentID: &in.EnvironmentID, Messages: probe}); err != nil {
			return nil, err
		}
	}
	n := store.NewStrategy{EnvironmentID: in.EnvironmentID, Name: name, StrategyParams: p}
	if sc.UserID != 0 {
		n.CreatedBy = &sc.UserID
	}
	return s.builds.Queue(func(j store.RunJob) (*store.Strategy, error) { return s.db.CreateStrategyWithJob(ctx, n, j) },
		func(id int64) any { return payload{StrategyID: id} })
}

// keywords are the keywords a strategy of envID asks for: each of ids
// must be the environment's; with ids nil, the environment must have one
// that is not ignored.
func (s *Service) keywords(ctx context.Context, envID int64, ids []int64) ([]*store.Keyword, error) {
	if len(ids) > MaxKeywords {
		return nil, store.Invalid("keyword_ids: at most %d", MaxKeywords)
	}
	if ids != nil && len(ids) == 0 {
		return nil, store.Invalid("keyword_ids: leave it out to group the environment's keywords, or give at least one")
	}
	kws, _, err := s.db.KeywordsForStrategy(ctx, envID, ids, MaxKeywords)
	if err != nil {
		return nil, err
	}
	if ids == nil {
		if len(kws) == 0 {
			return nil, store.Conflict("environment %d has no keywords to group (ignored ones are left out): add or import keywords first", envID)
		}
		return kws, nil
	}
	have := map[int64]bool{}
	for _, k := range kws {
		have[k.ID] = true
	}
	for _, id := range ids {
		if !have[id] {
			return nil, store.Invalid("keyword_ids: no keyword with id %d in environment %d", id, envID)
		}
	}
	return kws, nil
}

func idsOf(kws []*store.Keyword) []int64 {
	out := make([]int64, len(kws))
	for i, k := range kws {
		out[i] = k.ID
	}
	return out
}

// checkSERP refuses method serp when no SERP data can be had: no serp
// credential is usable and some keyword has none stored.
func (s *Service) checkSERP(ctx context.Context, envID int64, kws []*store.Keyword) error {
	client, err := s.engine.SERP(ctx, &envID)
	if client != nil {
		return nil
	}
	stored, serr := s.db.KeywordSERPs(ctx, idsOf(kws))
	if serr != nil {
		return serr
	}
	for _, k := range kws {
		if d, ok := stored[k.ID]; !ok || d.Key != k.Key {
			why := "no serp credential is usable in this environment (add one with POST /api/configurations, provider serp)"
			if err != nil {
				why = "the serp credential is not usable: " + store.Message(err)
			}
			return store.Conflict("method serp needs SERP data: %s, and keyword %d has none stored; use method auto or lexical", why, k.ID)
		}
	}
	return nil
}

// Get returns a strategy the scope sees, with its clusters.
func (s *Service) Get(ctx context.Context, sc store.Scope, id int64) (*store.Strategy, []*store.StrategyCluster, error) {
	return jobs.GetWith(ctx, s.builds, sc, id, s.db.StrategyClusters)
}

// ListQuery narrows List.
type ListQuery = jobs.OwnedQuery

// List lists the strategies the scope sees; an environment it does not
// see is not found.
func (s *Service) List(ctx context.Context, sc store.Scope, q ListQuery) ([]*store.Strategy, int, error) {
	return s.builds.List(ctx, sc, q)
}

// Cancel cancels a queued or building strategy the scope sees, saying who
// did; a finished one is a conflict. The ending is recorded first, then
// the job is cancelled (jobs.Owned.Cancel), which cuts the SerpApi or
// model call under way (FinishStrategy keeps the first ending, so the
// job's OnFinish does not turn it into failed). A cancelled strategy has
// no clusters: they are written only when a build succeeds. The SERP data
// fetched before the cancel stays stored, for the next build.
func (s *Service) Cancel(ctx context.Context, sc store.Scope, id int64, by string) (*store.Strategy, error) {
	return s.builds.Cancel(ctx, sc, id, by)
}

// Delete deletes a finished strategy (ready, failed or cancelled); its
// keywords stay. A queued or running one is a conflict: cancel it first,
// or its job would go on asking paid services for a strategy that is gone.
func (s *Service) Delete(ctx context.Context, sc store.Scope, id int64) error {
	return s.builds.Delete(ctx, sc, id)
}

// notifyBuilt tells whoever created a strategy how its build ended; a
// cancelled build needs no word (someone chose it). The note is tagged
// with the strategy's environment, so it reaches its user only if they
// still see it (store.CreateNotifications decides, in the insert).
func (s *Service) notifyBuilt(ctx context.Context, st *store.Strategy) {
	if st.CreatedBy == nil || s.notify == nil {
		return
	}
	note := notify.Note{Link: fmt.Sprintf("/api/seo/strategies/%d", st.ID), EnvironmentID: &st.EnvironmentID}
	switch st.Status {
	case store.StrategyReady:
		unit := "clusters"
		if st.ClusterCount == 1 {
			unit = "cluster"
		}
		note.Kind, note.Title, note.Body = notify.RunSucceeded, fmt.Sprintf("Strategy %s is ready", st.Name), fmt.Sprintf("%d %s", st.ClusterCount, unit)
	case store.StrategyFailed:
		note.Kind, note.Title, note.Body = notify.RunFailed, fmt.Sprintf("Strategy %s failed", st.Name), notify.Preview(st.Error, 200)
	default:
		return
	}
	s.notify.User(ctx, *st.CreatedBy, note)
}

// ClusterEdit is a cluster as an edit gives it.
type ClusterEdit struct {
	ID         *int64 // an existing cluster of the strategy; nil for a new one
	Name       string // empty: the pillar keyword
	Pillar     *int64 // nil: by the pillar rule
	KeywordIDs []int64
}

// Patch is an edit; nil fields stay as they are.
type Patch struct {
	Name     *string
	Clusters *[]ClusterEdit // replaces the clusters: clusters left out are deleted, keywords left out leave the strategy
}

// Update renames a strategy and replaces its clusters: rename clusters,
// move keywords between them, change pillars, add keywords of the
// environment or leave some out. Each cluster's keywords are kept in the
// order given, the pillar first. It returns the strategy as changed, with
// its clusters.
func (s *Service) Update(ctx context.Context, sc store.Scope, id int64, p Patch) (*store.Strategy, []*store.StrategyCluster, error) {
	st, err := s.builds.Get(ctx, sc, id)
	if err != nil {
		return nil, nil, err
	}
	if p.Name != nil {
		name, err := valid.Name("name", *p.Name, maxName)
		if err != nil {
			return nil, nil, err
		}
		p.Name = &name
	}
	var clusters []store.ClusterInput
	if p.Clusters != nil {
		if clusters, err = s.edited(ctx, st, *p.Clusters); err != nil {
			return nil, nil, err
		}
	}
	if st, err = s.db.ReplaceStrategyClusters(ctx, st.ID, p.Name, clusters); err != nil {
		return nil, nil, err
	}
	cs, err := s.db.StrategyClusters(ctx, st.ID)
	if err != nil {
		return nil, nil, err
	}
	return st, cs, nil
}

// edited checks an edit's clusters and puts each pillar first.
func (s *Service) edited(ctx context.Context, st *store.Strategy, edits []ClusterEdit) ([]store.ClusterInput, error) {
	if len(edits) == 0 {
		return nil, store.Invalid("clusters: give at least one cluster (delete the strategy to drop them all)")
	}
	if len(edits) > MaxClusters {
		return nil, store.Invalid("clusters: at most %d", MaxClusters)
	}
	var all []int64
	for _, e := range edits {
		all = append(all, e.KeywordIDs...)
	}
	if len(all) > MaxKeywords {
		return nil, store.Invalid("clusters: at most %d keywords in all", MaxKeywords)
	}
	kws, _, err := s.db.KeywordsForStrategy(ctx, st.EnvironmentID, all, MaxKeywords)
	if err != nil {
		return nil, err
	}
	byID := map[int64]*store.Keyword{}
	for _, k := range kws {
		byID[k.ID] = k
	}
	out := make([]store.ClusterInput, len(edits))
	for i, e := range edits {
		field := "clusters[" + itoa(i) + "]"
		if len(e.KeywordIDs) == 0 {
			return nil, store.Invalid("%s.keyword_ids: a cluster needs at least one keyword", field)
		}
		members := make([]Keyword, 0, len(e.KeywordIDs))
		for _, id := range e.KeywordIDs {
			k := byID[id]
			if k == nil {
				return nil, store.Invalid("%s.keyword_ids: no keyword with id %d in the strategy's environment", field, id)
			}
			members = append(members, keywordOf(k))
		}
		pillar := Arrange(members).Pillar
		if e.Pillar != nil {
			if !slices.Contains(e.KeywordIDs, *e.Pillar) {
				return nil, store.Invalid("%s.pillar_keyword_id: keyword %d is not one of the cluster's keywords", field, *e.Pillar)
			}
			pillar = *e.Pillar
		}
		ids := append([]int64{pillar}, slices.DeleteFunc(slices.Clone(e.KeywordIDs), func(id int64) bool { return id == pillar })...)
		name := byID[pillar].Keyword
		if e.Name != "" {
			if name, err = valid.Name(field+".name", e.Name, maxName); err != nil {
				return nil, err
			}
		}
		out[i] = store.ClusterInput{Name: name, Pillar: &pillar, KeywordIDs: ids}
		if e.ID != nil {
			out[i].ID = *e.ID
		}
	}
	return out, nil
}

// keywordOf is what clustering knows of a stored keyword.
func keywordOf(k *store.Keyword) Keyword {
	return Keyword{ID: k.ID, Text: k.Keyword, Key: k.Key, Volume: k.SearchVolume, Difficulty: k.Difficulty}
}

// CampaignInput is the campaign to make of a strategy; its keywords are
// the strategy's.
type CampaignInput struct {
	Name        string // default: the strategy's name
	Target      string // wordpress or astro
	PostStatus  string // default draft
	Cadence     int    // posts per day, default 1
	AgentID     *int64
	ArchetypeID *int64
}

// CampaignResult is the campaign made, with the keywords it got and those
// it could not (each in another campaign already).
type CampaignResult struct {
	Campaign *store.Campaign
	Added    int
	Skipped  []int64
}

// ToCampaign makes a draft campaign of a ready strategy: its keywords
// cluster by cluster, in the strategy's order, each cluster's pillar
// first, so the pillar page is written before the pages that link to it.
// A keyword in another campaign already stays there and is reported.
func (s *Service) ToCampaign(ctx context.Context, sc store.Scope, id int64, in CampaignInput) (*CampaignResult, error) {
	st, err := s.builds.Get(ctx, sc, id)
	if err != nil {
		return nil, err
	}
	if st.Status != store.StrategyReady {
		return nil, store.Conflict("strategy %d is %s: only a ready strategy can become a campaign", st.ID, st.Status)
	}
	name := in.Name
	if name == "" {
		name = st.Name
	}
	c := store.CampaignInput{Name: name, Target: in.Target, PostStatus: in.PostStatus, Cadence: in.Cadence, Status: store.CampaignDraft,
		AgentID: in.AgentID, ArchetypeID: in.ArchetypeID, Description: "Made from strategy " + st.Name}
	clusters, err := s.db.StrategyClusters(ctx, st.ID)
	if err != nil {
		return nil, err
	}
	res := &CampaignResult{Skipped: []int64{}}
	var ids []int64
	for _, cl := range clusters {
		for _, k := range cl.Keywords {
			if k.CampaignID != nil {
				res.Skipped = append(res.Skipped, k.ID)
				continue
			}
			ids = append(ids, k.ID)
		}
	}
	if len(ids) == 0 {
		return nil, store.Conflict("every keyword of strategy %d is in a campaign already: there is nothing to add", st.ID)
	}
	if res.Campaign, err = s.camps.CreateCampaign(ctx, sc, seo.CampaignInput{EnvironmentID: st.EnvironmentID, CampaignInput: c, KeywordIDs: ids}); err != nil {
		return nil, err
	}
	res.Added = len(ids)
	if err := s.db.SetStrategyCampaign(ctx, st.ID, res.Campaign.ID); err != nil {
		return nil, err
	}
	return res, nil
}

// Label is a cluster's name as its keywords' cluster field: NFC, single
// spaces, trimmed (store.KeywordDisplay), so that "Cold  brew" and
// "Cold brew" label alike and the keyword list's cluster filter finds it
// as shown. Every stored cluster name is a trimmed one-line text of at
// most 100 characters (valid.Name, the build's naming), so a label is
// never empty and fits the field's 200.
func Label(name string) string { return store.KeywordDisplay(name) }

// Apply labels the keywords of a ready strategy: each keyword's cluster
// field becomes its cluster's Label, in one transaction. With clearOthers
// the environment's keywords in none of its clusters get an empty field,
// so the labels are exactly the strategy's; without, they keep theirs.
// Keywords deleted since the strategy was built or edited are skipped and
// counted. A strategy with no keywords left is refused (409): it would
// label nothing, and with clearOthers only erase.
func (s *Service) Apply(ctx context.Context, sc store.Scope, id int64, clearOthers bool) (store.StrategyApplied, error) {
	st, err := s.builds.Get(ctx, sc, id)
	if err != nil {
		return store.StrategyApplied{}, err
	}
	return s.db.ApplyStrategy(ctx, st.ID, Label, clearOthers)
}
