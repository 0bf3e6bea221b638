package clustertest_test

import (
	"database/sql"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/copydesk/copydesk/internal/clustertest"
	"github.com/copydesk/copydesk/store"
	"github.com/copydesk/copydesk/store/storetest"
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

// TestExpiredLeaseTakenOver: a job left running by an instance that
// stopped renewing its lease (as one killed with kill -9 leaves it) is
// taken over by a live instance once the lease expires, and run to its
// end. It logs how long that took from the last renewal: the lease plus
// at most one poll, plus the run.
func TestExpiredLeaseTakenOver(t *testing.T) {
	const lease = 2 * time.Second
	c := clustertest.New(t, clustertest.Options{Args: []string{"--lease", lease.String(), "--job-poll", "100ms"}})
	c.Start(t)
	db, err := sql.Open("pgx", c.Database)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// The dead instance's last renewal was now: its lease runs to now+lease.
	renewed := time.Now()
	f := func(t time.Time) string { return t.UTC().Format(store.TimeFormat) }
	var id int64
	if err := db.QueryRow(`INSERT INTO jobs (kind, payload, status, attempts, max_attempts, run_after, created_at, started_at, updated_at, lease_owner, lease_until)
		VALUES ('housekeeping', '{}', 'running', 1, 2, $1, $1, $1, $1, 'dead-instance', $2) RETURNING id`,
		f(renewed), f(renewed.Add(lease))).Scan(&id); err != nil {
		t.Fatal(err)
	}
	var status, lastErr string
	for {
		if err := db.QueryRow(`SELECT status, last_error FROM jobs WHERE id = $1`, id).Scan(&status, &lastErr); err != nil {
			t.Fatal(err)
		}
		if status == "succeeded" || status == "failed" || time.Since(renewed) > 20*time.Second {
			break
		}
		if status == "running" && time.Since(renewed) < lease-200*time.Millisecond {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		time.Sleep(20 * time.Millisecond)
	}
	took := time.Since(renewed)
	if status != "succeeded" {
		t.Fatalf("the dead instance's job is %s (%q) %v after its last renewal, want succeeded", status, lastErr, took)
	}
	if took < lease {
		t.Fatalf("the job was taken over %v after the last renewal, before its %v lease expired", took, lease)
	}
	t.Logf("a job whose instance died was finished by another %v after its last renewal (lease %v, poll 100ms)", took.Round(10*time.Millisecond), lease)
}

// TestInstanceStopsWhenTheDatabaseIsTakenOffline: an instance whose
// serving lock's connection drops takes the lock again; when an offline
// operation (restore, migrate) waiting for the database got it first, the
// instance stops serving, saying why, rather than write into what is
// being replaced.
func TestInstanceStopsWhenTheDatabaseIsTakenOffline(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{})
	a := c.Start(t)
	db, err := sql.Open("pgx", c.Database)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	got := storetest.QueueOfflineLock(t, db)
	if _, err := db.Exec(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE application_name = 'copydesk serving lock' AND datname = current_database()`); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if !a.Exited(30 * time.Second) {
		t.Fatalf("the instance serves on while an offline operation holds the database:\n%s", a.Log())
	}
	if !strings.Contains(a.Log(), "offline operation") {
		t.Fatalf("the instance stopped without saying why:\n%s", a.Log())
	}
}
