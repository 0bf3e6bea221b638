package main

// The command backup and restore write a snapshot of the database and put one in its place.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/copydesk/copydesk/backup"
	"github.com/copydesk/copydesk/server"
	"github.com/copydesk/copydesk/store"
)

func backupCmd() *cobra.Command {
	var c common
	var out string
	cmd := &cobra.Command{
		Use:   "backup",
		Short: "Write a consistent snapshot of the database, also while serve runs",
		Long: "Write a consistent snapshot of the database. Without --out it goes to DATA_DIR/backups and is listed by the API.\n" +
			"The snapshot is checked (PRAGMA integrity_check) and described by a sidecar FILE.json with its SHA-256.\n" +
			"Keep DATA_DIR/secret.key with your backups: without it the stored secrets in a backup cannot be read.",
		Example: "  copydesk backup\n  copydesk backup --out /mnt/backups/copydesk-$(date +%F).db",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withData(cmd, &c, func(ctx context.Context, app *server.App) error {
				var meta *backup.Meta
				var path string
				var err error
				if out != "" {
					meta, err = backup.WriteStandalone(ctx, app.DB, out, version())
					path = out
				} else {
					meta, err = app.Backups.Create(ctx, backup.KindCLI)
					if meta != nil {
						path = filepath.Join(app.Backups.Dir(), meta.Name)
					}
				}
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "wrote %s (%d bytes, schema %d)\nsha256 %s\n", path, meta.Size, meta.SchemaVersion, meta.SHA256)
				return nil
			})
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
		Example: "  copydesk restore ./copydesk-2026-11-28.db\n  copydesk restore --data-dir /var/lib/copydesk /mnt/backups/copydesk.db",
		Args:    cobra.ExactArgs(1),
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
			return withData(cmd, &c, func(ctx context.Context, app *server.App) error {
				safety, err := app.Backups.RestoreFile(ctx, args[0])
				if err != nil {
					if store.KindOf(err) == store.KindInvalid {
						return fmt.Errorf("%s is not restorable: %s", args[0], store.Message(err))
					}
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "restored %s\nthe previous database is kept as %s\n", args[0], filepath.Join(app.Backups.Dir(), safety.Name))
				return nil
			})
		},
	}
	c.register(cmd.Flags())
	return cmd
}
