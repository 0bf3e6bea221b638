// Package notify is the notifications group's service. It raises
// notifications: stores them for their users and publishes each on its
// user's topic of the event-stream broker (GET /api/notifications/stream).
// It also holds the use cases of a user's own notifications (list, unread
// count, mark read, delete), so that the handlers in
// server/notifications.go only parse, call one method and render. Raising
// and reading are one service because they are one group over one table;
// the raising side is what the rest of the server calls (the Notifier),
// and raising a notification never fails the work that raised it.
package notify

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/copydesk/copydesk/server/stream"
	"github.com/copydesk/copydesk/store"
)

// Kinds of notification the server raises.
const (
	RunSucceeded    = "run.succeeded"
	RunFailed       = "run.failed"
	PostPublished   = "post.published"
	PostFailed      = "post.failed"
	BackupCreated   = "backup.created"
	BackupFailed    = "backup.failed"
	BudgetReached   = "budget.reached"
	MessageReceived = "message.received"
	// WebSourceFailing and WebSourceRecovered go to the editors of a web
	// source's environment (server/websource): once when it has failed
	// websource.NotifyAfter fetches in a row, once when it answers again.
	WebSourceFailing   = "websource.failing"
	WebSourceRecovered = "websource.recovered"
	// WebhookDisabled goes to a webhook's creator when its deliveries have
	// failed for days and it was switched off (server/webhook).
	WebhookDisabled = "webhook.disabled"
)

// Event is the name of a notification's stream event.
const Event = "notification"

// Note is what to tell; the store gives each recipient its own copy.
type Note = store.NewNotification

// Store is what the service needs of the store.
type Store interface {
	CreateNotifications(ctx context.Context, userIDs []int64, n store.NewNotification) ([]*store.Notification, error)
	UserIDsWithRole(ctx context.Context, min store.Role) ([]int64, error)
	EnvironmentMemberIDs(ctx context.Context, envID int64, min store.Role) ([]int64, error)
	ListNotifications(ctx context.Context, f store.NotificationFilter) ([]*store.Notification, int, error)
	UnreadNotifications(ctx context.Context, userID int64) (int, error)
	MarkNotificationRead(ctx context.Context, userID, id int64) (*store.Notification, error)
	MarkAllNotificationsRead(ctx context.Context, userID int64) (int64, error)
	DeleteNotification(ctx context.Context, userID, id int64) error
	NotificationByID(ctx context.Context, userID, id int64) (*store.Notification, error)
}

// ToUser is what a service that tells one user how their work ended
// needs of the Notifier.
type ToUser interface {
	User(ctx context.Context, userID int64, note Note)
}

// Notifier stores notifications, publishes them to live streams, and
// serves each user's own.
type Notifier struct {
	db   Store
	log  *slog.Logger
	live atomic.Pointer[stream.Broker] // see PublishTo
	// raising keeps each user's topic in id order: the database numbers
	// notifications in commit order, and they are published in that same
	// order, which a stream relies on (it skips an id not above the last
	// it sent). SQLite writes one transaction at a time anyway.
	raising sync.Mutex
	// shared: several instances on one database announce each stored
	// notification (see Received), and each publishes what it hears,
	// its own included, in the database's commit order.
	shared atomic.Bool
}

// New returns a Notifier over db.
func New(db Store, log *slog.Logger) *Notifier {
	return &Notifier{db: db, log: log}
}

// PublishTo makes the Notifier publish each notification it stores on its
// user's topic (Topic) of b. Without it notifications are only stored.
func (n *Notifier) PublishTo(b *stream.Broker) { n.live.Store(b) }

// Shared makes the Notifier publish what the database announces
// (Received) instead of what it stores itself: on PostgreSQL, where
// several instances store notifications, that is one order for all of
// them, the order of the ids.
func (n *Notifier) Shared() { n.shared.Store(true) }

// Received publishes a notification the database announced, stored by
// any instance, to its user's stream here, read from the database. Called
// in the order of the announcements.
func (n *Notifier) Received(ctx context.Context, a store.Announcement) {
	live := n.live.Load()
	if live == nil || a.Kind != store.AnnouncedNotification || live.Subscribers(Topic(a.Owner)) == 0 {
		return
	}
	c, err := n.db.NotificationByID(ctx, a.Owner, a.ID)
	if store.KindOf(err) == store.KindNotFound {
		return // deleted since
	}
	if err != nil {
		n.log.Error("another instance's notification not published", "id", a.ID, "err", err)
		return
	}
	n.publish(live, c)
}

func (n *Notifier) publish(live *stream.Broker, c *store.Notification) {
	// Stored is raised: a stream that cannot take it (the server
	// stopping) catches up from the list or Last-Event-ID.
	if _, err := live.Publish(Topic(c.UserID), stream.Event{ID: c.ID, Name: Event, Data: c}); err != nil && !stream.Gone(err) {
		n.log.Error("notification stored but not published", "id", c.ID, "err", err)
	}
}

// Topic is the stream topic of a user's notifications.
func Topic(userID int64) string { return topicPrefix + strconv.FormatInt(userID, 10) }

const topicPrefix = "notifications/"

// User notifies one user. A note tagged with an environment reaches them
// only if they may see it when it is stored.
func (n *Notifier) User(ctx context.Context, userID int64, note Note) {
	n.send(ctx, "user", func(context.Context) ([]int64, error) { return []int64{userID}, nil }, note)
}

// Admins notifies every active admin and super_admin.
func (n *Notifier) Admins(ctx context.Context, note Note) {
	n.Role(ctx, store.RoleAdmin, note)
}

// Role notifies every active user whose role is at least min (super_admin:
// only those, for system-level news such as backups).
func (n *Notifier) Role(ctx context.Context, min store.Role, note Note) {
	n.send(ctx, string(min)+"s", func(ctx context.Context) ([]int64, error) { return n.db.UserIDsWithRole(ctx, min) }, note)
}

// Environment notifies every active user who can see the environment: those
// it was granted to, and the admins. The note is tagged with it, and the
// store checks each grant again as it stores the copy, so whoever lost the
// environment after the recipients were read gets nothing.
func (n *Notifier) Environment(ctx context.Context, envID int64, note Note) {
	n.EnvironmentRole(ctx, envID, store.RoleViewer, note)
}

// EnvironmentRole notifies, as Environment does, those of the users who
// can see the environment whose role is at least min: news only they can
// act on (RoleEditor: a web source to fix) spares the viewers.
func (n *Notifier) EnvironmentRole(ctx context.Context, envID int64, min store.Role, note Note) {
	note.EnvironmentID = &envID
	n.send(ctx, "environment", func(ctx context.Context) ([]int64, error) { return n.db.EnvironmentMemberIDs(ctx, envID, min) }, note)
}

// send stores and publishes. Failures are logged, never returned: the work
// that raised the notification has happened and must stand. It runs on a
// context that outlives the caller's cancellation, so a request that ends
// does not lose its notification.
func (n *Notifier) send(ctx context.Context, audience string, who func(context.Context) ([]int64, error), note Note) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	ids, err := who(ctx)
	if err != nil {
		n.log.Error("notification not raised: cannot find its recipients", "kind", note.Kind, "audience", audience, "err", err)
		return
	}
	if len(ids) == 0 {
		return
	}
	n.raising.Lock()
	defer n.raising.Unlock()
	created, err := n.db.CreateNotifications(ctx, ids, note)
	if err != nil {
		n.log.Error("notification not raised", "kind", note.Kind, "audience", audience, "err", err)
		return
	}
	live := n.live.Load()
	if live == nil || n.shared.Load() {
		return // shared: published when the database announces it
	}
	for _, c := range created {
		n.publish(live, c)
	}
}

// Subscribers counts open notification streams (for tests and health).
func (n *Notifier) Subscribers() int {
	live := n.live.Load()
	if live == nil {
		return 0
	}
	return live.Subscribers(topicPrefix)
}

// Replay is the catch-up of a user's stream (Last-Event-ID): their
// notifications after an id, oldest first.
func (n *Notifier) Replay(userID int64) stream.Replayer {
	return func(ctx context.Context, after int64, limit int) ([]stream.Event, error) {
		list, _, err := n.db.ListNotifications(ctx, store.NotificationFilter{UserID: userID, AfterID: after, OldestFirst: true,
			Page: store.Page{Page: 1, PerPage: limit}})
		if err != nil {
			return nil, fmt.Errorf("notify: replay after %d: %w", after, err)
		}
		out := make([]stream.Event, len(list))
		for i, c := range list {
			out[i] = stream.Event{ID: c.ID, Name: Event, Data: c}
		}
		return out, nil
	}
}

// ListQuery narrows List.
type ListQuery struct {
	UnreadOnly bool
	Page       store.Page
}

// List is a user's notifications, newest first, and how many there are.
func (n *Notifier) List(ctx context.Context, userID int64, q ListQuery) ([]*store.Notification, int, error) {
	return n.db.ListNotifications(ctx, store.NotificationFilter{UserID: userID, UnreadOnly: q.UnreadOnly, Page: q.Page})
}

// UnreadCount is how many of a user's notifications are unread.
func (n *Notifier) UnreadCount(ctx context.Context, userID int64) (int, error) {
	c, err := n.db.UnreadNotifications(ctx, userID)
	if err != nil {
		return 0, fmt.Errorf("notify: count unread: %w", err)
	}
	return c, nil
}

// MarkRead marks one of a user's notifications read; reading it again
// keeps the first time. Another user's is not found.
func (n *Notifier) MarkRead(ctx context.Context, userID, id int64) (*store.Notification, error) {
	return n.db.MarkNotificationRead(ctx, userID, id)
}

// MarkAllRead marks every unread notification of a user read and says how
// many there were.
func (n *Notifier) MarkAllRead(ctx context.Context, userID int64) (int64, error) {
	return n.db.MarkAllNotificationsRead(ctx, userID)
}

// Delete deletes one of a user's notifications; another user's is not
// found.
func (n *Notifier) Delete(ctx context.Context, userID, id int64) error {
	return n.db.DeleteNotification(ctx, userID, id)
}
