// Package credential holds the rules of API credentials (the
// /api/configurations group): what each provider needs, that secrets are
// sealed at rest and only ever shown masked, that a stored secret never
// goes to a new address, where a credential may be used, and the test call.
// Only admins manage credentials. It is also the one place a stored secret
// is unsealed: every use opens its credential with Opener.Open (open.go),
// which says what the credential must be (Need) and refuses it otherwise.
package credential

import (
	"context"
	"slices"
	"strings"

	"github.com/copydesk/copydesk/store"
)

// Store is what the service needs of the store.
type Store interface {
	CredentialByID(ctx context.Context, id int64) (*store.Credential, error)
	ListCredentials(ctx context.Context, f store.CredentialFilter) ([]*store.Credential, int, error)
	ListAICredentials(ctx context.Context, f store.AICredentialFilter) ([]*store.Credential, int, error)
	CreateCredential(ctx context.Context, n store.NewCredential) (*store.Credential, error)
	UpdateCredential(ctx context.Context, id int64, up store.CredentialUpdate) (*store.Credential, error)
	DeleteCredential(ctx context.Context, id int64) error
}

// Environments resolves an environment as a scope sees it
// (server/environment).
type Environments interface {
	Get(ctx context.Context, sc store.Scope, id int64) (*store.Environment, error)
}

// Sealer seals a secret for its row (server/keyring).
type Sealer interface {
	Seal(plaintext []byte, aad string) ([]byte, error)
}

// Tester makes the real, cheap call that tests a credential and records
// the outcome on it (server/engine).
type Tester interface {
	TestCredential(ctx context.Context, cred *store.Credential) (*TestResult, error)
}

// TestResult is the outcome of a credential test.
type TestResult struct {
	OK        bool
	Detail    string
	Models    []string
	LatencyMS int64
}

// Service implements the credential rules.
type Service struct {
	db     Store
	envs   Environments
	keys   Sealer
	tester Tester
}

// New returns the service.
func New(db Store, envs Environments, keys Sealer, tester Tester) *Service {
	return &Service{db: db, envs: envs, keys: keys, tester: tester}
}

// Input is a credential to create. Only the secret field of its provider
// may be set: APIKey, or ApplicationPassword for wordpress.
type Input struct {
	Name                string
	Provider            string
	APIKey              string
	ApplicationPassword string
	Username            string
	BaseURL             string
	DefaultModel        string
	EnvironmentID       *int64 // nil: usable in every environment
}

// Change holds the fields to change; nil leaves one alone.
type Change struct {
	Name                *string
	APIKey              *string
	ApplicationPassword *string
	Username            *string
	BaseURL             *string
	DefaultModel        *string
	// EnvironmentID: a positive id moves the credential to that
	// environment, 0 makes it global.
	EnvironmentID *int64
}

// List lists credentials by name: of one provider, and of one environment
// together with the global ones, when asked.
func (s *Service) List(ctx context.Context, sc store.Scope, provider string, envID *int64, page store.Page) ([]*store.Credential, int, error) {
	if err := sc.RequireAdmin(); err != nil {
		return nil, 0, err
	}
	return s.db.ListCredentials(ctx, store.CredentialFilter{Provider: provider, EnvironmentID: envID, Global: true, Page: page})
}

// ListAI lists, by name, the AI credentials usable in environment envID
// (its own and the global ones), for whoever chooses one for an agent
// there: an editor sees those of an environment in their scope (another
// is not found); what is listed is for choosing, and the callers render
// no secret hint and no address (server/agents.go).
func (s *Service) ListAI(ctx context.Context, sc store.Scope, envID int64, page store.Page) ([]*store.Credential, int, error) {
	if _, err := s.envs.Get(ctx, sc, envID); err != nil {
		return nil, 0, err
	}
	return s.db.ListAICredentials(ctx, store.AICredentialFilter{EnvironmentID: &envID, Page: page})
}

// Get returns a credential; its secret stays sealed.
func (s *Service) Get(ctx context.Context, sc store.Scope, id int64) (*store.Credential, error) {
	if err := sc.RequireAdmin(); err != nil {
		return nil, err
	}
	return s.db.CredentialByID(ctx, id)
}

// Create checks and stores a credential, its secret sealed for its row in
// the same transaction.
func (s *Service) Create(ctx context.Context, sc store.Scope, in Input) (*store.Credential, error) {
	if err := sc.RequireAdmin(); err != nil {
		return nil, err
	}
	if !slices.Contains(store.Providers, in.Provider) {
		return nil, store.Invalid("provider: must be one of: %s", strings.Join(store.Providers, ", "))
	}
	secret, err := secretOf(in.Provider, in.APIKey, in.ApplicationPassword)
	if err != nil {
		return nil, err
	}
	f := fields{provider: in.Provider, name: in.Name, username: in.Username, baseURL: in.BaseURL,
		defaultModel: in.DefaultModel, hasSecret: secret != ""}
	if err := f.normalize(); err != nil {
		return nil, err
	}
	if err := s.checkEnvironment(ctx, sc, in.EnvironmentID); err != nil {
		return nil, err
	}
	return s.db.CreateCredential(ctx, store.NewCredential{Name: f.name, Provider: in.Provider, BaseURL: f.baseURL,
		Username: f.username, SecretHint: Mask(secret), DefaultModel: f.defaultModel, EnvironmentID: in.EnvironmentID,
		Seal: func(id int64) ([]byte, error) { return s.keys.Seal([]byte(secret), store.CredentialAAD(id)) }})
}

// Update changes the fields given, checking the credential as it will be.
// Without a new secret the old one stays, but never for a new address: a
// caller who cannot read the secret could otherwise have it sent to a host
// of their own.
func (s *Service) Update(ctx context.Context, sc store.Scope, id int64, ch Change) (*store.Credential, error) {
	cred, err := s.Get(ctx, sc, id)
	if err != nil {
		return nil, err
	}
	var secret *string
	if ch.APIKey != nil || ch.ApplicationPassword != nil {
		v, err := secretOf(cred.Provider, deref(ch.APIKey), deref(ch.ApplicationPassword))
		if err != nil {
			return nil, err
		}
		secret = &v
	}
	f := fields{provider: cred.Provider, name: firstSet(ch.Name, cred.Name), username: firstSet(ch.Username, cred.Username),
		baseURL: firstSet(ch.BaseURL, cred.BaseURL), defaultModel: firstSet(ch.DefaultModel, cred.DefaultModel),
		hasSecret: cred.SecretHint != ""}
	if secret != nil {
		f.hasSecret = *secret != ""
	}
	if err := f.normalize(); err != nil {
		return nil, err
	}
	if ch.BaseURL != nil && f.baseURL != cred.BaseURL && secret == nil && cred.SecretHint != "" {
		return nil, store.Invalid("%s: is required when base_url changes: a stored secret is not sent to a new address",
			secretField(cred.Provider))
	}
	var up store.CredentialUpdate
	if ch.Name != nil {
		up.Name = &f.name
	}
	if ch.Username != nil {
		up.Username = &f.username
	}
	if ch.BaseURL != nil {
		up.BaseURL = &f.baseURL
	}
	if ch.DefaultModel != nil {
		up.DefaultModel = &f.defaultModel
	}
	if ch.EnvironmentID != nil {
		env := ch.EnvironmentID
		if *env == 0 {
			env = nil
		}
		if err := s.checkEnvironment(ctx, sc, env); err != nil {
			return nil, err
		}
		up.EnvironmentID = &env
	}
	if secret != nil {
		sealed, err := s.keys.Seal([]byte(*secret), store.CredentialAAD(cred.ID))
		if err != nil {
			return nil, err
		}
		hint := Mask(*secret)
		up.Secret, up.SecretHint = sealed, &hint
	}
	return s.db.UpdateCredential(ctx, cred.ID, up)
}

// Delete deletes a credential; settings and agents that used it fall back
// to their defaults.
func (s *Service) Delete(ctx context.Context, sc store.Scope, id int64) error {
	if err := sc.RequireAdmin(); err != nil {
		return err
	}
	return s.db.DeleteCredential(ctx, id)
}

// Test makes a real call with a credential: the models of an AI provider,
// the signed-in user of a WordPress site, the account of a SERP API. A
// failure of that call is a result with OK false, not an error.
func (s *Service) Test(ctx context.Context, sc store.Scope, id int64) (*TestResult, error) {
	cred, err := s.Get(ctx, sc, id)
	if err != nil {
		return nil, err
	}
	return s.tester.TestCredential(ctx, cred)
}

// CheckAI is the one rule for choosing a credential to generate with, in
// the AI content settings or on an agent: it exists, it is an AI provider,
// and it is usable in environment envID (nil: global only). A nil credID
// chooses nothing and passes.
func (s *Service) CheckAI(ctx context.Context, credID, envID *int64) error {
	if credID == nil {
		return nil
	}
	cred, err := s.db.CredentialByID(ctx, *credID)
	if store.IsNotFound(err) {
		return store.Invalid("credential_id: no credential with id %d", *credID)
	}
	if err != nil {
		return err
	}
	if msg := (Need{Kind: AI, EnvironmentID: envID}).Refusal(cred); msg != "" {
		return store.Invalid("credential_id: %s", msg)
	}
	return nil
}

// checkEnvironment: a credential's environment is one the caller sees.
func (s *Service) checkEnvironment(ctx context.Context, sc store.Scope, id *int64) error {
	if id == nil {
		return nil
	}
	if _, err := s.envs.Get(ctx, sc, *id); store.IsNotFound(err) {
		return store.Invalid("environment_id: no environment with id %d", *id)
	} else if err != nil {
		return err
	}
	return nil
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
