// Package websource holds the rules of web sources (/api/web-sources):
// the feeds (RSS, Atom) and pages an environment follows, fetched every
// fetch_interval by the recurring job kind FetchJob and on demand, with a
// conditional GET; what they bring is kept as items, once each.
//
// Who does what: everyone reads the sources and items of their
// environments, editors and up write sources and fetch them; any other
// environment's source is not found. A fetch that fails is an outcome
// (last_error, last_status), never an error of the request that asked
// for it.
//
// A source that keeps failing backs off (Delay): each failure in a row
// doubles the wait before the next scheduled fetch, up to a cap, and
// honours a Retry-After. When NotifyAfter fetches in a row have failed,
// the environment's editors are told once; when it answers again, once
// more.
package websource

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/copydesk/copydesk/server/environment"
	"github.com/copydesk/copydesk/server/feed"
	"github.com/copydesk/copydesk/server/jobs"
	"github.com/copydesk/copydesk/server/notify"
	"github.com/copydesk/copydesk/server/outbound"
	"github.com/copydesk/copydesk/server/valid"
	"github.com/copydesk/copydesk/store"
)

// Store is what the service needs of the store.
type Store interface {
	WebSourceByID(ctx context.Context, id int64) (*store.WebSource, error)
	ListWebSources(ctx context.Context, f store.WebSourceFilter) ([]*store.WebSource, int, error)
	CreateWebSource(ctx context.Context, n store.NewWebSource) (*store.WebSource, error)
	UpdateWebSource(ctx context.Context, id int64, up store.WebSourceUpdate) (*store.WebSource, error)
	DeleteWebSource(ctx context.Context, id int64) error
	DeleteWebSources(ctx context.Context, sc store.Scope, ids []int64) (int, error)
	NextWebSourceFetch(ctx context.Context) (*time.Time, error)
	DueWebSources(ctx context.Context, now time.Time, limit int) ([]*store.WebSource, error)
	RecordWebSourceFetch(ctx context.Context, id int64, f store.WebFetch) (*store.WebFetchRecord, error)
	ListWebItems(ctx context.Context, sourceID int64, f store.WebItemFilter) ([]*store.WebItem, int, error)
}

// Fetcher fetches a source (server/feed).
type Fetcher interface {
	Fetch(ctx context.Context, r feed.Request) (*feed.Result, error)
}

// Notifier raises notifications (server/notify).
type Notifier interface {
	EnvironmentRole(ctx context.Context, envID int64, min store.Role, note notify.Note)
}

// FetchJob is the recurring job kind that fetches the sources that are
// due. Its schedule is the earliest next_fetch_at of the active sources.
const FetchJob = "websources.fetch"

// Bounds of the fields.
const (
	MaxURL          = 2048
	MinInterval     = 5 * time.Minute
	MaxInterval     = 30 * 24 * time.Hour
	DefaultInterval = time.Hour
	// batch is how many due sources one run of FetchJob fetches; the next
	// run, planned at once when more are due, fetches the rest.
	batch = 20
)

// The back-off of a failing source (see Delay) and when people hear of it.
const (
	// MaxBackoff and MaxBackoffFactor cap the wait after failures: a dead
	// source is asked at least once a day, and one fetched every few
	// minutes at least every 32 intervals (its site back after a night
	// is noticed within hours, not a day).
	MaxBackoff       = 24 * time.Hour
	MaxBackoffFactor = 32
	// NotifyAfter is how many fetches in a row must fail before the
	// environment's editors are told: one or two failures are the
	// weather of the web (a deploy, a blip), five are a source to look at.
	NotifyAfter = 5
)

// Deps are what the service works with.
type Deps struct {
	Store        Store
	Environments environment.Getter
	Fetcher      Fetcher
	Jobs         jobs.Scheduled
	Notify       Notifier // nil: nobody is told
	Log          *slog.Logger
	Now          func() time.Time // the store's clock
}

// Service implements the source rules and fetches.
type Service struct {
	db     Store
	envs   environment.Getter
	fetch  Fetcher
	jobs   jobs.Scheduled
	notify Notifier
	log    *slog.Logger
	plan   jobs.Plan // FetchJob, replanned after a change
	now    func() time.Time
}

// New returns the service and registers FetchJob with d.Jobs.
func New(d Deps) *Service {
	s := &Service{db: d.Store, envs: d.Environments, fetch: d.Fetcher, jobs: d.Jobs, notify: d.Notify, log: d.Log, now: d.Now}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.plan = jobs.Plan{Jobs: s.jobs, Kind: FetchJob, Log: s.log, What: "web sources: plan the next fetch"}
	if s.now == nil {
		s.now = time.Now
	}
	s.jobs.Register(FetchJob, jobs.Kind{Handle: s.fetchDue, Next: s.next})
	return s
}

// Input is a source to create; FetchInterval 0 means DefaultInterval.
type Input struct {
	EnvironmentID int64
	URL           string
	Kind          string
	IsActive      bool
	FetchInterval time.Duration
}

// Change holds the fields to change; nil leaves one alone.
type Change struct {
	URL           *string
	Kind          *string
	IsActive      *bool
	FetchInterval *time.Duration
}

// ListQuery narrows a list of sources.
type ListQuery struct {
	EnvironmentID *int64 // an environment the caller does not see is 404
	IsActive      *bool
	Failing       *bool // true: consecutive_failures > 0; false: = 0
	Q             string
	Sort          store.Sort
	Page          store.Page
}

// CheckURL reads a source's address: http or https, with a host, without
// credentials, at most MaxURL characters; the fragment, which is never
// sent, is dropped. An address the outbound guard refuses whatever the
// settings (link-local, cloud metadata) is refused when saved; the
// others are judged when fetched.
func CheckURL(raw string) (string, error) {
	u, err := valid.CallURL("url", raw, MaxURL, false)
	if err != nil {
		return "", err
	}
	u.Fragment, u.RawFragment = "", ""
	return u.String(), nil
}

func checkKind(k string) error {
	switch k {
	case store.SourceRSS, store.SourceAtom, store.SourcePage:
		return nil
	}
	return store.Invalid("kind: must be one of rss, atom, page")
}

func checkInterval(d time.Duration) error {
	if d < MinInterval || d > MaxInterval || d%time.Second != 0 {
		return store.Invalid("fetch_interval: must be whole seconds from %d (5 minutes) to %d (30 days)",
			int64(MinInterval/time.Second), int64(MaxInterval/time.Second))
	}
	return nil
}

// List lists the sources the scope sees.
func (s *Service) List(ctx context.Context, sc store.Scope, q ListQuery) ([]*store.WebSource, int, error) {
	if q.EnvironmentID != nil {
		if _, err := s.envs.Get(ctx, sc, *q.EnvironmentID); err != nil {
			return nil, 0, err
		}
	}
	return s.db.ListWebSources(ctx, store.WebSourceFilter{Scope: sc, EnvironmentID: q.EnvironmentID, IsActive: q.IsActive, Failing: q.Failing,
		Q: q.Q, Sort: q.Sort, Page: q.Page})
}

// Get returns a source the scope sees.
func (s *Service) Get(ctx context.Context, sc store.Scope, id int64) (*store.WebSource, error) {
	return store.Seen(ctx, id, s.db.WebSourceByID, func(src *store.WebSource) bool { return sc.Sees(src.EnvironmentID) }, "web source")
}

// Create makes a source in an environment the scope sees; an active one
// is due at once.
func (s *Service) Create(ctx context.Context, sc store.Scope, in Input) (*store.WebSource, error) {
	if _, err := s.envs.Get(ctx, sc, in.EnvironmentID); err != nil {
		return nil, err
	}
	addr, err := CheckURL(in.URL)
	if err != nil {
		return nil, err
	}
	if err := checkKind(in.Kind); err != nil {
		return nil, err
	}
	if in.FetchInterval == 0 {
		in.FetchInterval = DefaultInterval
	}
	if err := checkInterval(in.FetchInterval); err != nil {
		return nil, err
	}
	n := store.NewWebSource{EnvironmentID: in.EnvironmentID, URL: addr, Kind: in.Kind, IsActive: in.IsActive, FetchInterval: in.FetchInterval}
	if sc.UserID != 0 {
		n.CreatedBy = &sc.UserID
	}
	src, err := s.db.CreateWebSource(ctx, n)
	if err != nil {
		return nil, err
	}
	s.plan.Now(ctx)
	return src, nil
}

// Update changes a source the scope sees (see store.UpdateWebSource for
// when it is due next).
func (s *Service) Update(ctx context.Context, sc store.Scope, id int64, ch Change) (*store.WebSource, error) {
	if _, err := s.Get(ctx, sc, id); err != nil {
		return nil, err
	}
	up := store.WebSourceUpdate{Kind: ch.Kind, IsActive: ch.IsActive, FetchInterval: ch.FetchInterval, Delay: backoff(0)}
	if ch.URL != nil {
		addr, err := CheckURL(*ch.URL)
		if err != nil {
			return nil, err
		}
		up.URL = &addr
	}
	if ch.Kind != nil {
		if err := checkKind(*ch.Kind); err != nil {
			return nil, err
		}
	}
	if ch.FetchInterval != nil {
		if err := checkInterval(*ch.FetchInterval); err != nil {
			return nil, err
		}
	}
	src, err := s.db.UpdateWebSource(ctx, id, up)
	if err != nil {
		return nil, err
	}
	s.plan.Now(ctx)
	return src, nil
}

// Delete deletes a source the scope sees, with its items.
func (s *Service) Delete(ctx context.Context, sc store.Scope, id int64) error {
	if _, err := s.Get(ctx, sc, id); err != nil {
		return err
	}
	if err := s.db.DeleteWebSource(ctx, id); err != nil {
		return err
	}
	s.plan.Now(ctx)
	return nil
}

// DeleteMany deletes the sources of ids the scope sees, with their items,
// and says how many; the others are skipped.
func (s *Service) DeleteMany(ctx context.Context, sc store.Scope, ids []int64) (int, error) {
	n, err := s.db.DeleteWebSources(ctx, sc, ids)
	if err == nil && n > 0 {
		s.plan.Now(ctx)
	}
	return n, err
}

// Items lists the items of a source the scope sees.
func (s *Service) Items(ctx context.Context, sc store.Scope, id int64, f store.WebItemFilter) ([]*store.WebItem, int, error) {
	if _, err := s.Get(ctx, sc, id); err != nil {
		return nil, 0, err
	}
	return s.db.ListWebItems(ctx, id, f)
}

// Delay is how long after a fetch a source is next due: its interval
// after a success; after its nth failure in a row, interval × 2^n, or
// longer when the answer's Retry-After asked for more (retryAfter, 0 when
// none); never more than the cap, MaxBackoffFactor intervals or
// MaxBackoff, whichever is shorter, nor less than the interval (so a
// source fetched daily or less often is never slowed further).
func Delay(interval time.Duration, failures int, retryAfter time.Duration) time.Duration {
	limit := max(interval, min(interval*MaxBackoffFactor, MaxBackoff))
	d := interval
	for range failures {
		if d >= limit {
			break
		}
		d *= 2 // at most 30 days × 2: no overflow
	}
	return min(max(d, retryAfter), limit)
}

// backoff is Delay as the store applies it, with a fetch's Retry-After.
func backoff(retryAfter time.Duration) store.Delay {
	return func(interval time.Duration, failures int) time.Duration {
		if failures == 0 {
			return interval
		}
		return Delay(interval, failures, retryAfter)
	}
}

// Report is how a fetch went.
type Report struct {
	Source      *store.WebSource
	NewItems    int
	NotModified bool
	// Error is why the fetch failed ("" when it did not); the source's
	// last_error says the same.
	Error string
}

// Fetch fetches a source the scope sees now, whether due or not.
func (s *Service) Fetch(ctx context.Context, sc store.Scope, id int64) (*Report, error) {
	src, err := s.Get(ctx, sc, id)
	if err != nil {
		return nil, err
	}
	rep, err := s.fetchOne(ctx, src)
	if err != nil {
		return nil, err
	}
	s.plan.Now(ctx)
	return rep, nil
}

// fetchOne fetches a source and records the outcome. Only a failure to
// record it (or the caller's context ending) is an error.
func (s *Service) fetchOne(ctx context.Context, src *store.WebSource) (*Report, error) {
	res, err := s.fetch.Fetch(ctx, feed.Request{URL: src.URL, Kind: src.Kind, ETag: src.ETag, LastModified: src.LastModified})
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	f := store.WebFetch{URL: src.URL, Delay: backoff(0)}
	if err != nil {
		f.Error = outbound.Excerpt(err.Error(), 1000)
		if status, ok := feed.Status(err); ok {
			f.Status = &status
		}
		if wait, ok := feed.RetryAfter(err, s.now()); ok {
			f.Delay = backoff(wait)
		}
	} else {
		f.Status, f.NotModified, f.ETag, f.LastModified = &res.Status, res.NotModified, res.ETag, res.LastModified
		for _, it := range res.Items {
			f.Items = append(f.Items, store.NewWebItem{Key: it.Key(), GUID: it.GUID, Link: it.Link, Title: it.Title,
				Summary: it.Summary, Content: it.Content, PublishedAt: it.Published})
		}
	}
	rec, err := s.db.RecordWebSourceFetch(context.WithoutCancel(ctx), src.ID, f)
	if err != nil {
		return nil, err
	}
	if rec.Recorded {
		s.tell(ctx, rec)
	}
	return &Report{Source: rec.Source, NewItems: rec.NewItems, NotModified: f.NotModified, Error: f.Error}, nil
}

// tell notifies the environment's editors when a fetch made the source
// reach NotifyAfter failures in a row, and when one succeeded after they
// were told. The count moves by one per fetch, in the transaction that
// records it, and tell judges by the counts before and after this
// fetch's own write (not by the source as read later, which a fetch of
// the same source running at once may have moved on): so each crossing
// is seen by exactly one fetch, once per streak of failures, however
// many fetches run at once.
func (s *Service) tell(ctx context.Context, rec *store.WebFetchRecord) {
	if s.notify == nil {
		return
	}
	src := rec.Source
	link := fmt.Sprintf("/api/web-sources/%d", src.ID)
	switch {
	case rec.FailuresBefore < NotifyAfter && rec.FailuresAfter >= NotifyAfter:
		body := fmt.Sprintf("Its last %d fetches failed, the last with: %s.", NotifyAfter,
			strings.TrimRight(notify.Preview(src.LastError, 300), "."))
		if src.NextFetchAt != nil {
			body += fmt.Sprintf(" It is retried less and less often until it answers (next at %s);"+
				" you are told again once it recovers.", src.NextFetchAt.UTC().Format(time.RFC3339))
		}
		s.notify.EnvironmentRole(ctx, src.EnvironmentID, store.RoleEditor, notify.Note{Kind: notify.WebSourceFailing,
			Title: "Web source failing: " + notify.Preview(src.URL, 120), Body: body, Link: link})
	case rec.FailuresAfter == 0 && rec.FailuresBefore >= NotifyAfter:
		s.notify.EnvironmentRole(ctx, src.EnvironmentID, store.RoleEditor, notify.Note{Kind: notify.WebSourceRecovered,
			Title: "Web source answering again: " + notify.Preview(src.URL, 120),
			Body:  fmt.Sprintf("It answered after %d failed fetches; it is fetched every fetch_interval again.", rec.FailuresBefore),
			Link:  link})
	}
}

// next is FetchJob's schedule: when the earliest active source is due.
func (s *Service) next(ctx context.Context, _ time.Time) (time.Time, bool, error) {
	at, err := s.db.NextWebSourceFetch(ctx)
	if err != nil || at == nil {
		return time.Time{}, false, err
	}
	return *at, true, nil
}

// fetchDue is FetchJob's handler: it fetches up to batch due sources, the
// longest due first. A source that fails has it recorded and the rest go
// on; the job fails only when the database does.
func (s *Service) fetchDue(ctx context.Context, _ *store.Job) error {
	due, err := s.db.DueWebSources(ctx, s.now(), batch)
	if err != nil {
		return err
	}
	var errs []error
	for _, src := range due {
		rep, err := s.fetchOne(ctx, src)
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case store.IsNotFound(err): // deleted meanwhile
		case err != nil:
			errs = append(errs, err)
			s.log.Error("web sources: record a fetch", "source", src.ID, "err", err)
		case rep.Error != "":
			s.log.Info("web source fetch failed", "source", src.ID, "url", src.URL, "err", rep.Error,
				"failures", rep.Source.ConsecutiveFailures, "next", rep.Source.NextFetchAt)
		}
	}
	return errors.Join(errs...)
}
