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
