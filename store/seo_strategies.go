package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Strategies (migration 0019): an environment's keywords grouped into
// clusters, each a pillar page and its cluster pages, and the SERP data
// the grouping may use.

// Strategy statuses.
const (
	StrategyQueued    = "queued"
	StrategyRunning   = "running"
	StrategyReady     = "ready"
	StrategyFailed    = "failed"
	StrategyCancelled = "cancelled"
)

// Strategy is a keyword strategy of an environment.
type Strategy struct {
	ID            int64
	EnvironmentID int64
	StrategyParams
	Name         string
	UsedMethod   string // serp or lexical once built
	Status       string
	JobID        *int64
	Notes        string
	Error        string
	KeywordCount int
	ClusterCount int
	CampaignID   *int64
	CreatedBy    *int64
	CreatedAt    time.Time
	UpdatedAt    time.Time
	BuiltAt      *time.Time
}

// Building reports whether the strategy is queued or being built.
func (s *Strategy) Building() bool { return s.Status == StrategyQueued || s.Status == StrategyRunning }

// StrategyParams are how a strategy is built.
type StrategyParams struct {
	Method      string  // auto, serp or lexical
	MinShared   int     // SERP overlap: shared top-10 URLs that link two keywords
	Similarity  float64 // lexical: Jaccard similarity that links two keywords
	Refine      bool    // the model names and refines the clusters
	RefreshSERP bool    // fetch SERP data again even when it is fresh
	KeywordIDs  []int64 // the keywords asked for; nil: the environment's
}

const strategyColumns = `s.id, s.environment_id, s.name, s.method, s.used_method, s.min_shared, s.similarity, s.refine, s.refresh_serp,
	s.keyword_ids, s.status, s.job_id, s.notes, s.error, s.keyword_count, s.cluster_count, s.campaign_id, s.created_by, s.created_at,
	s.updated_at, s.built_at`

func scanStrategy(row rowScanner) (*Strategy, error) {
	var s Strategy
	var ids, built sql.NullString
	var job, campaign, by sql.NullInt64
	var created, updated string
	if err := row.Scan(&s.ID, &s.EnvironmentID, &s.Name, &s.Method, &s.UsedMethod, &s.MinShared, &s.Similarity, &s.Refine,
		&s.RefreshSERP, &ids, &s.Status, &job, &s.Notes, &s.Error, &s.KeywordCount, &s.ClusterCount, &campaign, &by, &created,
		&updated, &built); err != nil {
		return nil, err
	}
	if ids.Valid {
		if err := json.Unmarshal([]byte(ids.String), &s.KeywordIDs); err != nil {
			return nil, fmt.Errorf("strategy %d keyword_ids: %w", s.ID, err)
		}
	}
	s.JobID, s.CampaignID, s.CreatedBy = nullID(job), nullID(campaign), nullID(by)
	s.CreatedAt, s.UpdatedAt, s.BuiltAt = parseTime(created), parseTime(updated), parseNullTime(built)
	return &s, nil
}

// NewStrategy is what CreateStrategyWithJob needs.
type NewStrategy struct {
	EnvironmentID int64
	Name          string
	StrategyParams
	CreatedBy *int64
}

// CreateStrategyWithJob records a queued strategy and the job that builds
// it, in one transaction. The caller tells the job runner.
func (db *DB) CreateStrategyWithJob(ctx context.Context, n NewStrategy, j RunJob) (*Strategy, error) {
	var ids any
	if n.KeywordIDs != nil {
		b, _ := json.Marshal(n.KeywordIDs) // ids always encode
		ids = string(b)
	}
	var out *Strategy
	err := db.tx(ctx, func(tx *sql.Tx) error {
		if err := underLimitTx(ctx, tx, "seo_strategies", "strategy builds", n.EnvironmentID, j.Limit); err != nil {
			return err
		}
		now := db.now()
		s, err := scanStrategy(tx.QueryRowContext(ctx, `INSERT INTO seo_strategies (environment_id, name, method, min_shared, similarity,
			refine, refresh_serp, keyword_ids, created_by, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			RETURNING `+returning(strategyColumns), n.EnvironmentID, n.Name, n.Method, n.MinShared, n.Similarity, n.Refine, n.RefreshSERP,
			ids, n.CreatedBy, now, now))
		if err != nil {
			return translate(err, "strategy")
		}
		s.JobID, err = db.insertRunJobTx(ctx, tx, "seo_strategies", s.ID, j)
		out = s
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: create strategy: %w", err)
	}
	return out, nil
}

// StrategyByID finds a strategy.
func (db *DB) StrategyByID(ctx context.Context, id int64) (*Strategy, error) {
	return db.strategyByID(ctx, db.r, id)
}

func (db *DB) strategyByID(ctx context.Context, q querier, id int64) (*Strategy, error) {
	return findIn(ctx, q, scanStrategy, "strategy", `SELECT `+strategyColumns+` FROM seo_strategies s WHERE s.id = ?`, id)
}

// StartStrategy marks a queued strategy running (again, after a restart);
// false if it is built, failed or gone.
func (db *DB) StartStrategy(ctx context.Context, id int64) (bool, error) {
	res, err := db.exec(ctx, `UPDATE seo_strategies SET status = 'running', error = '' WHERE id = ? AND status IN ('queued', 'running')`, id)
	if err != nil {
		return false, fmt.Errorf("store: start strategy: %w", err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// ClusterInput is a cluster to store: an existing one of the strategy
// (ID) or a new one (ID 0), with its pillar and its keywords in order.
type ClusterInput struct {
	ID         int64
	Name       string
	Pillar     *int64
	KeywordIDs []int64
}

// StrategyOutcome is how a build ended.
type StrategyOutcome struct {
	Status     string // StrategyReady, StrategyFailed or StrategyCancelled
	UsedMethod string
	Notes      string
	Error      string
	Clusters   []ClusterInput
}

// FinishStrategy records a build's end and its clusters in one
// transaction; a strategy no longer being built is left as it is.
func (db *DB) FinishStrategy(ctx context.Context, id int64, o StrategyOutcome) (*Strategy, error) {
	err := db.tx(ctx, func(tx *sql.Tx) error {
		now := db.now()
		var built any
		if o.Status == StrategyReady {
			built = now
		}
		res, err := tx.ExecContext(ctx, `UPDATE seo_strategies SET status = ?, used_method = ?, notes = ?, error = ?, built_at = ?,
			updated_at = ? WHERE id = ? AND status IN ('queued', 'running')`, o.Status, o.UsedMethod, o.Notes, o.Error, built, now, id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 || o.Status != StrategyReady {
			return nil
		}
		return writeClusters(ctx, tx, id, o.Clusters)
	})
	if err != nil {
		return nil, fmt.Errorf("store: finish strategy: %w", err)
	}
	return db.strategyByID(ctx, db.w, id)
}

// ReplaceStrategyClusters renames a strategy (name non-nil) and replaces
// its clusters (clusters non-nil) in one transaction: the listed ones keep
// their ids, new ones are added, and the others are deleted. Every
// keyword must be one of the strategy's environment and in one cluster;
// a cluster id must be the strategy's; a pillar must be in its cluster.
func (db *DB) ReplaceStrategyClusters(ctx context.Context, id int64, name *string, clusters []ClusterInput) (*Strategy, error) {
	err := db.tx(ctx, func(tx *sql.Tx) error {
		var envID int64
		var status string
		err := tx.QueryRowContext(ctx, `SELECT environment_id, status FROM seo_strategies WHERE id = ?`, id).Scan(&envID, &status)
		if errors.Is(err, sql.ErrNoRows) {
			return NotFound("strategy not found")
		}
		if err != nil {
			return err
		}
		if status == StrategyQueued || status == StrategyRunning {
			return Conflict("strategy %d is being built: change it once it is ready", id)
		}
		if name != nil {
			if _, err := tx.ExecContext(ctx, `UPDATE seo_strategies SET name = ? WHERE id = ?`, *name, id); err != nil {
				return translate(err, "strategy")
			}
		}
		if clusters != nil {
			if err := checkClusters(ctx, tx, id, envID, clusters); err != nil {
				return err
			}
			if err := writeClusters(ctx, tx, id, clusters); err != nil {
				return err
			}
			// A failed strategy that is given clusters is one.
			if _, err := tx.ExecContext(ctx, `UPDATE seo_strategies SET status = 'ready', error = '' WHERE id = ?`, id); err != nil {
				return err
			}
		}
		_, err = tx.ExecContext(ctx, `UPDATE seo_strategies SET updated_at = ? WHERE id = ?`, db.now(), id)
		return err
	})
	if err != nil {
		return nil, err
	}
	return db.strategyByID(ctx, db.w, id)
}

// checkClusters checks clusters for strategy id of environment envID.
func checkClusters(ctx context.Context, tx *sql.Tx, id, envID int64, clusters []ClusterInput) error {
	seen := map[int64]int{}
	var all []int64
	for i, c := range clusters {
		if len(c.KeywordIDs) == 0 {
			return Invalid("clusters[%d].keyword_ids: a cluster needs at least one keyword", i)
		}
		for _, k := range c.KeywordIDs {
			if j, ok := seen[k]; ok {
				return Invalid("clusters[%d].keyword_ids: keyword %d is in clusters[%d] too: a keyword is in one cluster", i, k, j)
			}
			seen[k] = i
			all = append(all, k)
		}
		if c.Pillar != nil && !slices.Contains(c.KeywordIDs, *c.Pillar) {
			return Invalid("clusters[%d].pillar_keyword_id: keyword %d is not one of the cluster's keywords", i, *c.Pillar)
		}
	}
	have := map[int64]bool{}
	const chunk = 500
	for rest := all; len(rest) > 0; {
		part := rest[:min(chunk, len(rest))]
		rest = rest[len(part):]
		cond, args := idList("id", part)
		rows, err := tx.QueryContext(ctx, `SELECT id FROM seo_keywords WHERE environment_id = ? AND `+cond, append([]any{envID}, args...)...)
		if err != nil {
			return err
		}
		for rows.Next() {
			var k int64
			if err := rows.Scan(&k); err != nil {
				rows.Close()
				return err
			}
			have[k] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
	}
	for _, k := range all {
		if !have[k] {
			return Invalid("clusters[%d].keyword_ids: no keyword with id %d in the strategy's environment", seen[k], k)
		}
	}
	for i, c := range clusters {
		if c.ID == 0 {
			continue
		}
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM seo_strategy_clusters WHERE id = ? AND strategy_id = ?`, c.ID, id).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return Invalid("clusters[%d].id: strategy %d has no cluster %d (leave id out for a new cluster)", i, id, c.ID)
		}
	}
	return nil
}

// writeClusters replaces the clusters of strategy id with clusters, in
// their order, and sets its counts.
func writeClusters(ctx context.Context, tx *sql.Tx, id int64, clusters []ClusterInput) error {
	keep := make([]int64, 0, len(clusters))
	if _, err := tx.ExecContext(ctx, `DELETE FROM seo_strategy_keywords WHERE strategy_id = ?`, id); err != nil {
		return err
	}
	keywords := 0
	for pos, c := range clusters {
		cid := c.ID
		if cid == 0 {
			if err := tx.QueryRowContext(ctx, `INSERT INTO seo_strategy_clusters (strategy_id, position, name, pillar_keyword_id)
				VALUES (?, ?, ?, ?) RETURNING id`, id, pos+1, c.Name, c.Pillar).Scan(&cid); err != nil {
				return translate(err, "cluster")
			}
		} else if _, err := tx.ExecContext(ctx, `UPDATE seo_strategy_clusters SET position = ?, name = ?, pillar_keyword_id = ? WHERE id = ?`,
			pos+1, c.Name, c.Pillar, cid); err != nil {
			return translate(err, "cluster")
		}
		for i, k := range c.KeywordIDs {
			if _, err := tx.ExecContext(ctx, `INSERT INTO seo_strategy_keywords (strategy_id, keyword_id, cluster_id, position) VALUES (?, ?, ?, ?)`,
				id, k, cid, i+1); err != nil {
				return translate(err, "strategy keyword")
			}
		}
		keywords += len(c.KeywordIDs)
		keep = append(keep, cid)
	}
	// The clusters left out go last, after the new ones took their ids:
	// an id is never another cluster's soon after.
	del := `DELETE FROM seo_strategy_clusters WHERE strategy_id = ?`
	args := []any{id}
	if len(keep) > 0 {
		cond, more := idList("id", keep)
		del, args = del+" AND NOT "+cond, append(args, more...)
	}
	if _, err := tx.ExecContext(ctx, del, args...); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `UPDATE seo_strategies SET keyword_count = ?, cluster_count = ? WHERE id = ?`, keywords, len(clusters), id)
	return err
}

// StrategyCluster is a cluster of a strategy with its keywords in order.
// Pillar is nil once its keyword is deleted.
type StrategyCluster struct {
	ID       int64
	Position int
	Name     string
	Pillar   *int64
	Keywords []*Keyword
}

// StrategyClusters lists a strategy's clusters in order, each with its
// keywords in order.
func (db *DB) StrategyClusters(ctx context.Context, strategyID int64) ([]*StrategyCluster, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT id, position, name, pillar_keyword_id FROM seo_strategy_clusters
		INDEXED BY seo_strategy_clusters_strategy WHERE strategy_id = ? ORDER BY position, id`, strategyID)
	if err != nil {
		return nil, fmt.Errorf("store: strategy clusters: %w", err)
	}
	out := []*StrategyCluster{}
	byID := map[int64]*StrategyCluster{}
	for rows.Next() {
		var c StrategyCluster
		var pillar sql.NullInt64
		if err := rows.Scan(&c.ID, &c.Position, &c.Name, &pillar); err != nil {
			rows.Close()
			return nil, fmt.Errorf("store: strategy clusters: %w", err)
		}
		c.Pillar, c.Keywords = nullID(pillar), []*Keyword{}
		out = append(out, &c)
		byID[c.ID] = &c
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: strategy clusters: %w", err)
	}
	// The members of every cluster in one query, put in order here: the
	// strategy's rows are found by its primary key.
	rows, err = db.r.QueryContext(ctx, `SELECT sk.cluster_id, sk.position, `+keywordColumns+` FROM seo_strategy_keywords sk
		JOIN seo_keywords k ON k.id = sk.keyword_id WHERE sk.strategy_id = ?`, strategyID)
	if err != nil {
		return nil, fmt.Errorf("store: strategy keywords: %w", err)
	}
	defer rows.Close()
	pos := map[int64]int{}
	for rows.Next() {
		var cid int64
		var p int
		k, err := scanKeyword(prefixed{rows, []any{&cid, &p}})
		if err != nil {
			return nil, fmt.Errorf("store: strategy keywords: %w", err)
		}
		if c := byID[cid]; c != nil {
			c.Keywords = append(c.Keywords, k)
			pos[k.ID] = p
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: strategy keywords: %w", err)
	}
	for _, c := range out {
		slices.SortFunc(c.Keywords, func(a, b *Keyword) int { return pos[a.ID] - pos[b.ID] })
	}
	return out, nil
}

// prefixed scans leading columns into dst before the rest go to the
// scanner of a known row type.
type prefixed struct {
	row rowScanner
	dst []any
}

func (p prefixed) Scan(dest ...any) error { return p.row.Scan(append(slices.Clone(p.dst), dest...)...) }

// DeleteStrategy deletes a strategy and, by their foreign key, its
// clusters; its keywords stay. A queued or running strategy is a conflict
// (its job would go on asking paid services for a strategy that is gone),
// checked in the transaction that deletes.
func (db *DB) DeleteStrategy(ctx context.Context, id int64) error {
	return db.deleteFinished(ctx, "seo_strategies", "strategy", id)
}

// FailOrphanStrategies is FailOrphanRuns for strategies: those left
// queued or running with no queued or running job to end them. A strategy
// has no finished_at: updated_at says when it failed. A cancelled one is
// finished and left as it is.
func (db *DB) FailOrphanStrategies(ctx context.Context, reason string) (int64, error) {
	return db.failOrphansAt(ctx, "seo_strategies", "updated_at", runUnfinished, "strategies", reason)
}

// SetStrategyCampaign records the campaign last made from a strategy.
func (db *DB) SetStrategyCampaign(ctx context.Context, id, campaignID int64) error {
	if _, err := db.exec(ctx, `UPDATE seo_strategies SET campaign_id = ?, updated_at = ? WHERE id = ?`, campaignID, db.now(), id); err != nil {
		return fmt.Errorf("store: strategy campaign: %w", err)
	}
	return nil
}

// StrategyFilter narrows ListStrategies.
type StrategyFilter struct {
	Scope         Scope
	EnvironmentID *int64
	Status        string
	Sort          Sort // by strategySorts; newest first by default
	Page
}

var strategySorts = map[string]string{"name": "s.name COLLATE NOCASE", "created_at": "s.created_at", "updated_at": "s.updated_at"}

func (StrategyFilter) sortColumns() map[string]string { return strategySorts }

var strategyIndexes = map[string][2]string{
	"name":       {"seo_strategies_name", "seo_strategies_env_name"},
	"created_at": {"seo_strategies_created", "seo_strategies_env_created"},
	"updated_at": {"seo_strategies_updated", "seo_strategies_env_updated"},
}

// ListStrategies lists the strategies the filter's scope sees, without
// their clusters.
func (db *DB) ListStrategies(ctx context.Context, f StrategyFilter) ([]*Strategy, int, error) {
	q, err := sortedList("seo_strategies s", "s", strategySorts, strategyIndexes, f.Sort, f.Scope, f.EnvironmentID, nil)
	if err != nil {
		return nil, 0, err
	}
	if f.Status != "" {
		q.where, q.args = append(q.where, "s.status = ?"), append(q.args, f.Status)
	}
	q.columns, q.what = strategyColumns, "strategies"
	return listPage(ctx, db, q, f.Page, scanStrategy)
}

// KeywordsForStrategy reads the keywords a strategy groups: those of ids
// that are the environment's, or with ids nil the environment's keywords
// that are not ignored, highest volume first, at most limit (more reports
// that there were more).
func (db *DB) KeywordsForStrategy(ctx context.Context, envID int64, ids []int64, limit int) (kws []*Keyword, more bool, err error) {
	var rows *sql.Rows
	if ids != nil {
		ids = firstOfEach(ids)
		if len(ids) == 0 {
			return []*Keyword{}, false, nil
		}
		cond, args := idList("k.id", ids)
		rows, err = db.r.QueryContext(ctx, `SELECT `+keywordColumns+` FROM seo_keywords k WHERE k.environment_id = ? AND `+cond,
			append([]any{envID}, args...)...)
	} else {
		rows, err = db.r.QueryContext(ctx, `SELECT `+keywordColumns+` FROM seo_keywords k INDEXED BY seo_keywords_volume
			WHERE k.environment_id = ? AND k.status != 'ignored' ORDER BY k.search_volume DESC, k.id DESC LIMIT ?`, envID, limit+1)
	}
	if err != nil {
		return nil, false, fmt.Errorf("store: strategy keywords: %w", err)
	}
	defer rows.Close()
	kws = []*Keyword{}
	for rows.Next() {
		k, err := scanKeyword(rows)
		if err != nil {
			return nil, false, fmt.Errorf("store: strategy keywords: %w", err)
		}
		kws = append(kws, k)
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("store: strategy keywords: %w", err)
	}
	if len(kws) > limit {
		return kws[:limit], true, nil
	}
	return kws, false, nil
}

// KeywordSERP is the top-10 of a keyword as last fetched.
type KeywordSERP struct {
	KeywordID int64
	Key       string // the keyword's key when it was fetched
	URLs      []string
	FetchedAt time.Time
}

// KeywordSERPs reads the stored SERP data of keywords, by keyword id.
func (db *DB) KeywordSERPs(ctx context.Context, ids []int64) (map[int64]KeywordSERP, error) {
	out := map[int64]KeywordSERP{}
	const chunk = 500
	for rest := firstOfEach(ids); len(rest) > 0; {
		part := rest[:min(chunk, len(rest))]
		rest = rest[len(part):]
		cond, args := idList("keyword_id", part)
		rows, err := db.r.QueryContext(ctx, `SELECT keyword_id, keyword_key, urls, fetched_at FROM seo_keyword_serps WHERE `+cond, args...)
		if err != nil {
			return nil, fmt.Errorf("store: keyword serps: %w", err)
		}
		for rows.Next() {
			var s KeywordSERP
			var urls, fetched string
			if err := rows.Scan(&s.KeywordID, &s.Key, &urls, &fetched); err != nil {
				rows.Close()
				return nil, fmt.Errorf("store: keyword serps: %w", err)
			}
			if err := json.Unmarshal([]byte(urls), &s.URLs); err != nil {
				rows.Close()
				return nil, fmt.Errorf("store: keyword %d serp urls: %w", s.KeywordID, err)
			}
			s.FetchedAt = parseTime(fetched)
			out[s.KeywordID] = s
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("store: keyword serps: %w", err)
		}
	}
	return out, nil
}

// PutKeywordSERP stores the top-10 of a keyword, fetched now for key; a
// keyword deleted meanwhile is skipped.
func (db *DB) PutKeywordSERP(ctx context.Context, keywordID int64, key string, urls []string) error {
	_, err := db.exec(ctx, `INSERT INTO seo_keyword_serps (keyword_id, keyword_key, urls, fetched_at)
		SELECT id, ?, ?, ? FROM seo_keywords WHERE id = ?
		ON CONFLICT (keyword_id) DO UPDATE SET keyword_key = excluded.keyword_key, urls = excluded.urls, fetched_at = excluded.fetched_at`,
		key, jsonList(urls), db.now(), keywordID)
	if err != nil {
		return fmt.Errorf("store: put keyword serp: %w", err)
	}
	return nil
}

// StrategyApplied says what ApplyStrategy did.
type StrategyApplied struct {
	Keywords int // the strategy's keywords, each labelled with its cluster now
	Changed  int // keywords whose cluster it changed, the cleared ones included
	Cleared  int // other keywords of the environment whose cluster it emptied
	Missing  int // keywords of the strategy deleted since it was built or last edited
}

// ApplyStrategy writes label(name) of each cluster of strategy id onto
// the cluster field of its keywords and, with clearOthers, empties the
// field of the environment's other keywords, in one transaction, so that
// what it reads is what it writes. A keyword already so labelled is left
// alone (its updated_at too). Only a ready strategy with keywords left is
// applied. label must not return "", which is "in no cluster".
func (db *DB) ApplyStrategy(ctx context.Context, id int64, label func(name string) string, clearOthers bool) (StrategyApplied, error) {
	var out StrategyApplied
	err := db.tx(ctx, func(tx *sql.Tx) error {
		var envID int64
		var status string
		var count int
		err := tx.QueryRowContext(ctx, `SELECT environment_id, status, keyword_count FROM seo_strategies WHERE id = ?`, id).Scan(&envID, &status, &count)
		if errors.Is(err, sql.ErrNoRows) {
			return NotFound("strategy not found")
		}
		if err != nil {
			return err
		}
		if status != StrategyReady {
			return Conflict("strategy %d is %s: only a ready strategy can label its keywords", id, status)
		}
		// keyword_count is written with the clusters; a deleted keyword
		// leaves seo_strategy_keywords by its foreign key, not the count.
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM seo_strategy_keywords WHERE strategy_id = ?`, id).Scan(&out.Keywords); err != nil {
			return err
		}
		if out.Keywords == 0 {
			return Conflict("strategy %d has no keywords left (they were deleted): there is nothing to label", id)
		}
		out.Missing = max(count-out.Keywords, 0)
		rows, err := tx.QueryContext(ctx, `SELECT id, name FROM seo_strategy_clusters INDEXED BY seo_strategy_clusters_strategy
			WHERE strategy_id = ? ORDER BY position, id`, id)
		if err != nil {
			return err
		}
		type cluster struct {
			id   int64
			name string
		}
		var clusters []cluster
		for rows.Next() {
			var c cluster
			if err := rows.Scan(&c.id, &c.name); err != nil {
				rows.Close()
				return err
			}
			clusters = append(clusters, c)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		now := db.now()
		set, err := tx.PrepareContext(ctx, `UPDATE seo_keywords SET cluster = ?, updated_at = ? WHERE environment_id = ? AND cluster != ?
			AND id IN (SELECT keyword_id FROM seo_strategy_keywords INDEXED BY seo_strategy_keywords_cluster WHERE cluster_id = ?)`)
		if err != nil {
			return err
		}
		defer set.Close()
		for _, c := range clusters {
			name := label(c.name)
			if name == "" {
				return fmt.Errorf("cluster %d of strategy %d: its name %q gives no label", c.id, id, c.name)
			}
			res, err := set.ExecContext(ctx, name, now, envID, name, c.id)
			if err != nil {
				return err
			}
			n, _ := res.RowsAffected()
			out.Changed += int(n)
		}
		if !clearOthers {
			return nil
		}
		res, err := tx.ExecContext(ctx, `UPDATE seo_keywords SET cluster = '', updated_at = ? WHERE environment_id = ? AND cluster != ''
			AND id NOT IN (SELECT keyword_id FROM seo_strategy_keywords WHERE strategy_id = ?)`, now, envID, id)
		if err != nil {
			return err
		}
		n, _ := res.RowsAffected()
		out.Cleared = int(n)
		out.Changed += out.Cleared
		return nil
	})
	if err != nil {
		return StrategyApplied{}, fmt.Errorf("store: apply strategy: %w", err)
	}
	return out, nil
}
