package engine

import (
	"fmt"
	"math"
	"regexp"
	"strings"
	"sync"

	"github.com/copydesk/copydesk/server/ai"
	"github.com/copydesk/copydesk/store"
)

// PricesAsOf is when the built-in price table was last checked against
// the providers' price pages.
const PricesAsOf = "2025-11"

func p(in, cached, out float64) store.Price {
	return store.Price{Input: in, Output: out, CachedInput: &cached}
}

// builtinPrices are list prices in US dollars per million tokens. Dated ids
// (gpt-4o-2024-08-06, claude-sonnet-4-20250514) and -latest aliases find
// their family. Settings override them (price_overrides); a model found
// nowhere has no cost (null), never a cost of zero.
var builtinPrices = sync.OnceValue(func() map[string]store.Price {
	return map[string]store.Price{
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
})

// BuiltinPrices returns a copy of the built-in table.
func BuiltinPrices() map[string]store.Price {
	out := make(map[string]store.Price, len(builtinPrices()))
	for k, v := range builtinPrices() {
		out[k] = v
	}
	return out
}

// versionSuffix is what may follow a family's id in a model id that means
// the same model: a release date or "latest". Anything else (gpt-5-pro,
// o3-deep-research, gpt-4o-audio-preview) is a different model with its
// own price, so it is unknown unless an override names it.
var versionSuffix = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^-(\d{4}-\d{2}-\d{2}|\d{8}|latest)$`) })

// priceFor finds a model's price (see lookup).
func priceFor(model string, overrides map[string]store.Price) (store.Price, bool) {
	return lookup(model, overrides, builtinPrices())
}

// lookup finds a model's entry in a per-model table (prices, context
// windows): an exact entry (overrides written over the built-in table),
// else the longest candidate among the overrides whose id the model's id
// extends with "-..." (an override may name a family on purpose) and the
// built-in entries it extends with a release date or "-latest".
func lookup[T any](model string, overrides, builtin map[string]T) (T, bool) {
	if v, ok := overrides[model]; ok {
		return v, true
	}
	if v, ok := builtin[model]; ok {
		return v, true
	}
	best := ""
	var found T
	for k, v := range overrides {
		if len(k) > len(best) && strings.HasPrefix(model, k+"-") {
			best, found = k, v
		}
	}
	for k, v := range builtin {
		if len(k) > len(best) && strings.HasPrefix(model, k) && versionSuffix().MatchString(model[len(k):]) {
			best, found = k, v
		}
	}
	return found, best != ""
}

// Cost prices a call's usage in micro-dollars, rounded once to the nearest
// (a price per million tokens is micro-dollars per token); nil when the
// model's price is unknown. The input count includes cached input tokens,
// which cost the cached price. A cost that is no finite number (a price
// override saved before prices were bounded) is unknown too, and the error
// says why: JSON cannot hold it, so one stored would break every answer
// that includes it.
func Cost(model string, u ai.Usage, overrides map[string]store.Price) (*store.Micros, error) {
	pr, ok := priceFor(model, overrides)
	if !ok {
		return nil, nil
	}
	cachedPrice := pr.Input
	if pr.CachedInput != nil {
		cachedPrice = *pr.CachedInput
	}
	cached := min(u.CachedTokens, u.InputTokens)
	c := float64(u.InputTokens-cached)*pr.Input + float64(cached)*cachedPrice + float64(u.OutputTokens)*pr.Output
	if math.IsNaN(c) || math.IsInf(c, 0) || math.Abs(c) >= math.MaxInt64/2 {
		return nil, fmt.Errorf("engine: the cost of %d input and %d output tokens of %s is %g micro-dollars: recorded as unknown; check its price",
			u.InputTokens, u.OutputTokens, model, c)
	}
	m := store.Micros(math.Round(c))
	return &m, nil
}
