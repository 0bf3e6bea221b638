package store

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Events between instances. On PostgreSQL several instances share the
// database, and a subscriber connected to one must hear what another
// publishes: a write that others must hear of announces its row on one
// channel of the database (NOTIFY, in the write's own transaction; ids,
// never the row itself, which the listener reads from the database), and
// FollowAnnouncements hears every instance's. On SQLite there is one instance: nothing
// is announced and FollowAnnouncements returns at once.

// eventsChannel is the one channel of copydesk's announcements.
const eventsChannel = "copydesk_events"

// FollowAnnouncements calls fn with each announcement of every instance, in the order
// the database delivers them, until ctx ends. It holds one connection of
// its own; when that connection drops it reconnects with a growing pause
// (up to 5 s), and calls connected after each (re)connection: what was
// announced while it was away is lost, so the caller catches up then (an
// event stream can be told to resume from Last-Event-ID). On SQLite it
// returns at once.
func (db *DB) FollowAnnouncements(ctx context.Context, log *slog.Logger, connected func(first bool), fn func(payload string)) {
	if !db.OnPostgres() {
		return
	}
	var pace reconnectPace
	first := true
	for ctx.Err() == nil {
		err := db.listenOnce(ctx, func() {
			pace = reconnectPace{}
			connected(first)
			first = false
		}, fn)
		if ctx.Err() != nil {
			return
		}
		log.Warn("the connection listening for other instances' events dropped; reconnecting", "err", err, "in", pace.next())
		if !pace.wait(ctx) {
			return
		}
	}
}

// reconnectPace paces the reconnections of a connection that dropped (the
// listening one, the serving lock's): 0.1 s, doubling up to 5 s.
type reconnectPace struct{ tries int }

// next is the pause wait takes next.
func (p *reconnectPace) next() time.Duration {
	return min(100*time.Millisecond<<min(p.tries, 6), 5*time.Second)
}

// wait pauses for next, and reports false if ctx ended first.
func (p *reconnectPace) wait(ctx context.Context) bool {
	d := p.next()
	p.tries++
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

func (db *DB) listenOnce(ctx context.Context, connected func(), fn func(string)) error {
	cfg, err := pgx.ParseConfig(db.url)
	if err != nil {
		return err
	}
	appName(cfg, "copydesk events")
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }() // a listening connection: nothing to flush
	if _, err := conn.Exec(ctx, `LISTEN `+eventsChannel); err != nil {
		return err
	}
	connected()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		fn(n.Payload)
	}
}

// What an announcement names: "KIND OWNER ID", such as "notification 7
// 123" (notification 123, of user 7).
const AnnouncedNotification = "notification"

// AnnouncedJobCancelled is a job cancelled through an instance that does
// not run it ("job-cancelled 0 ID"): the instance running it stops its
// handler at once rather than at its next lease renewal.
const AnnouncedJobCancelled = "job-cancelled"

// AnnounceJobCancelled announces that job id was cancelled (see
// AnnouncedJobCancelled); on SQLite it does nothing.
func (db *DB) AnnounceJobCancelled(ctx context.Context, id int64) error {
	return db.AnnounceAll(ctx, []string{fmt.Sprintf("%s 0 %d", AnnouncedJobCancelled, id)})
}

// Announcement is a parsed announcement.
type Announcement struct {
	Kind  string
	Owner int64
	ID    int64
}

// ParseAnnouncement reads what announceIn sent; ok is false for anything
// else.
func ParseAnnouncement(payload string) (a Announcement, ok bool) {
	n, err := fmt.Sscanf(payload, "%s %d %d", &a.Kind, &a.Owner, &a.ID)
	return a, err == nil && n == 3
}

// orderAnnouncements makes the write transactions of one kind (a table
// whose rows are announced) take turns across instances, to their commit:
// then ids, commits and announcements come in one order, which a stream
// resumed by id (Last-Event-ID) relies on. On SQLite one writer does this
// already.
func (db *DB) orderAnnouncements(ctx context.Context, tx *sql.Tx, kind string) error {
	if !db.OnPostgres() {
		return nil
	}
	_, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtext('copydesk announcements'), hashtext(?))`, kind)
	return err
}

// announceIn announces a row in its own transaction: PostgreSQL delivers
// it when (and only if) the transaction commits, in commit order.
func (db *DB) announceIn(ctx context.Context, tx *sql.Tx, kind string, owner, id int64) error {
	if !db.OnPostgres() {
		return nil
	}
	_, err := tx.ExecContext(ctx, `SELECT pg_notify('`+eventsChannel+`', ?)`, fmt.Sprintf("%s %d %d", kind, owner, id))
	return err
}

// MaxAnnouncement is the longest payload an announcement may carry:
// PostgreSQL refuses 8000 bytes or more.
const MaxAnnouncement = 7999

// AnnounceAll sends payloads to every instance's FollowAnnouncements, in
// their order, in one statement (one transaction, whose notifications
// PostgreSQL delivers in the order they were sent). Each must be at most
// MaxAnnouncement bytes and differ from the others (PostgreSQL delivers
// one of identical ones). On SQLite it does nothing.
func (db *DB) AnnounceAll(ctx context.Context, payloads []string) error {
	if !db.OnPostgres() || len(payloads) == 0 {
		return nil
	}
	q := make([]string, len(payloads))
	args := make([]any, len(payloads))
	for i, p := range payloads {
		q[i] = `pg_notify('` + eventsChannel + `', ?)`
		args[i] = p
	}
	_, err := db.w.ExecContext(ctx, `SELECT `+strings.Join(q, ", "), args...)
	return err
}
