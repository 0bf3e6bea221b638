package server_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/copydesk/copydesk/server"
	"github.com/copydesk/copydesk/server/keyring"
	"github.com/copydesk/copydesk/store"
	"github.com/copydesk/copydesk/store/storetest"
)

// cfgGoodKey is the only key fakeOpenAI's /models accepts.
const cfgGoodKey = "sk-test-good-key-0001"

// cfgEnvironment creates an environment directly in the store.
func cfgEnvironment(t testing.TB, e *env, name string) int64 {
	t.Helper()
	en, err := e.app.DB.CreateEnvironment(context.Background(), store.NewEnvironment{Name: name, Slug: strings.ToLower(name)})
	if err != nil {
		t.Fatal(err)
	}
	return en.ID
}

// cfgCreate posts a credential and insists on 201.
func cfgCreate(t testing.TB, e *env, tok string, body map[string]any) map[string]any {
	t.Helper()
	r := e.do(t, "POST", "/api/configurations", tok, body)
	if r.Code != 201 {
		t.Fatalf("create %v: %d %s", body, r.Code, r.Body)
	}
	return r.Data()
}

func cfgID(d map[string]any) int64 { return int64(d["id"].(float64)) }

// cfgFakeOpenAI is fakeOpenAI behind a proxy that labels its JSON answers
// as application/json: fakeOpenAI's GET /models answers without a
// Content-Type, which Go sniffs as text/plain, and the OpenAI SDK refuses
// to decode a success body that is not JSON-typed (as the real API always
// labels its answers).
func cfgFakeOpenAI(t testing.TB) *httptest.Server {
	f := fakeOpenAI(t, nil)
	target, err := url.Parse(f.URL)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ModifyResponse = func(res *http.Response) error {
		if strings.HasPrefix(res.Header.Get("Content-Type"), "text/plain") {
			res.Header.Set("Content-Type", "application/json")
		}
		return nil
	}
	srv := httptest.NewServer(rp)
	t.Cleanup(srv.Close)
	return srv
}

// fakeAnthropicModels is a local server speaking Anthropic's GET /v1/models.
func cfgFakeAnthropic(t testing.TB, goodKey string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method != "GET" || r.URL.Path != "/v1/models" {
			w.WriteHeader(404)
			fmt.Fprint(w, `{"type":"error","error":{"type":"not_found_error","message":"not found"}}`)
			return
		}
		if r.Header.Get("X-Api-Key") != goodKey {
			w.WriteHeader(401)
			fmt.Fprint(w, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`)
			return
		}
		fmt.Fprint(w, `{"data":[{"id":"claude-x","type":"model","display_name":"x","created_at":"2025-01-01T00:00:00Z"}],"has_more":false,"first_id":"claude-x","last_id":"claude-x"}`)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// fakeWordPress implements GET /wp-json/wp/v2/users/me with basic auth.
func cfgFakeWordPress(t testing.TB, user, password string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method != "GET" || r.URL.Path != "/wp-json/wp/v2/users/me" {
			w.WriteHeader(404)
			fmt.Fprint(w, `{"code":"rest_no_route","message":"No route was found matching the URL and request method."}`)
			return
		}
		u, p, ok := r.BasicAuth()
		if !ok || u != user || p != password {
			w.WriteHeader(401)
			fmt.Fprint(w, `{"code":"rest_not_logged_in","message":"You are not currently logged in."}`)
			return
		}
		fmt.Fprint(w, `{"id":1,"name":"Ann","slug":"ann","roles":["administrator"]}`)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// fakeSERP implements GET /account.json?api_key=...; a wrong key gets 401
// with errMsg.
func cfgFakeSERP(t testing.TB, goodKey, errMsg string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method != "GET" || r.URL.Path != "/account.json" {
			w.WriteHeader(404)
			fmt.Fprint(w, `{"error":"not found"}`)
			return
		}
		if r.URL.Query().Get("api_key") != goodKey {
			w.WriteHeader(401)
			json.NewEncoder(w).Encode(map[string]string{"error": errMsg})
			return
		}
		fmt.Fprint(w, `{"account_email":"ann@example.com","plan_name":"Developer","total_searches_left":4990,"this_month_usage":10}`)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestConfigurationsAccess(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, viewer := e.user(t, "viewer", store.RoleViewer)
	_, editor := e.user(t, "editor", store.RoleEditor)
	_, admin := e.user(t, "admin", store.RoleAdmin)
	_, super := e.user(t, "super", store.RoleSuperAdmin)
	f := cfgFakeOpenAI(t)
	id := cfgID(cfgCreate(t, e, admin, map[string]any{"name": "k", "provider": "openai", "api_key": cfgGoodKey, "base_url": f.URL + "/v1"}))
	p := fmt.Sprintf("/api/configurations/%d", id)
	routes := []struct {
		method, path string
		body         any
	}{
		{"GET", "/api/configurations", nil},
		{"POST", "/api/configurations", map[string]any{"name": "x", "provider": "openai", "api_key": "sk-x-000000000000"}},
		{"GET", p, nil},
		{"PUT", p, map[string]any{"name": "y"}},
		{"DELETE", p, nil},
		{"POST", p + "/test", nil},
	}
	for _, rt := range routes {
		t.Run(rt.method+rt.path, func(t *testing.T) {
			for _, tok := range []string{viewer, editor} {
				if r := e.do(t, rt.method, rt.path, tok, rt.body); r.Code != 403 {
					t.Fatalf("non-admin: %d %s", r.Code, r.Body)
				}
			}
			if r := e.do(t, rt.method, rt.path, "", rt.body); r.Code != 401 {
				t.Fatalf("anonymous: %d %s", r.Code, r.Body)
			}
		})
	}
	if r := e.do(t, "GET", p, super, nil); r.Code != 200 {
		t.Fatalf("super_admin: %d %s", r.Code, r.Body)
	}
	if r := e.do(t, "GET", "/api/configurations", admin, nil); r.Code != 200 || r.Data()["total"].(float64) != 1 {
		t.Fatalf("the refused calls changed something: %d %s", r.Code, r.Body)
	}
}

func TestConfigurationsCreate(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, admin := e.user(t, "admin", store.RoleAdmin)
	envID := cfgEnvironment(t, e, "Blog")

	ok := []struct {
		name, provider string
		body           map[string]any
		secret         string
		want           map[string]any
	}{
		{"OpenAI", "openai", map[string]any{"api_key": "sk-proj-OpenAICreate-x9Qa", "default_model": " gpt-4o-mini "},
			"sk-proj-OpenAICreate-x9Qa", map[string]any{"secret_hint": "...x9Qa", "default_model": "gpt-4o-mini", "base_url": ""}},
		{"Anthropic", "anthropic", map[string]any{"api_key": "sk-ant-api03-AnthropicCreate-77ab", "environment_id": envID},
			"sk-ant-api03-AnthropicCreate-77ab", map[string]any{"secret_hint": "sk-...77ab", "environment_id": float64(envID)}},
		{"OpenAICompatibleNoKey", "openai_compatible", map[string]any{"base_url": "http://localhost:11434/v1/"},
			"", map[string]any{"secret_hint": "", "base_url": "http://localhost:11434/v1"}},
		{"OpenAICompatibleKey", "openai_compatible", map[string]any{"base_url": "https://openrouter.example/api/v1", "api_key": "or-CompatKey-123456"},
			"or-CompatKey-123456", map[string]any{"secret_hint": "...3456"}},
		{"WordPress", "wordpress", map[string]any{"base_url": "https://blog.example.com", "username": " ann ", "application_password": "abcd EFGH ijkl MNOP qrst"},
			"abcd EFGH ijkl MNOP qrst", map[string]any{"secret_hint": "...qrst", "username": "ann", "base_url": "https://blog.example.com"}},
		{"SERP", "serp", map[string]any{"api_key": "serp-CreateKey-0000abcd"},
			"serp-CreateKey-0000abcd", map[string]any{"secret_hint": "...abcd"}},
	}
	for _, c := range ok {
		t.Run(c.name, func(t *testing.T) {
			body := map[string]any{"name": "  " + c.name + "  ", "provider": c.provider}
			for k, v := range c.body {
				body[k] = v
			}
			r := e.do(t, "POST", "/api/configurations", admin, body)
			if r.Code != 201 {
				t.Fatalf("%d %s", r.Code, r.Body)
			}
			if c.secret != "" && strings.Contains(r.Body, c.secret) {
				t.Fatalf("the secret is in the response: %s", r.Body)
			}
			// The message speaks of a secret only when one was sent.
			if msg, _ := r.JSON()["message"].(string); strings.Contains(msg, "secret") != (c.secret != "") {
				t.Fatalf("message %q with secret %q", msg, c.secret)
			}
			d := r.Data()
			if d["name"] != c.name || d["provider"] != c.provider || d["last_test_ok"] != nil || d["last_tested_at"] != nil {
				t.Fatalf("created: %v", d)
			}
			for k, v := range c.want {
				if d[k] != v {
					t.Errorf("%s = %#v, want %#v", k, d[k], v)
				}
			}
			if _, ok := c.want["environment_id"]; !ok && d["environment_id"] != nil {
				t.Errorf("environment_id = %v, want null (global)", d["environment_id"])
			}
			for _, k := range []string{"api_key", "application_password", "secret"} {
				if _, ok := d[k]; ok {
					t.Errorf("response has a %q field", k)
				}
			}
		})
	}

	bad := []struct {
		name   string
		body   map[string]any
		detail string
	}{
		{"OpenAIWithoutKey", map[string]any{"provider": "openai"}, "api_key: is required for openai"},
		{"OpenAIBlankKey", map[string]any{"provider": "openai", "api_key": ""}, "api_key: is required"},
		{"AnthropicWithoutKey", map[string]any{"provider": "anthropic"}, "api_key: is required for anthropic"},
		{"SERPWithoutKey", map[string]any{"provider": "serp"}, "api_key: is required for serp"},
		{"CompatibleWithoutBaseURL", map[string]any{"provider": "openai_compatible", "api_key": "k-1234567890"}, "base_url: is required for openai_compatible"},
		{"WordPressWithoutBaseURL", map[string]any{"provider": "wordpress", "username": "ann", "application_password": "pw pw pw pw"}, "base_url: is required for wordpress"},
		{"WordPressWithoutUsername", map[string]any{"provider": "wordpress", "base_url": "https://b.example", "application_password": "pw pw pw pw"}, "username: is required"},
		{"WordPressBlankUsername", map[string]any{"provider": "wordpress", "base_url": "https://b.example", "username": "  ", "application_password": "pw pw pw pw"}, "username: is required"},
		{"WordPressWithoutPassword", map[string]any{"provider": "wordpress", "base_url": "https://b.example", "username": "ann"}, "application_password: is required"},
		{"APIKeyForWordPress", map[string]any{"provider": "wordpress", "base_url": "https://b.example", "username": "ann", "application_password": "pw pw", "api_key": "sk-wrong-place-00"}, "api_key: wordpress credentials use application_password"},
		{"AppPasswordForOpenAI", map[string]any{"provider": "openai", "api_key": "sk-abcdefghijkl", "application_password": "pw pw"}, "application_password: only wordpress"},
		{"AppPasswordForSERP", map[string]any{"provider": "serp", "api_key": "abcdefghijkl", "application_password": "pw pw"}, "application_password: only wordpress"},
		{"BaseURLScheme", map[string]any{"provider": "openai", "api_key": "sk-abcdefghijkl", "base_url": "ftp://files.example/v1"}, "base_url: must be an http or https"},
		{"BaseURLNotURL", map[string]any{"provider": "openai_compatible", "base_url": "not a url"}, "base_url:"},
		{"BaseURLRelative", map[string]any{"provider": "openai_compatible", "base_url": "/v1"}, "base_url:"},
		{"BaseURLNoHost", map[string]any{"provider": "openai_compatible", "base_url": "http://"}, "base_url:"},
		{"BaseURLUserinfo", map[string]any{"provider": "openai_compatible", "base_url": "http://user:pw@localhost:11434/v1"}, "base_url:"},
		{"BaseURLQuery", map[string]any{"provider": "openai_compatible", "base_url": "http://localhost:11434/v1?key=1"}, "base_url:"},
		{"BaseURLFragment", map[string]any{"provider": "openai_compatible", "base_url": "http://localhost:11434/v1#x"}, "base_url:"},
		{"BaseURLMetadata", map[string]any{"provider": "openai_compatible", "base_url": "http://169.254.169.254/latest"}, "base_url: address 169.254.169.254 is not allowed"},
		{"BaseURLMetadataIPv6", map[string]any{"provider": "wordpress", "base_url": "http://[fd00:ec2::254]", "username": "ann", "application_password": "pw pw"}, "base_url: address fd00:ec2::254 is not allowed"},
		{"BaseURLMetadataMapped", map[string]any{"provider": "openai", "api_key": "sk-abcdefghijkl", "base_url": "http://[::ffff:169.254.169.254]/v1"}, "is not allowed"},
		{"UnknownProvider", map[string]any{"provider": "cohere", "api_key": "sk-abcdefghijkl"}, "provider"},
		{"NoProvider", map[string]any{"api_key": "sk-abcdefghijkl"}, "provider"},
		{"UnknownField", map[string]any{"provider": "openai", "api_key": "sk-abcdefghijkl", "organization": "org-1"}, "organization: is not a known field"},
		{"MissingEnvironment", map[string]any{"provider": "openai", "api_key": "sk-abcdefghijkl", "environment_id": 9999}, "environment_id: no environment with id 9999"},
		{"ZeroEnvironment", map[string]any{"provider": "openai", "api_key": "sk-abcdefghijkl", "environment_id": 0}, "environment_id"},
		{"BlankName", map[string]any{"name": "   ", "provider": "openai", "api_key": "sk-abcdefghijkl"}, "name"},
		{"LongName", map[string]any{"name": strings.Repeat("n", 101), "provider": "openai", "api_key": "sk-abcdefghijkl"}, "name"},
		{"KeyWrongType", map[string]any{"provider": "openai", "api_key": 12345}, "api_key: must be a string"},
	}
	for _, c := range bad {
		t.Run("Refused/"+c.name, func(t *testing.T) {
			body := map[string]any{"name": "bad"}
			for k, v := range c.body {
				body[k] = v
			}
			r := e.do(t, "POST", "/api/configurations", admin, body)
			if r.Code != 422 || !strings.Contains(r.Detail(), c.detail) {
				t.Fatalf("got %d %s, want 422 with %q", r.Code, r.Body, c.detail)
			}
			for _, k := range []string{"sk-abcdefghijkl", "sk-wrong-place-00"} {
				if strings.Contains(r.Body, k) {
					t.Fatalf("the refused secret is echoed: %s", r.Body)
				}
			}
		})
	}
	if r := e.do(t, "GET", "/api/configurations", admin, nil); r.Data()["total"].(float64) != float64(len(ok)) {
		t.Fatalf("refused creates left rows: %s", r.Body)
	}
}

// TestConfigurationsSecretNeverShown follows one secret through every
// response that shows its credential.
func TestConfigurationsSecretNeverShown(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, admin := e.user(t, "admin", store.RoleAdmin)
	f := cfgFakeOpenAI(t)
	const secret = "sk-proj-NeverShownSecretValue-x9Qa"
	var bodies []string
	r := e.do(t, "POST", "/api/configurations", admin, map[string]any{"name": "main", "provider": "openai", "api_key": secret,
		"base_url": f.URL + "/v1", "default_model": "gpt-4o-mini"})
	if r.Code != 201 {
		t.Fatalf("create: %d %s", r.Code, r.Body)
	}
	bodies = append(bodies, r.Body)
	if hint := r.Data()["secret_hint"]; hint != "sk-...x9Qa" {
		t.Fatalf("secret_hint = %v, want sk-...x9Qa", hint)
	}
	p := fmt.Sprintf("/api/configurations/%d", cfgID(r.Data()))
	for _, step := range []struct {
		method, path string
		body         any
	}{
		{"GET", p, nil},
		{"GET", "/api/configurations", nil},
		{"GET", "/api/configurations?provider=openai", nil},
		{"PUT", p, map[string]any{"name": "renamed"}},
		{"POST", p + "/test", nil}, // wrong key for the fake: a failed test
		{"GET", p, nil},
		{"PUT", p, map[string]any{"api_key": "sk-proj-SecondSecretValue-77Zz"}},
		{"GET", "/api/configurations", nil},
		{"DELETE", p, nil},
	} {
		r := e.do(t, step.method, step.path, admin, step.body)
		if r.Code != 200 {
			t.Fatalf("%s %s: %d %s", step.method, step.path, r.Code, r.Body)
		}
		bodies = append(bodies, r.Body)
	}
	for i, b := range bodies {
		for _, s := range []string{secret, "NeverShownSecretValue", "sk-proj-SecondSecretValue-77Zz", "SecondSecretValue"} {
			if strings.Contains(b, s) {
				t.Errorf("response %d contains %q: %s", i, s, b)
			}
		}
	}
	if !strings.Contains(bodies[7], "sk-...77Zz") {
		t.Errorf("the new secret's hint is not shown after the update: %s", bodies[7])
	}
}

// TestConfigurationsEncryptedAtRest greps the raw database files for the
// plaintext secret; on PostgreSQL, the text of every row of every table.
func TestConfigurationsEncryptedAtRest(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, admin := e.user(t, "admin", store.RoleAdmin)
	const name = "AtRestCanaryName-5e1f"
	secrets := map[string]map[string]any{
		"sk-AtRestOpenAIKey-Zq7Xw9Kp3Lm2Vb8N": {"provider": "openai", "api_key": "sk-AtRestOpenAIKey-Zq7Xw9Kp3Lm2Vb8N"},
		"AtRestWpAppPassword Qr5T Uv6W Xy7Z":  {"provider": "wordpress", "base_url": "https://b.example", "username": "ann", "application_password": "AtRestWpAppPassword Qr5T Uv6W Xy7Z"},
	}
	for _, body := range secrets {
		body["name"] = name
		cfgCreate(t, e, admin, body)
	}
	// And a secret that arrives by update.
	const updated = "sk-AtRestUpdatedKey-Hh4Jj5Kk6Ll7"
	list := e.do(t, "GET", "/api/configurations?provider=openai", admin, nil).Data()["items"].([]any)
	openaiID := cfgID(list[0].(map[string]any))
	if r := e.do(t, "PUT", fmt.Sprintf("/api/configurations/%d", openaiID), admin, map[string]any{"api_key": updated}); r.Code != 200 {
		t.Fatalf("update: %d %s", r.Code, r.Body)
	}

	var raw []byte
	if storetest.Postgres() {
		raw = postgresRowsText(t, e)
	} else {
		for _, f := range []string{server.DBFile, server.DBFile + "-wal"} {
			b, err := os.ReadFile(filepath.Join(e.app.Config.DataDir, f))
			if err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			raw = append(raw, b...)
		}
	}
	if !bytes.Contains(raw, []byte(name)) {
		t.Fatalf("the credential's name is not in the database files: the test reads the wrong files")
	}
	for _, s := range []string{"sk-AtRestOpenAIKey-Zq7Xw9Kp3Lm2Vb8N", "AtRestOpenAIKey", "AtRestWpAppPassword", updated, "AtRestUpdatedKey"} {
		if bytes.Contains(raw, []byte(s)) {
			t.Errorf("%q is readable in the database files", s)
		}
	}
	// What is stored is sealed, and opens with the server's key.
	cred, err := e.app.DB.CredentialByID(context.Background(), openaiID)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(cred.Secret, []byte(updated)) {
		t.Fatalf("the stored secret is the plaintext")
	}
	plain, err := e.app.Keys.Open(cred.Secret, store.CredentialAAD(openaiID))
	if err != nil || string(plain) != updated {
		t.Fatalf("sealed secret opens to %q, %v", plain, err)
	}
	// Bound to its row: another row's id does not open it.
	if _, err := e.app.Keys.Open(cred.Secret, store.CredentialAAD(openaiID+1)); err == nil {
		t.Fatalf("a sealed secret opened for another row")
	}
}

func TestConfigurationsUpdate(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, admin := e.user(t, "admin", store.RoleAdmin)
	envA := cfgEnvironment(t, e, "A")
	f := cfgFakeOpenAI(t)
	d := cfgCreate(t, e, admin, map[string]any{"name": "main", "provider": "openai", "api_key": cfgGoodKey,
		"base_url": f.URL + "/v1", "environment_id": envA})
	p := fmt.Sprintf("/api/configurations/%d", cfgID(d))
	test := func(t *testing.T) map[string]any {
		t.Helper()
		r := e.do(t, "POST", p+"/test", admin, nil)
		if r.Code != 200 {
			t.Fatalf("test: %d %s", r.Code, r.Body)
		}
		return r.Data()
	}

	if res := test(t); res["ok"] != true {
		t.Fatalf("first test: %v", res)
	}
	t.Run("KeepsSecret", func(t *testing.T) {
		r := e.do(t, "PUT", p, admin, map[string]any{"name": "renamed", "default_model": "gpt-4o"})
		if r.Code != 200 {
			t.Fatalf("%d %s", r.Code, r.Body)
		}
		d := r.Data()
		if d["name"] != "renamed" || d["default_model"] != "gpt-4o" || d["secret_hint"] != "...0001" ||
			d["last_test_ok"] != true || d["last_tested_at"] == nil || d["environment_id"] != float64(envA) {
			t.Fatalf("after an update without a secret: %v", d)
		}
		if res := test(t); res["ok"] != true {
			t.Fatalf("the kept secret no longer works: %v", res)
		}
	})
	t.Run("NewSecret", func(t *testing.T) {
		r := e.do(t, "PUT", p, admin, map[string]any{"api_key": "sk-another-wrong-key-9Zz9"})
		if r.Code != 200 {
			t.Fatalf("%d %s", r.Code, r.Body)
		}
		d := r.Data()
		if d["secret_hint"] != "...9Zz9" || d["last_test_ok"] != nil || d["last_tested_at"] != nil || d["last_test_error"] != "" {
			t.Fatalf("a new secret must change the hint and reset the last test: %v", d)
		}
		if res := test(t); res["ok"] != false {
			t.Fatalf("the new (wrong) secret is not the one used: %v", res)
		}
		if r := e.do(t, "PUT", p, admin, map[string]any{"api_key": cfgGoodKey}); r.Code != 200 || r.Data()["secret_hint"] != "...0001" {
			t.Fatalf("back to the good key: %d %s", r.Code, r.Body)
		}
		if res := test(t); res["ok"] != true {
			t.Fatalf("good key again: %v", res)
		}
	})
	t.Run("Global", func(t *testing.T) {
		r := e.do(t, "PUT", p, admin, map[string]any{"environment_id": 0})
		if r.Code != 200 || r.Data()["environment_id"] != nil {
			t.Fatalf("environment_id 0 must make it global: %d %s", r.Code, r.Body)
		}
		if r := e.do(t, "GET", p, admin, nil); r.Data()["environment_id"] != nil {
			t.Fatalf("not stored as global: %s", r.Body)
		}
		r = e.do(t, "PUT", p, admin, map[string]any{"environment_id": envA})
		if r.Code != 200 || r.Data()["environment_id"] != float64(envA) {
			t.Fatalf("back to A: %d %s", r.Code, r.Body)
		}
	})
	bad := []struct {
		name   string
		body   map[string]any
		status int
		detail string
	}{
		{"EmptyAPIKey", map[string]any{"api_key": ""}, 422, "api_key: is required for openai"},
		{"AppPassword", map[string]any{"application_password": "pw pw pw"}, 422, "application_password: only wordpress"},
		{"BadBaseURL", map[string]any{"base_url": "ftp://x.example"}, 422, "base_url:"},
		{"MissingEnvironment", map[string]any{"environment_id": 4242}, 422, "environment_id: no environment with id 4242"},
		{"NegativeEnvironment", map[string]any{"environment_id": -1}, 422, "environment_id"},
		{"EmptyName", map[string]any{"name": ""}, 422, "name"},
		{"BlankName", map[string]any{"name": "   "}, 422, "name"},
		{"UnknownField", map[string]any{"provider": "anthropic"}, 422, "provider: is not a known field"},
	}
	for _, c := range bad {
		t.Run("Refused/"+c.name, func(t *testing.T) {
			r := e.do(t, "PUT", p, admin, c.body)
			if r.Code != c.status || !strings.Contains(r.Detail(), c.detail) {
				t.Fatalf("got %d %s, want %d with %q", r.Code, r.Body, c.status, c.detail)
			}
		})
	}
	if r := e.do(t, "GET", p, admin, nil); r.Data()["secret_hint"] != "...0001" || r.Data()["name"] != "renamed" {
		t.Fatalf("refused updates changed the credential: %s", r.Body)
	}

	t.Run("WordPress", func(t *testing.T) {
		wp := cfgFakeWordPress(t, "ann", "wp pass word")
		d := cfgCreate(t, e, admin, map[string]any{"name": "site", "provider": "wordpress", "base_url": wp.URL,
			"username": "ann", "application_password": "wp pass word"})
		p := fmt.Sprintf("/api/configurations/%d", cfgID(d))
		if r := e.do(t, "PUT", p, admin, map[string]any{"api_key": "sk-abcdefghijkl"}); r.Code != 422 || !strings.Contains(r.Detail(), "application_password") {
			t.Fatalf("api_key on wordpress: %d %s", r.Code, r.Body)
		}
		if r := e.do(t, "PUT", p, admin, map[string]any{"username": " "}); r.Code != 422 || !strings.Contains(r.Detail(), "username") {
			t.Fatalf("blank username: %d %s", r.Code, r.Body)
		}
		r := e.do(t, "PUT", p, admin, map[string]any{"username": "bob"})
		if r.Code != 200 || r.Data()["username"] != "bob" {
			t.Fatalf("username: %d %s", r.Code, r.Body)
		}
		if res := e.do(t, "POST", p+"/test", admin, nil).Data(); res["ok"] != false {
			t.Fatalf("bob is not the fake's user: %v", res)
		}
		e.do(t, "PUT", p, admin, map[string]any{"username": "ann"})
		if res := e.do(t, "POST", p+"/test", admin, nil).Data(); res["ok"] != true {
			t.Fatalf("kept application password: %v", res)
		}
	})
}

func TestConfigurationsDeleteAndList(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, admin := e.user(t, "admin", store.RoleAdmin)
	envA, envB := cfgEnvironment(t, e, "A"), cfgEnvironment(t, e, "B")
	mk := func(name, provider string, env int64) int64 {
		body := map[string]any{"name": name, "provider": provider}
		switch provider {
		case "wordpress":
			body["base_url"], body["username"], body["application_password"] = "https://w.example", "ann", "pw pw pw pw"
		case "openai_compatible":
			body["base_url"] = "http://localhost:11434/v1"
		default:
			body["api_key"] = "key-" + name + "-0123456789"
		}
		if env != 0 {
			body["environment_id"] = env
		}
		return cfgID(cfgCreate(t, e, admin, body))
	}
	globalAI := mk("g-openai", "openai", 0)
	globalWP := mk("g-wp", "wordpress", 0)
	aAI := mk("a-anthropic", "anthropic", envA)
	aWP := mk("a-wp", "wordpress", envA)
	bAI := mk("b-openai", "openai", envB)
	bSERP := mk("b-serp", "serp", envB)
	gCompat := mk("g-compat", "openai_compatible", 0)

	ids := func(t *testing.T, q string) []int64 {
		t.Helper()
		r := e.do(t, "GET", "/api/configurations"+q, admin, nil)
		if r.Code != 200 {
			t.Fatalf("list %s: %d %s", q, r.Code, r.Body)
		}
		var out []int64
		for _, it := range r.Data()["items"].([]any) {
			out = append(out, cfgID(it.(map[string]any)))
		}
		if int(r.Data()["total"].(float64)) != len(out) && !strings.Contains(q, "per_page") {
			t.Fatalf("total %v != %d items", r.Data()["total"], len(out))
		}
		return out
	}
	set := func(xs ...int64) string { return fmt.Sprint(xs) }
	cases := []struct {
		q    string
		want []int64 // in name order
	}{
		{"", []int64{aAI, aWP, bAI, bSERP, gCompat, globalAI, globalWP}},
		{"?provider=openai", []int64{bAI, globalAI}},
		{"?provider=wordpress", []int64{aWP, globalWP}},
		{"?environment_id=" + fmt.Sprint(envA), []int64{aAI, aWP, gCompat, globalAI, globalWP}},
		{"?environment_id=" + fmt.Sprint(envB), []int64{bAI, bSERP, gCompat, globalAI, globalWP}},
		{"?environment_id=" + fmt.Sprint(envA) + "&provider=wordpress", []int64{aWP, globalWP}},
		{"?environment_id=" + fmt.Sprint(envB) + "&provider=serp", []int64{bSERP}},
		{"?provider=anthropic&environment_id=" + fmt.Sprint(envB), nil},
	}
	for _, c := range cases {
		t.Run("List"+c.q, func(t *testing.T) {
			if got := ids(t, c.q); set(got...) != set(c.want...) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
		})
	}
	t.Run("Pagination", func(t *testing.T) {
		r := e.do(t, "GET", "/api/configurations?per_page=2&page=2", admin, nil)
		d := r.Data()
		if r.Code != 200 || d["total"].(float64) != 7 || len(d["items"].([]any)) != 2 || d["page"].(float64) != 2 {
			t.Fatalf("%d %s", r.Code, r.Body)
		}
		if got := cfgID(d["items"].([]any)[0].(map[string]any)); got != bAI {
			t.Fatalf("page 2 starts with %d, want %d", got, bAI)
		}
	})
	for _, q := range []string{"?provider=cohere", "?environment_id=0", "?environment_id=x", "?per_page=0", "?per_page=201"} {
		t.Run("BadQuery"+q, func(t *testing.T) {
			if r := e.do(t, "GET", "/api/configurations"+q, admin, nil); r.Code != 422 {
				t.Fatalf("%d %s", r.Code, r.Body)
			}
		})
	}
	t.Run("Delete", func(t *testing.T) {
		p := fmt.Sprintf("/api/configurations/%d", aAI)
		r := e.do(t, "DELETE", p, admin, nil)
		if r.Code != 200 || r.Data()["deleted"] != true || cfgID(r.Data()) != aAI {
			t.Fatalf("delete: %d %s", r.Code, r.Body)
		}
		for _, m := range []string{"GET", "PUT", "DELETE"} {
			var body any
			if m == "PUT" {
				body = map[string]any{"name": "x"}
			}
			if r := e.do(t, m, p, admin, body); r.Code != 404 {
				t.Fatalf("%s after delete: %d %s", m, r.Code, r.Body)
			}
		}
		if r := e.do(t, "POST", p+"/test", admin, nil); r.Code != 404 {
			t.Fatalf("test after delete: %d %s", r.Code, r.Body)
		}
		if got := ids(t, "?environment_id="+fmt.Sprint(envA)); set(got...) != set(aWP, gCompat, globalAI, globalWP) {
			t.Fatalf("list after delete: %v", got)
		}
	})
}

func TestConfigurationsTestEndpoint(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, admin := e.user(t, "admin", store.RoleAdmin)
	openai := cfgFakeOpenAI(t)
	anthropic := cfgFakeAnthropic(t, "sk-ant-good-key-0001")
	wp := cfgFakeWordPress(t, "ann", "good app pass word")
	serp := cfgFakeSERP(t, "serp-good-key-0001", "Invalid API key.")
	// A SERP API that repeats the key in its error.
	serpEcho := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(401)
		json.NewEncoder(w).Encode(map[string]string{"error": "Invalid API key: " + r.URL.Query().Get("api_key")})
	}))
	t.Cleanup(serpEcho.Close)

	cases := []struct {
		name     string
		body     map[string]any
		secret   string
		ok       bool
		detail   []string
		models   []any
		noDetail []string
	}{
		{"OpenAIGood", map[string]any{"provider": "openai", "api_key": cfgGoodKey, "base_url": openai.URL + "/v1"}, cfgGoodKey,
			true, []string{"2 models available"}, []any{"gpt-4o", "gpt-4o-mini"}, nil},
		{"OpenAIWrongKey", map[string]any{"provider": "openai", "api_key": "sk-test-wrong-key-WXYZ", "base_url": openai.URL + "/v1"}, "sk-test-wrong-key-WXYZ",
			false, []string{"Incorrect API key provided", "401"}, []any{}, nil},
		{"CompatibleGood", map[string]any{"provider": "openai_compatible", "api_key": cfgGoodKey, "base_url": openai.URL + "/v1"}, cfgGoodKey,
			true, []string{"2 models available"}, []any{"gpt-4o", "gpt-4o-mini"}, nil},
		{"CompatibleNoKey", map[string]any{"provider": "openai_compatible", "base_url": openai.URL + "/v1"}, "",
			false, []string{"Incorrect API key provided"}, []any{}, nil},
		{"AnthropicGood", map[string]any{"provider": "anthropic", "api_key": "sk-ant-good-key-0001", "base_url": anthropic.URL}, "sk-ant-good-key-0001",
			true, []string{"1 models available"}, []any{"claude-x"}, nil},
		{"AnthropicWrongKey", map[string]any{"provider": "anthropic", "api_key": "sk-ant-wrong-key-0002", "base_url": anthropic.URL}, "sk-ant-wrong-key-0002",
			false, []string{"invalid x-api-key", "401"}, []any{}, nil},
		{"WordPressGood", map[string]any{"provider": "wordpress", "base_url": wp.URL, "username": "ann", "application_password": "good app pass word"}, "good app pass word",
			true, []string{"signed in as Ann (administrator)"}, []any{}, nil},
		{"WordPressWrongPassword", map[string]any{"provider": "wordpress", "base_url": wp.URL + "/", "username": "ann", "application_password": "bad app pass word"}, "bad app pass word",
			false, []string{"You are not currently logged in.", "401"}, []any{}, nil},
		{"WordPressNotWordPress", map[string]any{"provider": "wordpress", "base_url": openai.URL, "username": "ann", "application_password": "good app pass word"}, "good app pass word",
			false, []string{"404"}, []any{}, nil},
		{"SERPGood", map[string]any{"provider": "serp", "api_key": "serp-good-key-0001", "base_url": serp.URL}, "serp-good-key-0001",
			true, []string{"ann@example.com", "Developer", "4990"}, []any{}, nil},
		{"SERPWrongKey", map[string]any{"provider": "serp", "api_key": "serp-wrong-key-0002", "base_url": serp.URL}, "serp-wrong-key-0002",
			false, []string{"Invalid API key.", "401"}, []any{}, nil},
		{"SERPKeyEchoed", map[string]any{"provider": "serp", "api_key": "serp-echoed-key-0003", "base_url": serpEcho.URL}, "serp-echoed-key-0003",
			false, []string{"Invalid API key"}, []any{}, []string{"echoed-key"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := map[string]any{"name": c.name}
			for k, v := range c.body {
				body[k] = v
			}
			d := cfgCreate(t, e, admin, body)
			p := fmt.Sprintf("/api/configurations/%d", cfgID(d))
			r := e.do(t, "POST", p+"/test", admin, nil)
			if r.Code != 200 {
				t.Fatalf("test: %d %s", r.Code, r.Body)
			}
			res := r.Data()
			if res["ok"] != c.ok || cfgID(res) != cfgID(d) {
				t.Fatalf("ok = %v, want %v: %s", res["ok"], c.ok, r.Body)
			}
			detail, _ := res["detail"].(string)
			for _, s := range c.detail {
				if !strings.Contains(detail, s) {
					t.Errorf("detail %q does not contain %q", detail, s)
				}
			}
			if fmt.Sprint(res["models"]) != fmt.Sprint(c.models) {
				t.Errorf("models = %v, want %v", res["models"], c.models)
			}
			if _, ok := res["latency_ms"].(float64); !ok {
				t.Errorf("latency_ms: %v", res["latency_ms"])
			}
			secretParts := append([]string{}, c.noDetail...)
			if c.secret != "" {
				secretParts = append(secretParts, c.secret)
			}
			// The recorded outcome.
			got := e.do(t, "GET", p, admin, nil)
			for _, b := range []string{r.Body, got.Body} {
				for _, s := range secretParts {
					if strings.Contains(b, s) {
						t.Errorf("a response contains the secret %q: %s", s, b)
					}
				}
			}
			g := got.Data()
			if g["last_test_ok"] != c.ok || g["last_tested_at"] != "2026-11-21T12:00:00.000Z" {
				t.Errorf("recorded: last_test_ok %v, last_tested_at %v", g["last_test_ok"], g["last_tested_at"])
			}
			wantErr := ""
			if !c.ok {
				wantErr = detail
			}
			if g["last_test_error"] != wantErr {
				t.Errorf("last_test_error = %q, want %q", g["last_test_error"], wantErr)
			}
		})
	}

	t.Run("FailureThenSuccessClearsError", func(t *testing.T) {
		d := cfgCreate(t, e, admin, map[string]any{"name": "flip", "provider": "openai", "api_key": "sk-test-wrong-key-1111", "base_url": openai.URL + "/v1"})
		p := fmt.Sprintf("/api/configurations/%d", cfgID(d))
		e.do(t, "POST", p+"/test", admin, nil)
		e.clock.Advance(60e9)
		e.do(t, "PUT", p, admin, map[string]any{"api_key": cfgGoodKey})
		if r := e.do(t, "POST", p+"/test", admin, nil); r.Data()["ok"] != true {
			t.Fatalf("%s", r.Body)
		}
		g := e.do(t, "GET", p, admin, nil).Data()
		if g["last_test_ok"] != true || g["last_test_error"] != "" || g["last_tested_at"] != "2026-11-21T12:01:00.000Z" {
			t.Fatalf("after a good test: %v", g)
		}
	})
	t.Run("UnreachableProvider", func(t *testing.T) {
		dead := httptest.NewServer(http.NotFoundHandler())
		deadURL := dead.URL
		dead.Close()
		d := cfgCreate(t, e, admin, map[string]any{"name": "dead", "provider": "wordpress", "base_url": deadURL, "username": "ann", "application_password": "dead pass word"})
		r := e.do(t, "POST", fmt.Sprintf("/api/configurations/%d/test", cfgID(d)), admin, nil)
		if r.Code != 200 || r.Data()["ok"] != false || r.Data()["detail"] == "" || strings.Contains(r.Body, "dead pass word") {
			t.Fatalf("%d %s", r.Code, r.Body)
		}
	})
	t.Run("SealedWithAnotherKey", func(t *testing.T) {
		// As after restoring a backup on an installation with another
		// secret.key: the secret does not open.
		other, err := keyring.New([]byte("another-secret-key-0123456789abcdef-xyz"))
		if err != nil {
			t.Fatal(err)
		}
		cred, err := e.app.DB.CreateCredential(t.Context(), store.NewCredential{Name: "foreign", Provider: "openai",
			BaseURL: openai.URL + "/v1", SecretHint: "...0001",
			Seal: func(id int64) ([]byte, error) { return other.Seal([]byte(cfgGoodKey), store.CredentialAAD(id)) }})
		if err != nil {
			t.Fatal(err)
		}
		p := fmt.Sprintf("/api/configurations/%d/test", cred.ID)
		r := aisRawDo(t, e, "POST", p, admin, nil)
		if r.Code != 409 || !strings.Contains(r.Detail(), "cannot be opened") || !strings.Contains(r.Detail(), "enter its secret again") {
			t.Fatalf("%d %s", r.Code, r.Body)
		}
		if !aisDocuments(t, "POST", "/api/configurations/{id}/test", 409) {
			t.Fatal("bug: POST /api/configurations/{id}/test answers 409 for a secret that does not open with this secret.key " +
				"(engine.TestCredential), but the route (server/configurations.go registerConfigurationRoutes) lacks Errors: []int{409}, " +
				"so web/openapi.json does not document it")
		}
	})
	t.Run("BadID", func(t *testing.T) {
		if r := e.do(t, "POST", "/api/configurations/99999/test", admin, nil); r.Code != 404 {
			t.Fatalf("%d %s", r.Code, r.Body)
		}
		if r := e.do(t, "POST", "/api/configurations/abc/test", admin, nil); r.Code != 422 && r.Code != 404 {
			t.Fatalf("%d %s", r.Code, r.Body)
		}
	})
}

// A stored secret is never sent to a new address: moving a credential to
// another base_url needs its secret again.
func TestConfigurationsNewAddressNeedsSecret(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, admin := e.user(t, "admin", store.RoleAdmin)
	prov := fakeOpenAI(t, nil)
	r := e.do(t, "POST", "/api/configurations", admin, map[string]any{"name": "k", "provider": "openai",
		"api_key": "sk-test-good-key-0001", "base_url": prov.URL + "/v1"})
	if r.Code != 201 {
		t.Fatalf("create: %d %s", r.Code, r.Body)
	}
	p := fmt.Sprintf("/api/configurations/%d", int(r.Data()["id"].(float64)))
	if r := e.do(t, "PUT", p, admin, map[string]any{"base_url": "http://127.0.0.1:9/elsewhere/v1"}); r.Code != 422 || !strings.Contains(r.Detail(), "api_key: is required when base_url changes") {
		t.Fatalf("new address without the secret: %d %s", r.Code, r.Body)
	}
	if r := e.do(t, "PUT", p, admin, map[string]any{"base_url": prov.URL + "/v1/"}); r.Code != 200 {
		t.Fatalf("the same address written differently: %d %s", r.Code, r.Body)
	}
	if r := e.do(t, "PUT", p, admin, map[string]any{"base_url": "http://127.0.0.1:9/elsewhere/v1", "api_key": "sk-test-other-key-0002"}); r.Code != 200 {
		t.Fatalf("new address with its secret: %d %s", r.Code, r.Body)
	}
	if r := e.do(t, "PUT", p, admin, map[string]any{"username": "x"}); r.Code != 422 || !strings.Contains(r.Detail(), "username") {
		t.Fatalf("a username on an openai credential: %d %s", r.Code, r.Body)
	}
	if r := e.do(t, "PUT", p, admin, map[string]any{"name": "bad\u0000name"}); r.Code != 422 || !strings.Contains(r.Detail(), "control") {
		t.Fatalf("a NUL in the name: %d %s", r.Code, r.Body)
	}
}

// postgresRowsText is the text of every row of every table of e's
// PostgreSQL database (bytea columns as their hex text, and as raw bytes).
func postgresRowsText(t *testing.T, e *env) []byte {
	t.Helper()
	addr, ok := pgDirs.Load(e.app.Config.DataDir)
	if !ok {
		t.Fatal("no PostgreSQL database for the env's data directory")
	}
	conn, err := sql.Open("pgx", addr.(string))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx := context.Background()
	rows, err := conn.QueryContext(ctx, `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, n)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	var raw []byte
	for _, table := range tables {
		rs, err := conn.QueryContext(ctx, `SELECT r::text FROM "`+table+`" r`)
		if err != nil {
			t.Fatal(err)
		}
		for rs.Next() {
			var row string
			if err := rs.Scan(&row); err != nil {
				t.Fatal(err)
			}
			raw = append(raw, row...)
			raw = append(raw, '\n')
		}
		if err := rs.Err(); err != nil {
			t.Fatal(err)
		}
		rs.Close()
	}
	// A bytea column reads as \x and hex: add its bytes, so that a
	// plaintext kept in one is found too.
	for _, m := range regexp.MustCompile(`\\x([0-9a-f]+)`).FindAllSubmatch(raw, -1) {
		if b, err := hex.DecodeString(string(m[1])); err == nil {
			raw = append(raw, b...)
		}
	}
	return raw
}
