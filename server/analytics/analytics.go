// Package analytics holds the rules of token analytics
// (/api/token-analytics): which usage events a caller may see, the date
// ranges and groupings they may ask for, and the CSV export.
package analytics

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/copydesk/copydesk/store"
)

// Store is what the service needs of the store; *store.DB satisfies it.
type Store interface {
	ListUsage(ctx context.Context, f store.UsageFilter, p store.Page) ([]*store.UsageEvent, int, error)
	UsageSummary(ctx context.Context, f store.UsageFilter) (*store.UsageTotals, error)
	UsageSeries(ctx context.Context, f store.UsageFilter, groupBy string) ([]*store.UsageTotals, error)
	UsagePeriods(ctx context.Context, f store.UsageFilter, bounds []time.Time, keys []string) ([]*store.UsageTotals, error)
	EachUsage(ctx context.Context, f store.UsageFilter, fn func(*store.UsageEvent) error) error
}

// Service answers the analytics questions over the store.
type Service struct {
	db  Store
	now func() time.Time
}

// New returns the service; now is the clock the default ranges start from.
func New(db Store, now func() time.Time) *Service {
	return &Service{db: db, now: now}
}

// Query is what a caller asks about: a date range and filters, as given.
// From and To are RFC 3339 times or YYYY-MM-DD days; To is exclusive,
// and a day as To means the end of that day. TZ is the IANA time zone of
// the days (the days of from and to, of the default ranges and of a day
// series); "" is UTC.
type Query struct {
	From, To string
	TZ       string
	store.UsageMatch
}

// Range is the time range [From, To) an answer covers; nil is open.
type Range struct {
	From, To *time.Time
}

// Summary totals the matching events.
type Summary struct {
	Range
	Totals *store.UsageTotals
}

// Series totals the matching events per group.
type Series struct {
	Range
	GroupBy string
	Points  []*store.UsageTotals
}

// Costs splits the known cost of the matching events by model and by
// environment.
type Costs struct {
	Range
	// TotalCost sums the known costs: nil when there were calls and none
	// had a known cost (a local model's), never 0.
	TotalCost     *store.Micros
	ByModel       []*store.UsageTotals
	ByEnvironment []*store.UsageTotals
}

// Groupings a series may use.
var groupings = []string{store.GroupByDay, store.GroupByModel, store.GroupByAgent, store.GroupByEnvironment, store.GroupByUser, store.GroupBySource}

// List returns a page of the matching events, newest first.
func (s *Service) List(ctx context.Context, sc store.Scope, q Query, p store.Page) ([]*store.UsageEvent, int, error) {
	f, err := s.filter(sc, q, nil)
	if err != nil {
		return nil, 0, err
	}
	return s.db.ListUsage(ctx, f, p)
}

// Summary totals the matching events; without a range, all of them.
func (s *Service) Summary(ctx context.Context, sc store.Scope, q Query) (*Summary, error) {
	f, err := s.filter(sc, q, nil)
	if err != nil {
		return nil, err
	}
	t, err := s.db.UsageSummary(ctx, f)
	if err != nil {
		return nil, err
	}
	return &Summary{Range: Range{f.From, f.To}, Totals: t}, nil
}

// Series totals the matching events per day (the default), model, agent,
// environment or user; without a range, over the last 30 days.
func (s *Service) Series(ctx context.Context, sc store.Scope, q Query, groupBy string) (*Series, error) {
	if groupBy == "" {
		groupBy = store.GroupByDay
	}
	if !slices.Contains(groupings, groupBy) {
		return nil, store.Invalid("group_by: must be one of: %s", strings.Join(groupings, ", "))
	}
	f, err := s.filter(sc, q, last30Days)
	if err != nil {
		return nil, err
	}
	if groupBy == store.GroupByDay && q.TZ != "" {
		return s.zonedDays(ctx, f, q.TZ)
	}
	points, err := s.db.UsageSeries(ctx, f, groupBy)
	if err != nil {
		return nil, err
	}
	return &Series{Range: Range{f.From, f.To}, GroupBy: groupBy, Points: points}, nil
}

// maxZonedDays bounds a day series in a time zone: one CASE branch a day.
const maxZonedDays = 1000

// zonedDays is the day series in the time zone tz: the days' bounds are
// computed here, daylight saving time included, and the store totals the
// events between them. An open end is the end of today; an open start
// (only to given) is 30 days before to, as the default range.
func (s *Service) zonedDays(ctx context.Context, f store.UsageFilter, tz string) (*Series, error) {
	loc, err := zone(tz)
	if err != nil {
		return nil, err
	}
	if f.To == nil {
		last := s.now().In(loc) // the end of today, or of from's day when from is later
		if f.From != nil && f.From.After(last) {
			last = f.From.In(loc)
		}
		to := time.Date(last.Year(), last.Month(), last.Day()+1, 0, 0, 0, 0, loc).UTC()
		f.To = &to
	}
	if f.From == nil {
		from := last30Days(f.To.Add(-time.Nanosecond).In(loc))
		f.From = &from
	}
	bounds := []time.Time{*f.From}
	keys := []string{}
	for t := f.From.In(loc); t.Before(*f.To); {
		keys = append(keys, t.Format("2006-01-02"))
		if len(keys) > maxZonedDays {
			return nil, store.Invalid("to: a day series in a time zone covers at most %d days", maxZonedDays)
		}
		t = time.Date(t.Year(), t.Month(), t.Day()+1, 0, 0, 0, 0, loc)
		if !t.Before(*f.To) {
			bounds = append(bounds, *f.To)
			break
		}
		bounds = append(bounds, t.UTC())
	}
	points, err := s.db.UsagePeriods(ctx, f, bounds, keys)
	if err != nil {
		return nil, err
	}
	return &Series{Range: Range{f.From, f.To}, GroupBy: store.GroupByDay, Points: points}, nil
}

// zone loads an IANA time zone; "" is UTC. "Local" (the server's own
// zone) is refused: the answer must not depend on where the server runs.
func zone(tz string) (*time.Location, error) {
	if tz == "" {
		return time.UTC, nil
	}
	loc, err := time.LoadLocation(tz)
	if err != nil || tz == "Local" {
		return nil, store.Invalid("tz: unknown time zone %q (an IANA name such as Europe/Berlin)", tz)
	}
	return loc, nil
}

// Costs splits the known cost by model and by environment; without a
// range, over the current month (of the time zone; UTC by default).
func (s *Service) Costs(ctx context.Context, sc store.Scope, q Query) (*Costs, error) {
	f, err := s.filter(sc, q, monthStart)
	if err != nil {
		return nil, err
	}
	out := &Costs{Range: Range{f.From, f.To}}
	if out.ByModel, err = s.db.UsageSeries(ctx, f, store.GroupByModel); err != nil {
		return nil, err
	}
	if out.ByEnvironment, err = s.db.UsageSeries(ctx, f, store.GroupByEnvironment); err != nil {
		return nil, err
	}
	var all store.UsageTotals
	for _, p := range out.ByModel {
		all.Calls, all.UnpricedCalls, all.Cost = all.Calls+p.Calls, all.UnpricedCalls+p.UnpricedCalls, all.Cost+p.Cost
	}
	out.TotalCost = all.KnownCost()
	return out, nil
}

// csvHeader names the export's columns. cost_usd is dollars with six
// decimals (the micro-dollars stored, exactly), empty when unknown.
var csvHeader = []string{"id", "created_at", "provider", "model", "input_tokens", "output_tokens", "cached_tokens", "cost_usd",
	"latency_ms", "status", "error", "source", "user_id", "environment_id", "agent_id", "credential_id", "estimated"}

// ExportCSV writes the matching events as CSV, oldest first. The query is
// checked before open is called, so a refused query has written nothing;
// open returns the writer once the export is sure to start.
func (s *Service) ExportCSV(ctx context.Context, sc store.Scope, q Query, open func() io.Writer) error {
	f, err := s.filter(sc, q, nil)
	if err != nil {
		return err
	}
	w := csv.NewWriter(open())
	if err := w.Write(csvHeader); err != nil {
		return fmt.Errorf("analytics: export: %w", err)
	}
	err = s.db.EachUsage(ctx, f, func(e *store.UsageEvent) error {
		return w.Write(csvRow(e))
	})
	w.Flush()
	if err != nil {
		return fmt.Errorf("analytics: export: %w", err)
	}
	if err := w.Error(); err != nil {
		return fmt.Errorf("analytics: export: %w", err)
	}
	return nil
}

func csvRow(e *store.UsageEvent) []string {
	cost := "" // unknown
	if e.Cost != nil {
		cost = e.Cost.Decimal()
	}
	return []string{itoa(e.ID), e.CreatedAt.UTC().Format(store.TimeFormat), csvSafe(e.Provider), csvSafe(e.Model),
		itoa(e.InputTokens), itoa(e.OutputTokens), itoa(e.CachedTokens), cost, itoa(e.LatencyMS), e.Status, csvSafe(e.Error), e.Source,
		idText(e.UserID), idText(e.EnvironmentID), idText(e.AgentID), idText(e.CredentialID), strconv.FormatBool(e.Estimated)}
}

// csvSafe keeps a text cell from being read as a formula by a spreadsheet
// (provider error messages and model names come from outside).
func csvSafe(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func idText(id *int64) string {
	if id == nil {
		return ""
	}
	return itoa(*id)
}

// filter checks q and turns it into a store filter within the caller's
// scope. Without from and to, defaultFrom (when not nil) opens the range.
// An environment outside the scope is not found, as if it did not exist.
func (s *Service) filter(sc store.Scope, q Query, defaultFrom func(now time.Time) time.Time) (store.UsageFilter, error) {
	f := store.UsageFilter{UsageMatch: q.UsageMatch, Scope: sc}
	loc, err := zone(q.TZ)
	if err != nil {
		return f, err
	}
	if f.From, err = parseDay("from", q.From, false, loc); err != nil {
		return f, err
	}
	if f.To, err = parseDay("to", q.To, true, loc); err != nil {
		return f, err
	}
	if f.From == nil && f.To == nil && defaultFrom != nil {
		from := defaultFrom(s.now().In(loc))
		f.From = &from
	}
	if f.From != nil && f.To != nil && !f.From.Before(*f.To) {
		return f, store.Invalid("to: must be after from")
	}
	if err := sc.RequireFilter(q.EnvironmentID); err != nil {
		return f, err
	}
	return f, nil
}

// The bounds of a date: no usage is older than minDate, and a time from
// maxDate on (year 10000) cannot be written as JSON, so a range echoing it
// could not be answered.
var (
	minDate = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	maxDate = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
)

// parseDay reads an RFC 3339 time or a YYYY-MM-DD day (of loc); endOfDay
// moves a day to its end. "" is no bound. The result, in UTC and after
// moving to the end of the day, must lie in the years 2000 to 9999.
func parseDay(field, v string, endOfDay bool, loc *time.Location) (*time.Time, error) {
	if v == "" {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		if t, err = time.ParseInLocation("2006-01-02", v, loc); err != nil {
			return nil, store.Invalid("%s: must be a date (YYYY-MM-DD) or an RFC 3339 time", field)
		}
		if endOfDay {
			t = time.Date(t.Year(), t.Month(), t.Day()+1, 0, 0, 0, 0, loc)
		}
	}
	t = t.UTC()
	if t.Before(minDate) || !t.Before(maxDate) {
		return nil, store.Invalid("%s: must fall in the years 2000 to 9999 (UTC; a day as to means the end of that day)", field)
	}
	return &t, nil
}

// last30Days is the start of the day 29 days before now (in now's time
// zone), in UTC: 30 days with today.
func last30Days(now time.Time) time.Time {
	return time.Date(now.Year(), now.Month(), now.Day()-29, 0, 0, 0, 0, now.Location()).UTC()
}

func monthStart(now time.Time) time.Time {
	return time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, now.Location()).UTC()
}
