package store_test

import (
	"testing"

	"github.com/copydesk/copydesk/store"
)

func TestMicros(t *testing.T) {
	for _, c := range []struct {
		usd  float64
		want string
	}{
		{0, "$0.00"}, {12.5, "$12.50"}, {0.0004, "$0.0004"}, {0.000001, "$0.000001"}, {1234.567891, "$1234.567891"},
		{0.0000004, "$0.00"}, {0.0000005, "$0.000001"}, {-0.25, "-$0.25"}, {0.000016349999999999998, "$0.000016"},
	} {
		if got := store.FormatUSD(c.usd); got != c.want {
			t.Errorf("FormatUSD(%g) = %s, want %s", c.usd, got, c.want)
		}
	}
	// Sums in micros are exact where float64 sums drift.
	var f float64
	var m store.Micros
	for range 1000 {
		f += 0.00001635
		m += store.MicrosOf(0.00001635)
	}
	if m.USD() != 0.016 || f == 0.016 {
		t.Fatalf("micros %v (%g), float %g", m, m.USD(), f)
	}
}
