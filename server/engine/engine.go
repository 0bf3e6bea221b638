// Package engine is how copydesk generates text: it resolves which
// credential, model and parameters a call uses (the agent's, then the
// environment's AI content settings, then the global ones), calls the
// provider through server/ai, records a usage event for every call,
// successful or not, prices it, and watches the environments' monthly
// budgets. Agents, chat, live sessions, scout and autopilot all call it.
//
// It is called from a request or a job, which hold the database (the
// restore gate) for it; it never holds it itself. A generation that takes
// minutes runs in a job, whose hold yields to a restore: the job's context
// ends, which cuts the provider call.
package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/copydesk/copydesk/server/ai"
	"github.com/copydesk/copydesk/server/credential"
	"github.com/copydesk/copydesk/server/notify"
	"github.com/copydesk/copydesk/server/outbound"
	"github.com/copydesk/copydesk/server/publish/wordpress"
	"github.com/copydesk/copydesk/server/serp"
	"github.com/copydesk/copydesk/server/webhook"
	"github.com/copydesk/copydesk/store"
)

// Defaults are the built-in generation settings, below the global ones.
var Defaults = Effective{Temperature: 0.7, MaxOutputTokens: 4096, Tone: "professional", Language: "en", TargetWordCount: 1200}

// Effective is the merged result of the settings levels.
type Effective struct {
	CredentialID    *int64
	Model           string
	Temperature     float64
	MaxOutputTokens int
	Tone            string
	Language        string
	TargetWordCount int
	MonthlyBudget   *store.Micros
	// MonthlyBudgetTokens is the monthly budget in tokens (input and
	// output), for models without a price too.
	MonthlyBudgetTokens *int64
	PriceOverrides      map[string]store.Price
	// ContextWindows overrides the built-in context windows
	// (ContextWindow), model id or family to tokens.
	ContextWindows map[string]int
}

// ContextWindow is the context window of model under these settings.
func (eff Effective) ContextWindow(model string) int {
	n, _ := ContextWindow(model, eff.ContextWindows)
	return n
}

// Options tunes the engine.
type Options struct {
	HTTPClient *http.Client  // shared by every outbound call; from server/outbound, for its address guard
	Timeout    time.Duration // one provider attempt (default 2 minutes)
	MaxRetries int           // retries on 429/5xx/network (default 2)
	// OnRecordError is called, beside the error log, when a call's usage
	// event cannot be stored: the cost would silently leave analytics and
	// budgets. The call's own answer stands (its text is paid for), so the
	// caller does not get the error; tests set this to fail.
	OnRecordError func(error)
	// OnUsage, when set, is told the usage event of every call, whether
	// or not it could be stored (server/metrics counts them).
	OnUsage func(store.UsageEvent)
}

// Engine generates text and accounts for it.
type Engine struct {
	db     *store.DB
	creds  *credential.Opener
	notify *notify.Notifier
	hooks  webhook.Emitter
	log    *slog.Logger
	opt    Options
}

// EmitTo makes the engine tell webhooks (budget.reached) besides the
// environment's users. It is called once, before the engine is used: the
// webhook service is built after it (server.New).
func (e *Engine) EmitTo(h webhook.Emitter) { e.hooks = webhook.Or(h) }

// New returns an engine; keys unseal the credentials (server/keyring),
// through server/credential's opener.
func New(db *store.DB, keys credential.Unsealer, n *notify.Notifier, log *slog.Logger, opt Options) *Engine {
	if opt.HTTPClient == nil {
		opt.HTTPClient = outbound.NewClient(outbound.Options{Timeout: 10 * time.Minute})
	}
	if opt.Timeout <= 0 {
		opt.Timeout = 2 * time.Minute
	}
	if opt.MaxRetries == 0 {
		opt.MaxRetries = 2
	}
	return &Engine{db: db, creds: credential.NewOpener(db, keys), notify: n, hooks: webhook.Discard, log: log, opt: opt}
}

// Effective merges the settings of an environment (nil: global only) over
// the global ones over the built-in defaults. When no level chooses a
// credential and exactly one AI credential is usable there, that one is
// the effective credential: a first credential works without a second
// step, and adding another never changes silently which one is used
// (two or more, none chosen, is a 409 that asks to choose).
func (e *Engine) Effective(ctx context.Context, envID *int64) (Effective, error) {
	eff := Defaults
	eff.PriceOverrides = map[string]store.Price{}
	eff.ContextWindows = map[string]int{}
	levels := []*int64{nil}
	if envID != nil {
		levels = append(levels, envID)
	}
	for _, lvl := range levels {
		s, err := e.db.AISettingsFor(ctx, lvl)
		if err != nil {
			return eff, err
		}
		if s.CredentialID != nil {
			eff.CredentialID = s.CredentialID
		}
		if s.Model != nil {
			eff.Model = *s.Model
		}
		if s.Temperature != nil {
			eff.Temperature = *s.Temperature
		}
		if s.MaxOutputTokens != nil {
			eff.MaxOutputTokens = *s.MaxOutputTokens
		}
		if s.Tone != nil {
			eff.Tone = *s.Tone
		}
		if s.Language != nil {
			eff.Language = *s.Language
		}
		if s.TargetWordCount != nil {
			eff.TargetWordCount = *s.TargetWordCount
		}
		if s.MonthlyBudget != nil {
			eff.MonthlyBudget = s.MonthlyBudget
		}
		if s.MonthlyBudgetTokens != nil {
			eff.MonthlyBudgetTokens = s.MonthlyBudgetTokens
		}
		for m, p := range s.PriceOverrides {
			eff.PriceOverrides[m] = p
		}
		for m, n := range s.ContextWindows {
			eff.ContextWindows[m] = n
		}
	}
	if eff.CredentialID == nil {
		only, _, err := e.onlyAICredential(ctx, envID)
		if err != nil {
			return eff, err
		}
		eff.CredentialID = only
	}
	return eff, nil
}

// onlyAICredential is the AI credential usable in envID when it is the
// only one, with how many there are.
func (e *Engine) onlyAICredential(ctx context.Context, envID *int64) (*int64, int, error) {
	list, n, err := e.db.ListAICredentials(ctx, store.AICredentialFilter{EnvironmentID: envID, Page: store.Page{Page: 1, PerPage: 1}})
	if err != nil || n != 1 || len(list) != 1 {
		return nil, n, err
	}
	return &list[0].ID, n, nil
}

// Call is one generation request with who it is for.
type Call struct {
	// Source names what the call is for in token analytics: one of
	// store.UsageSources (execution, chat, live, scout, autopilot, cie,
	// search). A call without one is refused: every metered call says.
	Source        string
	UserID        *int64
	EnvironmentID *int64
	AgentID       *int64
	// CredentialID, Model, Temperature and MaxTokens, when set (an agent's
	// own choices), win over the settings.
	CredentialID *int64
	Model        string
	Temperature  *float64
	MaxTokens    int
	// System is the system prompt. It is never a message: Messages hold
	// only the roles "user" and "assistant", and a "system" one is refused
	// (422), so there is one place for system text and each provider gets
	// it where its API wants it (OpenAI's first message, Anthropic's
	// system field).
	System   string
	Messages []ai.Message
}

// Result is a finished generation with what it cost.
type Result struct {
	Text         string
	Provider     string
	Model        string
	CredentialID int64
	Usage        ai.Usage
	Cost         *store.Micros // nil: the model's price is unknown
	Latency      time.Duration
	// StopReason is why the model stopped (ai.Stop's words): ai.StopLength
	// when the answer was cut off at the max tokens limit, ai.StopCancelled
	// when the call was stopped or cancelled, ai.StopError when it failed;
	// "" when the provider did not say.
	StopReason string
	// Partial marks the result of a stream that failed after its answer
	// began: Text is what was streamed before the failure, returned with
	// the error.
	Partial bool
	// UsageEstimated says Usage was estimated (EstimateTokens), in part or
	// whole, because the provider did not report it (a stream cut off, or
	// a server that sends no usage); the usage event says so too.
	UsageEstimated bool
}

// checkCall refuses a call that cannot be accounted for or sent.
func checkCall(c Call) error {
	if !slices.Contains(store.UsageSources, c.Source) {
		return store.Invalid("the call's source %q is none of the usage sources (%s)", c.Source, strings.Join(store.UsageSources, ", "))
	}
	if len(c.Messages) == 0 {
		return store.Invalid("messages: at least one message is required")
	}
	for i, m := range c.Messages {
		switch m.Role {
		case "user", "assistant":
		case "system":
			return store.Invalid("messages[%d]: a message cannot have the system role: system text goes in the call's system prompt", i)
		default:
			return store.Invalid("messages[%d]: role %q: must be user or assistant", i, m.Role)
		}
	}
	return nil
}

// msgNoProvider is the detail of the 409 when nothing can generate.
const msgNoProvider = "no AI provider is configured: add a credential with POST /api/configurations " +
	"(provider openai, anthropic or openai_compatible); the only one is used, or choose one with PUT /api/settings/ai-content"

// plan is a resolved call.
type plan struct {
	cred *store.Credential
	eff  Effective
	req  ai.Request
	prov ai.Provider
}

func (e *Engine) resolve(ctx context.Context, c Call) (*plan, error) {
	eff, err := e.Effective(ctx, c.EnvironmentID)
	if err != nil {
		return nil, err
	}
	credID := c.CredentialID
	if credID == nil {
		credID = eff.CredentialID
	}
	if credID == nil {
		// Effective took the only usable credential: here there are none,
		// or several and nothing says which.
		_, n, err := e.onlyAICredential(ctx, c.EnvironmentID)
		if err != nil {
			return nil, err
		}
		if n > 1 {
			return nil, store.Conflict("%d AI credentials are usable here and none is chosen: choose one with "+
				"PUT /api/settings/ai-content {\"credential_id\": N} (or on the agent)", n)
		}
		return nil, store.Conflict("%s", msgNoProvider)
	}
	opened, err := e.creds.Open(ctx, *credID, credential.Need{Kind: credential.AI, EnvironmentID: c.EnvironmentID})
	if err != nil {
		return nil, err
	}
	cred := opened.Credential
	model := cmp.Or(c.Model, eff.Model, cred.DefaultModel)
	if model == "" {
		return nil, store.Conflict("no model is chosen: set default_model on credential %d, or model in PUT /api/settings/ai-content", cred.ID)
	}
	prov, err := ai.New(ai.Config{Kind: cred.Provider, APIKey: opened.Secret, BaseURL: cred.BaseURL,
		Timeout: e.opt.Timeout, MaxRetries: e.opt.MaxRetries, HTTPClient: e.opt.HTTPClient})
	if err != nil {
		return nil, store.Conflict("credential %d is not usable: %s", cred.ID, err.Error())
	}
	temp := eff.Temperature
	if c.Temperature != nil {
		temp = *c.Temperature
	}
	maxTok := eff.MaxOutputTokens
	if c.MaxTokens > 0 {
		maxTok = c.MaxTokens
	}
	return &plan{cred: cred, eff: eff, prov: prov, req: ai.Request{Model: model, System: c.System, Messages: c.Messages,
		Temperature: &temp, MaxTokens: maxTok}}, nil
}

// Plan checks that a call could run (a usable credential and a model) and
// says with what, without calling the provider: a 409 comes early rather
// than as a failed run.
func (e *Engine) Plan(ctx context.Context, c Call) (provider, model string, err error) {
	p, err := e.resolve(ctx, c)
	if err != nil {
		return "", "", err
	}
	return p.cred.Provider, p.req.Model, nil
}

// Generate runs a call to completion.
func (e *Engine) Generate(ctx context.Context, c Call) (*Result, error) {
	return e.run(ctx, c, nil)
}

// Stream runs a call, handing each piece of text to onDelta as it arrives.
func (e *Engine) Stream(ctx context.Context, c Call, onDelta func(string) error) (*Result, error) {
	return e.run(ctx, c, onDelta)
}

func (e *Engine) run(ctx context.Context, c Call, onDelta func(string) error) (*Result, error) {
	if err := checkCall(c); err != nil {
		return nil, err
	}
	p, err := e.resolve(ctx, c)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	var resp *ai.Response
	if onDelta != nil {
		resp, err = p.prov.Stream(ctx, p.req, onDelta)
	} else {
		resp, err = p.prov.Generate(ctx, p.req)
	}
	latency := time.Since(start)
	res := &Result{Provider: p.cred.Provider, Model: p.req.Model, CredentialID: p.cred.ID, Latency: latency}
	if resp != nil {
		res.Text, res.Usage, res.StopReason, res.Partial = resp.Text, resp.Usage, ai.Stop(resp.StopReason), resp.Partial
		if resp.Model != "" {
			res.Model = resp.Model
		}
		res.Usage, res.UsageEstimated = completeUsage(p.req, resp)
	}
	// A failed call is priced too: zero for a known model that used no
	// tokens, null for an unknown one.
	cost, costErr := Cost(res.Model, res.Usage, p.eff.PriceOverrides)
	if costErr != nil {
		e.log.Error("call cost", "err", costErr)
	}
	res.Cost = cost
	switch {
	case Stopped(ctx, err):
		res.StopReason = ai.StopCancelled
	case err != nil:
		res.StopReason = ai.StopError
	}
	// The call happened, whatever became of ctx meanwhile: account for it.
	wctx := context.WithoutCancel(ctx)
	e.record(wctx, c, res, err)
	// A failed or stopped call's tokens count toward the budgets too.
	e.watchBudget(wctx, c.EnvironmentID, p.eff)
	if err != nil {
		return res, providerError(err)
	}
	return res, nil
}

// completeUsage is the usage of a response, with each count the provider
// did not report estimated from the text sent and received; the result
// says whether any was. A stream cut off after its answer began has little
// or none (providers report usage at the end, as OpenAI does, or the input
// at the start and the output at the end, as Anthropic does), and some
// OpenAI-compatible servers never report it (they ignore
// stream_options.include_usage): a call that cost tokens is never
// recorded as 0, where budgets would not see it.
func completeUsage(req ai.Request, resp *ai.Response) (ai.Usage, bool) {
	u, estimated := resp.Usage, false
	if u.InputTokens == 0 {
		u.InputTokens, estimated = EstimatePrompt(req.System, req.Messages), true
	}
	out := EstimateTokens(resp.Text)
	switch {
	case u.OutputTokens == 0 && out > 0:
		u.OutputTokens, estimated = out, true
	case resp.Partial && out > u.OutputTokens:
		// Anthropic's message_start says 1 output token: what was
		// streamed since is more.
		u.OutputTokens, estimated = out, true
	}
	return u, estimated
}

// record stores the usage event of a call. A failure to record is not
// returned, as the call itself has happened and its answer is paid for:
// it is logged as an error and handed to Options.OnRecordError.
func (e *Engine) record(ctx context.Context, c Call, res *Result, callErr error) {
	ev := store.UsageEvent{Provider: res.Provider, Model: res.Model, InputTokens: res.Usage.InputTokens,
		OutputTokens: res.Usage.OutputTokens, CachedTokens: res.Usage.CachedTokens, Cost: res.Cost,
		LatencyMS: res.Latency.Milliseconds(), Status: store.UsageOK, Source: c.Source, UserID: c.UserID,
		EnvironmentID: c.EnvironmentID, AgentID: c.AgentID, CredentialID: &res.CredentialID, Estimated: res.UsageEstimated}
	switch {
	case res.StopReason == ai.StopCancelled:
		// Stopped by someone (or by the server stopping), not failed: its
		// partial usage counts as any other.
		ev.Status, ev.Error = store.UsageCancelled, "the call was stopped before it finished"
	case callErr != nil:
		ev.Status, ev.Error = store.UsageError, store.Message(providerError(callErr))
	}
	if e.opt.OnUsage != nil {
		e.opt.OnUsage(ev)
	}
	if _, err := e.db.RecordUsage(ctx, ev); err != nil {
		e.log.Error("usage event not recorded: its cost is missing from token analytics and budgets", "source", c.Source,
			"model", res.Model, "input_tokens", ev.InputTokens, "output_tokens", ev.OutputTokens, "err", err)
		if e.opt.OnRecordError != nil {
			e.opt.OnRecordError(fmt.Errorf("engine: record usage of a %s call: %w", c.Source, err))
		}
	}
}

// ErrStopped is what a stream's onDelta answers to stop the call because
// its generation was stopped or cancelled (generation.ErrStopped): the
// call is then cancelled, not failed.
var ErrStopped = errors.New("generation: stopped")

// Stopped says whether a call that ended with err was stopped on purpose:
// its onDelta answered ErrStopped, or its context ended (a cancel, a
// server stopping, a restore), rather than the provider failing.
func Stopped(ctx context.Context, err error) bool {
	return err != nil && (errors.Is(err, ErrStopped) || ctx.Err() != nil)
}

// providerError gives a provider failure its kind: cancellation stays what
// it is; an address the outbound guard refused is a 409; anything from the
// provider is a 502 whose detail is the provider's own message.
func providerError(err error) error {
	var addr *outbound.AddressError
	if errors.As(err, &addr) {
		// Not the provider's failure: the credential's address is one the
		// server does not call. It must change first.
		return &store.Error{Kind: store.KindConflict, Message: "the credential's base_url leads to a refused address: " + addr.Error(), Err: err}
	}
	var ae *ai.Error
	if errors.As(err, &ae) {
		return &store.Error{Kind: store.KindRemote, Message: ae.Error(), Err: err}
	}
	var se *store.Error
	if errors.As(err, &se) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return &store.Error{Kind: store.KindRemote, Message: "the AI provider call failed: " + err.Error(), Err: err}
}

// Retryable reports whether a failed call is worth trying again later.
func Retryable(err error) bool {
	var ae *ai.Error
	return errors.As(err, &ae) && ae.Retryable
}

// watchBudget raises budget.reached once each when an environment's month
// crosses 80% and 100% of its monthly budget in dollars, and once each for
// its budget in tokens (input and output, priced or not: a local model's
// calls have no cost, only tokens).
func (e *Engine) watchBudget(ctx context.Context, envID *int64, eff Effective) {
	if envID == nil {
		return
	}
	money := eff.MonthlyBudget != nil && *eff.MonthlyBudget > 0
	tokens := eff.MonthlyBudgetTokens != nil && *eff.MonthlyBudgetTokens > 0
	if !money && !tokens {
		return
	}
	now := e.db.Now().UTC()
	month := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	spent, err := e.db.EnvironmentSpendSince(ctx, *envID, month)
	if err != nil {
		e.log.Error("budget check", "err", err)
		return
	}
	type budget struct {
		key, what   string // the alert's period key; the budget's name
		unit        string // of the webhook's data: "usd" or "tokens"
		used, limit int64
		amount      func(int64) string
	}
	var budgets []budget
	if money {
		budgets = append(budgets, budget{key: month.Format("2006-01"), what: "monthly AI budget", unit: "usd", used: int64(spent.Cost),
			limit: int64(*eff.MonthlyBudget), amount: func(n int64) string { return store.Micros(n).String() }})
	}
	if tokens {
		budgets = append(budgets, budget{key: month.Format("2006-01") + " tokens", what: "monthly AI token budget", unit: "tokens", used: spent.Tokens,
			limit: *eff.MonthlyBudgetTokens, amount: Tokens})
	}
	for _, b := range budgets {
		for _, pct := range []int64{80, 100} {
			if b.used*100 < b.limit*pct {
				continue
			}
			fresh, err := e.db.MarkBudgetAlert(ctx, *envID, b.key, int(pct))
			if err != nil || !fresh {
				continue
			}
			name := fmt.Sprintf("environment %d", *envID)
			if env, err := e.db.EnvironmentByID(ctx, *envID); err == nil {
				name = env.Name
			}
			data := map[string]any{"percent": pct, "month": month.Format("2006-01"), "unit": b.unit}
			if b.unit == "usd" {
				data["spent_usd"], data["budget_usd"] = store.Micros(b.used).USD(), store.Micros(b.limit).USD()
			} else {
				data["spent_tokens"], data["budget_tokens"] = b.used, b.limit
			}
			e.hooks.Emit(ctx, webhook.Event{Type: webhook.BudgetReached, EnvironmentID: *envID, Data: data})
			e.notify.Environment(ctx, *envID, notify.Note{Kind: notify.BudgetReached,
				Title: fmt.Sprintf("%s has used %d%% of its %s", name, pct, b.what),
				Body:  fmt.Sprintf("%s of %s in %s.", b.amount(b.used), b.amount(b.limit), month.Format("January 2006")),
				Link:  fmt.Sprintf("/api/token-analytics/summary?environment_id=%d", *envID)})
		}
	}
}

// Tokens writes a token count for a person: "12,345 tokens".
func Tokens(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s + " tokens"
}

// TestCredential makes a real, cheap call with a credential: list the
// models (AI providers), the signed-in user (WordPress) or the account
// (SERP). A failure is a result, not an error; the outcome is recorded on
// the credential.
func (e *Engine) TestCredential(ctx context.Context, cred *store.Credential) (*credential.TestResult, error) {
	opened, err := e.creds.Open(ctx, cred.ID, credential.Need{Kind: credential.Kind(cred.Provider), EnvironmentID: cred.EnvironmentID})
	if err != nil {
		return nil, err
	}
	secret := opened.Secret
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	start := time.Now()
	res := &credential.TestResult{}
	switch {
	case store.IsAIProvider(cred.Provider):
		prov, err := ai.New(ai.Config{Kind: cred.Provider, APIKey: secret, BaseURL: cred.BaseURL,
			Timeout: 15 * time.Second, MaxRetries: 1, HTTPClient: e.opt.HTTPClient})
		if err == nil {
			var models []string
			models, err = prov.Models(ctx)
			if err == nil {
				sort.Strings(models)
				res.Models = models
				res.Detail = fmt.Sprintf("%d models available", len(models))
			}
		}
		res.OK = err == nil
		if err != nil {
			res.Detail = testFailure(err, secret)
		}
	case cred.Provider == store.ProviderWordPress:
		u, err := wordpress.New(cred.BaseURL, cred.Username, secret, e.opt.HTTPClient).Me(ctx)
		res.OK = err == nil
		if err != nil {
			res.Detail = testFailure(err, secret)
		} else {
			res.Detail = fmt.Sprintf("signed in as %s (%s)", u.Name, strings.Join(u.Roles, ", "))
		}
	case cred.Provider == store.ProviderSERP:
		a, err := serp.New(cred.BaseURL, secret, e.opt.HTTPClient).Account(ctx)
		res.OK = err == nil
		if err != nil {
			res.Detail = testFailure(err, secret)
		} else {
			res.Detail = fmt.Sprintf("account %s, plan %s, %d searches left", a.Email, a.PlanName, a.SearchesLeft)
		}
	default:
		return nil, store.Invalid("provider %q cannot be tested", cred.Provider)
	}
	res.LatencyMS = time.Since(start).Milliseconds()
	errText := ""
	if !res.OK {
		errText = res.Detail
	}
	if err := e.db.RecordCredentialTest(context.WithoutCancel(ctx), cred.ID, res.OK, errText); err != nil {
		return nil, err
	}
	return res, nil
}

// maxRemoteDetail bounds what a failed credential test repeats of the
// remote answer: enough to recognise the error, too little to read pages
// of an internal service through the test.
const maxRemoteDetail = 200

// testFailure is the detail of a failed credential test: the remote
// status and at most maxRemoteDetail characters of what the remote
// answered, or what went wrong on the way (refused address, network),
// never the secret.
func testFailure(err error, secret string) string {
	clip := func(msg string) string { return outbound.Excerpt(scrub(msg, secret), maxRemoteDetail) }
	var ae *ai.Error
	var we *wordpress.Error
	var se *serp.Error
	switch {
	case errors.As(err, &ae):
		c := *ae
		c.Message = clip(c.Message)
		return scrub(c.Error(), secret)
	case errors.As(err, &we):
		c := *we
		c.Code, c.Message = outbound.Excerpt(scrub(c.Code, secret), 50), clip(c.Message)
		return scrub(c.Error(), secret)
	case errors.As(err, &se):
		c := *se
		c.Message = clip(c.Message)
		return scrub(c.Error(), secret)
	}
	return scrub(err.Error(), secret)
}

func scrub(s, secret string) string {
	if len(secret) >= 4 {
		s = strings.ReplaceAll(s, secret, credential.Mask(secret))
	}
	return s
}
