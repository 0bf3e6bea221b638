package storetest

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// Clones hands out copies of one PostgreSQL database (a test's fixture,
// closed), for a test that needs hundreds of them: the route tables.
//
// A new copy is dear: CREATE DATABASE copies a thousand files, the first
// connections to it read every catalog page again, and DROP DATABASE
// removes the files; on two cores that was about 0.3 s of the server's CPU
// a copy, most of the tables' cost. So a copy a case is done with is reset
// in place and handed out again: its tables emptied and filled from a
// snapshot of the fixture's rows (the schema copydesk_fixture, made in the
// template before the first copy), its sequences set back, in one
// transaction with triggers and foreign keys off (session_replication_role,
// which needs a superuser; without one every copy is dropped and new ones
// made, as before). New copies are made ahead, several at once, only while
// too few are ready; the owner's end drops them all.
type Clones struct {
	tpl   string
	base  string // the server's address
	admin *sql.DB
	ahead int
	ready chan string // made or reset, not handed out yet
	stop  chan struct{}
	need  chan struct{} // a copy was handed out, reset or dropped: the makers look again
	makes sync.WaitGroup
	// reset is the statement that sets a copy back to the fixture; ""
	// when copies cannot be reset (no superuser), and are dropped.
	reset string

	mu      sync.Mutex
	err     error    // the first failure of a maker
	doneErr error    // the first failure of a reset or a drop
	queue   []string // handed out and done with
	// resetting counts the copies the recycler took from queue and has
	// not made ready or dropped yet.
	resetting int
	conns     map[string]*sql.DB
	wake      chan struct{}
	idle      chan struct{} // closed when the recycler is done
	closing   bool
}

// fixtureSchema holds a snapshot of the template's rows, for resets.
const fixtureSchema = "copydesk_fixture"

// NewClones starts making copies of the database at src, ahead at a time,
// until t ends (when every copy is dropped).
func NewClones(t testing.TB, src string, ahead int) *Clones {
	t.Helper()
	base := RequirePostgres(t)
	u, err := url.Parse(src)
	if err != nil {
		t.Fatalf("storetest: %v", err)
	}
	admin, err := pgAdmin()
	if err != nil {
		t.Fatalf("storetest: %v", err)
	}
	admin.SetMaxOpenConns(ahead + 1)
	c := &Clones{tpl: strings.TrimPrefix(u.Path, "/"), base: base, admin: admin, ahead: ahead,
		ready: make(chan string, 1024), stop: make(chan struct{}), need: make(chan struct{}, 1),
		conns: map[string]*sql.DB{}, wake: make(chan struct{}, 1), idle: make(chan struct{})}
	if c.reset, err = snapshotFixture(src); err != nil {
		admin.Close()
		t.Fatalf("storetest: snapshot the fixture's rows: %v", err)
	}
	for range ahead {
		c.makes.Add(1)
		go c.make()
	}
	go c.recycle()
	t.Cleanup(func() {
		close(c.stop)
		c.makes.Wait()
		c.mu.Lock()
		c.closing = true
		c.mu.Unlock()
		signal(c.wake)
		<-c.idle
		if c.doneErr != nil {
			t.Errorf("storetest: %v", c.doneErr)
		}
		if err := c.admin.Close(); err != nil {
			t.Errorf("storetest: %v", err)
		}
	})
	return c
}

// Get returns the address of a copy of the test's own, reset or dropped
// when the test ends.
func (c *Clones) Get(t testing.TB) string {
	t.Helper()
	var name string
	select {
	case name = <-c.ready:
	case <-time.After(2 * time.Minute):
		c.mu.Lock()
		err := c.err
		c.mu.Unlock()
		t.Fatalf("storetest: no copy of %s made in 2 minutes (%v)", c.tpl, err)
	}
	signal(c.need)
	t.Cleanup(func() { c.done(name) })
	u, err := withDatabase(c.base, name)
	if err != nil {
		t.Fatalf("storetest: %v", err)
	}
	return u
}

// make makes a new copy whenever fewer than ahead are ready or on their
// way back (being reset): a copy reset is cheaper than a new one, and
// the copies stay about as many as the cases that run at once, plus ahead.
func (c *Clones) make() {
	defer c.makes.Done()
	for {
		for c.coming() >= c.ahead {
			select {
			case <-c.need:
			case <-c.stop:
				return
			}
		}
		name := "copydesk_t_" + randomName()
		if err := createFrom(c.admin, name, c.tpl); err != nil {
			c.mu.Lock()
			if c.err == nil {
				c.err = err
			}
			c.mu.Unlock()
			select {
			case <-c.stop:
				return
			case <-time.After(time.Second):
			}
			continue
		}
		select {
		case c.ready <- name:
		case <-c.stop:
			c.done(name)
			return
		}
	}
}

// coming counts the copies ready and those being reset.
func (c *Clones) coming() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(c.ready)
	if c.reset != "" {
		n += len(c.queue) + c.resetting
	}
	return n
}

// done queues a copy its test is done with, for a reset or a drop.
func (c *Clones) done(name string) {
	c.mu.Lock()
	c.queue = append(c.queue, name)
	c.mu.Unlock()
	signal(c.wake)
}

// signal leaves a token on ch unless one waits there already.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// recycle resets what done queued and makes it ready again, or drops it
// once the owner's end has begun (or when it cannot be reset), one at a
// time; at the owner's end it drops every copy left.
func (c *Clones) recycle() {
	defer close(c.idle)
	for {
		c.mu.Lock()
		todo, closing := c.queue, c.closing
		c.queue = nil
		c.resetting = len(todo)
		c.mu.Unlock()
		for _, name := range todo {
			if !closing && c.reset != "" {
				err := c.resetCopy(name)
				if err == nil {
					c.ready <- name
				} else {
					c.fail(fmt.Errorf("reset %s: %w", name, err))
					c.drop(name)
				}
			} else {
				c.drop(name)
			}
			c.mu.Lock()
			c.resetting--
			c.mu.Unlock()
			signal(c.need) // a copy back, or one fewer on its way: the makers look again
		}
		if len(todo) == 0 && closing {
			// The makers have stopped: drop what is ready, the copies a
			// reset before closing made ready too.
			for {
				select {
				case name := <-c.ready:
					c.drop(name)
					continue
				default:
				}
				return
			}
		}
		if len(todo) == 0 {
			<-c.wake
		}
	}
}

// resetCopy sets the copy name back to the fixture, over a connection of
// its own kept open between resets.
func (c *Clones) resetCopy(name string) error {
	c.mu.Lock()
	db := c.conns[name]
	c.mu.Unlock()
	if db == nil {
		u, err := withDatabase(c.base, name)
		if err != nil {
			return err
		}
		if db, err = sql.Open("pgx", u); err != nil {
			return err
		}
		db.SetMaxOpenConns(1)
		c.mu.Lock()
		c.conns[name] = db
		c.mu.Unlock()
	}
	// A reset that cannot finish fails, and its copy is dropped: one stuck
	// would hold every later case's copy.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The case's app is closed; a connection it left must not write after
	// the reset.
	// (A session that ends on its own meanwhile makes
	// pg_terminate_backend answer false: what counts is that none is left.)
	const others = ` FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'`
	if _, err := db.ExecContext(ctx, `SELECT pg_terminate_backend(pid, 10000)`+others); err != nil {
		return err
	}
	var left int
	if err := db.QueryRowContext(ctx, `SELECT count(*)`+others).Scan(&left); err != nil {
		return err
	}
	if left > 0 {
		return fmt.Errorf("%d connections of the case's still open after 10 s", left)
	}
	_, err := db.ExecContext(ctx, c.reset) // several statements: one transaction
	return err
}

func (c *Clones) drop(name string) {
	c.mu.Lock()
	db := c.conns[name]
	delete(c.conns, name)
	c.mu.Unlock()
	if db != nil {
		_ = db.Close()
	}
	if err := dropDatabase(c.admin, name); err != nil {
		c.fail(err)
	}
}

func (c *Clones) fail(err error) {
	c.mu.Lock()
	if c.doneErr == nil {
		c.doneErr = err
	}
	c.mu.Unlock()
}

// snapshotFixture copies the rows of the database at src (its current
// schema) into the schema copydesk_fixture of that database, and returns
// the statements that set a copy of it back to those rows and sequence
// values. It returns "" when the server does not let this user turn
// triggers off (session_replication_role needs a superuser).
func snapshotFixture(src string) (reset string, err error) {
	db, err := sql.Open("pgx", src)
	if err != nil {
		return "", err
	}
	db.SetMaxOpenConns(1)
	// Closed before the first copy: PostgreSQL copies a database no
	// session is connected to.
	defer func() { err = joinClose(err, db) }()
	ctx := context.Background()
	var super bool
	if err := db.QueryRowContext(ctx, `SELECT rolsuper FROM pg_roles WHERE rolname = current_user`).Scan(&super); err != nil {
		return "", err
	}
	if !super {
		return "", nil
	}
	// Each table of the schema with its columns, but the generated ones
	// (the full-text vectors), which PostgreSQL computes again. A table
	// with no other column would have no list: its statements fail, loud,
	// rather than leave it out of the reset.
	const tables = `WITH t AS (SELECT c.relname AS name, string_agg(quote_ident(a.attname), ', ' ORDER BY a.attnum) AS cols
		FROM pg_class c LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''
		WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r' GROUP BY c.relname) `
	snap, err := texts(ctx, db, tables+`SELECT format('CREATE TABLE %I.%I AS SELECT %s FROM %I;', $1::text, name, cols, name)
		FROM t ORDER BY name`, fixtureSchema)
	if err != nil {
		return "", err
	}
	fill, err := texts(ctx, db, tables+`SELECT format('DELETE FROM %I; INSERT INTO %I (%s) OVERRIDING SYSTEM VALUE SELECT %s FROM %I.%I;',
		name, name, cols, cols, $1::text, name) FROM t ORDER BY name`, fixtureSchema)
	if err != nil {
		return "", err
	}
	seqs, err := texts(ctx, db, `SELECT format('SELECT setval(%L, %s, %s);', format('%I.%I', schemaname, sequencename),
			COALESCE(last_value, start_value), CASE WHEN last_value IS NULL THEN 'false' ELSE 'true' END)
		FROM pg_sequences WHERE schemaname = current_schema()`)
	if err != nil {
		return "", err
	}
	if _, err := db.ExecContext(ctx, `CREATE SCHEMA `+fixtureSchema+`;`+strings.Join(snap, "\n")); err != nil {
		return "", err
	}
	b := append([]string{`BEGIN;`, `SET LOCAL session_replication_role = replica;`, `SET LOCAL lock_timeout = '10s';`}, fill...)
	b = append(append(b, seqs...), `COMMIT;`)
	return strings.Join(b, "\n"), nil
}

// texts runs a query of one text column and returns its rows.
func texts(ctx context.Context, db *sql.DB, q string, args ...any) ([]string, error) {
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

func joinClose(err error, db *sql.DB) error {
	if cerr := db.Close(); err == nil {
		return cerr
	}
	return err
}
