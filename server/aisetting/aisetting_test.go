package aisetting_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/copydesk/copydesk/server/aisetting"
	"github.com/copydesk/copydesk/server/credential"
	"github.com/copydesk/copydesk/server/engine"
	"github.com/copydesk/copydesk/server/environment"
	"github.com/copydesk/copydesk/server/keyring"
	"github.com/copydesk/copydesk/store"
	"github.com/copydesk/copydesk/store/storetest"
)

var (
	admin  = store.NewScope(1, true, nil)
	editor = store.NewScope(2, false, nil)
)

func ptr[T any](v T) *T { return &v }

// resolver stands in for the engine's merge of the levels; it tells which
// level it was asked for.
type resolver struct{}

func (resolver) Effective(_ context.Context, envID *int64) (engine.Effective, error) {
	eff := engine.Defaults
	eff.Model = "global"
	if envID != nil {
		eff.Model = fmt.Sprintf("environment %d", *envID)
	}
	return eff, nil
}

type rig struct {
	svc        *aisetting.Service
	env        int64
	cred       int64 // global openai
	envCred    int64 // openai of env
	wordpress  int64
	otherEnv   int64
	otherCreds int64 // openai of otherEnv
}

func newRig(t *testing.T) *rig {
	t.Helper()
	ctx := context.Background()
	db, _ := storetest.OpenDB(t)
	keys, err := keyring.New([]byte("aisetting-test-secret-0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	envs := environment.New(db)
	creds := credential.New(db, envs, keys, nil)
	r := &rig{svc: aisetting.New(db, envs, creds, resolver{})}
	for _, id := range []*int64{&r.env, &r.otherEnv} {
		e, err := envs.Create(ctx, admin, store.NewEnvironment{Name: "Site"})
		if err != nil {
			t.Fatal(err)
		}
		*id = e.ID
	}
	for _, c := range []struct {
		id *int64
		in credential.Input
	}{
		{&r.cred, credential.Input{Name: "g", Provider: "openai", APIKey: "sk-global-0123456789"}},
		{&r.envCred, credential.Input{Name: "e", Provider: "openai", APIKey: "sk-env-0123456789", EnvironmentID: &r.env}},
		{&r.otherCreds, credential.Input{Name: "o", Provider: "openai", APIKey: "sk-other-0123456789", EnvironmentID: &r.otherEnv}},
		{&r.wordpress, credential.Input{Name: "wp", Provider: "wordpress", BaseURL: "https://b.example", Username: "ann", ApplicationPassword: "pw"}},
	} {
		cr, err := creds.Create(ctx, admin, c.in)
		if err != nil {
			t.Fatal(err)
		}
		*c.id = cr.ID
	}
	return r
}

func TestPutAndGet(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)

	v, err := r.svc.Get(ctx, admin, nil)
	if err != nil || v.Override != nil || v.UpdatedAt != nil || v.Global.Model != nil || v.Effective.Model != "global" {
		t.Fatalf("never saved: %+v, %v", v, err)
	}
	v, err = r.svc.Put(ctx, admin, nil, aisetting.Level{CredentialID: &r.cred, Model: ptr("  gpt-4o-mini "), Temperature: ptr(0.2),
		PriceOverrides: map[string]store.Price{" llama3.1 ": {Input: 0.1, Output: 0.2}}}, aisetting.AllFields)
	if err != nil {
		t.Fatal(err)
	}
	if *v.Global.Model != "gpt-4o-mini" || *v.Global.Temperature != 0.2 || v.UpdatedAt == nil || v.Override != nil {
		t.Fatalf("global: %+v", v)
	}
	if _, ok := v.Global.PriceOverrides["llama3.1"]; !ok {
		t.Fatalf("price override keys are not trimmed: %v", v.Global.PriceOverrides)
	}

	v, err = r.svc.Put(ctx, admin, &r.env, aisetting.Level{CredentialID: &r.envCred, Tone: ptr("friendly")}, aisetting.AllFields)
	if err != nil {
		t.Fatal(err)
	}
	if *v.EnvironmentID != r.env || *v.Override.Tone != "friendly" || *v.Global.Model != "gpt-4o-mini" ||
		v.Effective.Model != fmt.Sprintf("environment %d", r.env) {
		t.Fatalf("environment: %+v", v)
	}
	// Only the fields given change: max_output_tokens and the model stay,
	// the temperature changes, the tone set to nil inherits again.
	if _, err := r.svc.Put(ctx, admin, nil, aisetting.Level{MaxOutputTokens: ptr(60), Tone: ptr("dry")},
		aisetting.Fields{"max_output_tokens": true, "tone": true}); err != nil {
		t.Fatal(err)
	}
	v, err = r.svc.Put(ctx, admin, nil, aisetting.Level{Temperature: ptr(0.7)}, aisetting.Fields{"temperature": true, "tone": true})
	if err != nil || *v.Global.MaxOutputTokens != 60 || *v.Global.Model != "gpt-4o-mini" || *v.Global.Temperature != 0.7 ||
		v.Global.Tone != nil {
		t.Fatalf("a PUT of two fields changed others: %+v, %v", v, err)
	}
	// Every field given replaces the whole level: what is nil inherits again.
	v, err = r.svc.Put(ctx, admin, nil, aisetting.Level{Temperature: ptr(1.0)}, aisetting.AllFields)
	if err != nil || v.Global.Model != nil || v.Global.CredentialID != nil || len(v.Global.PriceOverrides) != 0 {
		t.Fatalf("replaced global: %+v, %v", v, err)
	}
	if v, err := r.svc.Get(ctx, admin, &r.env); err != nil || *v.Override.CredentialID != r.envCred {
		t.Fatalf("the environment's level changed with the global one: %+v, %v", v, err)
	}
}

func TestRefused(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	if _, err := r.svc.Put(ctx, admin, nil, aisetting.Level{Model: ptr("kept")}, aisetting.AllFields); err != nil {
		t.Fatal(err)
	}
	many := map[string]store.Price{}
	for i := range 501 {
		many[fmt.Sprintf("model-%d", i)] = store.Price{}
	}
	for _, c := range []struct {
		name  string
		env   *int64
		lvl   aisetting.Level
		field string
	}{
		{"TemperatureNegative", nil, aisetting.Level{Temperature: ptr(-0.1)}, "temperature"},
		{"TemperatureHigh", nil, aisetting.Level{Temperature: ptr(2.01)}, "temperature"},
		{"MaxTokensZero", nil, aisetting.Level{MaxOutputTokens: ptr(0)}, "max_output_tokens"},
		{"MaxTokensHigh", nil, aisetting.Level{MaxOutputTokens: ptr(200001)}, "max_output_tokens"},
		{"WordsLow", nil, aisetting.Level{TargetWordCount: ptr(49)}, "target_word_count"},
		{"WordsHigh", nil, aisetting.Level{TargetWordCount: ptr(20001)}, "target_word_count"},
		{"BudgetNegative", nil, aisetting.Level{MonthlyBudgetUSD: ptr(-1.0)}, "monthly_budget_usd"},
		{"BudgetHigh", nil, aisetting.Level{MonthlyBudgetUSD: ptr(1e9 + 1)}, "monthly_budget_usd"},
		{"BudgetInfinite", nil, aisetting.Level{MonthlyBudgetUSD: ptr(math.Inf(1))}, "monthly_budget_usd"},
		{"BudgetNaN", nil, aisetting.Level{MonthlyBudgetUSD: ptr(math.NaN())}, "monthly_budget_usd"},
		{"TemperatureNaN", nil, aisetting.Level{Temperature: ptr(math.NaN())}, "temperature"},
		{"LanguageEmpty", nil, aisetting.Level{Language: ptr("")}, "language"},
		{"LanguageWord", nil, aisetting.Level{Language: ptr("english")}, "language"},
		{"ModelControl", nil, aisetting.Level{Model: ptr("gpt\n4")}, "model"},
		{"ToneLong", nil, aisetting.Level{Tone: ptr(strings.Repeat("t", 101))}, "tone"},
		{"PriceNegative", nil, aisetting.Level{PriceOverrides: map[string]store.Price{"m": {Input: -1}}}, "price_overrides.m"},
		{"PriceCachedNegative", nil, aisetting.Level{PriceOverrides: map[string]store.Price{"m": {CachedInput: ptr(-0.5)}}}, "price_overrides.m"},
		{"PriceHuge", nil, aisetting.Level{PriceOverrides: map[string]store.Price{"m": {Input: 1e308, Output: 1}}}, "price_overrides.m"},
		{"PriceOutputAboveMax", nil, aisetting.Level{PriceOverrides: map[string]store.Price{"m": {Output: 10000.01}}}, "price_overrides.m"},
		{"PriceCachedInfinite", nil, aisetting.Level{PriceOverrides: map[string]store.Price{"m": {CachedInput: ptr(math.Inf(1))}}}, "price_overrides.m"},
		{"PriceNaN", nil, aisetting.Level{PriceOverrides: map[string]store.Price{"m": {Input: math.NaN()}}}, "price_overrides.m"},
		{"PriceBlankModel", nil, aisetting.Level{PriceOverrides: map[string]store.Price{"  ": {}}}, "price_overrides"},
		{"PriceTooMany", nil, aisetting.Level{PriceOverrides: many}, "price_overrides"},
		{"CredentialMissing", nil, aisetting.Level{CredentialID: ptr(int64(9999))}, "credential_id"},
		{"CredentialNotAI", nil, aisetting.Level{CredentialID: &r.wordpress}, "credential_id"},
		{"EnvironmentCredentialGlobally", nil, aisetting.Level{CredentialID: &r.envCred}, "credential_id"},
		{"OtherEnvironmentsCredential", &r.env, aisetting.Level{CredentialID: &r.otherCreds}, "credential_id"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := r.svc.Put(ctx, admin, c.env, c.lvl, aisetting.AllFields)
			storetest.WantKind(t, err, store.KindInvalid)
			if !strings.HasPrefix(store.Message(err), c.field+":") {
				t.Fatalf("message %q does not name %s", store.Message(err), c.field)
			}
		})
	}
	t.Run("UnknownEnvironment", func(t *testing.T) {
		_, err := r.svc.Put(ctx, admin, ptr(int64(9999)), aisetting.Level{}, aisetting.AllFields)
		storetest.WantKind(t, err, store.KindNotFound)
		_, err = r.svc.Get(ctx, admin, ptr(int64(9999)))
		storetest.WantKind(t, err, store.KindNotFound)
	})
	t.Run("NotAdmin", func(t *testing.T) {
		_, err := r.svc.Put(ctx, editor, nil, aisetting.Level{}, aisetting.AllFields)
		storetest.WantKind(t, err, store.KindForbidden)
		_, err = r.svc.Get(ctx, editor, nil)
		storetest.WantKind(t, err, store.KindForbidden)
	})
	if v, err := r.svc.Get(ctx, admin, nil); err != nil || v.Global.Model == nil || *v.Global.Model != "kept" {
		t.Fatalf("a refused PUT changed the settings: %+v, %v", v, err)
	}
}
