// Package server is copydesk's HTTP API: the Gin router, its middleware, and
// one file of thin handlers per API group. Rules live in services (such as
// server/auth) and SQL in store/.
package server

import (
	"log/slog"
	"net/http"
	"regexp"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/copydesk/copydesk/backup"
	"github.com/copydesk/copydesk/server/agent"
	"github.com/copydesk/copydesk/server/aisetting"
	"github.com/copydesk/copydesk/server/analytics"
	"github.com/copydesk/copydesk/server/astropost"
	"github.com/copydesk/copydesk/server/auth"
	"github.com/copydesk/copydesk/server/autopilot"
	"github.com/copydesk/copydesk/server/chat"
	"github.com/copydesk/copydesk/server/cie"
	"github.com/copydesk/copydesk/server/cms"
	"github.com/copydesk/copydesk/server/credential"
	"github.com/copydesk/copydesk/server/engine"
	"github.com/copydesk/copydesk/server/environment"
	"github.com/copydesk/copydesk/server/feed"
	"github.com/copydesk/copydesk/server/jobs"
	"github.com/copydesk/copydesk/server/keyring"
	"github.com/copydesk/copydesk/server/live"
	"github.com/copydesk/copydesk/server/message"
	"github.com/copydesk/copydesk/server/metrics"
	"github.com/copydesk/copydesk/server/notify"
	"github.com/copydesk/copydesk/server/posttarget"
	"github.com/copydesk/copydesk/server/scout"
	"github.com/copydesk/copydesk/server/searchphrase"
	"github.com/copydesk/copydesk/server/seo"
	"github.com/copydesk/copydesk/server/setting"
	"github.com/copydesk/copydesk/server/strategy"
	"github.com/copydesk/copydesk/server/stream"
	"github.com/copydesk/copydesk/server/webhook"
	"github.com/copydesk/copydesk/server/websource"
	"github.com/copydesk/copydesk/server/wppost"
	"github.com/copydesk/copydesk/store"
)

// Server holds the router and what the handlers call.
type Server struct {
	db      *store.DB
	auth    *auth.Service
	backups *backup.Manager
	notify  *notify.Notifier
	events  *stream.Broker
	engine  *engine.Engine
	jobs    *jobs.Runner
	log     *slog.Logger
	metrics *metrics.Registry // nil: metrics are off

	analytics *analytics.Service
	messages  *message.Service
	// The groups' services, built in New from the above.
	environments  *environment.Service
	credentials   *credential.Service
	aiSettings    *aisetting.Service
	settings      *setting.Service
	agents        *agent.Service
	cms           *cms.Service
	wpPosts       *wppost.Service
	astroPosts    *astropost.Service
	posts         *posttarget.Service
	cie           *cie.Service
	chat          *chat.Service
	live          *live.Service
	seo           *seo.Service
	searchPhrases *searchphrase.Service
	webSources    *websource.Service
	webhooks      *webhook.Service
	autopilot     *autopilot.Service
	scout         *scout.Service
	strategies    *strategy.Service

	router *gin.Engine
	routes []*Route
	opts   Options
}

// Options tunes the HTTP layer.
type Options struct {
	// MaxBodyBytes caps request bodies of routes that do not set their own.
	MaxBodyBytes int64
	// TrustedProxies are the reverse proxies whose X-Forwarded-For is
	// believed for a session's IP; none by default.
	TrustedProxies []string
	// Version is reported by /api/health and the OpenAPI document.
	Version string
	// MaxUploadBytes caps backup uploads; DefaultMaxUpload when 0.
	MaxUploadBytes int64
	// SpoolDir is where exports are rendered before they are sent (App:
	// DATA_DIR/tmp); the system's temporary folder when empty.
	SpoolDir string
	// AstroRoots are the folders Astro projects may live under (serve
	// --astro-roots); none turns Astro projects off. DataDir is always
	// refused as one.
	AstroRoots []string
	DataDir    string
	// MaxQueued bounds the scout runs, and the strategy builds, one
	// environment may have queued or running (serve --max-queued); 3 when 0.
	MaxQueued int
	// OnUndeclaredEvent: see Config.OnUndeclaredEvent.
	OnUndeclaredEvent func(route, event string)
	// MetricsToken, with Deps.Metrics, serves GET /metrics to this bearer
	// token (serve --metrics-token); empty: not on this router.
	MetricsToken string
}

// DefaultMaxUpload is the largest backup upload accepted.
const DefaultMaxUpload = 4 << 30

// Deps are the services the handlers call.
type Deps struct {
	DB      *store.DB
	Auth    *auth.Service
	Backups *backup.Manager
	Notify  *notify.Notifier
	Events  *stream.Broker // the event streams' broker
	Engine  *engine.Engine
	Jobs    *jobs.Runner
	Keys    *keyring.Keyring
	Log     *slog.Logger
	// WordPress tunes the calls to WordPress sites; its HTTP client is the
	// outbound one every remote call shares.
	WordPress wppost.Options
	// Feeds fetches web sources; nil: one over outbound.Default().
	Feeds *feed.Fetcher
	// Webhooks sends webhook deliveries (HTTP: nil is outbound.Default())
	// and says whether address literals of private networks are refused
	// when a webhook is saved.
	Webhooks WebhookOptions
	// Metrics, when set, counts requests and event streams (serve
	// --metrics); nil: nothing is measured.
	Metrics *metrics.Registry
}

// WebhookOptions are the server's side of webhook deliveries.
type WebhookOptions struct {
	HTTP          *http.Client
	RefusePrivate bool
	Options       webhook.Options
}

// DefaultMaxBody is the body limit of JSON endpoints.
const DefaultMaxBody = 1 << 20

// DefaultMaxPublicBody is the body limit of routes that need no token
// (sign-in, registration): nobody unauthenticated gets more buffered.
const DefaultMaxPublicBody = 16 << 10

// New builds the router with every API group.
func New(d Deps, opts Options) (*Server, error) {
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBody
	}
	if opts.MaxUploadBytes <= 0 {
		opts.MaxUploadBytes = DefaultMaxUpload
	}
	gin.SetMode(gin.ReleaseMode)
	e := gin.New()
	e.HandleMethodNotAllowed = true
	e.RedirectTrailingSlash = false
	e.RedirectFixedPath = false
	e.ContextWithFallback = true
	if err := e.SetTrustedProxies(opts.TrustedProxies); err != nil {
		return nil, err
	}
	s := &Server{db: d.DB, auth: d.Auth, backups: d.Backups, notify: d.Notify, events: d.Events, engine: d.Engine, jobs: d.Jobs,
		log: d.Log, metrics: d.Metrics, router: e, opts: opts}
	// The store's clock is read at each call: tests move it after New.
	s.analytics = analytics.New(d.DB, func() time.Time { return d.DB.Now() })
	s.messages = message.New(d.DB, d.Notify)
	s.environments = environment.New(d.DB).ConfineAstro(environment.AstroPlaces{Roots: opts.AstroRoots, DataDir: opts.DataDir})
	s.webhooks = webhook.New(webhook.Deps{Store: d.DB, Environments: s.environments, Keys: d.Keys, Jobs: d.Jobs, Notify: d.Notify,
		HTTP: d.Webhooks.HTTP, RefusePrivate: d.Webhooks.RefusePrivate, Log: d.Log, Now: func() time.Time { return d.DB.Now() },
		Options: d.Webhooks.Options})
	s.credentials = credential.New(d.DB, s.environments, d.Keys, d.Engine)
	s.aiSettings = aisetting.New(d.DB, s.environments, s.credentials, d.Engine)
	s.settings = setting.New(d.DB)
	s.agents = agent.New(agent.Deps{Store: d.DB, Environments: s.environments, Credentials: s.credentials, Engine: d.Engine,
		Jobs: d.Jobs, Notify: d.Notify, Events: d.Events, Hooks: s.webhooks, Log: d.Log})
	s.cms = cms.New(d.DB, s.environments)
	s.seo = seo.New(d.DB, s.environments)
	s.seo.EmitTo(s.webhooks)
	if d.Engine != nil {
		d.Engine.EmitTo(s.webhooks)
	}
	s.cie = cie.New(cie.Deps{Store: d.DB, Environments: s.environments, Engine: d.Engine, Jobs: d.Jobs, Notify: d.Notify, Events: d.Events,
		Hooks: s.webhooks, Log: d.Log})
	s.chat = chat.New(chat.Deps{Store: d.DB, Environments: s.environments, Engine: d.Engine, Jobs: d.Jobs, Events: d.Events, Log: d.Log})
	s.live = live.New(live.Deps{Store: d.DB, Environments: s.environments, Engine: d.Engine, Jobs: d.Jobs, Events: d.Events, Log: d.Log})
	s.wpPosts = wppost.New(wppost.Deps{Store: d.DB, Environments: s.environments, Credentials: credential.NewOpener(d.DB, d.Keys),
		Jobs: d.Jobs, Notify: d.Notify, Hooks: s.webhooks, Options: d.WordPress})
	s.searchPhrases = searchphrase.New(searchphrase.Deps{Store: d.DB, Environments: s.environments, Engine: d.Engine, Jobs: d.Jobs,
		Notify: d.Notify, Log: d.Log, Now: func() time.Time { return d.DB.Now() }})
	if d.Feeds == nil {
		d.Feeds = feed.New(nil, feed.Options{})
	}
	s.webSources = websource.New(websource.Deps{Store: d.DB, Environments: s.environments, Fetcher: d.Feeds, Jobs: d.Jobs, Notify: d.Notify, Log: d.Log,
		Now: func() time.Time { return d.DB.Now() }})
	s.scout = scout.New(scout.Deps{Store: d.DB, Environments: s.environments, Engine: d.Engine, Jobs: d.Jobs, Notify: d.Notify,
		Hooks: s.webhooks, Log: d.Log,
		MaxQueued: opts.MaxQueued})
	s.strategies = strategy.New(strategy.Deps{Store: d.DB, Campaigns: s.seo, Environments: s.environments, Engine: d.Engine, Jobs: d.Jobs,
		Notify: d.Notify, Log: d.Log, Now: func() time.Time { return d.DB.Now() }, MaxQueued: opts.MaxQueued})
	if s.metrics != nil {
		e.Use(s.measure)
	}
	e.Use(s.recoverPanics, s.logRequests, securityHeaders, boundWrites, omitHeadBody)
	s.astroPosts = astropost.New(d.DB, s.environments, func() time.Time { return d.DB.Now() }, d.Log)
	s.astroPosts.EmitTo(s.webhooks)
	s.posts = posttarget.New(posttarget.Sources{Runs: s.agents, Generations: s.cie, Lives: s.live}, s.wpPosts.Target(), s.astroPosts.Target())
	s.autopilot = autopilot.New(autopilot.Deps{Store: d.DB, Environments: s.environments, Generator: s.cie, Posts: s.posts, Jobs: d.Jobs, Notify: d.Notify, Events: d.Events,
		Hooks: s.webhooks, Now: func() time.Time { return d.DB.Now() }, Log: d.Log})
	e.NoRoute(func(c *gin.Context) {
		abort(c, http.StatusNotFound, "no route for "+c.Request.Method+" "+c.Request.URL.Path)
	})
	e.NoMethod(func(c *gin.Context) {
		abort(c, http.StatusMethodNotAllowed, "method "+c.Request.Method+" is not allowed on "+c.Request.URL.Path)
	})

	s.registerDocsRoutes()
	s.registerMetricsRoute()
	s.registerAuthRoutes()
	s.registerEnvironmentRoutes()
	s.registerSettingsRoutes()
	s.registerBackupRoutes()
	s.registerNotificationRoutes()
	s.registerMessageRoutes()
	s.registerConfigurationRoutes()
	s.registerAISettingsRoutes()
	s.registerTokenAnalyticsRoutes()
	s.registerAgentRoutes()
	s.registerCMSRoutes()
	s.registerWordPressPostRoutes()
	s.registerAstroPostRoutes()
	s.registerSaveAsPostRoutes()
	s.registerCIERoutes()
	s.registerOpenChatRoutes()
	s.registerLiveAgentRoutes()
	s.registerSEOKeywordRoutes()
	s.registerSEOCampaignRoutes()
	s.registerSearchPhraseRoutes()
	s.registerWebSourceRoutes()
	s.registerWebhookRoutes()
	s.registerAutopilotRoutes()
	s.registerScoutRoutes()
	s.registerStrategyRoutes()
	return s, nil
}

// Handler is the HTTP handler of the API.
func (s *Server) Handler() http.Handler { return s.router }

// Routes lists every documented route.
func (s *Server) Routes() []*Route { return s.routes }

// Access says who may call a route.
type Access struct {
	Public  bool       // no token needed
	MinRole store.Role // lowest role allowed, when not public
	// Account: the route manages an account (API tokens, password, e-mail,
	// two-factor authentication, sessions), users, or restores a backup.
	// Only a caller signed in with a password may use it; an API token is
	// refused with 403 (auth.Principal.Allows has the rules of tokens).
	Account bool
}

var (
	public     = Access{Public: true}
	signedIn   = Access{MinRole: store.RoleViewer}
	editorOnly = Access{MinRole: store.RoleEditor}
	adminOnly  = Access{MinRole: store.RoleAdmin}
	superOnly  = Access{MinRole: store.RoleSuperAdmin}
	// The Account forms of signedIn and adminOnly.
	ownAccount  = Access{MinRole: store.RoleViewer, Account: true}
	userAccount = Access{MinRole: store.RoleAdmin, Account: true}
)

// Route is one endpoint with everything the OpenAPI document says of it.
// Registering through handle keeps the router, the role checks and the
// document in step, and holds the database for every request (see handle).
type Route struct {
	Method  string
	Path    string // OpenAPI form: /api/environments/{id}
	Tag     string
	Summary string
	Notes   string
	Access  Access

	Body      any    // JSON request body type, or nil
	Multipart string // name of the file field of a multipart body
	Form      any    // with Multipart: struct with `form` tags, the body's other fields
	Query     any    // struct with `form` tags, or nil
	Data      any    // type of "data" in the success envelope, or nil
	Bare      any    // the success body when not enveloped (login, refresh)
	Binary    string // content type of a binary success body ("a, b" for one of several)
	Status    int    // success status; 200 when 0
	Errors    []int  // statuses beyond those implied by Access, Body and path
	MaxBody   int64  // body limit; DefaultMaxBody (DefaultMaxPublicBody when public) when 0, the handler's own when < 0
	List      bool   // Data is the item type of a paginated list
	// EventStream documents a 200 text/event-stream answer beside Status
	// (execute with stream true).
	EventStream bool
	// StreamWhen says when the EventStream answer comes ("stream is true"
	// when empty).
	StreamWhen string
	// Progress marks an EventStream answer that is one request's progress
	// (a restore's stages): its events have no id to resume with and no
	// heartbeat comes between them.
	Progress bool
	// Accepted documents a 202 with the same body beside Status (publish
	// with queue true).
	Accepted bool
	// Events are the kinds of event of the route's Server-Sent Events
	// answer (Binary "text/event-stream", or EventStream), documented as
	// x-events on that content (events.go). Every such route names them.
	Events []Event
}

// handle registers a route and its documentation.
//
// Every route runs through admit: the caller is checked on the headers
// before any body byte is read, then the body is read, then the database
// is held for the handler (a restore waits for the requests in flight and
// holds new ones), until the answer's first byte is written. A handler
// that streams or waits on something other than the database (event
// streams, backup downloads and uploads, the restore itself) lets go
// first, through letGo or serve, and uses the database after that only
// through held.
func (s *Server) handle(r Route, h gin.HandlerFunc) {
	if r.Status == 0 {
		r.Status = http.StatusOK
	}
	if r.Access.Public && r.MaxBody == 0 {
		r.MaxBody = DefaultMaxPublicBody
	}
	var chain []gin.HandlerFunc
	if r.MaxBody >= 0 { // < 0: the handler enforces a limit of its own
		chain = append(chain, s.limitBody(r.MaxBody))
	}
	chain = append(chain, s.admit(r.Access, r.MaxBody >= 0))
	chain = append(chain, conventions(r)...)
	if check := s.opts.OnUndeclaredEvent; check != nil && len(r.Events) > 0 {
		chain = append(chain, checkEvents(r, check))
	}
	chain = append(chain, h)
	s.router.Handle(r.Method, ginPath(r.Path), chain...)
	if r.Method == http.MethodGet { // uptime monitors ask with HEAD
		s.router.Handle(http.MethodHead, ginPath(r.Path), chain...) // without a body: omitHeadBody
	}
	s.routes = append(s.routes, &r)
}

// ginPath turns {id} into :id.
func ginPath(p string) string { return pathParam.ReplaceAllString(p, ":$1") }

var pathParam = regexp.MustCompile(`\{(\w+)\}`)

// EngineRoutes lists what the router actually serves, for the test that
// compares it with the OpenAPI document.
func (s *Server) EngineRoutes() gin.RoutesInfo { return s.router.Routes() }
