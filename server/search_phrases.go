package server

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/copydesk/copydesk/server/searchphrase"
	"github.com/copydesk/copydesk/store"
)

// The search phrases group (/api/search-phrases): queries an environment
// researches, and the ideas (related queries) their runs find. Everyone
// reads those of their environments; editors write them and run them.
// The rules are server/searchphrase's.
func (s *Server) registerSearchPhraseRoutes() {
	const tag = "Search phrases"
	s.handle(Route{Method: "GET", Path: "/api/search-phrases", Tag: tag, Access: signedIn, List: true, Errors: []int{404},
		Summary: "List search phrases", Query: phraseListQuery{}, Data: phraseResponse{},
		Notes: "Newest first by default. An environment you do not see is a 404."}, s.listSearchPhrases)
	s.handle(Route{Method: "POST", Path: "/api/search-phrases", Tag: tag, Access: editorOnly, Status: http.StatusCreated, Errors: []int{404, 409},
		Summary: "Create a search phrase", Body: phraseRequest{}, Data: phraseResponse{},
		Notes: "The phrase is kept as typed, with single spaces; two phrases are the same when they match after normalisation " +
			"(Unicode NFC, lower case, single spaces), and one environment has each phrase once per locale (409). " +
			"With refresh_interval (seconds, 300 to 2592000) an active phrase is watched: run by the background scheduler at once, then " +
			"refresh_interval after each run ends; without it (0, the default) it runs only when asked, since each run spends SerpApi " +
			"searches and model tokens. The creator is notified of a scheduled run that found new ideas (run.succeeded) or failed (run.failed)."},
		s.createSearchPhrase)
	s.handle(Route{Method: "POST", Path: "/api/search-phrases/bulk-delete", Tag: tag, Access: editorOnly,
		Summary: "Delete several search phrases and their ideas", Body: bulkIDs{}, Data: bulkResponse{},
		Notes: "Ids that do not exist or that are in environments you do not see are skipped; changed says how many were deleted."},
		s.bulkDeleteSearchPhrases)
	s.handle(Route{Method: "GET", Path: "/api/search-phrases/{id}", Tag: tag, Access: signedIn,
		Summary: "Get a search phrase", Data: phraseResponse{}}, s.getSearchPhrase)
	s.handle(Route{Method: "PUT", Path: "/api/search-phrases/{id}", Tag: tag, Access: editorOnly, Errors: []int{409},
		Summary: "Change a search phrase", Body: phraseUpdateRequest{}, Data: phraseResponse{},
		Notes: "Fields left out keep their values. Its ideas stay. A watched phrase (active, refresh_interval above 0) is next due " +
			"refresh_interval after its last run (at once if it never ran); refresh_interval 0 or is_active false stops the schedule. " +
			"While a run is queued or running, next_run_at is null until the run ends."}, s.updateSearchPhrase)
	s.handle(Route{Method: "DELETE", Path: "/api/search-phrases/{id}", Tag: tag, Access: editorOnly,
		Summary: "Delete a search phrase and its ideas", Data: deletedResponse{}}, s.deleteSearchPhrase)
	s.handle(Route{Method: "POST", Path: "/api/search-phrases/{id}/run", Tag: tag, Access: editorOnly, Status: http.StatusAccepted,
		Errors: []int{409}, Summary: "Find related queries for the phrase", Data: phraseResponse{},
		Notes: "Queues a run on the job runner and answers 202 with the phrase (run_status queued); poll GET /api/search-phrases/{id} until " +
			"run_status is succeeded or failed, then read GET /api/search-phrases/{id}/ideas. A run asks SerpApi, when a serp credential is " +
			"usable in the environment, for Google's related searches, \"people also ask\" and autocomplete, then the AI engine (the AI " +
			"content settings' credential and model, usage source search) for related queries. Ideas are stored once per phrase after " +
			"normalisation, with the source that found them first; a run succeeds when either source answered, and last_run_error names " +
			"a source that failed. 409 when a run is queued or running already, or when neither a serp credential nor an AI provider is usable. " +
			"A watched phrase is next due refresh_interval after this run ends."},
		s.runSearchPhrase)
	s.handle(Route{Method: "GET", Path: "/api/search-phrases/{id}/ideas", Tag: tag, Access: signedIn, List: true,
		Summary: "List a phrase's ideas", Query: ideaListQuery{}, Data: ideaResponse{},
		Notes: "Newest first by default."}, s.listSearchIdeas)
}

type phraseRequest struct {
	EnvironmentID int64  `json:"environment_id" binding:"required,gt=0"`
	Phrase        string `json:"phrase" binding:"required,max=200"`
	Locale        string `json:"locale" binding:"max=35" doc:"a language tag like en, de or en-US; default: the environment's AI language"`
	IsActive      *bool  `json:"is_active" doc:"default true; an inactive phrase is neither scheduled nor a default seed of the scout"`
	// The service checks the gap between 0 and 300, so that create and
	// update say the same.
	RefreshInterval int64 `json:"refresh_interval" binding:"omitempty,gte=0,lte=2592000" doc:"seconds between scheduled runs, 300 (5 minutes) to 2592000 (30 days); default 0: no schedule, runs only when asked"`
}

type phraseUpdateRequest struct {
	Phrase          *string `json:"phrase" binding:"omitempty,min=1,max=200"`
	Locale          *string `json:"locale" binding:"omitempty,min=2,max=35"`
	IsActive        *bool   `json:"is_active"`
	RefreshInterval *int64  `json:"refresh_interval" binding:"omitempty,gte=0,lte=2592000" doc:"0 stops the schedule"`
}

type phraseResponse struct {
	ID              int64      `json:"id"`
	EnvironmentID   int64      `json:"environment_id"`
	Phrase          string     `json:"phrase"`
	Locale          string     `json:"locale"`
	IsActive        bool       `json:"is_active"`
	RefreshInterval int64      `json:"refresh_interval" doc:"seconds between scheduled runs; 0: no schedule"`
	NextRunAt       *Timestamp `json:"next_run_at" doc:"when the scheduled run is due; null while inactive, without a schedule, or while a run is queued or running"`
	RunStatus       string     `json:"run_status" enum:"idle,queued,running,succeeded,failed,cancelled" doc:"idle: never run"`
	LastRunAt       *Timestamp `json:"last_run_at" doc:"when the last run ended"`
	LastRunError    string     `json:"last_run_error" doc:"why the last run failed, or which of its sources did"`
	LastRunIdeas    int        `json:"last_run_ideas" doc:"new ideas the last run stored"`
	CreatedBy       *int64     `json:"created_by"`
	CreatedAt       Timestamp  `json:"created_at"`
	UpdatedAt       Timestamp  `json:"updated_at"`
}

func phraseJSON(p *store.SearchPhrase) phraseResponse {
	return phraseResponse{ID: p.ID, EnvironmentID: p.EnvironmentID, Phrase: p.Phrase, Locale: p.Locale, IsActive: p.IsActive,
		RefreshInterval: int64(p.RefreshInterval / time.Second), NextRunAt: (*Timestamp)(p.NextRunAt), RunStatus: p.RunStatus, LastRunAt: (*Timestamp)(p.LastRunAt), LastRunError: p.LastRunError, LastRunIdeas: p.LastRunIdeas,
		CreatedBy: p.CreatedBy, CreatedAt: Timestamp(p.CreatedAt), UpdatedAt: Timestamp(p.UpdatedAt)}
}

type phraseListQuery struct {
	pageQuery
	EnvironmentID *int64 `form:"environment_id" binding:"omitempty,gt=0"`
	IsActive      *bool  `form:"is_active"`
	Q             string `form:"q" binding:"max=200" doc:"part of the phrase"`
	Sort          string `form:"sort" binding:"omitempty,oneof=phrase -phrase created_at -created_at last_run_at -last_run_at" doc:"default -created_at"`
}

type ideaListQuery struct {
	pageQuery
	Source string `form:"source" binding:"omitempty,oneof=serp ai"`
	Sort   string `form:"sort" binding:"omitempty,oneof=idea -idea created_at -created_at" doc:"default -created_at"`
}

type ideaResponse struct {
	ID        int64     `json:"id"`
	PhraseID  int64     `json:"phrase_id"`
	Idea      string    `json:"idea"`
	Source    string    `json:"source" enum:"serp,ai" doc:"who found it first"`
	Kind      string    `json:"kind" enum:"related,question,autocomplete" doc:"related searches and the model's queries, people also ask and the model's questions, autocomplete"`
	CreatedAt Timestamp `json:"created_at" doc:"when it was first found"`
}

func ideaJSON(i *store.SearchIdea) ideaResponse {
	return ideaResponse{ID: i.ID, PhraseID: i.PhraseID, Idea: i.Idea, Source: i.Source, Kind: i.Kind, CreatedAt: Timestamp(i.CreatedAt)}
}

func (s *Server) listSearchPhrases(c *gin.Context) {
	var q phraseListQuery
	if err := bindQuery(c, &q); err != nil {
		fail(c, err)
		return
	}
	list, total, err := s.searchPhrases.List(c.Request.Context(), scope(c), searchphrase.ListQuery{EnvironmentID: q.EnvironmentID,
		IsActive: q.IsActive, Q: q.Q, Sort: sortOf(q.Sort), Page: q.page()})
	if err != nil {
		fail(c, err)
		return
	}
	respondList(c, list, total, q.page(), phraseJSON, "search phrases")
}

func (s *Server) createSearchPhrase(c *gin.Context) {
	var req phraseRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	p, err := s.searchPhrases.Create(c.Request.Context(), scope(c), searchphrase.Input{EnvironmentID: req.EnvironmentID,
		Phrase: req.Phrase, Locale: req.Locale, IsActive: req.IsActive == nil || *req.IsActive,
		RefreshInterval: time.Duration(req.RefreshInterval) * time.Second})
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusCreated, phraseJSON(p), "search phrase created")
}

func (s *Server) getSearchPhrase(c *gin.Context) {
	one(c, "id", s.searchPhrases.Get, phraseJSON, "search phrase")
}

func (s *Server) updateSearchPhrase(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	var req phraseUpdateRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	ch := searchphrase.Change{Phrase: req.Phrase, Locale: req.Locale, IsActive: req.IsActive}
	if req.RefreshInterval != nil {
		d := time.Duration(*req.RefreshInterval) * time.Second
		ch.RefreshInterval = &d
	}
	p, err := s.searchPhrases.Update(c.Request.Context(), scope(c), id, ch)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, phraseJSON(p), "search phrase updated")
}

func (s *Server) deleteSearchPhrase(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	if err := s.searchPhrases.Delete(c.Request.Context(), scope(c), id); err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, deletedResponse{ID: id, Deleted: true}, "search phrase deleted")
}

func (s *Server) runSearchPhrase(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	p, err := s.searchPhrases.Run(c.Request.Context(), scope(c), id)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusAccepted, phraseJSON(p), "run queued")
}

func (s *Server) listSearchIdeas(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	var q ideaListQuery
	if err := bindQuery(c, &q); err != nil {
		fail(c, err)
		return
	}
	list, total, err := s.searchPhrases.Ideas(c.Request.Context(), scope(c), id, store.SearchIdeaFilter{Source: q.Source,
		Sort: sortOf(q.Sort), Page: q.page()})
	if err != nil {
		fail(c, err)
		return
	}
	respondList(c, list, total, q.page(), ideaJSON, "ideas")
}

func (s *Server) bulkDeleteSearchPhrases(c *gin.Context) {
	var req bulkIDs
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	n, err := s.searchPhrases.DeleteMany(c.Request.Context(), scope(c), req.IDs)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, bulkResponse{Changed: n}, "search phrases deleted")
}
