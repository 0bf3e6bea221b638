package engine

import (
	"strings"

	"github.com/copydesk/copydesk/server/ai"
	"github.com/copydesk/copydesk/store"
)

// PricesAsOf is when the built-in price table was last checked against
// the providers' price pages.
const PricesAsOf = "2025-11"

func p(in, cached, out float64) store.Price {
	return store.Price{Input: in, Output: out, CachedInput: &cached}
}

// builtinPrices are list prices in US dollars per million tokens. A model
// id matches the longest entry it starts with, so dated ids
// (gpt-4o-2024-08-06, claude-sonnet-4-20250514) find their family. Settings
// override them (price_overrides); a model found nowhere has no cost (null),
// never a cost of zero.
var builtinPrices = map[string]store.Price{
	// OpenAI
	"gpt-5":        p(1.25, 0.125, 10.00),
	"gpt-5-mini":   p(0.25, 0.025, 2.00),
	"gpt-5-nano":   p(0.05, 0.005, 0.40),
	"gpt-4.1":      p(2.00, 0.50, 8.00),
	"gpt-4.1-mini": p(0.40, 0.10, 1.60),
	"gpt-4.1-nano": p(0.10, 0.025, 0.40),
	"gpt-4o":       p(2.50, 1.25, 10.00),
	"gpt-4o-mini":  p(0.15, 0.075, 0.60),
	"o3":           p(2.00, 0.50, 8.00),
	"o3-mini":      p(1.10, 0.55, 4.40),
	"o4-mini":      p(1.10, 0.275, 4.40),
	// Anthropic (cached: cache reads)
	"claude-opus-4-5":   p(5.00, 0.50, 25.00),
	"claude-opus-4-1":   p(15.00, 1.50, 75.00),
	"claude-opus-4":     p(15.00, 1.50, 75.00),
	"claude-sonnet-4-5": p(3.00, 0.30, 15.00),
	"claude-sonnet-4":   p(3.00, 0.30, 15.00),
	"claude-3-7-sonnet": p(3.00, 0.30, 15.00),
	"claude-haiku-4-5":  p(1.00, 0.10, 5.00),
	"claude-3-5-haiku":  p(0.80, 0.08, 4.00),
	"claude-3-haiku":    p(0.25, 0.03, 1.25),
}

// BuiltinPrices returns a copy of the built-in table.
func BuiltinPrices() map[string]store.Price {
	out := make(map[string]store.Price, len(builtinPrices))
	for k, v := range builtinPrices {
		out[k] = v
	}
	return out
}

// priceFor finds a model's price in the built-in table with the overrides
// written over it: an exact entry, else the longest entry the id starts
// with (followed by "-"). One table, so an override for gpt-4o does not
// reprice gpt-4o-mini, whose own entry is longer.
func priceFor(model string, overrides map[string]store.Price) (store.Price, bool) {
	table := builtinPrices
	if len(overrides) > 0 {
		table = BuiltinPrices()
		for k, v := range overrides {
			table[k] = v
		}
	}
	if pr, ok := table[model]; ok {
		return pr, true
	}
	best := ""
	for k := range table {
		if len(k) > len(best) && strings.HasPrefix(model, k+"-") {
			best = k
		}
	}
	if best == "" {
		return store.Price{}, false
	}
	return table[best], true
}

// Cost prices a call's usage; nil when the model's price is unknown. The
// input count includes cached input tokens, which cost the cached price.
func Cost(model string, u ai.Usage, overrides map[string]store.Price) *float64 {
	pr, ok := priceFor(model, overrides)
	if !ok {
		return nil
	}
	cachedPrice := pr.Input
	if pr.CachedInput != nil {
		cachedPrice = *pr.CachedInput
	}
	cached := min(u.CachedTokens, u.InputTokens)
	c := (float64(u.InputTokens-cached)*pr.Input + float64(cached)*cachedPrice + float64(u.OutputTokens)*pr.Output) / 1e6
	return &c
}
