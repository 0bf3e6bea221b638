package server

import (
	"context"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/copydesk/copydesk/server/posttarget"
	"github.com/copydesk/copydesk/store"
)

// From generation to a post: POST /api/agents/runs/{run_id}/save-as-post
// turns a succeeded run's output into a draft post of the run's
// environment, and POST /api/cie/runs/{run_id}/save-as-post does the same
// for an archetype generation's article. server/posttarget makes the
// draft by the same rules for every target; the handlers only name the
// source.
func (s *Server) registerSaveAsPostRoutes() {
	s.handle(Route{Method: "POST", Path: "/api/agents/runs/{run_id}/save-as-post", Tag: "Agents", Access: editorOnly,
		Status: http.StatusCreated, Errors: []int{409}, Body: saveAsPostRequest{}, Data: savedPostResponse{},
		Summary: "Save a succeeded run's output as a draft post",
		Notes: "The title, when absent, is the output's first Markdown heading (a level-1 heading then leaves the body), or " +
			"without one its first line of text (cut at 120 characters), which stays in the body. " +
			"The post is a draft in the run's environment and records the run (run_id). target wordpress makes a local WordPress post draft " +
			"(publish it with POST /api/wordpress-posts/{id}/publish); target astro writes the file into the environment's Astro content folder."},
		saveAs("run_id", s.posts.FromRun))
	s.handle(Route{Method: "POST", Path: "/api/cie/runs/{run_id}/save-as-post", Tag: "Content intelligence", Access: editorOnly,
		Status: http.StatusCreated, Errors: []int{409}, Body: saveAsPostRequest{}, Data: savedPostResponse{},
		Summary: "Save a succeeded generation's article as a draft post",
		Notes: "The post takes the article's title (unless one is given), description (the Astro description, the WordPress excerpt) and " +
			"Markdown body. It is a draft in the generation's environment and records the generation (cie_run_id); 409 unless the generation " +
			"succeeded. target wordpress makes a local WordPress post draft (publish it with POST /api/wordpress-posts/{id}/publish); " +
			"target astro writes the file into the environment's Astro content folder."},
		saveAs("run_id", s.posts.FromGeneration))
}

type saveAsPostRequest struct {
	Target string `json:"target" binding:"required,oneof=wordpress astro" enum:"wordpress,astro"`
	Title  string `json:"title" binding:"max=300" doc:"default: the output's first Markdown heading (a run's, a live session's) or first line, or the generation's article title"`
}

type savedPostResponse struct {
	Target    string             `json:"target" enum:"wordpress,astro"`
	WordPress *wpPostResponse    `json:"wordpress,omitempty" doc:"the post, for target wordpress"`
	Astro     *astroPostResponse `json:"astro,omitempty" doc:"the post, for target astro"`
}

// saveFrom is a posttarget.Service call that makes a draft from one kind
// of source.
type saveFrom func(ctx context.Context, sc store.Scope, userID, id int64, target, title string) (*posttarget.Post, error)

// saveAs is the handler of a save-as-post route: it reads the source's id
// (the path parameter param) and the request, and makes the post with
// save.
func saveAs(param string, save saveFrom) gin.HandlerFunc {
	return func(c *gin.Context) {
		id, err := pathID(c, param)
		if err != nil {
			fail(c, err)
			return
		}
		var req saveAsPostRequest
		if err := decodeJSON(c, &req); err != nil {
			fail(c, err)
			return
		}
		p, err := save(c.Request.Context(), scope(c), principal(c).User.ID, id, req.Target, req.Title)
		if err != nil {
			fail(c, err)
			return
		}
		out := savedPostResponse{Target: p.Kind}
		msg := "WordPress draft saved"
		if p.WordPress != nil {
			wp := wpPostJSON(p.WordPress)
			out.WordPress = &wp
		}
		if p.Astro != nil {
			astro := astroPostJSON(p.Astro)
			out.Astro, msg = &astro, "draft saved; "+p.Astro.FileName()+" written"
		}
		respond(c, http.StatusCreated, out, msg)
	}
}
