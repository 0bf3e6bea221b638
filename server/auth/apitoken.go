package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/copydesk/copydesk/server/valid"
	"github.com/copydesk/copydesk/store"
)

// Personal API tokens: a secret a user makes for scripts and integrations,
// sent as "Authorization: Bearer cdk_..." on any route. A token acts as its
// user, with at most the user's role and environments as they are at each
// request, and never manages the account (see Allows).
//
// The secret is APITokenPrefix and 32 bytes from crypto/rand in lower-case
// base32 (52 characters: letters and digits, so a double click selects it
// whole). Only its SHA-256 is stored: a 256-bit random secret cannot be
// found from its hash by any search, so the slow password hashes, which
// exist to protect guessable passwords, would only make every request cost
// tens of milliseconds and a flood of bad tokens a denial of service. The
// hash is also what the request is looked up by: one search of a unique
// index, whatever the secret.
const (
	APITokenPrefix = "cdk_"
	apiSecretBytes = 32
	// apiTokenShown is how much of a token its list shows: the prefix and
	// 8 characters (40 bits) to tell tokens apart; the 212 bits left are
	// what makes it a secret.
	apiTokenShown = len(APITokenPrefix) + 8
	// MaxTokenName bounds a token's name.
	MaxTokenName = 100
	// MaxTokenEnvironments bounds the environments of one token.
	MaxTokenEnvironments = 1000
	// MaxTokensPerUser bounds a user's tokens that are not revoked (expired
	// ones count until revoked): a script making tokens in a loop stops
	// there, not at the disk's end.
	MaxTokensPerUser = 100
)

var apiTokenEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// apiTokenLen is the length of every token copydesk makes.
var apiTokenLen = len(APITokenPrefix) + apiTokenEncoding.EncodedLen(apiSecretBytes)

// IsAPIToken reports whether a bearer credential is meant as an API token
// (rather than a JWT from a sign-in): it starts with APITokenPrefix.
func IsAPIToken(bearer string) bool { return strings.HasPrefix(bearer, APITokenPrefix) }

// wellFormedAPIToken reports whether s has the length and alphabet of a
// token copydesk makes. Anything else is refused without a lookup.
func wellFormedAPIToken(s string) bool {
	if len(s) != apiTokenLen || !IsAPIToken(s) {
		return false
	}
	for _, r := range s[len(APITokenPrefix):] {
		if (r < 'a' || r > 'z') && (r < '2' || r > '7') {
			return false
		}
	}
	return true
}

func hashAPIToken(secret string) [sha256.Size]byte { return sha256.Sum256([]byte(secret)) }

// newAPISecret makes a token's secret.
func newAPISecret() (string, error) {
	b := make([]byte, apiSecretBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("auth: API token secret: %w", err)
	}
	return APITokenPrefix + apiTokenEncoding.EncodeToString(b), nil
}

// Messages of the refusals that are about tokens.
const (
	// MsgNotWithToken refuses, with 403, what a token may never do.
	MsgNotWithToken = "not with an API token: sign in with your password to do this (API tokens cannot manage tokens, " +
		"the account's password, e-mail, two-factor authentication or sessions, users, or restores)"
	msgTokenReadOnly = "this API token is read-only: it may only use GET and HEAD; make a token without read_only to change things"
	msgTokenLimited  = "this API token is limited to some environments, and this route reaches every environment: " +
		"use a token made without environment_ids"
	msgTokenInvalid = "the API token is not valid"
	msgTokenRevoked = "the API token was revoked: make a new one"
)

// Use is what a route asks of its caller beyond the role: Allows checks it
// against an API token.
type Use struct {
	// Write: the method may change something (anything but GET and HEAD).
	Write bool
	// Account: the route manages an account (tokens, password, e-mail,
	// two-factor authentication, sessions), users, or restores a backup;
	// only a password sign-in may use it.
	Account bool
	// MinRole is the route's lowest role: admin routes and up reach every
	// environment or the whole instance.
	MinRole store.Role
}

// Allows applies the rules of API tokens to a route the caller's role may
// use: a signed-in session may do everything its role may; a token may
// never use an Account route, a read-only token only reads, and a token
// limited to environments uses no admin route (those reach every
// environment or the whole instance: settings, credentials, backups).
func (p *Principal) Allows(u Use) error {
	t := p.Token
	switch {
	case t == nil:
		return nil
	case u.Account:
		return store.Forbidden(MsgNotWithToken)
	case t.Limited && u.MinRole.AtLeast(store.RoleAdmin):
		return store.Forbidden(msgTokenLimited)
	case t.ReadOnly && u.Write:
		return store.Forbidden(msgTokenReadOnly)
	}
	return nil
}

// requireSession refuses a principal that came with an API token: for what
// only a password sign-in may do (see Allows), in the service as well as on
// the route, since a service never trusts its caller.
func requireSession(p *Principal) error {
	if p.Token != nil || p.Session == nil {
		return store.Forbidden(MsgNotWithToken)
	}
	return nil
}

// NewToken is a token to make.
type NewToken struct {
	Name      string
	ExpiresAt *time.Time // nil: never; otherwise a moment in the future
	// EnvironmentIDs limits the token to these of the user's environments;
	// nil: every environment the user has, now and later.
	EnvironmentIDs []int64
	ReadOnly       bool
}

// CreateToken makes a token for the caller, who must have signed in with
// a password (a token makes no tokens), and returns it with its secret,
// which is shown this once and never stored.
func (s *Service) CreateToken(ctx context.Context, p *Principal, in NewToken) (*store.APIToken, string, error) {
	if err := requireSession(p); err != nil {
		return nil, "", err
	}
	name, err := valid.Name("name", in.Name, MaxTokenName)
	if err != nil {
		return nil, "", err
	}
	if in.ExpiresAt != nil && !in.ExpiresAt.After(s.now()) {
		return nil, "", store.Invalid("expires_at: must be in the future; leave it out for a token that does not expire")
	}
	n := store.NewAPIToken{UserID: p.User.ID, Name: name, ReadOnly: in.ReadOnly, ExpiresAt: in.ExpiresAt, Max: MaxTokensPerUser}
	if in.EnvironmentIDs != nil {
		if n.EnvironmentIDs, err = s.tokenEnvironments(ctx, p.User, in.EnvironmentIDs); err != nil {
			return nil, "", err
		}
		n.Limited = true
	}
	secret, err := newAPISecret()
	if err != nil {
		return nil, "", err
	}
	h := hashAPIToken(secret)
	n.Hash, n.Prefix = h[:], secret[:apiTokenShown]
	t, err := s.db.CreateAPIToken(ctx, n)
	if err != nil {
		return nil, "", err
	}
	return t, secret, nil
}

// tokenEnvironments checks the environments a token is limited to: at
// least one, each one the user has (any that exists, for an admin).
func (s *Service) tokenEnvironments(ctx context.Context, u *store.User, ids []int64) ([]int64, error) {
	if len(ids) == 0 {
		return nil, store.Invalid("environment_ids: name at least one environment, or leave it out for all of yours")
	}
	if len(ids) > MaxTokenEnvironments {
		return nil, store.Invalid("environment_ids: must have at most %d items", MaxTokenEnvironments)
	}
	for _, id := range ids {
		if id <= 0 {
			return nil, store.Invalid("environment_ids: must be positive ids, not %d", id)
		}
	}
	if u.Role.AtLeast(store.RoleAdmin) {
		return ids, nil // the store names those that do not exist
	}
	granted, err := s.db.UserEnvironmentIDs(ctx, u.ID)
	if err != nil {
		return nil, err
	}
	var missing []string
	for _, id := range ids {
		if !slices.Contains(granted, id) {
			missing = append(missing, fmt.Sprint(id))
		}
	}
	if len(missing) > 0 {
		return nil, store.Invalid("environment_ids: you have no environment with id %s", strings.Join(missing, ", "))
	}
	return ids, nil
}

// Tokens lists a page of the caller's tokens that are not revoked, newest
// first.
func (s *Service) Tokens(ctx context.Context, p *Principal, pg store.Page) ([]*store.APIToken, int, error) {
	if err := requireSession(p); err != nil {
		return nil, 0, err
	}
	return s.db.ListAPITokens(ctx, p.User.ID, pg)
}

// RevokeToken revokes one of the caller's tokens; its next request gets
// 401. Another user's token is not found.
func (s *Service) RevokeToken(ctx context.Context, p *Principal, id int64) error {
	if err := requireSession(p); err != nil {
		return err
	}
	return s.db.RevokeAPIToken(ctx, p.User.ID, id)
}

// UserTokens lists a page of a user's tokens, for an admin. Reading
// changes nothing, so any admin may read anyone's (as with their
// environments); an unknown user is not found.
func (s *Service) UserTokens(ctx context.Context, actor *Principal, userID int64, pg store.Page) ([]*store.APIToken, int, error) {
	if err := requireAdminSession(actor); err != nil {
		return nil, 0, err
	}
	if _, err := s.db.UserByID(ctx, userID); err != nil {
		return nil, 0, err
	}
	return s.db.ListAPITokens(ctx, userID, pg)
}

// RevokeUserToken revokes a user's token, for an admin; only a super_admin
// revokes a super_admin's.
func (s *Service) RevokeUserToken(ctx context.Context, actor *Principal, userID, tokenID int64) error {
	if err := requireAdminSession(actor); err != nil {
		return err
	}
	target, err := s.db.UserByID(ctx, userID)
	if err != nil {
		return err
	}
	if err := mayManage(actor.User, target); err != nil {
		return err
	}
	return s.db.RevokeAPIToken(ctx, userID, tokenID)
}

func requireAdminSession(p *Principal) error {
	if err := requireSession(p); err != nil {
		return err
	}
	if !p.User.Role.AtLeast(store.RoleAdmin) {
		return store.Forbidden("this needs the admin role or higher")
	}
	return nil
}

// authenticateAPIToken is Authenticate for an API token: well formed, then
// found by its hash (one indexed read; nothing is counted against the
// sign-in throttle, whose purpose is guessable passwords), not revoked,
// not expired, its user enabled.
func (s *Service) authenticateAPIToken(ctx context.Context, secret string) (*Principal, error) {
	if !wellFormedAPIToken(secret) {
		return nil, store.Unauthorized(msgTokenInvalid)
	}
	h := hashAPIToken(secret)
	e, err := s.principals.loadToken(ctx, s.db, h)
	if store.IsNotFound(err) {
		return nil, store.Unauthorized(msgTokenInvalid)
	}
	if err != nil {
		return nil, err
	}
	tok, user := e.token, e.user // copies: callers may change theirs
	now := s.now()
	switch {
	case subtle.ConstantTimeCompare(tok.Hash, h[:]) != 1: // the index found it by this hash; checked all the same
		return nil, store.Unauthorized(msgTokenInvalid)
	case tok.RevokedAt != nil:
		return nil, store.Unauthorized(msgTokenRevoked)
	case tok.Expired(now):
		return nil, store.Unauthorized("the API token expired at %s: make a new one", tok.ExpiresAt.UTC().Format(time.RFC3339))
	case !user.IsActive:
		return nil, store.Unauthorized(msgDisabled)
	}
	if tok.LastUsedAt == nil || now.Sub(*tok.LastUsedAt) > touchEvery {
		if err := s.db.TouchAPIToken(ctx, tok.ID); err == nil {
			tok.LastUsedAt = &now
		}
	}
	return &Principal{User: &user, Token: &tok, Scope: e.scope}, nil
}

// tokenScope is what a token sees: its user's scope, narrowed to the
// token's environments when it is limited. It is computed with the
// principal, so a grant taken from the user, or a lower role, narrows the
// token at its next request. A limited token of an admin sees its
// environments only, and has no admin scope.
func tokenScope(u *store.User, t *store.APIToken, granted []int64) store.Scope {
	admin := u.Role.AtLeast(store.RoleAdmin)
	if !t.Limited {
		return store.NewScope(u.ID, admin, granted)
	}
	if admin {
		return store.NewScope(u.ID, false, t.EnvironmentIDs)
	}
	var envs []int64
	for _, id := range t.EnvironmentIDs {
		if slices.Contains(granted, id) {
			envs = append(envs, id)
		}
	}
	return store.NewScope(u.ID, false, envs)
}
