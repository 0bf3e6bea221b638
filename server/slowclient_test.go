package server_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/copydesk/copydesk/store"
)

// countingBody is a request body that counts what the server read of it
// and, at its first read, runs onRead (nil: nothing).
type countingBody struct {
	r      io.Reader
	n      *atomic.Int64
	once   sync.Once
	onRead func()
}

func (b *countingBody) Read(p []byte) (int, error) {
	if b.onRead != nil {
		b.once.Do(b.onRead)
	}
	n, err := b.r.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// TestCallerCheckedBeforeBody: on a route that needs a token, the caller is
// decided on the headers; a 401 or 403 is answered without a byte of the
// body read.
func TestCallerCheckedBeforeBody(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, viewer := e.user(t, "vic", store.RoleViewer)
	_, admin := e.user(t, "ada", store.RoleAdmin)
	cases := []struct {
		name     string
		auth     string
		status   int
		readBody bool
	}{
		{"NoToken", "", 401, false},
		{"NotBearer", "Basic YTpi", 401, false},
		{"ForgedToken", "Bearer " + viewer[:len(viewer)-4] + "AAAA", 401, false},
		{"RoleTooLow", "Bearer " + viewer, 403, false},
		{"Allowed", "Bearer " + admin, 201, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var read atomic.Int64
			body := &countingBody{r: strings.NewReader(`{"name": "Env ` + c.name + `"}`), n: &read}
			req := httptest.NewRequest("POST", "/api/environments", body)
			req.Header.Set("Content-Type", "application/json")
			if c.auth != "" {
				req.Header.Set("Authorization", c.auth)
			}
			r := e.send(t, req)
			if r.Code != c.status {
				t.Fatalf("got %d %s, want %d", r.Code, r.Body, c.status)
			}
			if got := read.Load() > 0; got != c.readBody {
				t.Fatalf("%d bytes of the body were read; want the body read: %v", read.Load(), c.readBody)
			}
		})
	}
}

// TestCallerCheckedAgainAfterBody: what changes while the body comes in
// (the hold on the database is let go meanwhile) counts: a session revoked
// or a role lowered then is refused, and nothing is done.
func TestCallerCheckedAgainAfterBody(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	root, _ := e.user(t, "root", store.RoleSuperAdmin)
	ctx := context.Background()
	cases := []struct {
		name   string
		change func(t *testing.T, user *store.User, token string)
		status int
	}{
		{"SessionRevoked", func(t *testing.T, _ *store.User, token string) {
			p, err := e.app.Auth.Authenticate(ctx, token)
			if err == nil {
				err = e.app.Auth.RevokeSession(ctx, p, p.Session.ID)
			}
			if err != nil {
				t.Error(err)
			}
		}, 401},
		{"Disabled", func(t *testing.T, u *store.User, _ string) {
			if _, err := e.app.Auth.SetActive(ctx, root, u.ID, false); err != nil {
				t.Error(err)
			}
		}, 401},
		{"RoleLowered", func(t *testing.T, u *store.User, _ string) {
			if _, err := e.app.Auth.SetRole(ctx, root, u.ID, store.RoleViewer); err != nil {
				t.Error(err)
			}
		}, 403},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u, token := e.user(t, fmt.Sprintf("adm%d", i), store.RoleAdmin)
			var read atomic.Int64
			body := &countingBody{r: strings.NewReader(`{"name": "Not made ` + c.name + `"}`), n: &read,
				onRead: func() { c.change(t, u, token) }}
			req := httptest.NewRequest("POST", "/api/environments", body)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+token)
			if r := e.send(t, req); r.Code != c.status {
				t.Fatalf("got %d %s, want %d", r.Code, r.Body, c.status)
			}
			if read.Load() == 0 {
				t.Fatal("the body was never read: the change was not made while it came in")
			}
			envs, _, err := e.app.DB.ListEnvironments(ctx, store.EnvironmentFilter{Scope: store.NewScope(root.ID, true, nil),
				Page: store.Page{Page: 1, PerPage: 200}})
			if err != nil {
				t.Fatal(err)
			}
			for _, env := range envs {
				if strings.Contains(env.Name, c.name) {
					t.Fatalf("the refused request created %q", env.Name)
				}
			}
		})
	}
}

// TestUnauthenticatedBodyNeverAwaited speaks HTTP over a real connection:
// headers that announce a body under the limit, and no body. The answer
// comes at once instead of after the body's read deadline, no "100
// Continue" invites the body first, and net/http does not wait for a small
// body to skip it either (the connection is closed instead). A body over
// the limit is refused on its declared length the same way.
func TestUnauthenticatedBodyNeverAwaited(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, viewer := e.user(t, "vic", store.RoleViewer)
	srv := httptest.NewServer(e.h)
	defer srv.Close()
	cases := []struct {
		name, auth, expect string
		length             int
		status             int
	}{
		{"NoToken", "", "", 1000000, 401},
		{"NoTokenSmallBody", "", "", 1000, 401},
		{"NoTokenExpectContinue", "", "100-continue", 1000000, 401},
		{"RoleTooLow", "Bearer " + viewer, "", 1000000, 403},
		{"RoleTooLowSmallBody", "Bearer " + viewer, "", 1000, 403},
		{"RoleTooLowExpectContinue", "Bearer " + viewer, "100-continue", 1000000, 403},
		{"PublicOverLimit", "", "", 100000, 413},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", srv.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			// Far below the server's body read deadline (a minute): a
			// server that waits for the body fails here instead.
			_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
			path := "/api/environments"
			if c.status == 413 {
				path = "/api/auth/login"
			}
			head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nContent-Length: %d\r\n", path, c.length)
			if c.auth != "" {
				head += "Authorization: " + c.auth + "\r\n"
			}
			if c.expect != "" {
				head += "Expect: " + c.expect + "\r\n"
			}
			if _, err := io.WriteString(conn, head+"\r\n"); err != nil {
				t.Fatal(err)
			}
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("no answer without the body: %v", err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != c.status {
				t.Fatalf("got %d, want %d", resp.StatusCode, c.status)
			}
		})
	}
}

// hookWriter is a response recorder that runs hook (once) when the
// handler writes the first byte of its answer.
type hookWriter struct {
	*httptest.ResponseRecorder
	once sync.Once
	hook func()
}

func (w *hookWriter) Write(b []byte) (int, error) {
	w.once.Do(w.hook)
	return w.ResponseRecorder.Write(b)
}

func (w *hookWriter) WriteString(s string) (int, error) {
	w.once.Do(w.hook)
	return w.ResponseRecorder.WriteString(s)
}

// TestAnswerSentWithoutHold: an answer is rendered under the request's hold
// on the database and written after it: while the first byte goes out (a
// client that does not read would block right there), a restore, which
// needs the database to itself, goes through instead of waiting for the
// writer and giving up (429).
func TestAnswerSentWithoutHold(t *testing.T) {
	restoresOnSQLite(t)
	t.Parallel()
	e := newEnv(t)
	_, root := e.user(t, "root", store.RoleSuperAdmin)
	ben, _ := e.user(t, "ben", store.RoleViewer)
	vicUser, vic := e.user(t, "vic", store.RoleViewer)
	// They work on one site, so vic may write to ben.
	team, err := e.app.DB.CreateEnvironment(context.Background(), store.NewEnvironment{Name: "Team", Slug: "team"})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []*store.User{ben, vicUser} {
		if _, err := e.app.DB.SetUserEnvironments(context.Background(), u.ID, []int64{team.ID}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 3; i++ {
		if r := e.do(t, "POST", "/api/messages", vic, map[string]any{"recipient_id": ben.ID, "body": strings.Repeat("long text ", 500)}); r.Code != 201 {
			t.Fatalf("send: %d %s", r.Code, r.Body)
		}
	}
	name := e.do(t, "POST", "/api/backup", root, nil).Data()["name"].(string)
	cases := []struct {
		name, who, path string
		status          int
	}{
		{"List", "vic", "/api/messages/sent?per_page=200", 200},
		{"CSVExport", "root", "/api/token-analytics/export.csv", 200},
		{"One", "vic", "/api/auth/me", 200},
		{"Error", "vic", "/api/environments/99999", 404},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// The restore ends every session: sign in afresh.
			token := e.login(t, c.who+"@example.com", "password-"+c.who)
			restored := 0
			w := &hookWriter{ResponseRecorder: httptest.NewRecorder(), hook: func() {
				rootTok := e.login(t, "root@example.com", "password-root")
				r := e.do(t, "POST", "/api/backup/"+name+"/restore", rootTok, nil)
				restored = r.Code
				if r.Code != 200 {
					t.Errorf("restore while the answer is being written: %d %s", r.Code, r.Body)
				}
			}}
			req := httptest.NewRequest("GET", c.path, nil)
			req.Header.Set("Authorization", "Bearer "+token)
			e.h.ServeHTTP(w, req)
			if w.Code != c.status {
				t.Fatalf("got %d %s, want %d", w.Code, truncate(w.Body.String(), 300), c.status)
			}
			if restored == 0 {
				t.Fatal("the answer was never written")
			}
		})
	}
}
