// Package seo holds the rules of SEO intelligence (/api/seo): an
// environment's keywords, their import from the exports of keyword tools,
// and campaigns, which give a set of keywords an agent, an archetype, a
// publishing target and a pace for the autopilot.
//
// Who sees what: keywords and campaigns belong to one environment; a scope
// sees those of its environments, and any other is not found. Viewers
// read, editors and up write (the route table says who may call what).
// Lists are of one environment (keywords) or of those the scope sees
// (campaigns).
package seo

import (
	"context"
	"math"
	"net/url"
	"slices"
	"strings"

	"github.com/copydesk/copydesk/server/environment"
	"github.com/copydesk/copydesk/server/valid"
	"github.com/copydesk/copydesk/server/webhook"
	"github.com/copydesk/copydesk/store"
)

// Store is what the service needs of the store.
type Store interface {
	KeywordByID(ctx context.Context, id int64) (*store.Keyword, error)
	ListKeywords(ctx context.Context, f store.KeywordFilter) ([]*store.Keyword, int, error)
	CreateKeyword(ctx context.Context, n store.NewKeyword) (*store.Keyword, error)
	UpdateKeyword(ctx context.Context, id int64, up store.KeywordUpdate) (*store.Keyword, error)
	DeleteKeyword(ctx context.Context, id int64) error
	BulkDeleteKeywords(ctx context.Context, sc store.Scope, ids []int64) (int, error)
	BulkUpdateKeywords(ctx context.Context, sc store.Scope, ids []int64, up store.KeywordBulkUpdate) (int, error)
	ImportKeywords(ctx context.Context, envID int64, source string, rows []store.ImportRow) (store.ImportCounts, error)

	CampaignByID(ctx context.Context, id int64) (*store.Campaign, error)
	ListCampaigns(ctx context.Context, f store.CampaignFilter) ([]*store.Campaign, int, error)
	CreateCampaign(ctx context.Context, envID int64, in store.CampaignInput, keywordIDs []int64, createdBy int64) (*store.Campaign, error)
	ReplaceCampaign(ctx context.Context, id int64, in store.CampaignInput) (*store.Campaign, error)
	DeleteCampaign(ctx context.Context, id int64) error
	AddCampaignKeywords(ctx context.Context, campaignID int64, ids []int64) (int, error)
	RemoveCampaignKeywords(ctx context.Context, campaignID int64, ids []int64) (int, error)
	SetCampaignKeywordOrder(ctx context.Context, campaignID int64, ids []int64) (int, error)
	ListCampaignKeywords(ctx context.Context, campaignID int64, p store.Page) ([]*store.Keyword, int, error)

	WordPressPostByID(ctx context.Context, id int64) (*store.WordPressPost, error)
	AstroPostByID(ctx context.Context, id int64) (*store.AstroPost, error)
	AgentByID(ctx context.Context, id int64) (*store.Agent, error)
	ArchetypeByID(ctx context.Context, id int64) (*store.Archetype, error)
}

// Service implements the SEO rules.
type Service struct {
	db    Store
	envs  environment.Getter
	hooks webhook.Emitter
}

// New returns the service.
func New(db Store, envs environment.Getter) *Service {
	return &Service{db: db, envs: envs, hooks: webhook.Discard}
}

// EmitTo makes an import tell webhooks (keywords.imported); called once,
// before the service is used.
func (s *Service) EmitTo(h webhook.Emitter) { s.hooks = webhook.Or(h) }

// Limits of the fields.
const (
	maxKeyword   = 200
	maxTargetURL = 2000
	maxVolume    = 1e12
	maxCPC       = 1e5
)

// KeywordInput is a keyword to create.
type KeywordInput struct {
	EnvironmentID    int64
	Keyword          string
	SearchVolume     *int64
	SearchVolumeHigh *int64
	Difficulty       *int64
	CPC              *float64
	Currency         string
	Intent           []string
	Status           string // "": new
	Cluster          string
	ParentKeyword    string
	TargetURL        string
	Post             *store.PostRef
}

// KeywordChange holds the fields to change; nil leaves one alone.
type KeywordChange struct {
	Keyword          *string
	SearchVolume     *int64
	SearchVolumeHigh *int64 // 0: an exact volume
	Difficulty       *int64
	CPC              *float64
	Currency         *string
	Intent           *[]string
	Status           *string
	Cluster          *string
	ParentKeyword    *string
	TargetURL        *string
	Post             *store.PostRef // ID 0: unlink
}

// KeywordQuery narrows a list of keywords: one environment's.
type KeywordQuery struct {
	EnvironmentID int64
	Status        string
	Intent        string
	Cluster       string
	VolumeMin     *int64
	VolumeMax     *int64
	DifficultyMin *int64
	DifficultyMax *int64
	Q             string
	Sort          store.Sort
	Page          store.Page
}

// ListKeywords lists the keywords of an environment the scope sees.
func (s *Service) ListKeywords(ctx context.Context, sc store.Scope, q KeywordQuery) ([]*store.Keyword, int, error) {
	if _, err := s.envs.Get(ctx, sc, q.EnvironmentID); err != nil {
		return nil, 0, err
	}
	if q.Status != "" && !slices.Contains(store.KeywordStatuses, q.Status) {
		return nil, 0, errStatus
	}
	if q.VolumeMin != nil && q.VolumeMax != nil && *q.VolumeMin > *q.VolumeMax {
		return nil, 0, store.Invalid("volume_min: must not be above volume_max")
	}
	if q.DifficultyMin != nil && q.DifficultyMax != nil && *q.DifficultyMin > *q.DifficultyMax {
		return nil, 0, store.Invalid("difficulty_min: must not be above difficulty_max")
	}
	return s.db.ListKeywords(ctx, store.KeywordFilter{EnvironmentID: q.EnvironmentID, Status: q.Status, Intent: q.Intent,
		Cluster: strings.TrimSpace(q.Cluster), VolumeMin: q.VolumeMin, VolumeMax: q.VolumeMax, DifficultyMin: q.DifficultyMin,
		DifficultyMax: q.DifficultyMax, Q: q.Q, Sort: q.Sort, Page: q.Page})
}

// Keyword returns a keyword the scope sees.
func (s *Service) Keyword(ctx context.Context, sc store.Scope, id int64) (*store.Keyword, error) {
	return store.Seen(ctx, id, s.db.KeywordByID, func(k *store.Keyword) bool { return sc.Sees(k.EnvironmentID) }, "keyword")
}

// CreateKeyword adds a keyword to an environment the scope sees, by hand
// (source manual).
func (s *Service) CreateKeyword(ctx context.Context, sc store.Scope, in KeywordInput) (*store.Keyword, error) {
	if err := s.checkEnv(ctx, sc, in.EnvironmentID); err != nil {
		return nil, err
	}
	if in.Status == "" {
		in.Status = store.KeywordNew
	}
	ch := KeywordChange{Keyword: &in.Keyword, SearchVolume: in.SearchVolume, SearchVolumeHigh: in.SearchVolumeHigh,
		Difficulty: in.Difficulty, CPC: in.CPC, Currency: &in.Currency, Intent: &in.Intent, Status: &in.Status, Cluster: &in.Cluster,
		ParentKeyword: &in.ParentKeyword, TargetURL: &in.TargetURL, Post: in.Post}
	up, err := s.checkChange(ctx, in.EnvironmentID, ch)
	if err != nil {
		return nil, err
	}
	if in.SearchVolumeHigh != nil && in.SearchVolume == nil {
		return nil, store.Invalid("search_volume_high: comes with search_volume, the low bound of the range")
	}
	n := store.NewKeyword{EnvironmentID: in.EnvironmentID, Keyword: *up.Keyword, SearchVolume: up.SearchVolume,
		SearchVolumeHigh: up.SearchVolumeHigh, Difficulty: up.Difficulty, CPC: up.CPC, Currency: *up.Currency, Intent: *up.Intent,
		Status: *up.Status, Cluster: *up.Cluster, ParentKeyword: *up.ParentKeyword, TargetURL: *up.TargetURL, Source: "manual"}
	if up.Post != nil && up.Post.ID != 0 {
		n.Post = up.Post
	}
	if n.SearchVolumeHigh != nil && *n.SearchVolumeHigh == 0 {
		n.SearchVolumeHigh = nil
	}
	return s.db.CreateKeyword(ctx, n)
}

// UpdateKeyword changes a keyword the scope sees.
func (s *Service) UpdateKeyword(ctx context.Context, sc store.Scope, id int64, ch KeywordChange) (*store.Keyword, error) {
	k, err := s.Keyword(ctx, sc, id)
	if err != nil {
		return nil, err
	}
	up, err := s.checkChange(ctx, k.EnvironmentID, ch)
	if err != nil {
		return nil, err
	}
	if up.SearchVolumeHigh != nil && *up.SearchVolumeHigh != 0 {
		low := k.SearchVolume
		if up.SearchVolume != nil {
			low = up.SearchVolume
		}
		if low == nil || *low > *up.SearchVolumeHigh {
			return nil, store.Invalid("search_volume_high: must be at least search_volume, the low bound of the range")
		}
	}
	return s.db.UpdateKeyword(ctx, id, up)
}

// DeleteKeyword deletes a keyword the scope sees.
func (s *Service) DeleteKeyword(ctx context.Context, sc store.Scope, id int64) error {
	if _, err := s.Keyword(ctx, sc, id); err != nil {
		return err
	}
	return s.db.DeleteKeyword(ctx, id)
}

// BulkDeleteKeywords deletes the keywords of ids the scope sees and says
// how many; the others are skipped.
func (s *Service) BulkDeleteKeywords(ctx context.Context, sc store.Scope, ids []int64) (int, error) {
	if err := checkIDs(ids); err != nil {
		return 0, err
	}
	return s.db.BulkDeleteKeywords(ctx, sc, ids)
}

// BulkChange is what a bulk update sets.
type BulkChange struct {
	Status        *string
	Cluster       *string
	Intent        *[]string
	ParentKeyword *string
}

// BulkUpdateKeywords sets the fields of ch on the keywords of ids the
// scope sees and says how many; the others are skipped.
func (s *Service) BulkUpdateKeywords(ctx context.Context, sc store.Scope, ids []int64, ch BulkChange) (int, error) {
	if err := checkIDs(ids); err != nil {
		return 0, err
	}
	if ch.Status == nil && ch.Cluster == nil && ch.Intent == nil && ch.ParentKeyword == nil {
		return 0, store.Invalid("body: set at least one of status, cluster, intent, parent_keyword")
	}
	up, err := s.checkChange(ctx, 0, KeywordChange{Status: ch.Status, Cluster: ch.Cluster, Intent: ch.Intent, ParentKeyword: ch.ParentKeyword})
	if err != nil {
		return 0, err
	}
	return s.db.BulkUpdateKeywords(ctx, sc, ids, store.KeywordBulkUpdate{Status: up.Status, Cluster: up.Cluster, Intent: up.Intent,
		ParentKeyword: up.ParentKeyword})
}

// maxBulk is how many ids one bulk action takes.
const maxBulk = 1000

func checkIDs(ids []int64) error {
	if len(ids) == 0 || len(ids) > maxBulk {
		return store.Invalid("ids: give 1 to %d ids", maxBulk)
	}
	for _, id := range ids {
		if id <= 0 {
			return store.Invalid("ids: must be positive ids")
		}
	}
	return nil
}

var errStatus = store.Invalid("status: must be one of %s", strings.Join(store.KeywordStatuses, ", "))

// checkChange checks and normalises the fields a change sets, for a
// keyword of environment envID (0: a bulk change, which links no post).
func (s *Service) checkChange(ctx context.Context, envID int64, ch KeywordChange) (store.KeywordUpdate, error) {
	up := store.KeywordUpdate{SearchVolume: ch.SearchVolume, SearchVolumeHigh: ch.SearchVolumeHigh, Difficulty: ch.Difficulty, CPC: ch.CPC}
	var err error
	if ch.Keyword != nil {
		v, err := checkKeyword(*ch.Keyword)
		if err != nil {
			return up, err
		}
		up.Keyword = &v
	}
	if v := ch.SearchVolume; v != nil && (*v < 0 || *v > maxVolume) {
		return up, store.Invalid("search_volume: must be from 0 to %d", int64(maxVolume))
	}
	if v := ch.SearchVolumeHigh; v != nil && (*v < 0 || *v > maxVolume) {
		return up, store.Invalid("search_volume_high: must be from 0 to %d", int64(maxVolume))
	}
	if v := ch.SearchVolumeHigh; v != nil && ch.SearchVolume != nil && *v != 0 && *v < *ch.SearchVolume {
		return up, store.Invalid("search_volume_high: must be at least search_volume, the low bound of the range")
	}
	if v := ch.Difficulty; v != nil && (*v < 0 || *v > 100) {
		return up, store.Invalid("difficulty: must be from 0 to 100")
	}
	if v := ch.CPC; v != nil && (math.IsNaN(*v) || *v < 0 || *v > maxCPC) {
		return up, store.Invalid("cpc: must be from 0 to %d", int(maxCPC))
	}
	if ch.Currency != nil {
		c := currency(*ch.Currency)
		if c == "" && strings.TrimSpace(*ch.Currency) != "" {
			return up, store.Invalid("currency: must be a three-letter ISO 4217 code like USD or EUR")
		}
		up.Currency = &c
	}
	if ch.Intent != nil {
		bits, ok := store.IntentBits(*ch.Intent)
		if !ok {
			return up, store.Invalid("intent: each must be one of %s", strings.Join(store.KeywordIntents, ", "))
		}
		up.Intent = &bits
	}
	if ch.Status != nil {
		if !slices.Contains(store.KeywordStatuses, *ch.Status) {
			return up, errStatus
		}
		up.Status = ch.Status
	}
	if up.Cluster, err = checkOptional("cluster", ch.Cluster); err != nil {
		return up, err
	}
	if up.ParentKeyword, err = checkOptional("parent_keyword", ch.ParentKeyword); err != nil {
		return up, err
	}
	if ch.TargetURL != nil {
		u, err := checkTargetURL(*ch.TargetURL)
		if err != nil {
			return up, err
		}
		up.TargetURL = &u
	}
	if ch.Post != nil {
		if err := s.checkPost(ctx, envID, ch.Post); err != nil {
			return up, err
		}
		up.Post = ch.Post
	}
	return up, nil
}

func checkOptional(field string, v *string) (*string, error) {
	if v == nil {
		return nil, nil
	}
	out, err := checkText(field, *v)
	return &out, err
}

// checkTargetURL: the page meant to rank, an absolute http(s) address or
// a path of the site ("/guides/shoes").
func checkTargetURL(v string) (string, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return "", nil
	}
	if err := valid.Line("target_url", v); err != nil {
		return "", err
	}
	if err := valid.MaxLen("target_url", v, maxTargetURL); err != nil {
		return "", err
	}
	u, err := url.Parse(v)
	switch {
	case err != nil:
	case (u.Scheme == "http" || u.Scheme == "https") && u.Host != "":
		return v, nil
	case u.Scheme == "" && u.Host == "" && strings.HasPrefix(v, "/") && !strings.HasPrefix(v, "//"):
		return v, nil
	}
	return "", store.Invalid("target_url: must be an http(s) address or a path of the site starting with /")
}

// checkPost: a post linked to a keyword is one of the keyword's
// environment, of the kind named.
func (s *Service) checkPost(ctx context.Context, envID int64, p *store.PostRef) error {
	if p.ID == 0 {
		return nil // unlink
	}
	if p.Kind != store.PostWordPress && p.Kind != store.PostAstro {
		return store.Invalid("post_kind: must be wordpress or astro")
	}
	var postEnv int64
	var err error
	switch p.Kind {
	case store.PostWordPress:
		var post *store.WordPressPost
		if post, err = s.db.WordPressPostByID(ctx, p.ID); err == nil {
			postEnv = post.EnvironmentID
		}
	default:
		var post *store.AstroPost
		if post, err = s.db.AstroPostByID(ctx, p.ID); err == nil {
			postEnv = post.EnvironmentID
		}
	}
	if store.IsNotFound(err) || err == nil && postEnv != envID {
		return store.Invalid("post_id: no %s post with id %d in the keyword's environment", p.Kind, p.ID)
	}
	return err
}

// checkEnv: the environment of something new is one the caller sees; one
// it does not is named as missing, like an unknown one.
func (s *Service) checkEnv(ctx context.Context, sc store.Scope, id int64) error {
	_, err := s.newIn(ctx, sc, id)
	return err
}

// newIn is the environment something new goes into (see checkEnv).
func (s *Service) newIn(ctx context.Context, sc store.Scope, id int64) (*store.Environment, error) {
	return environment.For(ctx, s.envs, sc, id)
}
