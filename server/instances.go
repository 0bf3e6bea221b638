package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/copydesk/copydesk/store"
)

// listenToInstances hears, on PostgreSQL, what every instance on the
// database announces (store.DB.FollowAnnouncements) and publishes it to the event
// streams of this one: a notification stored by any instance reaches its
// user's stream on every instance, all of them in the order of its ids.
// Live topics travel too (relay.go): each instance mirrors the
// generations running on the others, so that any watcher, wherever it is
// connected, gets their events. On SQLite there is one instance and
// nothing to hear. It returns once
// the listening connection is up, so that no stream opened here misses
// an event.
func (a *App) listenToInstances() error {
	if !a.DB.OnPostgres() {
		return nil
	}
	a.Notify.Shared()
	ctx, cancel := context.WithCancel(context.Background())
	ready, done, sent := make(chan struct{}), make(chan struct{}), make(chan struct{})
	a.stopListening = func() { cancel(); <-done; <-sent }
	go func() {
		defer close(sent)
		a.relay.run(ctx)
	}()
	go func() {
		defer close(done)
		a.DB.FollowAnnouncements(ctx, a.Log, func(first bool) {
			if first {
				close(ready)
				return
			}
			// What was announced while the connection was down is not
			// coming: every stream resumes from its Last-Event-ID, and
			// the mirrors of other instances' live topics, which missed
			// events, are started again by the next one.
			lost := "this server lost its connection to the other instances for a moment: reconnect with Last-Event-ID"
			a.Events.DropMirrors(errors.New(lost))
			a.Events.EndAll(lost)
		}, func(payload string) {
			if m, ok, err := a.relay.received(payload); ok || err != nil {
				if err == nil {
					err = a.Events.Received(ctx, m)
				}
				if err != nil && !errors.Is(err, errMine) && ctx.Err() == nil {
					a.Log.Error("a live event from another instance was dropped", "topic", m.Topic, "event", m.Name, "err", err)
				}
				return
			}
			an, ok := store.ParseAnnouncement(payload)
			switch {
			case !ok:
			case an.Kind == store.AnnouncedJobCancelled:
				a.Jobs.CancelledElsewhere(an.ID)
			default:
				a.Notify.Received(ctx, an)
			}
		})
	}()
	select {
	case <-ready:
		return nil
	case <-time.After(30 * time.Second):
		return fmt.Errorf("cannot listen for the other instances' events on the database: no connection after 30 s")
	}
}
