package server

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/copydesk/copydesk/server/credential"
	"github.com/copydesk/copydesk/store"
)

// The configurations group (/api/configurations): API credentials for the
// LLM providers, WordPress sites and keyword-data APIs. Secrets are sealed
// at rest and never shown again after creation, only a masked hint. Admins
// and super_admins only.
func (s *Server) registerConfigurationRoutes() {
	const tag = "Configurations"
	s.handle(Route{Method: "GET", Path: "/api/configurations", Tag: tag, Access: adminOnly, List: true,
		Summary: "List credentials", Query: credentialListQuery{}, Data: credentialResponse{}}, s.listCredentials)
	s.handle(Route{Method: "POST", Path: "/api/configurations", Tag: tag, Access: adminOnly, Status: http.StatusCreated,
		Summary: "Add a credential", Body: credentialCreateRequest{}, Data: credentialResponse{},
		Notes: "openai, anthropic and serp need api_key; openai_compatible needs base_url (api_key optional, e.g. for a local Ollama); " +
			"wordpress needs base_url (the site), username and application_password."}, s.createCredential)
	s.handle(Route{Method: "GET", Path: "/api/configurations/{id}", Tag: tag, Access: adminOnly,
		Summary: "Get a credential (secret masked)", Data: credentialResponse{}}, s.getCredential)
	s.handle(Route{Method: "PUT", Path: "/api/configurations/{id}", Tag: tag, Access: adminOnly,
		Summary: "Change a credential", Body: credentialUpdateRequest{}, Data: credentialResponse{},
		Notes: "Fields left out keep their values; without a new api_key or application_password the old secret stays."}, s.updateCredential)
	s.handle(Route{Method: "DELETE", Path: "/api/configurations/{id}", Tag: tag, Access: adminOnly,
		Summary: "Delete a credential", Data: deletedResponse{}}, s.deleteCredential)
	s.handle(Route{Method: "POST", Path: "/api/configurations/{id}/test", Tag: tag, Access: adminOnly, Errors: []int{409},
		Summary: "Test a credential with a real call", Data: credentialTestResponse{},
		Notes: "Lists the models (AI providers), fetches the signed-in user (WordPress) or the account (SERP), with a timeout. " +
			"A failed test answers 200 with ok false and a detail that names the remote status and repeats at most 200 characters " +
			"of the remote answer (the provider's message), or says what failed on the way (a refused address, the network)."}, s.testCredential)
}

type credentialResponse struct {
	ID            int64      `json:"id"`
	Name          string     `json:"name"`
	Provider      string     `json:"provider" enum:"openai,anthropic,openai_compatible,wordpress,serp"`
	BaseURL       string     `json:"base_url"`
	Username      string     `json:"username"`
	SecretHint    string     `json:"secret_hint" doc:"the secret, masked, e.g. sk-...x9Qa"`
	DefaultModel  string     `json:"default_model"`
	EnvironmentID *int64     `json:"environment_id" doc:"null: usable in every environment"`
	LastTestedAt  *Timestamp `json:"last_tested_at"`
	LastTestOK    *bool      `json:"last_test_ok"`
	LastTestError string     `json:"last_test_error"`
	CreatedAt     Timestamp  `json:"created_at"`
	UpdatedAt     Timestamp  `json:"updated_at"`
}

func credentialJSON(c *store.Credential) credentialResponse {
	return credentialResponse{ID: c.ID, Name: c.Name, Provider: c.Provider, BaseURL: c.BaseURL, Username: c.Username,
		SecretHint: c.SecretHint, DefaultModel: c.DefaultModel, EnvironmentID: c.EnvironmentID, LastTestedAt: (*Timestamp)(c.LastTestedAt),
		LastTestOK: c.LastTestOK, LastTestError: c.LastTestError, CreatedAt: Timestamp(c.CreatedAt), UpdatedAt: Timestamp(c.UpdatedAt)}
}

type credentialListQuery struct {
	pageQuery
	Provider      string `form:"provider" binding:"omitempty,oneof=openai anthropic openai_compatible wordpress serp"`
	EnvironmentID *int64 `form:"environment_id" binding:"omitempty,gt=0" doc:"only this environment's credentials and the global ones"`
}

// credentialCreateRequest and credentialUpdateRequest are the wire forms
// of credential.Input and credential.Change: the same fields in the same
// order, so one converts to the other.
type credentialCreateRequest struct {
	Name                string `json:"name" binding:"required,max=100"`
	Provider            string `json:"provider" binding:"required,oneof=openai anthropic openai_compatible wordpress serp"`
	APIKey              string `json:"api_key" binding:"max=4096"`
	ApplicationPassword string `json:"application_password" binding:"max=4096"`
	Username            string `json:"username" binding:"max=200"`
	BaseURL             string `json:"base_url" binding:"max=2000"`
	DefaultModel        string `json:"default_model" binding:"max=200"`
	EnvironmentID       *int64 `json:"environment_id" binding:"omitempty,gt=0"`
}

type credentialUpdateRequest struct {
	Name                *string `json:"name" binding:"omitempty,min=1,max=100"`
	APIKey              *string `json:"api_key" binding:"omitempty,max=4096"`
	ApplicationPassword *string `json:"application_password" binding:"omitempty,max=4096"`
	Username            *string `json:"username" binding:"omitempty,max=200"`
	BaseURL             *string `json:"base_url" binding:"omitempty,max=2000"`
	DefaultModel        *string `json:"default_model" binding:"omitempty,max=200"`
	// EnvironmentID: a positive id moves the credential to that
	// environment, 0 makes it global; left out, it stays.
	EnvironmentID *int64 `json:"environment_id" binding:"omitempty,gte=0"`
}

type credentialTestResponse struct {
	ID        int64    `json:"id"`
	OK        bool     `json:"ok"`
	Detail    string   `json:"detail"`
	Models    []string `json:"models"`
	LatencyMS int64    `json:"latency_ms"`
}

func (s *Server) listCredentials(c *gin.Context) {
	var q credentialListQuery
	if err := bindQuery(c, &q); err != nil {
		fail(c, err)
		return
	}
	pg := q.page()
	list, total, err := s.credentials.List(c.Request.Context(), scope(c), q.Provider, q.EnvironmentID, pg)
	if err != nil {
		fail(c, err)
		return
	}
	respondList(c, list, total, pg, credentialJSON, "credentials")
}

func (s *Server) createCredential(c *gin.Context) {
	var req credentialCreateRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	cred, err := s.credentials.Create(c.Request.Context(), scope(c), credential.Input(req))
	if err != nil {
		fail(c, err)
		return
	}
	msg := "credential saved"
	if req.APIKey != "" || req.ApplicationPassword != "" {
		msg += "; its secret will not be shown again"
	}
	respond(c, http.StatusCreated, credentialJSON(cred), msg)
}

func (s *Server) getCredential(c *gin.Context) {
	one(c, "id", s.credentials.Get, credentialJSON, "credential")
}

func (s *Server) updateCredential(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	var req credentialUpdateRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	cred, err := s.credentials.Update(c.Request.Context(), scope(c), id, credential.Change(req))
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, credentialJSON(cred), "credential updated")
}

func (s *Server) deleteCredential(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	if err := s.credentials.Delete(c.Request.Context(), scope(c), id); err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, deletedResponse{ID: id, Deleted: true}, "credential deleted")
}

func (s *Server) testCredential(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	res, err := s.credentials.Test(c.Request.Context(), scope(c), id)
	if err != nil {
		fail(c, err)
		return
	}
	models := res.Models
	if models == nil {
		models = []string{}
	}
	msg := "the credential works"
	if !res.OK {
		msg = "the credential test failed"
	}
	respond(c, http.StatusOK, credentialTestResponse{ID: id, OK: res.OK, Detail: res.Detail, Models: models, LatencyMS: res.LatencyMS}, msg)
}
