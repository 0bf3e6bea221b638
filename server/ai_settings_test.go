package server_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/copydesk/copydesk/store"
)

const aisPath = "/api/settings/ai-content"

// undocumentedDo sends a request through the router without checking the
// response against the OpenAPI document: for statuses the document is
// known to lack (reported as bugs, checked with documentsStatus).
func aisRawDo(t testing.TB, e *env, method, path, token string, body any) resp {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = strings.NewReader(mustJSON(t, body))
	}
	req := httptest.NewRequest(method, path, rd)
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+token)
	w := httptest.NewRecorder()
	e.h.ServeHTTP(w, req)
	return resp{Code: w.Code, Header: w.Header(), Body: w.Body.String()}
}

// documentsStatus reports whether web/openapi.json lists status for the
// operation.
func aisDocuments(t *testing.T, method, path string, status int) bool {
	t.Helper()
	item := mustDoc(t).Paths.Find(path)
	if item == nil || item.GetOperation(method) == nil {
		t.Fatalf("%s %s is not in the document", method, path)
	}
	return item.GetOperation(method).Responses.Status(status) != nil
}

// aisJSON re-decodes v through JSON so that it compares with a decoded
// response (numbers as float64).
func aisJSON(t testing.TB, v any) any {
	t.Helper()
	var out any
	if err := json.Unmarshal([]byte(mustJSON(t, v)), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func aisGet(t testing.TB, e *env, tok string, envID int64) map[string]any {
	t.Helper()
	p := aisPath
	if envID != 0 {
		p += fmt.Sprintf("?environment_id=%d", envID)
	}
	r := e.do(t, "GET", p, tok, nil)
	if r.Code != 200 {
		t.Fatalf("GET %s: %d %s", p, r.Code, r.Body)
	}
	return r.Data()
}

func aisPut(t testing.TB, e *env, tok string, envID int64, body any) resp {
	t.Helper()
	p := aisPath
	if envID != 0 {
		p += fmt.Sprintf("?environment_id=%d", envID)
	}
	return e.do(t, "PUT", p, tok, body)
}

// aisExpect compares the named fields of got with want.
// aisEvery is a body that sets every field of a level: those of set, and
// null (inherit) for the others.
func aisEvery(set map[string]any) map[string]any {
	body := map[string]any{"credential_id": nil, "model": nil, "temperature": nil, "max_output_tokens": nil, "tone": nil,
		"language": nil, "target_word_count": nil, "monthly_budget_usd": nil, "price_overrides": nil, "context_windows": nil}
	for k, v := range set {
		body[k] = v
	}
	return body
}

func aisExpect(t testing.TB, what string, got map[string]any, want map[string]any) {
	t.Helper()
	for k, v := range want {
		if w := aisJSON(t, v); !reflect.DeepEqual(got[k], w) {
			t.Errorf("%s.%s = %#v, want %#v", what, k, got[k], w)
		}
	}
}

func TestAISettingsDefaults(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, admin := e.user(t, "admin", store.RoleAdmin)
	envID := cfgEnvironment(t, e, "Blog")
	for _, id := range []int64{0, envID} {
		d := aisGet(t, e, admin, id)
		aisExpect(t, "effective", d["effective"].(map[string]any), map[string]any{
			"temperature": 0.7, "max_output_tokens": 4096, "tone": "professional", "language": "en", "target_word_count": 1200,
			"credential_id": nil, "model": "", "monthly_budget_usd": nil, "price_overrides": map[string]any{},
		})
		nulls := map[string]any{"credential_id": nil, "model": nil, "temperature": nil, "max_output_tokens": nil, "tone": nil,
			"language": nil, "target_word_count": nil, "monthly_budget_usd": nil}
		aisExpect(t, "global", d["global"].(map[string]any), nulls)
		if d["updated_at"] != nil {
			t.Errorf("updated_at before any save: %v", d["updated_at"])
		}
		if id == 0 {
			if d["override"] != nil || d["environment_id"] != nil {
				t.Errorf("global view: override %v, environment_id %v", d["override"], d["environment_id"])
			}
		} else {
			aisExpect(t, "override", d["override"].(map[string]any), nulls)
			if d["environment_id"] != float64(envID) {
				t.Errorf("environment_id = %v", d["environment_id"])
			}
		}
	}
}

// A PUT that leaves a field out keeps its value (the red team's PUT of two
// fields reset max_output_tokens from 60 to 4096); null inherits again.
func TestAISettingsPartialPut(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, admin := e.user(t, "admin", store.RoleAdmin)
	envID := cfgEnvironment(t, e, "Blog")
	for _, id := range []int64{0, envID} {
		if r := aisPut(t, e, admin, id, map[string]any{"max_output_tokens": 60, "tone": "dry"}); r.Code != 200 {
			t.Fatalf("%d %s", r.Code, r.Body)
		}
		if r := aisPut(t, e, admin, id, map[string]any{"temperature": 0.3, "language": "de"}); r.Code != 200 {
			t.Fatalf("%d %s", r.Code, r.Body)
		}
		d := aisGet(t, e, admin, id)
		own := d["global"].(map[string]any)
		if id != 0 {
			own = d["override"].(map[string]any)
		}
		aisExpect(t, "saved", own, map[string]any{"max_output_tokens": 60.0, "tone": "dry", "temperature": 0.3, "language": "de"})
		aisExpect(t, "effective", d["effective"].(map[string]any), map[string]any{"max_output_tokens": 60.0, "tone": "dry"})
		if r := aisPut(t, e, admin, id, map[string]any{"tone": nil}); r.Code != 200 {
			t.Fatalf("%d %s", r.Code, r.Body)
		}
		d = aisGet(t, e, admin, id)
		own = d["global"].(map[string]any)
		if id != 0 {
			own = d["override"].(map[string]any)
		}
		aisExpect(t, "after null", own, map[string]any{"max_output_tokens": 60.0, "tone": nil, "language": "de"})
	}
}

func TestAISettingsAccess(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, viewer := e.user(t, "viewer", store.RoleViewer)
	_, editor := e.user(t, "editor", store.RoleEditor)
	_, super := e.user(t, "super", store.RoleSuperAdmin)
	for _, tok := range []string{viewer, editor} {
		if r := e.do(t, "GET", aisPath, tok, nil); r.Code != 403 {
			t.Fatalf("GET as non-admin: %d %s", r.Code, r.Body)
		}
		if r := aisPut(t, e, tok, 0, map[string]any{"temperature": 1}); r.Code != 403 {
			t.Fatalf("PUT as non-admin: %d %s", r.Code, r.Body)
		}
	}
	if r := e.do(t, "GET", aisPath, "", nil); r.Code != 401 {
		t.Fatalf("anonymous: %d %s", r.Code, r.Body)
	}
	if r := aisPut(t, e, super, 0, map[string]any{"temperature": 1}); r.Code != 200 {
		t.Fatalf("super_admin: %d %s", r.Code, r.Body)
	}
	if d := aisGet(t, e, super, 0); d["effective"].(map[string]any)["temperature"] != 1.0 {
		t.Fatalf("the refused PUTs or the super_admin's: %v", d["effective"])
	}
}

func TestAISettingsMerge(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, admin := e.user(t, "admin", store.RoleAdmin)
	envA, envB := cfgEnvironment(t, e, "A"), cfgEnvironment(t, e, "B")
	global := e.credential(t, "openai", "http://127.0.0.1:1/v1", "gpt-4o-mini", nil)
	own := e.credential(t, "anthropic", "http://127.0.0.1:1", "claude-haiku-4-5", &envA)

	globalBody := map[string]any{
		"credential_id": global.ID, "model": " gpt-4o-mini ", "temperature": 0.2, "max_output_tokens": 2000,
		"tone": "friendly", "language": "de", "target_word_count": 800, "monthly_budget_usd": 50,
		"price_overrides": map[string]any{
			"gpt-4o-mini": map[string]any{"input": 0.1, "output": 0.4, "cached_input": 0.05},
			"my-local":    map[string]any{"input": 0, "output": 0, "cached_input": nil},
		},
	}
	r := aisPut(t, e, admin, 0, globalBody)
	if r.Code != 200 {
		t.Fatalf("PUT global: %d %s", r.Code, r.Body)
	}
	wantGlobal := map[string]any{"credential_id": global.ID, "model": "gpt-4o-mini", "temperature": 0.2, "max_output_tokens": 2000,
		"tone": "friendly", "language": "de", "target_word_count": 800, "monthly_budget_usd": 50,
		"price_overrides": globalBody["price_overrides"]}
	d := r.Data()
	aisExpect(t, "global", d["global"].(map[string]any), wantGlobal)
	aisExpect(t, "effective", d["effective"].(map[string]any), wantGlobal)
	if d["updated_at"] != "2026-11-21T12:00:00.000Z" || d["override"] != nil {
		t.Fatalf("global PUT: %v", d)
	}
	// Round trip through GET, price overrides included.
	aisExpect(t, "global", aisGet(t, e, admin, 0)["global"].(map[string]any), wantGlobal)

	e.clock.Advance(60e9)
	override := map[string]any{"credential_id": own.ID, "temperature": 1.3, "language": "pt-BR", "tone": nil,
		"price_overrides": map[string]any{"gpt-4o-mini": map[string]any{"input": 9, "output": 9, "cached_input": 9},
			"claude-haiku-4-5": map[string]any{"input": 1, "output": 2, "cached_input": nil}}}
	r = aisPut(t, e, admin, envA, override)
	if r.Code != 200 {
		t.Fatalf("PUT override: %d %s", r.Code, r.Body)
	}
	for _, d := range []map[string]any{r.Data(), aisGet(t, e, admin, envA)} {
		if d["environment_id"] != float64(envA) || d["updated_at"] != "2026-11-21T12:01:00.000Z" {
			t.Fatalf("override view: %v", d)
		}
		aisExpect(t, "global", d["global"].(map[string]any), wantGlobal)
		aisExpect(t, "override", d["override"].(map[string]any), map[string]any{
			"credential_id": own.ID, "temperature": 1.3, "language": "pt-BR", "tone": nil, "model": nil,
			"max_output_tokens": nil, "target_word_count": nil, "monthly_budget_usd": nil,
			"price_overrides": override["price_overrides"]})
		// Field by field: the override wins where set, null inherits.
		aisExpect(t, "effective", d["effective"].(map[string]any), map[string]any{
			"credential_id": own.ID, "model": "gpt-4o-mini", "temperature": 1.3, "max_output_tokens": 2000,
			"tone": "friendly", "language": "pt-BR", "target_word_count": 800, "monthly_budget_usd": 50,
			"price_overrides": map[string]any{
				"gpt-4o-mini":      map[string]any{"input": 9, "output": 9, "cached_input": 9},
				"claude-haiku-4-5": map[string]any{"input": 1, "output": 2, "cached_input": nil},
				"my-local":         map[string]any{"input": 0, "output": 0, "cached_input": nil},
			}})
	}
	// The global view and another environment are untouched.
	aisExpect(t, "effective", aisGet(t, e, admin, 0)["effective"].(map[string]any), wantGlobal)
	b := aisGet(t, e, admin, envB)
	aisExpect(t, "effective", b["effective"].(map[string]any), wantGlobal)
	if b["updated_at"] != nil {
		t.Errorf("B has no override, updated_at = %v", b["updated_at"])
	}

	t.Run("PutOfEveryFieldReplacesTheLevel", func(t *testing.T) {
		r := aisPut(t, e, admin, 0, aisEvery(map[string]any{"temperature": 0}))
		if r.Code != 200 {
			t.Fatalf("%d %s", r.Code, r.Body)
		}
		// Nothing chooses a credential, and one AI credential is usable
		// globally: that one is the effective one (in envA, where own is
		// usable too, none is: see below).
		aisExpect(t, "effective", r.Data()["effective"].(map[string]any), map[string]any{
			"credential_id": global.ID, "model": "", "temperature": 0, "max_output_tokens": 4096, "tone": "professional",
			"language": "en", "target_word_count": 1200, "monthly_budget_usd": nil, "price_overrides": map[string]any{}})
		// The environment still sees its own fields over the new global ones.
		aisExpect(t, "effective", aisGet(t, e, admin, envA)["effective"].(map[string]any), map[string]any{
			"credential_id": own.ID, "model": "", "temperature": 1.3, "language": "pt-BR", "tone": "professional"})
		if r := aisPut(t, e, admin, envA, aisEvery(nil)); r.Code != 200 {
			t.Fatalf("empty override: %d %s", r.Code, r.Body)
		}
		aisExpect(t, "effective", aisGet(t, e, admin, envA)["effective"].(map[string]any), map[string]any{
			"credential_id": nil, "temperature": 0, "language": "en", "price_overrides": map[string]any{}})
	})

	t.Run("DeletedCredentialFallsBack", func(t *testing.T) {
		if r := aisPut(t, e, admin, 0, map[string]any{"credential_id": global.ID}); r.Code != 200 {
			t.Fatalf("%d %s", r.Code, r.Body)
		}
		if r := e.do(t, "DELETE", fmt.Sprintf("/api/configurations/%d", global.ID), admin, nil); r.Code != 200 {
			t.Fatalf("delete credential: %d %s", r.Code, r.Body)
		}
		d := aisGet(t, e, admin, 0)
		if d["global"].(map[string]any)["credential_id"] != nil || d["effective"].(map[string]any)["credential_id"] != nil {
			t.Fatalf("settings still point at a deleted credential: %v", d)
		}
	})
}

func TestAISettingsValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, admin := e.user(t, "admin", store.RoleAdmin)
	envA, envB := cfgEnvironment(t, e, "A"), cfgEnvironment(t, e, "B")
	globalCred := e.credential(t, "openai", "http://127.0.0.1:1/v1", "gpt-4o-mini", nil)
	credA := e.credential(t, "openai", "http://127.0.0.1:1/v1", "gpt-4o-mini", &envA)
	wp, err := e.app.DB.CreateCredential(t.Context(), store.NewCredential{Name: "site", Provider: "wordpress",
		BaseURL: "https://b.example", Username: "ann", SecretHint: "...",
		Seal: func(id int64) ([]byte, error) { return e.app.Keys.Seal([]byte("pw pw pw"), store.CredentialAAD(id)) }})
	if err != nil {
		t.Fatal(err)
	}
	serp := e.credential(t, "serp", "http://127.0.0.1:1", "", nil)
	if r := aisPut(t, e, admin, 0, map[string]any{"tone": "kept", "credential_id": globalCred.ID}); r.Code != 200 {
		t.Fatalf("baseline: %d %s", r.Code, r.Body)
	}

	cases := []struct {
		name   string
		env    int64
		body   any
		status int
		detail string
	}{
		{"TemperatureHigh", 0, map[string]any{"temperature": 2.5}, 422, "temperature"},
		{"TemperatureNegative", 0, map[string]any{"temperature": -0.1}, 422, "temperature"},
		{"MaxTokensZero", 0, map[string]any{"max_output_tokens": 0}, 422, "max_output_tokens"},
		{"MaxTokensNegative", 0, map[string]any{"max_output_tokens": -5}, 422, "max_output_tokens"},
		{"MaxTokensHuge", 0, map[string]any{"max_output_tokens": 200001}, 422, "max_output_tokens"},
		{"MaxTokensFraction", 0, map[string]any{"max_output_tokens": 1.5}, 422, "max_output_tokens"},
		{"WordCountLow", 0, map[string]any{"target_word_count": 10}, 422, "target_word_count"},
		{"NegativeBudget", envA, map[string]any{"monthly_budget_usd": -1}, 422, "monthly_budget_usd"},
		{"MissingCredential", 0, map[string]any{"credential_id": 9999}, 422, "credential_id: no credential with id 9999"},
		{"ZeroCredential", 0, map[string]any{"credential_id": 0}, 422, "credential_id"},
		{"WordPressCredential", 0, map[string]any{"credential_id": wp.ID}, 422, "not an AI provider"},
		{"SERPCredential", envA, map[string]any{"credential_id": serp.ID}, 422, "not an AI provider"},
		{"OtherEnvironmentsCredential", envB, map[string]any{"credential_id": credA.ID}, 422, "belongs to environment"},
		{"EnvironmentCredentialGlobally", 0, map[string]any{"credential_id": credA.ID}, 422, "belongs to environment"},
		{"LanguageNotATag", 0, map[string]any{"language": "english!"}, 422, "language: must be a language tag"},
		{"LanguageSpaces", envA, map[string]any{"language": "en us"}, 422, "language"},
		{"NegativeInputPrice", 0, map[string]any{"price_overrides": map[string]any{"m": map[string]any{"input": -1, "output": 1}}}, 422, "price_overrides.m: prices must not be negative"},
		{"NegativeOutputPrice", 0, map[string]any{"price_overrides": map[string]any{"m": map[string]any{"input": 1, "output": -0.01}}}, 422, "must not be negative"},
		{"NegativeCachedPrice", envA, map[string]any{"price_overrides": map[string]any{"m": map[string]any{"input": 1, "output": 1, "cached_input": -2}}}, 422, "must not be negative"},
		{"BlankPriceModel", 0, map[string]any{"price_overrides": map[string]any{" ": map[string]any{"input": 1, "output": 1}}}, 422, "price_overrides"},
		{"UnknownPriceField", 0, map[string]any{"price_overrides": map[string]any{"m": map[string]any{"input": 1, "outptu": 1}}}, 422, "outptu"},
		{"UnknownField", 0, map[string]any{"temprature": 1}, 422, "temprature: is not a known field"},
		{"WrongType", 0, map[string]any{"temperature": "hot"}, 422, "temperature: must be a number"},
		{"LongModel", 0, map[string]any{"model": strings.Repeat("m", 201)}, 422, "model"},
		{"NotAnObject", 0, `[1,2]`, 400, "object"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := aisPut(t, e, admin, c.env, c.body)
			if r.Code != c.status || !strings.Contains(r.Detail(), c.detail) {
				t.Fatalf("got %d %s, want %d with %q", r.Code, r.Body, c.status, c.detail)
			}
		})
	}
	// Nothing above was saved.
	if d := aisGet(t, e, admin, 0); d["global"].(map[string]any)["tone"] != "kept" {
		t.Fatalf("a refused PUT replaced the global settings: %v", d["global"])
	}
	if d := aisGet(t, e, admin, envA); d["updated_at"] != nil {
		t.Fatalf("a refused PUT saved an override: %v", d)
	}

	for _, q := range []string{"?environment_id=0", "?environment_id=x", "?environment_id=-3"} {
		t.Run("GET"+q, func(t *testing.T) {
			if r := e.do(t, "GET", aisPath+q, admin, nil); r.Code != 422 || !strings.Contains(r.Detail(), "environment_id") {
				t.Fatalf("%d %s", r.Code, r.Body)
			}
		})
	}
	t.Run("MissingEnvironment", func(t *testing.T) {
		for _, m := range []string{"GET", "PUT"} {
			var body any
			if m == "PUT" {
				body = map[string]any{"temperature": 1}
			}
			// Sent around the document check, which would refuse the
			// undocumented 404 (see below).
			r := aisRawDo(t, e, m, aisPath+"?environment_id=9999", admin, body)
			if r.Code != 404 || !strings.Contains(r.Detail(), "environment not found") {
				t.Fatalf("%s: %d %s", m, r.Code, r.Body)
			}
		}
		if r := e.do(t, "GET", "/api/environments/9999", admin, nil); r.Code != 404 {
			t.Fatalf("the environment exists after all: %d", r.Code)
		}
		for _, m := range []string{"GET", "PUT"} {
			if !aisDocuments(t, m, aisPath, 404) {
				t.Fatal("bug: GET/PUT /api/settings/ai-content answer 404 for a missing environment_id, but the routes " +
					"(server/ai_settings.go registerAISettingsRoutes) lack Errors: []int{404}, so web/openapi.json does not document it")
			}
		}
	})

	accepted := []struct {
		name string
		env  int64
		body map[string]any
	}{
		{"TemperatureBounds0", 0, map[string]any{"temperature": 0}},
		{"TemperatureBounds2", 0, map[string]any{"temperature": 2}},
		{"MaxTokens1", 0, map[string]any{"max_output_tokens": 1}},
		{"OwnEnvironmentsCredential", envA, map[string]any{"credential_id": credA.ID}},
		{"GlobalCredentialInEnvironment", envB, map[string]any{"credential_id": globalCred.ID}},
		{"LanguageRegion", envB, map[string]any{"language": "pt-BR"}},
		{"ZeroBudgetAndPrices", envB, map[string]any{"monthly_budget_usd": 0, "price_overrides": map[string]any{"free": map[string]any{"input": 0, "output": 0, "cached_input": nil}}}},
	}
	for _, c := range accepted {
		t.Run("Accepted/"+c.name, func(t *testing.T) {
			r := aisPut(t, e, admin, c.env, c.body)
			if r.Code != 200 {
				t.Fatalf("%d %s", r.Code, r.Body)
			}
			lvl := r.Data()["global"].(map[string]any)
			if c.env != 0 {
				lvl = r.Data()["override"].(map[string]any)
			}
			aisExpect(t, "saved", lvl, c.body)
		})
	}

	t.Run("EmptyLanguage", func(t *testing.T) {
		r := aisPut(t, e, admin, 0, map[string]any{"language": ""})
		if r.Code == 200 && r.Data()["effective"].(map[string]any)["language"] == "" {
			t.Fatal(`bug: PUT {"language": ""} is accepted (EnvironmentConfig.Normalize fills "" with "en" before matching, ` +
				`but the unnormalized "" is stored) and the effective language becomes "" instead of being refused or inheriting "en"`)
		}
		if r.Code != 422 && r.Data()["effective"].(map[string]any)["language"] != "en" {
			t.Fatalf("%d %s", r.Code, r.Body)
		}
	})
}

// TestOnlyAICredential: a first credential works without choosing it in
// the AI content settings; a second one, with none chosen, is a 409 that
// says so and where to choose.
func TestOnlyAICredential(t *testing.T) {
	t.Parallel()
	f := agSetup(t)
	e := f.e
	provider := fakeOpenAI(t, nil)
	agentID := agID(agCreate(t, e, f.edATok, map[string]any{"environment_id": f.envA, "name": "Writer", "kind": "writer"}))
	execute := func() resp {
		return e.do(t, "POST", fmt.Sprintf("/api/agents/%d/execute", agentID), f.edATok, map[string]any{"input": "hello"})
	}
	addCredential := func(name string) int64 {
		return cfgID(cfgCreate(t, e, f.adminTok, map[string]any{"name": name, "provider": "openai", "api_key": "sk-test-good-key-0001",
			"base_url": provider.URL + "/v1", "default_model": "gpt-4o-mini"}))
	}
	if r := execute(); r.Code != 409 || !strings.Contains(r.Detail(), "no AI provider is configured") {
		t.Fatalf("none: %d %s", r.Code, r.Body)
	}
	first := addCredential("first")
	if r := execute(); r.Code != 202 {
		t.Fatalf("the only credential: %d %s", r.Code, r.Body)
	}
	eff := aisGet(t, e, f.adminTok, f.envA)["effective"].(map[string]any)
	if eff["credential_id"] != float64(first) {
		t.Fatalf("effective: %v", eff)
	}
	addCredential("second")
	r := execute()
	if r.Code != 409 || !strings.Contains(r.Detail(), "2 AI credentials are usable here and none is chosen") ||
		!strings.Contains(r.Detail(), "PUT /api/settings/ai-content") {
		t.Fatalf("two, none chosen: %d %s", r.Code, r.Body)
	}
	if eff := aisGet(t, e, f.adminTok, 0)["effective"].(map[string]any); eff["credential_id"] != nil {
		t.Fatalf("effective among two: %v", eff)
	}
	if r := aisPut(t, e, f.adminTok, 0, map[string]any{"credential_id": first}); r.Code != 200 {
		t.Fatalf("choose: %d %s", r.Code, r.Body)
	}
	if r := execute(); r.Code != 202 {
		t.Fatalf("chosen: %d %s", r.Code, r.Body)
	}
}
