package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/copydesk/copydesk/store"
)

func increment(now time.Time) func(store.LoginFailures) (store.LoginFailures, error) {
	return func(lf store.LoginFailures) (store.LoginFailures, error) {
		lf.Failures++
		lf.LastFailureAt = now
		return lf, nil
	}
}

func TestUpdateLoginFailures(t *testing.T) {
	ctx := context.Background()

	t.Run("ParallelIncrementsAllCount", func(t *testing.T) {
		db, _ := openDB(t)
		const n = 20
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := range n {
			// Half the callers spell the address differently: one record.
			email := "victim@example.com"
			if i%2 == 1 {
				email = " Victim@Example.COM "
			}
			wg.Go(func() { errs <- db.UpdateLoginFailures(ctx, email, increment(t0)) })
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Errorf("UpdateLoginFailures: %v", err)
			}
		}
		lf, err := db.LoginFailuresFor(ctx, "VICTIM@example.com")
		if err != nil {
			t.Fatal(err)
		}
		if lf.Failures != n {
			t.Errorf("Failures = %d after %d parallel increments", lf.Failures, n)
		}
	})

	t.Run("ErrorWritesNothing", func(t *testing.T) {
		db, _ := openDB(t)
		for range 3 {
			if err := db.UpdateLoginFailures(ctx, "a@example.com", increment(t0)); err != nil {
				t.Fatal(err)
			}
		}
		refuse := errors.New("refused")
		later := t0.Add(time.Hour)
		err := db.UpdateLoginFailures(ctx, "a@example.com", func(lf store.LoginFailures) (store.LoginFailures, error) {
			if lf.Failures != 3 {
				t.Errorf("fn saw %d failures, want 3", lf.Failures)
			}
			return store.LoginFailures{Failures: 99, LastFailureAt: later, LockedUntil: &later}, refuse
		})
		if !errors.Is(err, refuse) {
			t.Fatalf("UpdateLoginFailures returned %v, want fn's error", err)
		}
		lf, _ := db.LoginFailuresFor(ctx, "a@example.com")
		if lf.Failures != 3 || !lf.LastFailureAt.Equal(t0) || lf.LockedUntil != nil {
			t.Errorf("record after an aborted update = %+v, want 3 failures at %v, unlocked", lf, t0)
		}

		err = db.UpdateLoginFailures(ctx, "new@example.com", func(store.LoginFailures) (store.LoginFailures, error) {
			return store.LoginFailures{Failures: 1, LastFailureAt: t0}, refuse
		})
		if !errors.Is(err, refuse) {
			t.Fatalf("UpdateLoginFailures returned %v, want fn's error", err)
		}
		if lf, _ := db.LoginFailuresFor(ctx, "new@example.com"); lf != (store.LoginFailures{}) {
			t.Errorf("an aborted first update wrote %+v", lf)
		}
	})

	t.Run("LockRoundTrip", func(t *testing.T) {
		db, _ := openDB(t)
		until := t0.Add(15 * time.Minute)
		err := db.UpdateLoginFailures(ctx, "l@example.com", func(lf store.LoginFailures) (store.LoginFailures, error) {
			if lf != (store.LoginFailures{}) {
				t.Errorf("fn saw %+v for an unknown address, want a zero record", lf)
			}
			return store.LoginFailures{Failures: 10, LastFailureAt: t0, LockedUntil: &until}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		lf, _ := db.LoginFailuresFor(ctx, "l@example.com")
		if lf.Failures != 10 || !lf.LastFailureAt.Equal(t0) || lf.LockedUntil == nil || !lf.LockedUntil.Equal(until) {
			t.Errorf("LoginFailuresFor = %+v", lf)
		}
	})

	t.Run("ClearForgets", func(t *testing.T) {
		db, _ := openDB(t)
		if err := db.UpdateLoginFailures(ctx, "c@example.com", increment(t0)); err != nil {
			t.Fatal(err)
		}
		if err := db.ClearLoginFailures(ctx, "C@EXAMPLE.COM"); err != nil {
			t.Fatal(err)
		}
		if lf, _ := db.LoginFailuresFor(ctx, "c@example.com"); lf.Failures != 0 {
			t.Errorf("Failures = %d after ClearLoginFailures", lf.Failures)
		}
	})
}

// Two instances counting failures of one address at once lose none: the
// throttle counts across instances.
func TestLoginFailuresAcrossInstances(t *testing.T) {
	ctx := context.Background()
	dbs := instances(t, 2)
	const each = 15
	errs := make(chan error, 2*each)
	for _, db := range dbs {
		go func() {
			for range each {
				errs <- db.UpdateLoginFailures(ctx, "ann@example.com", increment(db.Now()))
			}
		}()
	}
	for range 2 * each {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	lf, err := dbs[1].LoginFailuresFor(ctx, "ann@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if lf.Failures != 2*each {
		t.Fatalf("failures = %d, want %d", lf.Failures, 2*each)
	}
}
