package server

import (
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/copydesk/copydesk/server/strategy"
	"github.com/copydesk/copydesk/store"
)

// Strategies (/api/seo/strategies): an environment's keywords grouped
// into pillar and cluster pages, and campaigns made of them. Everyone
// reads the strategies of their environments; editors create, cancel,
// change and delete them. The rules are server/strategy's.
func (s *Server) registerStrategyRoutes() {
	const tag = "SEO strategies"
	s.handle(Route{Method: "POST", Path: "/api/seo/strategies", Tag: tag, Access: editorOnly, Status: http.StatusAccepted, Errors: []int{409},
		Summary: "Create a strategy", Body: strategyRequest{}, Data: strategyResponse{},
		Notes: "Queues the build on the job runner and answers 202; poll GET /api/seo/strategies/{id} until its status is ready, " +
			"failed or cancelled (POST /api/seo/strategies/{id}/cancel); whoever created it is notified when the build is ready " +
			"(run.succeeded) or failed (run.failed). The keywords are keyword_ids, or the environment's that are not ignored (at most 1000, the highest volume first). " +
			"With SERP data (method auto or serp), two keywords share a cluster when their top-10 organic results share at least " +
			"min_shared URLs; a keyword's results are fetched through SerpApi when a serp credential is usable and its stored ones are " +
			"older than 30 days or refresh_serp is set (at most 200 searches a build), and stored for the next build. Without SERP data " +
			"(method lexical, or auto when none can be had), two keywords share a cluster when the Jaccard similarity of their words " +
			"(stop words left out, simple stemming) is at least similarity. Linking is transitive. The pillar of a cluster is its keyword " +
			"of highest search volume (ties: lower difficulty, then the shorter keyword); clusters come by total volume, highest first, " +
			"and are named after their pillar. With refine, the AI engine (usage source scout) names the clusters and may move keywords " +
			"between them; an answer that does not hold is asked again once, then the clusters stay as built. 409 when there is no " +
			"keyword to group, when method serp can have no SERP data, or when refine is asked and no AI provider is usable."},
		s.createStrategy)
	s.handle(Route{Method: "GET", Path: "/api/seo/strategies", Tag: tag, Access: signedIn, List: true, Errors: []int{404},
		Summary: "List strategies", Query: strategyListQuery{}, Data: strategyResponse{},
		Notes: "Newest first by default, without clusters. An environment you do not see is a 404."}, s.listStrategies)
	s.handle(Route{Method: "GET", Path: "/api/seo/strategies/{id}", Tag: tag, Access: signedIn,
		Summary: "Get a strategy with its clusters", Data: strategyDetailResponse{}}, s.getStrategy)
	s.handle(Route{Method: "PUT", Path: "/api/seo/strategies/{id}", Tag: tag, Access: editorOnly, Errors: []int{409},
		Summary: "Change a strategy", Body: strategyUpdateRequest{}, Data: strategyDetailResponse{},
		Notes: "name renames it. clusters replaces its clusters, in the order given: a cluster with an id keeps it (renamed, its pillar " +
			"and keywords replaced), one without is new, and the strategy's clusters left out are deleted. Each keyword (of the strategy's " +
			"environment) is in one cluster; those left out leave the strategy. A cluster's pillar must be one of its keywords; left out, " +
			"it follows the pillar rule; its keywords are kept in the order given, the pillar first. A cluster without a name is named " +
			"after its pillar. 409 while the strategy is being built."}, s.updateStrategy)
	s.handle(Route{Method: "POST", Path: "/api/seo/strategies/{id}/cancel", Tag: tag, Access: editorOnly, Errors: []int{409},
		Summary: "Cancel a queued or running strategy", Data: strategyResponse{},
		Notes: "The strategy becomes cancelled at once (error says who cancelled it); a running build's SerpApi or model call is cut. " +
			"A cancelled strategy has no clusters (the SERP data fetched so far stays stored for the next build) and nobody is " +
			"notified. 409 when the build already ended."}, s.cancelStrategy)
	s.handle(Route{Method: "DELETE", Path: "/api/seo/strategies/{id}", Tag: tag, Access: editorOnly, Errors: []int{409},
		Summary: "Delete a strategy (its keywords stay)", Data: deletedResponse{},
		Notes: "409 while the strategy is queued or running: cancel it first."}, s.deleteStrategy)
	s.handle(Route{Method: "POST", Path: "/api/seo/strategies/{id}/to-campaign", Tag: tag, Access: editorOnly, Status: http.StatusCreated,
		Errors: []int{409}, Summary: "Make a campaign of a strategy", Body: strategyCampaignRequest{}, Data: strategyCampaignResponse{},
		Notes: "Creates a draft campaign with the strategy's keywords, cluster by cluster in the strategy's order, each cluster's pillar " +
			"first, so that a pillar page is written before the pages that link to it. A keyword in another campaign stays there and is " +
			"listed in skipped_keyword_ids. 409 unless the strategy is ready, when every keyword is in a campaign already, or when the " +
			"environment has a campaign of that name. It does not set the keywords' cluster field: apply does."}, s.strategyToCampaign)
	s.handle(Route{Method: "POST", Path: "/api/seo/strategies/{id}/apply", Tag: tag, Access: editorOnly, Errors: []int{409},
		Summary: "Label the keywords with their clusters", Query: strategyApplyQuery{}, Data: strategyApplyResponse{},
		Notes: "Sets each keyword of the strategy's cluster field to its cluster's name (Unicode NFC, single spaces, trimmed), in one " +
			"transaction, so that GET /api/seo/keywords?cluster=NAME lists a cluster. A keyword already so labelled is left alone; changed " +
			"counts the others. The environment's keywords in no cluster of the strategy keep their cluster, unless clear_others=true, " +
			"which empties it (cleared counts them), so that the labels are exactly the strategy's. Keywords deleted since the strategy was " +
			"built or last edited are skipped and counted in missing_keywords. Applying again changes nothing. 409 unless the strategy is " +
			"ready, and when none of its keywords is left."}, s.applyStrategy)
}

type strategyRequest struct {
	EnvironmentID int64    `json:"environment_id" binding:"required,gt=0"`
	Name          string   `json:"name" binding:"required,max=100"`
	Method        string   `json:"method" binding:"omitempty,oneof=auto serp lexical" doc:"default auto: SERP overlap when SERP data can be had, else lexical"`
	MinShared     *int     `json:"min_shared" binding:"omitempty,gte=1,lte=10" doc:"SERP overlap: shared top-10 URLs that put two keywords in one cluster; default 3"`
	Similarity    *float64 `json:"similarity" binding:"omitempty,gte=0.05,lte=1" doc:"lexical: Jaccard similarity of their words that puts two keywords in one cluster; default 0.5"`
	Refine        bool     `json:"refine" doc:"the AI engine names the clusters and may move keywords"`
	RefreshSERP   bool     `json:"refresh_serp" doc:"fetch SERP data again even when it is fresh"`
	KeywordIDs    []int64  `json:"keyword_ids" binding:"omitempty,min=1,max=1000,dive,gt=0" doc:"default: the environment's keywords that are not ignored"`
}

type strategyResponse struct {
	ID            int64      `json:"id"`
	EnvironmentID int64      `json:"environment_id"`
	Name          string     `json:"name"`
	Method        string     `json:"method" enum:"auto,serp,lexical" doc:"as asked"`
	UsedMethod    string     `json:"used_method" doc:"what the build did, serp or lexical; empty until built"`
	MinShared     int        `json:"min_shared"`
	Similarity    float64    `json:"similarity"`
	Refine        bool       `json:"refine"`
	RefreshSERP   bool       `json:"refresh_serp"`
	KeywordIDs    []int64    `json:"keyword_ids" doc:"the keywords asked for; empty: the environment's"`
	Status        string     `json:"status" enum:"queued,running,ready,failed,cancelled"`
	Notes         string     `json:"notes" doc:"what the build could not do as asked, and why"`
	Error         string     `json:"error"`
	KeywordCount  int        `json:"keyword_count"`
	ClusterCount  int        `json:"cluster_count"`
	CampaignID    *int64     `json:"campaign_id" doc:"the campaign last made of it"`
	CreatedBy     *int64     `json:"created_by"`
	CreatedAt     Timestamp  `json:"created_at"`
	UpdatedAt     Timestamp  `json:"updated_at"`
	BuiltAt       *Timestamp `json:"built_at"`
}

func strategyJSON(st *store.Strategy) strategyResponse {
	ids := st.KeywordIDs
	if ids == nil {
		ids = []int64{}
	}
	return strategyResponse{ID: st.ID, EnvironmentID: st.EnvironmentID, Name: st.Name, Method: st.Method, UsedMethod: st.UsedMethod,
		MinShared: st.MinShared, Similarity: st.Similarity, Refine: st.Refine, RefreshSERP: st.RefreshSERP, KeywordIDs: ids,
		Status: st.Status, Notes: st.Notes, Error: st.Error, KeywordCount: st.KeywordCount, ClusterCount: st.ClusterCount,
		CampaignID: st.CampaignID, CreatedBy: st.CreatedBy, CreatedAt: Timestamp(st.CreatedAt), UpdatedAt: Timestamp(st.UpdatedAt),
		BuiltAt: (*Timestamp)(st.BuiltAt)}
}

type strategyKeywordResponse struct {
	ID           int64    `json:"id"`
	Keyword      string   `json:"keyword"`
	SearchVolume *int64   `json:"search_volume"`
	Difficulty   *int64   `json:"difficulty"`
	Intent       []string `json:"intent"`
	Status       string   `json:"status"`
	CampaignID   *int64   `json:"campaign_id"`
}

type strategyClusterResponse struct {
	ID              int64                     `json:"id"`
	Position        int                       `json:"position" doc:"from 1"`
	Name            string                    `json:"name"`
	PillarKeywordID *int64                    `json:"pillar_keyword_id" doc:"null once the pillar keyword is deleted"`
	TotalVolume     int64                     `json:"total_volume" doc:"the sum of its keywords' search volumes"`
	Keywords        []strategyKeywordResponse `json:"keywords" doc:"the pillar first"`
}

type strategyDetailResponse struct {
	strategyResponse
	Clusters []strategyClusterResponse `json:"clusters"`
}

func strategyDetailJSON(st *store.Strategy, cs []*store.StrategyCluster) strategyDetailResponse {
	out := strategyDetailResponse{strategyResponse: strategyJSON(st), Clusters: make([]strategyClusterResponse, len(cs))}
	for i, c := range cs {
		cl := strategyClusterResponse{ID: c.ID, Position: c.Position, Name: c.Name, PillarKeywordID: c.Pillar,
			Keywords: make([]strategyKeywordResponse, len(c.Keywords))}
		for j, k := range c.Keywords {
			cl.Keywords[j] = strategyKeywordResponse{ID: k.ID, Keyword: k.Keyword, SearchVolume: k.SearchVolume, Difficulty: k.Difficulty,
				Intent: k.Intent, Status: k.Status, CampaignID: k.CampaignID}
			if k.SearchVolume != nil {
				cl.TotalVolume += *k.SearchVolume
			}
		}
		out.Clusters[i] = cl
	}
	return out
}

type strategyListQuery struct {
	pageQuery
	EnvironmentID *int64 `form:"environment_id" binding:"omitempty,gt=0"`
	Status        string `form:"status" binding:"omitempty,oneof=queued running ready failed cancelled"`
	Sort          string `form:"sort" binding:"omitempty,oneof=name -name created_at -created_at updated_at -updated_at" doc:"default -created_at"`
}

type strategyClusterRequest struct {
	ID              *int64  `json:"id" binding:"omitempty,gt=0" doc:"an existing cluster of the strategy; left out: a new one"`
	Name            string  `json:"name" binding:"max=100" doc:"default: the pillar keyword"`
	PillarKeywordID *int64  `json:"pillar_keyword_id" binding:"omitempty,gt=0" doc:"one of keyword_ids; default: by the pillar rule"`
	KeywordIDs      []int64 `json:"keyword_ids" binding:"required,min=1,max=1000,dive,gt=0"`
}

type strategyUpdateRequest struct {
	Name     *string                   `json:"name" binding:"omitempty,min=1,max=100"`
	Clusters *[]strategyClusterRequest `json:"clusters" binding:"omitempty,min=1,max=1000,dive"`
}

type strategyCampaignRequest struct {
	Name        string `json:"name" binding:"max=100" doc:"default: the strategy's name"`
	Target      string `json:"target" binding:"required,oneof=wordpress astro"`
	PostStatus  string `json:"post_status" binding:"omitempty,oneof=draft publish" doc:"default draft"`
	Cadence     int    `json:"cadence" binding:"omitempty,gte=1,lte=100" doc:"posts per day, default 1"`
	AgentID     *int64 `json:"agent_id" binding:"omitempty,gt=0"`
	ArchetypeID *int64 `json:"archetype_id" binding:"omitempty,gt=0"`
}

type strategyCampaignResponse struct {
	CampaignID        int64   `json:"campaign_id"`
	Name              string  `json:"name"`
	Status            string  `json:"status" enum:"draft"`
	KeywordsAdded     int     `json:"keywords_added"`
	SkippedKeywordIDs []int64 `json:"skipped_keyword_ids" doc:"keywords in another campaign already"`
	StrategyID        int64   `json:"strategy_id"`
}

type strategyApplyQuery struct {
	ClearOthers bool `form:"clear_others" doc:"also empty the cluster of the environment's keywords in none of the strategy's clusters"`
}

type strategyApplyResponse struct {
	StrategyID      int64 `json:"strategy_id"`
	Changed         int   `json:"changed" doc:"keywords whose cluster field it changed, the cleared ones included"`
	Keywords        int   `json:"keywords" doc:"the strategy's keywords, each now labelled with its cluster"`
	Cleared         int   `json:"cleared" doc:"with clear_others: other keywords whose cluster it emptied"`
	MissingKeywords int   `json:"missing_keywords" doc:"keywords of the strategy deleted since it was built or last edited, skipped"`
}

func (s *Server) createStrategy(c *gin.Context) {
	var req strategyRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	st, err := s.strategies.Create(c.Request.Context(), scope(c), strategy.CreateInput{EnvironmentID: req.EnvironmentID, Name: req.Name,
		Method: req.Method, MinShared: req.MinShared, Similarity: req.Similarity, Refine: req.Refine, RefreshSERP: req.RefreshSERP,
		KeywordIDs: req.KeywordIDs})
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusAccepted, strategyJSON(st), fmt.Sprintf("strategy %d queued; follow it with GET /api/seo/strategies/%d", st.ID, st.ID))
}

func (s *Server) listStrategies(c *gin.Context) {
	var q strategyListQuery
	if err := bindQuery(c, &q); err != nil {
		fail(c, err)
		return
	}
	list, total, err := s.strategies.List(c.Request.Context(), scope(c), strategy.ListQuery{EnvironmentID: q.EnvironmentID, Status: q.Status,
		Sort: sortOf(q.Sort), Page: q.page()})
	if err != nil {
		fail(c, err)
		return
	}
	respondList(c, list, total, q.page(), strategyJSON, "strategies")
}

func (s *Server) getStrategy(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	st, cs, err := s.strategies.Get(c.Request.Context(), scope(c), id)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, strategyDetailJSON(st, cs), "strategy "+st.Status)
}

func (s *Server) updateStrategy(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	var req strategyUpdateRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	p := strategy.Patch{Name: req.Name}
	if req.Clusters != nil {
		edits := make([]strategy.ClusterEdit, len(*req.Clusters))
		for i, cl := range *req.Clusters {
			edits[i] = strategy.ClusterEdit{ID: cl.ID, Name: cl.Name, Pillar: cl.PillarKeywordID, KeywordIDs: cl.KeywordIDs}
		}
		p.Clusters = &edits
	}
	st, cs, err := s.strategies.Update(c.Request.Context(), scope(c), id, p)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, strategyDetailJSON(st, cs), "strategy updated")
}

func (s *Server) cancelStrategy(c *gin.Context) {
	one(c, "id", byCaller(c, s.strategies.Cancel), strategyJSON, "strategy cancelled")
}

func (s *Server) deleteStrategy(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	if err := s.strategies.Delete(c.Request.Context(), scope(c), id); err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, deletedResponse{ID: id, Deleted: true}, "strategy deleted")
}

func (s *Server) strategyToCampaign(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	var req strategyCampaignRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	res, err := s.strategies.ToCampaign(c.Request.Context(), scope(c), id, strategy.CampaignInput{Name: req.Name, Target: req.Target,
		PostStatus: req.PostStatus, Cadence: req.Cadence, AgentID: req.AgentID, ArchetypeID: req.ArchetypeID})
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusCreated, strategyCampaignResponse{CampaignID: res.Campaign.ID, Name: res.Campaign.Name, Status: res.Campaign.Status,
		KeywordsAdded: res.Added, SkippedKeywordIDs: res.Skipped, StrategyID: id}, "campaign created")
}

func (s *Server) applyStrategy(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	var q strategyApplyQuery
	if err := bindQuery(c, &q); err != nil {
		fail(c, err)
		return
	}
	res, err := s.strategies.Apply(c.Request.Context(), scope(c), id, q.ClearOthers)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, strategyApplyResponse{StrategyID: id, Changed: res.Changed, Keywords: res.Keywords, Cleared: res.Cleared,
		MissingKeywords: res.Missing}, "keywords labelled")
}
