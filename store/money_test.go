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

// Decimal writes six decimals, whatever the amount: the CSV's form.
func TestMicrosDecimal(t *testing.T) {
	for m, want := range map[store.Micros]string{0: "0.000000", 16: "0.000016", 16350: "0.016350", 12_500_000: "12.500000",
		-1: "-0.000001", 1_000_000_000_000: "1000000.000000"} {
		if got := m.Decimal(); got != want {
			t.Errorf("%d.Decimal() = %q, want %q", int64(m), got, want)
		}
	}
	if got := store.AddCost(nil, nil); got != nil {
		t.Errorf("unknown + unknown = %v", *got)
	}
	one, two := store.Micros(1), store.Micros(2)
	if got := store.AddCost(&one, nil); got == nil || *got != 1 {
		t.Errorf("1 + unknown = %v", got)
	}
	if got := store.AddCost(&one, &two); got == nil || *got != 3 {
		t.Errorf("1 + 2 = %v", got)
	}
}
