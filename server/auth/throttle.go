package auth

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/copydesk/copydesk/store"
)

// ThrottlePolicy slows down and then locks repeated failed credential checks
// (password or second factor) for one e-mail address. It is not a request
// rate limit: a user who signs in correctly is never held back by it, and
// it is kept per address whether or not an account has that address, so a
// lock-out tells an attacker nothing about which addresses exist.
type ThrottlePolicy struct {
	// FreeFailures is how many failures in a row cost nothing.
	FreeFailures int
	// BaseDelay is the wait imposed after the first failure past the free
	// ones; it doubles with each further failure, up to MaxDelay.
	BaseDelay time.Duration
	MaxDelay  time.Duration
	// LockAfter failures in a row lock the address for LockFor.
	LockAfter int
	LockFor   time.Duration
}

// DefaultThrottle: three free tries, then 1 s, 2 s, 4 s ... between tries,
// and a 15-minute lock at the tenth failure in a row.
var DefaultThrottle = ThrottlePolicy{FreeFailures: 3, BaseDelay: time.Second, MaxDelay: time.Minute, LockAfter: 10, LockFor: 15 * time.Minute}

func (p ThrottlePolicy) delay(failures int) time.Duration {
	if failures < p.FreeFailures || p.BaseDelay <= 0 {
		return 0
	}
	exp := failures - p.FreeFailures
	if exp > 30 {
		exp = 30
	}
	d := time.Duration(float64(p.BaseDelay) * math.Pow(2, float64(exp)))
	if d > p.MaxDelay {
		d = p.MaxDelay
	}
	return d
}

// attempt runs check (which verifies a password or code and reports whether
// it matched) under the policy for email. The attempt is counted before the
// check runs, so parallel guesses cannot get past the limit; a match clears
// the count. A refused attempt is a KindRetryLater error with RetryAfter set.
//
// A check that ends in errNoSecondFactor (the right password, and no code
// yet: the first step of every two-factor sign-in) is not a failure: its
// count is given back, unless another attempt has counted since.
func (s *Service) attempt(ctx context.Context, email string, check func() (bool, error)) (bool, error) {
	now := s.now()
	p := s.cfg.Throttle
	var before, counted store.LoginFailures
	err := s.db.UpdateLoginFailures(ctx, email, func(lf store.LoginFailures) (store.LoginFailures, error) {
		if lf.LockedUntil != nil && now.Before(*lf.LockedUntil) {
			wait := lf.LockedUntil.Sub(now)
			return lf, &store.Error{Kind: store.KindRetryLater, RetryAfter: ceilSeconds(wait), Message: fmt.Sprintf(
				"too many failed sign-in attempts: this account is locked until %s (about %s); try again then or ask an admin",
				lf.LockedUntil.UTC().Format(time.RFC3339), humanDuration(wait))}
		}
		if lf.LockedUntil != nil { // a lock that has run out starts a fresh count
			lf = store.LoginFailures{}
		}
		if d := p.delay(lf.Failures); d > 0 && now.Before(lf.LastFailureAt.Add(d)) {
			wait := lf.LastFailureAt.Add(d).Sub(now)
			return lf, &store.Error{Kind: store.KindRetryLater, RetryAfter: ceilSeconds(wait), Message: fmt.Sprintf(
				"too many failed sign-in attempts for this account: wait %s before trying again", humanDuration(wait))}
		}
		before = lf
		lf.Failures++
		lf.LastFailureAt = now
		if p.LockAfter > 0 && lf.Failures >= p.LockAfter {
			until := now.Add(p.LockFor)
			lf.LockedUntil = &until
		}
		counted = lf
		return lf, nil
	})
	if err != nil {
		return false, err
	}
	ok, err := check()
	if errors.Is(err, errNoSecondFactor) {
		if rerr := s.db.UpdateLoginFailures(ctx, email, func(lf store.LoginFailures) (store.LoginFailures, error) {
			// Times are stored to the millisecond.
			if lf.Failures == counted.Failures &&
				lf.LastFailureAt.UTC().Format(store.TimeFormat) == counted.LastFailureAt.UTC().Format(store.TimeFormat) {
				return before, nil
			}
			return lf, nil
		}); rerr != nil {
			return false, rerr
		}
	}
	if err != nil || !ok {
		return false, err
	}
	return true, s.db.ClearLoginFailures(ctx, email)
}

func ceilSeconds(d time.Duration) int { return int(math.Ceil(d.Seconds())) }

func humanDuration(d time.Duration) string {
	switch s := ceilSeconds(d); {
	case s < 2:
		return "1 second"
	case s < 120:
		return fmt.Sprintf("%d seconds", s)
	default:
		return fmt.Sprintf("%d minutes", int(math.Ceil(d.Minutes())))
	}
}
