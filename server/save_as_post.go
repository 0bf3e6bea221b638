package server

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/copydesk/copydesk/store"
)

// From generation to a post: POST /api/agents/runs/{run_id}/save-as-post
// turns a succeeded run's output into a draft post of the run's
// environment, and POST /api/cie/runs/{run_id}/save-as-post does the same
// for an archetype generation's article. Each target is its post group's
// service; the handlers only pick one.
func (s *Server) registerSaveAsPostRoutes() {
	s.handle(Route{Method: "POST", Path: "/api/agents/runs/{run_id}/save-as-post", Tag: "Agents", Access: editorOnly,
		Status: http.StatusCreated, Errors: []int{409}, Body: saveAsPostRequest{}, Data: savedPostResponse{},
		Summary: "Save a succeeded run's output as a draft post",
		Notes: "The title, when absent, is the output's first Markdown heading (a level-1 heading then leaves the body). " +
			"The post is a draft in the run's environment and records the run (run_id). target wordpress makes a local WordPress post draft " +
			"(publish it with POST /api/wordpress-posts/{id}/publish); target astro writes the file into the environment's Astro content folder."},
		saveAs("run_id", func(c *gin.Context, id int64, title string) (*store.WordPressPost, error) {
			return s.wpPosts.FromRun(c.Request.Context(), scope(c), principal(c).User.ID, id, title)
		}, func(c *gin.Context, id int64, title string) (*store.AstroPost, error) {
			return s.astroPosts.CreateFromRun(c.Request.Context(), scope(c), id, title)
		}))
	s.handle(Route{Method: "POST", Path: "/api/cie/runs/{run_id}/save-as-post", Tag: "Content intelligence", Access: editorOnly,
		Status: http.StatusCreated, Errors: []int{409}, Body: saveAsPostRequest{}, Data: savedPostResponse{},
		Summary: "Save a succeeded generation's article as a draft post",
		Notes: "The post takes the article's title (unless one is given), description (the Astro description, the WordPress excerpt) and " +
			"Markdown body. It is a draft in the generation's environment and records the generation (cie_run_id); 409 unless the generation " +
			"succeeded. target wordpress makes a local WordPress post draft (publish it with POST /api/wordpress-posts/{id}/publish); " +
			"target astro writes the file into the environment's Astro content folder."},
		saveAs("run_id", func(c *gin.Context, id int64, title string) (*store.WordPressPost, error) {
			return s.wpPosts.FromGeneration(c.Request.Context(), scope(c), principal(c).User.ID, id, title)
		}, func(c *gin.Context, id int64, title string) (*store.AstroPost, error) {
			return s.astroPosts.CreateFromGeneration(c.Request.Context(), scope(c), id, title)
		}))
}

type saveAsPostRequest struct {
	Target string `json:"target" binding:"required,oneof=wordpress astro" enum:"wordpress,astro"`
	Title  string `json:"title" binding:"max=300" doc:"default: the output's first Markdown heading (a run's, a live session's), or the generation's article title"`
}

type savedPostResponse struct {
	Target    string             `json:"target" enum:"wordpress,astro"`
	WordPress *wpPostResponse    `json:"wordpress,omitempty" doc:"the post, for target wordpress"`
	Astro     *astroPostResponse `json:"astro,omitempty" doc:"the post, for target astro"`
}

// saveAs is the handler of a save-as-post route: it reads the source's id
// (the path parameter param) and the request, and makes the post of the
// target with that target's service call.
func saveAs(param string, wordpress func(c *gin.Context, id int64, title string) (*store.WordPressPost, error),
	astro func(c *gin.Context, id int64, title string) (*store.AstroPost, error)) gin.HandlerFunc {
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
		switch req.Target {
		case "wordpress":
			p, err := wordpress(c, id, req.Title)
			if err != nil {
				fail(c, err)
				return
			}
			out := wpPostJSON(p)
			respond(c, http.StatusCreated, savedPostResponse{Target: req.Target, WordPress: &out}, "WordPress draft saved")
		case "astro":
			p, err := astro(c, id, req.Title)
			if err != nil {
				fail(c, err)
				return
			}
			out := astroPostJSON(p)
			respond(c, http.StatusCreated, savedPostResponse{Target: req.Target, Astro: &out}, "draft saved; "+p.FileName()+" written")
		default:
			fail(c, store.Invalid("target: must be wordpress or astro"))
		}
	}
}
