package server

import (
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/copydesk/copydesk/server/cie"
	"github.com/copydesk/copydesk/store"
)

// The content intelligence group (/api/cie): archetypes (article recipes),
// their prompt previews and the generations made from them. Everyone sees
// the global archetypes and those of their environments; editors manage
// those of their environments and generate; admins manage global ones;
// the five built-ins are read-only. The rules are server/cie's.
func (s *Server) registerCIERoutes() {
	const tag = "Content intelligence"
	s.handle(Route{Method: "GET", Path: "/api/cie/archetypes", Tag: tag, Access: signedIn, List: true, Errors: []int{404},
		Summary: "List archetypes you can see: global ones (the built-ins first) and your environments'", Query: archetypeListQuery{},
		Data: archetypeResponse{}}, s.listArchetypes)
	s.handle(Route{Method: "POST", Path: "/api/cie/archetypes", Tag: tag, Access: editorOnly, Status: http.StatusCreated,
		Summary: "Create an archetype", Body: archetypeRequest{}, Data: archetypeResponse{},
		Notes: "Editors create archetypes in their environments (environment_id required); admins may leave it out for a global one. " +
			"prompt_template holds {{name}} placeholders; tone, target_words and language have values without the caller (the archetype's, the AI settings' language)."}, s.createArchetype)
	s.handle(Route{Method: "GET", Path: "/api/cie/archetypes/{id}", Tag: tag, Access: signedIn,
		Summary: "Get an archetype", Data: archetypeResponse{}}, s.getArchetype)
	s.handle(Route{Method: "PUT", Path: "/api/cie/archetypes/{id}", Tag: tag, Access: editorOnly, Errors: []int{409},
		Summary: "Change an archetype", Body: archetypeUpdateRequest{}, Data: archetypeResponse{},
		Notes: "Fields left out keep their values. Built-in archetypes are read-only (409): copy them. Global ones are the admins' (403)."}, s.updateArchetype)
	s.handle(Route{Method: "DELETE", Path: "/api/cie/archetypes/{id}", Tag: tag, Access: editorOnly, Errors: []int{409},
		Summary: "Delete an archetype (its generations stay)", Data: deletedResponse{}}, s.deleteArchetype)
	s.handle(Route{Method: "POST", Path: "/api/cie/archetypes/{id}/copy", Tag: tag, Access: editorOnly, Status: http.StatusCreated,
		Summary: "Make an editable copy of an archetype", Body: archetypeCopyRequest{}, Data: archetypeResponse{}}, s.copyArchetype)
	s.handle(Route{Method: "POST", Path: "/api/cie/archetypes/{id}/preview", Tag: tag, Access: signedIn,
		Summary: "Render the prompts a generation would send", Body: previewRequest{}, Data: previewResponse{},
		Notes: "The system and user prompts exactly as generate sends them with these variables. A variable the template uses that is " +
			"not given is a 422 naming it, unless the archetype declares it optional (then it is empty); a variable given that the template " +
			"does not use is a 422 too, unless declared optional."}, s.previewArchetype)
	s.handle(Route{Method: "POST", Path: "/api/cie/archetypes/{id}/generate", Tag: tag, Access: editorOnly, Status: http.StatusAccepted,
		EventStream: true, Errors: []int{409},
		Events: generationEvents(cieRunResponse{}, "generation",
			cieRetryEvent),
		Summary: "Generate an article from the archetype", Body: generateRequest{}, Data: cieRunResponse{},
		Notes: "Queues a generation and answers 202 with its run; poll GET /api/cie/runs/{run_id}, or wait for the run.succeeded or run.failed " +
			"notification it raises for the caller when it ends (a streamed one raises none). With stream true the answer is a " +
			"Server-Sent Events stream instead: `event: run`, `event: delta` with {\"text\"} pieces, `event: retry` with {\"detail\"} when the " +
			"answer did not parse and the model is asked again (drop the text so far), then `event: done` with the run (or `event: error` with {\"detail\"}). " +
			"The model answers TITLE:, DESCRIPTION:, a --- line and the Markdown body; an answer that does not parse is retried once with " +
			"the parse error, then the run fails with the raw answer in raw_output. A client that goes away does not stop the generation. " +
			"409 when no AI provider is configured."}, s.generateArticle)
	s.handle(Route{Method: "GET", Path: "/api/cie/runs", Tag: tag, Access: signedIn, List: true, Errors: []int{404},
		Summary: "List generations in your environments, newest first", Query: cieRunListQuery{}, Data: cieRunResponse{},
		Notes: "The autopilot's generations are listed too. An environment_id outside your environments is a 404."}, s.listCIERuns)
	s.handle(Route{Method: "GET", Path: "/api/cie/runs/{run_id}", Tag: tag, Access: signedIn,
		Summary: "Get a generation", Data: cieRunResponse{}}, s.getCIERun)
	s.handle(Route{Method: "GET", Path: "/api/cie/runs/{run_id}/events", Tag: tag, Access: signedIn, Binary: "text/event-stream",
		Errors: []int{409}, Events: cieRunEvents,
		Summary: "Server-Sent Events of a streamed generation: join it, or resume a cut stream with Last-Event-ID",
		Notes: "The events of POST .../generate with stream true, for a client whose stream was cut or who joins late. With " +
			"Last-Event-ID, the events after it; without it (or when they are no longer kept), `event: snapshot` with {\"run\", " +
			"\"text\"} so far (replace the text); then the live ones. A generation that has ended answers its `done` event (or " +
			"`error`) and the stream ends. 409 for a generation queued without stream, which has no events: poll GET /api/cie/runs/{run_id}."},
		s.watchCIERun)
	s.handle(Route{Method: "POST", Path: "/api/cie/runs/{run_id}/cancel", Tag: tag, Access: editorOnly, Errors: []int{409},
		Summary: "Cancel a queued or running generation", Data: cieRunResponse{},
		Notes: "A running generation's model call is cut and what it used is recorded. A finished one is a 409."}, s.cancelCIERun)
}

type cieRunListQuery struct {
	pageQuery
	EnvironmentID *int64 `form:"environment_id" binding:"omitempty,gt=0"`
	ArchetypeID   *int64 `form:"archetype_id" binding:"omitempty,gt=0"`
	Status        string `form:"status" binding:"omitempty,oneof=queued running succeeded failed cancelled"`
}

type sectionJSON struct {
	Heading  string `json:"heading" binding:"required,max=200"`
	Guidance string `json:"guidance" binding:"max=2000"`
}

type archetypeRequest struct {
	EnvironmentID     *int64        `json:"environment_id" binding:"omitempty,gt=0" doc:"null: a global archetype (admins only)"`
	Name              string        `json:"name" binding:"required,max=100"`
	Description       string        `json:"description" binding:"max=2000"`
	Outline           []sectionJSON `json:"outline" binding:"max=30,dive"`
	PromptTemplate    string        `json:"prompt_template" binding:"required,max=20000"`
	OptionalVariables []string      `json:"optional_variables" binding:"max=20"`
	TargetWords       int           `json:"target_words" binding:"omitempty,gte=50,lte=20000" doc:"default 1200"`
	Tone              string        `json:"tone" binding:"max=100" doc:"empty: the AI settings' tone"`
}

type archetypeUpdateRequest struct {
	Name              *string        `json:"name" binding:"omitempty,min=1,max=100"`
	Description       *string        `json:"description" binding:"omitempty,max=2000"`
	Outline           *[]sectionJSON `json:"outline" binding:"omitempty,max=30,dive"`
	PromptTemplate    *string        `json:"prompt_template" binding:"omitempty,min=1,max=20000"`
	OptionalVariables *[]string      `json:"optional_variables" binding:"omitempty,max=20"`
	TargetWords       *int           `json:"target_words" binding:"omitempty,gte=50,lte=20000"`
	Tone              *string        `json:"tone" binding:"omitempty,max=100"`
}

type archetypeCopyRequest struct {
	EnvironmentID *int64 `json:"environment_id" binding:"omitempty,gt=0" doc:"where the copy goes; null: global (admins only)"`
	Name          string `json:"name" binding:"max=100" doc:"default: the name with \" (copy)\""`
}

type archetypeResponse struct {
	ID                int64         `json:"id"`
	EnvironmentID     *int64        `json:"environment_id" doc:"null: a global archetype"`
	Builtin           string        `json:"builtin" doc:"the slug of a built-in (read-only) archetype: how-to, listicle, comparison, review, pillar-page; empty for others"`
	Name              string        `json:"name"`
	Description       string        `json:"description"`
	Outline           []sectionJSON `json:"outline"`
	PromptTemplate    string        `json:"prompt_template"`
	Variables         []string      `json:"variables" doc:"the placeholders of prompt_template, in order"`
	OptionalVariables []string      `json:"optional_variables"`
	TargetWords       int           `json:"target_words"`
	Tone              string        `json:"tone"`
	CreatedBy         *int64        `json:"created_by"`
	CreatedAt         Timestamp     `json:"created_at"`
	UpdatedAt         Timestamp     `json:"updated_at"`
}

func archetypeJSON(a *store.Archetype) archetypeResponse {
	out := archetypeResponse{ID: a.ID, EnvironmentID: a.EnvironmentID, Builtin: a.Builtin, Name: a.Name, Description: a.Description,
		Outline: make([]sectionJSON, len(a.Outline)), PromptTemplate: a.PromptTemplate, Variables: cie.Placeholders(a.PromptTemplate),
		OptionalVariables: a.OptionalVariables, TargetWords: a.TargetWords, Tone: a.Tone, CreatedBy: a.CreatedBy,
		CreatedAt: Timestamp(a.CreatedAt), UpdatedAt: Timestamp(a.UpdatedAt)}
	for i, sec := range a.Outline {
		out.Outline[i] = sectionJSON(sec)
	}
	if out.OptionalVariables == nil {
		out.OptionalVariables = []string{}
	}
	return out
}

func sections(in []sectionJSON) []store.Section {
	out := make([]store.Section, len(in))
	for i, sec := range in {
		out[i] = store.Section(sec)
	}
	return out
}

type archetypeListQuery struct {
	pageQuery
	EnvironmentID *int64 `form:"environment_id" binding:"omitempty,gt=0" doc:"the global archetypes and this environment's"`
}

type previewRequest struct {
	Variables     map[string]string `json:"variables" binding:"max=50,dive,max=5000"`
	EnvironmentID *int64            `json:"environment_id" binding:"omitempty,gt=0" doc:"whose AI settings (language, tone) apply; default: the global ones"`
	AgentID       *int64            `json:"agent_id" binding:"omitempty,gt=0" doc:"its system prompt comes first; needs environment_id"`
}

type previewResponse struct {
	System    string            `json:"system"`
	User      string            `json:"user"`
	Variables map[string]string `json:"variables" doc:"every value the prompts were made with, the standard ones included"`
}

type generateRequest struct {
	Variables     map[string]string `json:"variables" binding:"max=50,dive,max=5000"`
	AgentID       *int64            `json:"agent_id" binding:"omitempty,gt=0" doc:"its system prompt, credential, model and parameters apply"`
	EnvironmentID int64             `json:"environment_id" binding:"required,gt=0"`
	Stream        bool              `json:"stream"`
}

type cieRunResponse struct {
	ID             int64             `json:"id"`
	ArchetypeID    *int64            `json:"archetype_id" doc:"null once the archetype is deleted"`
	AgentID        *int64            `json:"agent_id"`
	EnvironmentID  int64             `json:"environment_id"`
	UserID         *int64            `json:"user_id"`
	Status         string            `json:"status" enum:"queued,running,succeeded,failed,cancelled"`
	Variables      map[string]string `json:"variables"`
	SystemPrompt   string            `json:"system_prompt"`
	UserPrompt     string            `json:"user_prompt"`
	Title          string            `json:"title"`
	Description    string            `json:"description"`
	Body           string            `json:"body" doc:"Markdown"`
	RawOutput      string            `json:"raw_output" doc:"the model's last answer when it could not be parsed (or was cut off); empty on success"`
	Error          string            `json:"error"`
	Attempts       int               `json:"attempts" doc:"model calls made: 2 when the first answer did not parse"`
	Model          string            `json:"model"`
	InputTokens    int64             `json:"input_tokens" doc:"over every attempt"`
	OutputTokens   int64             `json:"output_tokens"`
	CostUSD        *float64          `json:"cost_usd"`
	StopReason     *string           `json:"stop_reason" enum:"stop,length,content_filter,tool_calls,cancelled,error,other" doc:"why the model stopped: stop (finished), length (cut off at the max tokens limit), content_filter, tool_calls, cancelled (stopped or cancelled), error (the call failed), other; null while it runs, and for generations made before it was recorded"`
	Truncated      bool              `json:"truncated" doc:"the answer was cut off at the max tokens limit (stop_reason length)"`
	UsageEstimated bool              `json:"usage_estimated" doc:"part of the usage is estimated: a stream was cut off before the provider reported it"`
	QueuedAt       Timestamp         `json:"queued_at"`
	StartedAt      *Timestamp        `json:"started_at"`
	FinishedAt     *Timestamp        `json:"finished_at"`
}

func cieRunJSON(r *store.CIERun) cieRunResponse {
	out := cieRunResponse{ID: r.ID, ArchetypeID: r.ArchetypeID, AgentID: r.AgentID, EnvironmentID: r.EnvironmentID, UserID: r.UserID,
		Status: r.Status, Variables: r.Variables, SystemPrompt: r.SystemPrompt, UserPrompt: r.UserPrompt, Title: r.Title,
		Description: r.Description, Body: r.Body, RawOutput: r.RawOutput, Error: r.Error, Attempts: r.Attempts, Model: r.Model,
		InputTokens: r.InputTokens, OutputTokens: r.OutputTokens, CostUSD: store.USDOf(r.Cost), StopReason: stopReason(r.StopReason),
		Truncated: truncated(r.StopReason), UsageEstimated: r.UsageEstimated,
		QueuedAt: Timestamp(r.QueuedAt), StartedAt: (*Timestamp)(r.StartedAt), FinishedAt: (*Timestamp)(r.FinishedAt)}
	if out.Variables == nil {
		out.Variables = map[string]string{}
	}
	return out
}

func (s *Server) listArchetypes(c *gin.Context) {
	var q archetypeListQuery
	if err := bindQuery(c, &q); err != nil {
		fail(c, err)
		return
	}
	pg := q.page()
	list, total, err := s.cie.List(c.Request.Context(), scope(c), q.EnvironmentID, pg)
	if err != nil {
		fail(c, err)
		return
	}
	respondList(c, list, total, pg, archetypeJSON, "archetypes")
}

func (s *Server) createArchetype(c *gin.Context) {
	var req archetypeRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	a, err := s.cie.Create(c.Request.Context(), scope(c), store.ArchetypeInput{EnvironmentID: req.EnvironmentID, Name: req.Name,
		Description: req.Description, Outline: sections(req.Outline), PromptTemplate: req.PromptTemplate,
		OptionalVariables: req.OptionalVariables, TargetWords: req.TargetWords, Tone: req.Tone})
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusCreated, archetypeJSON(a), "archetype created")
}

func (s *Server) getArchetype(c *gin.Context) {
	one(c, "id", s.cie.Get, archetypeJSON, "archetype")
}

func (s *Server) updateArchetype(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	var req archetypeUpdateRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	p := cie.Patch{Name: req.Name, Description: req.Description, PromptTemplate: req.PromptTemplate,
		OptionalVariables: req.OptionalVariables, TargetWords: req.TargetWords, Tone: req.Tone}
	if req.Outline != nil {
		o := sections(*req.Outline)
		p.Outline = &o
	}
	a, err := s.cie.Update(c.Request.Context(), scope(c), id, p)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, archetypeJSON(a), "archetype updated")
}

func (s *Server) deleteArchetype(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	if err := s.cie.Delete(c.Request.Context(), scope(c), id); err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, deletedResponse{ID: id, Deleted: true}, "archetype deleted")
}

func (s *Server) copyArchetype(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	var req archetypeCopyRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	a, err := s.cie.Copy(c.Request.Context(), scope(c), id, req.EnvironmentID, req.Name)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusCreated, archetypeJSON(a), "archetype copied")
}

func (s *Server) previewArchetype(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	var req previewRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	p, err := s.cie.Preview(c.Request.Context(), scope(c), id, req.Variables, req.EnvironmentID, req.AgentID)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, previewResponse{System: p.System, User: p.User, Variables: p.Variables}, "prompts")
}

// generateArticle records a generation with its job: queued, it answers
// 202 with the run; streamed, it serves the run's events as its job
// publishes them. The generation does not go with the stream: it finishes
// and is stored whether or not anyone still watches.
func (s *Server) generateArticle(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	var req generateRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	run, err := s.cie.Generate(c.Request.Context(), scope(c), id,
		cie.GenerateInput{Variables: req.Variables, AgentID: req.AgentID, EnvironmentID: req.EnvironmentID, Stream: req.Stream})
	if err != nil {
		fail(c, err)
		return
	}
	if req.Stream {
		o := s.streamOptions(c)
		o.Encode = encodeCIERun
		s.serve(c, cie.Topic(run.ID), o)
		return
	}
	respond(c, http.StatusAccepted, cieRunJSON(run), fmt.Sprintf("generation %d queued; follow it with GET /api/cie/runs/%d", run.ID, run.ID))
}

func (s *Server) getCIERun(c *gin.Context) {
	oneSaying(c, "run_id", s.cie.Run, cieRunJSON, func(r *store.CIERun) string { return "generation " + r.Status })
}

func (s *Server) listCIERuns(c *gin.Context) {
	var q cieRunListQuery
	if err := bindQuery(c, &q); err != nil {
		fail(c, err)
		return
	}
	pg := q.page()
	list, total, err := s.cie.Runs(c.Request.Context(), scope(c),
		cie.RunFilter{EnvironmentID: q.EnvironmentID, ArchetypeID: q.ArchetypeID, Status: q.Status}, pg)
	if err != nil {
		fail(c, err)
		return
	}
	respondList(c, list, total, pg, cieRunJSON, "generations")
}

func (s *Server) cancelCIERun(c *gin.Context) {
	oneSaying(c, "run_id", byCaller(c, s.cie.Cancel), cieRunJSON, func(r *store.CIERun) string { return "generation " + r.Status })
}

// cieRetryEvent is a generation's `retry`.
var cieRetryEvent = Event{Name: "retry", Data: streamDetail{}, Doc: "The answer did not follow the article format and the model is asked again: drop the text so far."}

// cieRunEvents are the events of a generation joined or resumed.
var cieRunEvents = append([]Event{
	{Name: "snapshot", Data: cieSnapshotResponse{}, Doc: "First for a watcher without Last-Event-ID, or whose events are no longer kept: the run and its text so far (replace the text)."}},
	append(generationEvents(cieRunResponse{}, "generation",
		cieRetryEvent),
		eventLagged)...)

// watchCIERun serves a generation's events: live while it runs (resuming
// after Last-Event-ID), its stored ending once it has ended.
func (s *Server) watchCIERun(c *gin.Context) {
	id, err := pathID(c, "run_id")
	if err != nil {
		fail(c, err)
		return
	}
	final, err := s.cie.Watch(c.Request.Context(), scope(c), id)
	if err != nil {
		fail(c, err)
		return
	}
	o := s.streamOptions(c)
	o.Encode = encodeCIERun
	if final != nil {
		s.serveFinished(c, o, *final)
		return
	}
	s.serve(c, cie.Topic(id), o)
}

// encodeCIERun renders a generation's stream events as the API does.
func encodeCIERun(v any) any {
	switch d := v.(type) {
	case *store.CIERun:
		return cieRunJSON(d)
	case cie.Snapshot:
		return cieSnapshotResponse{Run: cieRunJSON(d.Run), Text: d.Text, Detail: d.Detail}
	}
	return v
}

// cieSnapshotResponse is what a watcher that joins a streamed generation
// late gets instead of the events it missed.
type cieSnapshotResponse struct {
	Run    cieRunResponse `json:"run"`
	Text   string         `json:"text"`
	Detail string         `json:"detail,omitempty"`
}
