package engine

import (
	"context"

	"github.com/copydesk/copydesk/server/credential"
	"github.com/copydesk/copydesk/server/serp"
	"github.com/copydesk/copydesk/store"
)

// SERP is a client of the SERP credential usable in environment envID
// (nil: outside any environment), on the server's outbound client; nil
// without an error when there is none. The environment's own credential
// wins over a global one; among several of one level, the first by name.
// SERP calls are not metered in usage events (they cost search credits,
// not tokens): callers record what they found, and from where.
func (e *Engine) SERP(ctx context.Context, envID *int64) (*serp.Client, error) {
	f := store.CredentialFilter{Provider: store.ProviderSERP, Page: store.Page{Page: 1, PerPage: 200}}
	if envID != nil {
		f.EnvironmentID, f.Global = envID, true
	}
	list, _, err := e.db.ListCredentials(ctx, f)
	if err != nil {
		return nil, err
	}
	var chosen *store.Credential
	for _, c := range list {
		if !c.UsableIn(envID) {
			continue
		}
		if chosen == nil || (chosen.EnvironmentID == nil && c.EnvironmentID != nil) {
			chosen = c
		}
	}
	if chosen == nil {
		return nil, nil
	}
	cred, err := e.creds.Open(ctx, chosen.ID, credential.Need{Kind: credential.SERP, EnvironmentID: envID})
	if err != nil {
		return nil, err
	}
	return serp.New(cred.Credential.BaseURL, cred.Secret, e.opt.HTTPClient), nil
}

// Searcher is a Caller that also searches the web (SERP): the keyword
// research services (server/scout, server/searchphrase, server/strategy).
type Searcher interface {
	Caller
	SERP(ctx context.Context, envID *int64) (*serp.Client, error)
}
