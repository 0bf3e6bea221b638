// Package notify raises notifications: it stores them for their users and
// pushes them to those users' open streams (GET /api/notifications/stream).
// Any part of the server notifies through a Notifier; raising a
// notification never fails the work that raised it.
package notify

import (
	"context"
	"log/slog"
	"sync"
	"time"

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
)

// Note is what to tell; the store gives each recipient its own copy.
type Note = store.NewNotification

// Notifier stores notifications and fans them out to live streams.
type Notifier struct {
	db  *store.DB
	log *slog.Logger
	hub hub
}

// New returns a Notifier over db.
func New(db *store.DB, log *slog.Logger) *Notifier {
	return &Notifier{db: db, log: log, hub: hub{subs: map[int64]map[*Subscription]struct{}{}}}
}

// User notifies one user.
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
// it was granted to, and the admins. The note is tagged with it.
func (n *Notifier) Environment(ctx context.Context, envID int64, note Note) {
	note.EnvironmentID = &envID
	n.send(ctx, "environment", func(ctx context.Context) ([]int64, error) { return n.db.EnvironmentMemberIDs(ctx, envID) }, note)
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
	created, err := n.db.CreateNotifications(ctx, ids, note)
	if err != nil {
		n.log.Error("notification not raised", "kind", note.Kind, "audience", audience, "err", err)
		return
	}
	for _, c := range created {
		n.hub.publish(c)
	}
}

// Subscription is one open stream of a user's new notifications.
type Subscription struct {
	UserID int64
	// C delivers notifications as they are raised. It is closed when the
	// notifier shuts down; a subscriber too slow to keep up misses
	// notifications (Dropped counts them) and should catch up from the list.
	C       chan *store.Notification
	dropped int64
	mu      sync.Mutex
}

// Dropped counts notifications this subscriber missed because it was slow.
func (s *Subscription) Dropped() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped
}

// Subscribe opens a stream of the user's new notifications. Call
// Unsubscribe when done.
func (n *Notifier) Subscribe(userID int64) *Subscription { return n.hub.subscribe(userID) }

// Unsubscribe closes a stream.
func (n *Notifier) Unsubscribe(s *Subscription) { n.hub.unsubscribe(s) }

// Close ends every stream (on shutdown) and refuses new ones.
func (n *Notifier) Close() { n.hub.close() }

// Subscribers counts open streams (for tests and health).
func (n *Notifier) Subscribers() int { return n.hub.count() }

type hub struct {
	mu     sync.Mutex
	subs   map[int64]map[*Subscription]struct{}
	closed bool
}

func (h *hub) subscribe(userID int64) *Subscription {
	s := &Subscription{UserID: userID, C: make(chan *store.Notification, 32)}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		close(s.C)
		return s
	}
	if h.subs[userID] == nil {
		h.subs[userID] = map[*Subscription]struct{}{}
	}
	h.subs[userID][s] = struct{}{}
	return s
}

func (h *hub) unsubscribe(s *Subscription) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if set, ok := h.subs[s.UserID]; ok {
		if _, ok := set[s]; ok {
			delete(set, s)
			close(s.C)
		}
		if len(set) == 0 {
			delete(h.subs, s.UserID)
		}
	}
}

func (h *hub) publish(n *store.Notification) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs[n.UserID] {
		select {
		case s.C <- n:
		default:
			s.mu.Lock()
			s.dropped++
			s.mu.Unlock()
		}
	}
}

func (h *hub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for uid, set := range h.subs {
		for s := range set {
			close(s.C)
		}
		delete(h.subs, uid)
	}
}

func (h *hub) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, set := range h.subs {
		n += len(set)
	}
	return n
}
