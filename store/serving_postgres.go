package store

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5"
)

// Who is serving a PostgreSQL database: every serving instance holds a
// shared advisory lock (HoldServing) for as long as it runs; `copydesk
// migrate` and the offline restore take it exclusively (LockOffline), which
// fails while any instance holds it. A session lock ends with its
// connection, so an instance that dies lets go by itself (a lease row
// would need a timeout). The key is per schema (hashtext of
// current_schema()), so installations in separate schemas of one database
// do not block each other.
const servingLockKey = `hashtext('copydesk serving ' || current_schema())`

// HoldServing takes the shared serving lock on a connection of its own
// (waiting while an offline operation holds the database) and keeps it
// until release; nothing on SQLite, where the data directory's lock says
// the same.
//
// The lock lives as long as its connection. When the connection drops (the
// database restarted, a proxy cut it) the lock is taken again on a new one
// at once, then with a growing pause (up to 5 s) until it is: otherwise
// the instance would go on serving unseen, and a restore or a migrate
// could start under it. If an offline operation took the database in
// between, lost is called (once): the instance must stop serving.
func (db *DB) HoldServing(ctx context.Context, log *slog.Logger, lost func(error)) (release func() error, err error) {
	if !db.OnPostgres() {
		return func() error { return nil }, nil
	}
	conn, err := advisoryConn(ctx, db.url, "copydesk serving lock", `WITH l AS (SELECT pg_advisory_lock_shared(`+servingLockKey+`)) SELECT 0, true FROM l`)
	if err != nil {
		return nil, err
	}
	hold, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		db.keepServing(hold, log, conn, lost)
	}()
	return func() error {
		stop()
		<-done
		return nil
	}, nil
}

// keepServing holds conn's lock until ctx ends, and takes it again on a new
// connection whenever the one holding it drops. If an offline operation got
// the lock in between, lost is told, once, and the lock is not taken again.
func (db *DB) keepServing(ctx context.Context, log *slog.Logger, conn *pgx.Conn, lost func(error)) {
	for {
		// Nothing is listened for: this returns when the connection
		// drops, or when ctx ends.
		err := conn.PgConn().WaitForNotification(ctx)
		_ = conn.Close(context.WithoutCancel(ctx)) // the lock goes with it; nothing else to flush
		if ctx.Err() != nil {
			return
		}
		log.Warn("the connection holding the serving lock dropped; taking the lock again", "err", err)
		var pace reconnectPace
		for {
			if conn, err = advisoryConn(ctx, db.url, "copydesk serving lock", `SELECT 0, pg_try_advisory_lock_shared(`+servingLockKey+`)`); err == nil {
				log.Info("the serving lock is held again")
				break
			}
			if ctx.Err() != nil {
				return
			}
			if KindOf(err) == KindConflict {
				lost(fmt.Errorf("an offline operation (copydesk restore or migrate) took %s while this instance served it", RedactURL(db.url)))
				return
			}
			log.Warn("cannot take the serving lock again; trying again", "err", err, "in", pace.next())
			if !pace.wait(ctx) {
				return
			}
		}
	}
}

// LockOffline takes the serving lock exclusively, or fails (KindConflict)
// while an instance serves the database at url.
func LockOffline(ctx context.Context, url string) (release func() error, err error) {
	conn, err := advisoryConn(ctx, url, "copydesk offline lock", `SELECT 0, pg_try_advisory_lock(`+servingLockKey+`)`)
	if err != nil {
		return nil, err
	}
	return func() error { return conn.Close(context.WithoutCancel(ctx)) }, nil
}

// advisoryConn opens a connection named name and runs query on it, which
// answers (anything, whether the lock was got); a lock not got is a
// conflict, and the connection is closed.
func advisoryConn(ctx context.Context, url, name, query string) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("store: the database address is not valid: %w", err)
	}
	appName(cfg, name)
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("store: connect to %s: %w", RedactURL(url), err)
	}
	var ignored any
	var got bool
	if err := conn.QueryRow(ctx, query).Scan(&ignored, &got); err != nil {
		_ = conn.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("store: the serving lock on %s: %w", RedactURL(url), err)
	}
	if !got {
		_ = conn.Close(context.WithoutCancel(ctx))
		return nil, Conflict("a copydesk instance is serving %s: stop every instance first", RedactURL(url))
	}
	return conn, nil
}
