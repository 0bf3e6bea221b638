package main

// The command serve runs the API server.

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/copydesk/copydesk/server"
	"github.com/copydesk/copydesk/server/auth"
)

func serveCmd() *cobra.Command {
	var c common
	cfg := server.Config{}
	var outboundPrivate bool
	var metricsHTTP string
	var lockAfter int
	var lockFor time.Duration
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the API server",
		Long: "Run the API server. The first start creates the data directory, the database and secret.key.\n" +
			"Every flag can also be set with an environment variable: --http is COPYDESK_HTTP, --data-dir is COPYDESK_DATA_DIR, and so on.\n" +
			"COPYDESK_SECRET_KEY, when set, is used instead of DATA_DIR/secret.key.\n" +
			"--database postgres://... (COPYDESK_DATABASE) runs on that PostgreSQL database instead of DATA_DIR/copydesk.db (docs/scaling.md).",
		Example: "  copydesk serve\n" +
			"  copydesk serve --http 127.0.0.1:9000 --data-dir /var/lib/copydesk\n" +
			"  COPYDESK_HTTP=0.0.0.0:8080 copydesk serve --log-format json",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			log, err := c.logger(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			cfg.DataDir, cfg.Database, cfg.Version = c.dataDir, c.database, version()
			switch {
			case cfg.Workers < 1:
				return fmt.Errorf("--workers must be at least 1")
			case cfg.ProviderRetries < -1:
				return fmt.Errorf("--provider-retries must be -1 (none), 0 (none) or more")
			case cfg.WebhookRetryDelay <= 0:
				return fmt.Errorf("--webhook-retry-delay must be more than 0")
			case cfg.JobLease < time.Second || cfg.JobLease > time.Minute:
				return fmt.Errorf("--lease must be between 1s and 60s")
			case cfg.JobPoll < 10*time.Millisecond:
				return fmt.Errorf("--job-poll must be at least 10ms")
			case lockAfter < 0:
				return fmt.Errorf("--signin-lock-after must be 0 (never lock) or more")
			case lockFor < time.Minute:
				return fmt.Errorf("--signin-lock-for must be at least 1m")
			case cfg.ProviderRetries == 0:
				cfg.ProviderRetries = -1 // 0 in the server's config means "the default"
			}
			throttle := auth.DefaultThrottle
			throttle.LockAfter, throttle.LockFor = lockAfter, lockFor
			cfg.Throttle = &throttle
			cfg.SecretKey = os.Getenv("COPYDESK_SECRET_KEY")
			cfg.RefuseOutboundPrivate = !outboundPrivate
			// The address is bound before anything is created, so a port in
			// use leaves no half-made data directory behind.
			if err := checkHTTPAddr(cfg.HTTPAddr); err != nil {
				return err
			}
			if err := checkMetrics(cfg, metricsHTTP); err != nil {
				return err
			}
			if cfg.Listener, err = server.Listen(cfg.HTTPAddr); err != nil {
				return err
			}
			if metricsHTTP != "" {
				if cfg.MetricsListener, err = server.Listen(metricsHTTP); err != nil {
					return errors.Join(fmt.Errorf("--metrics-http: %w", err), cfg.Listener.Close())
				}
			}
			ctx := cmd.Context()
			app, err := server.Open(ctx, cfg, log)
			if err != nil {
				err = errors.Join(err, cfg.Listener.Close())
				if cfg.MetricsListener != nil {
					err = errors.Join(err, cfg.MetricsListener.Close())
				}
				return err
			}
			defer closing(&err, app.Close)
			if n, err := app.DB.CountActiveSuperAdmins(ctx); err == nil && n == 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "\nThere is no super_admin yet. Create one with:\n\n"+
					"  %s users create --data-dir %s --email you@example.com --username admin --role super_admin --password-stdin\n\n"+
					"and type the password (at least %d characters) when asked. Then open %s in a browser and sign in.\n\n",
					invocation(os.Args[0]), shellQuote(c.dataDir), auth.MinPasswordLen, consoleURL(cfg.Listener.Addr()))
			}
			return app.Run(ctx)
		},
	}
	c.register(cmd.Flags())
	f := cmd.Flags()
	f.StringVar(&cfg.HTTPAddr, "http", "127.0.0.1:8080", "address to listen on; use 0.0.0.0:8080 to accept other machines")
	f.DurationVar(&cfg.TokenTTL, "token-ttl", time.Hour, "lifetime of one access token")
	f.DurationVar(&cfg.SessionTTL, "session-ttl", 30*24*time.Hour, "absolute lifetime of a session; refresh cannot go past it")
	f.StringVar(&cfg.LicensePublicKey, "license-public-key", "", "Ed25519 public key (base64 or PEM) that license keys must be signed with; default: the built-in vendor key")
	f.StringSliceVar(&cfg.TrustedProxies, "trusted-proxies", nil, "reverse proxies (IPs or CIDRs) whose X-Forwarded-For is trusted")
	f.DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", 30*time.Second, "how long in-flight requests may finish on shutdown")
	f.IntVar(&cfg.Workers, "workers", 2, "background jobs (agent runs, ...) that run at once")
	f.DurationVar(&cfg.JobLease, "lease", 30*time.Second, "how long a background job stays an instance's without a renewal (renewed every third of it); on PostgreSQL another instance takes over the jobs of one that died after this (1s to 60s)")
	f.DurationVar(&cfg.JobPoll, "job-poll", time.Second, "how often idle job workers look for due jobs and, on PostgreSQL, for expired leases")
	f.IntVar(&lockAfter, "signin-lock-after", auth.DefaultThrottle.LockAfter, "failed sign-ins in a row that lock an address for --signin-lock-for (an admin can unlock it); 0 never locks")
	f.DurationVar(&lockFor, "signin-lock-for", auth.DefaultThrottle.LockFor, "how long --signin-lock-after failures lock an address")
	f.IntVar(&cfg.ProviderRetries, "provider-retries", 2, "retries of a failed LLM provider call (429, 5xx, network); 0 for none")
	f.DurationVar(&cfg.ProviderTimeout, "provider-timeout", 5*time.Minute, "limit of one LLM provider attempt, streaming included")
	f.IntVar(&cfg.MaxQueued, "max-queued", 3, "scout runs, and strategy builds, one environment may have queued or running at once (each spends SerpApi searches and model calls)")
	f.StringSliceVar(&cfg.AstroRoots, "astro-roots", nil, "folders Astro projects may live under (comma-separated); none by default, so Astro environments are refused until the operator names one; the data directory is always refused")
	f.BoolVar(&cfg.AllowWebSourcesPrivate, "web-sources-private", false, "let web sources, featured images and webhooks (feeds, pages, image and webhook addresses any editor adds) reach private and loopback addresses; off, an editor could read the server's network through them")
	f.DurationVar(&cfg.WebhookRetryDelay, "webhook-retry-delay", 30*time.Second, "wait after a webhook delivery's first failed attempt, doubled after each further one up to 8 hours; 13 attempts in all (about a day with 30s)")
	f.BoolVar(&outboundPrivate, "outbound-private", true, "let outbound calls (providers, WordPress, SERP) reach private and loopback addresses, e.g. a local Ollama; false refuses them for web sources too; link-local and cloud metadata addresses are always refused")
	f.BoolVar(&cfg.Metrics, "metrics", false, "serve Prometheus metrics at /metrics (docs/metrics.md), on this listener with --metrics-token and/or on --metrics-http")
	f.StringVar(&cfg.MetricsToken, "metrics-token", "", "bearer token of GET /metrics on the API's listener (at least 16 characters; better set as COPYDESK_METRICS_TOKEN than on the command line)")
	f.StringVar(&metricsHTTP, "metrics-http", "", "also serve /metrics, without a token, on this address of its own (e.g. 127.0.0.1:9464); keep it private")
	return cmd
}

// minMetricsToken is the shortest --metrics-token accepted.
const minMetricsToken = 16

// checkMetrics refuses metrics flags that do not make a whole: metrics
// on with no way to reach them but an open one, or a token or address
// without --metrics.
func checkMetrics(cfg server.Config, metricsHTTP string) error {
	switch {
	case !cfg.Metrics && (cfg.MetricsToken != "" || metricsHTTP != ""):
		return fmt.Errorf("--metrics-token and --metrics-http need --metrics (or COPYDESK_METRICS=true) to turn the metrics on")
	case !cfg.Metrics:
		return nil
	case cfg.MetricsToken == "" && metricsHTTP == "":
		return fmt.Errorf("--metrics needs a way to be reached: --metrics-token TOKEN (or COPYDESK_METRICS_TOKEN) to serve /metrics " +
			"on this listener to that bearer token, and/or --metrics-http 127.0.0.1:9464 to serve it without a token on an address you keep private")
	case cfg.MetricsToken != "" && len(cfg.MetricsToken) < minMetricsToken:
		return fmt.Errorf("--metrics-token is %d characters: use at least %d, e.g. the output of: openssl rand -hex 32", len(cfg.MetricsToken), minMetricsToken)
	}
	if err := checkHTTPAddr(metricsHTTP); err != nil {
		return errors.New(strings.Replace(err.Error(), "--http", "--metrics-http", 1))
	}
	return nil
}

// checkHTTPAddr catches the common slip of --http 8080 (a port without a
// host) before anything is created.
func checkHTTPAddr(addr string) error {
	if addr != "" && strings.Trim(addr, "0123456789") == "" {
		return fmt.Errorf("--http %s is not an address: did you mean 127.0.0.1:%s (this machine only) or 0.0.0.0:%s (every interface)?", addr, addr, addr)
	}
	return nil
}
