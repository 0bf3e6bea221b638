package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// Web sources and their items (issue 14).

// Kinds of web source.
const (
	SourceRSS  = "rss"
	SourceAtom = "atom"
	SourcePage = "page"
)

// WebSource is a feed or a page one environment follows.
type WebSource struct {
	ID            int64
	EnvironmentID int64
	URL           string
	Kind          string
	IsActive      bool
	// FetchInterval is the time between fetches.
	FetchInterval time.Duration
	// NextFetchAt is when the source is due; nil while inactive.
	NextFetchAt   *time.Time
	LastFetchedAt *time.Time
	// LastStatus is the HTTP status of the last answer; nil when none
	// came (never fetched, or a network failure).
	LastStatus *int
	LastError  string
	// ConsecutiveFailures is how many fetches in a row have failed; 0
	// after a success (a 304 too) and after a new URL or kind.
	ConsecutiveFailures int
	// ETag and LastModified are the validators of the last answer that
	// had content, sent back for a conditional GET.
	ETag         string
	LastModified string
	CreatedBy    *int64
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

const webSourceColumns = `s.id, s.environment_id, s.url, s.kind, s.is_active, s.fetch_interval, s.next_fetch_at, s.last_fetched_at,
	s.last_status, s.last_error, s.consecutive_failures, s.etag, s.last_modified, s.created_by, s.created_at, s.updated_at`

func scanWebSource(row rowScanner) (*WebSource, error) {
	var s WebSource
	var interval int64
	var next, fetched sql.NullString
	var status, by sql.NullInt64
	var created, updated string
	if err := row.Scan(&s.ID, &s.EnvironmentID, &s.URL, &s.Kind, &s.IsActive, &interval, &next, &fetched, &status, &s.LastError,
		&s.ConsecutiveFailures, &s.ETag, &s.LastModified, &by, &created, &updated); err != nil {
		return nil, err
	}
	s.FetchInterval = time.Duration(interval) * time.Second
	s.NextFetchAt, s.LastFetchedAt, s.CreatedBy = parseNullTime(next), parseNullTime(fetched), nullID(by)
	if status.Valid {
		n := int(status.Int64)
		s.LastStatus = &n
	}
	s.CreatedAt, s.UpdatedAt = parseTime(created), parseTime(updated)
	return &s, nil
}

// sourceTaken is the conflict of a URL the environment follows already.
func sourceTaken(err error) error {
	if KindOf(err) == KindConflict {
		return &Error{Kind: KindConflict, Message: "url: this environment follows this address already", Err: err}
	}
	return err
}

// NewWebSource is what CreateWebSource needs.
type NewWebSource struct {
	EnvironmentID int64
	URL           string
	Kind          string
	IsActive      bool
	FetchInterval time.Duration // whole seconds
	CreatedBy     *int64
}

// CreateWebSource inserts a source, due at once when active.
func (db *DB) CreateWebSource(ctx context.Context, n NewWebSource) (*WebSource, error) {
	now := db.now()
	var next any
	if n.IsActive {
		next = now
	}
	s, err := insertRow(ctx, db, scanWebSource, `INSERT INTO web_sources (environment_id, url, kind, is_active, fetch_interval, next_fetch_at,
		created_by, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING `+returning(webSourceColumns),
		n.EnvironmentID, n.URL, n.Kind, n.IsActive, int64(n.FetchInterval/time.Second), next, n.CreatedBy, now, now)
	if err != nil {
		return nil, sourceTaken(translate(err, "web source"))
	}
	return s, nil
}

// WebSourceByID finds a source.
func (db *DB) WebSourceByID(ctx context.Context, id int64) (*WebSource, error) {
	return findRow(ctx, db, scanWebSource, "web source", `SELECT `+webSourceColumns+` FROM web_sources s WHERE s.id = ?`, id)
}

// webSourceTx reads a source in tx, for a change that depends on what it
// holds: no row is not found, as for WebSourceByID.
func webSourceTx(ctx context.Context, tx *sql.Tx, id int64) (*WebSource, error) {
	return findIn(ctx, tx, scanWebSource, "web source", `SELECT `+webSourceColumns+` FROM web_sources s WHERE s.id = ?`, id)
}

// WebSourceFilter narrows ListWebSources.
type WebSourceFilter struct {
	Scope         Scope
	EnvironmentID *int64
	IsActive      *bool
	// Failing: true keeps the sources whose last fetch failed
	// (consecutive_failures > 0), false the others.
	Failing *bool
	Q       string // part of the URL
	Sort    Sort   // by webSourceSorts; newest first by default
	Page
}

var webSourceSorts = map[string]string{"url": "s.url", "created_at": "s.created_at", "last_fetched_at": "s.last_fetched_at"}

var webSourceIndexes = map[string][2]string{
	"url":             {"web_sources_url", "web_sources_url_env"},
	"created_at":      {"web_sources_created", "web_sources_env_created"},
	"last_fetched_at": {"web_sources_fetched", "web_sources_env_fetched"},
}

func (WebSourceFilter) sortColumns() map[string]string { return webSourceSorts }

// ListWebSources lists the sources the filter's scope sees.
func (db *DB) ListWebSources(ctx context.Context, f WebSourceFilter) ([]*WebSource, int, error) {
	q, err := sortedList("web_sources s", "s", webSourceSorts, webSourceIndexes, f.Sort, f.Scope, f.EnvironmentID, f.IsActive)
	if err != nil {
		return nil, 0, err
	}
	if f.Failing != nil {
		cond := "s.consecutive_failures = 0"
		if *f.Failing {
			cond = "s.consecutive_failures > 0"
		}
		q.where = append(q.where, cond)
	}
	if s := strings.TrimSpace(f.Q); s != "" {
		q.where, q.args = append(q.where, `s.url LIKE ? ESCAPE '\'`), append(q.args, likePattern(s))
	}
	q.columns, q.what = webSourceColumns, "web sources"
	return listPage(ctx, db, q, f.Page, scanWebSource)
}

// WebSourceUpdate holds the fields to change; nil leaves one alone.
type WebSourceUpdate struct {
	URL           *string
	Kind          *string
	IsActive      *bool
	FetchInterval *time.Duration
	// Delay is the service's schedule (see WebFetch.Delay), for when the
	// source is next due; nil: its interval.
	Delay Delay
}

// Delay is how long after a fetch a source is next due, given its
// interval and its consecutive failures counting that fetch (0 after a
// success). It is the service's rule (server/websource); the store
// applies it in the transaction that reads and writes the count.
type Delay func(interval time.Duration, failures int) time.Duration

func (d Delay) after(interval time.Duration, failures int) time.Duration {
	if d == nil {
		return interval
	}
	return d(interval, failures)
}

// UpdateWebSource changes a source. A new URL or kind drops the
// validators and the count of failures (they belong to the old request)
// and makes the source due at once; otherwise it is next due the delay
// its failures call for after its last fetch (at once if never fetched),
// or never while inactive.
func (db *DB) UpdateWebSource(ctx context.Context, id int64, up WebSourceUpdate) (*WebSource, error) {
	err := db.tx(ctx, func(tx *sql.Tx) error {
		s, err := webSourceTx(ctx, tx, id)
		if err != nil {
			return err
		}
		fresh := (up.URL != nil && *up.URL != s.URL) || (up.Kind != nil && *up.Kind != s.Kind)
		if up.URL != nil {
			s.URL = *up.URL
		}
		if up.Kind != nil {
			s.Kind = *up.Kind
		}
		if up.IsActive != nil {
			s.IsActive = *up.IsActive
		}
		if up.FetchInterval != nil {
			s.FetchInterval = *up.FetchInterval
		}
		if fresh {
			s.ETag, s.LastModified, s.ConsecutiveFailures = "", "", 0
		}
		var next any
		if s.IsActive {
			due := db.Now()
			if s.LastFetchedAt != nil && !fresh {
				due = s.LastFetchedAt.Add(up.Delay.after(s.FetchInterval, s.ConsecutiveFailures))
			}
			next = fmtTime(due)
		}
		_, err = tx.ExecContext(ctx, `UPDATE web_sources SET url = ?, kind = ?, is_active = ?, fetch_interval = ?, next_fetch_at = ?,
			etag = ?, last_modified = ?, consecutive_failures = ?, updated_at = ? WHERE id = ?`, s.URL, s.Kind, s.IsActive,
			int64(s.FetchInterval/time.Second), next, s.ETag, s.LastModified, s.ConsecutiveFailures, db.now(), id)
		return sourceTaken(translate(err, "web source"))
	})
	if err != nil {
		return nil, err
	}
	return db.WebSourceByID(ctx, id)
}

// DeleteWebSource deletes a source and its items.
func (db *DB) DeleteWebSource(ctx context.Context, id int64) error {
	return db.deleteByID(ctx, "web_sources", "web source", id)
}

// DeleteWebSources deletes, in one statement, the sources of ids the scope
// sees, with their items; the others are skipped. It reports how many
// were deleted.
func (db *DB) DeleteWebSources(ctx context.Context, sc Scope, ids []int64) (int, error) {
	return db.deleteScoped(ctx, "web_sources", sc, ids)
}

// NextWebSourceFetch is when the earliest active source is due; nil when
// no source is active.
func (db *DB) NextWebSourceFetch(ctx context.Context) (*time.Time, error) {
	var next sql.NullString
	err := db.r.QueryRowContext(ctx, `SELECT MIN(next_fetch_at) FROM web_sources WHERE is_active = 1`).Scan(&next)
	if err != nil {
		return nil, fmt.Errorf("store: next web source fetch: %w", err)
	}
	return parseNullTime(next), nil
}

// DueWebSources lists up to limit active sources due at now, the longest
// due first.
func (db *DB) DueWebSources(ctx context.Context, now time.Time, limit int) ([]*WebSource, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT `+webSourceColumns+` FROM web_sources s INDEXED BY web_sources_due
		WHERE s.is_active = 1 AND s.next_fetch_at <= ? ORDER BY s.next_fetch_at, s.id LIMIT ?`, fmtTime(now), limit)
	if err != nil {
		return nil, fmt.Errorf("store: due web sources: %w", err)
	}
	defer rows.Close()
	var out []*WebSource
	for rows.Next() {
		s, err := scanWebSource(rows)
		if err != nil {
			return nil, fmt.Errorf("store: due web sources: %w", err)
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// NewWebItem is an item a fetch found.
type NewWebItem struct {
	// Key identifies the item within its source: its guid, else its link
	// (the service's rule).
	Key         string
	GUID        string
	Link        string
	Title       string
	Summary     string
	Content     string
	PublishedAt *time.Time
}

// WebFetch is the outcome of one fetch of a source.
type WebFetch struct {
	// URL is the address fetched: a source whose URL changed meanwhile
	// keeps nothing of the fetch.
	URL         string
	Status      *int
	Error       string
	NotModified bool
	// ETag and LastModified replace the stored validators when the answer
	// had content.
	ETag         string
	LastModified string
	Items        []NewWebItem
	// Delay is the service's schedule: the source is next due this long
	// after now, given its interval and its failures counting this fetch;
	// nil: its interval.
	Delay Delay
}

// WebFetchRecord is what RecordWebSourceFetch did.
type WebFetchRecord struct {
	// Recorded is false when the source's URL changed while it was
	// fetched: nothing was kept.
	Recorded bool
	NewItems int
	// FailuresBefore and FailuresAfter are the source's consecutive
	// failures before this fetch and as this fetch wrote them, read in
	// its transaction: another fetch of the source (the schedule's and a
	// POST .../fetch) may record its own at any time after, so only these
	// say which crossing this fetch made.
	FailuresBefore int
	FailuresAfter  int
	Source         *WebSource // as this fetch left it, read in its transaction
}

// RecordWebSourceFetch stores what a fetch found, in one transaction: the
// items the source has not got yet (by Key), the outcome, the count of
// consecutive failures (one more after a failure, 0 after a success) and
// when it is due next (f.Delay from now).
func (db *DB) RecordWebSourceFetch(ctx context.Context, id int64, f WebFetch) (*WebFetchRecord, error) {
	rec := &WebFetchRecord{}
	err := db.tx(ctx, func(tx *sql.Tx) error {
		s, err := webSourceTx(ctx, tx, id)
		if err != nil {
			return err
		}
		rec.FailuresBefore, rec.FailuresAfter, rec.Source = s.ConsecutiveFailures, s.ConsecutiveFailures, s
		if s.URL != f.URL {
			return nil // changed while it was fetched: that fetch is due now
		}
		rec.Recorded = true
		now := db.Now()
		at := fmtTime(now)
		for _, it := range f.Items {
			res, err := tx.ExecContext(ctx, `INSERT INTO web_items (source_id, environment_id, item_key, guid, link, title, summary, content,
				published_at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (source_id, item_key) DO NOTHING`,
				id, s.EnvironmentID, it.Key, it.GUID, it.Link, it.Title, it.Summary, it.Content, nullTime(it.PublishedAt), at)
			if err != nil {
				return translate(err, "item")
			}
			n, _ := res.RowsAffected()
			rec.NewItems += int(n)
		}
		etag, modified, failures := s.ETag, s.LastModified, 0
		switch {
		case f.Error != "":
			failures = s.ConsecutiveFailures + 1
		case !f.NotModified:
			etag, modified = f.ETag, f.LastModified
		}
		var next any
		if s.IsActive {
			next = fmtTime(now.Add(f.Delay.after(s.FetchInterval, failures)))
		}
		_, err = tx.ExecContext(ctx, `UPDATE web_sources SET last_fetched_at = ?, last_status = ?, last_error = ?, etag = ?, last_modified = ?,
			consecutive_failures = ?, next_fetch_at = ? WHERE id = ?`, at, f.Status, f.Error, etag, modified, failures, next, id)
		if err != nil {
			return err
		}
		rec.FailuresAfter = failures
		rec.Source, err = webSourceTx(ctx, tx, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	return rec, nil
}

// WebItem is an item of a web source.
type WebItem struct {
	ID            int64
	SourceID      int64
	EnvironmentID int64
	GUID          string
	Link          string
	Title         string
	Summary       string
	Content       string
	PublishedAt   *time.Time
	CreatedAt     time.Time
}

const webItemColumns = `w.id, w.source_id, w.environment_id, w.guid, w.link, w.title, w.summary, w.content, w.published_at, w.created_at`

func scanWebItem(row rowScanner) (*WebItem, error) {
	var w WebItem
	var published sql.NullString
	var created string
	if err := row.Scan(&w.ID, &w.SourceID, &w.EnvironmentID, &w.GUID, &w.Link, &w.Title, &w.Summary, &w.Content, &published, &created); err != nil {
		return nil, err
	}
	w.PublishedAt, w.CreatedAt = parseNullTime(published), parseTime(created)
	return &w, nil
}

// WebItemFilter narrows ListWebItems.
type WebItemFilter struct {
	Sort Sort // by webItemSorts; the latest published first by default
	Page
}

var webItemSorts = map[string]string{"published_at": "w.published_at", "created_at": "w.created_at"}

func (WebItemFilter) sortColumns() map[string]string { return webItemSorts }

// webItems are a source's items, the latest published first by default.
var webItems = children{table: "web_items", alias: "w", parent: "source_id", sorts: webItemSorts,
	byDefault: Sort{Field: "published_at", Desc: true}, indexes: map[string]string{"created_at": "web_items_created", "": "web_items_published"},
	columns: webItemColumns, what: "items"}

// ListWebItems lists a source's items. Items without a date come last
// in the default order (published_at descending).
func (db *DB) ListWebItems(ctx context.Context, sourceID int64, f WebItemFilter) ([]*WebItem, int, error) {
	return listChildren(ctx, db, webItems, sourceID, f.Sort, nil, nil, f.Page, scanWebItem)
}

// ListRecentWebItems lists the items of an environment's sources, the
// latest stored first: the scout's reading.
func (db *DB) ListRecentWebItems(ctx context.Context, envID int64, f RecentFilter) ([]*WebItem, int, error) {
	where, args := recentWhere("w", envID, f.Since)
	return listPage(ctx, db, listQuery{from: "web_items w INDEXED BY web_items_env", count: "web_items w", where: where, args: args,
		columns: webItemColumns, order: "w.created_at DESC, w.id DESC", what: "items"}, f.Page, scanWebItem)
}
