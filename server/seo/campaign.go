package seo

import (
	"context"
	"slices"
	"strings"

	"github.com/copydesk/copydesk/server/valid"
	"github.com/copydesk/copydesk/store"
)

// Campaigns: a set of an environment's keywords (each in one campaign at
// most, in an order), the agent that writes them and the archetype it
// follows, where the posts go (wordpress or astro) and with which status
// (draft or publish), how many a day (cadence), and the campaign's status.
//
// An agent is assigned to a campaign by campaign.agent_id: it must be an
// agent the caller sees that may run in the campaign's environment (its
// own, one it is assigned to, or a global agent). The assignment holds:
// the store refuses to take that environment from the agent's
// assignments while the campaign has it (409), and GET
// /api/agents/{id}/campaigns lists an agent's campaigns. An archetype must
// be global or of the campaign's environment. A campaign becomes active
// only with an active agent, an archetype, and a target the environment
// is configured for.

// Campaign limits and defaults.
const (
	maxCampaignName = 200
	maxDescription  = 5000
	maxCadence      = 100
)

var (
	campaignStatuses = []string{store.CampaignDraft, store.CampaignActive, store.CampaignPaused, store.CampaignCompleted}
	targets          = []string{store.PostWordPress, store.PostAstro}
	postStatuses     = []string{"draft", "publish"}
)

// CampaignInput is a campaign to create.
type CampaignInput struct {
	EnvironmentID int64
	store.CampaignInput
	KeywordIDs []int64 // its keywords, in order
}

// CampaignChange holds the fields to change; nil leaves one alone.
type CampaignChange struct {
	Name        *string
	Description *string
	ArchetypeID *int64 // 0: none
	AgentID     *int64 // 0: none
	Target      *string
	PostStatus  *string
	Cadence     *int
	Status      *string
}

// CampaignQuery narrows a list of campaigns.
type CampaignQuery struct {
	EnvironmentID *int64
	AgentID       *int64
	Status        string
	Q             string
	Sort          store.Sort
	Page          store.Page
}

// ListCampaigns lists the campaigns the scope sees; an environment it
// does not see is not found.
func (s *Service) ListCampaigns(ctx context.Context, sc store.Scope, q CampaignQuery) ([]*store.Campaign, int, error) {
	if q.EnvironmentID != nil {
		if _, err := s.envs.Get(ctx, sc, *q.EnvironmentID); err != nil {
			return nil, 0, err
		}
	}
	if q.Status != "" && !slices.Contains(campaignStatuses, q.Status) {
		return nil, 0, errCampaignStatus
	}
	return s.db.ListCampaigns(ctx, store.CampaignFilter{Scope: sc, EnvironmentID: q.EnvironmentID, AgentID: q.AgentID,
		Status: q.Status, Q: q.Q, Sort: q.Sort, Page: q.Page})
}

// AgentCampaigns lists the campaigns an agent the scope sees writes for,
// among those the scope sees.
func (s *Service) AgentCampaigns(ctx context.Context, sc store.Scope, agentID int64, q CampaignQuery) ([]*store.Campaign, int, error) {
	if _, err := store.Seen(ctx, agentID, s.db.AgentByID, func(a *store.Agent) bool { return a.VisibleIn(sc) }, "agent"); err != nil {
		return nil, 0, err
	}
	q.AgentID = &agentID
	return s.ListCampaigns(ctx, sc, q)
}

// Campaign returns a campaign the scope sees.
func (s *Service) Campaign(ctx context.Context, sc store.Scope, id int64) (*store.Campaign, error) {
	return store.Seen(ctx, id, s.db.CampaignByID, func(c *store.Campaign) bool { return sc.Sees(c.EnvironmentID) }, "campaign")
}

// CreateCampaign makes a campaign in an environment the scope sees. An
// agent or archetype left out is the environment's default one
// (configuration default_agent_id, default_archetype_id) when that may be
// used there.
func (s *Service) CreateCampaign(ctx context.Context, sc store.Scope, in CampaignInput) (*store.Campaign, error) {
	env, err := s.newIn(ctx, sc, in.EnvironmentID)
	if err != nil {
		return nil, err
	}
	c := in.CampaignInput
	if c.PostStatus == "" {
		c.PostStatus = "draft"
	}
	if c.Cadence == 0 {
		c.Cadence = 1
	}
	if c.Status == "" {
		c.Status = store.CampaignDraft
	}
	if c.AgentID == nil && env.Configuration.DefaultAgentID != nil {
		if _, err := s.agent(ctx, sc, *env.Configuration.DefaultAgentID, env.ID); err == nil {
			c.AgentID = env.Configuration.DefaultAgentID
		}
	}
	if c.ArchetypeID == nil && env.Configuration.DefaultArchetypeID != nil {
		if err := s.checkArchetype(ctx, *env.Configuration.DefaultArchetypeID, env.ID); err == nil {
			c.ArchetypeID = env.Configuration.DefaultArchetypeID
		}
	}
	if err := checkFields(&c); err != nil {
		return nil, err
	}
	if err := s.checkLinks(ctx, sc, env.ID, c.AgentID, c.ArchetypeID); err != nil {
		return nil, err
	}
	if c.Status == store.CampaignActive {
		if err := s.checkActive(ctx, sc, env, &c); err != nil {
			return nil, err
		}
	}
	for _, id := range in.KeywordIDs {
		if id <= 0 {
			return nil, store.Invalid("keyword_ids: must be positive ids")
		}
	}
	return s.db.CreateCampaign(ctx, env.ID, c, in.KeywordIDs, sc.UserID)
}

// UpdateCampaign changes the fields given, checking the campaign as it
// will be.
func (s *Service) UpdateCampaign(ctx context.Context, sc store.Scope, id int64, ch CampaignChange) (*store.Campaign, error) {
	old, err := s.Campaign(ctx, sc, id)
	if err != nil {
		return nil, err
	}
	env, err := s.envs.Get(ctx, sc, old.EnvironmentID)
	if err != nil {
		return nil, err
	}
	c := old.CampaignInput
	set(&c.Name, ch.Name)
	set(&c.Description, ch.Description)
	set(&c.Target, ch.Target)
	set(&c.PostStatus, ch.PostStatus)
	set(&c.Cadence, ch.Cadence)
	set(&c.Status, ch.Status)
	if ch.AgentID != nil {
		c.AgentID = orNone(*ch.AgentID)
	}
	if ch.ArchetypeID != nil {
		c.ArchetypeID = orNone(*ch.ArchetypeID)
	}
	if err := checkFields(&c); err != nil {
		return nil, err
	}
	// An agent or archetype the campaign keeps is not checked again unless
	// it becomes active: one that lost its way meanwhile must not stop a
	// paused campaign's renaming.
	if err := s.checkLinks(ctx, sc, env.ID, orNil(ch.AgentID, c.AgentID), orNil(ch.ArchetypeID, c.ArchetypeID)); err != nil {
		return nil, err
	}
	if c.Status == store.CampaignActive && (old.Status != store.CampaignActive || ch.AgentID != nil || ch.ArchetypeID != nil || ch.Target != nil) {
		if err := s.checkActive(ctx, sc, env, &c); err != nil {
			return nil, err
		}
	}
	return s.db.ReplaceCampaign(ctx, id, c)
}

func set[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

func orNone(id int64) *int64 {
	if id == 0 {
		return nil
	}
	return &id
}

// DeleteCampaign deletes a campaign the scope sees; its keywords stay, in
// no campaign.
func (s *Service) DeleteCampaign(ctx context.Context, sc store.Scope, id int64) error {
	if _, err := s.Campaign(ctx, sc, id); err != nil {
		return err
	}
	return s.db.DeleteCampaign(ctx, id)
}

// AddKeywords appends keywords of the campaign's environment to a
// campaign the scope sees, and returns it with how many were added.
func (s *Service) AddKeywords(ctx context.Context, sc store.Scope, id int64, ids []int64) (*store.Campaign, int, error) {
	return s.changeKeywords(ctx, sc, id, ids, s.db.AddCampaignKeywords)
}

// RemoveKeywords takes keywords out of a campaign the scope sees, and
// returns it with how many were removed.
func (s *Service) RemoveKeywords(ctx context.Context, sc store.Scope, id int64, ids []int64) (*store.Campaign, int, error) {
	return s.changeKeywords(ctx, sc, id, ids, s.db.RemoveCampaignKeywords)
}

// OrderKeywords puts a campaign's keywords in the order of ids (each of
// them once), and returns it with how many moved: the autopilot takes
// them in that order.
func (s *Service) OrderKeywords(ctx context.Context, sc store.Scope, id int64, ids []int64) (*store.Campaign, int, error) {
	return s.changeKeywords(ctx, sc, id, ids, s.db.SetCampaignKeywordOrder)
}

func (s *Service) changeKeywords(ctx context.Context, sc store.Scope, id int64, ids []int64,
	change func(context.Context, int64, []int64) (int, error)) (*store.Campaign, int, error) {
	if _, err := s.Campaign(ctx, sc, id); err != nil {
		return nil, 0, err
	}
	if err := checkIDs(ids); err != nil {
		return nil, 0, err
	}
	n, err := change(ctx, id, ids)
	if err != nil {
		return nil, 0, err
	}
	c, err := s.db.CampaignByID(ctx, id)
	return c, n, err
}

// CampaignKeywords lists a campaign's keywords, in its order.
func (s *Service) CampaignKeywords(ctx context.Context, sc store.Scope, id int64, p store.Page) ([]*store.Keyword, int, error) {
	if _, err := s.Campaign(ctx, sc, id); err != nil {
		return nil, 0, err
	}
	return s.db.ListCampaignKeywords(ctx, id, p)
}

var errCampaignStatus = store.Invalid("status: must be one of %s", strings.Join(campaignStatuses, ", "))

// checkFields normalises and checks a campaign's own fields.
func checkFields(c *store.CampaignInput) error {
	var err error
	if c.Name, err = valid.Name("name", c.Name, maxCampaignName); err != nil {
		return err
	}
	if c.Description, err = valid.LongText("description", c.Description, maxDescription); err != nil {
		return err
	}
	switch {
	case !slices.Contains(targets, c.Target):
		return store.Invalid("target: must be wordpress or astro")
	case !slices.Contains(postStatuses, c.PostStatus):
		return store.Invalid("post_status: must be draft or publish")
	case c.Cadence < 1 || c.Cadence > maxCadence:
		return store.Invalid("cadence: must be from 1 to %d posts a day", maxCadence)
	case !slices.Contains(campaignStatuses, c.Status):
		return errCampaignStatus
	}
	return nil
}

// orNil is the new value of a link a change sets (nil: it sets none, or
// sets none to be: 0).
func orNil(changed, now *int64) *int64 {
	if changed == nil {
		return nil
	}
	return now
}

// checkLinks checks an agent and an archetype given for a campaign of
// envID (nil: none given).
func (s *Service) checkLinks(ctx context.Context, sc store.Scope, envID int64, agentID, archetypeID *int64) error {
	if agentID != nil {
		if _, err := s.agent(ctx, sc, *agentID, envID); err != nil {
			return err
		}
	}
	if archetypeID != nil {
		return s.checkArchetype(ctx, *archetypeID, envID)
	}
	return nil
}

// checkActive is what an active campaign needs: an active agent it may
// use, an archetype, and an environment configured for its target.
func (s *Service) checkActive(ctx context.Context, sc store.Scope, env *store.Environment, c *store.CampaignInput) error {
	if c.AgentID == nil {
		return store.Conflict("status: an active campaign needs an agent: set agent_id")
	}
	ag, err := s.agent(ctx, sc, *c.AgentID, env.ID)
	if err != nil {
		return err
	}
	if !ag.IsActive {
		return store.Conflict("status: agent %d is not active: set its is_active, or give the campaign another agent", ag.ID)
	}
	if c.ArchetypeID == nil {
		return store.Conflict("status: an active campaign needs an archetype: set archetype_id")
	}
	if err := s.checkArchetype(ctx, *c.ArchetypeID, env.ID); err != nil {
		return err
	}
	cfg := env.Configuration
	if c.Target == store.PostWordPress && (cfg.WordPress == nil || cfg.WordPress.BaseURL == "") {
		return store.Conflict("status: environment %d publishes to no WordPress site: set configuration.wordpress first", env.ID)
	}
	if c.Target == store.PostAstro && (cfg.Astro == nil || cfg.Astro.ProjectPath == "") {
		return store.Conflict("status: environment %d has no Astro project: set configuration.astro first", env.ID)
	}
	return nil
}

// agent returns an agent the scope sees that may run in envID.
func (s *Service) agent(ctx context.Context, sc store.Scope, id, envID int64) (*store.Agent, error) {
	ag, err := store.AgentNamed(ctx, s.db.AgentByID, sc, id)
	if err != nil {
		return nil, err
	}
	if err := ag.RequireIn(envID); err != nil {
		return nil, err
	}
	return ag, nil
}

// checkArchetype: an archetype a campaign of envID may use, global or of
// envID.
func (s *Service) checkArchetype(ctx context.Context, id, envID int64) error {
	a, err := s.db.ArchetypeByID(ctx, id)
	if store.IsNotFound(err) || err == nil && a.EnvironmentID != nil && *a.EnvironmentID != envID {
		return store.Invalid("archetype_id: no archetype with id %d for this environment (global, or of environment %d)", id, envID)
	}
	return err
}
