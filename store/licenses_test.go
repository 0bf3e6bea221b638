package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/copydesk/copydesk/store"
)

func TestLicenses(t *testing.T) {
	ctx := context.Background()

	t.Run("Activate", func(t *testing.T) {
		db, _ := openDB(t)
		u := mustUser(t, db, "buyer", store.RoleViewer)
		l, err := db.ActivateLicense(ctx, u.ID, "key-1", "CDL1.a.b")
		if err != nil {
			t.Fatal(err)
		}
		if l.UserID != u.ID || l.KeyID != "key-1" || l.Key != "CDL1.a.b" || !l.ActivatedAt.Equal(t0) {
			t.Errorf("ActivateLicense = %+v", l)
		}
	})

	t.Run("SameKeyOtherUserConflict", func(t *testing.T) {
		db, _ := openDB(t)
		a := mustUser(t, db, "first", store.RoleViewer)
		b := mustUser(t, db, "second", store.RoleViewer)
		if _, err := db.ActivateLicense(ctx, a.ID, "key-1", "CDL1.a.b"); err != nil {
			t.Fatal(err)
		}
		_, err := db.ActivateLicense(ctx, b.ID, "key-1", "CDL1.a.b")
		wantKind(t, err, store.KindConflict)
		_, err = db.LicenseByUser(ctx, b.ID)
		wantKind(t, err, store.KindNotFound)
		if l, err := db.LicenseByUser(ctx, a.ID); err != nil || l.KeyID != "key-1" {
			t.Errorf("the holder lost the key: %+v, %v", l, err)
		}
	})

	t.Run("ReactivateSameUser", func(t *testing.T) {
		db, clk := openDB(t)
		u := mustUser(t, db, "buyer", store.RoleViewer)
		if _, err := db.ActivateLicense(ctx, u.ID, "key-1", "CDL1.a.b"); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Hour)
		l, err := db.ActivateLicense(ctx, u.ID, "key-1", "CDL1.a.b")
		if err != nil {
			t.Fatal(err)
		}
		if l.KeyID != "key-1" || !l.ActivatedAt.Equal(t0) {
			t.Errorf("reactivation gave %+v, want key-1 activated at %v", l, t0)
		}
	})

	t.Run("NewKeyReplacesOld", func(t *testing.T) {
		db, clk := openDB(t)
		u := mustUser(t, db, "buyer", store.RoleViewer)
		other := mustUser(t, db, "other", store.RoleViewer)
		if _, err := db.ActivateLicense(ctx, u.ID, "key-1", "CDL1.old.sig"); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Hour)
		l, err := db.ActivateLicense(ctx, u.ID, "key-2", "CDL1.new.sig")
		if err != nil {
			t.Fatal(err)
		}
		if l.KeyID != "key-2" || l.Key != "CDL1.new.sig" || !l.ActivatedAt.Equal(clk.Now()) {
			t.Errorf("after replacing: %+v", l)
		}
		if _, err := db.ActivateLicense(ctx, other.ID, "key-1", "CDL1.old.sig"); err != nil {
			t.Errorf("the replaced key is still held: %v", err)
		}
	})

	t.Run("Deactivate", func(t *testing.T) {
		db, _ := openDB(t)
		u := mustUser(t, db, "buyer", store.RoleViewer)
		other := mustUser(t, db, "other", store.RoleViewer)
		if _, err := db.ActivateLicense(ctx, u.ID, "key-1", "CDL1.a.b"); err != nil {
			t.Fatal(err)
		}
		if had, err := db.DeactivateLicense(ctx, u.ID); err != nil || !had {
			t.Fatalf("DeactivateLicense = %v, %v; want true", had, err)
		}
		_, err := db.LicenseByUser(ctx, u.ID)
		wantKind(t, err, store.KindNotFound)
		if had, err := db.DeactivateLicense(ctx, u.ID); err != nil || had {
			t.Errorf("second DeactivateLicense = %v, %v; want false", had, err)
		}
		if _, err := db.ActivateLicense(ctx, other.ID, "key-1", "CDL1.a.b"); err != nil {
			t.Errorf("a freed key cannot move to another account: %v", err)
		}
	})
}
