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
// closed), for a test that needs hundreds of them: the route tables. A
// copy costs a CREATE DATABASE and a DROP DATABASE, about a second
// between them, mostly waiting on the server; done one at a time inside
// each case they were most of the tables' ten minutes. Here copies are
// made ahead, several at once, while the cases run, and dropped in the
// background after their case; the owner's end drops the rest.
type Clones struct {
	tpl   string
	admin *sql.DB
	ready chan string // made, not handed out yet
	stop  chan struct{}
	makes sync.WaitGroup

	mu      sync.Mutex
	err     error    // the first failure of a maker
	dropErr error    // the first failure of a drop
	drops   []string // handed out and done with
	wake    chan struct{}
	dropped chan struct{} // closed when the dropper is done
	closing bool
}

// NewClones starts making copies of the database at src, ahead at a time,
// until t ends (when every copy is dropped).
func NewClones(t testing.TB, src string, ahead int) *Clones {
	t.Helper()
	RequirePostgres(t)
	u, err := url.Parse(src)
	if err != nil {
		t.Fatalf("storetest: %v", err)
	}
	admin, err := pgAdmin()
	if err != nil {
		t.Fatalf("storetest: %v", err)
	}
	admin.SetMaxOpenConns(ahead + 1)
	c := &Clones{tpl: strings.TrimPrefix(u.Path, "/"), admin: admin, ready: make(chan string, ahead),
		stop: make(chan struct{}), wake: make(chan struct{}, 1), dropped: make(chan struct{})}
	for range ahead {
		c.makes.Add(1)
		go c.make()
	}
	go c.dropper()
	t.Cleanup(func() {
		close(c.stop)
		c.makes.Wait()
		close(c.ready)
		for name := range c.ready {
			c.done(name)
		}
		c.mu.Lock()
		c.closing = true
		c.mu.Unlock()
		c.poke()
		<-c.dropped
		if c.dropErr != nil {
			t.Errorf("storetest: %v", c.dropErr)
		}
		if err := c.admin.Close(); err != nil {
			t.Errorf("storetest: %v", err)
		}
	})
	return c
}

// Get returns the address of a copy of the test's own, dropped when the
// test ends.
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
	t.Cleanup(func() { c.done(name) })
	u, err := withDatabase(RequirePostgres(t), name)
	if err != nil {
		t.Fatalf("storetest: %v", err)
	}
	return u
}

func (c *Clones) make() {
	defer c.makes.Done()
	for {
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

func (c *Clones) done(name string) {
	c.mu.Lock()
	c.drops = append(c.drops, name)
	c.mu.Unlock()
	c.poke()
}

func (c *Clones) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// dropper drops what done queued, one at a time (a drop beside the makers'
// creates slows them less than several would), until the owner's end.
func (c *Clones) dropper() {
	defer close(c.dropped)
	for {
		c.mu.Lock()
		todo, closing := c.drops, c.closing
		c.drops = nil
		c.mu.Unlock()
		for _, name := range todo {
			if _, err := c.admin.ExecContext(context.Background(), `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`); err != nil {
				c.mu.Lock()
				if c.dropErr == nil {
					c.dropErr = fmt.Errorf("drop %s: %w", name, err)
				}
				c.mu.Unlock()
			}
		}
		if len(todo) == 0 && closing {
			return
		}
		if len(todo) == 0 {
			<-c.wake
		}
	}
}
