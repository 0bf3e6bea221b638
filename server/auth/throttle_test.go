package auth

import (
	"testing"
	"time"
)

func TestThrottleDelay(t *testing.T) {
	p := ThrottlePolicy{FreeFailures: 3, BaseDelay: time.Second, MaxDelay: time.Minute}
	tests := []struct {
		name     string
		policy   ThrottlePolicy
		failures int
		want     time.Duration
	}{
		{"NoFailures", p, 0, 0},
		{"LastFreeFailure", p, 2, 0},
		{"FirstPaidFailure", p, 3, time.Second},
		{"Doubles", p, 4, 2 * time.Second},
		{"DoublesAgain", p, 5, 4 * time.Second},
		{"BelowCap", p, 8, 32 * time.Second},
		{"Capped", p, 9, time.Minute},
		{"CappedFarOut", p, 1000, time.Minute},
		{"NoFreeFailures", ThrottlePolicy{BaseDelay: time.Second, MaxDelay: time.Hour}, 0, time.Second},
		{"NoBaseDelay", ThrottlePolicy{FreeFailures: 1, MaxDelay: time.Hour}, 50, 0},
		{"ExponentCappedWithoutOverflow", ThrottlePolicy{BaseDelay: time.Second, MaxDelay: 1 << 62}, 500, time.Second << 30},
		{"Default", DefaultThrottle, 3, time.Second},
		{"DefaultCap", DefaultThrottle, 9, time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.policy.delay(tt.failures); got != tt.want {
				t.Errorf("delay(%d) = %v, want %v", tt.failures, got, tt.want)
			}
		})
	}
}

func TestHumanDuration(t *testing.T) {
	tests := []struct {
		in   time.Duration
		want string
	}{
		{time.Millisecond, "1 second"},
		{time.Second, "1 second"},
		{1500 * time.Millisecond, "2 seconds"},
		{119 * time.Second, "119 seconds"},
		{120 * time.Second, "2 minutes"},
		{14*time.Minute + time.Second, "15 minutes"},
	}
	for _, tt := range tests {
		if got := humanDuration(tt.in); got != tt.want {
			t.Errorf("humanDuration(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
