package server

import (
	"context"
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/copydesk/copydesk/server/auth"
	"github.com/copydesk/copydesk/server/live"
	"github.com/copydesk/copydesk/store"
)

// Live agents (/api/live-agents): sessions that bind an agent to an
// environment, whose generations everyone who sees the environment can
// watch as they are written. Viewers watch and read; editors and up open,
// generate, cancel, close, delete and save. The rules are server/live's.
func (s *Server) registerLiveAgentRoutes() {
	const tag = "Live agents"
	s.handle(Route{Method: "GET", Path: "/api/live-agents/sessions", Tag: tag, Access: signedIn, List: true, Errors: []int{404},
		Summary: "List live sessions of your environments, newest first or by last activity", Query: liveSessionListQuery{}, Data: liveSessionResponse{}}, s.listLiveSessions)
	s.handle(Route{Method: "POST", Path: "/api/live-agents/sessions", Tag: tag, Access: editorOnly, Status: http.StatusCreated,
		Summary: "Open a live session of an agent in an environment", Body: liveSessionRequest{}, Data: liveSessionResponse{},
		Notes: "The agent must be one you see that may run in the environment (its own, assigned to it, or global)."}, s.createLiveSession)
	s.handle(Route{Method: "GET", Path: "/api/live-agents/sessions/{id}", Tag: tag, Access: signedIn,
		Summary: "Get a live session with its transcript and who watches it", Data: liveSessionDetailResponse{}}, s.getLiveSession)
	s.handle(Route{Method: "POST", Path: "/api/live-agents/sessions/{id}/close", Tag: tag, Access: editorOnly,
		Summary: "Close a live session", Data: liveSessionResponse{},
		Notes: "A generation under way is cancelled (its text so far is kept); watchers get `event: closed` and their streams end. " +
			"A closed session keeps its transcript and takes no more generations. Closing a closed session changes nothing."}, s.closeLiveSession)
	s.handle(Route{Method: "DELETE", Path: "/api/live-agents/sessions/{id}", Tag: tag, Access: editorOnly,
		Summary: "Delete a live session and its transcript (posts saved from it stay)", Data: deletedResponse{}}, s.deleteLiveSession)
	s.handle(Route{Method: "POST", Path: "/api/live-agents/sessions/{id}/generate", Tag: tag, Access: editorOnly,
		Status: http.StatusAccepted, Errors: []int{409}, Body: liveGenerateRequest{}, Data: liveGenerationResponse{},
		Summary: "Start a generation in a live session",
		Notes: "Answers 202 with the generation, queued; the job runner carries it out and its text goes to every watcher of " +
			"GET .../stream. It does not depend on any connection: the asker and every watcher may go away. The agent's system " +
			"prompt, model and credential apply; {{name}} placeholders in the prompt and the system prompt are filled from variables; " +
			"the session's earlier exchanges that succeeded are sent first, the oldest left out when the model's context window " +
			"is too small (history_dropped). 409: a generation is already under way (one at a time), the session is closed, its " +
			"agent was deleted or is inactive, or no AI provider is configured."}, s.generateLive)
	s.handle(Route{Method: "POST", Path: "/api/live-agents/sessions/{id}/cancel", Tag: tag, Access: editorOnly, Errors: []int{409},
		Summary: "Cancel the generation under way", Data: liveGenerationResponse{},
		Notes: "Its text so far is kept as its output (status cancelled; in the transcript an incomplete output). " +
			"409 when none is under way."}, s.cancelLive)
	s.handle(Route{Method: "GET", Path: "/api/live-agents/sessions/{id}/stream", Tag: tag, Access: signedIn, Errors: []int{409},
		Summary: "Watch a live session: Server-Sent Events", Binary: "text/event-stream", Events: liveEvents,
		Notes: "Every viewer of the environment may attach; all see the same events. First `event: snapshot` with " +
			"{session_id, generation, text, watchers}: the generation of the moment (or null) and its text so far. Then " +
			"`presence` {action: join|leave, user_id, username, watchers} when someone comes or goes; `generation` with the " +
			"generation when it is queued and again when it starts (its text starts empty); `delta` {generation_id, text} pieces; " +
			"`done` with the generation as recorded when it ends (status succeeded, failed or cancelled, with its output); " +
			"`error` {generation_id, detail} when it ended unrecorded (a database restore). A watcher that falls behind gets " +
			"`event: resync`, a snapshot with the whole text so far, in place of what it had not read: replace the text with it. " +
			"`closed` {session_id, deleted, detail} ends the stream when the session is closed or deleted; `end` when your session " +
			"ends, you lose the environment, the database is restored or the server stops. A heartbeat comment every 15 seconds. " +
			"409 for a closed session."}, s.watchLive)
	s.handle(Route{Method: "POST", Path: "/api/live-agents/sessions/{id}/save-as-post", Tag: tag, Access: editorOnly,
		Status: http.StatusCreated, Errors: []int{409}, Body: saveAsPostRequest{}, Data: savedPostResponse{},
		Summary: "Save the session's last output as a draft post",
		Notes: "The last output is the newest generation that succeeded (409 when there is none). The title, when absent, is its " +
			"first Markdown heading, or without one its first line of text. The post is a draft in the session's environment and records the generation " +
			"(live_generation_id). target wordpress makes a local WordPress post draft; target astro writes the file into the " +
			"environment's Astro content folder."},
		saveAs("id", s.posts.FromLive))
}

type liveSessionListQuery struct {
	pageQuery
	EnvironmentID *int64 `form:"environment_id" binding:"omitempty,gt=0"`
	Status        string `form:"status" binding:"omitempty,oneof=open closed" enum:"open,closed"`
	Sort          string `form:"sort" binding:"omitempty,oneof=created_at -created_at updated_at -updated_at" doc:"-created_at (the default: newest first), created_at, or by last activity: updated_at, -updated_at"`
}

type liveSessionRequest struct {
	AgentID       int64  `json:"agent_id" binding:"required,gt=0"`
	EnvironmentID int64  `json:"environment_id" binding:"required,gt=0"`
	Title         string `json:"title" binding:"max=200" doc:"default: \"Live session with <agent name>\""`
}

type liveGenerateRequest struct {
	Prompt    string            `json:"prompt" binding:"required,max=100000"`
	Variables map[string]string `json:"variables" binding:"max=100,dive,max=20000" doc:"values of {{name}} placeholders in the prompt and the agent's system prompt"`
}

type liveSessionResponse struct {
	ID            int64      `json:"id"`
	EnvironmentID int64      `json:"environment_id"`
	AgentID       *int64     `json:"agent_id" doc:"null once the agent is deleted: the session can no longer generate"`
	Title         string     `json:"title"`
	Status        string     `json:"status" enum:"open,closed"`
	CreatedBy     *int64     `json:"created_by"`
	CreatedAt     Timestamp  `json:"created_at"`
	UpdatedAt     Timestamp  `json:"updated_at" doc:"the last change: created, a generation asked for or ended, closed"`
	ClosedAt      *Timestamp `json:"closed_at"`
}

func liveSessionJSON(x *store.LiveSession) liveSessionResponse {
	return liveSessionResponse{ID: x.ID, EnvironmentID: x.EnvironmentID, AgentID: x.AgentID, Title: x.Title, Status: x.Status,
		CreatedBy: x.CreatedBy, CreatedAt: Timestamp(x.CreatedAt), UpdatedAt: Timestamp(x.UpdatedAt), ClosedAt: (*Timestamp)(x.ClosedAt)}
}

type liveGenerationResponse struct {
	ID        int64             `json:"id"`
	SessionID int64             `json:"session_id"`
	UserID    *int64            `json:"user_id" doc:"who asked"`
	Status    string            `json:"status" enum:"queued,running,succeeded,failed,cancelled"`
	Prompt    string            `json:"prompt"`
	Variables map[string]string `json:"variables"`
	Output    string            `json:"output" doc:"Markdown; as far as it got when cancelled or cut off"`
	outcomeResponse
	UsageEstimated bool       `json:"usage_estimated" doc:"the stream was cut off before the provider reported its usage"`
	HistoryDropped int        `json:"history_dropped" doc:"earlier messages of the session left out to fit the model's context window"`
	QueuedAt       Timestamp  `json:"queued_at"`
	StartedAt      *Timestamp `json:"started_at"`
	FinishedAt     *Timestamp `json:"finished_at"`
}

func liveGenerationJSON(g *store.LiveGeneration) liveGenerationResponse {
	out := liveGenerationResponse{ID: g.ID, SessionID: g.SessionID, UserID: g.UserID, Status: g.Status, Prompt: g.Prompt, Variables: g.Variables,
		Output: g.Output, outcomeResponse: outcomeJSON(g.Error, g.Usage),
		UsageEstimated: g.UsageEstimated, HistoryDropped: g.HistoryDropped, QueuedAt: Timestamp(g.QueuedAt),
		StartedAt: (*Timestamp)(g.StartedAt), FinishedAt: (*Timestamp)(g.FinishedAt)}
	if out.Variables == nil {
		out.Variables = map[string]string{}
	}
	return out
}

// liveEntryResponse is one entry of a transcript: a prompt, or the output
// that answered it once it ended.
type liveEntryResponse struct {
	GenerationID int64  `json:"generation_id"`
	Role         string `json:"role" enum:"prompt,output"`
	Content      string `json:"content"`
	Status       string `json:"status" enum:"complete,incomplete,failed" doc:"an output: complete, incomplete (cancelled: the text so far), failed (error says why; a stream cut off keeps its text); a prompt is complete"`
	UserID       *int64 `json:"user_id" doc:"who asked"`
	outcomeResponse
	UsageEstimated bool      `json:"usage_estimated"`
	CreatedAt      Timestamp `json:"created_at"`
}

var outputStatus = map[string]string{store.RunSucceeded: "complete", store.RunCancelled: "incomplete", store.RunFailed: "failed"}

// transcriptJSON is the transcript of a session's generations: each one's
// prompt, and its output once it ended.
func transcriptJSON(gens []*store.LiveGeneration) []liveEntryResponse {
	out := make([]liveEntryResponse, 0, 2*len(gens))
	for _, g := range gens {
		out = append(out, liveEntryResponse{GenerationID: g.ID, Role: "prompt", Content: g.Prompt, Status: "complete", UserID: g.UserID,
			CreatedAt: Timestamp(g.QueuedAt)})
		if g.Finished() {
			at := g.QueuedAt
			if g.FinishedAt != nil {
				at = *g.FinishedAt
			}
			out = append(out, liveEntryResponse{GenerationID: g.ID, Role: "output", Content: g.Output, Status: outputStatus[g.Status],
				UserID: g.UserID, outcomeResponse: outcomeJSON(g.Error, g.Usage),
				UsageEstimated: g.UsageEstimated, CreatedAt: Timestamp(at)})
		}
	}
	return out
}

type liveSessionDetailResponse struct {
	Session    liveSessionResponse     `json:"session"`
	Generation *liveGenerationResponse `json:"generation" doc:"the generation queued or under way, or null"`
	Transcript []liveEntryResponse     `json:"transcript" doc:"oldest first"`
	Watchers   []live.Watcher          `json:"watchers" doc:"who has the stream open now"`
}

func (s *Server) listLiveSessions(c *gin.Context) {
	var q liveSessionListQuery
	if err := bindQuery(c, &q); err != nil {
		fail(c, err)
		return
	}
	pg := q.page()
	list, total, err := s.live.List(c.Request.Context(), scope(c), live.ListQuery{EnvironmentID: q.EnvironmentID, Status: q.Status,
		Sort: sortOf(q.Sort), Page: pg})
	if err != nil {
		fail(c, err)
		return
	}
	respondList(c, list, total, pg, liveSessionJSON, "live sessions")
}

func (s *Server) createLiveSession(c *gin.Context) {
	var req liveSessionRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	x, err := s.live.Create(c.Request.Context(), scope(c), live.NewSession{EnvironmentID: req.EnvironmentID, AgentID: req.AgentID, Title: req.Title})
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusCreated, liveSessionJSON(x), "live session opened")
}

func (s *Server) getLiveSession(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	v, err := s.live.Get(c.Request.Context(), scope(c), id)
	if err != nil {
		fail(c, err)
		return
	}
	out := liveSessionDetailResponse{Session: liveSessionJSON(v.Session), Transcript: transcriptJSON(v.Generations), Watchers: v.Watchers}
	if n := len(v.Generations); n > 0 && !v.Generations[n-1].Finished() {
		g := liveGenerationJSON(v.Generations[n-1])
		out.Generation = &g
	}
	respond(c, http.StatusOK, out, "live session "+v.Session.Status)
}

func (s *Server) closeLiveSession(c *gin.Context) {
	one(c, "id", byCaller(c, s.live.Close), liveSessionJSON, "live session closed")
}

func (s *Server) deleteLiveSession(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	if err := s.live.Delete(c.Request.Context(), scope(c), id, principal(c).User.Username); err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, deletedResponse{ID: id, Deleted: true}, "live session deleted")
}

func (s *Server) generateLive(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	var req liveGenerateRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	g, err := s.live.Generate(c.Request.Context(), scope(c), id, live.GenerateInput{Prompt: req.Prompt, Variables: req.Variables})
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusAccepted, liveGenerationJSON(g), fmt.Sprintf("generation %d queued; watch it with GET /api/live-agents/sessions/%d/stream", g.ID, id))
}

func (s *Server) cancelLive(c *gin.Context) {
	one(c, "id", byCaller(c, s.live.Cancel), liveGenerationJSON, "generation cancelled; its text so far is kept")
}

// watchLive serves a session's topic to one watcher, counted in the
// session's presence while the stream lasts. Each heartbeat checks again
// that the watcher still sees the session and that it is open.
func (s *Server) watchLive(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	x, err := s.live.Watch(c.Request.Context(), scope(c), id)
	if err != nil {
		fail(c, err)
		return
	}
	o := s.streamOptions(c, func(ctx context.Context, p *auth.Principal) error {
		_, err := s.live.Watch(ctx, p.Scope, x.ID)
		if err == nil {
			s.live.Refresh(x.ID) // who watches here, told again to the other instances
		}
		return err
	})
	o.Encode = encodeLive
	if c.Request.Method != http.MethodHead { // an uptime monitor is nobody watching
		u := principal(c).User
		leave := s.live.Join(x.ID, u.ID, u.Username)
		defer leave()
	}
	s.serve(c, live.Topic(x.ID), o)
}

// encodeLive renders a session's stream events as the API does.
func encodeLive(v any) any {
	switch d := v.(type) {
	case *store.LiveGeneration:
		return liveGenerationJSON(d)
	case live.Snapshot:
		out := liveSnapshotResponse{SessionID: d.SessionID, Text: d.Text, Watchers: d.Watchers}
		if d.Generation != nil {
			g := liveGenerationJSON(d.Generation)
			out.Generation = &g
		}
		return out
	}
	return v
}

// liveSnapshotResponse is the data of `snapshot` and `resync`.
type liveSnapshotResponse struct {
	SessionID  int64                   `json:"session_id"`
	Generation *liveGenerationResponse `json:"generation"`
	Text       string                  `json:"text"`
	Watchers   []live.Watcher          `json:"watchers"`
}
