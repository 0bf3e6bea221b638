package clustertest_test

import (
	"database/sql"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/copydesk/copydesk/internal/clustertest"
	"github.com/copydesk/copydesk/store"
)

// TestRecurringFiresOncePerSlot: two instances plan the hourly
// housekeeping together, and leave one queued job for the next hour; made
// due, that slot is run by one of them, once, and the next is planned once.
func TestRecurringFiresOncePerSlot(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Args: []string{"--lease", "2s", "--job-poll", "100ms"}})
	a, b := make(chan *clustertest.Instance), make(chan *clustertest.Instance)
	go func() { a <- c.Start(t) }() // at once: both plan on starting
	go func() { b <- c.Start(t) }()
	<-a
	<-b
	db, err := sql.Open("pgx", c.Database)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const kind = "housekeeping"
	count := func(status string) (n int) {
		t.Helper()
		if err := db.QueryRow(`SELECT count(*) FROM jobs WHERE kind = $1 AND status = $2`, kind, status).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count("queued"); n != 1 {
		t.Fatalf("%d queued %s jobs after two instances started, want 1", n, kind)
	}
	// The slot comes: both instances poll for it.
	slot := time.Now().Add(-time.Second).UTC().Format(store.TimeFormat)
	if _, err := db.Exec(`UPDATE jobs SET run_after = $1 WHERE kind = $2 AND status = 'queued'`, slot, kind); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for count("succeeded") == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond) // five polls of each: a second run would show
	var runs int
	if err := db.QueryRow(`SELECT count(*) FROM jobs WHERE kind = $1 AND status <> 'queued'`, kind).Scan(&runs); err != nil {
		t.Fatal(err)
	}
	if runs != 1 || count("succeeded") != 1 {
		t.Fatalf("the slot ran %d times (%d succeeded), want once", runs, count("succeeded"))
	}
	if n := count("queued"); n != 1 {
		t.Fatalf("%d queued %s jobs after the run, want 1 (the next slot)", n, kind)
	}
}
