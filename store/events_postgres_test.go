package store_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/copydesk/copydesk/store"
	"github.com/copydesk/copydesk/store/storetest"
)

// instances opens n stores on one fresh PostgreSQL database, as n
// instances of copydesk would (skipped without COPYDESK_TEST_DATABASE).
func instances(t *testing.T, n int) []*store.DB {
	t.Helper()
	url := storetest.NewPostgres(t)
	dbs := make([]*store.DB, n)
	for i := range dbs {
		db, err := store.Open(context.Background(), url, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		dbs[i] = db
	}
	return dbs
}

// listen runs db.FollowAnnouncements until the test ends and returns what it hears, and
// each connection (true for the first).
func listen(t *testing.T, db *store.DB) (<-chan store.Announcement, <-chan bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	heard, conns := make(chan store.Announcement, 1000), make(chan bool, 10)
	done := make(chan struct{})
	go func() {
		defer close(done)
		db.FollowAnnouncements(ctx, slog.New(slog.NewTextHandler(io.Discard, nil)), func(first bool) { conns <- first }, func(p string) {
			if a, ok := store.ParseAnnouncement(p); ok {
				heard <- a
			} else {
				t.Errorf("announcement %q does not parse", p)
			}
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-conns:
	case <-time.After(10 * time.Second):
		t.Fatal("FollowAnnouncements did not connect")
	}
	return heard, conns
}

func hear(t *testing.T, heard <-chan store.Announcement) store.Announcement {
	t.Helper()
	select {
	case a := <-heard:
		return a
	case <-time.After(10 * time.Second):
		t.Fatal("no announcement within 10 s")
		return store.Announcement{}
	}
}

// Notifications stored by two instances at once are announced to a third
// in the order of their ids, each once: a stream resumed by id loses none.
func TestNotificationsAnnouncedInOrder(t *testing.T) {
	ctx := context.Background()
	dbs := instances(t, 3)
	u := mustUser(t, dbs[0], "ann", store.RoleEditor)
	heard, _ := listen(t, dbs[2])
	const each = 20
	var wg sync.WaitGroup
	for _, db := range dbs[:2] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				if _, err := db.CreateNotifications(ctx, []int64{u.ID}, store.NewNotification{Kind: "run.succeeded", Title: "done"}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	var last int64
	for range 2 * each {
		a := hear(t, heard)
		if a.Kind != store.AnnouncedNotification || a.Owner != u.ID || a.ID <= last {
			t.Fatalf("announcement %+v after id %d", a, last)
		}
		last = a.ID
	}
}

// When the listening connection is cut, FollowAnnouncements connects again, says so,
// and hears what is announced from then on.
func TestFollowAnnouncementsReconnects(t *testing.T) {
	ctx := context.Background()
	db := instances(t, 1)[0]
	u := mustUser(t, db, "ann", store.RoleEditor)
	heard, conns := listen(t, db)
	raw := storetest.Raw(t, db)
	if _, err := raw.ExecContext(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND query LIKE 'LISTEN%'`); err != nil {
		t.Fatal(err)
	}
	select {
	case first := <-conns:
		if first {
			t.Fatal("a reconnection reported as the first connection")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("FollowAnnouncements did not reconnect")
	}
	created, err := db.CreateNotifications(ctx, []int64{u.ID}, store.NewNotification{Kind: "run.succeeded", Title: "done"})
	if err != nil {
		t.Fatal(err)
	}
	if a := hear(t, heard); a.ID != created[0].ID {
		t.Fatalf("heard %+v, want notification %d", a, created[0].ID)
	}
}
