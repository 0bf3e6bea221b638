// Package setting holds the rules of the instance settings
// (/api/settings/system): the switches an admin controls for the whole
// installation, such as whether anyone may register. Its own package,
// small as it is, because these switches belong to no other group: auth
// and the housekeeping only read them.
package setting

import (
	"context"

	"github.com/copydesk/copydesk/store"
)

// Store is what the service needs of the store.
type Store interface {
	SystemSettings(ctx context.Context) (store.SystemSettings, error)
	UpdateSystemSettings(ctx context.Context, change func(*store.SystemSettings)) (store.SystemSettings, error)
}

// Service implements the instance settings rules.
type Service struct {
	db Store
}

// New returns the service.
func New(db Store) *Service { return &Service{db: db} }

// Change holds the switches to change; nil leaves one alone.
type Change struct {
	RegistrationOpen          *bool
	NotificationRetentionDays *int
}

// Bounds of the notification retention, in days.
const (
	minRetentionDays = 1
	maxRetentionDays = 3650
)

// Get returns the instance settings (admins only).
func (s *Service) Get(ctx context.Context, sc store.Scope) (store.SystemSettings, error) {
	if err := sc.RequireAdmin(); err != nil {
		return store.SystemSettings{}, err
	}
	return s.db.SystemSettings(ctx)
}

// Update changes the switches given (admins only), in one transaction with
// reading the others.
func (s *Service) Update(ctx context.Context, sc store.Scope, ch Change) (store.SystemSettings, error) {
	if err := sc.RequireAdmin(); err != nil {
		return store.SystemSettings{}, err
	}
	if d := ch.NotificationRetentionDays; d != nil && (*d < minRetentionDays || *d > maxRetentionDays) {
		return store.SystemSettings{}, store.Invalid("notification_retention_days: must be from %d to %d", minRetentionDays, maxRetentionDays)
	}
	return s.db.UpdateSystemSettings(ctx, func(set *store.SystemSettings) {
		if ch.RegistrationOpen != nil {
			set.RegistrationOpen = *ch.RegistrationOpen
		}
		if ch.NotificationRetentionDays != nil {
			set.NotificationRetentionDays = *ch.NotificationRetentionDays
		}
	})
}
