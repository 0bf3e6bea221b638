package notify_test

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/copydesk/copydesk/server/notify"
	"github.com/copydesk/copydesk/store"
)

func setup(t *testing.T) (*store.DB, *notify.Notifier, *store.User) {
	t.Helper()
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "copydesk.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	u, err := db.CreateUser(context.Background(), store.NewUser{Email: "u@example.com", Username: "u", PasswordHash: "x", Role: store.RoleViewer})
	if err != nil {
		t.Fatal(err)
	}
	return db, notify.New(db, slog.New(slog.NewTextHandler(io.Discard, nil))), u
}

// A subscriber that does not read misses notifications rather than
// blocking the work that raises them; they are all stored regardless.
func TestSlowSubscriberDoesNotBlock(t *testing.T) {
	db, n, u := setup(t)
	sub := n.Subscribe(u.ID)
	defer n.Unsubscribe(sub)
	for i := 0; i < 100; i++ {
		n.User(context.Background(), u.ID, notify.Note{Kind: "k", Title: "t"})
	}
	if sub.Dropped() == 0 || len(sub.C) == 0 {
		t.Fatalf("dropped %d, buffered %d", sub.Dropped(), len(sub.C))
	}
	if got, _ := db.UnreadNotifications(context.Background(), u.ID); got != 100 {
		t.Fatalf("stored %d of 100", got)
	}
}

// Raising a notification with a cancelled context still records it: the
// request that raised it may already be gone.
func TestCancelledContextStillRecords(t *testing.T) {
	db, n, u := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	n.User(ctx, u.ID, notify.Note{Kind: "k", Title: "t"})
	if got, _ := db.UnreadNotifications(context.Background(), u.ID); got != 1 {
		t.Fatalf("stored %d", got)
	}
}

// Close ends every stream and refuses new ones; a closed database makes
// raising fail quietly.
func TestCloseEndsStreams(t *testing.T) {
	db, n, u := setup(t)
	sub := n.Subscribe(u.ID)
	n.Close()
	if _, ok := <-sub.C; ok {
		t.Fatal("stream still open after Close")
	}
	late := n.Subscribe(u.ID)
	if _, ok := <-late.C; ok {
		t.Fatal("a stream opened after Close")
	}
	n.Unsubscribe(sub) // harmless after Close
	if n.Subscribers() != 0 {
		t.Fatal("subscribers left")
	}
	db.Close()
	n.User(context.Background(), u.ID, notify.Note{Kind: "k", Title: "t"}) // must not panic or fail the caller
}
