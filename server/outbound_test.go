package server_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/copydesk/copydesk/server"
	"github.com/copydesk/copydesk/store"
)

// A failed credential test reports the remote status and at most 200
// characters of what the remote answered, whatever the provider kind.
func TestCredentialTestFailureDetail(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, admin := e.user(t, "admin", store.RoleAdmin)
	// 5,000 characters of a page, or of a JSON message: too much to repeat.
	page := "<html><body>" + strings.Repeat("Q", 5000) + "</body></html>"
	message := strings.Repeat("Z", 5000)
	remote := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("json") != "" || strings.HasPrefix(r.URL.Path, "/json") {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": message, "type": "authentication_error"},
				"code": "x", "message": message})
			return
		}
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, page)
	}))
	t.Cleanup(remote.Close)

	cases := []struct {
		name   string
		body   map[string]any
		filler string // the character the remote's answer is made of
	}{
		{"CompatiblePage", map[string]any{"provider": "openai_compatible", "base_url": remote.URL + "/v1"}, "Q"},
		{"CompatibleJSON", map[string]any{"provider": "openai_compatible", "base_url": remote.URL + "/json/v1"}, "Z"},
		{"AnthropicPage", map[string]any{"provider": "anthropic", "api_key": "sk-ant-detail-key-0001", "base_url": remote.URL}, "Q"},
		{"WordPressPage", map[string]any{"provider": "wordpress", "base_url": remote.URL, "username": "ann", "application_password": "pw pw pw pw"}, "Q"},
		{"WordPressJSON", map[string]any{"provider": "wordpress", "base_url": remote.URL + "/json", "username": "ann", "application_password": "pw pw pw pw"}, "Z"},
		{"SERPPage", map[string]any{"provider": "serp", "api_key": "serp-detail-key-0001", "base_url": remote.URL}, "Q"},
		{"SERPJSON", map[string]any{"provider": "serp", "api_key": "serp-detail-key-0002", "base_url": remote.URL + "/json"}, "Z"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := map[string]any{"name": c.name}
			maps.Copy(body, c.body)
			d := cfgCreate(t, e, admin, body)
			r := e.do(t, "POST", fmt.Sprintf("/api/configurations/%d/test", cfgID(d)), admin, nil)
			if r.Code != 200 || r.Data()["ok"] != false {
				t.Fatalf("%d %s", r.Code, r.Body)
			}
			detail := r.Data()["detail"].(string)
			if !strings.Contains(detail, "401") {
				t.Errorf("detail %q does not name the status", detail)
			}
			// Some of the answer, to recognise it; never more than 200
			// characters of it.
			if n := strings.Count(detail, c.filler); n < 100 || n > 200 {
				t.Errorf("detail repeats %d characters of the answer, want 100 to 200: %q", n, detail)
			}
			// With room for the status, and for WordPress's advice about
			// application passwords over plain http (the remote here is http).
			if n := len([]rune(detail)); n > 450 {
				t.Errorf("detail is %d characters long", n)
			}
		})
	}
}

// The address guard is used by the credential test: a remote that
// redirects to the cloud metadata address is not followed there, and the
// test fails saying why.
func TestCredentialTestRedirectToMetadata(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, admin := e.user(t, "admin", store.RoleAdmin)
	remote := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/iam/security-credentials/", http.StatusFound)
	}))
	t.Cleanup(remote.Close)
	for _, body := range []map[string]any{
		{"provider": "openai_compatible", "base_url": remote.URL + "/v1"},
		{"provider": "wordpress", "base_url": remote.URL, "username": "ann", "application_password": "pw pw pw pw"},
		{"provider": "serp", "api_key": "serp-redirect-key-0001", "base_url": remote.URL},
	} {
		t.Run(body["provider"].(string), func(t *testing.T) {
			body["name"] = "redirected " + body["provider"].(string)
			d := cfgCreate(t, e, admin, body)
			r := e.do(t, "POST", fmt.Sprintf("/api/configurations/%d/test", cfgID(d)), admin, nil)
			if r.Code != 200 || r.Data()["ok"] != false || !strings.Contains(r.Data()["detail"].(string), "address 169.254.169.254 is not allowed") {
				t.Fatalf("%d %s", r.Code, r.Body)
			}
		})
	}
}

// With --outbound-private=false the server calls no private or loopback
// address: the credential test fails, and a run fails at once (not
// retried) saying why, without the provider being reached.
func TestOutboundPrivateRefused(t *testing.T) {
	t.Parallel()
	f := agSetup(t, func(c *server.Config) { c.RefuseOutboundPrivate = true })
	e := f.e
	agRunJobs(t, e)
	provider := fakeOpenAI(t, nil)
	cred := agConfigure(t, e, provider.URL+"/v1")

	r := e.do(t, "POST", fmt.Sprintf("/api/configurations/%d/test", cred.ID), f.adminTok, nil)
	if r.Code != 200 || r.Data()["ok"] != false || !strings.Contains(r.Data()["detail"].(string), "address 127.0.0.1 is not allowed") {
		t.Fatalf("credential test: %d %s", r.Code, r.Body)
	}

	agent := agCreate(t, e, f.adminTok, map[string]any{"name": "Writer", "kind": "writer"})
	run := agExecute(t, e, f.adminTok, agID(agent), map[string]any{"input": "Write."})
	done := agWaitRun(t, e, f.adminTok, agID(run))
	if done["status"] != "failed" || !strings.Contains(fmt.Sprint(done["error"]), "address 127.0.0.1 is not allowed") {
		t.Fatalf("run: %v", done)
	}
	if job := agJobOfRun(t, e, agID(run)); job.Attempts != 1 {
		t.Errorf("the run was tried %d times; a refused address is not retried", job.Attempts)
	}
	if n := len(provider.Requests()); n != 0 {
		t.Errorf("the provider got %d requests", n)
	}
}
