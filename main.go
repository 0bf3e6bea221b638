// Command copydesk is a self-hosted content and SEO automation server: one
// binary, one SQLite file. See README.md.
package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
	_ "time/tzdata" // time zones work on hosts without a zoneinfo database

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/copydesk/copydesk/backup"
	"github.com/copydesk/copydesk/internal/buildinfo"
	"github.com/copydesk/copydesk/server"
	"github.com/copydesk/copydesk/server/auth"
	"github.com/copydesk/copydesk/store"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// After the first signal starts a graceful shutdown, a second one gets
	// the default behaviour and ends the process at once.
	go func() { <-ctx.Done(); stop() }()
	if err := newRootCmd(os.Stdin, os.Stdout, os.Stderr).ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "copydesk:", err)
		os.Exit(1)
	}
}

func newRootCmd(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "copydesk",
		Short:         "Self-hosted content and SEO automation",
		SilenceUsage:  true,
		SilenceErrors: true,
		// Environment variables are applied before cobra checks required
		// flags, so COPYDESK_EMAIL can stand in for --email.
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) (err error) { return envDefaults(cmd) },
	}
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(serveCmd(), usersCmd(), backupCmd(), restoreCmd(), licenseCmd(), healthCmd(), versionCmd())
	return root
}

// common holds the flags every command that touches the data takes.
type common struct {
	dataDir   string
	logLevel  string
	logFormat string
	mayCreate bool // this command may create a new instance (users create --init)
}

func (c *common) register(fs *pflag.FlagSet) {
	fs.StringVar(&c.dataDir, "data-dir", defaultDataDir, "folder for the database and secret key")
	fs.StringVar(&c.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&c.logFormat, "log-format", "text", "text or json")
}

func (c *common) logger(w io.Writer) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(c.logLevel)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: lvl}
	switch c.logFormat {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format must be text or json, not %q", c.logFormat)
}

// envDefaults lets every flag be set by COPYDESK_<FLAG> (dashes become
// underscores); a flag given on the command line wins.
func envDefaults(cmd *cobra.Command) error {
	var errs []error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Changed || f.Name == "help" {
			return
		}
		name := "COPYDESK_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v, ok := os.LookupEnv(name); ok {
			if err := cmd.Flags().Set(f.Name, v); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
			}
		}
	})
	return errors.Join(errs...)
}

func serveCmd() *cobra.Command {
	var c common
	cfg := server.Config{}
	var outboundPrivate bool
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the API server",
		Long: "Run the API server. The first start creates the data directory, the database and secret.key.\n" +
			"Every flag can also be set with an environment variable: --http is COPYDESK_HTTP, --data-dir is COPYDESK_DATA_DIR, and so on.\n" +
			"COPYDESK_SECRET_KEY, when set, is used instead of DATA_DIR/secret.key.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			log, err := c.logger(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			cfg.DataDir, cfg.Version = c.dataDir, version()
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
	f.BoolVar(&cfg.AllowWebSourcesPrivate, "web-sources-private", false, "let web sources (feeds and pages any editor adds) reach private and loopback addresses; off, an editor could read the server's network through them")
	f.BoolVar(&outboundPrivate, "outbound-private", true, "let outbound calls (providers, WordPress, SERP) reach private and loopback addresses, e.g. a local Ollama; false refuses them for web sources too; link-local and cloud metadata addresses are always refused")
	return cmd
}

// openData opens the data directory for a one-shot command. It must hold
// a database already (requireData), unless the command prepared it.
func openData(cmd *cobra.Command, c *common) (*server.App, error) {
	log, err := c.logger(cmd.ErrOrStderr())
	if err != nil {
		return nil, err
	}
	if err := requireData(c.dataDir); err != nil && !c.mayCreate {
		return nil, err
	}
	return server.OpenData(cmd.Context(), server.Config{DataDir: c.dataDir, SecretKey: os.Getenv("COPYDESK_SECRET_KEY"), Version: version()}, log)
}

// newPassword reads the password --password-stdin promises (readPassword),
// checked against the password rules before anything is opened or created.
func newPassword(cmd *cobra.Command, fromStdin bool) (string, error) {
	if !fromStdin {
		return "", errors.New("pass --password-stdin and type the password on standard input")
	}
	return readPassword(cmd.InOrStdin(), cmd.ErrOrStderr())
}

func usersCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "users", Short: "Manage accounts from the shell"}

	var cc common
	var email, username, role, fullName string
	var fromStdin, initData bool
	create := &cobra.Command{
		Use:   "create",
		Short: "Create an account (the way to make the first super_admin)",
		Long: "Create an account. On a data directory without a database this prepares a new instance, but only at the\n" +
			"default path or with --init: a mistyped --data-dir is an error, not a new empty instance.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			if err := prepareData(cc.dataDir, initData, cmd.ErrOrStderr()); err != nil {
				return err
			}
			cc.mayCreate = true
			pw, err := newPassword(cmd, fromStdin)
			if err != nil {
				return err
			}
			app, err := openData(cmd, &cc)
			if err != nil {
				return err
			}
			defer closing(&err, app.Close)
			u, err := app.Auth.CreateUser(cmd.Context(), auth.NewAccount{Email: email, Username: username, FullName: fullName, Password: pw, Role: store.Role(role)})
			if err != nil {
				return errors.New(store.Message(err))
			}
			fmt.Fprintf(cmd.OutOrStdout(), "created user %d %s (%s)\n", u.ID, u.Email, u.Role)
			return nil
		},
	}
	cc.register(create.Flags())
	create.Flags().StringVar(&email, "email", "", "e-mail address (required)")
	create.Flags().StringVar(&username, "username", "", "user name (required)")
	create.Flags().StringVar(&fullName, "full-name", "", "full name")
	create.Flags().StringVar(&role, "role", "viewer", "super_admin, admin, editor or viewer")
	create.Flags().BoolVar(&fromStdin, "password-stdin", false, "read the password from standard input (on a terminal: asked twice, hidden)")
	create.Flags().BoolVar(&initData, "init", false, "create the data directory and database if they do not exist")
	_ = create.MarkFlagRequired("email")
	_ = create.MarkFlagRequired("username")

	var sc common
	var spEmail string
	var spStdin bool
	setPassword := &cobra.Command{
		Use:   "set-password",
		Short: "Set an account's password (account recovery); ends all its sessions",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			pw, err := newPassword(cmd, spStdin)
			if err != nil {
				return err
			}
			app, err := openData(cmd, &sc)
			if err != nil {
				return err
			}
			defer closing(&err, app.Close)
			u, err := app.Auth.SetPassword(cmd.Context(), spEmail, pw)
			if err != nil {
				return errors.New(store.Message(err))
			}
			fmt.Fprintf(cmd.OutOrStdout(), "password set for user %d %s; its sessions were ended\n", u.ID, u.Email)
			return nil
		},
	}
	sc.register(setPassword.Flags())
	setPassword.Flags().StringVar(&spEmail, "email", "", "e-mail address of the account (required)")
	setPassword.Flags().BoolVar(&spStdin, "password-stdin", false, "read the password from standard input (on a terminal: asked twice, hidden)")
	_ = setPassword.MarkFlagRequired("email")

	resetTwoFactor := emailCommand("reset-2fa", "Turn off an account's two-factor authentication (lost authenticator and recovery codes)",
		func(ctx context.Context, app *server.App, email string) (string, error) {
			u, err := app.Auth.ResetTwoFactorByEmail(ctx, email)
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("two-factor authentication turned off for user %d %s; they sign in with their password and can set it up again", u.ID, u.Email), nil
		})
	unlock := emailCommand("unlock", "Clear an account's failed sign-in attempts, ending a lock at once",
		func(ctx context.Context, app *server.App, email string) (string, error) {
			u, err := app.Auth.UnlockByEmail(ctx, email)
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("sign-in unlocked for user %d %s", u.ID, u.Email), nil
		})

	var lc common
	list := &cobra.Command{
		Use:   "list",
		Short: "List accounts",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			app, err := openData(cmd, &lc)
			if err != nil {
				return err
			}
			defer closing(&err, app.Close)
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tEMAIL\tUSERNAME\tROLE\tACTIVE\t2FA\tCREATED")
			for page := 1; ; page++ {
				users, total, err := app.DB.ListUsers(cmd.Context(), store.UserFilter{Page: store.Page{Page: page, PerPage: 200}})
				if err != nil {
					return err
				}
				for _, u := range users {
					fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%t\t%t\t%s\n", u.ID, u.Email, u.Username, u.Role, u.IsActive, u.TOTPEnabled, u.CreatedAt.Format(time.RFC3339))
				}
				if page*200 >= total {
					break
				}
			}
			return tw.Flush()
		},
	}
	lc.register(list.Flags())
	cmd.AddCommand(create, setPassword, resetTwoFactor, unlock, list)
	return cmd
}

// emailCommand is a `users` subcommand that acts on the account with
// --email: do says what it did, in one line.
func emailCommand(use, short string, do func(ctx context.Context, app *server.App, email string) (string, error)) *cobra.Command {
	var c common
	var email string
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			app, err := openData(cmd, &c)
			if err != nil {
				return err
			}
			defer closing(&err, app.Close)
			out, err := do(cmd.Context(), app, email)
			if err != nil {
				return errors.New(store.Message(err))
			}
			fmt.Fprintln(cmd.OutOrStdout(), out)
			return nil
		},
	}
	c.register(cmd.Flags())
	cmd.Flags().StringVar(&email, "email", "", "e-mail address of the account (required)")
	_ = cmd.MarkFlagRequired("email")
	return cmd
}

func backupCmd() *cobra.Command {
	var c common
	var out string
	cmd := &cobra.Command{
		Use:   "backup",
		Short: "Write a consistent snapshot of the database, also while serve runs",
		Long: "Write a consistent snapshot of the database. Without --out it goes to DATA_DIR/backups and is listed by the API.\n" +
			"The snapshot is checked (PRAGMA integrity_check) and described by a sidecar FILE.json with its SHA-256.\n" +
			"Keep DATA_DIR/secret.key with your backups: without it the stored secrets in a backup cannot be read.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			app, err := openData(cmd, &c)
			if err != nil {
				return err
			}
			defer closing(&err, app.Close)
			var meta *backup.Meta
			var path string
			if out != "" {
				meta, err = backup.WriteStandalone(cmd.Context(), app.DB, out, version())
				path = out
			} else {
				meta, err = app.Backups.Create(cmd.Context(), backup.KindCLI)
				if meta != nil {
					path = filepath.Join(app.Backups.Dir(), meta.Name)
				}
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s (%d bytes, schema %d)\nsha256 %s\n", path, meta.Size, meta.SchemaVersion, meta.SHA256)
			return nil
		},
	}
	c.register(cmd.Flags())
	cmd.Flags().StringVar(&out, "out", "", "file to write (must not exist); default: a new file in DATA_DIR/backups")
	return cmd
}

func restoreCmd() *cobra.Command {
	var c common
	cmd := &cobra.Command{
		Use:   "restore FILE",
		Short: "Put a snapshot in place of the database (the server must be stopped)",
		Long: "Check FILE (integrity, schema not newer than this copydesk and exactly what its migrations create, SHA-256\n" +
			"against FILE.json when present), keep a snapshot of the current database in DATA_DIR/backups, then put FILE in\n" +
			"place and end every session in it: everyone signs in again. While a server holds the data directory this\n" +
			"refuses: restore through the API (POST /api/backup/{name}/restore) instead, or stop the server.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			if err := requireRestoreTarget(c.dataDir); err != nil {
				return err
			}
			c.mayCreate = true
			lock, err := server.LockDataDir(c.dataDir, fmt.Sprintf("copydesk restore (pid %d)", os.Getpid()))
			if err != nil {
				if errors.Is(err, server.ErrLocked) {
					return fmt.Errorf("%w\nstop the server first, or restore through the API: upload the file with POST /api/backup/upload, then POST /api/backup/{name}/restore", err)
				}
				return err
			}
			defer closing(&err, lock.Unlock)
			app, err := openData(cmd, &c)
			if err != nil {
				return err
			}
			defer closing(&err, app.Close)
			safety, err := app.Backups.RestoreFile(cmd.Context(), args[0])
			if err != nil {
				if store.KindOf(err) == store.KindInvalid {
					return fmt.Errorf("%s is not restorable: %s", args[0], store.Message(err))
				}
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "restored %s\nthe previous database is kept as %s\n", args[0], filepath.Join(app.Backups.Dir(), safety.Name))
			return nil
		},
	}
	c.register(cmd.Flags())
	return cmd
}

func licenseCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "license", Short: "Vendor tools: make a signing key and issue license keys"}

	var out string
	keygen := &cobra.Command{
		Use:   "keygen",
		Short: "Create an Ed25519 signing key pair for issuing license keys",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			pub, priv, err := ed25519.GenerateKey(rand.Reader)
			if err != nil {
				return err
			}
			privPEM, pubB64, err := auth.MarshalKeyPair(pub, priv)
			if err != nil {
				return err
			}
			f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
			if err != nil {
				return err
			}
			if _, err := f.Write(privPEM); err != nil {
				f.Close()
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "private key written to %s (keep it secret)\npublic key: %s\n"+
				"start servers with --license-public-key %s\n", out, pubB64, pubB64)
			return nil
		},
	}
	keygen.Flags().StringVar(&out, "out", "license-signing.pem", "file to write the private key to (must not exist)")

	var keyFile, licensee, plan, id string
	var seats, days int
	var expires string
	issue := &cobra.Command{
		Use:   "issue",
		Short: "Sign a license key with a private key file",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			pemBytes, err := os.ReadFile(keyFile)
			if err != nil {
				return err
			}
			priv, err := auth.ParsePrivateKey(pemBytes)
			if err != nil {
				return err
			}
			now := time.Now().UTC()
			p := auth.LicensePayload{ID: id, Licensee: licensee, Plan: plan, Seats: seats, IssuedAt: now}
			if p.ID == "" {
				b := make([]byte, 9)
				if _, err := rand.Read(b); err != nil {
					return err
				}
				p.ID = fmt.Sprintf("lic_%x", b)
			}
			switch {
			case expires != "" && days > 0:
				return errors.New("give --expires or --days, not both")
			case expires != "":
				t, err := time.Parse("2006-01-02", expires)
				if err != nil {
					return fmt.Errorf("--expires: want YYYY-MM-DD: %w", err)
				}
				p.ExpiresAt = &t
			case days > 0:
				t := now.AddDate(0, 0, days)
				p.ExpiresAt = &t
			}
			key, err := auth.SignLicense(priv, p)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), key)
			return nil
		},
	}
	f := issue.Flags()
	f.StringVar(&keyFile, "private-key", "license-signing.pem", "`FILE` holding the PEM private key that copydesk license keygen wrote")
	f.StringVar(&licensee, "licensee", "", "who the license is for (required)")
	f.StringVar(&plan, "plan", "team", "plan name, a lower-case word")
	f.IntVar(&seats, "seats", 1, "number of seats")
	f.StringVar(&expires, "expires", "", "expiry date YYYY-MM-DD (UTC); none: perpetual")
	f.IntVar(&days, "days", 0, "expire this many days from now")
	f.StringVar(&id, "id", "", "license id; default: random")
	_ = issue.MarkFlagRequired("licensee")
	cmd.AddCommand(keygen, issue)
	return cmd
}

// versionCmd is `copydesk version`. A binary `make` stamped answers
// exactly that command line before this runs (internal/buildinfo); this is
// the same answer for every other spelling of it and every other build.
func versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print version, commit and Go version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v, c := buildVersion()
			return buildinfo.Write(cmd.OutOrStdout(), v, c)
		},
	}
}

// buildVersion is the version and commit stamped by `make` (-ldflags -X),
// or else what the Go toolchain recorded: the module version for `go
// install ...@v1.2.3`, the VCS revision for a build in a checkout.
func buildVersion() (v, c string) {
	v, c, _ = buildinfo.Stamped()
	if info, ok := debug.ReadBuildInfo(); ok {
		if v == "dev" && info.Main.Version != "" && info.Main.Version != "(devel)" {
			v = info.Main.Version
		}
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && c == "" {
				c = s.Value
			}
		}
	}
	if c == "" {
		c = "unknown"
	}
	return v, c
}

// version is the version this binary reports.
func version() string {
	v, _ := buildVersion()
	return v
}

// closing runs close when a command ends and reports its error, unless the
// command failed already: a database that did not close cleanly is worth
// saying so.
func closing(err *error, close func() error) {
	if cerr := close(); *err == nil {
		*err = cerr
	}
}
