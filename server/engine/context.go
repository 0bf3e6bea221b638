package engine

import (
	"github.com/copydesk/copydesk/server/ai"
	"sync"
)

// Context windows: how many tokens a model reads and writes in one call,
// prompt and answer together. Nothing is sent to find out; the table is
// the providers' published figures, as of PricesAsOf, and the AI settings
// override it (context_windows) with the same lookup as prices: an exact
// id, a family an override names ("llama3.1" covers "llama3.1-8b"), or a
// built-in family followed by a release date or "-latest".

// DefaultContextWindow is assumed for a model found nowhere: small on
// purpose (a local model served with its default context), so that a
// history is trimmed too much rather than refused by the provider. An
// override names the real size.
const DefaultContextWindow = 8192

var builtinContextWindows = sync.OnceValue(func() map[string]int {
	return map[string]int{
		// OpenAI
		"gpt-5":        400000,
		"gpt-5-mini":   400000,
		"gpt-5-nano":   400000,
		"gpt-4.1":      1047576,
		"gpt-4.1-mini": 1047576,
		"gpt-4.1-nano": 1047576,
		"gpt-4o":       128000,
		"gpt-4o-mini":  128000,
		"o3":           200000,
		"o3-mini":      200000,
		"o4-mini":      200000,
		// Anthropic (the standard window; the 1M beta is asked for per call)
		"claude-opus-4-5":   200000,
		"claude-opus-4-1":   200000,
		"claude-opus-4":     200000,
		"claude-sonnet-4-5": 200000,
		"claude-sonnet-4":   200000,
		"claude-3-7-sonnet": 200000,
		"claude-haiku-4-5":  200000,
		"claude-3-5-haiku":  200000,
		"claude-3-haiku":    200000,
	}
})

// BuiltinContextWindows returns a copy of the built-in table.
func BuiltinContextWindows() map[string]int {
	out := make(map[string]int, len(builtinContextWindows()))
	for k, v := range builtinContextWindows() {
		out[k] = v
	}
	return out
}

// ContextWindow is a model's context window in tokens, with whether the
// tables knew it (false: DefaultContextWindow).
func ContextWindow(model string, overrides map[string]int) (int, bool) {
	if n, ok := lookup(model, overrides, builtinContextWindows()); ok && n > 0 {
		return n, true
	}
	return DefaultContextWindow, false
}

// The token estimate. copydesk ships no tokenizer (each provider has its
// own, and local models others again); it counts UTF-8 bytes. About four
// characters make a token in English prose, so bytes/4 is close there, and
// for scripts of multi-byte characters (2-3 bytes each, often a token or
// more each) it errs less than characters/4 would. Code and unusual text
// take more tokens than that: trimming keeps a margin (PromptBudget).
const (
	// bytesPerToken is the divisor of the estimate.
	bytesPerToken = 4
	// messageOverhead is what a message costs beyond its text (role and
	// separators in the provider's template).
	messageOverhead = 4
	// budgetMargin is the share of the window trimming leaves unused, for
	// the estimate's error: a prompt estimated at 90% of what is left after
	// the answer is refused by no provider in practice.
	budgetMarginPercent = 10
)

// EstimateTokens is a token count of text from its length: UTF-8 bytes /
// 4, rounded up.
func EstimateTokens(text string) int64 {
	return int64((len(text) + bytesPerToken - 1) / bytesPerToken)
}

// EstimatePrompt estimates the input tokens of a call: the system text and
// every message with its overhead.
func EstimatePrompt(system string, msgs []ai.Message) int64 {
	n := EstimateTokens(system)
	if system != "" {
		n += messageOverhead
	}
	for _, m := range msgs {
		n += EstimateTokens(m.Content) + messageOverhead
	}
	return n
}

// PromptBudget is how many (estimated) tokens a prompt may take in a
// window when maxOutput tokens are kept for the answer: what is left,
// less budgetMarginPercent for the estimate's error; never below zero.
func PromptBudget(window, maxOutput int) int64 {
	left := int64(window - maxOutput)
	if left <= 0 {
		return 0
	}
	return left * (100 - budgetMarginPercent) / 100
}

// Trim drops the oldest messages until the system text and the rest fit
// budget (EstimatePrompt), and says how many it dropped. The last message
// (the one being answered) is always kept, even alone over the budget:
// the provider then says the prompt is too long, which is the truth.
// What is kept starts with a user message when it can (Anthropic refuses
// a conversation that starts with the assistant): a reply whose question
// was dropped goes too.
func Trim(system string, msgs []ai.Message, budget int64) ([]ai.Message, int) {
	dropped := 0
	for len(msgs)-dropped > 1 && EstimatePrompt(system, msgs[dropped:]) > budget {
		dropped++
	}
	for dropped > 0 && len(msgs)-dropped > 1 && msgs[dropped].Role == "assistant" {
		dropped++
	}
	return msgs[dropped:], dropped
}
