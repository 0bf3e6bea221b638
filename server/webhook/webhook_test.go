package webhook_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/copydesk/copydesk/server/environment"
	"github.com/copydesk/copydesk/server/jobs"
	"github.com/copydesk/copydesk/server/keyring"
	"github.com/copydesk/copydesk/server/notify"
	"github.com/copydesk/copydesk/server/webhook"
	"github.com/copydesk/copydesk/store"
	"github.com/copydesk/copydesk/store/storetest"
)

// The Standard Webhooks specification's published test vector.
func TestSignSpecVector(t *testing.T) {
	t.Parallel()
	got, err := webhook.Sign("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330,
		[]byte(`{"test": 2432232314}`))
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; err != nil || got != want {
		t.Fatalf("Sign = %q, %v; want %q", got, err, want)
	}
}

// The default schedule: 30 s doubled up to 8 h, 13 attempts, about a day.
func TestDelaySchedule(t *testing.T) {
	t.Parallel()
	var total time.Duration
	var delays []time.Duration
	for n := 1; n < webhook.DefaultMaxAttempts; n++ {
		d := webhook.Delay(webhook.DefaultRetryDelay, webhook.DefaultMaxDelay, n)
		delays, total = append(delays, d), total+d
	}
	if delays[0] != 30*time.Second || delays[1] != time.Minute || delays[9] != 256*time.Minute || delays[10] != 8*time.Hour ||
		delays[11] != 8*time.Hour {
		t.Errorf("delays %v", delays)
	}
	if total < 22*time.Hour || total > 26*time.Hour {
		t.Errorf("the retries span %s; want about a day", total)
	}
}

// verify checks a delivery's signature from the specification's words, not
// with webhook.Sign: the HMAC-SHA256, keyed with the base64-decoded part of
// the secret after "whsec_", of "id.timestamp.body", base64, after "v1,";
// the header may hold several signatures separated by spaces.
func verify(t *testing.T, secret string, h http.Header, body []byte) bool {
	t.Helper()
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		t.Fatalf("secret %q: %v", secret, err)
	}
	mac := hmac.New(sha256.New, key)
	io.WriteString(mac, h.Get("webhook-id")+"."+h.Get("webhook-timestamp")+".")
	mac.Write(body)
	want := mac.Sum(nil)
	for _, sig := range strings.Fields(h.Get("webhook-signature")) {
		v, b64, ok := strings.Cut(sig, ",")
		got, err := base64.StdEncoding.DecodeString(b64)
		if ok && v == "v1" && err == nil && hmac.Equal(got, want) {
			return true
		}
	}
	return false
}

// receiver is a webhook receiver that answers status and keeps what it got.
type receiver struct {
	srv    *httptest.Server
	mu     sync.Mutex
	status int
	got    []delivery
}

type delivery struct {
	header http.Header
	body   []byte
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{status: 200}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, delivery{req.Header.Clone(), b})
		status := r.status
		r.mu.Unlock()
		w.WriteHeader(status)
		io.WriteString(w, strings.Repeat("x", 2000))
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) deliveries() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivery(nil), r.got...)
}

func (r *receiver) answer(status int) {
	r.mu.Lock()
	r.status = status
	r.mu.Unlock()
}

// kindRunner keeps the kind the service registers, so the test runs its
// handler and schedule itself.
type kindRunner struct {
	kind    jobs.Kind
	replans int
}

func (r *kindRunner) Register(_ string, k jobs.Kind)       { r.kind = k }
func (r *kindRunner) Replan(context.Context, string) error { r.replans++; return nil }

type userNotes struct {
	mu    sync.Mutex
	notes map[int64][]notify.Note
}

func (n *userNotes) User(_ context.Context, userID int64, note notify.Note) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.notes[userID] = append(n.notes[userID], note)
}

type rig struct {
	db    *store.DB
	clock *storetest.Clock
	svc   *webhook.Service
	jobs  *kindRunner
	notes *userNotes
	env   *store.Environment
	other *store.Environment
	user  store.Scope // an editor granted env only
	recv  *receiver
}

func newRig(t *testing.T, opt webhook.Options, refusePrivate bool) *rig {
	t.Helper()
	db, clk := storetest.OpenDB(t)
	ctx := context.Background()
	envs := environment.New(db)
	env, err := envs.Create(ctx, store.Everything, store.NewEnvironment{Name: "Blog"})
	if err != nil {
		t.Fatal(err)
	}
	other, err := envs.Create(ctx, store.Everything, store.NewEnvironment{Name: "Other"})
	if err != nil {
		t.Fatal(err)
	}
	u := storetest.MustUser(t, db, "ed", store.RoleEditor)
	keys, err := keyring.New([]byte(strings.Repeat("k", 32)))
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{db: db, clock: clk, jobs: &kindRunner{}, notes: &userNotes{notes: map[int64][]notify.Note{}}, env: env, other: other,
		user: store.NewScope(u.ID, false, []int64{env.ID}), recv: newReceiver(t)}
	r.svc = webhook.New(webhook.Deps{Store: db, Environments: envs, Keys: keys, Jobs: r.jobs, Notify: r.notes, HTTP: http.DefaultClient,
		RefusePrivate: refusePrivate, Now: db.Now, Options: opt})
	return r
}

func (r *rig) create(t *testing.T, events ...string) *webhook.Created {
	t.Helper()
	c, err := r.svc.Create(context.Background(), r.user, webhook.Input{EnvironmentID: r.env.ID, URL: r.recv.srv.URL + "/hook",
		Events: events, Enabled: true})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// run runs the delivery job once, as the runner would when it is due.
func (r *rig) run(t *testing.T) {
	t.Helper()
	if err := r.jobs.kind.Handle(context.Background(), &store.Job{}); err != nil {
		t.Fatal(err)
	}
}

func (r *rig) list(t *testing.T, id int64) []*store.WebhookDelivery {
	t.Helper()
	ds, _, err := r.svc.Deliveries(context.Background(), r.user, id, store.Page{Page: 1, PerPage: 50})
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// An event reaches the webhooks of its environment that want it, once
// each, signed; the others get nothing.
func TestEmitSignsAndDelivers(t *testing.T) {
	t.Parallel()
	r := newRig(t, webhook.Options{}, false)
	ctx := context.Background()
	made := r.create(t, webhook.PostPublished)
	if !strings.HasPrefix(made.Secret, "whsec_") {
		t.Fatalf("secret %q", made.Secret)
	}
	if key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(made.Secret, "whsec_")); err != nil || len(key) < 24 || len(key) > 32 {
		t.Fatalf("secret %q: %d bytes, %v", made.Secret, len(key), err)
	}
	r.svc.Emit(ctx, webhook.Event{Type: webhook.PostPublished, EnvironmentID: r.env.ID, Data: map[string]any{"post_id": 7}})
	r.svc.Emit(ctx, webhook.Event{Type: webhook.RunFailed, EnvironmentID: r.env.ID, Data: map[string]any{"run_id": 1}})        // not wanted
	r.svc.Emit(ctx, webhook.Event{Type: webhook.PostPublished, EnvironmentID: r.other.ID, Data: map[string]any{"post_id": 8}}) // another environment
	if r.jobs.replans != 1 {
		t.Errorf("%d replans; want 1 (for the one delivery)", r.jobs.replans)
	}
	if at, _, _ := r.jobs.kind.Next(ctx, r.clock.Now()); !at.Equal(r.clock.Now()) {
		t.Errorf("next run at %s; want now", at)
	}
	r.run(t)
	got := r.recv.deliveries()
	if len(got) != 1 {
		t.Fatalf("%d deliveries; want 1", len(got))
	}
	d := got[0]
	if !verify(t, made.Secret, d.header, d.body) {
		t.Errorf("signature %q does not verify", d.header.Get("webhook-signature"))
	}
	if ts := d.header.Get("webhook-timestamp"); ts != strconv.FormatInt(r.clock.Now().Unix(), 10) {
		t.Errorf("webhook-timestamp %q", ts)
	}
	var body struct {
		Type      string         `json:"type"`
		Timestamp string         `json:"timestamp"`
		Data      map[string]any `json:"data"`
	}
	if err := json.Unmarshal(d.body, &body); err != nil {
		t.Fatal(err)
	}
	if body.Type != "post.published" || body.Data["post_id"] != float64(7) || body.Data["environment_id"] != float64(r.env.ID) {
		t.Errorf("body %s", d.body)
	}
	if _, err := time.Parse(time.RFC3339, body.Timestamp); err != nil {
		t.Errorf("timestamp %q: %v", body.Timestamp, err)
	}
	ds := r.list(t, made.Webhook.ID)
	if len(ds) != 1 || ds[0].Status != store.DeliverySucceeded || ds[0].MsgID != d.header.Get("webhook-id") || len(ds[0].AttemptList) != 1 {
		t.Fatalf("deliveries %+v", ds)
	}
	a := ds[0].AttemptList[0]
	if a.StatusCode == nil || *a.StatusCode != 200 || len(a.ResponseBody) != webhook.MaxResponse || a.Error != "" || a.DurationMS == nil {
		t.Errorf("attempt %+v", a)
	}
	if at, ok, _ := r.jobs.kind.Next(ctx, r.clock.Now()); ok {
		t.Errorf("next run at %s; want none", at)
	}
}

// A receiver that answers 500 is tried again after 1, 2, 4 × the first
// delay, with the same webhook-id, until the attempts are spent.
func TestRetriesThenGivesUp(t *testing.T) {
	t.Parallel()
	r := newRig(t, webhook.Options{RetryDelay: time.Minute, MaxAttempts: 4}, false)
	ctx := context.Background()
	made := r.create(t, webhook.RunFailed)
	r.recv.answer(500)
	r.svc.Emit(ctx, webhook.Event{Type: webhook.RunFailed, EnvironmentID: r.env.ID})
	for i, wait := range []time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute} {
		r.run(t)
		ds := r.list(t, made.Webhook.ID)
		if ds[0].Status != store.DeliveryPending || ds[0].NextAttemptAt == nil || !ds[0].NextAttemptAt.Equal(r.clock.Now().Add(wait)) {
			t.Fatalf("after attempt %d: %+v; want pending, next in %s", i+1, ds[0], wait)
		}
		r.run(t) // not due yet: nothing is sent
		if n := len(r.recv.deliveries()); n != i+1 {
			t.Fatalf("%d requests after attempt %d", n, i+1)
		}
		r.clock.Advance(wait)
	}
	r.run(t)
	got := r.recv.deliveries()
	if len(got) != 4 {
		t.Fatalf("%d requests; want 4", len(got))
	}
	for _, d := range got[1:] {
		if d.header.Get("webhook-id") != got[0].header.Get("webhook-id") {
			t.Errorf("webhook-id changed between attempts")
		}
	}
	ds := r.list(t, made.Webhook.ID)
	if ds[0].Status != store.DeliveryFailed || ds[0].NextAttemptAt != nil || len(ds[0].AttemptList) != 4 ||
		ds[0].LastStatus == nil || *ds[0].LastStatus != 500 || !strings.Contains(ds[0].LastError, "500") {
		t.Fatalf("%+v; want failed after 4 attempts", ds[0])
	}
	w, _ := r.svc.Get(ctx, r.user, made.Webhook.ID)
	if w.ConsecutiveFailures != 4 || w.FailingSince == nil || !w.Enabled {
		t.Errorf("webhook %+v", w)
	}
	// A re-send starts a new schedule, with the same webhook-id.
	r.recv.answer(204)
	if _, err := r.svc.Resend(ctx, r.user, made.Webhook.ID, ds[0].ID); err != nil {
		t.Fatal(err)
	}
	r.run(t)
	got = r.recv.deliveries()
	if len(got) != 5 || got[4].header.Get("webhook-id") != got[0].header.Get("webhook-id") {
		t.Fatalf("%d requests after the re-send", len(got))
	}
	if ds := r.list(t, made.Webhook.ID); ds[0].Status != store.DeliverySucceeded || len(ds[0].AttemptList) != 5 {
		t.Errorf("%+v", ds[0])
	}
	if w, _ := r.svc.Get(ctx, r.user, made.Webhook.ID); w.ConsecutiveFailures != 0 || w.FailingSince != nil {
		t.Errorf("a success keeps the failures: %+v", w)
	}
}

// A webhook failing for DisableAfter is switched off, its creator told
// once; its deliveries wait until it is enabled again.
func TestDisabledAfterDays(t *testing.T) {
	t.Parallel()
	r := newRig(t, webhook.Options{RetryDelay: time.Hour, MaxAttempts: 2}, false)
	ctx := context.Background()
	made := r.create(t, webhook.BudgetReached)
	r.recv.answer(503)
	for day := 0; day < 4; day++ {
		r.svc.Emit(ctx, webhook.Event{Type: webhook.BudgetReached, EnvironmentID: r.env.ID})
		r.run(t)
		r.clock.Advance(24 * time.Hour)
	}
	w, _ := r.svc.Get(ctx, r.user, made.Webhook.ID)
	if w.Enabled || !strings.Contains(w.DisabledReason, "failed") {
		t.Fatalf("webhook %+v; want switched off", w)
	}
	notes := r.notes.notes[r.user.UserID]
	if len(notes) != 1 || notes[0].Kind != notify.WebhookDisabled {
		t.Fatalf("notes %+v", notes)
	}
	sent := len(r.recv.deliveries())
	r.run(t)
	if len(r.recv.deliveries()) != sent {
		t.Errorf("a switched-off webhook was sent to")
	}
	if _, err := r.svc.Ping(ctx, r.user, w.ID); store.KindOf(err) != store.KindConflict {
		t.Errorf("ping of a switched-off webhook: %v", err)
	}
	on := true
	r.recv.answer(200)
	if w, err := r.svc.Update(ctx, r.user, w.ID, webhook.Change{Enabled: &on}); err != nil || !w.Enabled || w.ConsecutiveFailures != 0 ||
		w.DisabledReason != "" {
		t.Fatalf("enable: %+v, %v", w, err)
	}
	r.run(t)
	if len(r.recv.deliveries()) == sent {
		t.Errorf("the waiting deliveries were not sent once enabled")
	}
}

// A sender that died after claiming a delivery leaves it claimed: nothing
// sends it until the claim expires (no duplicate of an attempt that may
// be under way), then it is sent, and the lost attempt is marked.
func TestClaimOutlivesACrash(t *testing.T) {
	t.Parallel()
	r := newRig(t, webhook.Options{Timeout: time.Second}, false)
	ctx := context.Background()
	made := r.create(t, webhook.KeywordsImported)
	r.svc.Emit(ctx, webhook.Event{Type: webhook.KeywordsImported, EnvironmentID: r.env.ID})
	claimed, err := r.db.ClaimWebhookDeliveries(ctx, 2*time.Minute, 10) // and then the process died
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %d, %v", len(claimed), err)
	}
	r.run(t)
	if n := len(r.recv.deliveries()); n != 0 {
		t.Fatalf("%d requests while claimed", n)
	}
	r.clock.Advance(2 * time.Minute)
	r.run(t)
	if n := len(r.recv.deliveries()); n != 1 {
		t.Fatalf("%d requests after the claim expired; want 1", n)
	}
	ds := r.list(t, made.Webhook.ID)
	if len(ds[0].AttemptList) != 2 || !strings.HasPrefix(ds[0].AttemptList[0].Error, "interrupted") || ds[0].AttemptList[0].FinishedAt != nil ||
		ds[0].Status != store.DeliverySucceeded || ds[0].Attempts != 2 {
		t.Fatalf("%+v %+v", ds[0], ds[0].AttemptList[0])
	}
}

// Housekeeping forgets finished deliveries after a month, never waiting
// ones.
func TestPruneFinishedDeliveries(t *testing.T) {
	t.Parallel()
	r := newRig(t, webhook.Options{}, false)
	ctx := context.Background()
	made := r.create(t, webhook.PostFailed)
	r.svc.Emit(ctx, webhook.Event{Type: webhook.PostFailed, EnvironmentID: r.env.ID})
	r.run(t) // succeeded
	r.recv.answer(500)
	r.svc.Emit(ctx, webhook.Event{Type: webhook.PostFailed, EnvironmentID: r.env.ID})
	r.run(t) // pending, due in 30 s
	r.clock.Advance(31 * 24 * time.Hour)
	if n, err := r.db.PruneWebhookDeliveries(ctx, r.clock.Now().AddDate(0, 0, -30)); err != nil || n != 1 {
		t.Fatalf("pruned %d, %v; want 1", n, err)
	}
	if ds := r.list(t, made.Webhook.ID); len(ds) != 1 || ds[0].Status != store.DeliveryPending {
		t.Errorf("left %+v", ds)
	}
}

func TestRulesAndScope(t *testing.T) {
	t.Parallel()
	r := newRig(t, webhook.Options{}, true)
	ctx := context.Background()
	bad := []struct {
		url    string
		events []string
		want   string
	}{
		{"ftp://hooks.example/x", []string{webhook.PostFailed}, "url: must be an http or https address"},
		{"https://hooks.example/x#frag", []string{webhook.PostFailed}, "url: must be an http or https address"},
		{"http://127.0.0.1:9/x", []string{webhook.PostFailed}, "url: address 127.0.0.1 is not allowed"},
		{"http://localhost:9/x", []string{webhook.PostFailed}, "url: localhost is not allowed"},
		{"http://169.254.169.254/x", []string{webhook.PostFailed}, "url: address 169.254.169.254 is not allowed"},
		{"https://hooks.example/x", nil, "events: name at least one"},
		{"https://hooks.example/x", []string{"webhook.ping"}, `events: "webhook.ping" is not an event`},
	}
	for _, c := range bad {
		_, err := r.svc.Create(ctx, r.user, webhook.Input{EnvironmentID: r.env.ID, URL: c.url, Events: c.events})
		if store.KindOf(err) != store.KindInvalid || !strings.HasPrefix(store.Message(err), c.want) {
			t.Errorf("%s %v: %v; want 422 %q", c.url, c.events, err, c.want)
		}
	}
	if _, err := r.svc.Create(ctx, r.user, webhook.Input{EnvironmentID: r.other.ID, URL: "https://hooks.example/x",
		Events: []string{webhook.PostFailed}}); store.KindOf(err) != store.KindNotFound {
		t.Errorf("create in an environment not granted: %v", err)
	}
	made, err := r.svc.Create(ctx, store.Everything, webhook.Input{EnvironmentID: r.other.ID, URL: "https://hooks.example/x",
		Events: []string{webhook.PostFailed, webhook.PostFailed}})
	if err != nil || len(made.Webhook.Events) != 1 {
		t.Fatalf("%+v, %v", made, err)
	}
	if _, err := r.svc.Get(ctx, r.user, made.Webhook.ID); store.KindOf(err) != store.KindNotFound {
		t.Errorf("get of another environment's webhook: %v", err)
	}
	if _, _, err := r.svc.Deliveries(ctx, r.user, made.Webhook.ID, store.Page{Page: 1, PerPage: 5}); store.KindOf(err) != store.KindNotFound {
		t.Errorf("deliveries of another environment's webhook: %v", err)
	}
	rot, err := r.svc.Rotate(ctx, store.Everything, made.Webhook.ID)
	if err != nil || rot.Secret == made.Secret || rot.Webhook.SecretPrefix == made.Webhook.SecretPrefix {
		t.Errorf("rotate: %+v, %v", rot, err)
	}
}
