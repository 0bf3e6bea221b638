package wppost

import (
	"context"
	"fmt"

	"github.com/copydesk/copydesk/server/posttarget"
	"github.com/copydesk/copydesk/store"
)

// Target is WordPress as a post target (server/posttarget): a draft is a
// local post, and publishing sends it to the environment's site.
func (s *Service) Target() posttarget.Target { return target{s} }

type target struct{ s *Service }

func (target) Kind() string { return store.PostWordPress }

// Ready: the environment names a WordPress credential to publish with.
func (target) Ready(env *store.Environment) error {
	if wp := env.Configuration.WordPress; wp == nil || wp.CredentialID == nil {
		return notConfigured(env.ID)
	}
	return nil
}

// notConfigured is the answer for an environment that does not publish to
// WordPress.
func notConfigured(envID int64) error {
	return store.Conflict("environment %d does not publish to WordPress: set configuration.wordpress (base_url and credential_id)", envID)
}

// Draft makes a local draft; the description is its excerpt.
func (t target) Draft(ctx context.Context, sc store.Scope, d posttarget.Draft) (*posttarget.Post, error) {
	p, err := t.s.Create(ctx, sc, d.UserID, Input{EnvironmentID: d.EnvironmentID, Title: d.Title, Content: d.Body, Excerpt: d.Description,
		Status: "draft", PostOrigin: d.PostOrigin})
	if err != nil {
		return nil, err
	}
	return post(p, fmt.Sprintf("WordPress post %d %q made as a draft", p.ID, p.Title)), nil
}

func (t target) Get(ctx context.Context, sc store.Scope, id int64) (*posttarget.Post, error) {
	p, err := t.s.Get(ctx, sc, id)
	if err != nil {
		return nil, err
	}
	return post(p, ""), nil
}

// Publish sends the post to the site with the status, unless the site has
// it as it is here with that status already. A create that got no answer
// is adopted, not made again (Publish).
func (t target) Publish(ctx context.Context, sc store.Scope, id int64, status string) (*posttarget.Post, error) {
	p, err := t.s.Get(ctx, sc, id)
	if err != nil {
		return nil, err
	}
	p0 := p
	if p.SyncStatus != store.SyncSynced || p.RemoteStatus != status {
		// The autopilot retries what is retryable: only the last word is
		// the webhook event.
		p, err = t.s.publish(ctx, sc, p.ID, PublishInput{Status: status}, false)
		if err == nil || !Retryable(err) {
			t.s.published(ctx, p0.EnvironmentID, p0.ID, p, err, false)
		}
		if err != nil {
			return nil, err
		}
	}
	var remote int64
	if p.RemoteID != nil {
		remote = *p.RemoteID
	}
	detail := fmt.Sprintf("published on WordPress as post %d: %s", remote, p.RemoteLink)
	if status != "publish" {
		detail = fmt.Sprintf("sent to WordPress as draft post %d, for a person to publish", remote)
	}
	return post(p, detail), nil
}

func (target) Retryable(err error) bool { return Retryable(err) }

func post(p *store.WordPressPost, detail string) *posttarget.Post {
	return &posttarget.Post{Kind: store.PostWordPress, ID: p.ID, Title: p.Title, WordPress: p, Detail: detail}
}
