package server

import (
	"net/http"
	"slices"

	"github.com/gin-gonic/gin"

	"github.com/copydesk/copydesk/server/agent"
	"github.com/copydesk/copydesk/store"
)

// The agents group (/api/agents): configured AI workers, which
// environments may use them, and their runs. Everyone sees the agents of
// their environments (and global ones); editors create, change, run and
// cancel them in their environments; only admins manage global agents. The
// rules are server/agent's.
func (s *Server) registerAgentRoutes() {
	const tag = "Agents"
	s.handle(Route{Method: "GET", Path: "/api/agents", Tag: tag, Access: signedIn, List: true, Errors: []int{404},
		Summary: "List agents you can see", Query: agentListQuery{}, Data: agentResponse{}}, s.listAgents)
	s.handle(Route{Method: "POST", Path: "/api/agents", Tag: tag, Access: editorOnly, Status: http.StatusCreated,
		Summary: "Create an agent", Body: agentRequest{}, Data: agentResponse{},
		Notes: "Editors create agents in their environments (environment_id required); admins may leave it out for a global agent."}, s.createAgent)
	s.handle(Route{Method: "GET", Path: "/api/agents/credentials", Tag: tag, Access: editorOnly, List: true, Errors: []int{404},
		Summary: "AI credentials an agent of an environment may use", Query: agentCredentialQuery{}, Data: agentCredentialResponse{},
		Notes: "The environment's own AI provider credentials and the global ones, by name, to choose an agent's credential_id: " +
			"their name, provider and default model, never a secret or an address (administrators manage them in /api/configurations). " +
			"An environment you cannot see is 404."}, s.listAgentCredentials)
	s.handle(Route{Method: "GET", Path: "/api/agents/runs/{run_id}", Tag: tag, Access: signedIn,
		Summary: "Get a run", Data: runResponse{}}, s.getRun)
	s.handle(Route{Method: "POST", Path: "/api/agents/runs/{run_id}/cancel", Tag: tag, Access: editorOnly, Errors: []int{409},
		Summary: "Cancel a queued or running run", Data: runResponse{}}, s.cancelRun)
	s.handle(Route{Method: "GET", Path: "/api/agents/{id}", Tag: tag, Access: signedIn,
		Summary: "Get an agent", Data: agentResponse{}}, s.getAgent)
	s.handle(Route{Method: "PUT", Path: "/api/agents/{id}", Tag: tag, Access: editorOnly,
		Summary: "Change an agent", Body: agentUpdateRequest{}, Data: agentResponse{},
		Notes: "Fields left out (or null) keep their values. clear lists the fields to set back to null: temperature and " +
			"max_tokens then follow the model's default again. A field both given and cleared is a 422."}, s.updateAgent)
	s.handle(Route{Method: "DELETE", Path: "/api/agents/{id}", Tag: tag, Access: editorOnly,
		Summary: "Delete an agent and its runs", Data: deletedResponse{}}, s.deleteAgent)
	s.handle(Route{Method: "GET", Path: "/api/agents/{id}/assignments", Tag: tag, Access: signedIn,
		Summary: "Environments that may use the agent", Data: assignmentsResponse{}}, s.getAssignments)
	s.handle(Route{Method: "PUT", Path: "/api/agents/{id}/assignments", Tag: tag, Access: editorOnly, Errors: []int{409},
		Summary: "Set the environments that may use the agent", Body: assignmentsRequest{}, Data: assignmentsResponse{},
		Notes: "409 when it would take an environment from the agent while an SEO campaign there has it (GET /api/agents/{id}/campaigns)."}, s.putAssignments)
	s.handle(Route{Method: "POST", Path: "/api/agents/{id}/execute", Tag: tag, Access: editorOnly, Status: http.StatusAccepted, EventStream: true,
		Events:  generationEvents(runResponse{}, "run"),
		Summary: "Run the agent", Body: executeRequest{}, Data: runResponse{}, Errors: []int{409},
		Notes: "Queues a run and answers 202 with it; poll GET /api/agents/runs/{run_id}, or wait for the run.succeeded / run.failed notification. " +
			"With stream true the answer is instead a Server-Sent Events stream: `event: run` with the run, `event: delta` with {\"text\"} pieces, then " +
			"`event: done` with the run (or `event: error` with {\"detail\"}); a heartbeat comment every 15 seconds. {{name}} in the input and the system prompt is replaced by variables[name]. " +
			"409 when no AI provider is configured, or when several are usable and none is chosen (neither on the agent nor in PUT /api/settings/ai-content)."}, s.executeAgent)
	s.handle(Route{Method: "GET", Path: "/api/agents/{id}/runs", Tag: tag, Access: signedIn, List: true,
		Summary: "Runs of an agent, newest first", Query: runListQuery{}, Data: runResponse{}}, s.listAgentRuns)
}

type agentRequest struct {
	EnvironmentID *int64   `json:"environment_id" binding:"omitempty,gt=0"`
	Name          string   `json:"name" binding:"required,max=100"`
	Description   string   `json:"description" binding:"max=2000"`
	Kind          string   `json:"kind" binding:"required,oneof=writer editor researcher seo"`
	CredentialID  *int64   `json:"credential_id" binding:"omitempty,gt=0" doc:"null: the AI content settings' credential (or the only AI credential usable, when they choose none)"`
	Model         string   `json:"model" binding:"max=200" doc:"empty: the settings' model"`
	SystemPrompt  string   `json:"system_prompt" binding:"max=50000"`
	Temperature   *float64 `json:"temperature" binding:"omitempty,gte=0,lte=2"`
	MaxTokens     *int     `json:"max_tokens" binding:"omitempty,gte=1,lte=200000"`
	IsActive      *bool    `json:"is_active" doc:"default true"`
}

type agentUpdateRequest struct {
	Name         *string  `json:"name" binding:"omitempty,min=1,max=100"`
	Description  *string  `json:"description" binding:"omitempty,max=2000"`
	Kind         *string  `json:"kind" binding:"omitempty,oneof=writer editor researcher seo"`
	CredentialID *int64   `json:"credential_id" binding:"omitempty,gte=0" doc:"0: back to the settings' credential"`
	Model        *string  `json:"model" binding:"omitempty,max=200"`
	SystemPrompt *string  `json:"system_prompt" binding:"omitempty,max=50000"`
	Temperature  *float64 `json:"temperature" binding:"omitempty,gte=0,lte=2"`
	MaxTokens    *int     `json:"max_tokens" binding:"omitempty,gte=1,lte=200000"`
	IsActive     *bool    `json:"is_active"`
	Clear        []string `json:"clear" binding:"max=2,dive,oneof=temperature max_tokens" doc:"fields to set back to null, the model's (or the settings') default: temperature, max_tokens (a null in their own fields keeps the value)"`
}

type agentResponse struct {
	ID            int64     `json:"id"`
	EnvironmentID *int64    `json:"environment_id" doc:"null: a global agent"`
	Name          string    `json:"name"`
	Description   string    `json:"description"`
	Kind          string    `json:"kind" enum:"writer,editor,researcher,seo"`
	CredentialID  *int64    `json:"credential_id"`
	Model         string    `json:"model"`
	SystemPrompt  string    `json:"system_prompt"`
	Temperature   *float64  `json:"temperature"`
	MaxTokens     *int      `json:"max_tokens"`
	IsActive      bool      `json:"is_active"`
	Assignments   []int64   `json:"assignments" doc:"environments, beyond its own, that may use it"`
	CreatedAt     Timestamp `json:"created_at"`
	UpdatedAt     Timestamp `json:"updated_at"`
}

func agentJSON(a *store.Agent) agentResponse {
	as := a.Assignments
	if as == nil {
		as = []int64{}
	}
	return agentResponse{ID: a.ID, EnvironmentID: a.EnvironmentID, Name: a.Name, Description: a.Description, Kind: a.Kind,
		CredentialID: a.CredentialID, Model: a.Model, SystemPrompt: a.SystemPrompt, Temperature: a.Temperature, MaxTokens: a.MaxTokens,
		IsActive: a.IsActive, Assignments: as, CreatedAt: Timestamp(a.CreatedAt), UpdatedAt: Timestamp(a.UpdatedAt)}
}

type agentListQuery struct {
	pageQuery
	EnvironmentID *int64 `form:"environment_id" binding:"omitempty,gt=0" doc:"agents of this environment or assigned to it"`
	Kind          string `form:"kind" binding:"omitempty,oneof=writer editor researcher seo"`
	IsActive      *bool  `form:"is_active"`
	Q             string `form:"q" binding:"max=200"`
}

type agentCredentialQuery struct {
	pageQuery
	EnvironmentID int64 `form:"environment_id" binding:"required,gt=0" doc:"where the agent is to run"`
}

// agentCredentialResponse is what an editor may know of a credential to
// choose it: no secret hint, no base URL or username.
type agentCredentialResponse struct {
	ID            int64  `json:"id"`
	Name          string `json:"name"`
	Provider      string `json:"provider" enum:"openai,anthropic,openai_compatible"`
	DefaultModel  string `json:"default_model"`
	EnvironmentID *int64 `json:"environment_id" doc:"null: usable in every environment"`
}

func agentCredentialJSON(c *store.Credential) agentCredentialResponse {
	return agentCredentialResponse{ID: c.ID, Name: c.Name, Provider: c.Provider, DefaultModel: c.DefaultModel, EnvironmentID: c.EnvironmentID}
}

func (s *Server) listAgentCredentials(c *gin.Context) {
	var q agentCredentialQuery
	if err := bindQuery(c, &q); err != nil {
		fail(c, err)
		return
	}
	pg := q.page()
	list, total, err := s.credentials.ListAI(c.Request.Context(), scope(c), q.EnvironmentID, pg)
	if err != nil {
		fail(c, err)
		return
	}
	respondList(c, list, total, pg, agentCredentialJSON, "credentials")
}

type assignmentsRequest struct {
	EnvironmentIDs []int64 `json:"environment_ids" binding:"required,max=1000,dive,gt=0"`
}

type assignmentsResponse struct {
	AgentID        int64   `json:"agent_id"`
	EnvironmentID  *int64  `json:"environment_id" doc:"the agent's own environment"`
	EnvironmentIDs []int64 `json:"environment_ids"`
}

func (s *Server) listAgents(c *gin.Context) {
	var q agentListQuery
	if err := bindQuery(c, &q); err != nil {
		fail(c, err)
		return
	}
	pg := q.page()
	list, total, err := s.agents.List(c.Request.Context(), scope(c),
		agent.ListQuery{EnvironmentID: q.EnvironmentID, Kind: q.Kind, Active: q.IsActive, Q: q.Q, Page: pg})
	if err != nil {
		fail(c, err)
		return
	}
	respondList(c, list, total, pg, agentJSON, "agents")
}

func (s *Server) createAgent(c *gin.Context) {
	var req agentRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	a, err := s.agents.Create(c.Request.Context(), scope(c), store.AgentInput{EnvironmentID: req.EnvironmentID, Name: req.Name,
		Description: req.Description, Kind: req.Kind, CredentialID: req.CredentialID, Model: req.Model, SystemPrompt: req.SystemPrompt,
		Temperature: req.Temperature, MaxTokens: req.MaxTokens, IsActive: req.IsActive == nil || *req.IsActive})
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusCreated, agentJSON(a), "agent created")
}

func (s *Server) getAgent(c *gin.Context) {
	one(c, "id", s.agents.Get, agentJSON, "agent")
}

func (s *Server) updateAgent(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	var req agentUpdateRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	a, err := s.agents.Update(c.Request.Context(), scope(c), id, agent.Change{Name: req.Name, Description: req.Description,
		Kind: req.Kind, CredentialID: req.CredentialID, Model: req.Model, SystemPrompt: req.SystemPrompt,
		Temperature: req.Temperature, MaxTokens: req.MaxTokens, IsActive: req.IsActive,
		ClearTemperature: slices.Contains(req.Clear, "temperature"), ClearMaxTokens: slices.Contains(req.Clear, "max_tokens")})
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, agentJSON(a), "agent updated")
}

func (s *Server) deleteAgent(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	if err := s.agents.Delete(c.Request.Context(), scope(c), id); err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, deletedResponse{ID: id, Deleted: true}, "agent deleted")
}

func (s *Server) getAssignments(c *gin.Context) {
	one(c, "id", s.agents.Get, assignmentsJSON, "assignments")
}

func (s *Server) putAssignments(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	var req assignmentsRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	a, err := s.agents.SetAssignments(c.Request.Context(), scope(c), id, req.EnvironmentIDs)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, assignmentsJSON(a), "assignments updated")
}

func assignmentsJSON(a *store.Agent) assignmentsResponse {
	ids := a.Assignments
	if ids == nil {
		ids = []int64{}
	}
	return assignmentsResponse{AgentID: a.ID, EnvironmentID: a.EnvironmentID, EnvironmentIDs: ids}
}
