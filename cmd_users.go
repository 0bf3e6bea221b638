package main

// The command users manages accounts from the shell.

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/copydesk/copydesk/server"
	"github.com/copydesk/copydesk/server/auth"
	"github.com/copydesk/copydesk/store"
)

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
			"default path or with --init: a mistyped --data-dir is an error, not a new empty instance. With --database\n" +
			"postgres://... the account goes into that database (migrated first if new); --init is not needed.",
		Example: "  copydesk users create --email you@example.com --username you --role super_admin\n" +
			"  printf '%s' \"$PASSWORD\" | copydesk users create --email ed@example.com --username ed --role editor --password-stdin",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// On PostgreSQL the database is the instance (named on purpose by
			// --database); the data directory holds no database, only the key.
			if cc.database == "" {
				if err := prepareData(cc.dataDir, initData, cmd.ErrOrStderr()); err != nil {
					return err
				}
			}
			cc.mayCreate = true
			pw, err := newPassword(cmd, fromStdin)
			if err != nil {
				return err
			}
			return withData(cmd, &cc, func(ctx context.Context, app *server.App) error {
				u, err := app.Auth.CreateUser(ctx, auth.NewAccount{Email: email, Username: username, FullName: fullName, Password: pw, Role: store.Role(role)})
				if err != nil {
					return errors.New(store.Message(err))
				}
				fmt.Fprintf(cmd.OutOrStdout(), "created user %d %s (%s)\n", u.ID, u.Email, u.Role)
				return nil
			})
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
		Use:     "set-password",
		Example: "  copydesk users set-password --email you@example.com",
		Short:   "Set an account's password (account recovery); ends all its sessions",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			pw, err := newPassword(cmd, spStdin)
			if err != nil {
				return err
			}
			return withData(cmd, &sc, func(ctx context.Context, app *server.App) error {
				u, err := app.Auth.SetPassword(ctx, spEmail, pw)
				if err != nil {
					return errors.New(store.Message(err))
				}
				fmt.Fprintf(cmd.OutOrStdout(), "password set for user %d %s; its sessions were ended\n", u.ID, u.Email)
				return nil
			})
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
		Use:     "list",
		Example: "  copydesk users list\n  copydesk users list --data-dir /var/lib/copydesk",
		Short:   "List accounts",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withData(cmd, &lc, func(ctx context.Context, app *server.App) error {
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tEMAIL\tUSERNAME\tROLE\tACTIVE\t2FA\tCREATED")
				for page := 1; ; page++ {
					users, total, err := app.DB.ListUsers(ctx, store.UserFilter{Page: store.Page{Page: page, PerPage: 200}})
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
			})
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
		Use:     use,
		Example: "  copydesk users " + use + " --email you@example.com",
		Short:   short,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withData(cmd, &c, func(ctx context.Context, app *server.App) error {
				out, err := do(ctx, app, email)
				if err != nil {
					return errors.New(store.Message(err))
				}
				fmt.Fprintln(cmd.OutOrStdout(), out)
				return nil
			})
		},
	}
	c.register(cmd.Flags())
	cmd.Flags().StringVar(&email, "email", "", "e-mail address of the account (required)")
	_ = cmd.MarkFlagRequired("email")
	return cmd
}
