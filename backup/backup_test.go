package backup_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/copydesk/copydesk/backup"
	"github.com/copydesk/copydesk/store"
)

type fixture struct {
	db  *store.DB
	m   *backup.Manager
	dir string
	now atomic.Pointer[time.Time]
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	dir := t.TempDir()
	db, err := store.Open(context.Background(), filepath.Join(dir, "copydesk.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	f := &fixture{db: db, dir: dir}
	start := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	f.now.Store(&start)
	db.Now = func() time.Time { return *f.now.Load() }
	f.m = backup.New(db, dir, "test")
	return f
}

func (f *fixture) advance(d time.Duration) {
	t := f.now.Load().Add(d)
	f.now.Store(&t)
}

func (f *fixture) env(t testing.TB, slug string) *store.Environment {
	t.Helper()
	e, err := f.db.CreateEnvironment(context.Background(), store.NewEnvironment{Name: slug, Slug: slug})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// countIn counts environments with the given slugs in a database file.
func slugsIn(t testing.TB, path string) map[string]bool {
	t.Helper()
	conn, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rows, err := conn.Query(`SELECT slug FROM environments`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var s string
		rows.Scan(&s)
		out[s] = true
	}
	return out
}

func TestCreateListGet(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.env(t, "before")
	a, err := f.m.Create(ctx, backup.KindManual)
	if err != nil {
		t.Fatal(err)
	}
	if !backup.ValidName(a.Name) || a.Kind != "manual" || a.Size == 0 || len(a.SHA256) != 64 || a.SchemaVersion != store.SchemaVersion() || a.CopydeskVersion != "test" {
		t.Fatalf("meta: %+v", a)
	}
	b, err := f.m.Create(ctx, backup.KindManual) // same second: a distinct name
	if err != nil {
		t.Fatal(err)
	}
	if a.Name == b.Name || !strings.HasSuffix(b.Name, "-manual-2.db") {
		t.Fatalf("names %s, %s", a.Name, b.Name)
	}
	f.advance(time.Minute)
	c, _ := f.m.Create(ctx, backup.KindScheduled)
	list, err := f.m.List()
	if err != nil || len(list) != 3 || list[0].Name != c.Name {
		t.Fatalf("list: %v %v", list, err)
	}
	got, err := f.m.Get(a.Name)
	if err != nil || *got != *a {
		t.Fatalf("get: %+v %v", got, err)
	}
	st, _ := os.Stat(filepath.Join(f.m.Dir(), a.Name))
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("snapshot mode %v", st.Mode())
	}
	if !slugsIn(t, filepath.Join(f.m.Dir(), a.Name))["before"] {
		t.Fatal("snapshot lacks the data")
	}
	// Files that were never admitted (no sidecar) are not backups.
	os.WriteFile(filepath.Join(f.m.Dir(), "copydesk-20260101-000000-manual.db"), []byte("x"), 0o600)
	if list, _ := f.m.List(); len(list) != 3 {
		t.Fatalf("an unadmitted file is listed: %d", len(list))
	}
}

func TestNamesAreNotPaths(t *testing.T) {
	f := newFixture(t)
	secret := filepath.Join(f.dir, "copydesk.db")
	for _, name := range []string{"../copydesk.db", "..", "/etc/passwd", secret, "copydesk-20260101-000000-manual.db/../../copydesk.db",
		"copydesk-20260101-000000-manual.db\x00", "COPYDESK-20260101-000000-MANUAL.DB", "copydesk.db", "", "%2e%2e%2fcopydesk.db"} {
		if _, err := f.m.Get(name); store.KindOf(err) != store.KindNotFound {
			t.Errorf("Get(%q): %v", name, err)
		}
		if _, _, err := f.m.Open(name); store.KindOf(err) != store.KindNotFound {
			t.Errorf("Open(%q): %v", name, err)
		}
		if err := f.m.Delete(name); store.KindOf(err) != store.KindNotFound {
			t.Errorf("Delete(%q): %v", name, err)
		}
		if _, err := f.m.Restore(context.Background(), name); store.KindOf(err) != store.KindNotFound {
			t.Errorf("Restore(%q): %v", name, err)
		}
	}
	if _, err := os.Stat(secret); err != nil {
		t.Fatal("the database is gone")
	}
}

// A snapshot taken while writers keep writing holds every row acknowledged
// before it began, and passes its integrity check.
func TestSnapshotWhileWriting(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	// Enough data that the snapshot takes a while.
	for i := 0; i < 2000; i++ {
		if _, err := f.db.CreateEnvironment(ctx, store.NewEnvironment{Name: strings.Repeat("x", 500), Slug: fmt.Sprintf("seed-%d", i),
			Description: strings.Repeat("d", 1500)}); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	acked := map[string]time.Time{}
	var wg sync.WaitGroup
	for w := 0; w < 3; w++ {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				slug := fmt.Sprintf("w%d-%d", w, i)
				if _, err := f.db.CreateEnvironment(context.Background(), store.NewEnvironment{Name: slug, Slug: slug}); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				acked[slug] = time.Now()
				mu.Unlock()
			}
		})
	}
	// Writes are acknowledged before the snapshot begins: wait for some
	// rather than for a time, which a loaded machine may spend on nothing.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= 30 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d writes acknowledged in a minute", n)
		}
	}
	began := time.Now()
	meta, err := f.m.Create(context.Background(), backup.KindManual)
	time.Sleep(20 * time.Millisecond)
	cancel()
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	have := slugsIn(t, filepath.Join(f.m.Dir(), meta.Name))
	mu.Lock()
	defer mu.Unlock()
	missing, before := 0, 0
	for slug, at := range acked {
		if at.Before(began) {
			before++
			if !have[slug] {
				missing++
			}
		}
	}
	if before == 0 || missing > 0 {
		t.Fatalf("%d of %d rows acknowledged before the snapshot are missing from it", missing, before)
	}
	if v, err := f.m.Verify(context.Background(), meta.Name); err != nil || !v.OK {
		t.Fatalf("verify: %+v %v", v, err)
	}
	if len(acked) <= before {
		t.Log("no writes landed during the snapshot; the test proved less than it could")
	}
}

func TestVerifyFindsDamage(t *testing.T) {
	f := newFixture(t)
	meta, err := f.m.Create(context.Background(), backup.KindManual)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(f.m.Dir(), meta.Name)
	b, _ := os.ReadFile(path)
	b[len(b)-100] ^= 0xff // flip a byte in the last page
	os.WriteFile(path, b, 0o600)
	v, err := f.m.Verify(context.Background(), meta.Name)
	if err != nil || v.OK || v.SHA256Matches || v.Problem == "" {
		t.Fatalf("verify of a damaged file: %+v %v", v, err)
	}
	if _, err := f.m.Restore(context.Background(), meta.Name); store.KindOf(err) != store.KindInvalid {
		t.Fatalf("restore of a damaged file: %v", err)
	}
}

func TestImportRefusesWhatIsNotACopydeskDatabase(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	good, err := f.m.Create(ctx, backup.KindManual)
	if err != nil {
		t.Fatal(err)
	}
	goodBytes, _ := os.ReadFile(filepath.Join(f.m.Dir(), good.Name))

	foreign := filepath.Join(t.TempDir(), "foreign.db")
	conn, _ := sql.Open("sqlite", foreign)
	conn.Exec(`CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)`)
	conn.Exec(`INSERT INTO notes (body) VALUES ('hello')`)
	conn.Close()
	foreignBytes, _ := os.ReadFile(foreign)

	newer := filepath.Join(t.TempDir(), "newer.db")
	os.WriteFile(newer, goodBytes, 0o600)
	conn, _ = sql.Open("sqlite", newer)
	conn.Exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (9999, '9999_future.sql', 'x')`)
	conn.Close()
	newerBytes, _ := os.ReadFile(newer)

	corrupt := append([]byte{}, goodBytes...)
	for i := 4096; i < len(corrupt) && i < 4096*3; i++ {
		corrupt[i] = 0xA5
	}
	cases := []struct {
		name    string
		content []byte
		detail  string
	}{
		{"Empty", nil, "not a SQLite database"},
		{"Text", []byte("hello, I am not a database at all, but I am long enough to have a header of one hundred bytes........"), "not a SQLite database"},
		{"Truncated", goodBytes[:len(goodBytes)/2], "truncated"},
		{"Foreign", foreignBytes, "not a copydesk one"},
		{"Newer", newerBytes, "newer"},
		{"Corrupt", corrupt, "corrupt"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := f.m.Import(ctx, strings.NewReader(string(c.content)), 1<<30)
			if store.KindOf(err) != store.KindInvalid || !strings.Contains(store.Message(err), c.detail) {
				if c.name == "Corrupt" && store.KindOf(err) == store.KindInvalid {
					return // the exact words depend on which page SQLite trips over
				}
				t.Fatalf("got %v", err)
			}
		})
	}
	if _, err := f.m.Import(ctx, strings.NewReader(string(goodBytes)), 1000); store.KindOf(err) != store.KindTooLarge {
		t.Fatalf("over the limit: %v", err)
	}
	if list, _ := f.m.List(); len(list) != 1 {
		t.Fatalf("refused imports left backups: %d", len(list))
	}
	entries, _ := os.ReadDir(f.m.Dir())
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".tmp") {
			t.Fatalf("left a temporary file: %s", e.Name())
		}
	}
	meta, err := f.m.Import(ctx, strings.NewReader(string(goodBytes)), 1<<30)
	if err != nil || meta.Kind != backup.KindUploaded || meta.SHA256 != good.SHA256 {
		t.Fatalf("good import: %+v %v", meta, err)
	}
}

func TestRestoreRoundTrip(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.env(t, "kept")
	snap, err := f.m.Create(ctx, backup.KindManual)
	if err != nil {
		t.Fatal(err)
	}
	f.env(t, "after")
	f.advance(time.Second)
	safety, err := f.m.Restore(ctx, snap.Name)
	if err != nil {
		t.Fatal(err)
	}
	envs, _, err := f.db.ListEnvironments(ctx, store.EnvironmentFilter{Scope: store.Everything, Page: store.Page{Page: 1, PerPage: 50}})
	if err != nil || len(envs) != 1 || envs[0].Slug != "kept" {
		t.Fatalf("after restore: %v %v", envs, err)
	}
	if safety.Kind != backup.KindPreRestore {
		t.Fatalf("safety: %+v", safety)
	}
	pre := slugsIn(t, filepath.Join(f.m.Dir(), safety.Name))
	if !pre["kept"] || !pre["after"] {
		t.Fatalf("the safety snapshot lacks the pre-restore state: %v", pre)
	}
	// The database works normally afterwards, writes included.
	f.env(t, "later")
	if _, err := f.m.Restore(ctx, safety.Name); err != nil {
		t.Fatal(err)
	}
	if e, err := f.db.EnvironmentByID(ctx, 2); err != nil || e.Slug != "after" {
		t.Fatalf("restoring the safety snapshot: %v %v", e, err)
	}
}

// Readers and writers that run during a restore never fail and, once it is
// done, see the restored data.
func TestRestoreUnderLoad(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.env(t, "kept")
	snap, _ := f.m.Create(ctx, backup.KindManual)
	for i := 0; i < 20; i++ {
		f.env(t, fmt.Sprintf("gone-%d", i))
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var failures atomic.Int64
	for w := 0; w < 4; w++ {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				_, release := f.db.Hold(ctx)
				var err error
				if w == 0 {
					_, err = f.db.CreateEnvironment(ctx, store.NewEnvironment{Name: "x", Slug: fmt.Sprintf("load-%d", i)})
				} else {
					_, _, err = f.db.ListEnvironments(ctx, store.EnvironmentFilter{Scope: store.Everything, Page: store.Page{Page: 1, PerPage: 10}})
				}
				release()
				if err != nil {
					failures.Add(1)
					t.Error(err)
				}
			}
		})
	}
	time.Sleep(30 * time.Millisecond)
	if _, err := f.m.Restore(ctx, snap.Name); err != nil {
		t.Fatal(err)
	}
	_, release := f.db.Hold(ctx)
	_, err := f.db.EnvironmentByID(ctx, 2)
	release()
	close(stop)
	wg.Wait()
	if failures.Load() > 0 {
		t.Fatalf("%d operations failed during the restore", failures.Load())
	}
	if !store.IsNotFound(err) {
		// id 2 was "gone-0" before; afterwards only rows written after the
		// restore can have ids > 1.
		e, _ := f.db.EnvironmentByID(ctx, 2)
		if e != nil && strings.HasPrefix(e.Slug, "gone-") {
			t.Fatalf("data from after the snapshot survived: %v", e.Slug)
		}
	}
}

func TestSchedule(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if s, _, next, err := f.m.Schedule(ctx); err != nil || s.Enabled || next != nil {
		t.Fatalf("default: %+v %v %v", s, next, err)
	}
	for _, spec := range []string{"nonsense", "* * * * *", "@every 1m", "61 * * * *"} {
		if _, err := f.m.SetSchedule(ctx, backup.Schedule{Enabled: true, Spec: spec, Retention: 3}); store.KindOf(err) != store.KindInvalid {
			t.Errorf("spec %q accepted: %v", spec, err)
		}
	}
	if _, err := f.m.SetSchedule(ctx, backup.Schedule{Enabled: true, Spec: "@every 1h", Retention: 0}); store.KindOf(err) != store.KindInvalid {
		t.Fatalf("retention 0 accepted: %v", err)
	}
	if _, err := f.m.SetSchedule(ctx, backup.Schedule{Enabled: true, Spec: "@every 1h", Retention: 2}); err != nil {
		t.Fatal(err)
	}
	if ran, err := f.m.RunDue(ctx); ran || err != nil {
		t.Fatalf("ran before it was due: %v %v", ran, err)
	}
	manual, _ := f.m.Create(ctx, backup.KindManual)
	for i := 0; i < 4; i++ {
		f.advance(time.Hour)
		if ran, err := f.m.RunDue(ctx); !ran || err != nil {
			t.Fatalf("run %d: %v %v", i, ran, err)
		}
		if ran, _ := f.m.RunDue(ctx); ran {
			t.Fatal("ran twice in one slot")
		}
	}
	list, _ := f.m.List()
	scheduled := 0
	for _, m := range list {
		if m.Kind == backup.KindScheduled {
			scheduled++
		}
	}
	if scheduled != 2 {
		t.Fatalf("retention 2 kept %d scheduled snapshots", scheduled)
	}
	if _, err := f.m.Get(manual.Name); err != nil {
		t.Fatal("retention pruned a manual snapshot")
	}
	_, st, next, _ := f.m.Schedule(ctx)
	if st.LastRunAt == nil || st.LastBackup == "" || st.LastError != "" || next == nil || !next.After(*st.LastRunAt) {
		t.Fatalf("state: %+v next %v", st, next)
	}
	// A failure is recorded, not lost.
	os.RemoveAll(f.m.Dir())
	os.WriteFile(f.m.Dir(), []byte("a file where the folder should be"), 0o600)
	f.advance(time.Hour)
	if ran, err := f.m.RunDue(ctx); !ran || err == nil {
		t.Fatalf("failing run: %v %v", ran, err)
	}
	if _, st, _, _ := f.m.Schedule(ctx); st.LastError == "" {
		t.Fatal("the failure was not recorded")
	}
}

// Next is the schedule of the job that takes scheduled snapshots: off by
// default, the stored schedule's next run once set (SetSchedule tells the
// server to plan it), and in the past for a run that was missed.
func TestScheduleNext(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	start := f.db.Now()
	if _, ok, err := f.m.Next(ctx, start); ok || err != nil {
		t.Fatalf("default: ok %v, %v", ok, err)
	}
	changed := 0
	f.m.OnScheduleChange = func(context.Context) error { changed++; return nil }
	if _, err := f.m.SetSchedule(ctx, backup.Schedule{Enabled: true, Spec: "@every 1h", Retention: 2}); err != nil {
		t.Fatal(err)
	}
	if changed != 1 {
		t.Fatalf("OnScheduleChange called %d times", changed)
	}
	next, ok, err := f.m.Next(ctx, start)
	if !ok || err != nil || !next.Equal(start.Add(time.Hour)) {
		t.Fatalf("next: %v %v %v", next, ok, err)
	}
	f.advance(5 * time.Hour) // the server was down
	if again, _, _ := f.m.Next(ctx, f.db.Now()); !again.Equal(next) {
		t.Fatalf("a missed run moved to %v", again)
	}

	f.m.OnScheduleChange = func(context.Context) error { return errors.New("no runner") }
	if _, err := f.m.SetSchedule(ctx, backup.Schedule{Enabled: true, Spec: "@every 2h", Retention: 2}); err == nil || !strings.Contains(err.Error(), "no runner") {
		t.Fatalf("a failed plan: %v", err)
	}
}

// A scheduled run stopped by its context (a shutdown, a restore) is not a
// failure: nothing is recorded or told, and it is still due.
func TestRunDueInterrupted(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.m.SetSchedule(ctx, backup.Schedule{Enabled: true, Spec: "@every 1h", Retention: 2}); err != nil {
		t.Fatal(err)
	}
	told := 0
	f.m.OnScheduledRun = func(context.Context, *backup.Meta, error) { told++ }
	f.advance(time.Hour)
	// The run's context ends once the run has found itself due, as a
	// shutdown or a restore would end it mid-run: the clock ends it when
	// the run asks for the time.
	cctx, cancel := context.WithCancel(ctx)
	clock := f.db.Now
	f.db.Now = func() time.Time { cancel(); return clock() }
	ran, err := f.m.RunDue(cctx)
	f.db.Now = clock
	if !ran || !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: %v %v", ran, err)
	}
	if _, st, _, _ := f.m.Schedule(ctx); told != 0 || st.LastRunAt != nil || st.LastError != "" {
		t.Fatalf("the interruption was recorded (%+v) or told (%d)", st, told)
	}
	if ran, err := f.m.RunDue(ctx); !ran || err != nil || told != 1 {
		t.Fatalf("the run after: %v %v, told %d", ran, err, told)
	}
}

func TestWriteStandalone(t *testing.T) {
	f := newFixture(t)
	f.env(t, "x")
	out := filepath.Join(t.TempDir(), "snap.db")
	meta, err := backup.WriteStandalone(context.Background(), f.db, out, "test")
	if err != nil {
		t.Fatal(err)
	}
	side, err := backup.ReadSidecar(out)
	if err != nil || side.SHA256 != meta.SHA256 || !slugsIn(t, out)["x"] {
		t.Fatalf("%+v %v", side, err)
	}
	if _, err := backup.WriteStandalone(context.Background(), f.db, out, "test"); err == nil {
		t.Fatal("overwrote an existing file")
	}
	// A folder that is not there is named, in words.
	missing := filepath.Join(t.TempDir(), "missing", "dir")
	if _, err := backup.WriteStandalone(context.Background(), f.db, filepath.Join(missing, "cd.db"), "test"); err == nil ||
		err.Error() != "the folder "+missing+" does not exist: create it first, or choose another --out" {
		t.Fatalf("missing folder: %v", err)
	}
	// RestoreFile refuses a file whose sidecar disagrees with it.
	b, _ := os.ReadFile(out)
	b[len(b)-1] ^= 1
	os.WriteFile(out, b, 0o600)
	if _, err := f.m.RestoreFile(context.Background(), out); store.KindOf(err) != store.KindInvalid || !strings.Contains(store.Message(err), "SHA-256") {
		t.Fatalf("tampered file: %v", err)
	}
}

// A snapshot from an older schema is brought up to date when it is
// restored: here one as the first two migrations left it, before the AI
// engine's tables (0003) and everything since.
func TestRestoreMigratesAnOlderSnapshot(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	older := filepath.Join(t.TempDir(), "older.db")
	conn, err := sql.Open("sqlite", "file:"+older)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"0001_init.sql", "0002_notifications_messages.sql"} {
		b, err := os.ReadFile(filepath.Join("..", "store", "migrations", name))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(string(b)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	for _, q := range []string{
		// As store.Open creates it: a restore wants exactly copydesk's schema.
		`CREATE TABLE IF NOT EXISTS schema_migrations (
			version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)`,
		`INSERT INTO schema_migrations VALUES (1, '0001_init.sql', '2025-01-01T00:00:00.000Z'),
			(2, '0002_notifications_messages.sql', '2025-01-01T00:00:00.000Z')`,
		`INSERT INTO environments (name, slug, created_at, updated_at) VALUES ('Kept', 'kept', '2025-01-01T00:00:00.000Z', '2025-01-01T00:00:00.000Z')`,
		fmt.Sprintf(`PRAGMA application_id = %d`, store.ApplicationID),
	} {
		if _, err := conn.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	conn.Close()
	if _, err := f.m.RestoreFile(ctx, older); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.db.ListAgents(ctx, store.AgentFilter{Page: store.Page{Page: 1, PerPage: 1}}); err != nil {
		t.Fatalf("the restored database lacks the newer tables: %v", err)
	}
	if envs, _, _ := f.db.ListEnvironments(ctx, store.EnvironmentFilter{Scope: store.Everything, Page: store.Page{Page: 1, PerPage: 5}}); len(envs) != 1 {
		t.Fatalf("environments after restore: %d", len(envs))
	}
}

// A verification is kept with the file (its sidecar): the list says when
// each was last verified and how it went, a restore does not roll it back,
// and a new Manager on the same folder (another instance sharing it) sees
// it.
func TestVerificationIsKept(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	good, err := f.m.Create(ctx, backup.KindManual)
	if err != nil {
		t.Fatal(err)
	}
	f.advance(time.Minute)
	bad, err := f.m.Create(ctx, backup.KindManual)
	if err != nil {
		t.Fatal(err)
	}
	if good.VerifiedAt != nil || good.VerifiedOK != nil {
		t.Fatalf("a new snapshot has no verification yet: %+v", good)
	}
	f.advance(time.Hour)
	verifiedAt := *f.now.Load()
	if v, err := f.m.Verify(ctx, good.Name); err != nil || !v.OK {
		t.Fatalf("verify: %+v %v", v, err)
	}
	path := filepath.Join(f.m.Dir(), bad.Name)
	b, _ := os.ReadFile(path)
	b[len(b)-100] ^= 0xff
	os.WriteFile(path, b, 0o600)
	if v, err := f.m.Verify(ctx, bad.Name); err != nil || v.OK {
		t.Fatalf("verify of a damaged file: %+v %v", v, err)
	}

	byName := func(m *backup.Manager) map[string]*backup.Meta {
		all, err := m.List()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]*backup.Meta{}
		for _, meta := range all {
			out[meta.Name] = meta
		}
		return out
	}
	list := byName(backup.New(f.db, f.dir, "test"))
	if g := list[good.Name]; g.VerifiedAt == nil || !g.VerifiedAt.Equal(verifiedAt) || g.VerifiedOK == nil || !*g.VerifiedOK {
		t.Fatalf("the sound snapshot as listed: %+v", g)
	}
	if d := list[bad.Name]; d.VerifiedAt == nil || d.VerifiedOK == nil || *d.VerifiedOK {
		t.Fatalf("the damaged snapshot as listed: %+v", d)
	}
	if g := list[good.Name]; g.SHA256 != good.SHA256 || g.Size != good.Size || !g.CreatedAt.Equal(good.CreatedAt) {
		t.Fatalf("the sidecar lost its description: %+v, was %+v", g, good)
	}

	// A restore verifies first (and keeps that), and the database going back
	// in time takes nothing of the folder's verifications with it.
	f.advance(time.Hour)
	restoredAt := *f.now.Load()
	if _, err := f.m.Restore(ctx, good.Name); err != nil {
		t.Fatal(err)
	}
	list = byName(f.m)
	if g := list[good.Name]; g.VerifiedAt == nil || !g.VerifiedAt.Equal(restoredAt) || !*g.VerifiedOK {
		t.Fatalf("after the restore: %+v", g)
	}
	if d := list[bad.Name]; d.VerifiedAt == nil || *d.VerifiedOK {
		t.Fatalf("after the restore, the damaged one: %+v", d)
	}
	// Deleted, the file's verification goes with it; no stray file is left.
	if err := f.m.Delete(bad.Name); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(f.m.Dir())
	for _, e := range entries {
		if strings.Contains(e.Name(), bad.Name) || strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("left in the folder: %s", e.Name())
		}
	}
}
