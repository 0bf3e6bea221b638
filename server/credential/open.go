package credential

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/copydesk/copydesk/store"
)

// Opening a credential: this file is the one place a sealed secret is
// unsealed. Every use (a generation, a SERP search, a WordPress site, a
// credential test) names what the credential must be (Need) and gets the
// secret in clear or a refusal that says why, a store.Error of kind
// conflict: what the caller asked for is fine, the credential it points to
// is not (gone, of another kind or environment, sealed with another
// secret.key).

// Kind is what a credential must be for a use: one provider, or any AI
// provider.
type Kind string

// Kinds of use.
const (
	AI        Kind = "ai" // openai, anthropic or openai_compatible
	WordPress Kind = store.ProviderWordPress
	SERP      Kind = store.ProviderSERP
)

// fits reports whether a provider is of the kind.
func (k Kind) fits(provider string) bool {
	if k == AI {
		return store.IsAIProvider(provider)
	}
	return provider == string(k)
}

// String names the kind in a refusal: "an AI provider", "a wordpress one".
func (k Kind) String() string {
	if k == AI {
		return "an AI provider"
	}
	return "a " + string(k) + " one"
}

// Need is what a use asks of a credential.
type Need struct {
	Kind Kind
	// EnvironmentID is the environment the credential is used in; nil:
	// outside any, where only a global credential is usable.
	EnvironmentID *int64
	// Site, for WordPress, is the site the environment's configuration
	// names: the credential must be for that site.
	Site string
}

// Refusal is the one rule of using a credential: it is of the kind, usable
// in the environment (its own or a global one) and, for a site, made for
// that site. It says what is wrong, "" when nothing; callers that check a
// choice before it is stored (a configuration, the AI settings) make it
// their 422, Open makes it a 409.
func (n Need) Refusal(cred *store.Credential) string {
	switch {
	case !n.Kind.fits(cred.Provider):
		return fmt.Sprintf("credential %d is a %s credential, not %s", cred.ID, cred.Provider, n.Kind)
	case !cred.UsableIn(n.EnvironmentID):
		return fmt.Sprintf("credential %d belongs to environment %d and cannot be used here (another environment or none)",
			cred.ID, *cred.EnvironmentID)
	case n.Site != "" && !sameSite(cred.BaseURL, n.Site):
		return fmt.Sprintf("base_url %s differs from the site of credential %d (%s)", n.Site, cred.ID, cred.BaseURL)
	}
	return ""
}

// sameSite reports whether two base URLs name one site: scheme and host
// compared without case (as URLs define them), the path as is, a trailing
// slash ignored.
func sameSite(a, b string) bool {
	ua, errA := url.Parse(strings.TrimSpace(a))
	ub, errB := url.Parse(strings.TrimSpace(b))
	if errA != nil || errB != nil {
		return strings.TrimRight(a, "/") == strings.TrimRight(b, "/")
	}
	return strings.EqualFold(ua.Scheme, ub.Scheme) && strings.EqualFold(ua.Host, ub.Host) &&
		strings.TrimRight(ua.EscapedPath(), "/") == strings.TrimRight(ub.EscapedPath(), "/")
}

// Reader reads a credential (the store).
type Reader interface {
	CredentialByID(ctx context.Context, id int64) (*store.Credential, error)
}

// Unsealer opens a sealed secret (server/keyring).
type Unsealer interface {
	Open(sealed []byte, aad string) ([]byte, error)
}

// Opened is a credential ready to use: its row (whose Secret stays
// sealed) and its secret in clear.
type Opened struct {
	Credential *store.Credential
	Secret     string
}

// Opener opens credentials.
type Opener struct {
	db   Reader
	keys Unsealer
}

// NewOpener returns the opener of the credentials of db, sealed with keys.
func NewOpener(db Reader, keys Unsealer) *Opener { return &Opener{db: db, keys: keys} }

// Open opens credential id for a use: the credential as it is now (a
// choice made earlier may have been deleted, moved or re-pointed since),
// checked against the need, its secret unsealed. A refusal is a conflict
// saying what to do.
func (o *Opener) Open(ctx context.Context, id int64, n Need) (*Opened, error) {
	cred, err := o.db.CredentialByID(ctx, id)
	if store.IsNotFound(err) {
		return nil, store.Conflict("credential %d no longer exists: %s", id, n.Kind.remedy())
	}
	if err != nil {
		return nil, err
	}
	if msg := n.Refusal(cred); msg != "" {
		return nil, store.Conflict("%s: %s", msg, n.Kind.remedy())
	}
	secret, err := o.keys.Open(cred.Secret, store.CredentialAAD(cred.ID))
	if err != nil {
		return nil, store.Conflict("credential %d cannot be opened with this server's secret.key (restored from another installation?): "+
			"enter its secret again (%s, PUT /api/configurations/%d)", cred.ID, secretField(cred.Provider), cred.ID)
	}
	return &Opened{Credential: cred, Secret: string(secret)}, nil
}

// remedy is what to do about a credential a use of the kind cannot open.
func (k Kind) remedy() string {
	switch k {
	case AI:
		return "choose another with PUT /api/settings/ai-content (or on the agent), or add one with POST /api/configurations"
	case WordPress:
		return "choose another in the environment's configuration (configuration.wordpress.credential_id)"
	}
	return "add one with POST /api/configurations"
}
