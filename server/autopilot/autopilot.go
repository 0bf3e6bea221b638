// Package autopilot is the AutoPilot (/api/autopilot): per environment,
// the pipeline that turns the keywords of its active SEO campaigns into
// posts without a person in the loop, within the limits its owner sets.
//
// A run takes one keyword through four steps: pick_keyword claims the
// next keyword of a campaign (atomically, with the run itself), generate
// writes the article with the campaign's archetype and agent (server/cie,
// usage source "autopilot"), create_post makes the WordPress or Astro post
// (server/wppost, server/astropost), and publish publishes it or leaves
// it a draft; then the keyword is marked published (or in_progress, for a
// draft) with the post linked, and a notification is raised. Each step is
// written when it begins and when it ends, before the next begins, so a
// run carried on after a restart, a retry or a restore starts at its first
// unfinished step and never makes a second generation or a second post
// (a step interrupted half way finds what it made: the generation is the
// run's own, the post is found by its generation, and a WordPress create
// that got no answer is adopted by the publishing service's rule).
//
// Runs are the job kind RunJob; the recurring kind ScheduleJob starts the
// runs that are due: inside the window of the day (in the environment's
// time zone), spread over it by the max posts per day, each campaign at
// most its cadence a day. Before a run starts and before each metered step
// the day's and the month's spend of the environment (all usage, every
// source) is checked against the budgets; a budget reached, the day's
// posts all made or three failed runs in a row pause the autopilot, with
// a notification saying why, and it resumes by itself at the next day or
// month when its config says so. Editors and up control it; whoever sees
// the environment reads its status and runs.
package autopilot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/copydesk/copydesk/server/cie"
	"github.com/copydesk/copydesk/server/engine"
	"github.com/copydesk/copydesk/server/environment"
	"github.com/copydesk/copydesk/server/jobs"
	"github.com/copydesk/copydesk/server/notify"
	"github.com/copydesk/copydesk/server/posttarget"
	"github.com/copydesk/copydesk/server/stream"
	"github.com/copydesk/copydesk/server/valid"
	"github.com/copydesk/copydesk/server/webhook"
	"github.com/copydesk/copydesk/store"
)

// Store is what the service needs of the store.
type Store interface {
	AutopilotOf(ctx context.Context, envID int64) (*store.Autopilot, error)
	PutAutopilotConfig(ctx context.Context, envID int64, c store.AutopilotConfig, by *int64) (*store.Autopilot, error)
	SetAutopilotState(ctx context.Context, envID int64, ch store.AutopilotState) (*store.Autopilot, bool, error)
	SetAutopilotIdle(ctx context.Context, envID int64, until time.Time, note string) error
	ScheduledAutopilots(ctx context.Context) ([]*store.Autopilot, error)

	AutopilotRunByID(ctx context.Context, id int64) (*store.AutopilotRun, error)
	ActiveAutopilotRun(ctx context.Context, envID int64) (*store.AutopilotRun, error)
	CreateAutopilotRun(ctx context.Context, n store.NewAutopilotRun) (*store.AutopilotRun, error)
	ListAutopilotRuns(ctx context.Context, f store.AutopilotRunFilter) ([]*store.AutopilotRun, int, error)
	StartAutopilotRun(ctx context.Context, id int64) (bool, error)
	BeginAutopilotStep(ctx context.Context, runID int64, step string) error
	FinishAutopilotStep(ctx context.Context, runID int64, step string, e store.StepEnd) error
	BeginAutopilotGeneration(ctx context.Context, runID int64, n *store.NewCIERun, jobID int64) (int64, error)
	PostOfGeneration(ctx context.Context, kind string, cieRunID int64) (*store.PostRef, error)
	LinkAutopilotPost(ctx context.Context, runID int64, p store.PostRef, detail string) (*store.AutopilotRun, error)
	FinishAutopilotRun(ctx context.Context, runID int64, end store.AutopilotRunEnd) (*store.AutopilotRun, bool, error)
	PauseAutopilotRun(ctx context.Context, runID int64, reason string) (bool, error)
	ResumeAutopilotRun(ctx context.Context, runID int64, j store.RunJob) (jobID *int64, err error)
	ControlAutopilotRun(ctx context.Context, runID int64, control string) (bool, error)
	AutopilotRunsSince(ctx context.Context, envID int64, t time.Time) (int, *time.Time, error)
	CampaignRunsSince(ctx context.Context, campaignID int64, t time.Time) (int, error)
	OrphanAutopilotRuns(ctx context.Context, reason string, settled time.Time) ([]*store.AutopilotRun, error)

	CampaignByID(ctx context.Context, id int64) (*store.Campaign, error)
	ArchetypeByID(ctx context.Context, id int64) (*store.Archetype, error)
	KeywordByID(ctx context.Context, id int64) (*store.Keyword, error)
	ListCampaigns(ctx context.Context, f store.CampaignFilter) ([]*store.Campaign, int, error)
	EnvironmentByID(ctx context.Context, id int64) (*store.Environment, error)
	EnvironmentSpendSince(ctx context.Context, envID int64, t time.Time) (store.Spend, error)
	CIERunByID(ctx context.Context, id int64) (*store.CIERun, error)
}

// Generator makes the articles (server/cie).
type Generator interface {
	Prepare(ctx context.Context, in cie.SystemInput) (*store.NewCIERun, error)
	Execute(ctx context.Context, id int64, source string) (*store.CIERun, error)
}

// Posts makes the runs' posts and publishes them, on the target of each
// run's campaign (server/posttarget).
type Posts interface {
	FromGeneration(ctx context.Context, sc store.Scope, userID, id int64, kind, title string) (*posttarget.Post, error)
	Target(kind string) (posttarget.Target, error)
	For(env *store.Environment, kind string) (posttarget.Target, error)
}

// Runner is the job runner (server/jobs) that carries runs out.
type Runner interface {
	Register(kind string, k jobs.Kind)
	Signal()
	Replan(ctx context.Context, kind string) error
}

// Notifier raises notifications (server/notify).
type Notifier interface {
	Environment(ctx context.Context, envID int64, note notify.Note)
}

// Deps are what the service works with.
type Deps struct {
	Store        Store
	Environments environment.Getter
	Generator    Generator
	Posts        Posts
	Jobs         Runner
	Notify       Notifier
	Events       *stream.Broker
	Hooks        webhook.Emitter  // run.succeeded, run.failed, autopilot.paused; nil: none
	Now          func() time.Time // the store's clock
	Log          *slog.Logger
}

// Service runs the autopilots.
type Service struct {
	db     Store
	envs   environment.Getter
	gen    Generator
	posts  Posts
	jobs   Runner
	notify Notifier
	events *stream.Broker
	hooks  webhook.Emitter
	now    func() time.Time
	log    *slog.Logger
	plan   jobs.Plan // ScheduleJob, replanned after a change

	topicsMu sync.Mutex
	topics   map[int64]bool // the environments whose topic is open
}

// New returns the service and registers its job kinds with d.Jobs.
func New(d Deps) *Service {
	s := &Service{db: d.Store, envs: d.Environments, gen: d.Generator, posts: d.Posts, jobs: d.Jobs, notify: d.Notify,
		events: d.Events, hooks: webhook.Or(d.Hooks), now: d.Now, log: d.Log, topics: map[int64]bool{}}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.plan = jobs.Plan{Jobs: s.jobs, Kind: ScheduleJob, Log: s.log, What: "autopilot: plan the scheduler"}
	if s.now == nil {
		s.now = time.Now
	}
	s.registerJobs()
	s.mirror()
	return s
}

// Notification kinds the autopilot raises for an environment.
const (
	NotePublished = "autopilot.published"
	NoteDrafted   = "autopilot.drafted"
	NoteFailed    = "autopilot.failed"
	NotePaused    = "autopilot.paused"
	NoteResumed   = "autopilot.resumed"
)

// failuresToPause is how many runs in a row may fail before the
// autopilot pauses itself: a broken setup (a provider refusing, a site
// gone) should not burn through the whole campaign.
const failuresToPause = 3

// ---- status ----

// Status is an autopilot as its owner sees it.
type Status struct {
	Autopilot *store.Autopilot
	Timezone  string
	// ActiveRun is the run under way (queued, running or paused); nil
	// when none is.
	ActiveRun *store.AutopilotRun
	// PostsToday counts today's runs that count toward the max posts per
	// day (in the environment's time zone).
	PostsToday int
	// SpentToday and SpentMonth are the environment's known costs and
	// tokens today and this month (in its time zone).
	SpentToday store.Spend
	SpentMonth store.Spend
	// NextRunAt is when the scheduler means to start the next run: set
	// while it runs with no run under way.
	NextRunAt *time.Time
}

// env is an environment the scope sees.
func (s *Service) env(ctx context.Context, sc store.Scope, envID int64) (*store.Environment, error) {
	if envID <= 0 {
		return nil, store.Invalid("environment_id: is required")
	}
	return s.envs.Get(ctx, sc, envID)
}

// envAutopilot is an environment the scope sees with its autopilot.
func (s *Service) envAutopilot(ctx context.Context, sc store.Scope, envID int64) (*store.Environment, *store.Autopilot, error) {
	env, err := s.env(ctx, sc, envID)
	if err != nil {
		return nil, nil, err
	}
	ap, err := s.db.AutopilotOf(ctx, env.ID)
	if err != nil {
		return nil, nil, err
	}
	return env, ap, nil
}

// Status reads an environment's autopilot with what is under way.
func (s *Service) Status(ctx context.Context, sc store.Scope, envID int64) (*Status, error) {
	env, err := s.env(ctx, sc, envID)
	if err != nil {
		return nil, err
	}
	return s.status(ctx, env)
}

func (s *Service) status(ctx context.Context, env *store.Environment) (*Status, error) {
	ap, err := s.db.AutopilotOf(ctx, env.ID)
	if err != nil {
		return nil, err
	}
	now, loc := s.now(), zone(env)
	st := &Status{Autopilot: ap, Timezone: loc.String()}
	if st.ActiveRun, err = s.db.ActiveAutopilotRun(ctx, env.ID); err != nil {
		return nil, err
	}
	var last *time.Time
	if st.PostsToday, last, err = s.db.AutopilotRunsSince(ctx, env.ID, dayStart(now, loc, 0)); err != nil {
		return nil, err
	}
	if st.SpentToday, st.SpentMonth, err = s.spend(ctx, env.ID, now, loc); err != nil {
		return nil, err
	}
	if ap.State == store.AutopilotRunning && st.ActiveRun == nil {
		due := schedule{now: now, win: windowOf(ap.Config, loc), max: ap.Config.MaxPostsPerDay, today: st.PostsToday, last: last,
			idle: ap.IdleUntil}.due()
		st.NextRunAt = &due
	}
	return st, nil
}

// spend is the environment's spend today and this month.
func (s *Service) spend(ctx context.Context, envID int64, now time.Time, loc *time.Location) (day, month store.Spend, err error) {
	if day, err = s.db.EnvironmentSpendSince(ctx, envID, dayStart(now, loc, 0)); err != nil {
		return day, month, err
	}
	month, err = s.db.EnvironmentSpendSince(ctx, envID, monthStart(now, loc, 0))
	return day, month, err
}

// budgetStop says which budget, if any, stops the autopilot now: its
// pause reason, the words of its notification and when the pause may end
// by itself (the next day or month).
func (s *Service) budgetStop(ctx context.Context, env *store.Environment, c store.AutopilotConfig) (reason, detail string, resume time.Time, err error) {
	now, loc := s.now(), zone(env)
	day, month, err := s.spend(ctx, env.ID, now, loc)
	if err != nil {
		return "", "", time.Time{}, err
	}
	switch {
	case c.MonthlyBudget != nil && month.Cost >= *c.MonthlyBudget:
		return store.PauseMonthlyBudget, fmt.Sprintf("the monthly budget is reached: %s spent of %s in %s", month.Cost,
			*c.MonthlyBudget, now.In(loc).Format("January 2006")), monthStart(now, loc, 1), nil
	case c.MonthlyBudgetTokens != nil && month.Tokens >= *c.MonthlyBudgetTokens:
		return store.PauseMonthlyBudget, fmt.Sprintf("the monthly token budget is reached: %s used of %s in %s", engine.Tokens(month.Tokens),
			engine.Tokens(*c.MonthlyBudgetTokens), now.In(loc).Format("January 2006")), monthStart(now, loc, 1), nil
	case c.DailyBudget != nil && day.Cost >= *c.DailyBudget:
		return store.PauseDailyBudget, fmt.Sprintf("the daily budget is reached: %s spent of %s on %s", day.Cost,
			*c.DailyBudget, now.In(loc).Format("2 January 2006")), dayStart(now, loc, 1), nil
	case c.DailyBudgetTokens != nil && day.Tokens >= *c.DailyBudgetTokens:
		return store.PauseDailyBudget, fmt.Sprintf("the daily token budget is reached: %s used of %s on %s", engine.Tokens(day.Tokens),
			engine.Tokens(*c.DailyBudgetTokens), now.In(loc).Format("2 January 2006")), dayStart(now, loc, 1), nil
	}
	return "", "", time.Time{}, nil
}

// ---- config ----

// ConfigInput is a whole config as the owner gives it; what is left out
// takes its default.
type ConfigInput struct {
	CampaignIDs      []int64
	WindowStart      string // "HH:MM"; default 00:00
	WindowEnd        string // "HH:MM", up to 24:00; default 24:00
	MaxPostsPerDay   int    // default 1
	DailyBudgetUSD   *float64
	MonthlyBudgetUSD *float64
	// DailyBudgetTokens and MonthlyBudgetTokens bound the tokens (input
	// and output); nil: none.
	DailyBudgetTokens, MonthlyBudgetTokens *int64
	PostStatus                             string // campaign (default), draft, publish
	AutoResume                             *bool  // default true
	Variables                              map[string]string
}

// Limits of a config.
const (
	maxCampaigns = 100
	maxVariables = 20
	maxValue     = 5000
	// maxBudgetTokens bounds a budget in tokens: far above any use, far
	// below an overflow.
	maxBudgetTokens = 1e15
	// MaxPostsPerDay bounds the max posts per day.
	MaxPostsPerDay = 100
)

// keywordVariables are the values each keyword gives its generation;
// the config cannot set them.
var keywordVariables = []string{"keyword", "campaign", "cluster", "parent_keyword", "intent", "target_url"}

var variableName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,39}$`) })

// Config reads an environment's autopilot, with the time zone its window
// is in.
func (s *Service) Config(ctx context.Context, sc store.Scope, envID int64) (*store.Autopilot, string, error) {
	env, ap, err := s.envAutopilot(ctx, sc, envID)
	if err != nil {
		return nil, "", err
	}
	return ap, zone(env).String(), nil
}

// PutConfig replaces an autopilot's config. A running autopilot works by
// the new one from its next run on.
func (s *Service) PutConfig(ctx context.Context, sc store.Scope, userID, envID int64, in ConfigInput) (*store.Autopilot, string, error) {
	env, err := s.env(ctx, sc, envID)
	if err != nil {
		return nil, "", err
	}
	c, err := normalize(in)
	if err != nil {
		return nil, "", err
	}
	if err := s.checkVariables(ctx, env, c); err != nil {
		return nil, "", err
	}
	ap, err := s.db.PutAutopilotConfig(ctx, env.ID, c, by(userID))
	if err != nil {
		return nil, "", err
	}
	s.plan.Now(ctx)
	s.emit(ctx, env.ID, EventStatus, ap)
	return ap, zone(env).String(), nil
}

// checkVariables: every variable the archetype of a campaign the config
// takes keywords from needs is given, by the config's variables or by
// each keyword (keywordVariables). Without it every run failed with
// "missing audience" while start answered 200. A 422 naming the first
// variable missing.
func (s *Service) checkVariables(ctx context.Context, env *store.Environment, c store.AutopilotConfig) error {
	given := slices.Clone(keywordVariables)
	for k := range c.Variables {
		given = append(given, k)
	}
	campaigns, err := s.campaigns(ctx, env, c)
	if err != nil {
		return err
	}
	for _, camp := range campaigns {
		if camp.EnvironmentID != env.ID || camp.ArchetypeID == nil {
			continue
		}
		a, err := s.db.ArchetypeByID(ctx, *camp.ArchetypeID)
		if store.IsNotFound(err) {
			continue
		}
		if err != nil {
			return err
		}
		missing, err := cie.MissingVariables(a, given)
		if err != nil {
			return err
		}
		if len(missing) > 0 {
			return store.Invalid("variables.%s: the archetype %q of campaign %q needs it and no keyword gives it: set it in the autopilot's variables (PUT /api/autopilot/config)",
				missing[0], a.Name, camp.Name)
		}
	}
	return nil
}

// normalize checks a config and fills its defaults.
func normalize(in ConfigInput) (store.AutopilotConfig, error) {
	c := store.DefaultAutopilotConfig()
	var err error
	if in.WindowStart != "" {
		if c.WindowStart, err = ParseClock("window_start", in.WindowStart); err != nil {
			return c, err
		}
		if c.WindowStart == 1440 {
			return c, store.Invalid("window_start: must be before 24:00")
		}
	}
	if in.WindowEnd != "" {
		if c.WindowEnd, err = ParseClock("window_end", in.WindowEnd); err != nil {
			return c, err
		}
		if c.WindowEnd == 0 {
			c.WindowEnd = 1440 // 00:00 as an end is midnight, the day's end
		}
	}
	if c.WindowStart == c.WindowEnd {
		return c, store.Invalid("window_end: must differ from window_start (00:00 to 24:00 is the whole day)")
	}
	switch {
	case in.MaxPostsPerDay == 0:
	case in.MaxPostsPerDay < 1 || in.MaxPostsPerDay > MaxPostsPerDay:
		return c, store.Invalid("max_posts_per_day: must be 1 to %d", MaxPostsPerDay)
	default:
		c.MaxPostsPerDay = in.MaxPostsPerDay
	}
	for _, b := range []struct {
		field string
		v     *float64
	}{{"daily_budget_usd", in.DailyBudgetUSD}, {"monthly_budget_usd", in.MonthlyBudgetUSD}} {
		if b.v != nil && !(*b.v > 0 && *b.v < 1e9) {
			return c, store.Invalid("%s: must be more than 0 (leave it out or null for no budget)", b.field)
		}
		if b.v != nil && store.MicrosOf(*b.v) == 0 {
			return c, store.Invalid("%s: must be at least 0.000001 (budgets are counted in millionths of a dollar)", b.field)
		}
	}
	c.DailyBudget, c.MonthlyBudget = store.MicrosOfUSD(in.DailyBudgetUSD), store.MicrosOfUSD(in.MonthlyBudgetUSD)
	for _, b := range []struct {
		field string
		v     *int64
	}{{"daily_budget_tokens", in.DailyBudgetTokens}, {"monthly_budget_tokens", in.MonthlyBudgetTokens}} {
		if b.v != nil && !(*b.v > 0 && *b.v <= maxBudgetTokens) {
			return c, store.Invalid("%s: must be 1 to %d (leave it out or null for no budget)", b.field, int64(maxBudgetTokens))
		}
	}
	c.DailyBudgetTokens, c.MonthlyBudgetTokens = in.DailyBudgetTokens, in.MonthlyBudgetTokens
	switch in.PostStatus {
	case "":
	case "campaign", "draft", "publish":
		c.PostStatus = in.PostStatus
	default:
		return c, store.Invalid("post_status: must be campaign, draft or publish")
	}
	if in.AutoResume != nil {
		c.AutoResume = *in.AutoResume
	}
	if len(in.CampaignIDs) > maxCampaigns {
		return c, store.Invalid("campaign_ids: at most %d", maxCampaigns)
	}
	for _, id := range in.CampaignIDs {
		if id <= 0 {
			return c, store.Invalid("campaign_ids: %d is not a campaign id", id)
		}
	}
	if in.CampaignIDs != nil {
		c.CampaignIDs = in.CampaignIDs
	}
	if len(in.Variables) > maxVariables {
		return c, store.Invalid("variables: at most %d", maxVariables)
	}
	for k, v := range in.Variables {
		switch {
		case !variableName().MatchString(k):
			return c, store.Invalid("variables: %q is not a variable name (a letter, then letters, digits or _; at most 40)", k)
		case slices.Contains(keywordVariables, k):
			return c, store.Invalid("variables.%s: each keyword gives its own %s; it cannot be set here", k, k)
		}
		v = strings.TrimSpace(v)
		if err := errors.Join(valid.MaxLen("variables."+k, v, maxValue), valid.Text("variables."+k, v)); err != nil {
			return c, err
		}
		c.Variables[k] = v
	}
	return c, nil
}

// by is a user id as the store records who did something; nil for the
// system.
func by(userID int64) *int64 {
	if userID <= 0 {
		return nil
	}
	return &userID
}

// ---- control ----

// Start starts a stopped autopilot: runs start when they are due. A
// budget already reached is a conflict.
func (s *Service) Start(ctx context.Context, sc store.Scope, userID, envID int64) (*Status, error) {
	return s.turnOn(ctx, sc, userID, envID, []string{store.AutopilotStopped}, "started")
}

// Resume resumes a paused autopilot, and the run it paused. A budget
// still reached is a conflict; a daily limit is not (the next run waits
// for the next day).
func (s *Service) Resume(ctx context.Context, sc store.Scope, userID, envID int64) (*Status, error) {
	return s.turnOn(ctx, sc, userID, envID, []string{store.AutopilotPaused}, "resumed")
}

func (s *Service) turnOn(ctx context.Context, sc store.Scope, userID, envID int64, from []string, verb string) (*Status, error) {
	env, ap, err := s.envAutopilot(ctx, sc, envID)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(from, ap.State) {
		return nil, wrongState(ap, verb)
	}
	if err := s.checkVariables(ctx, env, ap.Config); err != nil {
		return nil, err
	}
	_, detail, _, err := s.budgetStop(ctx, env, ap.Config)
	if err != nil {
		return nil, err
	}
	if detail != "" {
		return nil, store.Conflict("the autopilot cannot be %s: %s; raise the budget in PUT /api/autopilot/config or wait", verb, detail)
	}
	ap, changed, err := s.db.SetAutopilotState(ctx, env.ID, store.AutopilotState{From: from, State: store.AutopilotRunning, By: by(userID),
		ResetFailures: true})
	if err != nil {
		return nil, err
	}
	if !changed {
		return nil, wrongState(ap, verb)
	}
	s.emit(ctx, env.ID, EventStatus, ap)
	if err := s.resumeRun(ctx, env.ID); err != nil {
		return nil, err
	}
	s.plan.Now(ctx)
	return s.status(ctx, env)
}

// wrongState is the conflict of a change the autopilot's state does not
// allow.
func wrongState(ap *store.Autopilot, verb string) error {
	switch ap.State {
	case store.AutopilotRunning:
		return store.Conflict("the autopilot is running already: it cannot be %s", verb)
	case store.AutopilotPaused:
		return store.Conflict("the autopilot is paused (%s): resume it with POST /api/autopilot/resume", reasonWords(ap))
	}
	return store.Conflict("the autopilot is stopped: start it with POST /api/autopilot/start")
}

func reasonWords(ap *store.Autopilot) string {
	if ap.PauseDetail != "" {
		return ap.PauseDetail
	}
	return strings.ReplaceAll(ap.PauseReason, "_", " ")
}

// Pause pauses a running autopilot: no run starts, and the run under way
// pauses at its next step.
func (s *Service) Pause(ctx context.Context, sc store.Scope, userID, envID int64) (*Status, error) {
	env, err := s.env(ctx, sc, envID)
	if err != nil {
		return nil, err
	}
	ap, changed, err := s.db.SetAutopilotState(ctx, env.ID, store.AutopilotState{From: []string{store.AutopilotRunning},
		State: store.AutopilotPaused, PauseReason: store.PauseManual, PauseDetail: "paused by its owner", By: by(userID)})
	if err != nil {
		return nil, err
	}
	if !changed {
		return nil, wrongState(ap, "paused")
	}
	if err := s.controlRun(ctx, env.ID, store.ControlPause); err != nil {
		return nil, err
	}
	s.emit(ctx, env.ID, EventStatus, ap)
	s.hooks.Emit(ctx, webhook.Event{Type: webhook.AutopilotPaused, EnvironmentID: env.ID,
		Data: map[string]any{"by": "user", "user_id": userID, "reason": ap.PauseReason}})
	s.plan.Now(ctx)
	return s.status(ctx, env)
}

// Stop stops an autopilot, whatever its state: no run starts, a run
// waiting (queued or paused) is cancelled at once and one under way at
// its next step; a cancelled run that made no post gives its keyword
// back.
func (s *Service) Stop(ctx context.Context, sc store.Scope, userID, envID int64) (*Status, error) {
	env, err := s.env(ctx, sc, envID)
	if err != nil {
		return nil, err
	}
	ap, _, err := s.db.SetAutopilotState(ctx, env.ID, store.AutopilotState{
		From: []string{store.AutopilotRunning, store.AutopilotPaused, store.AutopilotStopped}, State: store.AutopilotStopped, By: by(userID)})
	if err != nil {
		return nil, err
	}
	if err := s.controlRun(ctx, env.ID, store.ControlStop); err != nil {
		return nil, err
	}
	s.emit(ctx, env.ID, EventStatus, ap)
	s.plan.Now(ctx)
	return s.status(ctx, env)
}

// controlRun passes a pause or stop to the environment's active run: a
// stop cancels a paused or queued one at once (unless its job took it
// meanwhile), and a running one does either at its next step.
func (s *Service) controlRun(ctx context.Context, envID int64, control string) error {
	run, err := s.db.ActiveAutopilotRun(ctx, envID)
	if err != nil || run == nil {
		return err
	}
	if control == store.ControlStop && run.Status != store.RunRunning {
		done, changed, err := s.db.FinishAutopilotRun(ctx, run.ID, store.AutopilotRunEnd{Status: store.RunCancelled,
			Error: "stopped by its owner", OnlyIf: run.Status})
		if err != nil {
			return err
		}
		if changed {
			s.emit(ctx, envID, EventRun, done)
			return nil
		}
	}
	if run.Status == store.RunPaused {
		return nil
	}
	_, err = s.db.ControlAutopilotRun(ctx, run.ID, control)
	return err
}

// resumeRun queues the environment's paused run again, if it has one; a
// run that was still to pause at its next step goes on instead.
func (s *Service) resumeRun(ctx context.Context, envID int64) error {
	run, err := s.db.ActiveAutopilotRun(ctx, envID)
	if err != nil || run == nil {
		return err
	}
	if run.Status != store.RunPaused {
		if run.Control == store.ControlPause {
			_, err = s.db.ControlAutopilotRun(ctx, run.ID, "")
		}
		return err
	}
	jobID, err := s.db.ResumeAutopilotRun(ctx, run.ID, runJob())
	if err != nil {
		return err
	}
	if jobID != nil {
		s.jobs.Signal()
		s.emitRun(ctx, run.ID)
	}
	return nil
}

// RunNow starts a run at once, whatever the state, window, spacing,
// cadences and daily limit say: a person asked. The budgets still hold
// (a conflict when one is reached), and one run at a time.
func (s *Service) RunNow(ctx context.Context, sc store.Scope, userID, envID int64) (*store.AutopilotRun, error) {
	env, ap, err := s.envAutopilot(ctx, sc, envID)
	if err != nil {
		return nil, err
	}
	if active, err := s.db.ActiveAutopilotRun(ctx, env.ID); err != nil {
		return nil, err
	} else if active != nil {
		return nil, store.Conflict("autopilot run %d is %s: one run at a time (GET /api/autopilot/runs/%d)", active.ID, active.Status, active.ID)
	}
	if _, detail, _, err := s.budgetStop(ctx, env, ap.Config); err != nil {
		return nil, err
	} else if detail != "" {
		return nil, store.Conflict("no run: %s", detail)
	}
	started := s.now()
	cands, note, err := s.candidates(ctx, env, ap, false)
	if err != nil {
		return nil, err
	}
	if len(cands) == 0 {
		return nil, store.Conflict("nothing to write: %s", note)
	}
	run, err := s.db.CreateAutopilotRun(ctx, store.NewAutopilotRun{EnvironmentID: env.ID, Trigger: "manual", Candidates: cands,
		RequestedBy: by(userID), PickStarted: started, Job: runJob()})
	if errors.Is(err, store.ErrNoKeyword) {
		return nil, store.Conflict("nothing to write: %s", store.Message(err))
	}
	if err != nil {
		return nil, err
	}
	s.jobs.Signal()
	s.emit(ctx, env.ID, EventRun, run)
	s.plan.Now(ctx)
	return run, nil
}

// candidates are the campaigns a run may take its keyword from, in order:
// the config's, or every active campaign of the environment; each active,
// with an archetype, and a target the environment publishes to; with
// cadence, each below its posts for the day. note says why none is, when
// none is.
func (s *Service) candidates(ctx context.Context, env *store.Environment, ap *store.Autopilot, cadence bool) ([]store.AutopilotCandidate, string, error) {
	campaigns, err := s.campaigns(ctx, env, ap.Config)
	if err != nil {
		return nil, "", err
	}
	if len(campaigns) == 0 {
		return nil, "the environment has no active campaign for the autopilot (see campaign_ids in its config)", nil
	}
	today := dayStart(s.now(), zone(env), 0)
	var out []store.AutopilotCandidate
	var why []string
	for _, c := range campaigns {
		switch {
		case c.EnvironmentID != env.ID:
			continue
		case c.Status != store.CampaignActive:
			why = append(why, fmt.Sprintf("campaign %q is %s", c.Name, c.Status))
			continue
		case c.ArchetypeID == nil:
			why = append(why, fmt.Sprintf("campaign %q has no archetype", c.Name))
			continue
		case s.unready(env, c.Target):
			why = append(why, fmt.Sprintf("campaign %q publishes to %s, which the environment's configuration does not set up", c.Name, c.Target))
			continue
		}
		if c.KeywordCounts[store.KeywordNew]+c.KeywordCounts[store.KeywordPlanned] == 0 {
			why = append(why, fmt.Sprintf("campaign %q has no keyword left to write", c.Name))
			continue
		}
		if cadence {
			n, err := s.db.CampaignRunsSince(ctx, c.ID, today)
			if err != nil {
				return nil, "", err
			}
			if n >= c.Cadence {
				why = append(why, fmt.Sprintf("campaign %q made its %d post(s) of the day", c.Name, c.Cadence))
				continue
			}
		}
		status := ap.Config.PostStatus
		if status == "campaign" {
			status = c.PostStatus
		}
		out = append(out, store.AutopilotCandidate{CampaignID: c.ID, Target: c.Target, PostStatus: status})
	}
	return out, strings.Join(why, "; "), nil
}

// campaigns are the campaigns a config takes keywords from: its
// campaign_ids (those still there), or every active campaign of the
// environment.
func (s *Service) campaigns(ctx context.Context, env *store.Environment, c store.AutopilotConfig) ([]*store.Campaign, error) {
	if len(c.CampaignIDs) == 0 {
		envID := env.ID
		list, _, err := s.db.ListCampaigns(ctx, store.CampaignFilter{Scope: store.Everything, EnvironmentID: &envID,
			Status: store.CampaignActive, Page: store.Page{Page: 1, PerPage: 200}})
		return list, err
	}
	var out []*store.Campaign
	for _, id := range c.CampaignIDs {
		camp, err := s.db.CampaignByID(ctx, id)
		if store.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, camp)
	}
	return out, nil
}

// unready reports whether an environment's configuration does not set
// up a target.
func (s *Service) unready(env *store.Environment, target string) bool {
	_, err := s.posts.For(env, target)
	return err != nil
}

// ---- runs ----

// RunsQuery narrows Runs.
type RunsQuery struct {
	EnvironmentID int64
	Status        string
	Sort          store.Sort
	Page          store.Page
}

// Runs lists an environment's runs, newest first.
func (s *Service) Runs(ctx context.Context, sc store.Scope, q RunsQuery) ([]*store.AutopilotRun, int, error) {
	env, err := s.env(ctx, sc, q.EnvironmentID)
	if err != nil {
		return nil, 0, err
	}
	return s.db.ListAutopilotRuns(ctx, store.AutopilotRunFilter{EnvironmentID: env.ID, Status: q.Status, Sort: q.Sort, Page: q.Page})
}

// Run returns a run the scope sees; envID, when not 0, must be its
// environment.
func (s *Service) Run(ctx context.Context, sc store.Scope, envID, id int64) (*store.AutopilotRun, error) {
	r, err := store.Seen(ctx, id, s.db.AutopilotRunByID, func(r *store.AutopilotRun) bool { return sc.Sees(r.EnvironmentID) }, "autopilot run")
	if err != nil {
		return nil, err
	}
	if envID != 0 && envID != r.EnvironmentID {
		return nil, store.NotFound("autopilot run not found")
	}
	return r, nil
}
