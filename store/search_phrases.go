package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Search phrases and the ideas their runs find (issue 14).

// Run states of a search phrase.
const (
	PhraseIdle      = "idle" // never run
	PhraseQueued    = "queued"
	PhraseRunning   = "running"
	PhraseSucceeded = "succeeded"
	PhraseFailed    = "failed"
	PhraseCancelled = "cancelled"
)

// SearchPhrase is a query researched in one environment and locale.
type SearchPhrase struct {
	ID            int64
	EnvironmentID int64
	Phrase        string
	// PhraseKey is Phrase normalised (the service's rule): unique per
	// environment and locale.
	PhraseKey string
	Locale    string
	IsActive  bool
	// RefreshInterval is the time between scheduled runs; 0: the phrase
	// runs on demand only.
	RefreshInterval time.Duration
	// NextRunAt is when a scheduled run is due; nil while inactive,
	// without an interval, or while a run is queued or running.
	NextRunAt    *time.Time
	RunStatus    string
	RunJobID     *int64
	LastRunAt    *time.Time
	LastRunError string
	// LastRunIdeas is how many new ideas the last run stored.
	LastRunIdeas int
	CreatedBy    *int64
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// Running reports whether a run of the phrase is queued or under way.
func (p *SearchPhrase) Running() bool {
	return p.RunStatus == PhraseQueued || p.RunStatus == PhraseRunning
}

const searchPhraseColumns = `p.id, p.environment_id, p.phrase, p.phrase_key, p.locale, p.is_active, p.refresh_interval, p.next_run_at,
	p.run_status, p.run_job_id, p.last_run_at, p.last_run_error, p.last_run_ideas, p.created_by, p.created_at, p.updated_at`

func scanSearchPhrase(row rowScanner) (*SearchPhrase, error) {
	var p SearchPhrase
	var interval int64
	var job, by sql.NullInt64
	var next, lastRun sql.NullString
	var created, updated string
	if err := row.Scan(&p.ID, &p.EnvironmentID, &p.Phrase, &p.PhraseKey, &p.Locale, &p.IsActive, &interval, &next, &p.RunStatus, &job,
		&lastRun, &p.LastRunError, &p.LastRunIdeas, &by, &created, &updated); err != nil {
		return nil, err
	}
	p.RefreshInterval = time.Duration(interval) * time.Second
	p.RunJobID, p.CreatedBy, p.NextRunAt, p.LastRunAt = nullID(job), nullID(by), parseNullTime(next), parseNullTime(lastRun)
	p.CreatedAt, p.UpdatedAt = parseTime(created), parseTime(updated)
	return &p, nil
}

// phraseTaken is the conflict of a phrase that exists in the environment
// and locale already.
func phraseTaken(err error) error {
	if KindOf(err) == KindConflict {
		return &Error{Kind: KindConflict, Message: "phrase: this environment has this phrase in this locale already", Err: err}
	}
	return err
}

// NewSearchPhrase is what CreateSearchPhrase needs.
type NewSearchPhrase struct {
	EnvironmentID int64
	Phrase        string
	PhraseKey     string
	Locale        string
	IsActive      bool
	// RefreshInterval is whole seconds; 0: on demand only.
	RefreshInterval time.Duration
	CreatedBy       *int64
}

// CreateSearchPhrase inserts a phrase, due at once when it is active and
// has a refresh interval; one with the same key and locale in the
// environment is a conflict.
func (db *DB) CreateSearchPhrase(ctx context.Context, n NewSearchPhrase) (*SearchPhrase, error) {
	now := db.now()
	var next any
	if n.IsActive && n.RefreshInterval > 0 {
		next = now
	}
	p, err := insertRow(ctx, db, scanSearchPhrase, `INSERT INTO search_phrases (environment_id, phrase, phrase_key, locale, is_active,
		refresh_interval, next_run_at, created_by, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING `+returning(searchPhraseColumns),
		n.EnvironmentID, n.Phrase, n.PhraseKey, n.Locale, n.IsActive, int64(n.RefreshInterval/time.Second), next, n.CreatedBy, now, now)
	if err != nil {
		return nil, phraseTaken(translate(err, "search phrase"))
	}
	return p, nil
}

// SearchPhraseByID finds a phrase.
func (db *DB) SearchPhraseByID(ctx context.Context, id int64) (*SearchPhrase, error) {
	return findRow(ctx, db, scanSearchPhrase, "search phrase", `SELECT `+searchPhraseColumns+` FROM search_phrases p WHERE p.id = ?`, id)
}

// SearchPhraseFilter narrows ListSearchPhrases.
type SearchPhraseFilter struct {
	Scope         Scope
	EnvironmentID *int64
	IsActive      *bool
	Q             string
	Sort          Sort // by searchPhraseSorts; newest first by default
	Page
}

// searchPhraseSorts are the fields phrases sort by, each led by an index
// over every environment and one within one (migration 0017).
var searchPhraseSorts = map[string]string{"phrase": "p.phrase_key", "created_at": "p.created_at", "last_run_at": "p.last_run_at"}

func (SearchPhraseFilter) sortColumns() map[string]string { return searchPhraseSorts }

// searchPhraseIndexes are the indexes a page walks for each sort field:
// over every environment, and within one.
var searchPhraseIndexes = map[string][2]string{
	"phrase":      {"search_phrases_phrase", "search_phrases_env_phrase"},
	"created_at":  {"search_phrases_created", "search_phrases_env_created"},
	"last_run_at": {"search_phrases_run", "search_phrases_env_run"},
}

// ListSearchPhrases lists the phrases the filter's scope sees.
func (db *DB) ListSearchPhrases(ctx context.Context, f SearchPhraseFilter) ([]*SearchPhrase, int, error) {
	q, err := sortedList("search_phrases p", "p", searchPhraseSorts, searchPhraseIndexes, f.Sort, f.Scope, f.EnvironmentID, f.IsActive)
	if err != nil {
		return nil, 0, err
	}
	if s := strings.TrimSpace(f.Q); s != "" {
		q.where, q.args = append(q.where, `p.phrase LIKE ? ESCAPE '\'`), append(q.args, likePattern(s))
	}
	q.columns, q.what = searchPhraseColumns, "search phrases"
	return listPage(ctx, db, q, f.Page, scanSearchPhrase)
}

// sortedList is the list query of an environment-scoped table (alias a)
// that sorts by the fields of sorts, created_at descending by default: the
// page walks the index indexes names for the order (the second when one
// environment is asked for), checking the scope and the filters on the
// way, so no order ever sorts; the count picks its own index.
func sortedList(table, a string, sorts map[string]string, indexes map[string][2]string, sort Sort, sc Scope, envID *int64,
	active *bool) (listQuery, error) {
	if sort == (Sort{}) {
		sort = Sort{Field: "created_at", Desc: true}
	}
	order, err := sort.orderBy(sorts, "", a+".id")
	if err != nil {
		return listQuery{}, err
	}
	var where []string
	var args []any
	if cond, condArgs := sc.envIn(a + ".environment_id"); cond != "" {
		where, args = append(where, cond), append(args, condArgs...)
	}
	index := indexes[sort.Field][0]
	if envID != nil {
		where, args = append(where, a+".environment_id = ?"), append(args, *envID)
		index = indexes[sort.Field][1]
	}
	if active != nil {
		where, args = append(where, a+".is_active = ?"), append(args, *active)
	}
	return listQuery{from: table + " INDEXED BY " + index, count: table, where: where, args: args, order: order}, nil
}

// SearchPhraseUpdate holds the fields to change; nil leaves one alone.
// Phrase and PhraseKey change together.
type SearchPhraseUpdate struct {
	Phrase          *string
	PhraseKey       *string
	Locale          *string
	IsActive        *bool
	RefreshInterval *time.Duration // whole seconds; 0: on demand only
}

// UpdateSearchPhrase changes a phrase. It is next due (phraseDue) an
// interval after its last run, at once if it never ran; never while
// inactive or without an interval; and, while a run is queued or running,
// when that run ends.
func (db *DB) UpdateSearchPhrase(ctx context.Context, id int64, up SearchPhraseUpdate) (*SearchPhrase, error) {
	err := db.tx(ctx, func(tx *sql.Tx) error {
		p, err := findIn(ctx, tx, scanSearchPhrase, "search phrase", `SELECT `+searchPhraseColumns+` FROM search_phrases p WHERE p.id = ?`, id)
		if err != nil {
			return err
		}
		if up.Phrase != nil && up.PhraseKey != nil {
			p.Phrase, p.PhraseKey = *up.Phrase, *up.PhraseKey
		}
		if up.Locale != nil {
			p.Locale = *up.Locale
		}
		if up.IsActive != nil {
			p.IsActive = *up.IsActive
		}
		if up.RefreshInterval != nil {
			p.RefreshInterval = *up.RefreshInterval
		}
		var next any
		if !p.Running() {
			next = phraseDue(p, db.Now())
		}
		_, err = tx.ExecContext(ctx, `UPDATE search_phrases SET phrase = ?, phrase_key = ?, locale = ?, is_active = ?, refresh_interval = ?,
			next_run_at = ?, updated_at = ? WHERE id = ?`, p.Phrase, p.PhraseKey, p.Locale, p.IsActive, int64(p.RefreshInterval/time.Second),
			next, db.now(), id)
		return phraseTaken(translate(err, "search phrase"))
	})
	if err != nil {
		return nil, err
	}
	return db.SearchPhraseByID(ctx, id)
}

// phraseDue is when an idle phrase is next due, as stored (nil: never):
// an interval after its last run, or now if it never ran, while it is
// active with an interval.
func phraseDue(p *SearchPhrase, now time.Time) any {
	if !p.IsActive || p.RefreshInterval <= 0 {
		return nil
	}
	if p.LastRunAt != nil {
		return fmtTime(p.LastRunAt.Add(p.RefreshInterval))
	}
	return fmtTime(now)
}

// DeleteSearchPhrase deletes a phrase and its ideas. A queued run's job
// finds nothing to do.
func (db *DB) DeleteSearchPhrase(ctx context.Context, id int64) error {
	return db.deleteByID(ctx, "search_phrases", "search phrase", id)
}

// DeleteSearchPhrases deletes, in one statement, the phrases of ids the
// scope sees, with their ideas; the others are skipped. It reports how
// many were deleted.
func (db *DB) DeleteSearchPhrases(ctx context.Context, sc Scope, ids []int64) (int, error) {
	return db.deleteScoped(ctx, "search_phrases", sc, ids)
}

// deleteScoped deletes the rows of table (which has environment_id) with
// ids that the scope sees, in one statement, and reports how many.
func (db *DB) deleteScoped(ctx context.Context, table string, sc Scope, ids []int64) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	where := "id IN (?" + strings.Repeat(", ?", len(ids)-1) + ")"
	if cond, condArgs := sc.envIn("environment_id"); cond != "" {
		where, args = where+" AND "+cond, append(args, condArgs...)
	}
	res, err := db.exec(ctx, `DELETE FROM `+table+` WHERE `+where, args...)
	if err != nil {
		return 0, fmt.Errorf("store: delete from %s: %w", table, err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// QueueSearchPhraseRun marks a phrase queued and queues the job that runs
// it, in one transaction. A phrase whose run is queued or running already
// is a conflict, and nothing is queued. The caller tells the job runner.
func (db *DB) QueueSearchPhraseRun(ctx context.Context, id int64, j RunJob) (*SearchPhrase, error) {
	pj := PhraseRunJob{Kind: j.Kind, MaxAttempts: j.MaxAttempts, Payload: func(id int64, _ string) any { return j.Payload(id) }}
	var p *SearchPhrase
	err := db.tx(ctx, func(tx *sql.Tx) (err error) {
		if err = db.queuePhraseRunTx(ctx, tx, id, pj); err != nil {
			return err
		}
		// Read as queued, in the transaction: once it commits, a job
		// runner may take the run and end it before a later read.
		p, err = findIn(ctx, tx, scanSearchPhrase, "search phrase", `SELECT `+searchPhraseColumns+` FROM search_phrases p WHERE p.id = ?`, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// PhraseRunJob is RunJob for the runs QueueDueSearchPhraseRuns queues:
// Payload is made from the phrase's id and the status its previous run
// ended with (PhraseIdle when it has not run). Queueing overwrites that
// status (run_status becomes queued), so the job carries it to the run's
// end, which tells a new failure from one more of a streak by it.
type PhraseRunJob struct {
	Kind        string
	MaxAttempts int // 0: DefaultJobMaxAttempts
	Payload     func(phraseID int64, previous string) any
}

// queuePhraseRunTx is QueueSearchPhraseRun within tx. The phrase is not
// due while its run waits or runs (next_run_at NULL): the run's end says
// when it is next.
func (db *DB) queuePhraseRunTx(ctx context.Context, tx *sql.Tx, id int64, j PhraseRunJob) error {
	var status string
	err := tx.QueryRowContext(ctx, `SELECT run_status FROM search_phrases WHERE id = ?`, id).Scan(&status)
	if errors.Is(err, sql.ErrNoRows) {
		return NotFound("search phrase not found")
	}
	if err != nil {
		return err
	}
	if status == PhraseQueued || status == PhraseRunning {
		return Conflict("a run of this phrase is %s already: wait for it to end", status)
	}
	job, err := db.insertJobTx(ctx, tx, NewJob{Kind: j.Kind, Payload: j.Payload(id, status), MaxAttempts: j.MaxAttempts})
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `UPDATE search_phrases SET run_status = 'queued', run_job_id = ?, next_run_at = NULL WHERE id = ?`, job.ID, id)
	return err
}

// NextSearchPhraseRun is when the earliest active phrase is due (nil when
// none is), and how many runs are queued or running now, scheduled or not.
func (db *DB) NextSearchPhraseRun(ctx context.Context) (*time.Time, int, error) {
	var next sql.NullString
	err := db.r.QueryRowContext(ctx, `SELECT MIN(next_run_at) FROM search_phrases INDEXED BY search_phrases_due WHERE is_active = 1`).Scan(&next)
	if err != nil {
		return nil, 0, fmt.Errorf("store: next search phrase run: %w", err)
	}
	var inFlight int
	err = db.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM search_phrases INDEXED BY search_phrases_in_flight
		WHERE run_status IN ('queued', 'running')`).Scan(&inFlight)
	if err != nil {
		return nil, 0, fmt.Errorf("store: search phrase runs in flight: %w", err)
	}
	return parseNullTime(next), inFlight, nil
}

// QueueDueSearchPhraseRuns queues the runs of the active phrases due at
// now, the longest due first, in one transaction, so that at most
// maxInFlight runs (these and any queued or running already) wait or run
// at once. It returns the ids of the phrases queued; the caller tells the
// job runner.
func (db *DB) QueueDueSearchPhraseRuns(ctx context.Context, now time.Time, maxInFlight int, j PhraseRunJob) ([]int64, error) {
	var queued []int64
	err := db.tx(ctx, func(tx *sql.Tx) error {
		queued = nil
		var inFlight int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM search_phrases INDEXED BY search_phrases_in_flight
			WHERE run_status IN ('queued', 'running')`).Scan(&inFlight); err != nil {
			return err
		}
		if inFlight >= maxInFlight {
			return nil
		}
		rows, err := tx.QueryContext(ctx, `SELECT id FROM search_phrases INDEXED BY search_phrases_due WHERE is_active = 1 AND next_run_at <= ?
			ORDER BY next_run_at, id LIMIT ?`, fmtTime(now), maxInFlight-inFlight)
		if err != nil {
			return err
		}
		ids, err := scanIDs(rows)
		if err != nil {
			return err
		}
		for _, id := range ids {
			err := db.queuePhraseRunTx(ctx, tx, id, j)
			if KindOf(err) == KindConflict {
				// Due while its run is under way breaks the rule that
				// keeps next_run_at NULL then; mend it rather than find
				// the phrase due again at once. Its run's end sets it.
				_, err = tx.ExecContext(ctx, `UPDATE search_phrases SET next_run_at = NULL WHERE id = ?`, id)
				if err != nil {
					return err
				}
				continue
			}
			if err != nil {
				return err
			}
			queued = append(queued, id)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: queue due search phrase runs: %w", err)
	}
	return queued, nil
}

// StartSearchPhraseRun marks the run of job running. It reports false when
// the phrase is gone or no longer waits for this job (nothing to do).
func (db *DB) StartSearchPhraseRun(ctx context.Context, id, jobID int64) (bool, error) {
	res, err := db.exec(ctx, `UPDATE search_phrases SET run_status = 'running' WHERE id = ? AND run_job_id = ? AND run_status IN ('queued', 'running')`,
		id, jobID)
	if err != nil {
		return false, fmt.Errorf("store: start search phrase run: %w", err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// NewSearchIdea is an idea a run found.
type NewSearchIdea struct {
	Idea    string
	IdeaKey string
	Source  string // serp or ai
	Kind    string // related, question or autocomplete
}

// PhraseRunOutcome is how a run ended.
type PhraseRunOutcome struct {
	Status string // PhraseSucceeded, PhraseFailed or PhraseCancelled
	Error  string
	Ideas  []NewSearchIdea
}

// FinishSearchPhraseRun stores the ideas of a run of job that the phrase
// has not got yet (by IdeaKey), and the run's end, in one transaction: an
// active phrase with an interval is next due that interval from now,
// whatever the outcome. It returns the phrase as this transaction left
// it (read in it: a run queued right after may have changed it by the
// time the caller looks, and the caller tells of this run's end) and how
// many ideas were new; nothing is written, and the phrase is nil, when
// the phrase is gone or waits for another job.
func (db *DB) FinishSearchPhraseRun(ctx context.Context, id, jobID int64, o PhraseRunOutcome) (*SearchPhrase, int, error) {
	var ended *SearchPhrase
	added := 0
	err := db.tx(ctx, func(tx *sql.Tx) error {
		ended, added = nil, 0
		var envID, interval int64
		var active bool
		err := tx.QueryRowContext(ctx, `SELECT environment_id, is_active, refresh_interval FROM search_phrases WHERE id = ? AND run_job_id = ?
			AND run_status IN ('queued', 'running')`, id, jobID).Scan(&envID, &active, &interval)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		t := db.Now()
		now := fmtTime(t)
		for _, idea := range o.Ideas {
			res, err := tx.ExecContext(ctx, `INSERT INTO search_ideas (phrase_id, environment_id, idea, idea_key, source, kind, created_at)
				VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (phrase_id, idea_key) DO NOTHING`, id, envID, idea.Idea, idea.IdeaKey, idea.Source, idea.Kind, now)
			if err != nil {
				return translate(err, "idea")
			}
			n, _ := res.RowsAffected()
			added += int(n)
		}
		var next any
		if active && interval > 0 {
			next = fmtTime(t.Add(time.Duration(interval) * time.Second))
		}
		_, err = tx.ExecContext(ctx, `UPDATE search_phrases SET run_status = ?, last_run_at = ?, last_run_error = ?, last_run_ideas = ?,
			next_run_at = ? WHERE id = ?`, o.Status, now, o.Error, added, next, id)
		if err != nil {
			return err
		}
		ended, err = scanSearchPhrase(tx.QueryRowContext(ctx, `SELECT `+searchPhraseColumns+` FROM search_phrases p WHERE p.id = ?`, id))
		return err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("store: finish search phrase run: %w", err)
	}
	if ended == nil {
		return nil, 0, nil
	}
	return ended, added, nil
}

// SearchIdea is a related query found for a phrase.
type SearchIdea struct {
	ID            int64
	PhraseID      int64
	EnvironmentID int64
	Idea          string
	IdeaKey       string
	Source        string
	Kind          string
	CreatedAt     time.Time
}

const searchIdeaColumns = `i.id, i.phrase_id, i.environment_id, i.idea, i.idea_key, i.source, i.kind, i.created_at`

func scanSearchIdea(row rowScanner) (*SearchIdea, error) {
	var i SearchIdea
	var created string
	if err := row.Scan(&i.ID, &i.PhraseID, &i.EnvironmentID, &i.Idea, &i.IdeaKey, &i.Source, &i.Kind, &created); err != nil {
		return nil, err
	}
	i.CreatedAt = parseTime(created)
	return &i, nil
}

// SearchIdeaFilter narrows ListSearchIdeas.
type SearchIdeaFilter struct {
	Source string // serp or ai; "" for both
	Sort   Sort   // by searchIdeaSorts; newest first by default
	Page
}

var searchIdeaSorts = map[string]string{"idea": "i.idea_key", "created_at": "i.created_at"}

func (SearchIdeaFilter) sortColumns() map[string]string { return searchIdeaSorts }

// searchIdeas are a phrase's ideas, newest first by default.
var searchIdeas = children{table: "search_ideas", alias: "i", parent: "phrase_id", sorts: searchIdeaSorts,
	byDefault: Sort{Field: "created_at", Desc: true}, indexes: map[string]string{"idea": "search_ideas_key", "": "search_ideas_phrase_created"},
	columns: searchIdeaColumns, what: "ideas"}

// ListSearchIdeas lists a phrase's ideas.
func (db *DB) ListSearchIdeas(ctx context.Context, phraseID int64, f SearchIdeaFilter) ([]*SearchIdea, int, error) {
	var where []string
	var args []any
	if f.Source != "" {
		where, args = append(where, "i.source = ?"), append(args, f.Source)
	}
	return listChildren(ctx, db, searchIdeas, phraseID, f.Sort, where, args, f.Page, scanSearchIdea)
}

// RecentFilter narrows the lists of what an environment gathered lately
// (ListRecentSearchIdeas, ListRecentWebItems), newest first.
type RecentFilter struct {
	Since *time.Time // only what was stored at or after this time
	Page
}

// ListRecentSearchIdeas lists the ideas of an environment's phrases,
// newest first: the scout's reading.
func (db *DB) ListRecentSearchIdeas(ctx context.Context, envID int64, f RecentFilter) ([]*SearchIdea, int, error) {
	where, args := recentWhere("i", envID, f.Since)
	return listPage(ctx, db, listQuery{from: "search_ideas i INDEXED BY search_ideas_env", count: "search_ideas i", where: where, args: args,
		columns: searchIdeaColumns, order: "i.created_at DESC, i.id DESC", what: "ideas"}, f.Page, scanSearchIdea)
}

func recentWhere(a string, envID int64, since *time.Time) ([]string, []any) {
	where, args := []string{a + ".environment_id = ?"}, []any{envID}
	if since != nil {
		where, args = append(where, a+".created_at >= ?"), append(args, fmtTime(*since))
	}
	return where, args
}
