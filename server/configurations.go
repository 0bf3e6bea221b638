package server

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/copydesk/copydesk/server/engine"
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
			"A failed test answers 200 with ok false and the provider's error."}, s.testCredential)
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
	LastTestedAt  *time.Time `json:"last_tested_at"`
	LastTestOK    *bool      `json:"last_test_ok"`
	LastTestError string     `json:"last_test_error"`
	CreatedAt     time.Time  `json:"created_at"`
	UpdatedAt     time.Time  `json:"updated_at"`
}

func credentialJSON(c *store.Credential) credentialResponse {
	return credentialResponse{ID: c.ID, Name: c.Name, Provider: c.Provider, BaseURL: c.BaseURL, Username: c.Username,
		SecretHint: c.SecretHint, DefaultModel: c.DefaultModel, EnvironmentID: c.EnvironmentID, LastTestedAt: c.LastTestedAt,
		LastTestOK: c.LastTestOK, LastTestError: c.LastTestError, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt}
}

type credentialListQuery struct {
	pageQuery
	Provider      string `form:"provider" binding:"omitempty,oneof=openai anthropic openai_compatible wordpress serp"`
	EnvironmentID *int64 `form:"environment_id" binding:"omitempty,gt=0" doc:"only this environment's credentials and the global ones"`
}

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

// secretOf picks the secret field a provider uses and refuses the other.
func secretOf(provider, apiKey, appPassword string) (string, error) {
	if provider == store.ProviderWordPress {
		if apiKey != "" {
			return "", store.Invalid("api_key: wordpress credentials use application_password")
		}
		return appPassword, nil
	}
	if appPassword != "" {
		return "", store.Invalid("application_password: only wordpress credentials have one; use api_key")
	}
	return apiKey, nil
}

// checkCredential applies the per-provider rules to the final state of a
// credential.
func checkCredential(provider, secret, username, baseURL string) (string, error) {
	if username != "" && provider != store.ProviderWordPress {
		return "", store.Invalid("username: only wordpress credentials have one")
	}
	for field, v := range map[string]string{"username": username, "base_url": baseURL} {
		if err := noControl(field, v); err != nil {
			return "", err
		}
	}
	if err := noControl("the secret", secret); err != nil {
		return "", err
	}
	baseURL = strings.TrimSpace(baseURL)
	if baseURL != "" {
		u, err := url.Parse(baseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			return "", store.Invalid("base_url: must be an http or https address without credentials or query")
		}
		baseURL = strings.TrimRight(u.String(), "/")
	}
	switch provider {
	case store.ProviderOpenAI, store.ProviderAnthropic, store.ProviderSERP:
		if secret == "" {
			return "", store.Invalid("api_key: is required for %s", provider)
		}
	case store.ProviderOpenAICompatible:
		if baseURL == "" {
			return "", store.Invalid("base_url: is required for openai_compatible, e.g. http://localhost:11434/v1 for Ollama")
		}
	case store.ProviderWordPress:
		switch {
		case baseURL == "":
			return "", store.Invalid("base_url: is required for wordpress: the site's address, e.g. https://example.com")
		case strings.TrimSpace(username) == "":
			return "", store.Invalid("username: is required for wordpress")
		case secret == "":
			return "", store.Invalid("application_password: is required for wordpress")
		}
	}
	return baseURL, nil
}

func (s *Server) checkEnvironmentExists(ctx context.Context, id *int64) error {
	if id == nil || *id == 0 {
		return nil
	}
	if _, err := s.db.EnvironmentByID(ctx, *id); store.IsNotFound(err) {
		return store.Invalid("environment_id: no environment with id %d", *id)
	} else if err != nil {
		return err
	}
	return nil
}

func (s *Server) listCredentials(c *gin.Context) {
	var q credentialListQuery
	if err := bindQuery(c, &q); err != nil {
		fail(c, err)
		return
	}
	pg := q.page()
	list, total, err := s.db.ListCredentials(c.Request.Context(), store.CredentialFilter{Provider: q.Provider,
		EnvironmentID: q.EnvironmentID, Global: true, Page: pg})
	if err != nil {
		fail(c, err)
		return
	}
	items := make([]credentialResponse, 0, len(list))
	for _, cr := range list {
		items = append(items, credentialJSON(cr))
	}
	respond(c, http.StatusOK, listData[credentialResponse]{Items: items, Total: total, Page: pg.Page, PerPage: pg.PerPage}, "credentials")
}

func (s *Server) createCredential(c *gin.Context) {
	var req credentialCreateRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	ctx := c.Request.Context()
	secret, err := secretOf(req.Provider, req.APIKey, req.ApplicationPassword)
	if err != nil {
		fail(c, err)
		return
	}
	baseURL, err := checkCredential(req.Provider, secret, req.Username, req.BaseURL)
	if err != nil {
		fail(c, err)
		return
	}
	if strings.TrimSpace(req.Name) == "" {
		fail(c, store.Invalid("name: is required"))
		return
	}
	for field, v := range map[string]string{"name": req.Name, "default_model": req.DefaultModel} {
		if err := noControl(field, v); err != nil {
			fail(c, err)
			return
		}
	}
	if err := s.checkEnvironmentExists(ctx, req.EnvironmentID); err != nil {
		fail(c, err)
		return
	}
	cred, err := s.db.CreateCredential(ctx, store.NewCredential{Name: strings.TrimSpace(req.Name), Provider: req.Provider,
		BaseURL: baseURL, Username: strings.TrimSpace(req.Username), SecretHint: engine.Mask(secret),
		DefaultModel: strings.TrimSpace(req.DefaultModel), EnvironmentID: req.EnvironmentID,
		Seal: func(id int64) ([]byte, error) { return s.keys.Seal([]byte(secret), store.CredentialAAD(id)) }})
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusCreated, credentialJSON(cred), "credential saved; its secret will not be shown again")
}

func (s *Server) credentialFromPath(c *gin.Context) (*store.Credential, error) {
	id, err := pathID(c, "id")
	if err != nil {
		return nil, err
	}
	return s.db.CredentialByID(c.Request.Context(), id)
}

func (s *Server) getCredential(c *gin.Context) {
	cred, err := s.credentialFromPath(c)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, credentialJSON(cred), "credential")
}

func (s *Server) updateCredential(c *gin.Context) {
	cred, err := s.credentialFromPath(c)
	if err != nil {
		fail(c, err)
		return
	}
	var req credentialUpdateRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	ctx := c.Request.Context()
	var newSecret *string
	if req.APIKey != nil || req.ApplicationPassword != nil {
		secret, err := secretOf(cred.Provider, deref(req.APIKey), deref(req.ApplicationPassword))
		if err != nil {
			fail(c, err)
			return
		}
		newSecret = &secret
	}
	// Check the credential as it will be, with the old secret when none is
	// given (only whether one exists matters here).
	secretForCheck := "kept"
	if newSecret != nil {
		secretForCheck = *newSecret
	} else if cred.SecretHint == "" {
		secretForCheck = ""
	}
	baseURL, err := checkCredential(cred.Provider, secretForCheck, firstSet(req.Username, cred.Username), firstSet(req.BaseURL, cred.BaseURL))
	if err != nil {
		fail(c, err)
		return
	}
	// A stored secret only ever goes where it went before: pointing a
	// credential at a new address needs its secret again, or a caller who
	// cannot read the secret could have it sent to a host of their own.
	if req.BaseURL != nil && baseURL != cred.BaseURL && newSecret == nil && cred.SecretHint != "" {
		field := "api_key"
		if cred.Provider == store.ProviderWordPress {
			field = "application_password"
		}
		fail(c, store.Invalid("%s: is required when base_url changes: a stored secret is not sent to a new address", field))
		return
	}
	up := store.CredentialUpdate{Username: req.Username, DefaultModel: req.DefaultModel}
	if req.BaseURL != nil {
		up.BaseURL = &baseURL
	}
	if req.Name != nil {
		name := strings.TrimSpace(*req.Name)
		if name == "" {
			fail(c, store.Invalid("name: must not be empty"))
			return
		}
		if err := noControl("name", name); err != nil {
			fail(c, err)
			return
		}
		up.Name = &name
	}
	if req.DefaultModel != nil {
		if err := noControl("default_model", *req.DefaultModel); err != nil {
			fail(c, err)
			return
		}
	}
	if req.EnvironmentID != nil {
		if err := s.checkEnvironmentExists(ctx, req.EnvironmentID); err != nil {
			fail(c, err)
			return
		}
		env := req.EnvironmentID
		if *env == 0 {
			env = nil
		}
		up.EnvironmentID = &env
	}
	if newSecret != nil {
		sealed, err := s.keys.Seal([]byte(*newSecret), store.CredentialAAD(cred.ID))
		if err != nil {
			fail(c, err)
			return
		}
		hint := engine.Mask(*newSecret)
		up.Secret, up.SecretHint = sealed, &hint
	}
	cred, err = s.db.UpdateCredential(ctx, cred.ID, up)
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, credentialJSON(cred), "credential updated")
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func firstSet(p *string, fallback string) string {
	if p != nil {
		return *p
	}
	return fallback
}

func (s *Server) deleteCredential(c *gin.Context) {
	cred, err := s.credentialFromPath(c)
	if err != nil {
		fail(c, err)
		return
	}
	if err := s.db.DeleteCredential(c.Request.Context(), cred.ID); err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, deletedResponse{ID: cred.ID, Deleted: true}, "credential deleted")
}

func (s *Server) testCredential(c *gin.Context) {
	cred, err := s.credentialFromPath(c)
	if err != nil {
		fail(c, err)
		return
	}
	res, err := s.engine.TestCredential(c.Request.Context(), cred)
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
	respond(c, http.StatusOK, credentialTestResponse{ID: cred.ID, OK: res.OK, Detail: res.Detail, Models: models, LatencyMS: res.LatencyMS}, msg)
}
