package wppost

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/copydesk/copydesk/server/credential"
	"github.com/copydesk/copydesk/server/markdown"
	"github.com/copydesk/copydesk/server/outbound"
	"github.com/copydesk/copydesk/server/publish/wordpress"
	"github.com/copydesk/copydesk/server/sanitize"
	"github.com/copydesk/copydesk/server/slug"
	"github.com/copydesk/copydesk/server/webhook"
	"github.com/copydesk/copydesk/store"
)

// site is the WordPress client of an environment: its configuration names
// a wordpress credential usable there whose base URL is the site.
func (s *Service) site(ctx context.Context, sc store.Scope, envID int64) (*wordpress.Client, error) {
	env, err := s.envs.Get(ctx, sc, envID)
	if err != nil {
		return nil, err
	}
	wp := env.Configuration.WordPress
	if wp == nil || wp.CredentialID == nil {
		return nil, notConfigured(envID)
	}
	cred, err := s.creds.Open(ctx, *wp.CredentialID, credential.Need{Kind: credential.WordPress, EnvironmentID: &envID, Site: wp.BaseURL})
	if err != nil {
		return nil, err
	}
	c := wordpress.New(cred.Credential.BaseURL, cred.Credential.Username, cred.Secret, s.opt.HTTP)
	c.Timeout, c.Retries, c.Backoff = s.opt.Timeout, s.opt.Retries, s.opt.Backoff
	return c, nil
}

// remoteError turns a failed remote call into the error the caller gets:
// a timeout is 504, anything else 502, both with WordPress's own words.
func remoteError(err error) error {
	switch {
	case errors.Is(err, wordpress.ErrTimeout):
		return &store.Error{Kind: store.KindTimeout, Message: err.Error() + "; the site may still have done it: publishing again looks the post up before creating it", Err: err}
	case wordpress.Answered(err):
		return &store.Error{Kind: store.KindRemote, Message: err.Error(), Err: err}
	case store.KindOf(err) != store.KindInternal:
		return err
	}
	return &store.Error{Kind: store.KindRemote, Message: "WordPress could not be reached: " + err.Error(), Err: err}
}

// failed records a failed remote call on the post (it is kept, failed,
// with the message) and returns the caller's error.
func (s *Service) failed(ctx context.Context, p *store.WordPressPost, err error) error {
	rerr := remoteError(err)
	msg, status := store.Message(rerr), store.SyncFailed
	if _, serr := s.db.SyncWordPressPost(context.WithoutCancel(ctx), p.ID, store.WordPressSync{SyncStatus: &status, LastError: &msg}); serr != nil {
		return errors.Join(rerr, serr)
	}
	return rerr
}

// PublishInput is how to publish: a status (default the post's) and, for
// future, a time.
type PublishInput struct {
	Status      string
	ScheduledAt *time.Time
}

// Publish creates or updates the post on the site with the chosen status.
// Retryable failures (429, 5xx, network) are tried again; a create whose
// outcome is unknown is looked up by slug before it is made again, so no
// retry (and no later publish) makes a duplicate.
func (s *Service) Publish(ctx context.Context, sc store.Scope, id int64, in PublishInput) (*store.WordPressPost, error) {
	return s.publish(ctx, sc, id, in, true)
}

// publish is Publish; tell says whether the publish's outcome is the
// webhook event (post.published, post.failed), as it is for a publish
// answered in the request. A queued one tells when its job ends for good,
// the autopilot's when it is not retried (target.Publish).
func (s *Service) publish(ctx context.Context, sc store.Scope, id int64, in PublishInput, tell bool) (*store.WordPressPost, error) {
	p, err := s.Get(ctx, sc, id)
	if err != nil {
		return nil, err
	}
	if p, err = s.applyPublishInput(ctx, sc, p, in); err != nil {
		return nil, err
	}
	c, err := s.site(ctx, sc, p.EnvironmentID)
	if err != nil {
		return nil, err
	}
	out, err := s.push(ctx, c, p)
	if tell {
		s.published(ctx, p.EnvironmentID, p.ID, out, err, false)
	}
	return out, err
}

// published is the webhook event of a publish that ended: post.published
// with what the site answered (p), or post.failed with why (err).
func (s *Service) published(ctx context.Context, envID, postID int64, p *store.WordPressPost, err error, queued bool) {
	e := webhook.Event{Type: webhook.PostPublished, EnvironmentID: envID,
		Data: map[string]any{"target": store.PostWordPress, "post_id": postID, "queued": queued}}
	if err != nil {
		e.Type, e.Data["error"] = webhook.PostFailed, store.Message(err)
	} else if p != nil {
		e.Data["status"], e.Data["remote_id"], e.Data["link"] = p.RemoteStatus, p.RemoteID, p.RemoteLink
	}
	s.hooks.Emit(ctx, e)
}

// applyPublishInput gives the post the status and schedule a publish
// asks for, if it asks for any.
func (s *Service) applyPublishInput(ctx context.Context, sc store.Scope, p *store.WordPressPost, in PublishInput) (*store.WordPressPost, error) {
	if in.Status == "" && in.ScheduledAt == nil {
		return p, nil
	}
	ch := Change{ScheduledAt: in.ScheduledAt}
	if in.Status != "" {
		ch.Status = &in.Status
	}
	return s.Update(ctx, sc, p.ID, ch)
}

// push sends the post as it is here to the site and records the outcome.
// Its loop is the one retry budget of a publish (Options.Retries): the
// client's own retries are off inside it, or each of its attempts would
// retry again (one failing update once sent 9 requests instead of 3).
func (s *Service) push(ctx context.Context, c *wordpress.Client, p *store.WordPressPost) (*store.WordPressPost, error) {
	c = c.WithRetries(-1)
	var remote *wordpress.Post
	var err error
	for attempt := 0; ; attempt++ {
		if remote, err = s.pushOnce(ctx, c, p); err == nil || !retryable(err) || attempt >= max(0, s.opt.Retries) {
			break
		}
		wait := 500 * time.Millisecond << attempt
		if s.opt.Backoff != nil {
			wait = s.opt.Backoff(attempt + 1)
		}
		select {
		case <-ctx.Done():
			return nil, s.failed(ctx, p, err)
		case <-time.After(wait):
		}
		if p, err = s.db.WordPressPostByID(ctx, p.ID); err != nil {
			return nil, err
		}
	}
	if err != nil {
		return nil, s.failed(ctx, p, err)
	}
	return s.recordRemote(ctx, p.ID, remote, nil)
}

// recordRemote stores what the site answered as the post's sync state.
func (s *Service) recordRemote(ctx context.Context, id int64, r *wordpress.Post, local *store.WordPressPostUpdate) (*store.WordPressPost, error) {
	synced, none, mod, hash := store.SyncSynced, "", r.Modified(), remoteHash(r)
	var notPending int64
	return s.db.SyncWordPressPost(context.WithoutCancel(ctx), id, store.WordPressSync{RemoteID: &r.ID, RemoteLink: &r.Link,
		RemoteStatus: &r.Status, RemoteModified: &mod, RemoteHash: &hash, SyncStatus: &synced, LastError: &none, Synced: true, CreatePending: &notPending, Local: local})
}

// remoteHash is a digest of a remote post's title and content, raw as
// the site keeps them (rendered when it gives no raw).
func remoteHash(r *wordpress.Post) string {
	raw := func(v wordpress.Rendered) string {
		if v.Raw != "" {
			return v.Raw
		}
		return v.Rendered
	}
	h := sha256.Sum256([]byte(raw(r.Title) + "\x00" + raw(r.Content)))
	return hex.EncodeToString(h[:])
}

// pendingCreate finds the post a create that got no answer may have made
// on the site; nil when there is none. A post with the slug is adopted
// only when it is evidently ours: the site gave it an id no lower than
// the create's floor (it is newer than every post the site had before the
// create; WordPress ids only grow) and its raw title is the post's.
// WordPress keeps no marker of ours that its REST API can query (post
// meta is neither shown nor filtered on unless a plugin registers it),
// and comparing its clock with ours would trust two clocks; so these two
// are what tell our post from one the site had with the same slug (its
// own "hello-world", say), which must not be overwritten.
func pendingCreate(ctx context.Context, c *wordpress.Client, p *store.WordPressPost) (*wordpress.Post, error) {
	found, err := c.FindPostsBySlug(ctx, p.Slug)
	if err != nil {
		return nil, err
	}
	for i := range found {
		r := &found[i]
		if r.ID >= p.CreateFloor && strings.TrimSpace(r.Title.Raw) == strings.TrimSpace(p.Title) {
			return r, nil
		}
	}
	return nil, nil
}

// pushOnce is one attempt of push.
func (s *Service) pushOnce(ctx context.Context, c *wordpress.Client, p *store.WordPressPost) (*wordpress.Post, error) {
	in, err := s.postInput(ctx, c, p)
	if err != nil {
		return nil, err
	}
	remoteID := p.RemoteID
	if remoteID == nil && p.CreatePending {
		// The last create got no answer: it may have made the post.
		found, err := pendingCreate(ctx, c, p)
		if err != nil {
			return nil, err
		}
		if found != nil {
			remoteID = &found.ID
		}
	}
	var r *wordpress.Post
	if remoteID != nil {
		r, err = c.UpdatePost(ctx, *remoteID, in)
	} else {
		// Marked pending before it is sent, with the floor of the ids
		// the site can give it: a create with no answer is then looked up
		// next time, and only a post made after this is taken for it.
		// Again after a create with no answer, the old floor stays: a
		// post that one made and the lookup missed is not newer than it.
		floor := p.CreateFloor
		if !p.CreatePending {
			latest, err := c.LatestPostID(ctx)
			if err != nil {
				return nil, err
			}
			floor = latest + 1
		}
		if _, err := s.db.SyncWordPressPost(ctx, p.ID, store.WordPressSync{CreatePending: &floor}); err != nil {
			return nil, err
		}
		r, err = c.CreatePost(ctx, in)
		if err != nil {
			var we *wordpress.Error
			if errors.As(err, &we) && we.Status < 500 {
				// Refused: nothing was made.
				var none int64
				if _, serr := s.db.SyncWordPressPost(context.WithoutCancel(ctx), p.ID, store.WordPressSync{CreatePending: &none}); serr != nil {
					return nil, errors.Join(err, serr)
				}
			}
			return nil, err
		}
		// Known at once, so that a failure below does not lose it.
		var none int64
		if _, err := s.db.SyncWordPressPost(context.WithoutCancel(ctx), p.ID, store.WordPressSync{RemoteID: &r.ID, CreatePending: &none}); err != nil {
			return nil, err
		}
	}
	if err != nil {
		return nil, err
	}
	// WordPress drops unknown term ids without a word: a term deleted on
	// the site since its id was kept. Forget those ids, make the terms
	// again and send the post once more.
	if missing := append(wordpress.Missing(in.Categories, r.Categories), wordpress.Missing(in.Tags, r.Tags)...); len(missing) > 0 {
		if err := s.forgetTerms(ctx, p, missing); err != nil {
			return nil, err
		}
		if in, err = s.postInput(ctx, c, p); err != nil {
			return nil, err
		}
		if r, err = c.UpdatePost(ctx, r.ID, in); err != nil {
			return nil, err
		}
		if m := append(wordpress.Missing(in.Categories, r.Categories), wordpress.Missing(in.Tags, r.Tags)...); len(m) > 0 {
			return nil, fmt.Errorf("wordpress: the site dropped the terms %v of the post", m)
		}
	}
	return r, nil
}

// postInput is what the site gets for a post: its Markdown as HTML,
// cleaned by the allow-list of server/sanitize unless the environment's
// wordpress.raw_html says otherwise, its terms as the site's term ids (made there when missing), its featured
// image uploaded once.
func (s *Service) postInput(ctx context.Context, c *wordpress.Client, p *store.WordPressPost) (wordpress.PostInput, error) {
	content, err := markdown.Render(p.Content)
	if err != nil {
		return wordpress.PostInput{}, store.Invalid("content: cannot be rendered: %v", err)
	}
	if raw, err := s.rawHTML(ctx, p.EnvironmentID); err != nil {
		return wordpress.PostInput{}, err
	} else if !raw {
		content = sanitize.HTML(content)
	}
	in := wordpress.PostInput{Title: p.Title, Content: content, Excerpt: p.Excerpt, Slug: p.Slug, Status: p.Status,
		Categories: []int64{}, Tags: []int64{}}
	if p.ScheduledAt != nil {
		in.DateGMT = p.ScheduledAt.UTC().Format(wordpress.TimeFormat)
	}
	if in.Categories, err = s.categoryTerms(ctx, c, p.CategoryIDs); err != nil {
		return in, err
	}
	if in.Tags, err = s.tagTerms(ctx, c, p.TagIDs); err != nil {
		return in, err
	}
	if in.FeaturedMedia, err = s.featuredMedia(ctx, c, p); err != nil {
		return in, err
	}
	return in, nil
}

// rawHTML tells whether an environment sends its posts' HTML uncleaned.
func (s *Service) rawHTML(ctx context.Context, envID int64) (bool, error) {
	env, err := s.db.EnvironmentByID(ctx, envID)
	if err != nil {
		return false, err
	}
	wp := env.Configuration.WordPress
	return wp != nil && wp.RawHTML, nil
}

// categoryTerms maps categories to the site's terms, making those it does
// not have yet (parents first) and keeping their ids on the categories.
func (s *Service) categoryTerms(ctx context.Context, c *wordpress.Client, ids []int64) ([]int64, error) {
	out := []int64{}
	for _, id := range ids {
		term, err := s.categoryTerm(ctx, c, id, 0)
		if err != nil {
			return nil, err
		}
		out = append(out, term)
	}
	return out, nil
}

// maxDepth bounds the walk up a category's parents.
const maxDepth = 20

func (s *Service) categoryTerm(ctx context.Context, c *wordpress.Client, id int64, depth int) (int64, error) {
	cats, err := s.db.CategoriesByID(ctx, []int64{id})
	if err != nil || len(cats) == 0 {
		return 0, err
	}
	cat := cats[0]
	if cat.WPTermID != nil {
		return *cat.WPTermID, nil
	}
	var parent int64
	if cat.ParentID != nil && depth < maxDepth {
		if parent, err = s.categoryTerm(ctx, c, *cat.ParentID, depth+1); err != nil {
			return 0, err
		}
	}
	term, err := c.CreateTerm(ctx, wordpress.Categories, wordpress.Term{Name: cat.Name, Slug: cat.Slug, Description: cat.Description, Parent: parent})
	if err != nil {
		return 0, err
	}
	return term, s.db.SetCategoryTerm(ctx, cat.ID, &term)
}

func (s *Service) tagTerms(ctx context.Context, c *wordpress.Client, ids []int64) ([]int64, error) {
	tags, err := s.db.TagsByID(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := []int64{}
	for _, t := range tags {
		if t.WPTermID != nil {
			out = append(out, *t.WPTermID)
			continue
		}
		term, err := c.CreateTerm(ctx, wordpress.Tags, wordpress.Term{Name: t.Name, Slug: t.Slug})
		if err != nil {
			return nil, err
		}
		if err := s.db.SetTagTerm(ctx, t.ID, &term); err != nil {
			return nil, err
		}
		out = append(out, term)
	}
	return out, nil
}

// forgetTerms forgets the term ids (of the post's categories and tags)
// that the site no longer has.
func (s *Service) forgetTerms(ctx context.Context, p *store.WordPressPost, termIDs []int64) error {
	gone := map[int64]bool{}
	for _, id := range termIDs {
		gone[id] = true
	}
	cats, err := s.db.CategoriesByID(ctx, p.CategoryIDs)
	if err != nil {
		return err
	}
	for _, c := range cats {
		if c.WPTermID != nil && gone[*c.WPTermID] {
			if err := s.db.SetCategoryTerm(ctx, c.ID, nil); err != nil {
				return err
			}
		}
	}
	tags, err := s.db.TagsByID(ctx, p.TagIDs)
	if err != nil {
		return err
	}
	for _, t := range tags {
		if t.WPTermID != nil && gone[*t.WPTermID] {
			if err := s.db.SetTagTerm(ctx, t.ID, nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// featuredMedia uploads the post's featured image once (per address) and
// returns its media id; 0 without one.
func (s *Service) featuredMedia(ctx context.Context, c *wordpress.Client, p *store.WordPressPost) (int64, error) {
	if p.FeaturedImageURL == "" {
		return 0, nil
	}
	if p.FeaturedMediaID != nil && p.FeaturedMediaSrc == p.FeaturedImageURL {
		return *p.FeaturedMediaID, nil
	}
	data, ctype, err := s.fetchImage(ctx, p.FeaturedImageURL)
	if err != nil {
		return 0, err
	}
	name := path.Base(strings.SplitN(p.FeaturedImageURL, "?", 2)[0])
	if name == "" || name == "/" || name == "." {
		name = "image"
	}
	m, err := c.UploadMedia(ctx, name, ctype, data)
	if err != nil {
		return 0, err
	}
	if _, err := s.db.SyncWordPressPost(context.WithoutCancel(ctx), p.ID, store.WordPressSync{FeaturedMediaID: &m.ID,
		FeaturedMediaSrc: &p.FeaturedImageURL}); err != nil {
		return 0, err
	}
	return m.ID, nil
}

// fetchImage reads a featured image through the image client (the
// address guard of web sources: private and loopback addresses refused
// unless --web-sources-private), at most MaxImage bytes. Any editor types
// the address, so every failure past the guard reads the same, "could
// not fetch the image" (the real cause only in the error it wraps, for
// the log): a dial error, a status or a timeout told apart would scan
// the server's network port by port. It is never retried (imageError).
func (s *Service) fetchImage(ctx context.Context, addr string) ([]byte, string, error) {
	tctx := ctx
	if s.opt.Timeout > 0 {
		var cancel context.CancelFunc
		tctx, cancel = context.WithTimeout(ctx, s.opt.Timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(tctx, http.MethodGet, addr, nil)
	if err != nil {
		return nil, "", store.Invalid("featured_image_url: %v", err)
	}
	res, err := s.opt.ImageHTTP.Do(req)
	if err != nil {
		var refused *outbound.AddressError
		if errors.As(err, &refused) {
			return nil, "", &store.Error{Kind: store.KindInvalid, Message: "featured_image_url: " + refused.Error(), Err: imageError{err}}
		}
		return nil, "", imageFailed(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, "", imageFailed(fmt.Errorf("answered %s", res.Status))
	}
	if res.ContentLength > s.opt.MaxImage {
		return nil, "", imageFailed(fmt.Errorf("%d bytes, more than %d", res.ContentLength, s.opt.MaxImage))
	}
	data, err := io.ReadAll(io.LimitReader(res.Body, s.opt.MaxImage+1))
	if err != nil {
		return nil, "", imageFailed(err)
	}
	if int64(len(data)) > s.opt.MaxImage {
		return nil, "", imageFailed(fmt.Errorf("more than %d bytes", s.opt.MaxImage))
	}
	ctype := res.Header.Get("Content-Type")
	if !strings.HasPrefix(ctype, "image/") {
		ctype = http.DetectContentType(data)
	}
	if !strings.HasPrefix(ctype, "image/") {
		return nil, "", imageFailed(fmt.Errorf("not an image (%s)", ctype))
	}
	return data, ctype, nil
}

// imageError is a failed fetch of a featured image: neither a publish's
// own retries nor the job runner's try it again.
type imageError struct{ error }

func (e imageError) Unwrap() error { return e.error }

func imageFailed(err error) error {
	return &store.Error{Kind: store.KindRemote, Err: imageError{fmt.Errorf("featured image: %w", err)},
		Message: fmt.Sprintf("featured_image_url: could not fetch the image (an http or https address answering an image of at most %d MiB)", maxImageMiB)}
}

// retryable tells whether push tries a failed attempt again.
func retryable(err error) bool {
	var ie imageError
	return wordpress.Retryable(err) && !errors.As(err, &ie)
}

// onSite returns a post the scope sees that is on its environment's site,
// with the client of that site: what every action on a published post
// starts with.
func (s *Service) onSite(ctx context.Context, sc store.Scope, id int64) (*store.WordPressPost, *wordpress.Client, error) {
	p, err := s.Get(ctx, sc, id)
	if err != nil {
		return nil, nil, err
	}
	if p.RemoteID == nil {
		return nil, nil, store.Conflict("post %d is not on the WordPress site yet: publish it first", p.ID)
	}
	c, err := s.site(ctx, sc, p.EnvironmentID)
	if err != nil {
		return nil, nil, err
	}
	return p, c, nil
}

// Unpublish turns the post back into a draft on the site (and here).
func (s *Service) Unpublish(ctx context.Context, sc store.Scope, id int64) (*store.WordPressPost, error) {
	p, c, err := s.onSite(ctx, sc, id)
	if err != nil {
		return nil, err
	}
	r, err := c.SetStatus(ctx, *p.RemoteID, "draft")
	if err != nil {
		return nil, s.failed(ctx, p, err)
	}
	draft := "draft"
	return s.recordRemote(ctx, p.ID, r, &store.WordPressPostUpdate{Status: &draft})
}

// trash moves the post to the trash on the site; one already gone there
// (or a pending create that made none) is fine.
func (s *Service) trash(ctx context.Context, sc store.Scope, p *store.WordPressPost) error {
	c, err := s.site(ctx, sc, p.EnvironmentID)
	if err != nil {
		return err
	}
	remoteID := p.RemoteID
	if remoteID == nil { // a create that got no answer
		found, err := pendingCreate(ctx, c, p)
		if err != nil {
			return s.failed(ctx, p, err)
		}
		if found == nil {
			return nil
		}
		remoteID = &found.ID
	}
	err = c.TrashPost(ctx, *remoteID)
	var we *wordpress.Error
	if errors.As(err, &we) && (we.Status == http.StatusNotFound || we.Status == http.StatusGone) {
		return nil
	}
	if err != nil {
		return s.failed(ctx, p, err)
	}
	return nil
}

// Sync brings the post and the site together: changes on one side only go
// to the other; when both changed since the last sync it is a conflict
// that names both times and changes nothing, unless prefer ("local" or
// "remote") says which side wins.
func (s *Service) Sync(ctx context.Context, sc store.Scope, id int64, prefer string) (*store.WordPressPost, error) {
	if prefer != "" && prefer != "local" && prefer != "remote" {
		return nil, store.Invalid("prefer: must be local or remote")
	}
	p, c, err := s.onSite(ctx, sc, id)
	if err != nil {
		return nil, err
	}
	r, err := c.Post(ctx, *p.RemoteID)
	if err != nil {
		return nil, s.failed(ctx, p, err)
	}
	// modified has one-second resolution: an edit within the second of
	// the last sync shows only in the digest.
	remoteChanged := p.RemoteModified == nil || !r.Modified().Equal(*p.RemoteModified) ||
		(p.RemoteHash != "" && remoteHash(r) != p.RemoteHash)
	// Changed here: edited since the last sync (a sync or push that
	// records the site's state sets synced_at after updated_at). A failed
	// call is no change: a failed unpublish must not turn the next sync
	// into a conflict.
	localChanged := p.SyncStatus == store.SyncDirty || p.SyncedAt == nil || p.UpdatedAt.After(*p.SyncedAt)
	switch {
	case remoteChanged && localChanged && prefer == "":
		return nil, store.Conflict("both sides changed since the last sync: here at %s, on WordPress at %s; sync again with ?prefer=local or ?prefer=remote",
			p.UpdatedAt.Format(time.RFC3339), r.Modified().Format(time.RFC3339))
	case localChanged && (!remoteChanged || prefer == "local"):
		return s.push(ctx, c, p)
	case remoteChanged:
		local, err := s.localFromRemote(ctx, c, p.EnvironmentID, r, map[string]map[int64]int64{})
		if err != nil {
			return nil, s.failed(ctx, p, err)
		}
		if !slug.Valid(r.Slug, slug.Max) || r.Slug == p.Slug {
			local.Slug = nil
		}
		return s.recordRemote(ctx, p.ID, r, local)
	}
	return s.recordRemote(ctx, p.ID, r, nil)
}

// localFromRemote is a remote post in local terms: its raw fields, and its
// terms as the environment's categories and tags, matched by slug (made
// here when missing). seen caches term ids by taxonomy.
func (s *Service) localFromRemote(ctx context.Context, c *wordpress.Client, envID int64, r *wordpress.Post, seen map[string]map[int64]int64) (*store.WordPressPostUpdate, error) {
	title, content, excerpt := r.Title.Text(), r.Content.Text(), r.Excerpt.Text()
	if strings.TrimSpace(title) == "" {
		title = "(no title)"
	}
	status := r.Status
	up := &store.WordPressPostUpdate{Title: &title, Content: &content, Excerpt: &excerpt, Status: &status}
	if r.Slug != "" {
		up.Slug = &r.Slug
	}
	if status == "future" && r.DateGMT != nil {
		if t, err := time.Parse(wordpress.TimeFormat, *r.DateGMT); err == nil {
			tp := &t
			up.ScheduledAt = &tp
		}
	}
	cats, err := s.localTerms(ctx, c, envID, wordpress.Categories, r.Categories, seen)
	if err != nil {
		return nil, err
	}
	tags, err := s.localTerms(ctx, c, envID, wordpress.Tags, r.Tags, seen)
	if err != nil {
		return nil, err
	}
	up.CategoryIDs, up.TagIDs = &cats, &tags
	return up, nil
}

// localTerms maps the site's term ids of a taxonomy to the environment's
// categories or tags with the same slug, making those it lacks and
// keeping the term ids on them.
func (s *Service) localTerms(ctx context.Context, c *wordpress.Client, envID int64, taxonomy string, ids []int64, seen map[string]map[int64]int64) ([]int64, error) {
	if seen[taxonomy] == nil {
		seen[taxonomy] = map[int64]int64{}
	}
	known := seen[taxonomy]
	var ask []int64
	for _, id := range ids {
		if _, ok := known[id]; !ok {
			ask = append(ask, id)
		}
	}
	terms, err := c.Terms(ctx, taxonomy, ask)
	if err != nil {
		return nil, err
	}
	for _, t := range terms {
		local, err := s.localTerm(ctx, envID, taxonomy, t)
		if err != nil {
			return nil, err
		}
		known[t.ID] = local
	}
	out := []int64{}
	for _, id := range ids {
		if local, ok := known[id]; ok {
			out = append(out, local)
		}
	}
	return out, nil
}

func (s *Service) localTerm(ctx context.Context, envID int64, taxonomy string, t wordpress.Term) (int64, error) {
	given := t.Slug
	if !slug.Valid(given, slug.Max) {
		given = "" // percent-encoded or too long: made from the name
	}
	term := t.ID
	if taxonomy == wordpress.Categories {
		var cat *store.Category
		var err error
		if given != "" {
			if cat, err = s.db.CategoryBySlug(ctx, envID, given); err != nil {
				return 0, err
			}
		}
		if cat == nil {
			if cat, err = s.db.CreateCategory(ctx, store.NewCategory{EnvironmentID: envID, Name: t.Name, Slug: given,
				SlugTries: slug.Generated(t.Name, "category", slug.Max), Description: t.Description}); err != nil {
				return 0, err
			}
		}
		return cat.ID, s.db.SetCategoryTerm(ctx, cat.ID, &term)
	}
	var tag *store.Tag
	var err error
	if given != "" {
		if tag, err = s.db.TagBySlug(ctx, envID, given); err != nil {
			return 0, err
		}
	}
	if tag == nil {
		if tag, err = s.db.CreateTag(ctx, store.NewTag{EnvironmentID: envID, Name: t.Name, Slug: given,
			SlugTries: slug.Generated(t.Name, "tag", slug.Max)}); err != nil {
			return 0, err
		}
	}
	return tag.ID, s.db.SetTagTerm(ctx, tag.ID, &term)
}

// ImportResult says what an import did.
type ImportResult struct {
	Imported int `json:"imported"`
	Skipped  int `json:"skipped"` // already here (same remote id)
	Pages    int `json:"pages"`
}

// Import pulls the site's posts into an environment, page by page as
// X-WP-TotalPages says, matching terms by slug. Posts already here (by
// remote id) are skipped. The credential is checked first with users/me:
// the posts list would answer anonymously (published posts only) with bad
// credentials.
func (s *Service) Import(ctx context.Context, sc store.Scope, userID, envID int64) (*ImportResult, error) {
	c, err := s.site(ctx, sc, envID)
	if err != nil {
		return nil, err
	}
	if _, err := c.Me(ctx); err != nil {
		return nil, remoteError(err)
	}
	res := &ImportResult{}
	seen := map[string]map[int64]int64{}
	for page, pages := 1, 1; page <= pages; page++ {
		posts, total, err := c.Posts(ctx, page, 100)
		if err != nil {
			return nil, remoteError(err)
		}
		pages, res.Pages = total, total
		for i := range posts {
			r := &posts[i]
			if have, err := s.db.WordPressPostByRemote(ctx, envID, r.ID); err != nil {
				return nil, err
			} else if have != nil {
				res.Skipped++
				continue
			}
			local, err := s.localFromRemote(ctx, c, envID, r, seen)
			if err != nil {
				return nil, remoteError(err)
			}
			if err := s.importOne(ctx, userID, envID, r, local); err != nil {
				return nil, err
			}
			res.Imported++
		}
	}
	return res, nil
}

func (s *Service) importOne(ctx context.Context, userID, envID int64, r *wordpress.Post, l *store.WordPressPostUpdate) error {
	given := ""
	if l.Slug != nil && slug.Valid(*l.Slug, slug.Max) {
		given = *l.Slug
	}
	var sched *time.Time
	if l.ScheduledAt != nil {
		sched = *l.ScheduledAt
	}
	status := *l.Status
	if !slices.Contains(store.WordPressStatuses, status) || status == "future" && sched == nil {
		status = "draft"
	}
	synced, none, mod, hash := store.SyncSynced, "", r.Modified(), remoteHash(r)
	by := &userID
	n := store.NewWordPressPost{EnvironmentID: envID, CreatedBy: by, Title: *l.Title, Content: *l.Content,
		Excerpt: *l.Excerpt, Slug: given, SlugTries: slug.Generated(*l.Title, "post", slug.Max), Status: status, ScheduledAt: sched,
		CategoryIDs: *l.CategoryIDs, TagIDs: *l.TagIDs,
		Remote: &store.WordPressSync{RemoteID: &r.ID, RemoteLink: &r.Link, RemoteStatus: &r.Status, RemoteModified: &mod, RemoteHash: &hash,
			SyncStatus: &synced, LastError: &none, Synced: true}}
	_, err := s.db.CreateWordPressPost(ctx, n)
	if store.KindOf(err) == store.KindConflict && given != "" {
		// A post here has the site's slug already: this one gets a made one.
		n.Slug = ""
		_, err = s.db.CreateWordPressPost(ctx, n)
	}
	return err
}
