package server

import (
	"context"

	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/copydesk/copydesk/server/auth"
	"github.com/copydesk/copydesk/store"
)

// Personal API tokens (/api/auth/tokens), part of the authentication
// group: a user's own, and an admin's view of anyone's under
// /api/auth/users/{id}/tokens beside the other admin actions on a user.
// Every one of these routes needs a password sign-in: a token manages no
// tokens (docs/tokens.md).
func (s *Server) registerAPITokenRoutes(tag string) {
	s.handle(Route{Method: "POST", Path: "/api/auth/tokens", Tag: tag, Access: ownAccount, Status: http.StatusCreated,
		Summary: "Make a personal API token", Body: apiTokenRequest{}, Data: apiTokenCreatedResponse{}, Errors: []int{409},
		Notes: "The answer holds the token's secret (cdk_...), shown this once only: copy it now. Send it as Authorization: Bearer cdk_... " +
			"on any route. The token acts as you, with at most your role and environments as they are at each request; " +
			"environment_ids limits it to some of them, read_only to GET and HEAD. It cannot manage tokens, your password, e-mail, " +
			"two-factor authentication or sessions, users, or restores. Making one needs a password sign-in, not a token. " +
			"An account has at most 100 tokens that are not revoked (409 past that)."}, s.createAPIToken)
	s.handle(Route{Method: "GET", Path: "/api/auth/tokens", Tag: tag, Access: ownAccount, List: true,
		Summary: "Your API tokens that are not revoked, newest first", Query: pageQuery{}, Data: apiTokenResponse{},
		Notes: "Expired tokens are listed (expired true) until revoked. The secret is never shown again; prefix tells tokens apart."}, s.apiTokens)
	s.handle(Route{Method: "DELETE", Path: "/api/auth/tokens/{id}", Tag: tag, Access: ownAccount,
		Summary: "Revoke an API token", Data: apiTokenRevokedResponse{},
		Notes: "The token gets 401 from its next request on. Another user's token, or one already revoked, is 404."}, s.revokeAPIToken)
	s.handle(Route{Method: "GET", Path: "/api/auth/users/{id}/tokens", Tag: tag, Access: userAccount, List: true,
		Summary: "A user's API tokens that are not revoked, newest first", Query: pageQuery{}, Data: apiTokenResponse{},
		Notes: "Any admin may read any user's list, as with their environments. An unknown user is 404."}, s.userAPITokens)
	s.handle(Route{Method: "DELETE", Path: "/api/auth/users/{id}/tokens/{token_id}", Tag: tag, Access: userAccount,
		Summary: "Revoke a user's API token", Data: apiTokenRevokedResponse{},
		Notes: "The token gets 401 from its next request on. Only a super_admin revokes a super_admin's tokens (403). " +
			"A token that is not the user's, or is already revoked, is 404."}, s.revokeUserAPIToken)
}

type apiTokenRequest struct {
	Name      string     `json:"name" binding:"required,max=100" doc:"what the token is for, e.g. n8n publishing"`
	ExpiresAt *Timestamp `json:"expires_at" doc:"when the token stops working, any moment in the future (to the second); null or left out: never"`
	// Bounds as auth.MaxTokenEnvironments; the service says an empty list
	// is no environment at all.
	EnvironmentIDs []int64 `json:"environment_ids" binding:"max=1000,dive,gt=0" doc:"limit the token to these of your environments; null or left out: every environment you have, now and later"`
	ReadOnly       bool    `json:"read_only" doc:"only GET and HEAD requests"`
}

type apiTokenResponse struct {
	ID             int64      `json:"id"`
	Name           string     `json:"name"`
	Prefix         string     `json:"prefix" doc:"the token's first characters, to tell tokens apart; never enough to use it"`
	EnvironmentIDs []int64    `json:"environment_ids" nullable:"true" doc:"the environments the token is limited to (it sees those its user still has); null: every environment of its user"`
	ReadOnly       bool       `json:"read_only"`
	CreatedAt      Timestamp  `json:"created_at"`
	LastUsedAt     *Timestamp `json:"last_used_at" doc:"written at most once a minute"`
	ExpiresAt      *Timestamp `json:"expires_at" doc:"null: never"`
	Expired        bool       `json:"expired"`
}

type apiTokenCreatedResponse struct {
	apiTokenResponse
	Token string `json:"token" doc:"the secret: send it as Authorization: Bearer <token>. Shown this once only"`
}

type apiTokenRevokedResponse struct {
	ID      int64 `json:"id"`
	Revoked bool  `json:"revoked"`
}

func apiTokenJSON(t *store.APIToken, now time.Time) apiTokenResponse {
	out := apiTokenResponse{ID: t.ID, Name: t.Name, Prefix: t.Prefix, ReadOnly: t.ReadOnly, CreatedAt: Timestamp(t.CreatedAt),
		LastUsedAt: (*Timestamp)(t.LastUsedAt), ExpiresAt: (*Timestamp)(t.ExpiresAt), Expired: t.Expired(now)}
	if t.Limited {
		out.EnvironmentIDs = t.EnvironmentIDs
	}
	return out
}

func (s *Server) createAPIToken(c *gin.Context) {
	var req apiTokenRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	t, secret, err := s.auth.CreateToken(c.Request.Context(), principal(c), auth.NewToken{Name: req.Name,
		ExpiresAt: (*time.Time)(req.ExpiresAt), EnvironmentIDs: req.EnvironmentIDs, ReadOnly: req.ReadOnly})
	if err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusCreated, apiTokenCreatedResponse{apiTokenResponse: apiTokenJSON(t, s.db.Now()), Token: secret},
		"API token made: copy the token now, it is shown only once")
}

func (s *Server) apiTokens(c *gin.Context) {
	var q pageQuery
	if err := bindQuery(c, &q); err != nil {
		fail(c, err)
		return
	}
	pg := q.page()
	list, total, err := s.auth.Tokens(c.Request.Context(), principal(c), pg)
	s.respondAPITokens(c, list, total, err, pg, "your API tokens")
}

// respondAPITokens answers a page of tokens, or err.
func (s *Server) respondAPITokens(c *gin.Context, list []*store.APIToken, total int, err error, pg store.Page, msg string) {
	if err != nil {
		fail(c, err)
		return
	}
	now := s.db.Now()
	respondList(c, list, total, pg, func(t *store.APIToken) apiTokenResponse { return apiTokenJSON(t, now) }, msg)
}

func (s *Server) revokeAPIToken(c *gin.Context) {
	id, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	if err := s.auth.RevokeToken(c.Request.Context(), principal(c), id); err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, apiTokenRevokedResponse{ID: id, Revoked: true}, "API token revoked")
}

func (s *Server) userAPITokens(c *gin.Context) {
	now := s.db.Now()
	listChildren(c, "id", func(ctx context.Context, _ store.Scope, id int64, pg store.Page) ([]*store.APIToken, int, error) {
		return s.auth.UserTokens(ctx, principal(c), id, pg)
	}, func(t *store.APIToken) apiTokenResponse { return apiTokenJSON(t, now) }, "the user's API tokens")
}

func (s *Server) revokeUserAPIToken(c *gin.Context) {
	userID, err := pathID(c, "id")
	if err != nil {
		fail(c, err)
		return
	}
	id, err := pathID(c, "token_id")
	if err != nil {
		fail(c, err)
		return
	}
	if err := s.auth.RevokeUserToken(c.Request.Context(), principal(c), userID, id); err != nil {
		fail(c, err)
		return
	}
	respond(c, http.StatusOK, apiTokenRevokedResponse{ID: id, Revoked: true}, "API token revoked")
}
