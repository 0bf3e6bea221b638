package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/copydesk/copydesk/server/notify"
	"github.com/copydesk/copydesk/store"
)

// Tests of the conventions every route keeps (server/conventions.go and
// server/respond.go): JSON bodies declared as JSON, known query parameters
// only, HEAD wherever GET, times with milliseconds, JSON without HTML
// escaping.

// rawRequest sends body with exactly the Content-Type given ("" sends none).
func (e *env) rawRequest(t *testing.T, method, path, token, contentType, body string) resp {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return e.send(t, req)
}

func TestContentType(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, tok := e.user(t, "cora", store.RoleViewer)
	const body = `{"full_name": "Cora"}`
	cases := []struct {
		name, contentType, body string
		status                  int
	}{
		{"None", "", body, 200},
		{"JSON", "application/json", body, 200},
		{"JSONWithCharset", "application/json; charset=utf-8", body, 200},
		{"JSONCaseInsensitive", "Application/JSON; Charset=UTF-8", body, 200},
		{"FormPost", "application/x-www-form-urlencoded", "full_name=Cora", 415},
		{"FormPostOfJSON", "application/x-www-form-urlencoded", body, 415},
		{"Text", "text/plain", body, 415},
		{"Multipart", "multipart/form-data; boundary=x", body, 415},
		{"OtherCharset", "application/json; charset=iso-8859-1", body, 415},
		{"OtherParameter", "application/json; version=2", body, 415},
		{"NearMiss", "application/jsonx", body, 415},
		{"Unparsable", "application/json; ;;", body, 415},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := e.rawRequest(t, "PUT", "/api/auth/me", tok, c.contentType, c.body)
			if r.Code != c.status {
				t.Fatalf("got %d %s, want %d", r.Code, r.Body, c.status)
			}
			if c.status == 415 && r.Detail() != "send Content-Type: application/json" {
				t.Fatalf("detail %q", r.Detail())
			}
		})
	}
	t.Run("RefusedChangesNothing", func(t *testing.T) {
		e.rawRequest(t, "PUT", "/api/auth/me", tok, "text/plain", `{"full_name": "Changed"}`)
		if got := e.do(t, "GET", "/api/auth/me", tok, nil).Data()["full_name"]; got != "Cora" {
			t.Fatalf("full_name = %v", got)
		}
	})
	t.Run("PublicRoute", func(t *testing.T) {
		// The form post of the issue: a sign-in from an HTML form.
		r := e.rawRequest(t, "POST", "/api/auth/login", "", "application/x-www-form-urlencoded", "email=cora%40example.com&password=x")
		if r.Code != 415 || r.Detail() != "send Content-Type: application/json" {
			t.Fatalf("got %d %s", r.Code, r.Body)
		}
	})
	t.Run("AuthenticationFirst", func(t *testing.T) {
		if r := e.rawRequest(t, "PUT", "/api/auth/me", "", "text/plain", body); r.Code != 401 {
			t.Fatalf("got %d %s", r.Code, r.Body)
		}
	})
	t.Run("MultipartRoutesKeepTheirType", func(t *testing.T) {
		if r := e.upload(t, "/api/auth/me/avatar", tok, "file", "a.png", pngBytes(t, 8, 8)); r.Code != 200 {
			t.Fatalf("multipart avatar: %d %s", r.Code, r.Body)
		}
		if r := e.rawRequest(t, "POST", "/api/auth/me/avatar", tok, "application/json", `{}`); r.Code != 422 || !strings.Contains(r.Detail(), "multipart/form-data") {
			t.Fatalf("JSON to the avatar: %d %s", r.Code, r.Body)
		}
	})
}

func TestUnknownQueryParameters(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	user, tok := e.user(t, "quinn", store.RoleViewer)
	_, super := e.user(t, "root", store.RoleSuperAdmin)
	if _, err := e.app.DB.SetAvatar(context.Background(), user.ID, "image/png", pngBytes(t, 4, 4)); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, method, path, token string
		status                    int
		detail                    string
	}{
		{"KnownOnes", "GET", "/api/messages/inbox?unread=true&per_page=2&page=1", tok, 200, ""},
		{"Misspelt", "GET", "/api/messages/inbox?unraed=true", tok, 422, "unraed: is not a known query parameter"},
		{"OneOfMany", "GET", "/api/messages/inbox?page=1&zzz=1&aaa=2", tok, 422, "aaa: is not a known query parameter"},
		{"RouteWithoutParameters", "GET", "/api/auth/me?verbose=1", tok, 422, "verbose: is not a known query parameter (GET /api/auth/me takes none)"},
		{"EmptyName", "GET", "/api/auth/me?=1", tok, 422, `"": is not a known query parameter`},
		{"Malformed", "GET", "/api/messages/inbox?page=%zz", tok, 422, "query: the query string is malformed"},
		{"AvatarVersion", "GET", fmt.Sprintf("/api/auth/avatars/%d?v=1", user.ID), tok, 200, ""},
		{"AnonymousGets401First", "GET", "/api/auth/me?verbose=1", "", 401, ""},
		{"Head", "HEAD", "/api/auth/me?verbose=1", tok, 422, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := e.do(t, c.method, c.path, c.token, nil)
			if r.Code != c.status || (c.detail != "" && !strings.HasPrefix(r.Detail(), c.detail)) {
				t.Fatalf("got %d %s, want %d %q", r.Code, r.Body, c.status, c.detail)
			}
		})
	}
	t.Run("RefusedBeforeTheHandler", func(t *testing.T) {
		if r := e.do(t, "POST", "/api/auth/logout?everywhere=true", tok, nil); r.Code != 422 {
			t.Fatalf("logout with a parameter: %d %s", r.Code, r.Body)
		}
		if r := e.do(t, "GET", "/api/auth/me", tok, nil); r.Code != 200 {
			t.Fatalf("the refused logout ended the session: %d", r.Code)
		}
	})
	// Every route, whatever it does, refuses a parameter it does not list,
	// before looking at its path, body or anything else.
	t.Run("EveryRoute", func(t *testing.T) {
		for _, rt := range e.app.Server.Routes() {
			path := regexp.MustCompile(`\{\w+\}`).ReplaceAllString(rt.Path, "1")
			token := super
			if rt.Access.Public {
				token = ""
			}
			r := e.do(t, rt.Method, path+"?copydesk_no_such_parameter=1", token, nil)
			if r.Code != 422 || r.Detail() == "" || !strings.HasPrefix(r.Detail(), "copydesk_no_such_parameter: ") {
				t.Errorf("%s %s: %d %s", rt.Method, rt.Path, r.Code, truncate(r.Body, 200))
			}
		}
	})
}

func TestHead(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, tok := e.user(t, "hana", store.RoleViewer)
	_, super := e.user(t, "root", store.RoleSuperAdmin)
	snap, err := e.app.Backups.Create(context.Background(), "manual")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, path, token string
		status            int
		header, value     string
	}{
		{"Health", "/api/health", "", 200, "Content-Type", "application/json; charset=utf-8"},
		{"SignedIn", "/api/auth/me", tok, 200, "Content-Type", "application/json; charset=utf-8"},
		{"NoToken", "/api/auth/me", "", 401, "WWW-Authenticate", `Bearer realm="copydesk"`},
		{"RoleTooLow", "/api/auth/users", tok, 403, "", ""},
		{"List", "/api/notifications?per_page=1", tok, 200, "", ""},
		{"EventStream", "/api/notifications/stream", tok, 200, "Content-Type", "text/event-stream"},
		{"Download", "/api/backup/" + snap.Name + "/download", super, 200, "Content-Length", fmt.Sprint(snap.Size)},
		{"UnknownBackup", "/api/backup/copydesk-20000101-000000-manual.db/download", super, 404, "", ""},
		{"Docs", "/docs", "", 200, "Content-Type", "text/html; charset=utf-8"},
		{"OpenAPI", "/openapi.json", "", 200, "", ""},
		{"PostOnly", "/api/auth/logout", tok, 405, "", ""},
		{"UnknownRoute", "/api/nothing", tok, 404, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// The event stream answers at once: no subscription, no wait.
			r := e.do(t, "HEAD", c.path, c.token, nil)
			if r.Code != c.status {
				t.Fatalf("got %d, want %d", r.Code, c.status)
			}
			if c.status < 400 && r.Body != "" {
				t.Fatalf("HEAD sent a body: %s", truncate(r.Body, 200))
			}
			if c.header != "" && r.Header.Get(c.header) != c.value {
				t.Fatalf("%s = %q, want %q", c.header, r.Header.Get(c.header), c.value)
			}
		})
	}
	// Every GET route without path parameters answers HEAD with GET's
	// status (the event stream's GET would not end: it is above).
	t.Run("EveryGET", func(t *testing.T) {
		for _, rt := range e.app.Server.Routes() {
			if rt.Method != "GET" || strings.Contains(rt.Path, "{") || rt.Binary == "text/event-stream" {
				continue
			}
			get, head := e.do(t, "GET", rt.Path, super, nil), e.do(t, "HEAD", rt.Path, super, nil)
			if head.Code != get.Code || head.Body != "" {
				t.Errorf("%s: HEAD %d (%d bytes), GET %d", rt.Path, head.Code, len(head.Body), get.Code)
			}
		}
	})
	// Over a real connection, as an uptime monitor asks.
	t.Run("OverHTTP", func(t *testing.T) {
		srv := httptest.NewServer(e.h)
		defer srv.Close()
		res, err := http.Head(srv.URL + "/api/health")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if b, _ := io.ReadAll(res.Body); res.StatusCode != 200 || len(b) != 0 {
			t.Fatalf("%d %q", res.StatusCode, b)
		}
	})
}

// msTime is how every time in a response looks.
var msTime = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$`)

// checkTimes walks a JSON value and checks every string under a key
// ending in _at (and from, to).
func checkTimes(t *testing.T, where string, v any) int {
	t.Helper()
	n := 0
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			if s, ok := val.(string); ok && (strings.HasSuffix(k, "_at") || k == "from" || k == "to") {
				n++
				if !msTime.MatchString(s) {
					t.Errorf("%s: %s = %q, want milliseconds in UTC", where, k, s)
				}
				continue
			}
			n += checkTimes(t, where+"."+k, val)
		}
	case []any:
		for _, val := range x {
			n += checkTimes(t, where, val)
		}
	}
	return n
}

func TestTimesHaveMilliseconds(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// A clock between milliseconds: times computed in memory carry
	// nanoseconds, times read back from the database milliseconds.
	e.clock.Advance(1234567 * time.Nanosecond)
	_, tok := e.user(t, "tim", store.RoleViewer)
	_, admin := e.user(t, "root", store.RoleAdmin)
	e.clock.Advance(1500 * time.Millisecond)
	login := e.do(t, "POST", "/api/auth/login", "", map[string]any{"email": "tim@example.com", "password": "password-tim"})
	if got := login.JSON()["expires_at"]; got != "2026-11-21T13:00:01.501Z" {
		t.Errorf("expires_at of a token issued in memory: %v", got)
	}
	total := checkTimes(t, "login", login.JSON())
	for _, p := range []string{"/api/auth/me", "/api/auth/sessions", "/api/auth/users", "/api/token-analytics/summary?from=2026-11-01"} {
		token := tok
		if p == "/api/auth/users" {
			token = admin
		}
		r := e.do(t, "GET", p, token, nil)
		if r.Code != 200 {
			t.Fatalf("%s: %d %s", p, r.Code, r.Body)
		}
		total += checkTimes(t, p, r.JSON())
	}
	if total < 10 {
		t.Fatalf("only %d times checked", total)
	}
}

func TestJSONIsNotHTMLEscaped(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	u, tok := e.user(t, "html", store.RoleViewer)
	r := e.do(t, "PUT", "/api/auth/me", tok, map[string]any{"full_name": "Tom & Jerry <3>"})
	if r.Code != 200 || !strings.Contains(r.Body, `"full_name":"Tom & Jerry <3>"`) {
		t.Fatalf("success body: %d %s", r.Code, r.Body)
	}
	r = e.do(t, "GET", "/api/auth/me", "", nil)
	if r.Code != 401 || !strings.Contains(r.Body, "Bearer <token>") {
		t.Fatalf("error body: %d %s", r.Code, r.Body)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(r.Body), &m); err != nil {
		t.Fatalf("still JSON: %v", err)
	}
	t.Run("EventStream", func(t *testing.T) {
		srv := httptest.NewServer(e.h)
		defer srv.Close()
		s := openStream(t, srv.URL+"/api/notifications/stream", tok)
		defer s.resp.Body.Close()
		e.app.Notify.User(context.Background(), u.ID, notify.Note{Kind: "test", Title: "Tom & Jerry <3>"})
		if ev := s.next(t, 5*time.Second); !strings.Contains(ev["data"], `"title":"Tom & Jerry <3>"`) {
			t.Fatalf("event: %v", ev)
		}
	})
}
