package notify_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/copydesk/copydesk/server/notify"
	"github.com/copydesk/copydesk/server/stream"
	"github.com/copydesk/copydesk/store"
)

func setup(t *testing.T, o stream.Options) (*store.DB, *notify.Notifier, *stream.Broker, *store.User) {
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
	n := notify.New(db, slog.New(slog.NewTextHandler(io.Discard, nil)))
	b := stream.New(o)
	n.PublishTo(b)
	return db, n, b, u
}

// A subscriber that does not read is cut off (it resumes from the last id
// it got) rather than blocking the work that raises notifications; they
// are all stored regardless.
func TestSlowSubscriberDoesNotBlock(t *testing.T) {
	db, n, b, u := setup(t, stream.Options{Buffer: 8})
	sub := b.Subscribe(notify.Topic(u.ID), 0)
	defer sub.Close()
	for i := 0; i < 100; i++ {
		n.User(context.Background(), u.ID, notify.Note{Kind: "k", Title: "t"})
	}
	var got []*store.Notification
	for ev := range sub.Events() {
		got = append(got, ev.Data.(*store.Notification))
	}
	if len(got) != 8 || !errors.Is(sub.Err(), stream.ErrLagged) || got[7].ID-got[0].ID != 7 || got[0].Title != "t" {
		t.Fatalf("got %d, %v", len(got), sub.Err())
	}
	if got, _ := db.UnreadNotifications(context.Background(), u.ID); got != 100 {
		t.Fatalf("stored %d of 100", got)
	}
	// The catch-up after the last one it got has the rest, in order.
	missed, err := n.Replay(u.ID)(context.Background(), got[7].ID, 200)
	if err != nil || len(missed) != 92 || missed[0].ID != got[7].ID+1 || missed[91].Name != notify.Event {
		t.Fatalf("replay: %d, %v", len(missed), err)
	}
}

// Raising a notification with a cancelled context still records it: the
// request that raised it may already be gone.
func TestCancelledContextStillRecords(t *testing.T) {
	db, n, _, u := setup(t, stream.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	n.User(ctx, u.ID, notify.Note{Kind: "k", Title: "t"})
	if got, _ := db.UnreadNotifications(context.Background(), u.ID); got != 1 {
		t.Fatalf("stored %d", got)
	}
}

// Closing the broker ends every stream and refuses new ones; raising still
// stores; a closed database makes raising fail quietly.
func TestCloseEndsStreams(t *testing.T) {
	db, n, b, u := setup(t, stream.Options{})
	sub := b.Subscribe(notify.Topic(u.ID), 0)
	if n.Subscribers() != 1 {
		t.Fatalf("%d subscribers", n.Subscribers())
	}
	b.Close()
	if _, ok := <-sub.Events(); ok || !errors.Is(sub.Err(), stream.ErrClosed) {
		t.Fatal("stream still open after Close")
	}
	late := b.Subscribe(notify.Topic(u.ID), 0)
	if _, ok := <-late.Events(); ok {
		t.Fatal("a stream opened after Close")
	}
	sub.Close() // harmless after Close
	if n.Subscribers() != 0 {
		t.Fatal("subscribers left")
	}
	n.User(context.Background(), u.ID, notify.Note{Kind: "k", Title: "t"})
	if got, _ := db.UnreadNotifications(context.Background(), u.ID); got != 1 {
		t.Fatalf("stored %d", got)
	}
	if n.Subscribers() != 0 {
		t.Fatal("subscribers after Close")
	}
	db.Close()
	n.User(context.Background(), u.ID, notify.Note{Kind: "k", Title: "t"}) // must not panic or fail the caller
}

// Each user reads and changes only their own.
func TestOwnNotifications(t *testing.T) {
	db, n, _, u := setup(t, stream.Options{})
	ctx := context.Background()
	other, err := db.CreateUser(ctx, store.NewUser{Email: "o@example.com", Username: "o", PasswordHash: "x", Role: store.RoleViewer})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		n.User(ctx, u.ID, notify.Note{Kind: "k", Title: "t"})
	}
	n.User(ctx, other.ID, notify.Note{Kind: "k", Title: "theirs"})
	list, total, err := n.List(ctx, u.ID, notify.ListQuery{Page: store.Page{Page: 1, PerPage: 2}})
	if err != nil || total != 3 || len(list) != 2 || list[0].ID < list[1].ID {
		t.Fatalf("list: %d of %d, %v", len(list), total, err)
	}
	theirs, _, _ := n.List(ctx, other.ID, notify.ListQuery{Page: store.Page{Page: 1, PerPage: 10}})
	if _, err := n.MarkRead(ctx, u.ID, theirs[0].ID); !store.IsNotFound(err) {
		t.Fatalf("read another's: %v", err)
	}
	if err := n.Delete(ctx, u.ID, theirs[0].ID); !store.IsNotFound(err) {
		t.Fatalf("delete another's: %v", err)
	}
	read, err := n.MarkRead(ctx, u.ID, list[0].ID)
	if err != nil || read.ReadAt == nil {
		t.Fatalf("read: %v", err)
	}
	if c, err := n.UnreadCount(ctx, u.ID); err != nil || c != 2 {
		t.Fatalf("unread: %d %v", c, err)
	}
	if _, total, _ := n.List(ctx, u.ID, notify.ListQuery{UnreadOnly: true, Page: store.Page{Page: 1, PerPage: 10}}); total != 2 {
		t.Fatalf("unread only: %d", total)
	}
	if m, err := n.MarkAllRead(ctx, u.ID); err != nil || m != 2 {
		t.Fatalf("read all: %d %v", m, err)
	}
	if c, _ := n.UnreadCount(ctx, other.ID); c != 1 {
		t.Fatalf("read all touched another's: %d unread", c)
	}
	if err := n.Delete(ctx, u.ID, list[0].ID); err != nil {
		t.Fatal(err)
	}
}

// A note about an environment reaches a user only while they may see it:
// it is neither stored nor published for one who lost it (issue 9, item 8).
func TestEnvironmentNoteNeedsTheGrantAtDelivery(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, n, _, u := setup(t, stream.Options{})
	env, err := db.CreateEnvironment(ctx, store.NewEnvironment{Name: "A", Slug: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.SetUserEnvironments(ctx, u.ID, []int64{env.ID}); err != nil {
		t.Fatal(err)
	}
	n.User(ctx, u.ID, notify.Note{Kind: notify.RunSucceeded, Title: "granted", EnvironmentID: &env.ID})
	if _, err := db.SetUserEnvironments(ctx, u.ID, nil); err != nil {
		t.Fatal(err)
	}
	n.User(ctx, u.ID, notify.Note{Kind: notify.RunSucceeded, Title: "removed", EnvironmentID: &env.ID})
	n.Environment(ctx, env.ID, notify.Note{Kind: notify.PostPublished, Title: "to the environment"})
	n.User(ctx, u.ID, notify.Note{Kind: notify.MessageReceived, Title: "no environment"})
	list, _, err := n.List(ctx, u.ID, notify.ListQuery{Page: store.Page{Page: 1, PerPage: 10}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range list {
		got = append(got, c.Title)
	}
	if fmt.Sprint(got) != "[no environment granted]" {
		t.Fatalf("delivered %q, want [no environment granted]", got)
	}
}
