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
// From and To are RFC 3339 times or YYYY-MM-DD days (UTC); To is exclusive,
// and a day as To means the end of that day.
type Query struct {
	From, To      string
	UserID        *int64
	EnvironmentID *int64
	AgentID       *int64
	Model         string
	Source        string
	Status        string
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
	points, err := s.db.UsageSeries(ctx, f, groupBy)
	if err != nil {
		return nil, err
	}
	return &Series{Range: Range{f.From, f.To}, GroupBy: groupBy, Points: points}, nil
}

// Costs splits the known cost by model and by environment; without a
// range, over the current month (UTC).
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
	f := store.UsageFilter{UserID: q.UserID, EnvironmentID: q.EnvironmentID, AgentID: q.AgentID,
		Model: q.Model, Source: q.Source, Status: q.Status, Scope: sc}
	var err error
	if f.From, err = parseDay("from", q.From, false); err != nil {
		return f, err
	}
	if f.To, err = parseDay("to", q.To, true); err != nil {
		return f, err
	}
	if f.From == nil && f.To == nil && defaultFrom != nil {
		from := defaultFrom(s.now().UTC())
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

// parseDay reads an RFC 3339 time or a YYYY-MM-DD day (UTC); endOfDay
// moves a day to its end. "" is no bound. The result, in UTC and after
// moving to the end of the day, must lie in the years 2000 to 9999.
func parseDay(field, v string, endOfDay bool) (*time.Time, error) {
	if v == "" {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		if t, err = time.Parse("2006-01-02", v); err != nil {
			return nil, store.Invalid("%s: must be a date (YYYY-MM-DD) or an RFC 3339 time", field)
		}
		if endOfDay {
			t = t.AddDate(0, 0, 1)
		}
	}
	t = t.UTC()
	if t.Before(minDate) || !t.Before(maxDate) {
		return nil, store.Invalid("%s: must fall in the years 2000 to 9999 (UTC; a day as to means the end of that day)", field)
	}
	return &t, nil
}

// last30Days is the start of the day 29 days before now: 30 days with today.
func last30Days(now time.Time) time.Time {
	return time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC).AddDate(0, 0, -29)
}

func monthStart(now time.Time) time.Time {
	return time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
}
