package main

// The command migrate copies an installation from one database to another
// (SQLite data directory or PostgreSQL), verified table by table.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/copydesk/copydesk/server"
	"github.com/copydesk/copydesk/store"
)

func migrateCmd() *cobra.Command {
	var from, to string
	cmd := &cobra.Command{
		Use:   "migrate --from SRC --to DST",
		Short: "Copy an installation to another database (SQLite <-> PostgreSQL), verified table by table",
		Long: "Copy every table from SRC to DST, each a data directory (its copydesk.db) or a postgres:// URL, in one\n" +
			"consistent read of SRC, then verify every table's row count and checksum on DST. DST must be empty (a new data\n" +
			"directory or a new database); it is created and migrated to this copydesk's schema, as SRC is. No server may be\n" +
			"serving SRC or DST (the data directory's lock; on PostgreSQL the serving lock every instance holds).\n" +
			"Give the instances that serve DST the same secret key as SRC (secret.key or COPYDESK_SECRET_KEY).",
		Example: "  copydesk migrate --from /var/lib/copydesk --to postgres://copydesk@db/copydesk\n" +
			"  copydesk migrate --from postgres://copydesk@db/copydesk --to /var/lib/copydesk-new",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			if from == "" || to == "" {
				return errors.New("give both --from and --to")
			}
			ctx := cmd.Context()
			src, closeSrc, err := openMigrateSide(ctx, from, false)
			if err != nil {
				return err
			}
			defer closing(&err, closeSrc)
			dst, closeDst, err := openMigrateSide(ctx, to, true)
			if err != nil {
				return err
			}
			defer closing(&err, closeDst)
			rep, err := src.CopyTo(ctx, dst)
			if err != nil {
				if store.KindOf(err) == store.KindConflict {
					return errors.New(store.Message(err))
				}
				return err
			}
			out := cmd.OutOrStdout()
			total := printCopyReport(out, rep)
			fmt.Fprintf(out, "copied %d rows in %d tables at schema version %d from %s to %s; every table verified\n",
				total, len(rep.Tables), rep.SchemaVersion, redact(from), redact(to))
			return nil
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "the installation to copy: a data directory or a postgres:// URL")
	cmd.Flags().StringVar(&to, "to", "", "where to copy it: a new data directory or an empty PostgreSQL database")
	return cmd
}

// printCopyReport prints a line per table a copy wrote and returns the
// number of rows (migrate, restore --database).
func printCopyReport(out io.Writer, rep *store.CopyReport) int64 {
	var total int64
	for _, t := range rep.Tables {
		fmt.Fprintf(out, "%-28s %8d rows  checksum %s  verified\n", t.Table, t.Rows, t.Checksum)
		total += t.Rows
	}
	return total
}

func redact(s string) string {
	if store.IsPostgresURL(s) {
		return store.RedactURL(s)
	}
	return s
}

// openMigrateSide opens a data directory (locked, as restore does) or a
// PostgreSQL database (its serving lock taken exclusively) for migrate. A
// target data directory is created; a source must hold a database.
func openMigrateSide(ctx context.Context, where string, target bool) (*store.DB, func() error, error) {
	var release func() error
	path := where
	if store.IsPostgresURL(where) {
		rel, err := store.LockOffline(ctx, where)
		if err != nil {
			return nil, nil, err
		}
		release = rel
	} else {
		if target {
			if err := os.MkdirAll(where, 0o700); err != nil {
				return nil, nil, err
			}
		} else if err := requireData(where); err != nil {
			return nil, nil, err
		}
		lock, err := server.LockDataDir(where, fmt.Sprintf("copydesk migrate (pid %d)", os.Getpid()))
		if err != nil {
			if errors.Is(err, server.ErrLocked) {
				return nil, nil, fmt.Errorf("%w\nstop the server first: migrate copies an installation no one is writing", err)
			}
			return nil, nil, err
		}
		release = lock.Unlock
		path = filepath.Join(where, server.DBFile)
	}
	db, err := store.Open(ctx, path, store.Options{})
	if err != nil {
		return nil, nil, errors.Join(err, release())
	}
	return db, func() error { return errors.Join(db.Close(), release()) }, nil
}
