package store

import (
	"math"
	"strconv"
	"strings"
)

// Micros is an amount of US dollars in millionths: costs and budgets are
// counted in it, so that sums are exact (a float64 sum of many small costs
// drifts: 0.000016349999999999998).
type Micros int64

// MicrosOf rounds dollars to the nearest millionth (halves away from zero).
func MicrosOf(usd float64) Micros { return Micros(math.Round(usd * 1e6)) }

// USD is the amount in dollars: the nearest float64 to the exact decimal,
// so that JSON writes it as that decimal (0.00001635).
func (m Micros) USD() float64 { return float64(m) / 1e6 }

// String writes the amount for a person: two decimals at least, and as
// many more as it takes to show it to the millionth ($12.50, $0.0004,
// $0.000001), so that two different amounts never read the same.
func (m Micros) String() string {
	sign := ""
	if m < 0 {
		sign, m = "-", -m
	}
	whole, frac := int64(m)/1e6, int64(m)%1e6
	digits := strings.TrimRight(strconv.FormatInt(1e6+frac, 10)[1:], "0")
	for len(digits) < 2 {
		digits += "0"
	}
	return sign + "$" + strconv.FormatInt(whole, 10) + "." + digits
}

// FormatUSD writes dollars as Micros.String does.
func FormatUSD(usd float64) string { return MicrosOf(usd).String() }

// Decimal writes the amount in dollars with exactly six decimals
// (0.000016, 12.500000): the CSV export's form, the same width for every
// row and never float noise.
func (m Micros) Decimal() string {
	sign := ""
	if m < 0 {
		sign, m = "-", -m
	}
	return sign + strconv.FormatInt(int64(m)/1e6, 10) + "." + strconv.FormatInt(1e6+int64(m)%1e6, 10)[1:]
}

// USDOf is a nullable amount in dollars, for JSON: nil stays nil (a cost
// nobody knows).
func USDOf(m *Micros) *float64 {
	if m == nil {
		return nil
	}
	usd := m.USD()
	return &usd
}

// MicrosOfUSD is a nullable amount in dollars in micros: nil stays nil.
func MicrosOfUSD(usd *float64) *Micros {
	if usd == nil {
		return nil
	}
	m := MicrosOf(*usd)
	return &m
}

// AddCost adds two nullable costs: nil (unknown) only when both are; a
// known part is never lost to an unknown one.
func AddCost(a, b *Micros) *Micros {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	sum := *a + *b
	return &sum
}
