package server

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/copydesk/copydesk/server/websource"
	"github.com/copydesk/copydesk/store"
)

// The web sources group (/api/web-sources): feeds and pages an environment
// follows, and the items they brought. Everyone reads those of their
// environments; editors write them and fetch them. The rules are
// server/websource's, the reading server/feed's.
func (s *Server) registerWebSourceRoutes() {
	const tag = "Web sources"
	s.handle(Route{Method: "GET", Path: "/api/web-sources", Tag: tag, Access: signedIn, List: true, Errors: []int{404},
		Summary: "List web sources", Query: sourceListQuery{}, Data: sourceResponse{},
		Notes: "Newest first by default. An environment you do not see is a 404. failing=true lists the sources whose last fetch failed " +
			"(consecutive_failures above 0), failing=false the others."}, s.listWebSources)
	s.handle(Route{Method: "POST", Path: "/api/web-sources", Tag: tag, Access: editorOnly, Status: http.StatusCreated, Errors: []int{404, 409},
		Summary: "Follow a feed or a page", Body: sourceRequest{}, Data: sourceResponse{},
		Notes: "An active source is fetched at once by the background fetcher, then every fetch_interval seconds. rss and atom are read " +
			"as feeds (either format is recognised whichever kind is named); page extracts the readable text of an HTML page, a new item " +
			"whenever that text changes. A link-local or cloud metadata address is a 422; private and loopback ones are refused when fetched " +
			"if the server runs with --outbound-private=false. One environment follows an address once (409). A source that keeps failing " +
			"backs off: after n failures in a row the next scheduled fetch is fetch_interval × 2^n later (at least what a 429 or 503 asked " +
			"with Retry-After), at most 32 intervals or 24 hours, whichever is shorter, and never less than fetch_interval; a success resets " +
			"consecutive_failures. After 5 failures in a row the environment's editors are notified once (websource.failing), and once " +
			"more when it answers again (websource.recovered)."}, s.createWebSource)
	s.handle(Route{Method: "POST", Path: "/api/web-sources/bulk-delete", Tag: tag, Access: editorOnly,
		Summary: "Delete several web sources and their items", Body: bulkIDs{}, Data: bulkResponse{},
		Notes: "Ids that do not exist or that are in environments you do not see are skipped; changed says how many were deleted."},
		s.bulkDeleteWebSources)
	s.handle(Route{Method: "GET", Path: "/api/web-sources/{id}", Tag: tag, Access: signedIn,
		Summary: "Get a web source", Data: sourceResponse{}}, s.getWebSource)
	s.handle(Route{Method: "PUT", Path: "/api/web-sources/{id}", Tag: tag, Access: editorOnly, Errors: []int{409},
		Summary: "Change a web source", Body: sourceUpdateRequest{}, Data: sourceResponse{},
		Notes: "Fields left out keep their values. A new url or kind forgets the validators and the failures and is fetched at once; " +
			"its items stay. Otherwise next_fetch_at is planned again from the last fetch, with the back-off of its failures."},
		s.updateWebSource)
	s.handle(Route{Method: "DELETE", Path: "/api/web-sources/{id}", Tag: tag, Access: editorOnly,
		Summary: "Delete a web source and its items", Data: deletedResponse{}}, s.deleteWebSource)
	s.handle(Route{Method: "POST", Path: "/api/web-sources/{id}/fetch", Tag: tag, Access: editorOnly,
		Summary: "Fetch a web source now", Data: fetchResponse{},
		Notes: "Fetches within the request (at most 30 seconds, 5 MiB, 5 redirects, every hop through the outbound address guard), " +
			"sending the last answer's ETag and Last-Modified: a 304 stores nothing. New items are stored once, by guid or else link. " +
			"A fetch that fails answers 200 too, with error set; the source's last_error and last_status say the same. " +
			"It counts like a scheduled fetch: a failure adds to consecutive_failures and a success resets it, and the next scheduled " +
			"fetch is planned from now, fetch_interval later or backed off (see POST /api/web-sources)."}, s.fetchWebSource)
	s.handle(Route{Method: "GET", Path: "/api/web-sources/{id}/items", Tag: tag, Access: signedIn, List: true,
		Summary: "List a web source's items", Query: itemListQuery{}, Data: itemResponse{},
		Notes: "The latest published first by default; items without a date come last."}, s.listWebItems)
}

type sourceRequest struct {
	EnvironmentID int64  `json:"environment_id" binding:"required,gt=0"`
	URL           string `json:"url" binding:"required,max=2048"`
	Kind          string `json:"kind" binding:"required,oneof=rss atom page"`
	IsActive      *bool  `json:"is_active" doc:"default true"`
	FetchInterval int64  `json:"fetch_interval" binding:"omitempty,gte=300,lte=2592000" doc:"seconds between fetches, 300 (5 minutes) to 2592000 (30 days); default 3600"`
}

type sourceUpdateRequest struct {
	URL           *string `json:"url" binding:"omitempty,min=1,max=2048"`
	Kind          *string `json:"kind" binding:"omitempty,oneof=rss atom page"`
	IsActive      *bool   `json:"is_active"`
	FetchInterval *int64  `json:"fetch_interval" binding:"omitempty,gte=300,lte=2592000"`
}

type sourceResponse struct {
	ID                  int64      `json:"id"`
	EnvironmentID       int64      `json:"environment_id"`
	URL                 string     `json:"url"`
	Kind                string     `json:"kind" enum:"rss,atom,page"`
	IsActive            bool       `json:"is_active"`
	FetchInterval       int64      `json:"fetch_interval" doc:"seconds"`
	NextFetchAt         *Timestamp `json:"next_fetch_at" doc:"when it is due, later while it fails (see consecutive_failures); null while inactive"`
	LastFetchedAt       *Timestamp `json:"last_fetched_at"`
	LastStatus          *int       `json:"last_status" doc:"the HTTP status of the last answer; null when none came"`
	LastError           string     `json:"last_error" doc:"why the last fetch failed; empty when it did not"`
	ConsecutiveFailures int        `json:"consecutive_failures" doc:"fetches in a row that failed; 0 after a success (a 304 too). The next scheduled fetch backs off by it"`
	ETag                string     `json:"etag" doc:"the last answer's validator, sent as If-None-Match"`
	LastModified        string     `json:"last_modified" doc:"the last answer's validator, sent as If-Modified-Since"`
	CreatedBy           *int64     `json:"created_by"`
	CreatedAt           Timestamp  `json:"created_at"`
	UpdatedAt           Timestamp  `json:"updated_at"`
}

func sourceJSON(w *store.WebSource) sourceResponse {
	return sourceResponse{ID: w.ID, EnvironmentID: w.EnvironmentID, URL: w.URL, Kind: w.Kind, IsActive: w.IsActive,
		FetchInterval: int64(w.FetchInterval / time.Second), NextFetchAt: (*Timestamp)(w.NextFetchAt), LastFetchedAt: (*Timestamp)(w.LastFetchedAt),
		LastStatus: w.LastStatus, LastError: w.LastError, ConsecutiveFailures: w.ConsecutiveFailures, ETag: w.ETag, LastModified: w.LastModified, CreatedBy: w.CreatedBy,
		CreatedAt: Timestamp(w.CreatedAt), UpdatedAt: Timestamp(w.UpdatedAt)}
}

type fetchResponse struct {
	Source      sourceResponse `json:"source"`
	NewItems    int            `json:"new_items"`
	NotModified bool           `json:"not_modified" doc:"the source answered 304: nothing changed since the last fetch"`
	Error       string         `json:"error" doc:"why the fetch failed; empty when it did not"`
}

type sourceListQuery struct {
	pageQuery
	EnvironmentID *int64 `form:"environment_id" binding:"omitempty,gt=0"`
	IsActive      *bool  `form:"is_active"`
	Failing       *bool  `form:"failing" doc:"true: only sources whose last fetch failed (consecutive_failures > 0); false: only the others"`
	Q             string `form:"q" binding:"max=200" doc:"part of the url"`
	Sort          string `form:"sort" binding:"omitempty,oneof=url -url created_at -created_at last_fetched_at -last_fetched_at" doc:"default -created_at"`
}

type itemListQuery struct {
	pageQuery
	Sort string `form:"sort" binding:"omitempty,oneof=published_at -published_at created_at -created_at" doc:"default -published_at"`
}

type itemResponse struct {
	ID          int64      `json:"id"`
	SourceID    int64      `json:"source_id"`
	GUID        string     `json:"guid"`
	Link        string     `json:"link"`
	Title       string     `json:"title"`
	Summary     string     `json:"summary" doc:"plain text"`
	Content     string     `json:"content" doc:"the readable text of a page; empty for feed entries"`
	PublishedAt *Timestamp `json:"published_at" doc:"as the source says (published, else updated); null when it says nothing"`
	CreatedAt   Timestamp  `json:"created_at" doc:"when it was first fetched"`
}

func itemJSON(w *store.WebItem) itemResponse {
	return itemResponse{ID: w.ID, SourceID: w.SourceID, GUID: w.GUID, Link: w.Link, Title: w.Title, Summary: w.Summary, Content: w.Content,
		PublishedAt: (*Timestamp)(w.PublishedAt), CreatedAt: Timestamp(w.CreatedAt)}
}

func (s *Server) listWebSources(c *gin.Context) {
	var q sourceListQuery
	if err := bindQuery(c, &q); err != nil {
		fail(c, err)
		return
	}
	list, total, err := s.webSources.List(c.Request.Context(), scope(c), websource.ListQuery{EnvironmentID: q.EnvironmentID,
		IsActive: q.IsActive, Failing: q.Failing, Q: q.Q, Sort: sortOf(q.Sort), Page: q.page()})
	if err != nil {
		fail(c, err)
		return
	}
	respondList(c, list, total, q.page(), sourceJSON, "web sources")
}

func (s *Server) createWebSource(c *gin.Context) {
	var req sourceRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	src, err := s.webSources.Create(c.Request.Context(), scope(c), websource.Input{EnvironmentID: req.EnvironmentID, URL: req.URL,
		Kind: req.Kind, IsActive: req.IsActive == nil || *req.IsActive, FetchInterval: time.Duration(req.FetchInterval) * time.Second})
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusCreated, sourceJSON(src), "web source created")
}

func (s *Server) getWebSource(c *gin.Context) {
	one(c, "id", s.webSources.Get, sourceJSON, "web source")
}

func (s *Server) updateWebSource(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	var req sourceUpdateRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	ch := websource.Change{URL: req.URL, Kind: req.Kind, IsActive: req.IsActive}
	if req.FetchInterval != nil {
		d := time.Duration(*req.FetchInterval) * time.Second
		ch.FetchInterval = &d
	}
	src, err := s.webSources.Update(c.Request.Context(), scope(c), id, ch)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, sourceJSON(src), "web source updated")
}

func (s *Server) deleteWebSource(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	if err := s.webSources.Delete(c.Request.Context(), scope(c), id); err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, deletedResponse{ID: id, Deleted: true}, "web source deleted")
}

func (s *Server) fetchWebSource(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	rep, err := s.webSources.Fetch(c.Request.Context(), scope(c), id)
	if err != nil {
		fail(c, err)
		return
	}
	msg := "fetched"
	if rep.Error != "" {
		msg = "the fetch failed"
	}
	respond(c, http.StatusOK, fetchResponse{Source: sourceJSON(rep.Source), NewItems: rep.NewItems, NotModified: rep.NotModified,
		Error: rep.Error}, msg)
}

func (s *Server) listWebItems(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	var q itemListQuery
	if err := bindQuery(c, &q); err != nil {
		fail(c, err)
		return
	}
	list, total, err := s.webSources.Items(c.Request.Context(), scope(c), id, store.WebItemFilter{Sort: sortOf(q.Sort), Page: q.page()})
	if err != nil {
		fail(c, err)
		return
	}
	respondList(c, list, total, q.page(), itemJSON, "items")
}

func (s *Server) bulkDeleteWebSources(c *gin.Context) {
	var req bulkIDs
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	n, err := s.webSources.DeleteMany(c.Request.Context(), scope(c), req.IDs)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, bulkResponse{Changed: n}, "web sources deleted")
}
