package server

import (
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/copydesk/copydesk/server/astropost"
	"github.com/copydesk/copydesk/store"
)

// The Astro posts group (/api/astro-posts): Markdown posts written as
// files into the content folder of an environment's Astro project.
// Everyone reads those of their environments; editors write them. The
// rules, and the files, are server/astropost's.
func (s *Server) registerAstroPostRoutes() {
	const tag = "Astro posts"
	const fileNote = "The file <slug>.md is written into the environment's content folder (configuration.astro) atomically, before the row commits; " +
		"a missing or unwritable folder is a 409 and leaves no post. "
	const postMax = 8 << 20 // a body of 2,000,000 characters, escaped as JSON
	s.handle(Route{Method: "GET", Path: "/api/astro-posts", Tag: tag, Access: signedIn, List: true, Errors: []int{404},
		Summary: "List Astro posts, newest first", Query: astroPostListQuery{}, Data: astroPostResponse{}}, s.listAstroPosts)
	s.handle(Route{Method: "POST", Path: "/api/astro-posts", Tag: tag, Access: editorOnly, Status: http.StatusCreated, Errors: []int{409},
		Summary: "Create an Astro post and write its file", Body: astroPostRequest{}, Data: astroPostResponse{}, MaxBody: postMax,
		Notes: fileNote + "Without a slug one is made from the title (accents folded), with -2, -3 when a post or a file has it; " +
			"a given slug must be lower-case ASCII letters, digits and single dashes (422: no /, .., NUL or absolute paths), " +
			"free in the environment and in the folder (409)."}, s.createAstroPost)
	s.handle(Route{Method: "POST", Path: "/api/astro-posts/import", Tag: tag, Access: editorOnly, Errors: []int{404, 409},
		Summary: "Make posts of the .md and .mdx files already in the content folder", Body: astroImportRequest{}, Data: astroImportResponse{},
		Notes: "Files stay as they are. A file whose name is not a slug or whose front matter lacks title or pubDate is skipped, with the reason. " +
			"Categories and tags named in the front matter are matched by slug or name, or made."}, s.importAstroPosts)
	s.handle(Route{Method: "POST", Path: "/api/astro-posts/reconcile", Tag: tag, Access: editorOnly, Errors: []int{404, 409},
		Summary: "Compare the posts with their files; with apply=true, fix the differences", Query: astroReconcileQuery{}, Data: astroReconcileResponse{},
		Notes: "A restore rolls the database back, not the files. Kinds: missing_file (apply writes it), file_changed (changed outside copydesk or " +
			"the database was restored: apply writes it from the post), row_changed (a category or tag was renamed or deleted: apply writes it), " +
			"orphan_file (no post has it: orphans=keep|import|delete, delete confirmed with the delete_confirmation of a run without apply), " +
			"skipped_file (a symbolic link: never read nor written; the rest of the folder reconciles)."}, s.reconcileAstroPosts)
	s.handle(Route{Method: "GET", Path: "/api/astro-posts/{id}", Tag: tag, Access: signedIn,
		Summary: "Get an Astro post", Data: astroPostResponse{}}, s.getAstroPost)
	s.handle(Route{Method: "GET", Path: "/api/astro-posts/{id}/file", Tag: tag, Access: signedIn, Binary: "text/markdown", Errors: []int{409},
		Summary: "The post's file, exactly as it is on disk"}, s.getAstroPostFile)
	s.handle(Route{Method: "PUT", Path: "/api/astro-posts/{id}", Tag: tag, Access: editorOnly, Errors: []int{409}, MaxBody: postMax,
		Summary: "Change an Astro post and write its file again", Body: astroPostUpdateRequest{}, Data: astroPostResponse{},
		Notes: fileNote + "Fields left out keep their values. A new slug moves the file."}, s.updateAstroPost)
	s.handle(Route{Method: "DELETE", Path: "/api/astro-posts/{id}", Tag: tag, Access: editorOnly, Errors: []int{409},
		Summary: "Delete an Astro post and its file", Data: deletedResponse{}}, s.deleteAstroPost)
}

type astroPostListQuery struct {
	pageQuery
	EnvironmentID *int64 `form:"environment_id" binding:"omitempty,gt=0"`
	Draft         *bool  `form:"draft"`
	CategoryID    *int64 `form:"category_id" binding:"omitempty,gt=0"`
	TagID         *int64 `form:"tag_id" binding:"omitempty,gt=0"`
	Q             string `form:"q" binding:"max=200" doc:"part of the title or slug"`
}

type astroPostRequest struct {
	EnvironmentID int64      `json:"environment_id" binding:"required,gt=0"`
	Title         string     `json:"title" binding:"required,max=300"`
	Description   string     `json:"description" binding:"max=1000" doc:"the starter's schema requires it; empty is written as \"\""`
	Slug          string     `json:"slug" binding:"max=96" doc:"empty: made from the title"`
	Body          string     `json:"body" doc:"Markdown, at most 2,000,000 characters"`
	PubDate       *Timestamp `json:"pub_date" doc:"default: now"`
	UpdatedDate   *Timestamp `json:"updated_date"`
	HeroImage     string     `json:"hero_image" binding:"max=2000" doc:"an https URL, or a path relative to the post (./hero.jpg) of an image in the project"`
	Draft         bool       `json:"draft"`
	CategoryIDs   []int64    `json:"category_ids" binding:"max=100"`
	TagIDs        []int64    `json:"tag_ids" binding:"max=100"`
}

type astroPostUpdateRequest struct {
	Title            *string    `json:"title" binding:"omitempty,min=1,max=300"`
	Description      *string    `json:"description" binding:"omitempty,max=1000"`
	Slug             *string    `json:"slug" binding:"omitempty,max=96" doc:"a new slug moves the file"`
	Body             *string    `json:"body"`
	PubDate          *Timestamp `json:"pub_date"`
	UpdatedDate      *Timestamp `json:"updated_date"`
	ClearUpdatedDate bool       `json:"clear_updated_date" doc:"true: remove updatedDate"`
	HeroImage        *string    `json:"hero_image" binding:"omitempty,max=2000" doc:"empty: none"`
	Draft            *bool      `json:"draft"`
	CategoryIDs      *[]int64   `json:"category_ids" binding:"omitempty,max=100"`
	TagIDs           *[]int64   `json:"tag_ids" binding:"omitempty,max=100"`
}

type termRefResponse struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
	Slug string `json:"slug"`
}

type astroPostResponse struct {
	ID               int64             `json:"id"`
	EnvironmentID    int64             `json:"environment_id"`
	Title            string            `json:"title"`
	Description      string            `json:"description"`
	Slug             string            `json:"slug"`
	File             string            `json:"file" doc:"the file's name in the content folder"`
	Body             string            `json:"body"`
	PubDate          time.Time         `json:"pub_date"`
	UpdatedDate      *time.Time        `json:"updated_date"`
	HeroImage        string            `json:"hero_image"`
	Draft            bool              `json:"draft"`
	Categories       []termRefResponse `json:"categories"`
	Tags             []termRefResponse `json:"tags"`
	RunID            *int64            `json:"run_id" doc:"the agent run it was saved from"`
	CIERunID         *int64            `json:"cie_run_id" doc:"the archetype generation it was saved from"`
	LiveGenerationID *int64            `json:"live_generation_id" doc:"the live session generation it was saved from"`
	FileSHA256       string            `json:"file_sha256" doc:"SHA-256 of the file as copydesk last wrote or read it"`
	CreatedAt        time.Time         `json:"created_at"`
	UpdatedAt        time.Time         `json:"updated_at"`
}

func termRefs(ts []store.TermRef) []termRefResponse {
	out := make([]termRefResponse, len(ts))
	for i, t := range ts {
		out[i] = termRefResponse{ID: t.ID, Name: t.Name, Slug: t.Slug}
	}
	return out
}

func astroPostJSON(p *store.AstroPost) astroPostResponse {
	return astroPostResponse{ID: p.ID, EnvironmentID: p.EnvironmentID, Title: p.Title, Description: p.Description, Slug: p.Slug,
		File: p.FileName(), Body: p.Body, PubDate: p.PubDate, UpdatedDate: p.UpdatedDate, HeroImage: p.HeroImage, Draft: p.Draft,
		Categories: termRefs(p.Categories), Tags: termRefs(p.Tags), RunID: p.RunID, CIERunID: p.CIERunID, LiveGenerationID: p.LiveGenerationID,
		FileSHA256: p.FileSHA256,
		CreatedAt:  p.CreatedAt, UpdatedAt: p.UpdatedAt}
}

type astroImportRequest struct {
	EnvironmentID int64 `json:"environment_id" binding:"required,gt=0"`
}

type astroFileResponse struct {
	File   string `json:"file"`
	PostID *int64 `json:"post_id"`
	Slug   string `json:"slug,omitempty"`
	Kind   string `json:"kind,omitempty" enum:"missing_file,file_changed,row_changed,orphan_file,skipped_file"`
	Action string `json:"action,omitempty" doc:"what was done, or (without apply) what apply would do"`
	Reason string `json:"reason,omitempty" doc:"why a file was skipped"`
}

func astroFiles(fs []astropost.FileOutcome) []astroFileResponse {
	out := make([]astroFileResponse, len(fs))
	for i, f := range fs {
		out[i] = astroFileResponse{File: f.File, PostID: f.PostID, Slug: f.Slug, Kind: f.Kind, Action: f.Action, Reason: f.Reason}
	}
	return out
}

type astroImportResponse struct {
	EnvironmentID int64               `json:"environment_id"`
	Folder        string              `json:"folder"`
	Imported      []astroFileResponse `json:"imported"`
	Skipped       []astroFileResponse `json:"skipped"`
}

type astroReconcileQuery struct {
	EnvironmentID int64  `form:"environment_id" binding:"required,gt=0"`
	Apply         bool   `form:"apply" doc:"true: fix the differences; otherwise only report them"`
	Orphans       string `form:"orphans" binding:"omitempty,oneof=keep import delete" doc:"with apply, what happens to files no post has: keep (default), import, delete"`
	Confirm       string `form:"confirm" binding:"max=64" doc:"with orphans=delete: the delete_confirmation of a reconcile without apply, which lists the files it would delete"`
}

type astroReconcileResponse struct {
	EnvironmentID int64               `json:"environment_id"`
	Folder        string              `json:"folder"`
	Applied       bool                `json:"applied"`
	InSync        int                 `json:"in_sync" doc:"posts whose file is as the post says"`
	Differences   []astroFileResponse `json:"differences"`
	// DeleteConfirmation is what orphans=delete must be confirmed with.
	DeleteConfirmation string `json:"delete_confirmation,omitempty" doc:"names the orphan files listed: pass it as confirm to delete them with apply and orphans=delete"`
}

func (s *Server) listAstroPosts(c *gin.Context) {
	var q astroPostListQuery
	if err := bindQuery(c, &q); err != nil {
		fail(c, err)
		return
	}
	list, total, err := s.astroPosts.List(c.Request.Context(), scope(c), astropost.ListQuery{EnvironmentID: q.EnvironmentID, Draft: q.Draft,
		CategoryID: q.CategoryID, TagID: q.TagID, Q: q.Q, Page: q.page()})
	if err != nil {
		fail(c, err)
		return
	}
	respondList(c, list, total, q.page(), astroPostJSON, "posts")
}

func (s *Server) createAstroPost(c *gin.Context) {
	var req astroPostRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	p, err := s.astroPosts.Create(c.Request.Context(), scope(c), astropost.Input{EnvironmentID: req.EnvironmentID, Title: req.Title,
		Description: req.Description, Slug: req.Slug, Body: req.Body, PubDate: (*time.Time)(req.PubDate), UpdatedDate: (*time.Time)(req.UpdatedDate),
		HeroImage: req.HeroImage, Draft: req.Draft, CategoryIDs: req.CategoryIDs, TagIDs: req.TagIDs})
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusCreated, astroPostJSON(p), "post created; "+p.FileName()+" written")
}

func (s *Server) getAstroPost(c *gin.Context) {
	one(c, "id", s.astroPosts.Get, astroPostJSON, "post")
}

func (s *Server) getAstroPostFile(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	text, err := s.astroPosts.File(c.Request.Context(), scope(c), id)
	if err != nil {
		fail(c, err)
		return
	}
	c.Data(http.StatusOK, "text/markdown; charset=utf-8", []byte(text))
}

func (s *Server) updateAstroPost(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	var req astroPostUpdateRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	upd := (*time.Time)(req.UpdatedDate)
	if req.ClearUpdatedDate {
		upd = &time.Time{}
	}
	p, err := s.astroPosts.Update(c.Request.Context(), scope(c), id, astropost.Change{Title: req.Title, Description: req.Description,
		Slug: req.Slug, Body: req.Body, PubDate: (*time.Time)(req.PubDate), UpdatedDate: upd, HeroImage: req.HeroImage, Draft: req.Draft,
		CategoryIDs: req.CategoryIDs, TagIDs: req.TagIDs})
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, astroPostJSON(p), "post updated; "+p.FileName()+" written")
}

func (s *Server) deleteAstroPost(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	if err := s.astroPosts.Delete(c.Request.Context(), scope(c), id); err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, deletedResponse{ID: id, Deleted: true}, "post and its file deleted")
}

func (s *Server) importAstroPosts(c *gin.Context) {
	var req astroImportRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	rep, err := s.astroPosts.Import(c.Request.Context(), scope(c), req.EnvironmentID)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, astroImportResponse{EnvironmentID: rep.EnvironmentID, Folder: rep.Folder, Imported: astroFiles(rep.Imported),
		Skipped: astroFiles(rep.Skipped)}, "import done")
}

func (s *Server) reconcileAstroPosts(c *gin.Context) {
	var q astroReconcileQuery
	if err := bindQuery(c, &q); err != nil {
		fail(c, err)
		return
	}
	rep, err := s.astroPosts.Reconcile(c.Request.Context(), scope(c), q.EnvironmentID, q.Apply, astropost.Orphans(q.Orphans), q.Confirm)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, astroReconcileResponse{EnvironmentID: rep.EnvironmentID, Folder: rep.Folder, Applied: rep.Applied,
		InSync: rep.InSync, Differences: astroFiles(rep.Differences), DeleteConfirmation: rep.DeleteConfirmation}, "reconciled")
}
