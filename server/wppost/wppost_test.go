package wppost_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/copydesk/copydesk/server/credential"
	"github.com/copydesk/copydesk/server/environment"
	"github.com/copydesk/copydesk/server/keyring"
	"github.com/copydesk/copydesk/server/posttarget"
	"github.com/copydesk/copydesk/server/publish/wordpress/wptest"
	"github.com/copydesk/copydesk/server/wppost"
	"github.com/copydesk/copydesk/store"
	"github.com/copydesk/copydesk/store/storetest"
)

var ctx = context.Background()

type rig struct {
	db     *store.DB
	keys   *keyring.Keyring
	envs   *environment.Service
	site   *wptest.Site
	svc    *wppost.Service
	target posttarget.Target
	env    *store.Environment // publishes to site
	user   *store.User
}

func newRig(t *testing.T) *rig {
	t.Helper()
	db, _ := storetest.OpenDB(t)
	keys, err := keyring.New([]byte("wppost-test-secret-0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	site := wptest.New()
	t.Cleanup(site.Close)
	r := &rig{db: db, keys: keys, envs: environment.New(db), site: site}
	cred := r.credential(t, keys, site.URL, nil)
	if r.env, err = r.envs.Create(ctx, store.Everything, store.NewEnvironment{Name: "Blog", Configuration: store.EnvironmentConfig{
		WordPress: &store.WordPressConfig{BaseURL: site.URL, CredentialID: &cred}}}); err != nil {
		t.Fatal(err)
	}
	r.svc = wppost.New(wppost.Deps{Store: db, Environments: r.envs, Credentials: credential.NewOpener(db, keys),
		Options: wppost.Options{Timeout: 300 * time.Millisecond, Retries: 2, Backoff: func(int) time.Duration { return time.Millisecond }}})
	r.target = r.svc.Target()
	r.user = storetest.MustUser(t, db, "writer", store.RoleEditor)
	return r
}

// credential stores the site's application password sealed with keys.
func (r *rig) credential(t *testing.T, keys *keyring.Keyring, baseURL string, envID *int64) int64 {
	t.Helper()
	c, err := r.db.CreateCredential(ctx, store.NewCredential{Name: "blog", Provider: store.ProviderWordPress, BaseURL: baseURL,
		Username: r.site.User, SecretHint: "...", EnvironmentID: envID,
		Seal: func(id int64) ([]byte, error) { return keys.Seal([]byte(r.site.Password), store.CredentialAAD(id)) }})
	if err != nil {
		t.Fatal(err)
	}
	return c.ID
}

func (r *rig) draft(t *testing.T, env *store.Environment, title string) *posttarget.Post {
	t.Helper()
	p, err := r.target.Draft(ctx, store.Everything, posttarget.Draft{EnvironmentID: env.ID, UserID: r.user.ID, Title: title,
		Body: "Some *Markdown*."})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (r *rig) creates() int { return r.site.Requested("POST /wp/v2/posts") }

// A draft is local until it is published; publishing sends it once, with
// the status asked for, and publishing it again as it is sends nothing.
func TestPublish(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	p := r.draft(t, r.env, "Rye bread")
	if w := p.WordPress; w.Status != "draft" || w.RemoteID != nil || w.SyncStatus == store.SyncSynced || r.site.PostCount() != 0 {
		t.Fatalf("draft %+v; the site has %d posts", w, r.site.PostCount())
	}
	sent, err := r.target.Publish(ctx, store.Everything, p.ID, "draft")
	if err != nil {
		t.Fatal(err)
	}
	if w := sent.WordPress; w.RemoteID == nil || w.SyncStatus != store.SyncSynced || r.site.PostStatus(*w.RemoteID) != "draft" ||
		!strings.Contains(sent.Detail, "for a person to publish") {
		t.Fatalf("sent as a draft: %+v (%s)", w, sent.Detail)
	}
	pub, err := r.target.Publish(ctx, store.Everything, p.ID, "publish")
	if err != nil {
		t.Fatal(err)
	}
	if w := pub.WordPress; *w.RemoteID != *sent.WordPress.RemoteID || w.Status != "publish" || r.site.PostStatus(*w.RemoteID) != "publish" ||
		!strings.Contains(pub.Detail, "published on WordPress") {
		t.Fatalf("published: %+v (%s)", w, pub.Detail)
	}
	requests := func() (total int) {
		r.site.Set(func(s *wptest.Site) {
			for _, n := range s.Requests {
				total += n
			}
		})
		return total
	}
	before := requests()
	if _, err := r.target.Publish(ctx, store.Everything, p.ID, "publish"); err != nil {
		t.Fatal(err)
	}
	after := requests()
	if after != before || r.site.PostCount() != 1 || r.creates() != 1 {
		t.Fatalf("publishing a synced post again: %d requests, %d posts, %d creates", after-before, r.site.PostCount(), r.creates())
	}
}

// A create the site made but never answered is a timeout that another try
// may mend; the next publish finds the post the create made and adopts it
// instead of making a second one.
func TestPublishAfterNoAnswer(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	p := r.draft(t, r.env, "Slow site")
	r.site.Set(func(s *wptest.Site) {
		s.Hang = func(req *http.Request) bool {
			return req.Method == "POST" && strings.HasSuffix(req.URL.Path, "/wp/v2/posts")
		}
	})
	_, err := r.target.Publish(ctx, store.Everything, p.ID, "publish")
	storetest.WantKind(t, err, store.KindTimeout)
	if !r.target.Retryable(err) || r.site.PostCount() != 1 {
		t.Fatalf("retryable %v; the site has %d posts", r.target.Retryable(err), r.site.PostCount())
	}
	got, err := r.svc.Get(ctx, store.Everything, p.ID)
	if err != nil || !got.CreatePending || got.SyncStatus != store.SyncFailed {
		t.Fatalf("after no answer: %+v %v", got, err)
	}
	r.site.Set(func(s *wptest.Site) { s.Hang = nil })
	pub, err := r.target.Publish(ctx, store.Everything, p.ID, "publish")
	if err != nil {
		t.Fatal(err)
	}
	if r.site.PostCount() != 1 || pub.WordPress.RemoteID == nil || pub.WordPress.CreatePending || r.creates() != 1 {
		t.Fatalf("after the retry: %+v; the site has %d posts from %d creates", pub.WordPress, r.site.PostCount(), r.creates())
	}
}

// What the site refuses is kept on the post and is not tried again; what
// it could not do now (503) is.
func TestPublishRefusedBySite(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	for _, c := range []struct {
		status    int
		retryable bool
	}{{403, false}, {503, true}} {
		p := r.draft(t, r.env, "Refused "+http.StatusText(c.status))
		r.site.Set(func(s *wptest.Site) {
			s.Fail = func(*http.Request) (int, string, string, bool) { return c.status, "nope", "Not now.", true }
		})
		_, err := r.target.Publish(ctx, store.Everything, p.ID, "publish")
		storetest.WantKind(t, err, store.KindRemote)
		if r.target.Retryable(err) != c.retryable {
			t.Errorf("%d: retryable %v", c.status, r.target.Retryable(err))
		}
		got, gerr := r.svc.Get(ctx, store.Everything, p.ID)
		if gerr != nil || got.SyncStatus != store.SyncFailed || !strings.Contains(got.LastError, "Not now.") {
			t.Errorf("%d: post %+v %v", c.status, got, gerr)
		}
		r.site.Set(func(s *wptest.Site) { s.Fail = nil })
	}
	if r.site.PostCount() != 0 {
		t.Fatalf("the site has %d posts", r.site.PostCount())
	}
}

// Publishing needs the environment's credential as the credential opener
// gives it: one that is gone, belongs elsewhere or was sealed with another
// secret.key is a conflict that says so, and nothing reaches the site.
func TestPublishCredential(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	other, err := keyring.New([]byte("another-installation-secret-0123456789"))
	if err != nil {
		t.Fatal(err)
	}
	bare, err := r.envs.Create(ctx, store.Everything, store.NewEnvironment{Name: "Bare"})
	if err != nil {
		t.Fatal(err)
	}
	// The configuration was valid when it was stored; the credential
	// changed afterwards.
	configure := func(t *testing.T, name string, cred int64) *store.Environment {
		t.Helper()
		env, err := r.envs.Create(ctx, store.Everything, store.NewEnvironment{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		cfg := store.EnvironmentConfig{WordPress: &store.WordPressConfig{BaseURL: r.site.URL, CredentialID: &cred}}
		if err := environment.NormalizeConfig(&cfg); err != nil {
			t.Fatal(err)
		}
		if env, err = r.db.UpdateEnvironment(ctx, env.ID, store.EnvironmentUpdate{Configuration: &cfg}); err != nil {
			t.Fatal(err)
		}
		return env
	}
	gone := r.credential(t, r.keys, r.site.URL, nil)
	goneEnv := configure(t, "Gone", gone)
	if err := r.db.DeleteCredential(ctx, gone); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		env    *store.Environment
		detail string
	}{
		{"NotConfigured", bare, "does not publish to WordPress"},
		{"CredentialGone", goneEnv, "no longer exists"},
		{"OtherEnvironmentsCredential", configure(t, "Borrowing", r.credential(t, r.keys, r.site.URL, &bare.ID)), "cannot be used here"},
		{"SealedWithAnotherKey", configure(t, "Restored", r.credential(t, other, r.site.URL, nil)), "cannot be opened"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := r.draft(t, c.env, c.name)
			_, err := r.target.Publish(ctx, store.Everything, p.ID, "publish")
			storetest.WantKind(t, err, store.KindConflict)
			if !strings.Contains(store.Message(err), c.detail) {
				t.Errorf("detail %q lacks %q", store.Message(err), c.detail)
			}
			if r.target.Retryable(err) {
				t.Error("a refused credential is retried")
			}
			if (r.target.Ready(c.env) == nil) == (c.name == "NotConfigured") {
				t.Errorf("Ready: %v", r.target.Ready(c.env))
			}
		})
	}
	if n := r.creates(); n != 0 {
		t.Fatalf("%d creates reached the site", n)
	}
}

// The HTML a post sends is cleaned by default: script, event handlers and
// javascript: links typed in its Markdown (or written by a model) do not
// reach the site; an environment with wordpress.raw_html sends them.
func TestPublishSanitizesHTML(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	body := "Hello <script>alert(1)</script>\n\n<img src=\"x.png\" onerror=\"alert(2)\">\n\n[click](javascript:alert(3)) <a href=\"javascript:alert(4)\">b</a>\n\n## Kept\n\n- a [link](https://example.com/)\n"
	publish := func(env *store.Environment) string {
		p, err := r.target.Draft(ctx, store.Everything, posttarget.Draft{EnvironmentID: env.ID, UserID: r.user.ID, Title: "XSS", Body: body})
		if err != nil {
			t.Fatal(err)
		}
		sent, err := r.target.Publish(ctx, store.Everything, p.ID, "draft")
		if err != nil {
			t.Fatal(err)
		}
		return r.site.PostContent(*sent.WordPress.RemoteID)
	}
	got := publish(r.env)
	for _, bad := range []string{"<script", "onerror", "javascript:"} {
		if strings.Contains(strings.ToLower(got), bad) {
			t.Errorf("%q reached the site: %s", bad, got)
		}
	}
	if !strings.Contains(got, "<h2") || !strings.Contains(got, `href="https://example.com/"`) || !strings.Contains(got, "Hello") {
		t.Errorf("the allowed HTML was lost: %s", got)
	}
	cfg := r.env.Configuration
	wp := *cfg.WordPress
	wp.RawHTML = true
	cfg.WordPress = &wp
	raw, err := r.envs.Create(ctx, store.Everything, store.NewEnvironment{Name: "Raw", Configuration: cfg})
	if err != nil {
		t.Fatal(err)
	}
	got = publish(raw)
	for _, bad := range []string{"<script>alert(1)</script>", `onerror="alert(2)"`, "javascript:alert(4)"} {
		if !strings.Contains(got, bad) {
			t.Errorf("raw_html: %q did not reach the site: %s", bad, got)
		}
	}
}

// A featured image is an address any editor types: a loopback one is
// refused before any request unless the image client allows it (serve
// --web-sources-private); allowed, a non-image answer is fetched once,
// never retried, and a closed port reads the same as that answer, so
// publishing cannot scan the server's ports.
func TestFeaturedImageGuard(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	internal := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<p>deleted user 1</p>"))
	}))
	defer internal.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()
	r := newRig(t)
	publish := func(svc *wppost.Service, img string) error {
		p, err := r.target.Draft(ctx, store.Everything, posttarget.Draft{EnvironmentID: r.env.ID, UserID: r.user.ID, Title: "Img " + img, Body: "x"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Update(ctx, store.Everything, p.ID, wppost.Change{FeaturedImageURL: &img}); err != nil {
			t.Fatal(err)
		}
		_, err = svc.Target().Publish(ctx, store.Everything, p.ID, "draft")
		return err
	}
	err := publish(r.svc, internal.URL+"/admin/delete-user?id=1")
	if store.KindOf(err) != store.KindInvalid || !strings.Contains(store.Message(err), "private and loopback addresses are refused") || hits.Load() != 0 {
		t.Fatalf("a loopback image by default: %v, %d requests", err, hits.Load())
	}
	open := wppost.New(wppost.Deps{Store: r.db, Environments: r.envs, Credentials: credential.NewOpener(r.db, r.keys),
		Options: wppost.Options{ImageHTTP: &http.Client{}, Timeout: 2 * time.Second, Retries: 2, Backoff: func(int) time.Duration { return time.Millisecond }}})
	notImage := publish(open, internal.URL+"/admin/delete-user?id=1")
	if hits.Load() != 1 {
		t.Fatalf("a non-image answer was requested %d times, want once", hits.Load())
	}
	refused := publish(open, closedURL+"/a.png")
	const want = "featured_image_url: could not fetch the image"
	for _, err := range []error{notImage, refused} {
		if !strings.HasPrefix(store.Message(err), want) || store.Message(notImage) != store.Message(refused) || store.KindOf(notImage) != store.KindOf(refused) {
			t.Fatalf("the answers tell a port from another: %q (%v) vs %q (%v)", store.Message(notImage), store.KindOf(notImage),
				store.Message(refused), store.KindOf(refused))
		}
	}
	if strings.Contains(store.Message(refused), "refused") || r.site.MediaCount() != 0 {
		t.Fatalf("the dial error shows (%q) or something was uploaded (%d)", store.Message(refused), r.site.MediaCount())
	}
}

// An edit on the site within the second of the last sync leaves modified
// as it was: the digest of the remote title and content tells it. With a
// change here too it is a conflict (it was overwritten with 200); alone,
// it is pulled here.
func TestSyncSeesAnEditInTheSameSecond(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	p := r.draft(t, r.env, "Rye bread")
	sent, err := r.target.Publish(ctx, store.Everything, p.ID, "draft")
	if err != nil {
		t.Fatal(err)
	}
	remote := *sent.WordPress.RemoteID
	r.site.EditPostSameSecond(remote, "Rye bread, edited there", "Changed on the site.")
	title := "Rye bread, edited here"
	if _, err := r.svc.Update(ctx, store.Everything, p.ID, wppost.Change{Title: &title}); err != nil {
		t.Fatal(err)
	}
	_, err = r.svc.Sync(ctx, store.Everything, p.ID, "")
	if store.KindOf(err) != store.KindConflict || !strings.Contains(err.Error(), "both sides changed") {
		t.Fatalf("sync with both changed: %v", err)
	}
	if got := r.site.PostContent(remote); got != "Changed on the site." {
		t.Fatalf("the site's edit was overwritten: %q", got)
	}
	// Alone on the site: pulled here.
	q := r.draft(t, r.env, "Spelt")
	sent, err = r.target.Publish(ctx, store.Everything, q.ID, "draft")
	if err != nil {
		t.Fatal(err)
	}
	r.site.EditPostSameSecond(*sent.WordPress.RemoteID, "Spelt, edited there", "There.")
	got, err := r.svc.Sync(ctx, store.Everything, q.ID, "")
	if err != nil || got.Title != "Spelt, edited there" {
		t.Fatalf("sync of a remote edit: %+v %v", got, err)
	}
}
