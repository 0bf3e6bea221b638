package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// UsageEvent is one provider call, successful or not.
type UsageEvent struct {
	ID            int64
	CreatedAt     time.Time
	Provider      string
	Model         string
	InputTokens   int64
	OutputTokens  int64
	CachedTokens  int64
	Cost          *Micros // nil: the model's price is unknown
	LatencyMS     int64
	Status        string // UsageOK, UsageError or UsageCancelled
	Error         string
	Source        string // one of UsageSources
	UserID        *int64
	EnvironmentID *int64
	AgentID       *int64
	CredentialID  *int64
	// Estimated marks token counts estimated from characters: the
	// provider had not reported them when its stream was cut off.
	Estimated bool
}

// Usage event statuses: the call succeeded, failed, or was stopped or
// cancelled (by someone, or by the server stopping) before it finished; a
// cancelled call's partial usage counts as any other's.
const (
	UsageOK        = "ok"
	UsageError     = "error"
	UsageCancelled = "cancelled"
)

// UsageSources are what a metered call may be for: agent executions,
// chat, live sessions, scout, autopilot, content intelligence (cie),
// search, and credential tests. The table's CHECK lists the same.
var UsageSources = []string{"execution", "chat", "live", "scout", "autopilot", "cie", "search", "test"}

// RecordUsage stores a usage event.
func (db *DB) RecordUsage(ctx context.Context, e UsageEvent) (int64, error) {
	if e.CreatedAt.IsZero() {
		e.CreatedAt = db.Now()
	}
	id, err := db.insert(ctx, `INSERT INTO usage_events (created_at, provider, model, input_tokens, output_tokens, cached_tokens,
		cost_micros, latency_ms, status, error, source, user_id, environment_id, agent_id, credential_id, estimated)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
		fmtTime(e.CreatedAt), e.Provider, e.Model, e.InputTokens, e.OutputTokens, e.CachedTokens, e.Cost, e.LatencyMS,
		e.Status, e.Error, e.Source, e.UserID, e.EnvironmentID, e.AgentID, e.CredentialID, e.Estimated)
	if err != nil {
		return 0, translate(err, "usage event")
	}
	return id, nil
}

// UsageFilter narrows the usage queries. Scope keeps only the events the
// caller may see: those of visible environments, and the caller's own
// events outside any environment (Scope.SeesOwned). The zero Scope sees
// nothing; store.Everything sees every event.
type UsageFilter struct {
	From, To *time.Time // [From, To)
	UsageMatch
	Scope Scope
}

// UsageMatch is what the events of a usage query match besides their time
// and scope; a nil or "" field matches any.
type UsageMatch struct {
	UserID        *int64
	EnvironmentID *int64
	AgentID       *int64
	Model         string
	Source        string
	Status        string
}

// conds renders the filter as conditions on usage_events u, to be joined
// with AND, and their arguments.
func (f UsageFilter) conds() ([]string, []any) { return f.condsScopedOn("u.environment_id") }

// listConds is conds for a list in time order. The unary + keeps SQLite
// from answering the tenancy scope with the environment index: that would
// gather every event of the scope's environments and sort them, where
// walking the time index stops once a page is full (TestListQueryPlans).
func (f UsageFilter) listConds() ([]string, []any) { return f.condsScopedOn("+u.environment_id") }

// condsScopedOn is conds with envCol as the environment column of the
// tenancy scope.
func (f UsageFilter) condsScopedOn(envCol string) ([]string, []any) {
	var where []string
	var args []any
	if f.From != nil {
		where, args = append(where, "u.created_at >= ?"), append(args, fmtTime(*f.From))
	}
	if f.To != nil {
		where, args = append(where, "u.created_at < ?"), append(args, fmtTime(*f.To))
	}
	if f.UserID != nil {
		where, args = append(where, "u.user_id = ?"), append(args, *f.UserID)
	}
	if f.EnvironmentID != nil {
		where, args = append(where, "u.environment_id = ?"), append(args, *f.EnvironmentID)
	}
	if f.AgentID != nil {
		where, args = append(where, "u.agent_id = ?"), append(args, *f.AgentID)
	}
	if f.Model != "" {
		where, args = append(where, "u.model = ?"), append(args, f.Model)
	}
	if f.Source != "" {
		where, args = append(where, "u.source = ?"), append(args, f.Source)
	}
	if f.Status != "" {
		where, args = append(where, "u.status = ?"), append(args, f.Status)
	}
	if cond, scopeArgs := f.Scope.ownedIn(envCol, "u.user_id"); cond != "" {
		where, args = append(where, cond), append(args, scopeArgs...)
	}
	return where, args
}

// where is conds as a WHERE clause, "" when nothing narrows.
func (f UsageFilter) where() (string, []any) {
	where, args := f.conds()
	if len(where) == 0 {
		return "", nil
	}
	return " WHERE " + strings.Join(where, " AND "), args
}

const usageColumns = `u.id, u.created_at, u.provider, u.model, u.input_tokens, u.output_tokens, u.cached_tokens, u.cost_micros,
	u.latency_ms, u.status, u.error, u.source, u.user_id, u.environment_id, u.agent_id, u.credential_id, u.estimated`

func scanUsage(row rowScanner) (*UsageEvent, error) {
	var e UsageEvent
	var created string
	var cost sql.NullInt64
	var user, env, agent, cred sql.NullInt64
	if err := row.Scan(&e.ID, &created, &e.Provider, &e.Model, &e.InputTokens, &e.OutputTokens, &e.CachedTokens, &cost,
		&e.LatencyMS, &e.Status, &e.Error, &e.Source, &user, &env, &agent, &cred, &e.Estimated); err != nil {
		return nil, err
	}
	e.CreatedAt = parseTime(created)
	e.Cost = nullMicros(cost)
	e.UserID, e.EnvironmentID, e.AgentID, e.CredentialID = nullID(user), nullID(env), nullID(agent), nullID(cred)
	return &e, nil
}

// nullMicros is a nullable micro-dollar column as a pointer: nil for NULL
// (a cost nobody knows, never a cost of zero).
func nullMicros(n sql.NullInt64) *Micros {
	if !n.Valid {
		return nil
	}
	m := Micros(n.Int64)
	return &m
}

func nullID(n sql.NullInt64) *int64 {
	if !n.Valid {
		return nil
	}
	return &n.Int64
}

// ListUsage lists events newest first.
func (db *DB) ListUsage(ctx context.Context, f UsageFilter, p Page) ([]*UsageEvent, int, error) {
	where, args := f.listConds()
	return listPage(ctx, db, listQuery{from: "usage_events u", where: where, args: args, columns: usageColumns,
		order: "u.created_at DESC, u.id DESC", what: "usage"}, p, scanUsage)
}

// EachUsage calls fn for every matching event, oldest first (CSV export).
// It walks the time index, whatever the filter, so that the first events
// go out at once instead of after a sort of all of them.
func (db *DB) EachUsage(ctx context.Context, f UsageFilter, fn func(*UsageEvent) error) error {
	cond, args := f.where()
	rows, err := db.listRows(ctx, `SELECT `+usageColumns+` FROM usage_events u INDEXED BY usage_events_time`+cond+
		` ORDER BY u.created_at, u.id`, args...)
	if err != nil {
		return fmt.Errorf("store: export usage: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		e, err := scanUsage(rows)
		if err != nil {
			return fmt.Errorf("store: export usage: %w", err)
		}
		if err := fn(e); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("store: export usage: %w", err)
	}
	return nil
}

// UsageTotals sums a set of events. Cost adds the known costs, exactly
// (integer micro-dollars); UnpricedCalls counts the calls whose cost is
// unknown.
type UsageTotals struct {
	Key           string // the group: a day, a model, an id
	Label         string // a name for the group, when it has one
	Calls         int64
	Errors        int64
	Cancelled     int64
	InputTokens   int64
	OutputTokens  int64
	CachedTokens  int64
	Cost          Micros
	UnpricedCalls int64
	AvgLatencyMS  float64
}

const totalsColumns = `COUNT(*), COALESCE(SUM(CASE WHEN u.status = 'error' THEN 1 ELSE 0 END), 0),
	COALESCE(SUM(CASE WHEN u.status = 'cancelled' THEN 1 ELSE 0 END), 0), COALESCE(SUM(u.input_tokens), 0),
	COALESCE(SUM(u.output_tokens), 0), COALESCE(SUM(u.cached_tokens), 0), COALESCE(SUM(u.cost_micros), 0),
	COALESCE(SUM(CASE WHEN u.cost_micros IS NULL THEN 1 ELSE 0 END), 0), COALESCE(AVG(u.latency_ms), 0)`

func scanTotals(row rowScanner, t *UsageTotals, extra ...any) error {
	return row.Scan(append(extra, &t.Calls, &t.Errors, &t.Cancelled, &t.InputTokens, &t.OutputTokens, &t.CachedTokens, &t.Cost,
		&t.UnpricedCalls, &t.AvgLatencyMS)...)
}

// KnownCost is the total's cost for the API: nil when there were calls
// and none of them had a known cost (a local model's), never a cost of 0.
func (t *UsageTotals) KnownCost() *Micros {
	if t.Calls > 0 && t.UnpricedCalls == t.Calls {
		return nil
	}
	return &t.Cost
}

// UsageSummary totals the matching events.
func (db *DB) UsageSummary(ctx context.Context, f UsageFilter) (*UsageTotals, error) {
	cond, args := f.where()
	var t UsageTotals
	if err := scanTotals(db.r.QueryRowContext(ctx, `SELECT `+totalsColumns+` FROM usage_events u`+cond, args...), &t); err != nil {
		return nil, fmt.Errorf("store: usage summary: %w", err)
	}
	return &t, nil
}

// Usage groupings.
const (
	GroupByDay         = "day"
	GroupByModel       = "model"
	GroupByAgent       = "agent"
	GroupByEnvironment = "environment"
	GroupByUser        = "user"
	GroupBySource      = "source"
)

// groupingOf is a grouping's column, its key as text ("" for none), its
// label and the label's join. Groups of equal cost come in the column's
// order, none last. (A switch, not a map: nothing built at every start.)
func groupingOf(by string) (g struct{ group, key, label, join string }, ok bool) {
	switch by {
	case GroupByDay:
		g.group, g.key, g.label = "substr(u.created_at, 1, 10)", "substr(u.created_at, 1, 10)", "''"
	case GroupByModel:
		g.group, g.key, g.label = "u.model", "u.model", "''"
	case GroupByAgent:
		g.group, g.key, g.label, g.join = "u.agent_id", "COALESCE(CAST(u.agent_id AS TEXT), '')", "COALESCE(a.name, '')", " LEFT JOIN agents a ON a.id = u.agent_id"
	case GroupByEnvironment:
		g.group, g.key, g.label, g.join = "u.environment_id", "COALESCE(CAST(u.environment_id AS TEXT), '')", "COALESCE(e.name, '')", " LEFT JOIN environments e ON e.id = u.environment_id"
	case GroupByUser:
		g.group, g.key, g.label, g.join = "u.user_id", "COALESCE(CAST(u.user_id AS TEXT), '')", "COALESCE(us.username, '')", " LEFT JOIN users us ON us.id = u.user_id"
	case GroupBySource:
		g.group, g.key, g.label = "u.source", "u.source", "''"
	default:
		return g, false
	}
	return g, true
}

// UsageSeries totals the matching events per group: per day (oldest
// first), or per model, agent, environment, user or source (costliest
// first).
func (db *DB) UsageSeries(ctx context.Context, f UsageFilter, groupBy string) ([]*UsageTotals, error) {
	g, ok := groupingOf(groupBy)
	if !ok {
		// The service offers only known groupings (server/analytics).
		return nil, fmt.Errorf("store: usage series: unknown grouping %q", groupBy)
	}
	cond, args := f.where()
	order := "COALESCE(SUM(u.cost_micros), 0) DESC, " + g.group + " IS NULL, " + g.group
	if groupBy == GroupByDay {
		order = g.group
	}
	rows, err := db.r.QueryContext(ctx, `SELECT `+g.key+`, MAX(`+g.label+`), `+totalsColumns+` FROM usage_events u`+g.join+cond+
		` GROUP BY `+g.group+` ORDER BY `+order, args...)
	if err != nil {
		return nil, fmt.Errorf("store: usage series: %w", err)
	}
	defer rows.Close()
	out := []*UsageTotals{}
	for rows.Next() {
		var t UsageTotals
		var key any
		if err := scanTotals(rows, &t, &key, &t.Label); err != nil {
			return nil, fmt.Errorf("store: usage series: %w", err)
		}
		t.Key = fmt.Sprint(key)
		out = append(out, &t)
	}
	return out, rows.Err()
}

// UsagePeriods totals the matching events per period, oldest first:
// bounds are the n+1 instants that delimit n periods (the days of a time
// zone, computed by the caller: a day of a zone with daylight saving time
// may last 23 or 25 hours), keys their n names. Only f's other filters
// apply: the range is [bounds[0], bounds[n]), so the time index serves the
// query, and one CASE over the bounds names each event's period, on both
// engines (created_at is text in one format: its order is time's order).
// Periods without events are left out.
func (db *DB) UsagePeriods(ctx context.Context, f UsageFilter, bounds []time.Time, keys []string) ([]*UsageTotals, error) {
	if len(bounds) != len(keys)+1 || len(keys) == 0 {
		return nil, fmt.Errorf("store: usage periods: %d bounds for %d keys", len(bounds), len(keys))
	}
	var sel strings.Builder
	args := make([]any, 0, len(keys)+8)
	sel.WriteString("CASE")
	for i, k := range keys {
		// The keys are the caller's own names (dates), written as literals:
		// PostgreSQL cannot type a parameter in a grouped SELECT list.
		sel.WriteString(" WHEN u.created_at < ? THEN '" + strings.ReplaceAll(k, "'", "''") + "'")
		args = append(args, fmtTime(bounds[i+1]))
	}
	sel.WriteString(" END")
	from, to := bounds[0], bounds[len(keys)]
	f.From, f.To = &from, &to
	cond, condArgs := f.where()
	rows, err := db.r.QueryContext(ctx, `SELECT `+sel.String()+`, `+totalsColumns+` FROM usage_events u`+cond+` GROUP BY 1 ORDER BY 1`,
		append(args, condArgs...)...)
	if err != nil {
		return nil, fmt.Errorf("store: usage periods: %w", err)
	}
	defer rows.Close()
	out := []*UsageTotals{}
	for rows.Next() {
		var t UsageTotals
		if err := scanTotals(rows, &t, &t.Key); err != nil {
			return nil, fmt.Errorf("store: usage periods: %w", err)
		}
		out = append(out, &t)
	}
	return out, rows.Err()
}

// UsageSeriesQuery is the day series' SQL for a date range, for EXPLAIN
// QUERY PLAN in tests.
const UsageSeriesQuery = `SELECT substr(u.created_at, 1, 10), ` + totalsColumns +
	` FROM usage_events u WHERE u.created_at >= ? AND u.created_at < ? GROUP BY 1 ORDER BY 1`

// Spend is what an environment's calls used over a time: their known
// costs, and their tokens (input and output), priced or not.
type Spend struct {
	Cost   Micros
	Tokens int64
}

// EnvironmentSpendSince sums the known costs and the tokens of an
// environment's events since t: what its budgets are checked against.
func (db *DB) EnvironmentSpendSince(ctx context.Context, envID int64, t time.Time) (Spend, error) {
	var s Spend
	err := db.r.QueryRowContext(ctx, `SELECT COALESCE(SUM(cost_micros), 0), COALESCE(SUM(input_tokens + output_tokens), 0)
		FROM usage_events WHERE environment_id = ? AND created_at >= ?`, envID, fmtTime(t)).Scan(&s.Cost, &s.Tokens)
	if err != nil {
		return s, fmt.Errorf("store: environment spend: %w", err)
	}
	return s, nil
}

// MarkBudgetAlert records that an environment crossed threshold percent of
// a budget in month: YYYY-MM for its money budget, "YYYY-MM tokens" for
// its token budget; false when that was already recorded.
func (db *DB) MarkBudgetAlert(ctx context.Context, envID int64, month string, threshold int) (bool, error) {
	res, err := db.exec(ctx, `INSERT INTO budget_alerts (environment_id, month, threshold, created_at) VALUES (?, ?, ?, ?)
		ON CONFLICT DO NOTHING`, envID, month, threshold, db.now())
	if err != nil {
		return false, fmt.Errorf("store: budget alert: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("store: budget alert: %w", err)
	}
	return n == 1, nil
}
