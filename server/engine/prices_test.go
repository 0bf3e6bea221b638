package engine_test

import (
	"math"
	"testing"

	"github.com/copydesk/copydesk/server/ai"
	"github.com/copydesk/copydesk/server/engine"
	"github.com/copydesk/copydesk/store"
)

func usage(in, cached, out int64) ai.Usage {
	return ai.Usage{InputTokens: in, CachedTokens: cached, OutputTokens: out}
}

// per million: a convenient usage of 1M input and 1M output tokens makes
// the cost the sum of the two prices.
var million = usage(1_000_000, 0, 1_000_000)

func TestCost(t *testing.T) {
	overrides := map[string]store.Price{
		"gpt-4o-mini":   {Input: 1, Output: 2, CachedInput: ptr(0.5)},
		"house-model":   {Input: 3, Output: 4}, // no cached price: cached input costs input
		"house-model-x": {Input: 5, Output: 6, CachedInput: ptr(1.0)},
		"free":          {Input: 0, Output: 0},
	}
	cases := []struct {
		name      string
		model     string
		u         ai.Usage
		overrides map[string]store.Price
		want      *float64
	}{
		// Exact entries of the built-in table.
		{"Exact/gpt-4o", "gpt-4o", million, nil, ptr(2.50 + 10.00)},
		{"Exact/gpt-4o-mini", "gpt-4o-mini", million, nil, ptr(0.15 + 0.60)},
		{"Exact/gpt-5", "gpt-5", million, nil, ptr(1.25 + 10.00)},
		{"Exact/o3", "o3", million, nil, ptr(2.00 + 8.00)},
		{"Exact/claude-sonnet-4-5", "claude-sonnet-4-5", million, nil, ptr(3.00 + 15.00)},
		{"Exact/claude-haiku-4-5", "claude-haiku-4-5", million, nil, ptr(1.00 + 5.00)},
		// Dated ids find their family through the longest prefix.
		{"Dated/gpt-4o", "gpt-4o-2024-08-06", million, nil, ptr(2.50 + 10.00)},
		{"Dated/gpt-4o-mini", "gpt-4o-mini-2024-07-18", million, nil, ptr(0.15 + 0.60)},
		{"Dated/gpt-4.1-mini", "gpt-4.1-mini-2025-04-14", million, nil, ptr(0.40 + 1.60)},
		{"Dated/gpt-5-nano", "gpt-5-nano-2025-08-07", million, nil, ptr(0.05 + 0.40)},
		{"Dated/o3-mini", "o3-mini-2025-01-31", million, nil, ptr(1.10 + 4.40)},
		{"Dated/claude-sonnet-4", "claude-sonnet-4-20250514", million, nil, ptr(3.00 + 15.00)},
		{"Dated/claude-opus-4-1", "claude-opus-4-1-20250805", million, nil, ptr(15.00 + 75.00)},
		{"Dated/claude-opus-4-5", "claude-opus-4-5-20251101", million, nil, ptr(5.00 + 25.00)},
		{"Dated/claude-3-5-haiku", "claude-3-5-haiku-20241022", million, nil, ptr(0.80 + 4.00)},
		// A prefix only counts at a dash.
		{"NoDashBoundary", "gpt-4oz", million, nil, nil},
		{"NoDashBoundaryO3", "o3x", million, nil, nil},
		// Unknown: no cost, not a cost of zero.
		{"Unknown", "llama3.1:8b", million, nil, nil},
		{"UnknownEmpty", "", million, nil, nil},
		{"UnknownCase", "GPT-4O", million, nil, nil},
		{"UnknownWithOverrides", "mistral-large", million, overrides, nil},
		// Overrides win, exactly or by prefix.
		{"OverrideExact", "gpt-4o-mini", million, overrides, ptr(1.0 + 2.0)},
		{"OverrideDated", "gpt-4o-mini-2024-07-18", million, overrides, ptr(1.0 + 2.0)},
		{"OverrideNewModel", "house-model", million, overrides, ptr(3.0 + 4.0)},
		{"OverrideLongestPrefix", "house-model-x-2", million, overrides, ptr(5.0 + 6.0)},
		{"OverrideShorterPrefix", "house-model-y", million, overrides, ptr(3.0 + 4.0)},
		{"OverrideOthersBuiltin", "gpt-4o", million, overrides, ptr(2.50 + 10.00)},
		{"OverrideFree", "free", million, overrides, ptr(0.0)},
		// Cached input tokens are part of the input count and cost the
		// cached price.
		{"Cached", "gpt-4o-mini", usage(1000, 200, 500), nil, ptr((800*0.15 + 200*0.075 + 500*0.60) / 1e6)},
		{"CachedAnthropic", "claude-sonnet-4-5-20250929", usage(10_000, 8_000, 1_000), nil, ptr((2_000*3.00 + 8_000*0.30 + 1_000*15.00) / 1e6)},
		{"CachedOverride", "gpt-4o-mini", usage(1000, 200, 500), overrides, ptr((800*1.0 + 200*0.5 + 500*2.0) / 1e6)},
		{"CachedWithoutCachedPrice", "house-model", usage(1000, 400, 0), overrides, ptr(1000 * 3.0 / 1e6)},
		{"AllCached", "gpt-4o", usage(1000, 1000, 0), nil, ptr(1000 * 1.25 / 1e6)},
		// More cached than input (a confused provider): clamped to the input.
		{"CachedClamped", "gpt-4o-mini", usage(100, 500, 0), nil, ptr(100 * 0.075 / 1e6)},
		{"CachedClampedNoInput", "gpt-4o", usage(0, 50, 10), nil, ptr(10 * 10.00 / 1e6)},
		{"ZeroUsage", "gpt-4o", usage(0, 0, 0), nil, ptr(0.0)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := mustCost(c.model, c.u, c.overrides)
			switch {
			case c.want == nil && got != nil:
				t.Fatalf("cost = %v, want nil (unknown)", *got)
			case c.want != nil && got == nil:
				t.Fatalf("cost = nil, want %v", *c.want)
			case c.want != nil && !near(*got, math.Round(*c.want*1e6)/1e6): // rounded once, to the micro-dollar
				t.Fatalf("cost = %.12f, want %.12f rounded to the millionth", *got, *c.want)
			}
		})
	}
}

// An override for a family must not reprice another family the built-in
// table knows more precisely: "gpt-4o" is not "gpt-4o-mini".
func TestCostOverridePrefixDoesNotShadowLongerBuiltin(t *testing.T) {
	overrides := map[string]store.Price{"gpt-4o": {Input: 100, Output: 100}, "o3": {Input: 50, Output: 50}}
	if got := mustCost("gpt-4o-2024-08-06", million, overrides); got == nil || !near(*got, 200) {
		t.Fatalf("the override does not price its own family: %v", got)
	}
	for _, c := range []struct {
		override, model string
		want            float64
	}{{"gpt-4o", "gpt-4o-mini", 0.15 + 0.60}, {"gpt-4o", "gpt-4o-mini-2024-07-18", 0.15 + 0.60}, {"o3", "o3-mini", 1.10 + 4.40}} {
		got := mustCost(c.model, million, overrides)
		if got == nil {
			t.Fatalf("%s: nil", c.model)
		}
		if !near(*got, c.want) {
			t.Fatalf("bug: an override for %q reprices %s at $%v instead of its built-in $%v: priceFor "+
				"(server/engine/prices.go) tries every override prefix before the built-in table, so the longer "+
				"built-in entry loses; it should take the longest match over the built-in table overlaid with the overrides",
				c.override, c.model, *got, c.want)
		}
	}
}

func TestBuiltinPrices(t *testing.T) {
	prices := engine.BuiltinPrices()
	if len(prices) < 10 || engine.PricesAsOf == "" {
		t.Fatalf("%d prices as of %q", len(prices), engine.PricesAsOf)
	}
	for model, p := range prices {
		if p.Input <= 0 || p.Output <= 0 || p.CachedInput == nil || *p.CachedInput > p.Input || *p.CachedInput < 0 {
			t.Errorf("%s: %+v", model, p)
		}
		// Every entry prices itself.
		if got := mustCost(model, million, nil); got == nil || !near(*got, p.Input+p.Output) {
			t.Errorf("Cost(%s) = %v", model, got)
		}
	}
	for _, m := range []string{"gpt-4o", "gpt-4o-mini", "claude-sonnet-4-5", "claude-haiku-4-5"} {
		if _, ok := prices[m]; !ok {
			t.Errorf("%s is not in the built-in table", m)
		}
	}
	// A copy: changing it changes nothing.
	prices["gpt-4o"] = store.Price{Input: 999, Output: 999}
	delete(prices, "gpt-4o-mini")
	if got := mustCost("gpt-4o", million, nil); got == nil || !near(*got, 12.5) {
		t.Fatalf("BuiltinPrices shares its table: %v", got)
	}
	if mustCost("gpt-4o-mini", million, nil) == nil {
		t.Fatalf("BuiltinPrices shares its table")
	}
}

// Built-in prices reach dated ids and -latest aliases of their family, not
// other models that merely share the prefix.
func TestBuiltinFamilies(t *testing.T) {
	u := ai.Usage{InputTokens: 1_000_000}
	for model, priced := range map[string]bool{
		"gpt-4o-2024-08-06":         true,
		"gpt-4o-mini-2024-07-18":    true,
		"claude-3-5-haiku-latest":   true,
		"claude-sonnet-4-20250514":  true,
		"gpt-5-pro":                 false,
		"o3-pro":                    false,
		"o3-deep-research":          false,
		"gpt-4o-audio-preview":      false,
		"gpt-4o-realtime-preview":   false,
		"claude-sonnet-4-5-unknown": false,
	} {
		if got := mustCost(model, u, nil); (got != nil) != priced {
			t.Errorf("%s: cost %v, priced %v", model, got, priced)
		}
	}
	// An override names a family on purpose.
	if got := mustCost("gpt-5-pro", u, map[string]store.Price{"gpt-5-pro": {Input: 15, Output: 120}}); got == nil || *got != 15 {
		t.Errorf("override: %v", got)
	}
}

// mustCost is engine.Cost for prices that always give a finite cost.
func mustCost(model string, u ai.Usage, overrides map[string]store.Price) *float64 {
	c, err := engine.Cost(model, u, overrides)
	if err != nil {
		panic(err)
	}
	return store.USDOf(c)
}

func TestCostNotFinite(t *testing.T) {
	huge := map[string]store.Price{"m": {Input: 1e308, Output: 1e308}}
	c, err := engine.Cost("m", million, huge)
	if c != nil || err == nil {
		t.Fatalf("Cost = %v, %v; want nil and an error", c, err)
	}
	if c, err := engine.Cost("m", usage(0, 0, 0), huge); err != nil || c == nil || *c != 0 {
		t.Fatalf("no tokens: Cost = %v, %v", c, err)
	}
}
