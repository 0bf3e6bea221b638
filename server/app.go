package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/copydesk/copydesk/backup"
	"github.com/copydesk/copydesk/server/auth"
	"github.com/copydesk/copydesk/server/engine"
	"github.com/copydesk/copydesk/server/feed"
	"github.com/copydesk/copydesk/server/jobs"
	"github.com/copydesk/copydesk/server/keyring"
	"github.com/copydesk/copydesk/server/metrics"
	"github.com/copydesk/copydesk/server/notify"
	"github.com/copydesk/copydesk/server/outbound"
	"github.com/copydesk/copydesk/server/stream"
	"github.com/copydesk/copydesk/server/webhook"
	"github.com/copydesk/copydesk/server/wppost"
	"github.com/copydesk/copydesk/store"
)

// Config is everything `copydesk serve` is told, from flags and environment
// variables, built once and passed down.
type Config struct {
	HTTPAddr string
	// Listener, when set, is the bound HTTPAddr (Listen): serve binds before
	// it creates anything, so a port in use leaves nothing behind.
	Listener net.Listener
	DataDir  string
	// Database, when set, is a PostgreSQL database (postgres://...) used
	// instead of DATA_DIR/copydesk.db; the data directory still holds the
	// rest (secret.key unless SecretKey, backups, the lock).
	Database         string
	SecretKey        string // COPYDESK_SECRET_KEY; empty: DATA_DIR/secret.key
	TokenTTL         time.Duration
	SessionTTL       time.Duration
	LicensePublicKey string // base64 or PEM; empty: the built-in vendor key
	TrustedProxies   []string
	Version          string
	// ShutdownTimeout bounds how long in-flight requests may finish.
	ShutdownTimeout time.Duration
	// Hasher, when set, replaces the default password hashing cost (tests).
	Hasher *auth.Hasher
	// Throttle, when set, replaces the default failed-login policy (tests).
	Throttle *auth.ThrottlePolicy
	// Hashes, when set, replaces the bound on password hashes at once that
	// is sized from the machine (tests).
	Hashes *auth.HashLimit
	// MaxUploadBytes caps backup uploads.
	MaxUploadBytes int64
	// NoScheduler keeps scheduled backups from running (tests drive them):
	// their job kind is not registered.
	NoScheduler bool
	// StreamHeartbeat is the heartbeat of event streams; 15 s when 0.
	StreamHeartbeat time.Duration
	// Workers bounds how many background jobs (agent runs, ...) run at
	// once; 2 when 0.
	Workers int
	// JobLease is how long a claimed job stays this instance's without a
	// renewal (serve --lease); store.DefaultJobLease when 0.
	JobLease time.Duration
	// JobPoll is how often an idle job worker looks for due jobs (and, on
	// PostgreSQL, for expired leases); 1 s when 0.
	JobPoll time.Duration
	// JobBackoff, when set, replaces the retry backoff of jobs (tests).
	JobBackoff func(attempt int) time.Duration
	// ProviderRetries is how often a failed provider call is retried
	// (429, 5xx, network); 2 when 0, none when negative.
	ProviderRetries int
	// ProviderTimeout bounds one provider attempt; 2 minutes when 0.
	ProviderTimeout time.Duration
	// OnUsageRecordError is called when a call's usage event cannot be
	// stored (engine.Options.OnRecordError): tests fail on it; the server
	// logs it as an error.
	OnUsageRecordError func(error)
	// OnUndeclaredEvent, when set, is called with a stream's route and an
	// event it sent that its Route.Events do not name (tests fail on it,
	// so the document's x-events stay true); unset, nothing is checked.
	OnUndeclaredEvent func(route, event string)
	// RefuseOutboundPrivate keeps every outbound call (providers,
	// WordPress, SERP, web sources, credential tests) from private, loopback and other
	// non-public addresses (`serve --outbound-private=false`). Link-local
	// and cloud metadata addresses are refused whatever it says.
	RefuseOutboundPrivate bool
	// AllowWebSourcesPrivate lets web sources (and featured images, the
	// same kind of address) reach private and loopback addresses too (`serve --web-sources-private`). Off by default,
	// unlike the other outbound calls: a provider's base URL or a
	// WordPress site is set by an admin, but a web source is any
	// editor's address, which the server fetches and then shows the text
	// of, so it would let an editor read pages of the server's own
	// network. RefuseOutboundPrivate refuses them whatever this says.
	AllowWebSourcesPrivate bool
	// AstroRoots are the folders Astro projects may live under (`serve
	// --astro-roots`). None by default: an environment's Astro project
	// is a folder the server writes and deletes files in, which an admin
	// names, so the operator says where first. The data directory is
	// always refused.
	AstroRoots []string
	// MaxQueued bounds the scout runs and strategy builds one environment
	// may have queued or running (`serve --max-queued`); 3 when 0.
	MaxQueued int
	// WordPressTimeout bounds one call to a WordPress site; 30 s when 0.
	WordPressTimeout time.Duration
	// WordPressBackoff, when set, replaces the wait between retries of
	// WordPress calls (tests).
	WordPressBackoff func(n int) time.Duration
	// WebhookRetryDelay is the wait after a webhook delivery's first
	// failed attempt (`serve --webhook-retry-delay`), doubled after each
	// further one; webhook.DefaultRetryDelay (30 s) when 0.
	WebhookRetryDelay time.Duration
	// WebhookTimeout bounds one webhook attempt; webhook.DefaultTimeout
	// (10 s) when 0 (tests).
	WebhookTimeout time.Duration
	// Metrics turns the Prometheus metrics on (`serve --metrics`,
	// docs/metrics.md); off, nothing is measured and /metrics is a 404.
	Metrics bool
	// MetricsToken is the bearer token of GET /metrics on the API's
	// listener (`--metrics-token`); empty: not served there.
	MetricsToken string
	// MetricsListener, when set, is the bound `--metrics-http` address:
	// Run serves /metrics there without a token, and stops it with the
	// server.
	MetricsListener net.Listener
}

// DBFile is the database file inside the data directory.
const DBFile = "copydesk.db"

// App is a running copydesk: database, services and HTTP server. The CLI
// and the end-to-end tests build it the same way.
type App struct {
	Config   Config
	DB       *store.DB
	Keys     *keyring.Keyring
	Auth     *auth.Service
	Backups  *backup.Manager
	Notify   *notify.Notifier
	Events   *stream.Broker
	Engine   *engine.Engine
	Jobs     *jobs.Runner
	Metrics  *metrics.Registry // nil unless Config.Metrics
	Server   *Server
	Log      *slog.Logger
	listener net.Listener
	lock     *DataDirLock
	// stopListening ends listenToInstances and waits for it.
	stopListening func()
	// relay carries live topics to the other instances (PostgreSQL).
	relay *relay
	// serving releases the shared serving lock on PostgreSQL (store.HoldServing).
	serving func() error
	// servingLost says that an offline operation took the database while
	// the serving lock's connection was down: Run stops serving.
	servingLost chan error
}

// OpenData opens the data directory, the keys, the database and the account
// service: what every command needs, with or without the HTTP server.
//
// It is how the one-shot commands open the data; their writes are announced
// to a server running on the same data directory (store.Options.Announce),
// so that its caches notice them at once.
func OpenData(ctx context.Context, cfg Config, log *slog.Logger) (*App, error) {
	return openData(ctx, cfg, log, store.Options{Announce: true})
}

func openData(ctx context.Context, cfg Config, log *slog.Logger, opt store.Options) (*App, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("no data directory given")
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}
	keys, created, err := keyring.LoadOrCreate(cfg.DataDir, cfg.SecretKey)
	if err != nil {
		return nil, err
	}
	if created {
		log.Warn("created a new secret key: keep it with your backups, without it stored credentials cannot be read",
			"path", filepath.Join(cfg.DataDir, keyring.FileName))
	}
	dbPath := filepath.Join(cfg.DataDir, DBFile)
	if cfg.Database != "" {
		if !store.IsPostgresURL(cfg.Database) {
			return nil, fmt.Errorf("--database must be a PostgreSQL address (postgres://USER:PASSWORD@HOST:PORT/DB), not %q", store.RedactURL(cfg.Database))
		}
		dbPath = cfg.Database
	}
	db, err := store.Open(ctx, dbPath, opt)
	if err != nil {
		return nil, err
	}
	if db.OnPostgres() {
		// Instances share one database and must share its key: data
		// sealed with one key cannot be read with another.
		if err := db.CheckSecretKey(ctx, keys.CheckValue()); err != nil {
			return nil, errors.Join(err, db.Close())
		}
	}
	acfg := auth.DefaultConfig()
	if cfg.TokenTTL > 0 {
		acfg.TokenTTL = cfg.TokenTTL
	}
	if cfg.SessionTTL > 0 {
		acfg.SessionTTL = cfg.SessionTTL
	}
	if acfg.TokenTTL > acfg.SessionTTL {
		return nil, errors.Join(errors.New("the token lifetime cannot be longer than the session lifetime"), db.Close())
	}
	if cfg.LicensePublicKey != "" {
		if acfg.LicensePublicKey, err = auth.ParsePublicKey(cfg.LicensePublicKey); err != nil {
			return nil, errors.Join(err, db.Close())
		}
	}
	if cfg.Hasher != nil {
		acfg.Hasher = *cfg.Hasher
	}
	if cfg.Throttle != nil {
		acfg.Throttle = *cfg.Throttle
	}
	acfg.Hashes = cfg.Hashes
	svc, err := auth.New(db, keys, acfg)
	if err != nil {
		return nil, errors.Join(err, db.Close())
	}
	clashes, err := db.EmailClashes(ctx)
	if err != nil {
		return nil, errors.Join(err, db.Close())
	}
	for _, c := range clashes {
		log.Warn("two accounts have e-mail addresses that differ only in letter case: the newer one signs in only with its address as stored; "+
			"change one of them (PUT /api/auth/me) or disable one", "user_id", c.UserID, "email", c.Email, "same_as_user_id", c.SameAsID)
	}
	if n, err := svc.KeyRecoveryCodes(ctx); err != nil {
		return nil, errors.Join(err, db.Close())
	} else if n > 0 {
		log.Info("recovery codes stored the old way are now keyed with secret.key", "codes", n)
	}
	return &App{Config: cfg, DB: db, Keys: keys, Auth: svc, Backups: backupsOf(db, cfg, log), Log: log}, nil
}

// Open is OpenData plus the router, for serving. It locks the data
// directory so that no second server, and no `copydesk restore`, works on it
// at the same time.
func Open(ctx context.Context, cfg Config, log *slog.Logger) (*App, error) {
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}
	lock, err := LockDataDir(cfg.DataDir, fmt.Sprintf("copydesk serve (pid %d, started %s, listening on %s)",
		os.Getpid(), time.Now().UTC().Format(time.RFC3339), cfg.HTTPAddr))
	if err != nil {
		return nil, err
	}
	a, err := openData(ctx, cfg, log, store.Options{})
	if err != nil {
		return nil, errors.Join(err, lock.Unlock())
	}
	a.lock = lock
	a.listener = cfg.Listener
	a.servingLost = make(chan error, 1)
	if a.serving, err = a.DB.HoldServing(ctx, log, func(err error) { a.servingLost <- err }); err != nil {
		return nil, errors.Join(err, a.DB.Close(), lock.Unlock())
	}
	// Holding the lock, no other process can be receiving an upload: what
	// is there was left by a server that died mid-upload.
	if removed, err := a.Backups.RemoveLeftovers(); err != nil {
		log.Warn("cannot remove partial uploads left by an earlier run", "removed", removed, "err", err)
	} else if len(removed) > 0 {
		log.Info("removed partial uploads left by an earlier run", "files", removed)
	}
	a.Log.Info("password hashes run at most this many at once; more wait, then get 503", "hashes", a.Auth.HashLimit().Size(),
		"cpus", runtime.GOMAXPROCS(0), "memory_limit_mib", auth.MemoryLimit()>>20)
	sopt := stream.Options{Heartbeat: cfg.StreamHeartbeat, Log: log, Marshal: encodeJSON}
	if a.DB.OnPostgres() {
		a.relay = newRelay(a.DB, log)
		sopt.Relay = a.relay.send
	}
	a.Events = stream.New(sopt)
	a.Notify = notify.New(a.DB, log)
	a.Notify.PublishTo(a.Events)
	if err := a.listenToInstances(); err != nil {
		return nil, errors.Join(err, a.Close())
	}
	a.Backups.OnScheduledRun = a.scheduledBackupRan
	retries := cfg.ProviderRetries
	if retries < 0 {
		retries = -1
	}
	// One outbound client for every remote call (providers, WordPress,
	// featured images).
	ob := outbound.NewClient(outbound.Options{RefusePrivate: cfg.RefuseOutboundPrivate, Timeout: 15 * time.Minute})
	eopt := engine.Options{HTTPClient: ob, Timeout: cfg.ProviderTimeout, MaxRetries: retries, OnRecordError: cfg.OnUsageRecordError}
	jopt := jobs.Options{Workers: cfg.Workers, Backoff: cfg.JobBackoff, Lease: cfg.JobLease, PollInterval: cfg.JobPoll}
	if cfg.Metrics {
		m := metrics.New(log)
		a.Metrics = m
		eopt.OnUsage = func(ev store.UsageEvent) {
			var cost *float64 // dollars; nil: the model's price is unknown
			if ev.Cost != nil {
				usd := ev.Cost.USD()
				cost = &usd
			}
			m.ModelCall(ev.Provider, ev.Model, ev.Source, ev.Status, ev.InputTokens, ev.OutputTokens, cost)
		}
		jopt.OnAttempt = func(kind string, o jobs.Outcome, took time.Duration) { m.JobAttempt(kind, string(o), took) }
	}
	a.Engine = engine.New(a.DB, a.Keys, a.Notify, log, eopt)
	a.Jobs = jobs.New(a.DB, log, jopt)
	a.registerJobs()
	if a.Metrics != nil {
		collectMetrics(a.Metrics, a.DB, a.Jobs)
	}
	spool, err := spoolDir(cfg.DataDir)
	if err != nil {
		return nil, errors.Join(err, a.Close())
	}
	a.Server, err = New(Deps{DB: a.DB, Auth: a.Auth, Backups: a.Backups, Notify: a.Notify, Events: a.Events, Engine: a.Engine,
		Jobs: a.Jobs, Keys: a.Keys, Log: log,
		// Featured images are addresses any editor types, like web
		// sources: they go through the web sources' guard.
		WordPress: wppost.Options{HTTP: ob, ImageHTTP: outbound.NewClient(webSourcesOutbound(cfg)), Timeout: cfg.WordPressTimeout,
			Retries: 2, Backoff: cfg.WordPressBackoff},
		// Web sources have a client of their own: the same guard, with a
		// bound fit for a feed rather than a generation.
		Feeds: feed.New(outbound.NewClient(webSourcesOutbound(cfg)), feed.Options{}),
		// Webhook URLs are any editor's addresses too: the same guard.
		Webhooks: WebhookOptions{HTTP: webhookClient(cfg), RefusePrivate: webhookGuard(cfg).RefusePrivate,
			Options: webhook.Options{RetryDelay: cfg.WebhookRetryDelay, Timeout: cfg.WebhookTimeout}},
		Metrics: a.Metrics},
		Options{TrustedProxies: cfg.TrustedProxies, Version: cfg.Version, MaxUploadBytes: cfg.MaxUploadBytes, SpoolDir: spool,
			AstroRoots: cfg.AstroRoots, DataDir: cfg.DataDir, MaxQueued: cfg.MaxQueued, OnUndeclaredEvent: cfg.OnUndeclaredEvent,
			MetricsToken: cfg.MetricsToken})
	if err != nil {
		return nil, errors.Join(err, a.Close())
	}
	return a, nil
}

// Listen binds the HTTP address; Addr then tells the real one (for ":0").
func (a *App) Listen() error {
	if a.listener != nil {
		return nil
	}
	l, err := Listen(a.Config.HTTPAddr)
	if err != nil {
		return err
	}
	a.listener = l
	return nil
}

// Listen binds addr for the HTTP server.
func Listen(addr string) (net.Listener, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	return l, nil
}

// Addr is the address the server listens on.
func (a *App) Addr() string {
	if a.listener == nil {
		return ""
	}
	return a.listener.Addr().String()
}

// Run serves until ctx is cancelled, then stops accepting, lets in-flight
// requests finish (up to ShutdownTimeout) and stops background work.
func (a *App) Run(ctx context.Context) error {
	if a.listener == nil {
		if err := a.Listen(); err != nil {
			return err
		}
	}
	srv := &http.Server{
		Handler: a.Server.Handler(),
		// No ReadTimeout: it would cut event streams and large backup
		// uploads; ReadHeaderTimeout guards against slow headers.
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
		// Responses set write deadlines of their own (boundWrites, event
		// streams); one must not outlive its request on a kept-alive
		// connection, where it would cut the server's own error answers.
		ConnState: func(c net.Conn, st http.ConnState) {
			if st == http.StateIdle {
				_ = c.SetWriteDeadline(time.Time{})
			}
		},
		ErrorLog: slog.NewLogLogger(a.Log.Handler(), slog.LevelWarn),
	}
	// Work that a dead process left unfinished, with no job to finish it,
	// is failed before anything new can start.
	orphans := []struct {
		what string
		fail func(context.Context, string) (int64, error)
	}{
		{"runs", a.DB.FailOrphanRuns},
		{"generations", a.DB.FailOrphanCIERuns},
		{"chat replies", a.DB.FailOrphanChatMessages},
		{"live session generations", a.DB.FailOrphanLiveGenerations},
		{"scout runs", a.DB.FailOrphanScoutRuns},
		{"strategies", a.DB.FailOrphanStrategies},
	}
	for _, o := range orphans {
		n, err := o.fail(ctx, "interrupted by a restart")
		if ctx.Err() != nil {
			// Asked to stop before serving began (a signal during start-up):
			// a clean stop, with nothing to shut down; the next start
			// fails what is left.
			return nil
		}
		if err != nil {
			return err
		}
		if n > 0 {
			a.Log.Warn(o.what+" left unfinished by a restart marked failed", "count", n)
		}
	}
	// Event streams never finish on their own: end them when shutdown
	// begins so in-flight requests can drain.
	srv.RegisterOnShutdown(a.Events.Close)
	bg, stopBG := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := a.Jobs.Run(bg); err != nil && bg.Err() == nil {
			a.Log.Error("job runner stopped", "err", err)
		}
	})

	// Serve once the runner's first sweep is over: it has recovered what a
	// stopped process left and planned the recurring work (or failed, and
	// said so in the log), so an instance that answers shows the queue as
	// it will be.
	select {
	case <-a.Jobs.Swept():
	case <-ctx.Done():
		// Asked to stop before serving began, as above.
		stopBG()
		wg.Wait()
		return nil
	}

	errc := make(chan error, 2)
	go func() { errc <- srv.Serve(a.listener) }()
	a.Log.Info("copydesk is serving", "addr", "http://"+a.Addr(), "docs", "http://"+a.Addr()+"/docs", "data_dir", a.Config.DataDir)
	var msrv *http.Server
	if ml := a.Config.MetricsListener; ml != nil && a.Metrics != nil {
		msrv = &http.Server{Handler: MetricsHandler(a.Metrics), ReadHeaderTimeout: 10 * time.Second, WriteTimeout: time.Minute,
			IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 16 << 10, BaseContext: srv.BaseContext, ErrorLog: srv.ErrorLog}
		go func() { errc <- msrv.Serve(ml) }()
		a.Log.Info("metrics are served without a token: keep this address private", "addr", "http://"+ml.Addr().String()+MetricsPath)
	}

	var err, lost error
	select {
	case err = <-errc:
		if msrv != nil {
			// One of the two listeners failed: the other stops too.
			err = errors.Join(err, srv.Close(), msrv.Close())
		}
	case lost = <-a.servingLost:
		// A restore or a migrate is replacing the database: serving on
		// would write into it. Stop as for a signal, and fail.
		a.Log.Error("stopping: "+lost.Error(), "err", lost)
	case <-ctx.Done():
	}
	if err == nil {
		if msrv != nil {
			// A scrape is short: no need to drain it, and the listener's
			// closing error says nothing the shutdown needs.
			_ = msrv.Close()
		}
		a.Log.Info("shutting down: finishing in-flight requests")
		timeout := a.Config.ShutdownTimeout
		if timeout <= 0 {
			timeout = 30 * time.Second
		}
		sctx, cancel := context.WithTimeout(context.Background(), timeout)
		err = srv.Shutdown(sctx)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) {
			// What is left is a client that does not read its answer, or a
			// handler that does not end: the shutdown does not wait for
			// them. Closing their connections ends their writes and their
			// requests' contexts; none holds the database while it writes.
			a.Log.Warn("shutdown timeout reached: closing the connections still open", "timeout", timeout)
			err = srv.Close()
		}
	}
	stopBG()
	wg.Wait()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return errors.Join(lost, err)
}

// Job kinds of the app's own recurring work.
const (
	HousekeepingJob = "housekeeping"
	BackupJob       = "backup.scheduled"
)

// registerJobs registers the app's recurring work with the job runner:
// pruning every hour, and scheduled backups on their stored schedule, which
// PUT /api/backup/schedule changes (then the next run is planned at once).
func (a *App) registerJobs() {
	a.Jobs.Register(HousekeepingJob, jobs.Kind{Handle: a.housekeep, Next: jobs.Every(time.Hour)})
	if a.Config.NoScheduler {
		return
	}
	a.Jobs.Register(BackupJob, jobs.Kind{Handle: a.runScheduledBackup, Next: a.Backups.Next})
	a.Backups.OnScheduleChange = func(ctx context.Context) error { return a.Jobs.Replan(ctx, BackupJob) }
}

// housekeep is the handler of the hourly housekeeping job.
func (a *App) housekeep(ctx context.Context, _ *store.Job) error { return a.Prune(ctx) }

// runScheduledBackup is the handler of the scheduled backup job. A failed
// run is recorded in the schedule state and told to the super_admins by
// RunDue; the job fails too, and the next run is planned as usual.
func (a *App) runScheduledBackup(ctx context.Context, _ *store.Job) error {
	ran, err := a.Backups.RunDue(ctx)
	if ran && err == nil {
		a.Log.Info("scheduled backup taken")
	}
	return err
}

// Prune deletes sessions that ended a week ago, read notifications older
// than the retention setting and jobs finished a month ago, and keys
// recovery codes a restore brought back unkeyed. The caller holds the
// database.
func (a *App) Prune(ctx context.Context) error {
	now := a.DB.Now()
	n, err := a.DB.PruneSessions(ctx, now.Add(-7*24*time.Hour))
	if err != nil {
		return err
	}
	set, err := a.DB.SystemSettings(ctx)
	if err != nil {
		return err
	}
	m, err := a.DB.PruneNotifications(ctx, now.AddDate(0, 0, -set.NotificationRetentionDays))
	if err != nil {
		return err
	}
	// Finished jobs are bookkeeping; what they did is kept by their owners
	// (agent runs keep their history).
	j, err := a.DB.PruneJobs(ctx, now.AddDate(0, 0, -30))
	if err != nil {
		return err
	}
	// API tokens revoked or expired a month ago are of no use and no
	// longer worth listing.
	k, err := a.DB.PruneAPITokens(ctx, now.AddDate(0, 0, -30))
	if err != nil {
		return err
	}
	// Webhook deliveries are a log of what was sent: a month of it.
	w, err := a.DB.PruneWebhookDeliveries(ctx, now.AddDate(0, 0, -30))
	if err != nil {
		return err
	}
	// A restored older backup may have brought back unkeyed recovery codes.
	if _, err := a.Auth.KeyRecoveryCodes(ctx); err != nil {
		return err
	}
	if n+m+j+k+w > 0 {
		a.Log.Debug("pruned", "sessions", n, "notifications", m, "jobs", j, "api_tokens", k, "webhook_deliveries", w)
	}
	return nil
}

// scheduledBackupRan tells the super_admins how a scheduled backup went.
func (a *App) scheduledBackupRan(ctx context.Context, meta *backup.Meta, err error) {
	if err != nil {
		a.Notify.Role(ctx, store.RoleSuperAdmin, notify.Note{Kind: notify.BackupFailed, Title: "Scheduled backup failed",
			Body: err.Error(), Link: "/api/backup/schedule"})
		return
	}
	a.Notify.Role(ctx, store.RoleSuperAdmin, notify.Note{Kind: notify.BackupCreated, Title: "Scheduled backup taken",
		Body: fmt.Sprintf("%s (%d bytes)", meta.Name, meta.Size), Link: "/api/backup/" + meta.Name})
}

// Close closes the database and releases the data directory. A server's
// (Open) says so last in its log: "stopped".
func (a *App) Close() error {
	if a.listener != nil {
		a.listener.Close()
	}
	if a.stopListening != nil {
		a.stopListening()
	}
	if a.Config.MetricsListener != nil {
		a.Config.MetricsListener.Close()
	}
	err := errors.Join(a.DB.Close(), a.releaseServing(), a.lock.Unlock())
	switch {
	case a.Server == nil: // a one-shot command (OpenData), or Open failed
	case err != nil:
		a.Log.Error("stopped; closing the data failed", "err", err)
	default:
		a.Log.Info("stopped")
	}
	return err
}

// webSourcesOutbound is the address guard of web source fetches: see
// Config.AllowWebSourcesPrivate.
func webSourcesOutbound(cfg Config) outbound.Options {
	o := outbound.Options{RefusePrivate: cfg.RefuseOutboundPrivate, Timeout: feed.DefaultTimeout}
	if !cfg.AllowWebSourcesPrivate && !o.RefusePrivate {
		o.RefusePrivate, o.RefusedBy = true, "for web sources; --web-sources-private allows them"
	}
	return o
}

// webhookGuard is the address guard of webhook deliveries: the web
// sources' (Config.AllowWebSourcesPrivate), for the same reason.
func webhookGuard(cfg Config) outbound.Options {
	o := webSourcesOutbound(cfg)
	o.Timeout = 0 // each attempt has its own (webhook.Options.Timeout)
	if o.RefusedBy != "" {
		o.RefusedBy = "for webhooks; --web-sources-private allows them"
	}
	return o
}

// webhookClient sends webhook deliveries: through the guard, following
// no redirect (a 3xx is the receiver's answer, and a failure).
func webhookClient(cfg Config) *http.Client {
	c := outbound.NewClient(webhookGuard(cfg))
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return c
}

// SpoolFolder is the folder of the data directory where exports are
// rendered before they are sent.
const SpoolFolder = "tmp"

// spoolDir makes DATA_DIR/tmp and empties it of what a process that ended
// mid-export left.
func spoolDir(dataDir string) (string, error) {
	dir := filepath.Join(dataDir, SpoolFolder)
	if err := os.RemoveAll(dir); err != nil {
		return "", fmt.Errorf("spool folder %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("spool folder %s: %w", dir, err)
	}
	return dir, nil
}

func (a *App) releaseServing() error {
	if a.serving == nil {
		return nil
	}
	return a.serving()
}

// backupsOf is the backup manager of cfg's data directory, logging to log.
func backupsOf(db *store.DB, cfg Config, log *slog.Logger) *backup.Manager {
	m := backup.New(db, cfg.DataDir, cfg.Version)
	m.Log = log
	return m
}
