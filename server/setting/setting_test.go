package setting_test

import (
	"context"
	"sync"
	"testing"

	"github.com/copydesk/copydesk/server/setting"
	"github.com/copydesk/copydesk/store"
	"github.com/copydesk/copydesk/store/storetest"
)

var admin = store.NewScope(1, true, nil)

func ptr[T any](v T) *T { return &v }

func TestSettings(t *testing.T) {
	ctx := context.Background()
	db, _ := storetest.OpenDB(t)
	s := setting.New(db)

	got, err := s.Get(ctx, admin)
	if err != nil || got != store.DefaultSystemSettings {
		t.Fatalf("defaults: %+v, %v", got, err)
	}
	got, err = s.Update(ctx, admin, setting.Change{RegistrationOpen: ptr(false)})
	if err != nil || got.RegistrationOpen || got.NotificationRetentionDays != 30 {
		t.Fatalf("one switch: %+v, %v", got, err)
	}
	got, err = s.Update(ctx, admin, setting.Change{NotificationRetentionDays: ptr(7)})
	if err != nil || got.RegistrationOpen || got.NotificationRetentionDays != 7 {
		t.Fatalf("the other switch: %+v, %v", got, err)
	}
	for _, days := range []int{0, -1, 3651} {
		_, err := s.Update(ctx, admin, setting.Change{RegistrationOpen: ptr(true), NotificationRetentionDays: &days})
		if store.KindOf(err) != store.KindInvalid {
			t.Fatalf("%d days: %v", days, err)
		}
	}
	for _, sc := range []store.Scope{store.NewScope(2, false, []int64{1}), {}} {
		if _, err := s.Get(ctx, sc); store.KindOf(err) != store.KindForbidden {
			t.Fatalf("read by %+v: %v", sc, err)
		}
		if _, err := s.Update(ctx, sc, setting.Change{RegistrationOpen: ptr(true)}); store.KindOf(err) != store.KindForbidden {
			t.Fatalf("change by %+v: %v", sc, err)
		}
	}
	if got, err := db.SystemSettings(ctx); err != nil || got.RegistrationOpen || got.NotificationRetentionDays != 7 {
		t.Fatalf("refused changes were stored: %+v, %v", got, err)
	}
}

// TestConcurrentChanges: two admins changing different switches at once
// both keep their change.
func TestConcurrentChanges(t *testing.T) {
	ctx := context.Background()
	db, _ := storetest.OpenDB(t)
	s := setting.New(db)
	for i := range 20 {
		var wg sync.WaitGroup
		open, days := i%2 == 0, i+1
		for _, ch := range []setting.Change{{RegistrationOpen: &open}, {NotificationRetentionDays: &days}} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := s.Update(ctx, admin, ch); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		got, err := s.Get(ctx, admin)
		if err != nil || got.RegistrationOpen != open || got.NotificationRetentionDays != days {
			t.Fatalf("round %d: %+v, %v: one change undid the other", i, got, err)
		}
	}
}
