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
			"refuses: restore through the API (POST /api/backup/{name}/restore) instead, or stop the server.\n" +
			"With --database postgres://..., the snapshot replaces that PostgreSQL database's whole content in one\n" +
			"transaction, verified table by table; every instance serving it must be stopped first (the API's restore\n" +
			"answers 409 on PostgreSQL), and a snapshot of the previous content is kept in DATA_DIR/backups.",
		Example: "  copydesk restore ./copydesk-2026-11-28.db\n  copydesk restore --data-dir /var/lib/copydesk /mnt/backups/copydesk.db\n" +
			"  copydesk restore --database postgres://copydesk@db/copydesk /mnt/backups/copydesk.db",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			if c.database != "" {
				return restoreIntoPostgres(cmd, &c, args[0])
			}
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
					return notRestorable(args[0], err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "restored %s\nthe previous database is kept as %s\n", args[0], filepath.Join(app.Backups.Dir(), safety.Name))
				return nil
			})
		},
	}
	c.register(cmd.Flags())
	return cmd
}

// restoreIntoPostgres is `restore --database postgres://...`: offline, under
// the serving lock taken exclusively (no instance may serve the database
// while its whole content is replaced), with a snapshot of the previous
// content kept in DATA_DIR/backups first.
func restoreIntoPostgres(cmd *cobra.Command, c *common, file string) (err error) {
	ctx := cmd.Context()
	if !store.IsPostgresURL(c.database) {
		return fmt.Errorf("--database must be a PostgreSQL address (postgres://USER:PASSWORD@HOST:PORT/DB), not %q", store.RedactURL(c.database))
	}
	if err := backup.CheckSidecar(file); err != nil { // RestoreSnapshot checks the rest, once
		return notRestorable(file, err)
	}
	release, err := store.LockOffline(ctx, c.database)
	if err != nil {
		if store.KindOf(err) == store.KindConflict {
			return fmt.Errorf("%s\na restore replaces the whole database, which no instance may be serving meanwhile", store.Message(err))
		}
		return err
	}
	defer closing(&err, release)
	db, err := store.Open(ctx, c.database, store.Options{})
	if err != nil {
		return err
	}
	defer closing(&err, db.Close)
	// The previous content is kept once the file is known good.
	var safety *backup.Meta
	rep, err := store.RestoreSnapshot(ctx, file, db, func(ctx context.Context) (err error) {
		if safety, err = backup.New(db, c.dataDir, version()).Create(ctx, backup.KindPreRestore); err != nil {
			return fmt.Errorf("keep a snapshot of the database before replacing it: %w", err)
		}
		return nil
	})
	if err != nil {
		return notRestorable(file, err)
	}
	out := cmd.OutOrStdout()
	total := printCopyReport(out, rep)
	fmt.Fprintf(out, "restored %s into %s: %d rows in %d tables at schema version %d; every table verified; every session ended\n",
		file, store.RedactURL(c.database), total, len(rep.Tables), rep.SchemaVersion)
	fmt.Fprintf(out, "the previous content is kept as %s\n", filepath.Join(c.dataDir, backup.DirName, safety.Name))
	return nil
}

// notRestorable says why file cannot be restored when err is about the
// file (KindInvalid), and passes any other error on.
func notRestorable(file string, err error) error {
	if store.KindOf(err) == store.KindInvalid {
		return fmt.Errorf("%s is not restorable: %s", file, store.Message(err))
	}
	return err
}
