package store_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/copydesk/copydesk/store"
	"github.com/copydesk/copydesk/store/storetest"
)

// ChangeMark moves with every committed write of this process, and with the
// writes another process announces; reads leave it alone.
func TestChangeMark(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "copydesk.db")
	server, err := store.Open(ctx, path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	cli, err := store.Open(ctx, path, store.Options{Announce: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()

	m0 := server.ChangeMark()
	if _, _, err := server.ListUsers(ctx, store.UserFilter{Page: store.Page{Page: 1, PerPage: 10}}); err != nil {
		t.Fatal(err)
	}
	if server.ChangeMark() != m0 {
		t.Fatal("a read moved the mark")
	}
	if _, err := server.CreateEnvironment(ctx, store.NewEnvironment{Name: "a", Slug: "a"}); err != nil {
		t.Fatal(err)
	}
	m1 := server.ChangeMark()
	if m1 == m0 {
		t.Fatal("a write of this process did not move the mark")
	}
	for i, slug := range []string{"b", "c", "d"} {
		if _, err := cli.CreateEnvironment(ctx, store.NewEnvironment{Name: slug, Slug: slug}); err != nil {
			t.Fatal(err)
		}
		m2 := server.ChangeMark()
		if m2 == m1 {
			t.Fatalf("announced write %d did not move the other process's mark", i)
		}
		m1 = m2
	}
	// A failed write is not a change.
	if _, err := server.CreateEnvironment(ctx, store.NewEnvironment{Name: "a", Slug: "a"}); store.KindOf(err) != store.KindConflict {
		t.Fatal(err)
	}
	if server.ChangeMark() != m1 {
		t.Fatal("a failed write moved the mark")
	}
}

// Writes of content no cache holds (agents, runs, messages...) leave the
// mark alone; writes of accounts, sessions and grants move it.
func TestChangeMarkIgnoresContent(t *testing.T) {
	ctx := context.Background()
	db, _ := openDB(t)
	u := mustUser(t, db, "ann", store.RoleEditor)
	bob := mustUser(t, db, "bob", store.RoleViewer)
	s := mustSession(t, db, u.ID)
	m := db.ChangeMark()
	a, err := db.CreateAgent(ctx, store.AgentInput{Name: "Writer", Kind: "writer", IsActive: true}, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ReplaceAgent(ctx, a.ID, store.AgentInput{Name: "Editor", Kind: "editor"}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateMessage(ctx, store.NewMessage{SenderID: u.ID, RecipientID: bob.ID, Body: "hi"}); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteAgent(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if db.ChangeMark() != m {
		t.Fatal("a content write moved the mark")
	}
	if err := db.RevokeSession(ctx, u.ID, s.ID); err != nil {
		t.Fatal(err)
	}
	if db.ChangeMark() == m {
		t.Fatal("revoking a session did not move the mark")
	}
}

// On PostgreSQL, a write committed by one instance moves the mark of
// every other instance on the database, with no window: the count moves
// in the write's own transaction. Content writes move no one's mark.
func TestChangeMarkAcrossInstances(t *testing.T) {
	ctx := context.Background()
	dbs := instances(t, 2)
	a, b := dbs[0], dbs[1]
	u := mustUser(t, a, "ann", store.RoleEditor)
	bob := mustUser(t, a, "bob", store.RoleViewer)
	s := mustSession(t, a, u.ID)
	m := b.ChangeMark()
	if b.ChangeMark() != m {
		t.Fatal("reading the mark moved it")
	}
	if _, err := a.CreateMessage(ctx, store.NewMessage{SenderID: u.ID, RecipientID: bob.ID, Body: "hi"}); err != nil {
		t.Fatal(err)
	}
	if b.ChangeMark() != m {
		t.Fatalf("a content write on A moved B's mark: %+v %+v", m, b.ChangeMark())
	}
	if err := a.RevokeSession(ctx, u.ID, s.ID); err != nil {
		t.Fatal(err)
	}
	m2 := b.ChangeMark()
	if m2 == m {
		t.Fatal("revoking a session on A did not move B's mark")
	}
	// A write behind every instance's back (psql, another tool) counts too.
	raw := storetest.Raw(t, a)
	if _, err := raw.ExecContext(ctx, `UPDATE users SET is_active = 0 WHERE id = ?`, bob.ID); err != nil {
		t.Fatal(err)
	}
	if b.ChangeMark() == m2 {
		t.Fatal("a raw write did not move the mark")
	}
}

// A start leaves a current change-mark function alone (replacing it at
// every start made other instances drop their cached plans) and replaces
// one whose body is not this copydesk's, as after an upgrade.
func TestChangeMarkFunctionReplacedOnlyWhenStale(t *testing.T) {
	if !storetest.Postgres() {
		t.Skip("change-mark triggers are PostgreSQL's; set COPYDESK_TEST_DATABASE")
	}
	ctx := context.Background()
	url := storetest.NewPostgres(t)
	open := func() *store.DB {
		t.Helper()
		db, err := store.Open(ctx, url, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	db := open()
	raw := storetest.Raw(t, db)
	fn := func() (body string, xmin string) {
		t.Helper()
		if err := raw.QueryRowContext(ctx, `SELECT prosrc, xmin::text FROM pg_proc
			WHERE proname = 'copydesk_changed' AND pronamespace = current_schema()::regnamespace`).Scan(&body, &xmin); err != nil {
			t.Fatal(err)
		}
		return body, xmin
	}
	body, v1 := fn()
	open()
	if _, v2 := fn(); v2 != v1 {
		t.Fatalf("a second start replaced a current function (row version %s -> %s)", v1, v2)
	}
	if _, err := raw.ExecContext(ctx, `CREATE OR REPLACE FUNCTION copydesk_changed() RETURNS trigger LANGUAGE plpgsql AS $b$ BEGIN RETURN NULL; END $b$`); err != nil {
		t.Fatal(err)
	}
	b := open()
	if got, _ := fn(); got != body {
		t.Fatalf("a start left a stale function: %q", got)
	}
	m := b.ChangeMark()
	mustUser(t, b, "ann", store.RoleEditor)
	if b.ChangeMark() == m {
		t.Fatal("after the start mended the function, a write did not move the mark")
	}
}
