package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// SEO campaigns (migration 0016): a set of an environment's keywords that
// the autopilot turns into posts, with the agent, archetype, target and
// pace to do it with.

// Campaign statuses.
const (
	CampaignDraft     = "draft"
	CampaignActive    = "active"
	CampaignPaused    = "paused"
	CampaignCompleted = "completed"
)

// Campaign is an SEO campaign.
type Campaign struct {
	ID            int64
	EnvironmentID int64
	CampaignInput
	CreatedBy *int64
	CreatedAt time.Time
	UpdatedAt time.Time
	// KeywordCounts are its keywords by status (every status present).
	KeywordCounts map[string]int
}

// Progress is a campaign's keywords done (published) of those it is to
// write (all but the ignored).
func (c *Campaign) Progress() (done, total int) {
	for status, n := range c.KeywordCounts {
		if status != KeywordIgnored {
			total += n
		}
	}
	return c.KeywordCounts[KeywordPublished], total
}

// CampaignInput is a campaign's editable fields.
type CampaignInput struct {
	Name        string
	Description string
	ArchetypeID *int64
	AgentID     *int64
	Target      string // PostWordPress or PostAstro
	PostStatus  string // "draft" or "publish"
	Cadence     int    // posts per day
	Status      string
}

const campaignColumns = `c.id, c.environment_id, c.name, c.description, c.archetype_id, c.agent_id, c.target, c.post_status, c.cadence,
	c.status, c.created_by, c.created_at, c.updated_at`

func scanCampaign(row rowScanner) (*Campaign, error) {
	var c Campaign
	var arch, agent, by sql.NullInt64
	var created, updated string
	if err := row.Scan(&c.ID, &c.EnvironmentID, &c.Name, &c.Description, &arch, &agent, &c.Target, &c.PostStatus, &c.Cadence,
		&c.Status, &by, &created, &updated); err != nil {
		return nil, err
	}
	c.ArchetypeID, c.AgentID, c.CreatedBy = nullID(arch), nullID(agent), nullID(by)
	c.CreatedAt, c.UpdatedAt = parseTime(created), parseTime(updated)
	return &c, nil
}

// campaignTaken is the conflict of a name the environment has.
func campaignTaken(err error) error {
	if KindOf(err) == KindConflict {
		return &Error{Kind: KindConflict, Message: "name: this environment has a campaign with this name already", Err: err}
	}
	return err
}

// CreateCampaign inserts a campaign in an environment with keywordIDs, in
// that order (see AddCampaignKeywords for what they may be), in one
// transaction.
func (db *DB) CreateCampaign(ctx context.Context, envID int64, in CampaignInput, keywordIDs []int64, createdBy int64) (*Campaign, error) {
	var id int64
	err := db.tx(ctx, func(tx *sql.Tx) error {
		now := db.now()
		err := tx.QueryRowContext(ctx, `INSERT INTO seo_campaigns (environment_id, name, description, archetype_id, agent_id, target,
			post_status, cadence, status, created_by, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
			envID, in.Name, in.Description, in.ArchetypeID, in.AgentID, in.Target, in.PostStatus, in.Cadence, in.Status, createdBy, now, now).Scan(&id)
		if err != nil {
			return campaignTaken(translate(err, "campaign"))
		}
		_, err = addCampaignKeywords(ctx, tx, id, envID, "keyword_ids", keywordIDs, now)
		return err
	})
	if err != nil {
		return nil, err
	}
	return db.campaignByID(ctx, db.w, id)
}

// CampaignByID finds a campaign with its keyword counts.
func (db *DB) CampaignByID(ctx context.Context, id int64) (*Campaign, error) {
	return db.campaignByID(ctx, db.r, id)
}

// campaignByID reads a campaign through q: the writer after a write, so
// the answer shows it.
func (db *DB) campaignByID(ctx context.Context, q querier, id int64) (*Campaign, error) {
	c, err := findIn(ctx, q, scanCampaign, "campaign", `SELECT `+campaignColumns+` FROM seo_campaigns c WHERE c.id = ?`, id)
	if err != nil {
		return nil, err
	}
	rows, err := q.QueryContext(ctx, `SELECT campaign_id, status, COUNT(*) FROM seo_keywords WHERE campaign_id = ? GROUP BY campaign_id, status`, id)
	if err != nil {
		return nil, fmt.Errorf("store: campaign progress: %w", err)
	}
	if err := fillKeywordCounts(rows, []*Campaign{c}); err != nil {
		return nil, err
	}
	return c, nil
}

// fillKeywordCounts reads (campaign_id, status, count) rows into the
// campaigns' KeywordCounts, and closes rows.
func fillKeywordCounts(rows *sql.Rows, cs []*Campaign) error {
	defer rows.Close()
	byID := make(map[int64]*Campaign, len(cs))
	for _, c := range cs {
		c.KeywordCounts = make(map[string]int, len(KeywordStatuses))
		for _, s := range KeywordStatuses {
			c.KeywordCounts[s] = 0
		}
		byID[c.ID] = c
	}
	for rows.Next() {
		var id int64
		var status string
		var n int
		if err := rows.Scan(&id, &status, &n); err != nil {
			return fmt.Errorf("store: campaign progress: %w", err)
		}
		if c := byID[id]; c != nil {
			c.KeywordCounts[status] = n
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("store: campaign progress: %w", err)
	}
	return nil
}

// ReplaceCampaign overwrites a campaign's editable fields.
func (db *DB) ReplaceCampaign(ctx context.Context, id int64, in CampaignInput) (*Campaign, error) {
	res, err := db.exec(ctx, `UPDATE seo_campaigns SET name = ?, description = ?, archetype_id = ?, agent_id = ?, target = ?, post_status = ?,
		cadence = ?, status = ?, updated_at = ? WHERE id = ?`,
		in.Name, in.Description, in.ArchetypeID, in.AgentID, in.Target, in.PostStatus, in.Cadence, in.Status, db.now(), id)
	if err != nil {
		return nil, campaignTaken(translate(err, "campaign"))
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil, NotFound("campaign not found")
	}
	return db.campaignByID(ctx, db.w, id)
}

// DeleteCampaign deletes a campaign; its keywords stay, in no campaign.
func (db *DB) DeleteCampaign(ctx context.Context, id int64) error {
	err := db.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE seo_keywords SET campaign_id = NULL, campaign_position = NULL, updated_at = ?
			WHERE campaign_id = ?`, db.now(), id); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM seo_campaigns WHERE id = ?`, id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return NotFound("campaign not found")
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: delete campaign: %w", err)
	}
	return nil
}

// CampaignFilter narrows ListCampaigns.
type CampaignFilter struct {
	Scope         Scope
	EnvironmentID *int64
	AgentID       *int64 // the campaigns an agent writes for
	Status        string
	Q             string // part of the name
	Sort          Sort   // by campaignSorts; name first by default
	Page
}

// campaignSorts are the fields campaigns sort by; each has an index for
// one environment and one for all (campaignIndexes).
var campaignSorts = map[string]string{
	"name":       "c.name COLLATE NOCASE",
	"created_at": "c.created_at",
	"updated_at": "c.updated_at",
}

// campaignIndexes name the index a sort walks: of all environments, and
// of one.
var campaignIndexes = map[string][2]string{
	"name":       {"seo_campaigns_list", "seo_campaigns_name"},
	"created_at": {"seo_campaigns_created", "seo_campaigns_env_created"},
	"updated_at": {"seo_campaigns_updated", "seo_campaigns_env_updated"},
}

func (CampaignFilter) sortColumns() map[string]string { return campaignSorts }

// ListCampaigns lists campaigns with their keyword counts, walking the
// index of the order asked for.
func (db *DB) ListCampaigns(ctx context.Context, f CampaignFilter) ([]*Campaign, int, error) {
	order, err := f.Sort.orderBy(campaignSorts, "c.name COLLATE NOCASE, c.id", "c.id")
	if err != nil {
		return nil, 0, err
	}
	field := f.Sort.Field
	if field == "" {
		field = "name"
	}
	index := campaignIndexes[field][0]
	var where []string
	var args []any
	switch {
	case f.EnvironmentID != nil:
		// The scope decides in Go: its IN list beside the equality could
		// lead SQLite to seek by the list and sort.
		where, args = append(where, "c.environment_id = ?"), append(args, *f.EnvironmentID)
		if !f.Scope.Sees(*f.EnvironmentID) {
			where = append(where, "1 = 0")
		}
		index = campaignIndexes[field][1]
	default:
		if cond, more := f.Scope.envIn("c.environment_id"); cond != "" {
			where, args = append(where, cond), append(args, more...)
		}
	}
	if f.AgentID != nil {
		where, args = append(where, "c.agent_id = ?"), append(args, *f.AgentID)
	}
	if f.Status != "" {
		where, args = append(where, "c.status = ?"), append(args, f.Status)
	}
	if q := strings.TrimSpace(f.Q); q != "" {
		where, args = append(where, `c.name LIKE ? ESCAPE '\'`), append(args, likePattern(q))
	}
	out, total, err := listPage(ctx, db, listQuery{from: "seo_campaigns c INDEXED BY " + index, count: "seo_campaigns c", where: where,
		args: args, columns: campaignColumns, order: order, what: "campaigns"}, f.Page, scanCampaign)
	if err != nil {
		return nil, 0, err
	}
	if len(out) == 0 {
		return out, total, nil
	}
	ids := make([]int64, len(out))
	for i, c := range out {
		ids[i] = c.ID
	}
	cond, idArgs := idList("campaign_id", ids)
	rows, err := db.listRows(ctx, `SELECT campaign_id, status, COUNT(*) FROM seo_keywords WHERE `+cond+` GROUP BY campaign_id, status`, idArgs...)
	if err != nil {
		return nil, 0, fmt.Errorf("store: campaign progress: %w", err)
	}
	if err := fillKeywordCounts(rows, out); err != nil {
		return nil, 0, err
	}
	return out, total, nil
}

// AddCampaignKeywords appends keywords to a campaign, in the order of ids,
// after those it has. Each must be a keyword of the campaign's
// environment (invalid otherwise) in no other campaign (a conflict); one
// the campaign has already stays where it is. It returns how many were
// added.
func (db *DB) AddCampaignKeywords(ctx context.Context, campaignID int64, ids []int64) (int, error) {
	var added int
	err := db.tx(ctx, func(tx *sql.Tx) error {
		envID, err := envOf(ctx, tx, "seo_campaigns", campaignID, "campaign")
		if err != nil {
			return err
		}
		now := db.now()
		if added, err = addCampaignKeywords(ctx, tx, campaignID, envID, "ids", ids, now); err != nil {
			return err
		}
		if added > 0 {
			_, err = tx.ExecContext(ctx, `UPDATE seo_campaigns SET updated_at = ? WHERE id = ?`, now, campaignID)
		}
		return err
	})
	if err != nil {
		return 0, err
	}
	return added, nil
}

// addCampaignKeywords is AddCampaignKeywords within tx, for a campaign of
// environment envID; field names the ids in the caller's request.
func addCampaignKeywords(ctx context.Context, tx *sql.Tx, campaignID, envID int64, field string, ids []int64, now string) (int, error) {
	ids = firstOfEach(ids) // in the caller's order: it is the campaign's
	if len(ids) == 0 {
		return 0, nil
	}
	type found struct {
		env      int64
		campaign sql.NullInt64
		name     sql.NullString
	}
	cond, args := idList("k.id", ids)
	rows, err := tx.QueryContext(ctx, `SELECT k.id, k.environment_id, k.campaign_id, c.name FROM seo_keywords k
		LEFT JOIN seo_campaigns c ON c.id = k.campaign_id WHERE `+cond, args...)
	if err != nil {
		return 0, err
	}
	have := make(map[int64]found, len(ids))
	for rows.Next() {
		var id int64
		var f found
		if err := rows.Scan(&id, &f.env, &f.campaign, &f.name); err != nil {
			rows.Close()
			return 0, err
		}
		have[id] = f
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	var todo []int64
	for _, id := range ids {
		f, ok := have[id]
		switch {
		case !ok || f.env != envID:
			return 0, Invalid("%s: no keyword with id %d in the campaign's environment", field, id)
		case f.campaign.Valid && f.campaign.Int64 != campaignID:
			return 0, Conflict("keyword %d is in campaign %q already: a keyword is in one campaign at a time; remove it there first", id, f.name.String)
		case !f.campaign.Valid:
			todo = append(todo, id)
		}
	}
	var pos int64
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(campaign_position), 0) FROM seo_keywords WHERE campaign_id = ?`,
		campaignID).Scan(&pos); err != nil {
		return 0, err
	}
	for _, id := range todo {
		pos++
		if _, err := tx.ExecContext(ctx, `UPDATE seo_keywords SET campaign_id = ?, campaign_position = ?, updated_at = ? WHERE id = ?`,
			campaignID, pos, now, id); err != nil {
			return 0, err
		}
	}
	return len(todo), nil
}

// firstOfEach is ids without repeats, in their order.
func firstOfEach(ids []int64) []int64 {
	out := make([]int64, 0, len(ids))
	seen := make(map[int64]bool, len(ids))
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// RemoveCampaignKeywords takes keywords out of a campaign; ids it does
// not have are skipped. It returns how many were removed.
func (db *DB) RemoveCampaignKeywords(ctx context.Context, campaignID int64, ids []int64) (int, error) {
	ids = dedupe(ids)
	var removed int
	err := db.tx(ctx, func(tx *sql.Tx) error {
		if _, err := envOf(ctx, tx, "seo_campaigns", campaignID, "campaign"); err != nil {
			return err
		}
		if len(ids) == 0 {
			return nil
		}
		now := db.now()
		cond, args := idList("id", ids)
		res, err := tx.ExecContext(ctx, `UPDATE seo_keywords SET campaign_id = NULL, campaign_position = NULL, updated_at = ?
			WHERE campaign_id = ? AND `+cond, append([]any{now, campaignID}, args...)...)
		if err != nil {
			return err
		}
		n, _ := res.RowsAffected()
		if removed = int(n); removed > 0 {
			_, err = tx.ExecContext(ctx, `UPDATE seo_campaigns SET updated_at = ? WHERE id = ?`, now, campaignID)
		}
		return err
	})
	if err != nil {
		return 0, err
	}
	return removed, nil
}

// SetCampaignKeywordOrder puts a campaign's keywords in the order of ids,
// which must name each of them exactly once (invalid otherwise: a keyword
// missing, repeated or not the campaign's). It returns how many moved.
func (db *DB) SetCampaignKeywordOrder(ctx context.Context, campaignID int64, ids []int64) (int, error) {
	var moved int
	err := db.tx(ctx, func(tx *sql.Tx) error {
		if _, err := envOf(ctx, tx, "seo_campaigns", campaignID, "campaign"); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT id FROM seo_keywords WHERE campaign_id = ? ORDER BY campaign_position, id`, campaignID)
		if err != nil {
			return err
		}
		current, err := scanIDs(rows)
		if err != nil {
			return err
		}
		has := make(map[int64]bool, len(current))
		for _, id := range current {
			has[id] = true
		}
		seen := make(map[int64]bool, len(ids))
		for _, id := range ids {
			switch {
			case !has[id]:
				return Invalid("ids: keyword %d is not in the campaign", id)
			case seen[id]:
				return Invalid("ids: keyword %d is named twice", id)
			}
			seen[id] = true
		}
		if len(ids) != len(current) {
			for _, id := range current {
				if !seen[id] {
					return Invalid("ids: keyword %d of the campaign is missing: give all %d of its keywords in their new order", id, len(current))
				}
			}
		}
		// Positions become 1..n (gaps left by removals close); a keyword
		// that kept its place keeps its updated_at.
		now := db.now()
		for i, id := range ids {
			q, args := `UPDATE seo_keywords SET campaign_position = ? WHERE id = ?`, []any{i + 1, id}
			if current[i] != id {
				moved++
				q, args = `UPDATE seo_keywords SET campaign_position = ?, updated_at = ? WHERE id = ?`, []any{i + 1, now, id}
			}
			if _, err := tx.ExecContext(ctx, q, args...); err != nil {
				return err
			}
		}
		if moved > 0 {
			_, err = tx.ExecContext(ctx, `UPDATE seo_campaigns SET updated_at = ? WHERE id = ?`, now, campaignID)
		}
		return err
	})
	if err != nil {
		return 0, err
	}
	return moved, nil
}

// ListCampaignKeywords lists a campaign's keywords in its order.
func (db *DB) ListCampaignKeywords(ctx context.Context, campaignID int64, p Page) ([]*Keyword, int, error) {
	return listPage(ctx, db, listQuery{from: "seo_keywords k INDEXED BY seo_keywords_campaign", count: "seo_keywords k",
		where: []string{"k.campaign_id = ?"}, args: []any{campaignID}, columns: keywordColumns,
		order: "k.campaign_position, k.id", what: "campaign keywords"}, p, scanKeyword)
}

// ClaimCampaignKeyword is how the autopilot takes the next keyword of a
// campaign: the first, in the campaign's order, that is new or planned
// becomes in_progress, in one statement on the one writer, so two runs
// never take the same keyword. It answers not found when none is left.
// The run links the post it makes and sets the keyword's final status
// with UpdateKeyword (Post, Status).
func (db *DB) ClaimCampaignKeyword(ctx context.Context, campaignID int64) (*Keyword, error) {
	k, err := insertRow(ctx, db, scanKeyword, `UPDATE seo_keywords SET status = 'in_progress', updated_at = ?
		WHERE id = (SELECT id FROM seo_keywords WHERE campaign_id = ? AND status IN ('new', 'planned')
		ORDER BY campaign_position, id LIMIT 1) RETURNING `+returning(keywordColumns), db.now(), campaignID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, NotFound("campaign %d has no keyword left to write", campaignID)
	}
	if err != nil {
		return nil, fmt.Errorf("store: claim keyword: %w", err)
	}
	return k, nil
}
