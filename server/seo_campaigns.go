package server

import (
	"context"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/copydesk/copydesk/server/seo"
	"github.com/copydesk/copydesk/store"
)

// SEO campaigns (/api/seo/campaigns): a set of an environment's keywords
// with the agent, archetype, target and pace the autopilot writes them
// with; and GET /api/agents/{id}/campaigns, the campaigns an agent is
// assigned to. Everyone reads those of their environments; editors write
// them. The rules are server/seo's.
func (s *Server) registerSEOCampaignRoutes() {
	const tag = "SEO"
	s.handle(Route{Method: "GET", Path: "/api/seo/campaigns", Tag: tag, Access: signedIn, List: true, Errors: []int{404},
		Summary: "List campaigns", Query: campaignListQuery{}, Data: campaignResponse{}}, s.listCampaigns)
	s.handle(Route{Method: "POST", Path: "/api/seo/campaigns", Tag: tag, Access: editorOnly, Status: http.StatusCreated, Errors: []int{409},
		Summary: "Create a campaign", Body: campaignRequest{}, Data: campaignResponse{},
		Notes: "agent_id must be an agent that may run in the environment (its own, assigned to it, or global); archetype_id a global archetype " +
			"or one of the environment. Left out, they are the environment's default agent and archetype when those may be used there. " +
			"keyword_ids are keywords of the environment in no other campaign (409), in the order the autopilot takes them. " +
			"status active needs an active agent, an archetype and an environment configured for the target (409)."}, s.createCampaign)
	s.handle(Route{Method: "GET", Path: "/api/seo/campaigns/{id}", Tag: tag, Access: signedIn,
		Summary: "Get a campaign", Data: campaignResponse{}}, s.getCampaign)
	s.handle(Route{Method: "PUT", Path: "/api/seo/campaigns/{id}", Tag: tag, Access: editorOnly, Errors: []int{409},
		Summary: "Change a campaign", Body: campaignUpdateRequest{}, Data: campaignResponse{},
		Notes: "Fields left out keep their values; agent_id or archetype_id 0 takes it away. Becoming active is checked as on create."}, s.updateCampaign)
	s.handle(Route{Method: "DELETE", Path: "/api/seo/campaigns/{id}", Tag: tag, Access: editorOnly,
		Summary: "Delete a campaign", Data: deletedResponse{}, Notes: "Its keywords stay, in no campaign."}, s.deleteCampaign)
	s.handle(Route{Method: "GET", Path: "/api/seo/campaigns/{id}/keywords", Tag: tag, Access: signedIn, List: true,
		Summary: "A campaign's keywords, in its order", Query: pageQuery{}, Data: keywordResponse{}}, s.listCampaignKeywords)
	s.handle(Route{Method: "POST", Path: "/api/seo/campaigns/{id}/keywords", Tag: tag, Access: editorOnly, Errors: []int{409},
		Summary: "Add keywords to a campaign", Body: bulkIDs{}, Data: campaignKeywordsResponse{},
		Notes: "Appends them in the order given. Each must be a keyword of the campaign's environment (422) in no other campaign (409); " +
			"one the campaign has stays where it is. changed says how many were added."}, s.addCampaignKeywords)
	s.handle(Route{Method: "POST", Path: "/api/seo/campaigns/{id}/keywords/remove", Tag: tag, Access: editorOnly,
		Summary: "Take keywords out of a campaign", Body: bulkIDs{}, Data: campaignKeywordsResponse{},
		Notes: "Ids the campaign does not have are skipped; changed says how many were taken out. The keywords stay."}, s.removeCampaignKeywords)
	s.handle(Route{Method: "GET", Path: "/api/agents/{id}/campaigns", Tag: "Agents", Access: signedIn, List: true,
		Summary: "Campaigns the agent is assigned to", Query: agentCampaignsQuery{}, Data: campaignResponse{},
		Notes: "Among the campaigns you can see."}, s.agentCampaigns)
}

type campaignListQuery struct {
	pageQuery
	EnvironmentID *int64 `form:"environment_id" binding:"omitempty,gt=0"`
	AgentID       *int64 `form:"agent_id" binding:"omitempty,gt=0"`
	Status        string `form:"status" binding:"omitempty,oneof=draft active paused completed"`
	Q             string `form:"q" binding:"max=200" doc:"part of the name"`
	Sort          string `form:"sort" binding:"omitempty,oneof=name -name created_at -created_at updated_at -updated_at" doc:"name (the default), created_at or updated_at; - before it for descending"`
}

type agentCampaignsQuery struct {
	pageQuery
	EnvironmentID *int64 `form:"environment_id" binding:"omitempty,gt=0"`
	Status        string `form:"status" binding:"omitempty,oneof=draft active paused completed"`
	Sort          string `form:"sort" binding:"omitempty,oneof=name -name created_at -created_at updated_at -updated_at" doc:"name (the default), created_at or updated_at; - before it for descending"`
}

type campaignRequest struct {
	EnvironmentID int64   `json:"environment_id" binding:"required,gt=0"`
	Name          string  `json:"name" binding:"required,max=200"`
	Description   string  `json:"description" binding:"max=5000"`
	ArchetypeID   *int64  `json:"archetype_id" binding:"omitempty,gt=0" doc:"null: the environment's default archetype"`
	AgentID       *int64  `json:"agent_id" binding:"omitempty,gt=0" doc:"null: the environment's default agent"`
	Target        string  `json:"target" binding:"required,oneof=wordpress astro"`
	PostStatus    string  `json:"post_status" binding:"omitempty,oneof=draft publish" doc:"default draft"`
	Cadence       int     `json:"cadence" binding:"omitempty,gte=1,lte=100" doc:"posts per day, default 1"`
	Status        string  `json:"status" binding:"omitempty,oneof=draft active paused completed" doc:"default draft"`
	KeywordIDs    []int64 `json:"keyword_ids" binding:"max=1000,dive,gt=0"`
}

type campaignUpdateRequest struct {
	Name        *string `json:"name" binding:"omitempty,min=1,max=200"`
	Description *string `json:"description" binding:"omitempty,max=5000"`
	ArchetypeID *int64  `json:"archetype_id" binding:"omitempty,gte=0" doc:"0: none"`
	AgentID     *int64  `json:"agent_id" binding:"omitempty,gte=0" doc:"0: none"`
	Target      *string `json:"target" binding:"omitempty,oneof=wordpress astro"`
	PostStatus  *string `json:"post_status" binding:"omitempty,oneof=draft publish"`
	Cadence     *int    `json:"cadence" binding:"omitempty,gte=1,lte=100"`
	Status      *string `json:"status" binding:"omitempty,oneof=draft active paused completed"`
}

type campaignResponse struct {
	ID            int64            `json:"id"`
	EnvironmentID int64            `json:"environment_id"`
	Name          string           `json:"name"`
	Description   string           `json:"description"`
	ArchetypeID   *int64           `json:"archetype_id"`
	AgentID       *int64           `json:"agent_id"`
	Target        string           `json:"target" enum:"wordpress,astro"`
	PostStatus    string           `json:"post_status" enum:"draft,publish"`
	Cadence       int              `json:"cadence" doc:"posts per day"`
	Status        string           `json:"status" enum:"draft,active,paused,completed"`
	Progress      campaignProgress `json:"progress"`
	KeywordCounts map[string]int   `json:"keyword_counts" doc:"its keywords by status"`
	CreatedBy     *int64           `json:"created_by"`
	CreatedAt     Timestamp        `json:"created_at"`
	UpdatedAt     Timestamp        `json:"updated_at"`
}

type campaignProgress struct {
	Done    int `json:"done" doc:"keywords published"`
	Total   int `json:"total" doc:"keywords to write: all but the ignored"`
	Percent int `json:"percent" doc:"done of total, rounded down; 0 when total is 0"`
}

type campaignKeywordsResponse struct {
	Changed  int              `json:"changed"`
	Campaign campaignResponse `json:"campaign"`
}

func campaignJSON(c *store.Campaign) campaignResponse {
	done, total := c.Progress()
	p := campaignProgress{Done: done, Total: total}
	if total > 0 {
		p.Percent = done * 100 / total
	}
	return campaignResponse{ID: c.ID, EnvironmentID: c.EnvironmentID, Name: c.Name, Description: c.Description, ArchetypeID: c.ArchetypeID,
		AgentID: c.AgentID, Target: c.Target, PostStatus: c.PostStatus, Cadence: c.Cadence, Status: c.Status, Progress: p,
		KeywordCounts: counts(c.KeywordCounts), CreatedBy: c.CreatedBy, CreatedAt: Timestamp(c.CreatedAt), UpdatedAt: Timestamp(c.UpdatedAt)}
}

func (s *Server) listCampaigns(c *gin.Context) {
	var q campaignListQuery
	if err := bindQuery(c, &q); err != nil {
		fail(c, err)
		return
	}
	list, total, err := s.seo.ListCampaigns(c.Request.Context(), scope(c), seo.CampaignQuery{EnvironmentID: q.EnvironmentID,
		AgentID: q.AgentID, Status: q.Status, Q: q.Q, Sort: sortOf(q.Sort), Page: q.page()})
	if err != nil {
		fail(c, err)
		return
	}
	respondList(c, list, total, q.page(), campaignJSON, "campaigns")
}

func (s *Server) agentCampaigns(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	var q agentCampaignsQuery
	if err := bindQuery(c, &q); err != nil {
		fail(c, err)
		return
	}
	list, total, err := s.seo.AgentCampaigns(c.Request.Context(), scope(c), id, seo.CampaignQuery{EnvironmentID: q.EnvironmentID,
		Status: q.Status, Sort: sortOf(q.Sort), Page: q.page()})
	if err != nil {
		fail(c, err)
		return
	}
	respondList(c, list, total, q.page(), campaignJSON, "campaigns of the agent")
}

func (s *Server) createCampaign(c *gin.Context) {
	var req campaignRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	camp, err := s.seo.CreateCampaign(c.Request.Context(), scope(c), seo.CampaignInput{EnvironmentID: req.EnvironmentID,
		KeywordIDs: req.KeywordIDs, CampaignInput: store.CampaignInput{Name: req.Name, Description: req.Description,
			ArchetypeID: req.ArchetypeID, AgentID: req.AgentID, Target: req.Target, PostStatus: req.PostStatus, Cadence: req.Cadence,
			Status: req.Status}})
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusCreated, campaignJSON(camp), "campaign created")
}

func (s *Server) getCampaign(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	camp, err := s.seo.Campaign(c.Request.Context(), scope(c), id)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, campaignJSON(camp), "campaign")
}

func (s *Server) updateCampaign(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	var req campaignUpdateRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	camp, err := s.seo.UpdateCampaign(c.Request.Context(), scope(c), id, seo.CampaignChange(req))
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, campaignJSON(camp), "campaign updated")
}

func (s *Server) deleteCampaign(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	if err := s.seo.DeleteCampaign(c.Request.Context(), scope(c), id); err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, deletedResponse{ID: id, Deleted: true}, "campaign deleted")
}

func (s *Server) listCampaignKeywords(c *gin.Context) {
	listChildren(c, "id", s.seo.CampaignKeywords, keywordJSON, "campaign keywords")
}

func (s *Server) addCampaignKeywords(c *gin.Context) {
	s.changeCampaignKeywords(c, s.seo.AddKeywords, "added")
}
func (s *Server) removeCampaignKeywords(c *gin.Context) {
	s.changeCampaignKeywords(c, s.seo.RemoveKeywords, "removed")
}

func (s *Server) changeCampaignKeywords(c *gin.Context, change func(ctx context.Context, sc store.Scope, id int64, ids []int64) (*store.Campaign, int, error), did string) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	var req bulkIDs
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	camp, n, err := change(c.Request.Context(), scope(c), id, req.IDs)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, campaignKeywordsResponse{Changed: n, Campaign: campaignJSON(camp)}, "keywords "+did)
}
