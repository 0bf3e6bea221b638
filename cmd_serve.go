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
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the API server",
		Long: "Run the API server. The first start creates the data directory, the database and secret.key.\n" +
			"Every flag can also be set with an environment variable: --http is COPYDESK_HTTP, --data-dir is COPYDESK_DATA_DIR, and so on.\n" +
			"COPYDESK_SECRET_KEY, when set, is used instead of DATA_DIR/secret.key.\n" +
			"--database postgres://... (COPYDESK_DATABASE) runs on that PostgreSQL database instead of DATA_DIR/copydesk.db (docs/scaling.md).",
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
			case cfg.ProviderRetries == 0:
				cfg.ProviderRetries = -1 // 0 in the server's config means "the default"
			}
			cfg.SecretKey = os.Getenv("COPYDESK_SECRET_KEY")
			cfg.RefuseOutboundPrivate = !outboundPrivate
			// The address is bound before anything is created, so a port in
			// use leaves no half-made data directory behind.
			if err := checkHTTPAddr(cfg.HTTPAddr); err != nil {
				return err
			}
			if cfg.Listener, err = server.Listen(cfg.HTTPAddr); err != nil {
				return err
			}
			ctx := cmd.Context()
			app, err := server.Open(ctx, cfg, log)
			if err != nil {
				return errors.Join(err, cfg.Listener.Close())
			}
			defer closing(&err, app.Close)
			if n, err := app.DB.CountActiveSuperAdmins(ctx); err == nil && n == 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "\nThere is no super_admin yet. Create one with:\n\n"+
					"  %s users create --data-dir %s --email you@example.com --username admin --role super_admin --password-stdin\n\n"+
					"and type the password (at least %d characters) when asked.\n\n", invocation(os.Args[0]), shellQuote(c.dataDir), auth.MinPasswordLen)
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
	f.IntVar(&cfg.ProviderRetries, "provider-retries", 2, "retries of a failed LLM provider call (429, 5xx, network); 0 for none")
	f.DurationVar(&cfg.ProviderTimeout, "provider-timeout", 5*time.Minute, "limit of one LLM provider attempt, streaming included")
	f.IntVar(&cfg.MaxQueued, "max-queued", 3, "scout runs, and strategy builds, one environment may have queued or running at once (each spends SerpApi searches and model calls)")
	f.StringSliceVar(&cfg.AstroRoots, "astro-roots", nil, "folders Astro projects may live under (comma-separated); none by default, so Astro environments are refused until the operator names one; the data directory is always refused")
	f.BoolVar(&cfg.AllowWebSourcesPrivate, "web-sources-private", false, "let web sources and featured images (feeds, pages and image addresses any editor adds) reach private and loopback addresses; off, an editor could read the server's network through them")
	f.BoolVar(&outboundPrivate, "outbound-private", true, "let outbound calls (providers, WordPress, SERP) reach private and loopback addresses, e.g. a local Ollama; false refuses them for web sources too; link-local and cloud metadata addresses are always refused")
	return cmd
}

// checkHTTPAddr catches the common slip of --http 8080 (a port without a
// host) before anything is created.
func checkHTTPAddr(addr string) error {
	if addr != "" && strings.Trim(addr, "0123456789") == "" {
		return fmt.Errorf("--http %s is not an address: did you mean 127.0.0.1:%s (this machine only) or 0.0.0.0:%s (every interface)?", addr, addr, addr)
	}
	return nil
}
