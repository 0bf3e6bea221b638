package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"golang.org/x/text/unicode/norm"
)

// SEO keywords (migration 0016): an environment's keywords with their
// metrics, their place in a campaign and the post written for them.

// Keyword statuses.
const (
	KeywordNew        = "new"
	KeywordPlanned    = "planned"
	KeywordInProgress = "in_progress"
	KeywordPublished  = "published"
	KeywordIgnored    = "ignored"
)

// KeywordStatuses lists the statuses, in the order a keyword goes through
// them.
var KeywordStatuses = []string{KeywordNew, KeywordPlanned, KeywordInProgress, KeywordPublished, KeywordIgnored}

// KeywordIntents lists the search intents; a keyword's intent is a set of
// them, stored as bits in this order (informational 1, commercial 2,
// transactional 4, navigational 8).
var KeywordIntents = []string{"informational", "commercial", "transactional", "navigational"}

// IntentBits is the stored form of a set of intents; ok is false when one
// of them is not an intent.
func IntentBits(names []string) (bits int, ok bool) {
	for _, n := range names {
		i := indexOf(KeywordIntents, n)
		if i < 0 {
			return 0, false
		}
		bits |= 1 << i
	}
	return bits, true
}

// IntentNames is the set of intents bits stands for, in KeywordIntents'
// order.
func IntentNames(bits int) []string {
	out := []string{}
	for i, n := range KeywordIntents {
		if bits&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	return out
}

func indexOf(list []string, v string) int {
	for i, s := range list {
		if s == v {
			return i
		}
	}
	return -1
}

// KeywordKey is the form keywords are compared in, and unique by in an
// environment (seo_keywords.keyword_key): Unicode normal form C, lower
// case, and words separated by single spaces (any run of Unicode white
// space, non-breaking spaces included, is one space; none leads or
// trails). "Café  Latte" typed with a combining accent and "café latte"
// are one keyword.
func KeywordKey(s string) string {
	return norm.NFC.String(strings.ToLower(KeywordDisplay(s)))
}

// KeywordDisplay is the form a keyword is kept and shown in: NFC with
// single spaces, its case as given.
func KeywordDisplay(s string) string {
	return strings.Join(strings.Fields(norm.NFC.String(s)), " ")
}

// PostRef names a post of one of the post kinds ("wordpress", "astro").
type PostRef struct {
	Kind string
	ID   int64
}

// Post kinds a keyword can link to.
const (
	PostWordPress = "wordpress"
	PostAstro     = "astro"
)

// Keyword is an SEO keyword of an environment.
type Keyword struct {
	ID            int64
	EnvironmentID int64
	Keyword       string // as shown
	Key           string // as compared (KeywordKey)
	SearchVolume  *int64
	// SearchVolumeHigh is the high bound when the volume is a range (then
	// SearchVolume is its low bound).
	SearchVolumeHigh *int64
	Difficulty       *int64
	CPC              *float64
	Currency         string
	Intent           []string
	Status           string
	Cluster          string
	ParentKeyword    string
	TargetURL        string
	CampaignID       *int64
	CampaignPosition *int64
	Post             *PostRef // the post written for it
	Source           string
	CreatedAt        time.Time
	UpdatedAt        time.Time
}

const keywordColumns = `k.id, k.environment_id, k.keyword, k.keyword_key, k.search_volume, k.search_volume_high, k.difficulty, k.cpc,
	k.currency, k.intent, k.status, k.cluster, k.parent_keyword, k.target_url, k.campaign_id, k.campaign_position,
	k.wordpress_post_id, k.astro_post_id, k.source, k.created_at, k.updated_at`

func scanKeyword(row rowScanner) (*Keyword, error) {
	var k Keyword
	var vol, high, diff, campaign, pos, wp, astro sql.NullInt64
	var cpc sql.NullFloat64
	var intent int
	var created, updated string
	if err := row.Scan(&k.ID, &k.EnvironmentID, &k.Keyword, &k.Key, &vol, &high, &diff, &cpc, &k.Currency, &intent, &k.Status,
		&k.Cluster, &k.ParentKeyword, &k.TargetURL, &campaign, &pos, &wp, &astro, &k.Source, &created, &updated); err != nil {
		return nil, err
	}
	k.SearchVolume, k.SearchVolumeHigh, k.Difficulty = nullID(vol), nullID(high), nullID(diff)
	k.CampaignID, k.CampaignPosition = nullID(campaign), nullID(pos)
	if k.CampaignID == nil {
		k.CampaignPosition = nil
	}
	if cpc.Valid {
		k.CPC = &cpc.Float64
	}
	k.Intent = IntentNames(intent)
	switch {
	case wp.Valid:
		k.Post = &PostRef{Kind: PostWordPress, ID: wp.Int64}
	case astro.Valid:
		k.Post = &PostRef{Kind: PostAstro, ID: astro.Int64}
	}
	k.CreatedAt, k.UpdatedAt = parseTime(created), parseTime(updated)
	return &k, nil
}

// postColumns are the values of wordpress_post_id and astro_post_id for a
// link to p (nil: none).
func postColumns(p *PostRef) (wp, astro any) {
	switch {
	case p == nil:
	case p.Kind == PostWordPress:
		wp = p.ID
	case p.Kind == PostAstro:
		astro = p.ID
	}
	return wp, astro
}

// NewKeyword is a keyword to create; its key is made from Keyword.
type NewKeyword struct {
	EnvironmentID    int64
	Keyword          string
	SearchVolume     *int64
	SearchVolumeHigh *int64
	Difficulty       *int64
	CPC              *float64
	Currency         string
	Intent           int // IntentBits
	Status           string
	Cluster          string
	ParentKeyword    string
	TargetURL        string
	Post             *PostRef
	Source           string
}

// CreateKeyword inserts a keyword; one whose key the environment has is a
// conflict.
func (db *DB) CreateKeyword(ctx context.Context, n NewKeyword) (*Keyword, error) {
	now := db.now()
	wp, astro := postColumns(n.Post)
	k, err := insertRow(ctx, db, scanKeyword, `INSERT INTO seo_keywords (environment_id, keyword, keyword_key, search_volume,
		search_volume_high, difficulty, cpc, currency, intent, status, cluster, parent_keyword, target_url, wordpress_post_id,
		astro_post_id, source, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		RETURNING `+returning(keywordColumns),
		n.EnvironmentID, KeywordDisplay(n.Keyword), KeywordKey(n.Keyword), n.SearchVolume, n.SearchVolumeHigh, n.Difficulty, n.CPC,
		n.Currency, n.Intent, n.Status, n.Cluster, n.ParentKeyword, n.TargetURL, wp, astro, n.Source, now, now)
	if err != nil {
		return nil, keywordTaken(translate(err, "keyword"))
	}
	return k, nil
}

// keywordTaken is the conflict of a keyword the environment has, in the
// API's words.
func keywordTaken(err error) error {
	if KindOf(err) == KindConflict {
		return &Error{Kind: KindConflict, Message: "keyword: this environment has this keyword already (keywords are compared in lower case with single spaces)", Err: err}
	}
	return err
}

// KeywordByID finds a keyword.
func (db *DB) KeywordByID(ctx context.Context, id int64) (*Keyword, error) {
	return findRow(ctx, db, scanKeyword, "keyword", `SELECT `+keywordColumns+` FROM seo_keywords k WHERE k.id = ?`, id)
}

// KeywordUpdate holds the fields to change; nil leaves one alone. Metrics
// can be replaced, not removed.
type KeywordUpdate struct {
	Keyword          *string // a new display form; its key must be free
	SearchVolume     *int64
	SearchVolumeHigh *int64 // 0 with SearchVolume: an exact volume again
	Difficulty       *int64
	CPC              *float64
	Currency         *string
	Intent           *int
	Status           *string
	Cluster          *string
	ParentKeyword    *string
	TargetURL        *string
	// Post links the keyword to a post; a PostRef with ID 0 unlinks it.
	Post *PostRef
}

// UpdateKeyword changes a keyword.
func (db *DB) UpdateKeyword(ctx context.Context, id int64, up KeywordUpdate) (*Keyword, error) {
	var ch changes
	set := ch.set
	if up.Keyword != nil {
		set("keyword", KeywordDisplay(*up.Keyword))
		set("keyword_key", KeywordKey(*up.Keyword))
	}
	if up.SearchVolume != nil {
		set("search_volume", *up.SearchVolume)
		if up.SearchVolumeHigh == nil {
			set("search_volume_high", nil) // a new exact volume
		}
	}
	if up.SearchVolumeHigh != nil {
		if *up.SearchVolumeHigh == 0 {
			set("search_volume_high", nil)
		} else {
			set("search_volume_high", *up.SearchVolumeHigh)
		}
	}
	given(&ch, "difficulty", up.Difficulty)
	given(&ch, "cpc", up.CPC)
	for _, f := range []struct {
		col string
		v   *string
	}{{"currency", up.Currency}, {"status", up.Status}, {"cluster", up.Cluster}, {"parent_keyword", up.ParentKeyword}, {"target_url", up.TargetURL}} {
		if f.v != nil {
			set(f.col, *f.v)
		}
	}
	given(&ch, "intent", up.Intent)
	if up.Post != nil {
		var link *PostRef
		if up.Post.ID != 0 {
			link = up.Post
		}
		wp, astro := postColumns(link)
		set("wordpress_post_id", wp)
		set("astro_post_id", astro)
	}
	if !ch.none() {
		set("updated_at", db.now())
		q, args := ch.update("seo_keywords", id)
		res, err := db.exec(ctx, q, args...)
		if err != nil {
			return nil, keywordTaken(translate(err, "keyword"))
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil, NotFound("keyword not found")
		}
	}
	return db.keywordByIDWriter(ctx, id)
}

// keywordByIDWriter reads a keyword through the writer: what a write just
// did, whatever the readers' snapshots.
func (db *DB) keywordByIDWriter(ctx context.Context, id int64) (*Keyword, error) {
	return findIn(ctx, db.w, scanKeyword, "keyword", `SELECT `+keywordColumns+` FROM seo_keywords k WHERE k.id = ?`, id)
}

// DeleteKeyword deletes a keyword.
func (db *DB) DeleteKeyword(ctx context.Context, id int64) error {
	return db.deleteByID(ctx, "seo_keywords", "keyword", id)
}

// KeywordFilter narrows ListKeywords. A list is of one environment,
// which the caller checked the scope sees: a second condition on the
// environment (a scope's IN list) would lead SQLite to seek by it and sort.
type KeywordFilter struct {
	EnvironmentID int64
	Status        string
	Intent        string // keywords whose intents include it
	Cluster       string
	VolumeMin     *int64
	VolumeMax     *int64
	DifficultyMin *int64
	DifficultyMax *int64
	Q             string // part of the keyword
	Sort          Sort   // by keywordSorts; keyword first by default
	Page
}

// keywordSorts are the fields keywords sort by, each led by an index of
// the environment (keywordSortIndex).
var keywordSorts = map[string]string{
	"keyword":       "k.keyword_key",
	"search_volume": "k.search_volume",
	"difficulty":    "k.difficulty",
	"cpc":           "k.cpc",
	"created_at":    "k.created_at",
	"updated_at":    "k.updated_at",
}

var keywordSortIndex = map[string]string{
	"":              "seo_keywords_key",
	"keyword":       "seo_keywords_key",
	"search_volume": "seo_keywords_volume",
	"difficulty":    "seo_keywords_difficulty",
	"cpc":           "seo_keywords_cpc",
	"created_at":    "seo_keywords_created",
	"updated_at":    "seo_keywords_updated",
}

func (KeywordFilter) sortColumns() map[string]string { return keywordSorts }

// ListKeywords lists an environment's keywords. The page walks the index
// of its order (INDEXED BY), checking the filters on the rows it passes:
// a page never sorts, whatever the filters; the count is left to the
// planner, which counts each filter from an index of its own.
func (db *DB) ListKeywords(ctx context.Context, f KeywordFilter) ([]*Keyword, int, error) {
	order, err := f.Sort.orderBy(keywordSorts, "k.keyword_key, k.id", "k.id")
	if err != nil {
		return nil, 0, err
	}
	where, args := []string{"k.environment_id = ?"}, []any{f.EnvironmentID}
	if f.Status != "" {
		where, args = append(where, "k.status = ?"), append(args, f.Status)
	}
	if f.Intent != "" {
		bits, ok := IntentBits([]string{f.Intent})
		if !ok {
			return nil, 0, Invalid("intent: %s is not an intent", f.Intent)
		}
		where, args = append(where, "k.intent & ? != 0"), append(args, bits)
	}
	if f.Cluster != "" {
		where, args = append(where, "k.cluster = ?"), append(args, f.Cluster)
	}
	ranges := []struct {
		col string
		op  string
		v   *int64
	}{{"k.search_volume", ">=", f.VolumeMin}, {"k.search_volume", "<=", f.VolumeMax},
		{"k.difficulty", ">=", f.DifficultyMin}, {"k.difficulty", "<=", f.DifficultyMax}}
	for _, r := range ranges {
		if r.v != nil {
			where, args = append(where, r.col+" "+r.op+" ?"), append(args, *r.v)
		}
	}
	if q := strings.TrimSpace(f.Q); q != "" {
		where, args = append(where, `k.keyword_key LIKE ? ESCAPE '\'`), append(args, likePattern(KeywordKey(q)))
	}
	return listPage(ctx, db, listQuery{from: "seo_keywords k INDEXED BY " + keywordSortIndex[f.Sort.Field], count: "seo_keywords k",
		where: where, args: args, columns: keywordColumns, order: order, what: "keywords"}, f.Page, scanKeyword)
}

// idList renders "col IN (?, ...)" for ids, with its arguments.
func idList(col string, ids []int64) (string, []any) {
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	return col + " IN (?" + strings.Repeat(", ?", len(ids)-1) + ")", args
}

// BulkDeleteKeywords deletes the keywords of ids that the scope sees, in
// one statement; others are skipped. It returns how many it deleted.
func (db *DB) BulkDeleteKeywords(ctx context.Context, sc Scope, ids []int64) (int, error) {
	ids = dedupe(ids)
	if len(ids) == 0 {
		return 0, nil
	}
	cond, args := idList("id", ids)
	if scoped, more := sc.envIn("environment_id"); scoped != "" {
		cond, args = cond+" AND "+scoped, append(args, more...)
	}
	res, err := db.exec(ctx, `DELETE FROM seo_keywords WHERE `+cond, args...)
	if err != nil {
		return 0, fmt.Errorf("store: delete keywords: %w", err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// KeywordBulkUpdate holds what a bulk update sets; nil leaves a field
// alone.
type KeywordBulkUpdate struct {
	Status        *string
	Cluster       *string
	Intent        *int
	ParentKeyword *string
}

// BulkUpdateKeywords sets the fields of up on the keywords of ids that the
// scope sees, in one statement; others are skipped. It returns how many
// it changed.
func (db *DB) BulkUpdateKeywords(ctx context.Context, sc Scope, ids []int64, up KeywordBulkUpdate) (int, error) {
	ids = dedupe(ids)
	var sets []string
	var args []any
	if up.Status != nil {
		sets, args = append(sets, "status = ?"), append(args, *up.Status)
	}
	if up.Cluster != nil {
		sets, args = append(sets, "cluster = ?"), append(args, *up.Cluster)
	}
	if up.Intent != nil {
		sets, args = append(sets, "intent = ?"), append(args, *up.Intent)
	}
	if up.ParentKeyword != nil {
		sets, args = append(sets, "parent_keyword = ?"), append(args, *up.ParentKeyword)
	}
	if len(ids) == 0 || len(sets) == 0 {
		return 0, nil
	}
	cond, idArgs := idList("id", ids)
	if scoped, more := sc.envIn("environment_id"); scoped != "" {
		cond, idArgs = cond+" AND "+scoped, append(idArgs, more...)
	}
	args = append(append(args, db.now()), idArgs...)
	res, err := db.exec(ctx, `UPDATE seo_keywords SET `+strings.Join(sets, ", ")+`, updated_at = ? WHERE `+cond, args...)
	if err != nil {
		return 0, translate(err, "keyword")
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// ImportRow is one keyword of an import, parsed and checked; nil metrics
// and Intent 0 are not in the file, and leave an existing keyword's alone.
type ImportRow struct {
	Keyword          string
	SearchVolume     *int64
	SearchVolumeHigh *int64
	Difficulty       *int64
	CPC              *float64
	Currency         string
	Intent           int
	ParentKeyword    string
}

// importCacheKiB is the writer's page cache during an import.
const importCacheKiB = 64 << 10

// ImportCounts says what an import did.
type ImportCounts struct {
	Created int
	Updated int
}

// ImportKeywords writes rows into an environment in one transaction: a
// keyword the environment does not have is created with source; one it has
// gets the metrics the row has (volume, its range, difficulty, CPC and
// currency, intent, parent keyword), and keeps the rest (its display form,
// status, cluster, target URL, post, campaign and source). Rows must have
// distinct keys (the caller merges duplicates); the statements are
// prepared once, so the transaction does nothing but write.
func (db *DB) ImportKeywords(ctx context.Context, envID int64, source string, rows []ImportRow) (ImportCounts, error) {
	var out ImportCounts
	err := db.tx(ctx, func(tx *sql.Tx) error {
		// Tens of thousands of rows touch more index pages than the
		// writer's page cache holds (2 MiB); spilling them to the WAL in
		// the middle of the transaction and reading them back took half of
		// its time. The import gets a larger cache for its own duration.
		// (SQLite's page cache; PostgreSQL's shared buffers are the server's.)
		if !db.OnPostgres() {
			var cache int64
			if err := tx.QueryRowContext(ctx, `PRAGMA cache_size`).Scan(&cache); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, fmt.Sprintf(`PRAGMA cache_size = %d`, -importCacheKiB)); err != nil {
				return err
			}
			defer func() {
				// Failing to shrink it back leaves a larger cache, no harm.
				_, _ = tx.ExecContext(context.WithoutCancel(ctx), fmt.Sprintf(`PRAGMA cache_size = %d`, cache))
			}()
		}
		now := db.now()
		ins, err := tx.PrepareContext(ctx, `INSERT INTO seo_keywords (environment_id, keyword, keyword_key, search_volume,
			search_volume_high, difficulty, cpc, currency, intent, parent_keyword, source, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (environment_id, keyword_key) DO NOTHING`)
		if err != nil {
			return err
		}
		defer ins.Close()
		// A volume in the row replaces the old one with its range (or none);
		// a currency comes with its CPC.
		upd, err := tx.PrepareContext(ctx, `UPDATE seo_keywords SET
			search_volume_high = CASE WHEN CAST(?1 AS BIGINT) IS NULL THEN search_volume_high ELSE ?2 END,
			search_volume = COALESCE(?1, search_volume),
			difficulty = COALESCE(?3, difficulty),
			currency = CASE WHEN CAST(?4 AS DOUBLE PRECISION) IS NULL THEN currency ELSE ?5 END,
			cpc = COALESCE(?4, cpc),
			intent = CASE WHEN ?6 = 0 THEN intent ELSE ?6 END,
			parent_keyword = CASE WHEN ?7 = '' THEN parent_keyword ELSE ?7 END,
			updated_at = ?8
			WHERE environment_id = ?9 AND keyword_key = ?10`)
		if err != nil {
			return err
		}
		defer upd.Close()
		for _, r := range rows {
			if err := ctx.Err(); err != nil {
				return err
			}
			display := KeywordDisplay(r.Keyword)
			key := KeywordKey(display)
			res, err := ins.ExecContext(ctx, envID, display, key, r.SearchVolume, r.SearchVolumeHigh, r.Difficulty, r.CPC, r.Currency,
				r.Intent, r.ParentKeyword, source, now, now)
			if err != nil {
				return translate(err, "keyword")
			}
			if n, _ := res.RowsAffected(); n == 1 {
				out.Created++
				continue
			}
			if _, err := upd.ExecContext(ctx, r.SearchVolume, r.SearchVolumeHigh, r.Difficulty, r.CPC, r.Currency, r.Intent,
				r.ParentKeyword, now, envID, key); err != nil {
				return translate(err, "keyword")
			}
			out.Updated++
		}
		return nil
	})
	if err != nil {
		return ImportCounts{}, fmt.Errorf("store: import keywords: %w", err)
	}
	return out, nil
}
