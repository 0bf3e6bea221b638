package server

import (
	"fmt"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/copydesk/copydesk/server/wppost"
	"github.com/copydesk/copydesk/store"
)

// The WordPress posts group (/api/wordpress-posts): posts kept here and
// published to the environment's WordPress site. Everyone reads the posts
// of their environments; editors write and publish them. The rules are
// server/wppost's.
func (s *Server) registerWordPressPostRoutes() {
	const tag = "WordPress posts"
	remote := []int{409, 502, 504}
	s.handle(Route{Method: "GET", Path: "/api/wordpress-posts", Tag: tag, Access: signedIn, List: true, Errors: []int{404},
		Summary: "List posts, newest first", Query: wpPostListQuery{}, Data: wpPostResponse{}}, s.listWPPosts)
	s.handle(Route{Method: "POST", Path: "/api/wordpress-posts", Tag: tag, Access: editorOnly, Status: http.StatusCreated, Errors: []int{409},
		Summary: "Create a post here", Body: wpPostRequest{}, Data: wpPostResponse{},
		Notes: "content is Markdown, rendered to HTML when the post is sent. Without a slug one is made from the title (post-<id> when nothing folds); " +
			"without a status, the environment's wordpress.default_status (else draft). Nothing is sent to the site until publish."}, s.createWPPost)
	s.handle(Route{Method: "POST", Path: "/api/wordpress-posts/import", Tag: tag, Access: editorOnly, Errors: remote,
		Summary: "Import the site's posts", Body: wpImportRequest{}, Data: wppost.ImportResult{},
		Notes: "Pulls every post of the environment's site (every status but trash), page by page, matching categories and tags by slug " +
			"(made here when missing). Posts already here (same remote id) are skipped. The credential is checked first with users/me."}, s.importWPPosts)
	s.handle(Route{Method: "GET", Path: "/api/wordpress-posts/{id}", Tag: tag, Access: signedIn,
		Summary: "Get a post", Data: wpPostResponse{}}, s.getWPPost)
	s.handle(Route{Method: "PUT", Path: "/api/wordpress-posts/{id}", Tag: tag, Access: editorOnly, Errors: []int{409},
		Summary: "Change a post here", Body: wpPostUpdateRequest{}, Data: wpPostResponse{},
		Notes: "Fields left out keep their values. A post in sync with the site becomes dirty; publish or sync sends the change."}, s.updateWPPost)
	s.handle(Route{Method: "DELETE", Path: "/api/wordpress-posts/{id}", Tag: tag, Access: editorOnly, Errors: remote, Query: wpDeleteQuery{},
		Summary: "Delete a post", Data: deletedResponse{},
		Notes: "With remote=true it is first moved to the trash on the site; if that fails the post is kept (sync_status failed) and the answer is 502 or 504."}, s.deleteWPPost)
	s.handle(Route{Method: "POST", Path: "/api/wordpress-posts/{id}/publish", Tag: tag, Access: editorOnly, Errors: remote, Accepted: true,
		Summary: "Create or update the post on the site", Body: wpPublishRequest{}, Data: wpPostResponse{},
		Notes: "The body is optional: status (default the post's) and scheduled_at. remote_status is what WordPress answered (a publish dated later is future). " +
			"A failure keeps the post with sync_status failed and WordPress's message in last_error: 502, or 504 when the site did not answer in time. " +
			"A create that got no answer is looked up by slug before it is sent again, so publishing again never makes a duplicate. " +
			"With queue true the status and schedule are applied and the publish is handed to the job runner (job kind wordpress.publish): " +
			"the answer is 202 with the post, its sync state unchanged, and the message names the job; the runner retries 429, 5xx, " +
			"network errors and timeouts with its backoff, and the post's sync_status and last_error tell the outcome; the caller gets a " +
			"post.published or post.failed notification when it ends for good (a publish answered here notifies nobody)."}, s.publishWPPost)
	s.handle(Route{Method: "POST", Path: "/api/wordpress-posts/{id}/unpublish", Tag: tag, Access: editorOnly, Errors: remote,
		Summary: "Turn the post back into a draft on the site", Data: wpPostResponse{}}, s.unpublishWPPost)
	s.handle(Route{Method: "GET", Path: "/api/wordpress-posts/{id}/remote", Tag: tag, Access: signedIn, Errors: remote,
		Summary: "Read the post's version on the site", Data: wpRemoteResponse{},
		Notes: "What the site has now (title, raw content and excerpt, status, modified time), and which sides changed since the last sync: " +
			"a sync's 409 names the two change times, this gives the site's text to show beside the kept one before choosing prefer=local or prefer=remote. " +
			"It changes nothing here (a failed read leaves the sync state as it was); 409 when the post is not on the site yet."}, s.getWPPostRemote)
	s.handle(Route{Method: "POST", Path: "/api/wordpress-posts/{id}/sync", Tag: tag, Access: editorOnly, Errors: remote, Query: wpSyncQuery{},
		Summary: "Bring the post and the site together", Data: wpPostResponse{},
		Notes: "Changes on the site since the last sync are pulled here; changes here are sent there. When both sides changed, it is a 409 naming both " +
			"change times and nothing is overwritten (GET .../remote gives the site's version to compare); prefer=local or prefer=remote says which side wins."}, s.syncWPPost)
}

type wpPostListQuery struct {
	pageQuery
	EnvironmentID *int64 `form:"environment_id" binding:"omitempty,gt=0"`
	Status        string `form:"status" binding:"omitempty,oneof=draft pending private future publish"`
	SyncStatus    string `form:"sync_status" binding:"omitempty,oneof=local synced dirty failed"`
	CategoryID    *int64 `form:"category_id" binding:"omitempty,gt=0"`
	TagID         *int64 `form:"tag_id" binding:"omitempty,gt=0"`
	Q             string `form:"q" binding:"max=200" doc:"part of the title or slug"`
}

type wpPostRequest struct {
	EnvironmentID    int64      `json:"environment_id" binding:"required,gt=0"`
	Title            string     `json:"title" binding:"required,max=500"`
	Content          string     `json:"content" doc:"Markdown"`
	Excerpt          string     `json:"excerpt" binding:"max=5000"`
	Slug             string     `json:"slug" binding:"max=96"`
	Status           string     `json:"status" binding:"omitempty,oneof=draft pending private future publish"`
	ScheduledAt      *Timestamp `json:"scheduled_at" doc:"required for future; the post's date on the site"`
	FeaturedImageURL string     `json:"featured_image_url" binding:"max=2000"`
	CategoryIDs      []int64    `json:"category_ids" binding:"max=100,dive,gt=0"`
	TagIDs           []int64    `json:"tag_ids" binding:"max=100,dive,gt=0"`
}

type wpPostUpdateRequest struct {
	Title            *string    `json:"title" binding:"omitempty,min=1,max=500"`
	Content          *string    `json:"content"`
	Excerpt          *string    `json:"excerpt" binding:"omitempty,max=5000"`
	Slug             *string    `json:"slug" binding:"omitempty,max=96"`
	Status           *string    `json:"status" binding:"omitempty,oneof=draft pending private future publish"`
	ScheduledAt      *Timestamp `json:"scheduled_at"`
	FeaturedImageURL *string    `json:"featured_image_url" binding:"omitempty,max=2000"`
	CategoryIDs      *[]int64   `json:"category_ids" binding:"omitempty,max=100,dive,gt=0"`
	TagIDs           *[]int64   `json:"tag_ids" binding:"omitempty,max=100,dive,gt=0"`
}

type wpPublishRequest struct {
	Status      string     `json:"status" binding:"omitempty,oneof=draft pending private future publish" doc:"default: the post's status"`
	ScheduledAt *Timestamp `json:"scheduled_at"`
	Queue       bool       `json:"queue" doc:"hand the publish to the job runner and answer 202 at once"`
}

type wpImportRequest struct {
	EnvironmentID int64 `json:"environment_id" binding:"required,gt=0"`
}

type wpDeleteQuery struct {
	Remote bool `form:"remote" doc:"also move it to the trash on the site"`
}

type wpSyncQuery struct {
	Prefer string `form:"prefer" binding:"omitempty,oneof=local remote" doc:"which side wins when both changed"`
}

type wpPostResponse struct {
	ID               int64      `json:"id"`
	EnvironmentID    int64      `json:"environment_id"`
	RunID            *int64     `json:"run_id" doc:"the agent run it came from"`
	CIERunID         *int64     `json:"cie_run_id" doc:"the archetype generation it came from"`
	LiveGenerationID *int64     `json:"live_generation_id" doc:"the live session generation it came from"`
	Title            string     `json:"title"`
	Content          string     `json:"content" doc:"Markdown, as kept here"`
	Excerpt          string     `json:"excerpt"`
	Slug             string     `json:"slug"`
	Status           string     `json:"status" enum:"draft,pending,private,future,publish"`
	ScheduledAt      *time.Time `json:"scheduled_at"`
	FeaturedImageURL string     `json:"featured_image_url"`
	FeaturedMediaID  *int64     `json:"featured_media_id" doc:"the image on the site, uploaded once"`
	CategoryIDs      []int64    `json:"category_ids"`
	TagIDs           []int64    `json:"tag_ids"`
	RemoteID         *int64     `json:"remote_id"`
	RemoteLink       string     `json:"remote_link"`
	RemoteStatus     string     `json:"remote_status" doc:"the status WordPress answered"`
	SyncStatus       string     `json:"sync_status" enum:"local,synced,dirty,failed"`
	LastError        string     `json:"last_error"`
	SyncedAt         *time.Time `json:"synced_at"`
	CreatedAt        time.Time  `json:"created_at"`
	UpdatedAt        time.Time  `json:"updated_at"`
}

type wpRemoteResponse struct {
	Title       string    `json:"title"`
	Content     string    `json:"content" doc:"as the site keeps it (HTML, raw): what prefer=remote brings here"`
	Excerpt     string    `json:"excerpt"`
	Slug        string    `json:"slug"`
	Status      string    `json:"status" doc:"the status on the site"`
	Link        string    `json:"link"`
	ModifiedAt  time.Time `json:"modified_at" doc:"when WordPress last changed it"`
	Changed     bool      `json:"changed" doc:"the site changed it since the last sync"`
	ChangedHere bool      `json:"changed_here" doc:"it was changed here since the last sync"`
}

func wpPostJSON(p *store.WordPressPost) wpPostResponse {
	cats, tags := p.CategoryIDs, p.TagIDs
	if cats == nil {
		cats = []int64{}
	}
	if tags == nil {
		tags = []int64{}
	}
	return wpPostResponse{ID: p.ID, EnvironmentID: p.EnvironmentID, RunID: p.RunID, CIERunID: p.CIERunID, LiveGenerationID: p.LiveGenerationID,
		Title: p.Title, Content: p.Content, Excerpt: p.Excerpt,
		Slug: p.Slug, Status: p.Status, ScheduledAt: p.ScheduledAt, FeaturedImageURL: p.FeaturedImageURL, FeaturedMediaID: p.FeaturedMediaID,
		CategoryIDs: cats, TagIDs: tags, RemoteID: p.RemoteID, RemoteLink: p.RemoteLink, RemoteStatus: p.RemoteStatus,
		SyncStatus: p.SyncStatus, LastError: p.LastError, SyncedAt: p.SyncedAt, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}
}

func (s *Server) listWPPosts(c *gin.Context) {
	var q wpPostListQuery
	if err := bindQuery(c, &q); err != nil {
		fail(c, err)
		return
	}
	list, total, err := s.wpPosts.List(c.Request.Context(), scope(c), wppost.ListQuery{EnvironmentID: q.EnvironmentID, Status: q.Status,
		SyncStatus: q.SyncStatus, CategoryID: q.CategoryID, TagID: q.TagID, Q: q.Q, Page: q.page()})
	if err != nil {
		fail(c, err)
		return
	}
	respondList(c, list, total, q.page(), wpPostJSON, "posts")
}

func (s *Server) createWPPost(c *gin.Context) {
	var req wpPostRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	p, err := s.wpPosts.Create(c.Request.Context(), scope(c), principal(c).User.ID, wppost.Input{EnvironmentID: req.EnvironmentID,
		Title: req.Title, Content: req.Content, Excerpt: req.Excerpt, Slug: req.Slug, Status: req.Status, ScheduledAt: (*time.Time)(req.ScheduledAt),
		FeaturedImageURL: req.FeaturedImageURL, CategoryIDs: req.CategoryIDs, TagIDs: req.TagIDs})
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusCreated, wpPostJSON(p), "post created")
}

func (s *Server) getWPPost(c *gin.Context) {
	one(c, "id", s.wpPosts.Get, wpPostJSON, "post")
}

func (s *Server) updateWPPost(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	var req wpPostUpdateRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	p, err := s.wpPosts.Update(c.Request.Context(), scope(c), id, wppost.Change{Title: req.Title, Content: req.Content, Excerpt: req.Excerpt,
		Slug: req.Slug, Status: req.Status, ScheduledAt: (*time.Time)(req.ScheduledAt), FeaturedImageURL: req.FeaturedImageURL,
		CategoryIDs: req.CategoryIDs, TagIDs: req.TagIDs})
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, wpPostJSON(p), "post updated")
}

func (s *Server) deleteWPPost(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	var q wpDeleteQuery
	if err := bindQuery(c, &q); err != nil {
		fail(c, err)
		return
	}
	if err := s.wpPosts.Delete(c.Request.Context(), scope(c), id, q.Remote); err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, deletedResponse{ID: id, Deleted: true}, "post deleted")
}

func (s *Server) publishWPPost(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	var req wpPublishRequest
	if c.Request.ContentLength != 0 { // the body is optional
		if err := decodeJSON(c, &req); err != nil {
			fail(c, err)
			return
		}
	}
	in := wppost.PublishInput{Status: req.Status, ScheduledAt: (*time.Time)(req.ScheduledAt)}
	if req.Queue {
		p, job, err := s.wpPosts.QueuePublish(c.Request.Context(), scope(c), id, in)
		if err != nil {
			fail(c, err)
			return
		}
		respond(c, http.StatusAccepted, wpPostJSON(p), fmt.Sprintf("publish queued as job %d", job.ID))
		return
	}
	p, err := s.wpPosts.Publish(c.Request.Context(), scope(c), id, in)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, wpPostJSON(p), "post sent to WordPress: "+p.RemoteStatus)
}

func (s *Server) unpublishWPPost(c *gin.Context) {
	one(c, "id", s.wpPosts.Unpublish, wpPostJSON, "post is a draft on WordPress")
}

func (s *Server) syncWPPost(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	var q wpSyncQuery
	if err := bindQuery(c, &q); err != nil {
		fail(c, err)
		return
	}
	p, err := s.wpPosts.Sync(c.Request.Context(), scope(c), id, q.Prefer)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, wpPostJSON(p), "post synced")
}

func (s *Server) getWPPostRemote(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	v, err := s.wpPosts.Remote(c.Request.Context(), scope(c), id)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, wpRemoteResponse{Title: v.Title, Content: v.Content, Excerpt: v.Excerpt, Slug: v.Slug, Status: v.Status,
		Link: v.Link, ModifiedAt: v.Modified, Changed: v.Changed, ChangedHere: v.ChangedHere}, "the post on the site")
}

func (s *Server) importWPPosts(c *gin.Context) {
	var req wpImportRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	res, err := s.wpPosts.Import(c.Request.Context(), scope(c), principal(c).User.ID, req.EnvironmentID)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, res, "posts imported")
}
