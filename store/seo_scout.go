package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Scout runs (migration 0019): candidate keywords gathered for an
// environment, kept with their run until accepted as keywords. A run's
// statuses are the agent runs' (RunQueued ... RunCancelled).

// ScoutRun is one scout run.
type ScoutRun struct {
	ID             int64
	EnvironmentID  int64
	UserID         *int64
	JobID          *int64
	Status         string
	Seeds          []string
	Sources        []string
	Notes          string
	Error          string
	Gathered       int // distinct candidates found
	Known          int // of those, keywords the environment had
	CandidateCount int
	AcceptedCount  int
	CreatedAt      time.Time
	StartedAt      *time.Time
	FinishedAt     *time.Time
}

// Finished reports whether the run reached a final status.
func (r *ScoutRun) Finished() bool {
	return finalStatus(r.Status)
}

const scoutRunColumns = `r.id, r.environment_id, r.user_id, r.job_id, r.status, r.seeds, r.sources, r.notes, r.error, r.gathered,
	r.known, r.candidate_count, r.accepted_count, r.created_at, r.started_at, r.finished_at`

func scanScoutRun(row rowScanner) (*ScoutRun, error) {
	var r ScoutRun
	var user, job sql.NullInt64
	var seeds, sources, created string
	var started, finished sql.NullString
	if err := row.Scan(&r.ID, &r.EnvironmentID, &user, &job, &r.Status, &seeds, &sources, &r.Notes, &r.Error, &r.Gathered,
		&r.Known, &r.CandidateCount, &r.AcceptedCount, &created, &started, &finished); err != nil {
		return nil, err
	}
	r.UserID, r.JobID = nullID(user), nullID(job)
	if err := json.Unmarshal([]byte(seeds), &r.Seeds); err != nil {
		return nil, fmt.Errorf("scout run %d seeds: %w", r.ID, err)
	}
	if err := json.Unmarshal([]byte(sources), &r.Sources); err != nil {
		return nil, fmt.Errorf("scout run %d sources: %w", r.ID, err)
	}
	r.CreatedAt, r.StartedAt, r.FinishedAt = parseTime(created), parseNullTime(started), parseNullTime(finished)
	return &r, nil
}

// jsonList encodes a list of strings as a JSON array, [] for none.
func jsonList(list []string) string {
	if list == nil {
		list = []string{}
	}
	b, _ := json.Marshal(list) // strings always encode
	return string(b)
}

// NewScoutRun is what CreateScoutRunWithJob needs.
type NewScoutRun struct {
	EnvironmentID int64
	UserID        *int64
	Seeds         []string
	Sources       []string
}

// CreateScoutRunWithJob records a queued run and the job that carries it
// out, in one transaction. The caller tells the job runner.
func (db *DB) CreateScoutRunWithJob(ctx context.Context, n NewScoutRun, j RunJob) (*ScoutRun, error) {
	var run *ScoutRun
	err := db.tx(ctx, func(tx *sql.Tx) error {
		if err := underLimitTx(ctx, tx, "seo_scout_runs", "scout runs", n.EnvironmentID, j.Limit); err != nil {
			return err
		}
		r, err := scanScoutRun(tx.QueryRowContext(ctx, `INSERT INTO seo_scout_runs (environment_id, user_id, seeds, sources, created_at)
			VALUES (?, ?, ?, ?, ?) RETURNING `+returning(scoutRunColumns), n.EnvironmentID, n.UserID, jsonList(n.Seeds), jsonList(n.Sources), db.now()))
		if err != nil {
			return translate(err, "scout run")
		}
		r.JobID, err = db.insertRunJobTx(ctx, tx, "seo_scout_runs", r.ID, j)
		run = r
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: create scout run: %w", err)
	}
	return run, nil
}

// ScoutRunByID finds a run.
func (db *DB) ScoutRunByID(ctx context.Context, id int64) (*ScoutRun, error) {
	return db.scoutRunByID(ctx, db.r, id)
}

func (db *DB) scoutRunByID(ctx context.Context, q querier, id int64) (*ScoutRun, error) {
	return findIn(ctx, q, scanScoutRun, "scout run", `SELECT `+scoutRunColumns+` FROM seo_scout_runs r WHERE r.id = ?`, id)
}

// StartScoutRun marks a queued run running (again, after a restart);
// false if it is finished or gone.
func (db *DB) StartScoutRun(ctx context.Context, id int64) (bool, error) {
	return db.startRun(ctx, "seo_scout_runs", "scout run", id, true)
}

// DeleteScoutRun deletes a finished run and, by their foreign key, its
// candidates. The keywords accepted from it stay: a candidate points at
// its keyword, never the other way. A queued or running run is a conflict
// (its job would finish a run that is gone), checked in the transaction
// that deletes.
func (db *DB) DeleteScoutRun(ctx context.Context, id int64) error {
	return db.deleteFinished(ctx, "seo_scout_runs", "scout run", id)
}

// FailOrphanScoutRuns is FailOrphanRuns for scout runs: those left queued
// or running with no queued or running job to end them. A cancelled run
// is finished and left as it is.
func (db *DB) FailOrphanScoutRuns(ctx context.Context, reason string) (int64, error) {
	return db.failOrphans(ctx, "seo_scout_runs", runUnfinished, "scout runs", reason)
}

// NewScoutCandidate is a candidate a run found.
type NewScoutCandidate struct {
	Keyword string
	Key     string // KeywordKey(Keyword)
	FoundBy []string
	Intent  int // IntentBits
	Score   int // 0 to 100
}

// ScoutOutcome is how a run ended, with its candidates (distinct keys).
type ScoutOutcome struct {
	Status     string
	Notes      string
	Error      string
	Gathered   int
	Known      int
	Candidates []NewScoutCandidate
}

// FinishScoutRun records a run's end and its candidates in one
// transaction; a run already finished keeps its first ending.
func (db *DB) FinishScoutRun(ctx context.Context, id int64, o ScoutOutcome) (*ScoutRun, error) {
	err := db.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE seo_scout_runs SET status = ?, notes = ?, error = ?, gathered = ?, known = ?,
			candidate_count = ?, finished_at = ? WHERE id = ? AND status IN ('queued', 'running')`,
			o.Status, o.Notes, o.Error, o.Gathered, o.Known, len(o.Candidates), db.now(), id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil
		}
		st, err := tx.PrepareContext(ctx, `INSERT INTO seo_scout_candidates (run_id, keyword, keyword_key, found_by, intent, score)
			VALUES (?, ?, ?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		defer st.Close()
		for _, c := range o.Candidates {
			if _, err := st.ExecContext(ctx, id, c.Keyword, c.Key, jsonList(c.FoundBy), c.Intent, c.Score); err != nil {
				return translate(err, "candidate")
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: finish scout run: %w", err)
	}
	return db.scoutRunByID(ctx, db.w, id)
}

// Candidate statuses.
const (
	CandidateNew      = "new"
	CandidateAccepted = "accepted"
	CandidateExists   = "exists" // the environment had the keyword when it was accepted
)

// ScoutCandidate is a candidate keyword of a run.
type ScoutCandidate struct {
	ID        int64
	RunID     int64
	Keyword   string
	Key       string
	FoundBy   []string
	Intent    []string
	Score     int
	Status    string
	KeywordID *int64
}

func scanScoutCandidate(row rowScanner) (*ScoutCandidate, error) {
	var c ScoutCandidate
	var found string
	var intent int
	var kw sql.NullInt64
	if err := row.Scan(&c.ID, &c.RunID, &c.Keyword, &c.Key, &found, &intent, &c.Score, &c.Status, &kw); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(found), &c.FoundBy); err != nil {
		return nil, fmt.Errorf("candidate %d found_by: %w", c.ID, err)
	}
	c.Intent, c.KeywordID = IntentNames(intent), nullID(kw)
	return &c, nil
}

// ScoutCandidates lists a run's candidates, best first (by score, then
// key).
func (db *DB) ScoutCandidates(ctx context.Context, runID int64) ([]*ScoutCandidate, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT id, run_id, keyword, keyword_key, found_by, intent, score, status, keyword_id
		FROM seo_scout_candidates INDEXED BY seo_scout_candidates_score WHERE run_id = ? ORDER BY score DESC, keyword_key`, runID)
	if err != nil {
		return nil, fmt.Errorf("store: scout candidates: %w", err)
	}
	defer rows.Close()
	out := []*ScoutCandidate{}
	for rows.Next() {
		c, err := scanScoutCandidate(rows)
		if err != nil {
			return nil, fmt.Errorf("store: scout candidates: %w", err)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// ExistingKeywordKeys reports which of keys (KeywordKey forms) are keywords
// of the environment.
func (db *DB) ExistingKeywordKeys(ctx context.Context, envID int64, keys []string) (map[string]bool, error) {
	out := map[string]bool{}
	const chunk = 500
	for len(keys) > 0 {
		part := keys[:min(chunk, len(keys))]
		keys = keys[len(part):]
		args := make([]any, 0, len(part)+1)
		args = append(args, envID)
		for _, k := range part {
			args = append(args, k)
		}
		rows, err := db.r.QueryContext(ctx, `SELECT keyword_key FROM seo_keywords INDEXED BY seo_keywords_key
			WHERE environment_id = ? AND keyword_key IN (?`+strings.Repeat(", ?", len(part)-1)+`)`, args...)
		if err != nil {
			return nil, fmt.Errorf("store: existing keywords: %w", err)
		}
		for rows.Next() {
			var k string
			if err := rows.Scan(&k); err != nil {
				rows.Close()
				return nil, fmt.Errorf("store: existing keywords: %w", err)
			}
			out[k] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("store: existing keywords: %w", err)
		}
	}
	return out, nil
}

// AcceptResult says what accepting candidates did.
type AcceptResult struct {
	Created    int
	Skipped    int     // the environment had the keyword, or the candidate was accepted before
	KeywordIDs []int64 // the keywords made, in the order asked
}

// AcceptScoutCandidates turns candidates of a run into keywords of its
// environment (source scout, status new, with the candidate's intent), in
// one transaction. A candidate whose keyword the environment has by now
// is marked exists and linked to that keyword; one accepted before is
// skipped. An id that is not a candidate of the run is invalid, and
// nothing is written.
func (db *DB) AcceptScoutCandidates(ctx context.Context, runID int64, ids []int64) (AcceptResult, error) {
	var out AcceptResult
	ids = firstOfEach(ids)
	err := db.tx(ctx, func(tx *sql.Tx) error {
		envID, err := envOf(ctx, tx, "seo_scout_runs", runID, "scout run")
		if err != nil {
			return err
		}
		now := db.now()
		for _, id := range ids {
			var keyword, key, status string
			var intent int
			err := tx.QueryRowContext(ctx, `SELECT keyword, keyword_key, intent, status FROM seo_scout_candidates WHERE id = ? AND run_id = ?`,
				id, runID).Scan(&keyword, &key, &intent, &status)
			if errors.Is(err, sql.ErrNoRows) {
				return Invalid("candidates: no candidate with id %d in scout run %d", id, runID)
			}
			if err != nil {
				return err
			}
			if status != CandidateNew {
				out.Skipped++
				continue
			}
			var kwID int64
			err = tx.QueryRowContext(ctx, `INSERT INTO seo_keywords (environment_id, keyword, keyword_key, intent, status, source, created_at,
				updated_at) VALUES (?, ?, ?, ?, 'new', 'scout', ?, ?) ON CONFLICT (environment_id, keyword_key) DO NOTHING RETURNING id`,
				envID, KeywordDisplay(keyword), key, intent, now, now).Scan(&kwID)
			status = CandidateAccepted
			if errors.Is(err, sql.ErrNoRows) {
				status = CandidateExists
				err = tx.QueryRowContext(ctx, `SELECT id FROM seo_keywords WHERE environment_id = ? AND keyword_key = ?`, envID, key).Scan(&kwID)
			}
			if err != nil {
				return translate(err, "keyword")
			}
			if status == CandidateAccepted {
				out.Created++
				out.KeywordIDs = append(out.KeywordIDs, kwID)
			} else {
				out.Skipped++
			}
			if _, err := tx.ExecContext(ctx, `UPDATE seo_scout_candidates SET status = ?, keyword_id = ? WHERE id = ?`, status, kwID, id); err != nil {
				return err
			}
		}
		if out.Created > 0 {
			_, err = tx.ExecContext(ctx, `UPDATE seo_scout_runs SET accepted_count = accepted_count + ? WHERE id = ?`, out.Created, runID)
		}
		return err
	})
	if err != nil {
		return AcceptResult{}, fmt.Errorf("store: accept candidates: %w", err)
	}
	return out, nil
}

// ScoutRunFilter narrows ListScoutRuns.
type ScoutRunFilter struct {
	Scope         Scope
	EnvironmentID *int64
	Status        string
	Sort          Sort // by scoutRunSorts; newest first by default
	Page
}

var scoutRunSorts = map[string]string{"created_at": "r.created_at", "candidate_count": "r.candidate_count"}

func (ScoutRunFilter) sortColumns() map[string]string { return scoutRunSorts }

var scoutRunIndexes = map[string][2]string{
	"created_at":      {"seo_scout_runs_created", "seo_scout_runs_env_created"},
	"candidate_count": {"seo_scout_runs_candidates", "seo_scout_runs_env_candidates"},
}

// ListScoutRuns lists the runs the filter's scope sees.
func (db *DB) ListScoutRuns(ctx context.Context, f ScoutRunFilter) ([]*ScoutRun, int, error) {
	q, err := sortedList("seo_scout_runs r", "r", scoutRunSorts, scoutRunIndexes, f.Sort, f.Scope, f.EnvironmentID, nil)
	if err != nil {
		return nil, 0, err
	}
	if f.Status != "" {
		q.where, q.args = append(q.where, "r.status = ?"), append(q.args, f.Status)
	}
	q.columns, q.what = scoutRunColumns, "scout runs"
	return listPage(ctx, db, q, f.Page, scanScoutRun)
}
