// Command copydesk is a self-hosted content and SEO automation server: one
// binary, one SQLite file. See README.md.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	_ "time/tzdata" // time zones work on hosts without a zoneinfo database

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/copydesk/copydesk/internal/buildinfo"
	"github.com/copydesk/copydesk/server"
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
	root.AddCommand(serveCmd(), usersCmd(), backupCmd(), restoreCmd(), migrateCmd(), licenseCmd(), healthCmd(), versionCmd())
	// --version says what `copydesk version` says. Not cobra's own
	// version flag: its template would link text/template, whose use of
	// reflection keeps every exported method reachable and grows the
	// binary and its init (TestStartupInitBudget).
	showVersion := root.Flags().Bool("version", false, "print version, commit and Go version (as copydesk version)")
	root.RunE = func(cmd *cobra.Command, _ []string) error {
		if *showVersion {
			v, c := buildVersion()
			return buildinfo.Write(cmd.OutOrStdout(), v, c)
		}
		return cmd.Help()
	}
	root.Args = cobra.NoArgs
	root.SetFlagErrorFunc(flagError)
	return root
}

// flagError is what a command says of a flag it does not know: the error,
// then where to look, listing the subcommands of a command that has them
// (`copydesk users --data-dir X` means `copydesk users list --data-dir X`).
func flagError(cmd *cobra.Command, err error) error {
	var hint strings.Builder
	if cmd.HasAvailableSubCommands() {
		fmt.Fprintf(&hint, "%q takes its flags after a subcommand:", cmd.CommandPath())
		for _, sub := range cmd.Commands() {
			if sub.IsAvailableCommand() {
				fmt.Fprintf(&hint, "\n  %s %-13s %s", cmd.CommandPath(), sub.Name(), sub.Short)
			}
		}
		fmt.Fprintf(&hint, "\nRun '%s SUBCOMMAND --help' for its flags.", cmd.CommandPath())
	} else {
		fmt.Fprintf(&hint, "Run '%s --help' for its flags.", cmd.CommandPath())
	}
	return fmt.Errorf("%w\n%s", err, hint.String())
}

// common holds the flags every command that touches the data takes.
type common struct {
	dataDir   string
	database  string // a postgres:// URL: the database instead of the data directory's SQLite file
	logLevel  string
	logFormat string
	mayCreate bool // this command may create a new instance (users create --init)
}

func (c *common) register(fs *pflag.FlagSet) {
	fs.StringVar(&c.dataDir, "data-dir", defaultDataDir, "folder for the database and secret key")
	fs.StringVar(&c.database, "database", "", "a PostgreSQL database (postgres://USER:PASSWORD@HOST:PORT/DB) to use instead of the data directory's SQLite file; see docs/scaling.md")
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

// openData opens the data directory for a one-shot command. It must hold
// a database already (requireData), unless the command prepared it.
func openData(cmd *cobra.Command, c *common) (*server.App, error) {
	log, err := c.logger(cmd.ErrOrStderr())
	if err != nil {
		return nil, err
	}
	if c.database == "" {
		if err := requireData(c.dataDir); err != nil && !c.mayCreate {
			return nil, err
		}
	}
	return server.OpenData(cmd.Context(), server.Config{DataDir: c.dataDir, Database: c.database,
		SecretKey: os.Getenv("COPYDESK_SECRET_KEY"), Version: version()}, log)
}

// withData opens the data directory for a one-shot command (openData),
// runs do on it and closes it again: the life of every command but serve.
func withData(cmd *cobra.Command, c *common, do func(ctx context.Context, app *server.App) error) (err error) {
	app, err := openData(cmd, c)
	if err != nil {
		return err
	}
	defer closing(&err, app.Close)
	return do(cmd.Context(), app)
}

// closing runs close when a command ends and reports its error, unless the
// command failed already: a database that did not close cleanly is worth
// saying so.
func closing(err *error, close func() error) {
	if cerr := close(); *err == nil {
		*err = cerr
	}
}
