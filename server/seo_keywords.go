package server

import (
	"context"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/copydesk/copydesk/server/seo"
	"github.com/copydesk/copydesk/store"
)

// SEO keywords (/api/seo/keywords): an environment's keywords, typed or
// imported from the exports of keyword tools. Everyone reads those of
// their environments; editors write them. The rules are server/seo's.
func (s *Server) registerSEOKeywordRoutes() {
	const tag = "SEO"
	s.handle(Route{Method: "GET", Path: "/api/seo/keywords", Tag: tag, Access: signedIn, List: true, Errors: []int{404},
		Summary: "List an environment's keywords", Query: keywordListQuery{}, Data: keywordResponse{},
		Notes: "environment_id is required: keywords are listed one environment at a time. Ranges are inclusive; q matches part of the keyword, " +
			"in lower case with single spaces."}, s.listKeywords)
	s.handle(Route{Method: "POST", Path: "/api/seo/keywords", Tag: tag, Access: editorOnly, Status: http.StatusCreated, Errors: []int{409},
		Summary: "Add a keyword", Body: keywordRequest{}, Data: keywordResponse{},
		Notes: "A keyword is unique in its environment in lower case, Unicode NFC, with single spaces (409 when the environment has it); " +
			"the form given is kept for display. Its source is manual."}, s.createKeyword)
	s.handle(Route{Method: "POST", Path: "/api/seo/keywords/import", Tag: tag, Access: editorOnly, Multipart: "file", Form: keywordImportForm{},
		MaxBody: -1, Summary: "Import a keyword tool's export", Data: keywordImportResponse{},
		Notes: "multipart/form-data with the export in the field file (at most 50 MiB) and environment_id. Reads the CSV exports of " +
			"Google Keyword Planner (UTF-16, tabs, two title lines; a volume range like 1K – 10K is stored as its low bound with search_volume_high; " +
			"the CPC is the middle of the top-of-page bid range), Ahrefs Keywords Explorer (UTF-8 or UTF-16) and Semrush Keyword Magic Tool " +
			"(commas, or semicolons with decimal commas), told apart by their encoding and header. A keyword the environment has is updated " +
			"(its metrics; its status, cluster, target URL, post and campaign stay), never added twice, and rows of one keyword are merged, " +
			"the later over the earlier. Rows that cannot be read are left out and listed with their line numbers (the first 100; " +
			"more_rejections counts the rest); everything else is written in one transaction. An encoding or header it does not know is a 422."}, s.importKeywords)
	s.handle(Route{Method: "POST", Path: "/api/seo/keywords/bulk-delete", Tag: tag, Access: editorOnly,
		Summary: "Delete keywords", Body: bulkIDs{}, Data: bulkResponse{},
		Notes: "Ids that do not exist or that you cannot see are skipped; changed says how many were deleted."}, s.bulkDeleteKeywords)
	s.handle(Route{Method: "POST", Path: "/api/seo/keywords/bulk-update", Tag: tag, Access: editorOnly,
		Summary: "Set fields of keywords", Body: keywordBulkRequest{}, Data: bulkResponse{},
		Notes: "Sets status, cluster, intent or parent_keyword (at least one) on each keyword of ids, in one transaction. " +
			"Ids that do not exist or that you cannot see are skipped; changed says how many were updated."}, s.bulkUpdateKeywords)
	s.handle(Route{Method: "GET", Path: "/api/seo/keywords/{id}", Tag: tag, Access: signedIn,
		Summary: "Get a keyword", Data: keywordResponse{}}, s.getKeyword)
	s.handle(Route{Method: "PUT", Path: "/api/seo/keywords/{id}", Tag: tag, Access: editorOnly, Errors: []int{409},
		Summary: "Change a keyword", Body: keywordUpdateRequest{}, Data: keywordResponse{},
		Notes: "Fields left out keep their values. post_kind with post_id links the post written for it (a post of its environment); " +
			"post_id 0 unlinks. search_volume_high 0 makes the volume exact again."}, s.updateKeyword)
	s.handle(Route{Method: "DELETE", Path: "/api/seo/keywords/{id}", Tag: tag, Access: editorOnly,
		Summary: "Delete a keyword", Data: deletedResponse{}}, s.deleteKeyword)
}

type keywordListQuery struct {
	pageQuery
	EnvironmentID int64  `form:"environment_id" binding:"required,gt=0"`
	Status        string `form:"status" binding:"omitempty,oneof=new planned in_progress published ignored"`
	Intent        string `form:"intent" binding:"omitempty,oneof=informational commercial transactional navigational" doc:"keywords whose intents include it"`
	Cluster       string `form:"cluster" binding:"max=200"`
	VolumeMin     *int64 `form:"volume_min" binding:"omitempty,gte=0"`
	VolumeMax     *int64 `form:"volume_max" binding:"omitempty,gte=0"`
	DifficultyMin *int64 `form:"difficulty_min" binding:"omitempty,gte=0,lte=100"`
	DifficultyMax *int64 `form:"difficulty_max" binding:"omitempty,gte=0,lte=100"`
	Q             string `form:"q" binding:"max=200" doc:"part of the keyword"`
	Sort          string `form:"sort" binding:"omitempty,oneof=keyword -keyword search_volume -search_volume difficulty -difficulty cpc -cpc created_at -created_at updated_at -updated_at" doc:"keyword (the default), search_volume, difficulty, cpc, created_at or updated_at; - before it for descending"`
}

type keywordRequest struct {
	EnvironmentID    int64    `json:"environment_id" binding:"required,gt=0"`
	Keyword          string   `json:"keyword" binding:"required,max=200"`
	SearchVolume     *int64   `json:"search_volume" binding:"omitempty,gte=0"`
	SearchVolumeHigh *int64   `json:"search_volume_high" binding:"omitempty,gte=0" doc:"the high bound when the volume is a range; search_volume is then its low bound"`
	Difficulty       *int64   `json:"difficulty" binding:"omitempty,gte=0,lte=100"`
	CPC              *float64 `json:"cpc" binding:"omitempty,gte=0"`
	Currency         string   `json:"currency" binding:"max=3" doc:"ISO 4217, like USD"`
	Intent           []string `json:"intent" binding:"max=4,dive,oneof=informational commercial transactional navigational"`
	Status           string   `json:"status" binding:"omitempty,oneof=new planned in_progress published ignored" doc:"default new"`
	Cluster          string   `json:"cluster" binding:"max=200"`
	ParentKeyword    string   `json:"parent_keyword" binding:"max=200"`
	TargetURL        string   `json:"target_url" binding:"max=2000" doc:"the page meant to rank: an http(s) address or a path like /guides/shoes"`
	PostKind         string   `json:"post_kind" binding:"omitempty,oneof=wordpress astro" doc:"with post_id: the post written for it"`
	PostID           int64    `json:"post_id" binding:"gte=0"`
}

type keywordUpdateRequest struct {
	Keyword          *string  `json:"keyword" binding:"omitempty,min=1,max=200"`
	SearchVolume     *int64   `json:"search_volume" binding:"omitempty,gte=0"`
	SearchVolumeHigh *int64   `json:"search_volume_high" binding:"omitempty,gte=0" doc:"0: an exact volume"`
	Difficulty       *int64   `json:"difficulty" binding:"omitempty,gte=0,lte=100"`
	CPC              *float64 `json:"cpc" binding:"omitempty,gte=0"`
	Currency         *string  `json:"currency" binding:"omitempty,max=3"`
	Intent           []string `json:"intent" binding:"omitempty,max=4,dive,oneof=informational commercial transactional navigational" doc:"replaces the set; [] clears it"`
	Status           *string  `json:"status" binding:"omitempty,oneof=new planned in_progress published ignored"`
	Cluster          *string  `json:"cluster" binding:"omitempty,max=200"`
	ParentKeyword    *string  `json:"parent_keyword" binding:"omitempty,max=200"`
	TargetURL        *string  `json:"target_url" binding:"omitempty,max=2000"`
	PostKind         *string  `json:"post_kind" binding:"omitempty,oneof=wordpress astro"`
	PostID           *int64   `json:"post_id" binding:"omitempty,gte=0" doc:"0: unlink the post"`
}

type keywordBulkRequest struct {
	bulkIDs
	Status        *string  `json:"status" binding:"omitempty,oneof=new planned in_progress published ignored"`
	Cluster       *string  `json:"cluster" binding:"omitempty,max=200"`
	Intent        []string `json:"intent" binding:"omitempty,max=4,dive,oneof=informational commercial transactional navigational"`
	ParentKeyword *string  `json:"parent_keyword" binding:"omitempty,max=200"`
}

type keywordImportForm struct {
	EnvironmentID int64 `form:"environment_id" binding:"required,gt=0" doc:"the environment the keywords go into"`
}

type keywordResponse struct {
	ID               int64     `json:"id"`
	EnvironmentID    int64     `json:"environment_id"`
	Keyword          string    `json:"keyword"`
	Normalized       string    `json:"normalized" doc:"the form keywords are compared in: NFC, lower case, single spaces"`
	SearchVolume     *int64    `json:"search_volume" doc:"monthly searches; the low bound when search_volume_high is set"`
	SearchVolumeHigh *int64    `json:"search_volume_high"`
	Difficulty       *int64    `json:"difficulty"`
	CPC              *float64  `json:"cpc"`
	Currency         string    `json:"currency"`
	Intent           []string  `json:"intent"`
	Status           string    `json:"status" enum:"new,planned,in_progress,published,ignored"`
	Cluster          string    `json:"cluster"`
	ParentKeyword    string    `json:"parent_keyword"`
	TargetURL        string    `json:"target_url"`
	PostKind         *string   `json:"post_kind" enum:"wordpress,astro" doc:"the post written for it, with post_id; null when none"`
	PostID           *int64    `json:"post_id"`
	CampaignID       *int64    `json:"campaign_id"`
	Source           string    `json:"source" doc:"manual, import:<format>, scout"`
	CreatedAt        Timestamp `json:"created_at"`
	UpdatedAt        Timestamp `json:"updated_at"`
}

func keywordJSON(k *store.Keyword) keywordResponse {
	out := keywordResponse{ID: k.ID, EnvironmentID: k.EnvironmentID, Keyword: k.Keyword, Normalized: k.Key, SearchVolume: k.SearchVolume,
		SearchVolumeHigh: k.SearchVolumeHigh, Difficulty: k.Difficulty, CPC: k.CPC, Currency: k.Currency, Intent: k.Intent, Status: k.Status,
		Cluster: k.Cluster, ParentKeyword: k.ParentKeyword, TargetURL: k.TargetURL, CampaignID: k.CampaignID, Source: k.Source,
		CreatedAt: Timestamp(k.CreatedAt), UpdatedAt: Timestamp(k.UpdatedAt)}
	if k.Post != nil {
		out.PostKind, out.PostID = &k.Post.Kind, &k.Post.ID
	}
	return out
}

type keywordImportResponse struct {
	Format         string             `json:"format" enum:"google_keyword_planner,ahrefs,semrush"`
	Encoding       string             `json:"encoding" enum:"utf-8,utf-8-bom,utf-16le,utf-16be"`
	Delimiter      string             `json:"delimiter" enum:"tab,comma,semicolon"`
	Rows           int                `json:"rows" doc:"rows after the header"`
	Imported       int                `json:"imported" doc:"new keywords"`
	Updated        int                `json:"updated" doc:"keywords the environment had"`
	Duplicates     int                `json:"duplicates" doc:"rows of a keyword an earlier row had, merged into it"`
	Rejected       int                `json:"rejected"`
	Rejections     []keywordRejection `json:"rejections" doc:"the first 100 rows left out"`
	MoreRejections int                `json:"more_rejections" doc:"rows left out beyond those listed"`
}

type keywordRejection struct {
	Line    int    `json:"line" doc:"from 1, title lines and header counted"`
	Keyword string `json:"keyword"`
	Reason  string `json:"reason"`
}

func (q keywordListQuery) list() seo.KeywordQuery {
	return seo.KeywordQuery{EnvironmentID: q.EnvironmentID, Status: q.Status, Intent: q.Intent, Cluster: q.Cluster, VolumeMin: q.VolumeMin,
		VolumeMax: q.VolumeMax, DifficultyMin: q.DifficultyMin, DifficultyMax: q.DifficultyMax, Q: q.Q, Sort: sortOf(q.Sort), Page: q.page()}
}

func (s *Server) listKeywords(c *gin.Context) {
	var q keywordListQuery
	if err := bindQuery(c, &q); err != nil {
		fail(c, err)
		return
	}
	list, total, err := s.seo.ListKeywords(c.Request.Context(), scope(c), q.list())
	if err != nil {
		fail(c, err)
		return
	}
	respondList(c, list, total, q.page(), keywordJSON, "keywords")
}

// postRef is the post a request names: kind and id, given together
// (post_id 0 alone unlinks).
func postRef(kind *string, id *int64) (*store.PostRef, error) {
	switch {
	case kind == nil && id == nil:
		return nil, nil
	case (kind == nil || *kind == "") && id != nil && *id == 0:
		return &store.PostRef{}, nil // unlink, whatever the kind
	case kind == nil || *kind == "":
		return nil, store.Invalid("post_kind: is required with post_id")
	case id == nil:
		return nil, store.Invalid("post_id: is required with post_kind")
	}
	return &store.PostRef{Kind: *kind, ID: *id}, nil
}

func (s *Server) createKeyword(c *gin.Context) {
	var req keywordRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	in := seo.KeywordInput{EnvironmentID: req.EnvironmentID, Keyword: req.Keyword, SearchVolume: req.SearchVolume,
		SearchVolumeHigh: req.SearchVolumeHigh, Difficulty: req.Difficulty, CPC: req.CPC, Currency: req.Currency, Intent: req.Intent,
		Status: req.Status, Cluster: req.Cluster, ParentKeyword: req.ParentKeyword, TargetURL: req.TargetURL}
	if req.PostKind != "" || req.PostID != 0 {
		in.Post = &store.PostRef{Kind: req.PostKind, ID: req.PostID}
	}
	k, err := s.seo.CreateKeyword(c.Request.Context(), scope(c), in)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusCreated, keywordJSON(k), "keyword created")
}

// importKeywords reads the upload holding nothing (letGo), parses it
// holding nothing, and holds the database again only to write
// (heldAgain, which checks the caller once more).
func (s *Server) importKeywords(c *gin.Context) {
	letGo(c)
	var form keywordImportForm
	data, err := readUpload(c, "file", seo.MaxImportBytes, &form)
	if err != nil {
		fail(c, err)
		return
	}
	parsed, err := seo.Parse(data)
	if err != nil {
		fail(c, err)
		return
	}
	var res *seo.ImportResult
	err = s.heldAgain(c, store.RoleEditor, func(ctx context.Context, sc store.Scope) (err error) {
		res, err = s.seo.Import(ctx, sc, form.EnvironmentID, parsed)
		return err
	})
	if err != nil {
		fail(c, err)
		return
	}
	out := keywordImportResponse{Format: res.Format, Encoding: res.Encoding, Delimiter: res.Delimiter, Rows: res.Rows, Imported: res.Imported,
		Updated: res.Updated, Duplicates: res.Duplicates, Rejected: res.Rejected, Rejections: []keywordRejection{}, MoreRejections: res.More}
	for _, r := range res.Rejections {
		out.Rejections = append(out.Rejections, keywordRejection(r))
	}
	respond(c, http.StatusOK, out, "keywords imported")
}

func (s *Server) bulkDeleteKeywords(c *gin.Context) {
	var req bulkIDs
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	n, err := s.seo.BulkDeleteKeywords(c.Request.Context(), scope(c), req.IDs)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, bulkResponse{Changed: n}, "keywords deleted")
}

func (s *Server) bulkUpdateKeywords(c *gin.Context) {
	var req keywordBulkRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	ch := seo.BulkChange{Status: req.Status, Cluster: req.Cluster, ParentKeyword: req.ParentKeyword}
	if req.Intent != nil {
		ch.Intent = &req.Intent
	}
	n, err := s.seo.BulkUpdateKeywords(c.Request.Context(), scope(c), req.IDs, ch)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, bulkResponse{Changed: n}, "keywords updated")
}

func (s *Server) getKeyword(c *gin.Context) {
	one(c, "id", s.seo.Keyword, keywordJSON, "keyword")
}

func (s *Server) updateKeyword(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	var req keywordUpdateRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	post, err := postRef(req.PostKind, req.PostID)
	if err != nil {
		fail(c, err)
		return
	}
	ch := seo.KeywordChange{Keyword: req.Keyword, SearchVolume: req.SearchVolume, SearchVolumeHigh: req.SearchVolumeHigh,
		Difficulty: req.Difficulty, CPC: req.CPC, Currency: req.Currency, Status: req.Status, Cluster: req.Cluster,
		ParentKeyword: req.ParentKeyword, TargetURL: req.TargetURL, Post: post}
	if req.Intent != nil {
		ch.Intent = &req.Intent
	}
	k, err := s.seo.UpdateKeyword(c.Request.Context(), scope(c), id, ch)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, keywordJSON(k), "keyword updated")
}

func (s *Server) deleteKeyword(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	if err := s.seo.DeleteKeyword(c.Request.Context(), scope(c), id); err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, deletedResponse{ID: id, Deleted: true}, "keyword deleted")
}
