// Package webhook holds the rules of signed webhooks (/api/webhooks):
// an environment's receivers of events, signed as the Standard Webhooks
// specification says, persisted before they are sent and retried with an
// exponential back-off, surviving restarts.
//
// Who does what: editors and up manage the webhooks of their environments
// (the routes say so); any other environment's webhook is not found. The
// secret is shown once, when made (create, rotate).
//
// How an event travels: a service calls Emit (the Emitter it was given);
// Emit inserts one delivery row per webhook that wants the event, due
// now, and replans the recurring job kind DeliverJob, whose handler
// (deliver.go) claims due deliveries, sends them with a short timeout,
// and records every attempt.
package webhook

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/copydesk/copydesk/server/environment"
	"github.com/copydesk/copydesk/server/jobs"
	"github.com/copydesk/copydesk/server/notify"
	"github.com/copydesk/copydesk/server/outbound"
	"github.com/copydesk/copydesk/server/valid"
	"github.com/copydesk/copydesk/store"
)

// Store is what the service needs of the store.
type Store interface {
	WebhookByID(ctx context.Context, id int64) (*store.Webhook, error)
	ListWebhooks(ctx context.Context, f store.WebhookFilter) ([]*store.Webhook, int, error)
	CreateWebhook(ctx context.Context, n store.NewWebhook) (*store.Webhook, error)
	UpdateWebhook(ctx context.Context, id int64, up store.WebhookUpdate) (*store.Webhook, error)
	DeleteWebhook(ctx context.Context, id int64) error
	CreateWebhookDeliveries(ctx context.Context, e store.NewWebhookEvent) ([]*store.WebhookDelivery, error)
	WebhookDeliveryByID(ctx context.Context, id int64) (*store.WebhookDelivery, error)
	ListWebhookDeliveries(ctx context.Context, webhookID int64, p store.Page) ([]*store.WebhookDelivery, int, error)
	ResendWebhookDelivery(ctx context.Context, id int64) (*store.WebhookDelivery, error)
	NextWebhookDelivery(ctx context.Context) (*time.Time, error)
	ClaimWebhookDeliveries(ctx context.Context, hold time.Duration, limit int) ([]*store.ClaimedDelivery, error)
	RecordWebhookAttempt(ctx context.Context, deliveryID int64, r store.WebhookAttemptResult) (*store.WebhookAttemptRecord, error)
}

// Sealer seals and opens secrets for their rows (server/keyring).
type Sealer interface {
	Seal(plaintext []byte, aad string) ([]byte, error)
	Open(sealed []byte, aad string) ([]byte, error)
}

// DeliverJob is the recurring job kind that sends the due deliveries. Its
// schedule is the earliest due delivery of an enabled webhook.
const DeliverJob = "webhooks.deliver"

// Defaults of Options.
const (
	DefaultRetryDelay   = 30 * time.Second
	DefaultMaxDelay     = 8 * time.Hour
	DefaultMaxAttempts  = 13
	DefaultTimeout      = 10 * time.Second
	DefaultDisableAfter = 72 * time.Hour
)

// Options tune the deliveries.
type Options struct {
	// RetryDelay is the wait after a first failed attempt (serve
	// --webhook-retry-delay); each further failure doubles it, up to
	// MaxDelay. With the defaults (30 s, 8 h, 13 attempts) the attempts
	// span about a day: 30 s, 1, 2, 4, ... 256 minutes, then 8 h, 8 h.
	RetryDelay   time.Duration
	MaxDelay     time.Duration
	MaxAttempts  int
	Timeout      time.Duration // one attempt, connection to answer
	DisableAfter time.Duration // failing this long switches a webhook off
}

// Deps are what the service works with.
type Deps struct {
	Store        Store
	Environments environment.Getter
	Keys         Sealer
	Jobs         jobs.Scheduled
	Notify       notify.ToUser // nil: nobody is told
	// HTTP sends the deliveries; it must pass the outbound guard and
	// follow no redirect (see server/app.go).
	HTTP *http.Client
	// RefusePrivate refuses, when saved, webhook URLs whose host is a
	// private or loopback address literal (the client refuses every such
	// address when it sends, whatever the name).
	RefusePrivate bool
	Log           *slog.Logger
	Now           func() time.Time // the store's clock
	Options       Options
}

// Service implements the webhook rules and deliveries.
type Service struct {
	db            Store
	envs          environment.Getter
	keys          Sealer
	jobs          jobs.Scheduled
	notify        notify.ToUser
	http          *http.Client
	refusePrivate bool
	log           *slog.Logger
	plan          jobs.Plan // DeliverJob, replanned after a change
	now           func() time.Time
	opt           Options
}

// New returns the service and registers DeliverJob with d.Jobs.
func New(d Deps) *Service {
	s := &Service{db: d.Store, envs: d.Environments, keys: d.Keys, jobs: d.Jobs, notify: d.Notify, http: d.HTTP,
		refusePrivate: d.RefusePrivate, log: d.Log, now: d.Now, opt: d.Options}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.plan = jobs.Plan{Jobs: s.jobs, Kind: DeliverJob, Log: s.log, What: "webhooks: plan the next delivery"}
	if s.now == nil {
		s.now = time.Now
	}
	if s.http == nil {
		s.http = outbound.Default()
	}
	if s.opt.RetryDelay <= 0 {
		s.opt.RetryDelay = DefaultRetryDelay
	}
	if s.opt.MaxDelay <= 0 {
		s.opt.MaxDelay = DefaultMaxDelay
	}
	if s.opt.MaxAttempts <= 0 {
		s.opt.MaxAttempts = DefaultMaxAttempts
	}
	if s.opt.Timeout <= 0 {
		s.opt.Timeout = DefaultTimeout
	}
	if s.opt.DisableAfter <= 0 {
		s.opt.DisableAfter = DefaultDisableAfter
	}
	s.jobs.Register(DeliverJob, jobs.Kind{Handle: s.deliverDue, Next: s.next})
	return s
}

// Bounds of the fields.
const (
	MaxURL         = 2048
	MaxDescription = 500
	SecretPrefix   = "whsec_"
	secretBytes    = 32
	prefixLen      = len(SecretPrefix) + 4
)

// Input is a webhook to create.
type Input struct {
	EnvironmentID int64
	URL           string
	Events        []string
	Description   string
	Enabled       bool
}

// Change holds the fields to change; nil leaves one alone.
type Change struct {
	URL         *string
	Events      *[]string
	Description *string
	Enabled     *bool
}

// Created is a webhook with its secret, shown this once.
type Created struct {
	Webhook *store.Webhook
	Secret  string
}

// CheckURL reads a webhook's address: http or https, with a host, without
// credentials or fragment, at most MaxURL characters. An address literal
// the outbound guard refuses is refused when saved; a name is judged
// after resolution at every send (DNS may change).
func (s *Service) CheckURL(raw string) (string, error) {
	u, err := valid.CallURL("url", raw, MaxURL, s.refusePrivate)
	if err != nil {
		return "", err
	}
	if u.Fragment != "" {
		return "", store.Invalid("url: must be an http or https address without a fragment")
	}
	host := u.Hostname()
	if s.refusePrivate && (strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost")) {
		return "", store.Invalid("url: localhost is not allowed: private and loopback addresses are refused (--web-sources-private allows them)")
	}
	return u.String(), nil
}

func checkEvents(events []string) ([]string, error) {
	if len(events) == 0 {
		return nil, store.Invalid("events: name at least one of %s", strings.Join(Events, ", "))
	}
	out := []string{}
	for _, e := range events {
		if !slices.Contains(Events, e) {
			return nil, store.Invalid("events: %q is not an event; the events are %s", e, strings.Join(Events, ", "))
		}
		if !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	return out, nil
}

func checkDescription(d string) (string, error) {
	d = strings.TrimSpace(d)
	if err := valid.Line("description", d); err != nil && d != "" {
		return "", err
	}
	return d, valid.MaxLen("description", d, MaxDescription)
}

// newSecret makes a signing secret: SecretPrefix and the base64 of 32
// random bytes, which are the HMAC key.
func newSecret() (string, error) {
	b := make([]byte, secretBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("webhook: secret: %w", err)
	}
	return SecretPrefix + base64.StdEncoding.EncodeToString(b), nil
}

// List lists the webhooks of the environments the scope sees (of one,
// when envID is set: one the caller does not see is 404).
func (s *Service) List(ctx context.Context, sc store.Scope, envID *int64, p store.Page) ([]*store.Webhook, int, error) {
	if envID != nil {
		if _, err := s.envs.Get(ctx, sc, *envID); err != nil {
			return nil, 0, err
		}
	}
	return s.db.ListWebhooks(ctx, store.WebhookFilter{Scope: sc, EnvironmentID: envID, Page: p})
}

// Get returns a webhook the scope sees.
func (s *Service) Get(ctx context.Context, sc store.Scope, id int64) (*store.Webhook, error) {
	return store.Seen(ctx, id, s.db.WebhookByID, func(w *store.Webhook) bool { return sc.Sees(w.EnvironmentID) }, "webhook")
}

// Create makes a webhook in an environment the scope sees, with a new
// secret.
func (s *Service) Create(ctx context.Context, sc store.Scope, in Input) (*Created, error) {
	if _, err := s.envs.Get(ctx, sc, in.EnvironmentID); err != nil {
		return nil, err
	}
	addr, err := s.CheckURL(in.URL)
	if err != nil {
		return nil, err
	}
	events, err := checkEvents(in.Events)
	if err != nil {
		return nil, err
	}
	desc, err := checkDescription(in.Description)
	if err != nil {
		return nil, err
	}
	secret, err := newSecret()
	if err != nil {
		return nil, err
	}
	n := store.NewWebhook{EnvironmentID: in.EnvironmentID, URL: addr, Description: desc, Events: events, Enabled: in.Enabled,
		SecretPrefix: secret[:prefixLen],
		Seal:         func(id int64) ([]byte, error) { return s.keys.Seal([]byte(secret), store.WebhookAAD(id)) }}
	if sc.UserID != 0 {
		n.CreatedBy = &sc.UserID
	}
	w, err := s.db.CreateWebhook(ctx, n)
	if err != nil {
		return nil, err
	}
	return &Created{Webhook: w, Secret: secret}, nil
}

// Update changes a webhook the scope sees. Enabling one forgets its
// failures; deliveries it kept waiting while off are sent.
func (s *Service) Update(ctx context.Context, sc store.Scope, id int64, ch Change) (*store.Webhook, error) {
	if _, err := s.Get(ctx, sc, id); err != nil {
		return nil, err
	}
	up := store.WebhookUpdate{Enabled: ch.Enabled}
	if ch.URL != nil {
		addr, err := s.CheckURL(*ch.URL)
		if err != nil {
			return nil, err
		}
		up.URL = &addr
	}
	if ch.Events != nil {
		events, err := checkEvents(*ch.Events)
		if err != nil {
			return nil, err
		}
		up.Events = &events
	}
	if ch.Description != nil {
		desc, err := checkDescription(*ch.Description)
		if err != nil {
			return nil, err
		}
		up.Description = &desc
	}
	w, err := s.db.UpdateWebhook(ctx, id, up)
	if err != nil {
		return nil, err
	}
	if ch.Enabled != nil {
		s.plan.Now(ctx)
	}
	return w, nil
}

// Delete deletes a webhook the scope sees, with its deliveries.
func (s *Service) Delete(ctx context.Context, sc store.Scope, id int64) error {
	if _, err := s.Get(ctx, sc, id); err != nil {
		return err
	}
	return s.db.DeleteWebhook(ctx, id)
}

// Rotate gives a webhook the scope sees a new secret, shown this once;
// the old one signs nothing from now on (an attempt already under way
// keeps it).
func (s *Service) Rotate(ctx context.Context, sc store.Scope, id int64) (*Created, error) {
	if _, err := s.Get(ctx, sc, id); err != nil {
		return nil, err
	}
	secret, err := newSecret()
	if err != nil {
		return nil, err
	}
	sealed, err := s.keys.Seal([]byte(secret), store.WebhookAAD(id))
	if err != nil {
		return nil, err
	}
	w, err := s.db.UpdateWebhook(ctx, id, store.WebhookUpdate{Sealed: sealed, SecretPrefix: secret[:prefixLen]})
	if err != nil {
		return nil, err
	}
	return &Created{Webhook: w, Secret: secret}, nil
}

// Ping queues the test event webhook.ping for a webhook the scope sees,
// due now; a webhook switched off is a conflict.
func (s *Service) Ping(ctx context.Context, sc store.Scope, id int64) (*store.WebhookDelivery, error) {
	w, err := s.enabled(ctx, sc, id)
	if err != nil {
		return nil, err
	}
	ds, err := s.emit(ctx, Event{Type: Ping, EnvironmentID: w.EnvironmentID, Data: map[string]any{"webhook_id": w.ID}}, &w.ID)
	if err != nil {
		return nil, err
	}
	if len(ds) != 1 {
		return nil, store.NotFound("webhook not found") // deleted meanwhile
	}
	return ds[0], nil
}

func (s *Service) enabled(ctx context.Context, sc store.Scope, id int64) (*store.Webhook, error) {
	w, err := s.Get(ctx, sc, id)
	if err != nil {
		return nil, err
	}
	if !w.Enabled {
		return nil, store.Conflict("this webhook is switched off: enable it first (PUT with enabled true)")
	}
	return w, nil
}

// Deliveries lists a page of a webhook's deliveries with their attempts.
func (s *Service) Deliveries(ctx context.Context, sc store.Scope, id int64, p store.Page) ([]*store.WebhookDelivery, int, error) {
	if _, err := s.Get(ctx, sc, id); err != nil {
		return nil, 0, err
	}
	return s.db.ListWebhookDeliveries(ctx, id, p)
}

// Resend sends one of a webhook's deliveries again, now, with the same
// webhook-id and body and a new schedule of retries.
func (s *Service) Resend(ctx context.Context, sc store.Scope, id, deliveryID int64) (*store.WebhookDelivery, error) {
	if _, err := s.enabled(ctx, sc, id); err != nil {
		return nil, err
	}
	d, err := s.db.WebhookDeliveryByID(ctx, deliveryID)
	if err != nil {
		return nil, err
	}
	if d.WebhookID != id {
		return nil, store.NotFound("webhook delivery not found")
	}
	d, err = s.db.ResendWebhookDelivery(ctx, deliveryID)
	if err != nil {
		return nil, err
	}
	s.plan.Now(ctx)
	return d, nil
}
