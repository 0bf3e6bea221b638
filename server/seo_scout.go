package server

import (
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/copydesk/copydesk/server/scout"
	"github.com/copydesk/copydesk/store"
)

// The scout (/api/seo/scout): runs that gather candidate keywords for an
// environment, and accepting candidates as keywords. Everyone reads the
// runs of their environments; editors start, cancel and delete runs and
// accept. The rules are server/scout's.
func (s *Server) registerScoutRoutes() {
	const tag = "SEO scout"
	s.handle(Route{Method: "POST", Path: "/api/seo/scout/runs", Tag: tag, Access: editorOnly, Status: http.StatusAccepted, Errors: []int{409},
		Summary: "Start a scout run", Body: scoutRunRequest{}, Data: scoutRunResponse{},
		Notes: "Queues a run on the job runner and answers 202 with it; poll GET /api/seo/scout/runs/{id} until its status is succeeded, " +
			"failed or cancelled (POST /api/seo/scout/runs/{id}/cancel); the caller gets a run.succeeded or run.failed notification when it " +
			"ends (none when cancelled). A run reads, in order: the environment's search-phrase ideas (ideas, the newest 500) and web-source item titles " +
			"(web, the newest 200); SerpApi, when a serp credential is usable, for Google's related searches, \"people also ask\" and " +
			"autocomplete of each seed (serp, two searches per seed); the AI engine (ai, usage source scout) for related keywords with " +
			"their intent, as JSON, asked again once when the answer does not parse. Seeds default to the environment's active search " +
			"phrases. Candidates are de-duplicated after normalisation (Unicode NFC, lower case, single spaces, without surrounding quotes " +
			"and final punctuation) against each other and the environment's keywords, scored from 0 to 100 (40 when Google showed it, " +
			"15 for each further source that found it up to 30, up to 30 for the share of a seed's words it has) and the best 500 kept. " +
			"A source that is not usable or fails is named in notes; the run fails only when it could read no source. 409 when only " +
			"serp and ai are asked for and neither is usable."}, s.startScoutRun)
	s.handle(Route{Method: "GET", Path: "/api/seo/scout/runs", Tag: tag, Access: signedIn, List: true, Errors: []int{404},
		Summary: "List scout runs", Query: scoutRunListQuery{}, Data: scoutRunResponse{},
		Notes: "Newest first by default, without candidates. An environment you do not see is a 404."}, s.listScoutRuns)
	s.handle(Route{Method: "GET", Path: "/api/seo/scout/runs/{id}", Tag: tag, Access: signedIn,
		Summary: "Get a scout run with its candidates", Data: scoutRunDetailResponse{},
		Notes: "Candidates come best first: by score, then by keyword."}, s.getScoutRun)
	s.handle(Route{Method: "POST", Path: "/api/seo/scout/runs/{id}/accept", Tag: tag, Access: editorOnly, Errors: []int{409},
		Summary: "Turn candidates into keywords", Body: scoutAcceptRequest{}, Data: scoutAcceptResponse{},
		Notes: "Each candidate becomes a keyword of the run's environment with source scout, status new and the intent the model " +
			"estimated, in one transaction. A candidate whose keyword the environment has by now (status exists) or that was accepted " +
			"before is skipped. An id that is not a candidate of the run is a 422 and nothing is created. 409 unless the run succeeded."},
		s.acceptScoutCandidates)
	s.handle(Route{Method: "POST", Path: "/api/seo/scout/runs/{id}/cancel", Tag: tag, Access: editorOnly, Errors: []int{409},
		Summary: "Cancel a queued or running scout run", Data: scoutRunResponse{},
		Notes: "The run becomes cancelled at once (error says who cancelled it); a running run's SerpApi or model call is cut. " +
			"What it had gathered is dropped: a cancelled run has no candidates. 409 when the run already finished."}, s.cancelScoutRun)
	s.handle(Route{Method: "DELETE", Path: "/api/seo/scout/runs/{id}", Tag: tag, Access: editorOnly, Errors: []int{409},
		Summary: "Delete a finished scout run and its candidates", Data: deletedResponse{},
		Notes: "The keywords accepted from its candidates stay. 409 while the run is queued or running: cancel it first."}, s.deleteScoutRun)
}

type scoutRunRequest struct {
	EnvironmentID int64    `json:"environment_id" binding:"required,gt=0"`
	Seeds         []string `json:"seeds" binding:"omitempty,max=10,dive,max=200" doc:"phrases to ask SerpApi and the model about; left out: the environment's active search phrases (the newest 10)"`
	Sources       []string `json:"sources" binding:"omitempty,max=4,dive,oneof=ideas web serp ai" doc:"what to read; default all four"`
}

type scoutRunResponse struct {
	ID             int64      `json:"id"`
	EnvironmentID  int64      `json:"environment_id"`
	UserID         *int64     `json:"user_id"`
	Status         string     `json:"status" enum:"queued,running,succeeded,failed,cancelled"`
	Seeds          []string   `json:"seeds"`
	Sources        []string   `json:"sources"`
	Notes          string     `json:"notes" doc:"sources that were skipped or failed, and why"`
	Error          string     `json:"error"`
	Gathered       int        `json:"gathered" doc:"distinct candidates found"`
	Known          int        `json:"known" doc:"of those, keywords the environment had (left out)"`
	CandidateCount int        `json:"candidate_count"`
	AcceptedCount  int        `json:"accepted_count"`
	CreatedAt      Timestamp  `json:"created_at"`
	StartedAt      *Timestamp `json:"started_at"`
	FinishedAt     *Timestamp `json:"finished_at"`
}

func scoutRunJSON(r *store.ScoutRun) scoutRunResponse {
	return scoutRunResponse{ID: r.ID, EnvironmentID: r.EnvironmentID, UserID: r.UserID, Status: r.Status, Seeds: nonNil(r.Seeds),
		Sources: nonNil(r.Sources), Notes: r.Notes, Error: r.Error, Gathered: r.Gathered, Known: r.Known, CandidateCount: r.CandidateCount,
		AcceptedCount: r.AcceptedCount, CreatedAt: Timestamp(r.CreatedAt), StartedAt: (*Timestamp)(r.StartedAt),
		FinishedAt: (*Timestamp)(r.FinishedAt)}
}

func nonNil(list []string) []string {
	if list == nil {
		return []string{}
	}
	return list
}

type scoutCandidateResponse struct {
	ID        int64    `json:"id"`
	Keyword   string   `json:"keyword"`
	FoundBy   []string `json:"found_by" doc:"idea_serp, idea_ai, web, serp_related, serp_question, serp_autocomplete, ai"`
	Intent    []string `json:"intent" doc:"as the model estimated it"`
	Score     int      `json:"score" doc:"0 to 100"`
	Status    string   `json:"status" enum:"new,accepted,exists" doc:"exists: the environment had the keyword when it was accepted"`
	KeywordID *int64   `json:"keyword_id" doc:"the keyword it became or was found to be"`
}

type scoutRunDetailResponse struct {
	scoutRunResponse
	Candidates []scoutCandidateResponse `json:"candidates"`
}

type scoutRunListQuery struct {
	pageQuery
	EnvironmentID *int64 `form:"environment_id" binding:"omitempty,gt=0"`
	Status        string `form:"status" binding:"omitempty,oneof=queued running succeeded failed cancelled"`
	Sort          string `form:"sort" binding:"omitempty,oneof=created_at -created_at candidate_count -candidate_count" doc:"default -created_at"`
}

type scoutAcceptRequest struct {
	Candidates []int64 `json:"candidates" binding:"required,min=1,max=500,dive,gt=0" doc:"ids of the run's candidates"`
}

type scoutAcceptResponse struct {
	Created    int     `json:"created"`
	Skipped    int     `json:"skipped" doc:"the environment had the keyword, or the candidate was accepted before"`
	KeywordIDs []int64 `json:"keyword_ids" doc:"the keywords created"`
}

func (s *Server) startScoutRun(c *gin.Context) {
	var req scoutRunRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	run, err := s.scout.Start(c.Request.Context(), scope(c), scout.StartInput{EnvironmentID: req.EnvironmentID, Seeds: req.Seeds,
		Sources: req.Sources})
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusAccepted, scoutRunJSON(run), fmt.Sprintf("scout run %d queued; follow it with GET /api/seo/scout/runs/%d", run.ID, run.ID))
}

func (s *Server) listScoutRuns(c *gin.Context) {
	var q scoutRunListQuery
	if err := bindQuery(c, &q); err != nil {
		fail(c, err)
		return
	}
	list, total, err := s.scout.List(c.Request.Context(), scope(c), scout.ListQuery{EnvironmentID: q.EnvironmentID, Status: q.Status,
		Sort: sortOf(q.Sort), Page: q.page()})
	if err != nil {
		fail(c, err)
		return
	}
	respondList(c, list, total, q.page(), scoutRunJSON, "scout runs")
}

func (s *Server) getScoutRun(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	run, cands, err := s.scout.Get(c.Request.Context(), scope(c), id)
	if err != nil {
		fail(c, err)
		return
	}
	out := scoutRunDetailResponse{scoutRunResponse: scoutRunJSON(run), Candidates: make([]scoutCandidateResponse, len(cands))}
	for i, k := range cands {
		out.Candidates[i] = scoutCandidateResponse{ID: k.ID, Keyword: k.Keyword, FoundBy: nonNil(k.FoundBy), Intent: nonNil(k.Intent),
			Score: k.Score, Status: k.Status, KeywordID: k.KeywordID}
	}
	respond(c, http.StatusOK, out, "scout run "+run.Status)
}

func (s *Server) acceptScoutCandidates(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	var req scoutAcceptRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	res, err := s.scout.Accept(c.Request.Context(), scope(c), id, req.Candidates)
	if err != nil {
		fail(c, err)
		return
	}
	if res.KeywordIDs == nil {
		res.KeywordIDs = []int64{}
	}
	respond(c, http.StatusOK, scoutAcceptResponse{Created: res.Created, Skipped: res.Skipped, KeywordIDs: res.KeywordIDs}, "candidates accepted")
}

func (s *Server) cancelScoutRun(c *gin.Context) {
	one(c, "id", byCaller(c, s.scout.Cancel), scoutRunJSON, "scout run cancelled")
}

func (s *Server) deleteScoutRun(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	if err := s.scout.Delete(c.Request.Context(), scope(c), id); err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, deletedResponse{ID: id, Deleted: true}, "scout run deleted")
}
