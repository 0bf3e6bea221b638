package server

import (
	"fmt"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/copydesk/copydesk/server/cms"
	"github.com/copydesk/copydesk/store"
)

// The CMS group (/api/cms): categories and tags per environment, shared by
// both post kinds. Everyone reads those of their environments; editors
// write them. The rules are server/cms's.
func (s *Server) registerCMSRoutes() {
	const tag = "CMS"
	slugNote := "Without a slug one is made from the name (accents folded: Café Olé → cafe-ole), with -2, -3 when taken; " +
		"a name with nothing to slug gets %s-<id>. A given slug must be lower-case ASCII letters, digits and single dashes, at most 96 characters (422), " +
		"and free in the environment (409)."
	s.handle(Route{Method: "GET", Path: "/api/cms/categories", Tag: tag, Access: signedIn, List: true, Errors: []int{404},
		Summary: "List categories, by name", Query: termListQuery{}, Data: categoryResponse{},
		Notes: "post_counts holds the number of posts of each kind filed under it."}, s.listCategories)
	s.handle(Route{Method: "POST", Path: "/api/cms/categories", Tag: tag, Access: editorOnly, Status: http.StatusCreated, Errors: []int{409},
		Summary: "Create a category", Body: categoryRequest{}, Data: categoryResponse{}, Notes: fmt.Sprintf(slugNote, "category")}, s.createCategory)
	s.handle(Route{Method: "GET", Path: "/api/cms/categories/{id}", Tag: tag, Access: signedIn,
		Summary: "Get a category", Data: categoryResponse{}}, s.getCategory)
	s.handle(Route{Method: "PUT", Path: "/api/cms/categories/{id}", Tag: tag, Access: editorOnly, Errors: []int{409},
		Summary: "Change a category", Body: categoryUpdateRequest{}, Data: categoryResponse{},
		Notes: "Fields left out keep their values. parent_id 0 moves it to the top; a parent under the category itself is a 422."}, s.updateCategory)
	s.handle(Route{Method: "DELETE", Path: "/api/cms/categories/{id}", Tag: tag, Access: editorOnly,
		Summary: "Delete a category", Data: termDeletedResponse{},
		Notes: "Posts filed under it lose it (detached_posts says how many of each kind); its children move to the top."}, s.deleteCategory)

	s.handle(Route{Method: "GET", Path: "/api/cms/tags", Tag: tag, Access: signedIn, List: true, Errors: []int{404},
		Summary: "List tags, by name", Query: termListQuery{}, Data: tagResponse{}}, s.listTags)
	s.handle(Route{Method: "POST", Path: "/api/cms/tags", Tag: tag, Access: editorOnly, Status: http.StatusCreated, Errors: []int{409},
		Summary: "Create a tag", Body: tagRequest{}, Data: tagResponse{}, Notes: fmt.Sprintf(slugNote, "tag")}, s.createTag)
	s.handle(Route{Method: "GET", Path: "/api/cms/tags/{id}", Tag: tag, Access: signedIn,
		Summary: "Get a tag", Data: tagResponse{}}, s.getTag)
	s.handle(Route{Method: "PUT", Path: "/api/cms/tags/{id}", Tag: tag, Access: editorOnly, Errors: []int{409},
		Summary: "Change a tag", Body: tagUpdateRequest{}, Data: tagResponse{}}, s.updateTag)
	s.handle(Route{Method: "DELETE", Path: "/api/cms/tags/{id}", Tag: tag, Access: editorOnly,
		Summary: "Delete a tag", Data: termDeletedResponse{},
		Notes: "Posts tagged with it lose it (detached_posts says how many of each kind)."}, s.deleteTag)
}

type termListQuery struct {
	pageQuery
	EnvironmentID *int64 `form:"environment_id" binding:"omitempty,gt=0"`
	Q             string `form:"q" binding:"max=200" doc:"part of the name or slug"`
	Sort          string `form:"sort" binding:"omitempty,oneof=name -name" doc:"name (the default) or -name"`
}

func (q termListQuery) list() cms.ListQuery {
	return cms.ListQuery{EnvironmentID: q.EnvironmentID, Q: q.Q, Sort: sortOf(q.Sort), Page: q.page()}
}

type categoryRequest struct {
	EnvironmentID int64  `json:"environment_id" binding:"required,gt=0"`
	Name          string `json:"name" binding:"required,max=200"`
	Slug          string `json:"slug" binding:"max=96" doc:"empty: made from the name"`
	ParentID      *int64 `json:"parent_id" binding:"omitempty,gt=0"`
	Description   string `json:"description" binding:"max=5000"`
}

type categoryUpdateRequest struct {
	Name        *string `json:"name" binding:"omitempty,min=1,max=200"`
	Slug        *string `json:"slug" binding:"omitempty,max=96"`
	ParentID    *int64  `json:"parent_id" binding:"omitempty,gte=0" doc:"0: no parent"`
	Description *string `json:"description" binding:"omitempty,max=5000"`
}

type categoryResponse struct {
	ID            int64          `json:"id"`
	EnvironmentID int64          `json:"environment_id"`
	ParentID      *int64         `json:"parent_id"`
	Name          string         `json:"name"`
	Slug          string         `json:"slug"`
	Description   string         `json:"description"`
	WPTermID      *int64         `json:"wp_term_id" doc:"the WordPress term it is on the environment's site, once sent or imported"`
	PostCounts    map[string]int `json:"post_counts" doc:"posts filed under it, by post kind"`
	CreatedAt     time.Time      `json:"created_at"`
	UpdatedAt     time.Time      `json:"updated_at"`
}

func categoryJSON(c *store.Category) categoryResponse {
	return categoryResponse{ID: c.ID, EnvironmentID: c.EnvironmentID, ParentID: c.ParentID, Name: c.Name, Slug: c.Slug,
		Description: c.Description, WPTermID: c.WPTermID, PostCounts: counts(c.PostCounts), CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt}
}

type tagRequest struct {
	EnvironmentID int64  `json:"environment_id" binding:"required,gt=0"`
	Name          string `json:"name" binding:"required,max=200"`
	Slug          string `json:"slug" binding:"max=96" doc:"empty: made from the name"`
}

type tagUpdateRequest struct {
	Name *string `json:"name" binding:"omitempty,min=1,max=200"`
	Slug *string `json:"slug" binding:"omitempty,max=96"`
}

type tagResponse struct {
	ID            int64          `json:"id"`
	EnvironmentID int64          `json:"environment_id"`
	Name          string         `json:"name"`
	Slug          string         `json:"slug"`
	WPTermID      *int64         `json:"wp_term_id"`
	PostCounts    map[string]int `json:"post_counts" doc:"posts tagged with it, by post kind"`
	CreatedAt     time.Time      `json:"created_at"`
	UpdatedAt     time.Time      `json:"updated_at"`
}

func tagJSON(t *store.Tag) tagResponse {
	return tagResponse{ID: t.ID, EnvironmentID: t.EnvironmentID, Name: t.Name, Slug: t.Slug, WPTermID: t.WPTermID,
		PostCounts: counts(t.PostCounts), CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt}
}

type termDeletedResponse struct {
	ID            int64          `json:"id"`
	Deleted       bool           `json:"deleted"`
	DetachedPosts map[string]int `json:"detached_posts" doc:"posts that lost it, by post kind"`
}

func counts(m map[string]int) map[string]int {
	if m == nil {
		return map[string]int{}
	}
	return m
}

func (s *Server) listCategories(c *gin.Context) {
	var q termListQuery
	if err := bindQuery(c, &q); err != nil {
		fail(c, err)
		return
	}
	list, total, err := s.cms.ListCategories(c.Request.Context(), scope(c), q.list())
	if err != nil {
		fail(c, err)
		return
	}
	respondList(c, list, total, q.page(), categoryJSON, "categories")
}

func (s *Server) createCategory(c *gin.Context) {
	var req categoryRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	cat, err := s.cms.CreateCategory(c.Request.Context(), scope(c), cms.CategoryInput{EnvironmentID: req.EnvironmentID,
		ParentID: req.ParentID, Name: req.Name, Slug: req.Slug, Description: req.Description})
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusCreated, categoryJSON(cat), "category created")
}

func (s *Server) getCategory(c *gin.Context) {
	one(c, "id", s.cms.Category, categoryJSON, "category")
}

func (s *Server) updateCategory(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	var req categoryUpdateRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	cat, err := s.cms.UpdateCategory(c.Request.Context(), scope(c), id, cms.CategoryChange{Name: req.Name, Slug: req.Slug,
		Description: req.Description, ParentID: req.ParentID})
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, categoryJSON(cat), "category updated")
}

func (s *Server) deleteCategory(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	detached, err := s.cms.DeleteCategory(c.Request.Context(), scope(c), id)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, termDeletedResponse{ID: id, Deleted: true, DetachedPosts: counts(detached)},
		"category deleted"+detachedNote(detached))
}

func (s *Server) listTags(c *gin.Context) {
	var q termListQuery
	if err := bindQuery(c, &q); err != nil {
		fail(c, err)
		return
	}
	list, total, err := s.cms.ListTags(c.Request.Context(), scope(c), q.list())
	if err != nil {
		fail(c, err)
		return
	}
	respondList(c, list, total, q.page(), tagJSON, "tags")
}

func (s *Server) createTag(c *gin.Context) {
	var req tagRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	t, err := s.cms.CreateTag(c.Request.Context(), scope(c), cms.TagInput{EnvironmentID: req.EnvironmentID, Name: req.Name, Slug: req.Slug})
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusCreated, tagJSON(t), "tag created")
}

func (s *Server) getTag(c *gin.Context) {
	one(c, "id", s.cms.Tag, tagJSON, "tag")
}

func (s *Server) updateTag(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	var req tagUpdateRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	t, err := s.cms.UpdateTag(c.Request.Context(), scope(c), id, cms.TagChange{Name: req.Name, Slug: req.Slug})
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, tagJSON(t), "tag updated")
}

func (s *Server) deleteTag(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	detached, err := s.cms.DeleteTag(c.Request.Context(), scope(c), id)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, termDeletedResponse{ID: id, Deleted: true, DetachedPosts: counts(detached)}, "tag deleted"+detachedNote(detached))
}

// detachedNote says in the message how many posts lost a category or tag.
func detachedNote(detached map[string]int) string {
	n := 0
	for _, v := range detached {
		n += v
	}
	switch n {
	case 0:
		return ""
	case 1:
		return "; 1 post lost it"
	}
	return fmt.Sprintf("; %d posts lost it", n)
}
