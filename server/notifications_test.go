package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/copydesk/copydesk/server"
	"github.com/copydesk/copydesk/server/notify"
	"github.com/copydesk/copydesk/store"
)

func TestNotifications(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	alice, aliceTok := e.user(t, "alice", store.RoleViewer)
	_, bobTok := e.user(t, "bob", store.RoleViewer)
	for i := 1; i <= 5; i++ {
		e.app.Notify.User(ctx, alice.ID, notify.Note{Kind: notify.RunSucceeded, Title: fmt.Sprintf("Run %d done", i), Link: fmt.Sprintf("/api/agents/runs/%d", i)})
		e.clock.Advance(time.Second)
	}
	list := e.do(t, "GET", "/api/notifications?per_page=2", aliceTok, nil).Data()
	items := list["items"].([]any)
	if list["total"].(float64) != 5 || len(items) != 2 || items[0].(map[string]any)["title"] != "Run 5 done" {
		t.Fatalf("newest first, paginated: %v", list)
	}
	first := items[0].(map[string]any)
	if first["kind"] != "run.succeeded" || first["link"] != "/api/agents/runs/5" || first["read_at"] != nil {
		t.Fatalf("notification: %v", first)
	}
	id := int(first["id"].(float64))
	if r := e.do(t, "GET", "/api/notifications/unread-count", aliceTok, nil); r.Data()["unread"].(float64) != 5 {
		t.Fatalf("unread: %s", r.Body)
	}

	t.Run("OthersCannotTouch", func(t *testing.T) {
		for _, c := range []struct{ method, path string }{
			{"POST", fmt.Sprintf("/api/notifications/%d/read", id)},
			{"DELETE", fmt.Sprintf("/api/notifications/%d", id)},
		} {
			if r := e.do(t, c.method, c.path, bobTok, nil); r.Code != 404 {
				t.Fatalf("bob %s %s: %d", c.method, c.path, r.Code)
			}
		}
		if r := e.do(t, "GET", "/api/notifications", bobTok, nil); r.Data()["total"].(float64) != 0 {
			t.Fatalf("bob sees alice's: %s", r.Body)
		}
		if r := e.do(t, "POST", "/api/notifications/read-all", bobTok, nil); r.Data()["updated"].(float64) != 0 {
			t.Fatalf("bob's read-all touched others: %s", r.Body)
		}
	})
	t.Run("Read", func(t *testing.T) {
		r := e.do(t, "POST", fmt.Sprintf("/api/notifications/%d/read", id), aliceTok, nil)
		if r.Code != 200 || r.Data()["read_at"] == nil {
			t.Fatalf("%d %s", r.Code, r.Body)
		}
		readAt := r.Data()["read_at"]
		e.clock.Advance(time.Minute)
		if r := e.do(t, "POST", fmt.Sprintf("/api/notifications/%d/read", id), aliceTok, nil); r.Data()["read_at"] != readAt {
			t.Fatal("reading twice moved read_at")
		}
		unread := e.do(t, "GET", "/api/notifications?unread=true", aliceTok, nil).Data()
		if unread["total"].(float64) != 4 {
			t.Fatalf("unread filter: %v", unread)
		}
		if r := e.do(t, "POST", "/api/notifications/read-all", aliceTok, nil); r.Data()["updated"].(float64) != 4 {
			t.Fatalf("read-all: %s", r.Body)
		}
		if r := e.do(t, "GET", "/api/notifications/unread-count", aliceTok, nil); r.Data()["unread"].(float64) != 0 {
			t.Fatalf("after read-all: %s", r.Body)
		}
	})
	t.Run("BadInput", func(t *testing.T) {
		for _, p := range []string{"/api/notifications/abc/read", "/api/notifications/0/read", "/api/notifications/99999/read"} {
			if r := e.do(t, "POST", p, aliceTok, nil); r.Code != 404 {
				t.Errorf("%s: %d", p, r.Code)
			}
		}
		for _, q := range []string{"?unread=perhaps", "?per_page=0", "?page=x"} {
			if r := e.do(t, "GET", "/api/notifications"+q, aliceTok, nil); r.Code != 422 {
				t.Errorf("%s: %d", q, r.Code)
			}
		}
	})
	t.Run("Delete", func(t *testing.T) {
		if r := e.do(t, "DELETE", fmt.Sprintf("/api/notifications/%d", id), aliceTok, nil); r.Code != 200 {
			t.Fatalf("%d %s", r.Code, r.Body)
		}
		if r := e.do(t, "DELETE", fmt.Sprintf("/api/notifications/%d", id), aliceTok, nil); r.Code != 404 {
			t.Fatalf("twice: %d", r.Code)
		}
	})
}

func TestNotificationAudiences(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	viewer, _ := e.user(t, "viewer", store.RoleViewer)
	outsider, _ := e.user(t, "outsider", store.RoleEditor)
	admin, _ := e.user(t, "admin", store.RoleAdmin)
	root, _ := e.user(t, "root", store.RoleSuperAdmin)
	disabled, _ := e.user(t, "gone", store.RoleAdmin)
	e.app.DB.SetUserActive(ctx, disabled.ID, false)
	env, _ := e.app.DB.CreateEnvironment(ctx, store.NewEnvironment{Name: "Site", Slug: "site"})
	e.app.DB.SetUserEnvironments(ctx, viewer.ID, []int64{env.ID})

	e.app.Notify.Environment(ctx, env.ID, notify.Note{Kind: notify.PostPublished, Title: "Published"})
	e.app.Notify.Admins(ctx, notify.Note{Kind: notify.BudgetReached, Title: "Budget"})
	e.app.Notify.Role(ctx, store.RoleSuperAdmin, notify.Note{Kind: notify.BackupFailed, Title: "Backup"})
	kinds := func(u *store.User) string {
		list, _, err := e.app.DB.ListNotifications(ctx, store.NotificationFilter{UserID: u.ID, Page: store.Page{Page: 1, PerPage: 50}})
		if err != nil {
			t.Fatal(err)
		}
		var ks []string
		for i := len(list) - 1; i >= 0; i-- {
			ks = append(ks, list[i].Kind)
			if list[i].Kind == notify.PostPublished && (list[i].EnvironmentID == nil || *list[i].EnvironmentID != env.ID) {
				t.Errorf("environment notification without its environment: %+v", list[i])
			}
		}
		return strings.Join(ks, ",")
	}
	want := map[*store.User]string{
		viewer:   "post.published",
		outsider: "",
		admin:    "post.published,budget.reached",
		root:     "post.published,budget.reached,backup.failed",
		disabled: "",
	}
	for u, w := range want {
		if got := kinds(u); got != w {
			t.Errorf("%s got %q, want %q", u.Username, got, w)
		}
	}
	// Raising a notification for nobody, or for a user who no longer
	// exists, fails nothing.
	e.app.Notify.User(ctx, 424242, notify.Note{Kind: "x", Title: "x"})
	e.app.Notify.Environment(ctx, 999, notify.Note{Kind: "x", Title: "x"})
}

// streamReader reads Server-Sent Events from a real HTTP server.
type streamReader struct {
	resp   *http.Response
	events chan map[string]string
}

func openStream(t *testing.T, url, token string, headers ...string) *streamReader {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	s := &streamReader{resp: resp, events: make(chan map[string]string, 16)}
	go func() {
		defer close(s.events)
		sc := bufio.NewScanner(resp.Body)
		ev := map[string]string{}
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if len(ev) > 0 {
					s.events <- ev
					ev = map[string]string{}
				}
			case strings.HasPrefix(line, ":"):
				ev["comment"] = strings.TrimSpace(line[1:])
			default:
				k, v, _ := strings.Cut(line, ":")
				ev[k] = strings.TrimSpace(v)
			}
		}
	}()
	t.Cleanup(func() { resp.Body.Close() })
	return s
}

// next returns the next event that is not a bare comment, or fails.
func (s *streamReader) next(t *testing.T, within time.Duration) map[string]string {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				return nil
			}
			if ev["event"] != "" {
				return ev
			}
		case <-deadline:
			t.Fatal("no event within", within)
		}
	}
}

func TestNotificationStream(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *server.Config) { c.StreamHeartbeat = 50 * time.Millisecond })
	// The heartbeat re-checks the token, against real time.
	e.app.DB.Now = func() time.Time { return time.Now().UTC() }
	srv := httptest.NewServer(e.h)
	// A stream still open would keep Close waiting for ever (a failed
	// check ends the test with it open): cut the connections first.
	defer func() { srv.CloseClientConnections(); srv.Close() }()
	ctx := context.Background()
	alice, aliceTok := e.user(t, "alice", store.RoleViewer)
	bob, _ := e.user(t, "bob", store.RoleViewer)

	e.app.Notify.User(ctx, alice.ID, notify.Note{Kind: "test.before", Title: "before"})

	s := openStream(t, srv.URL+"/api/notifications/stream", aliceTok)
	e.app.Notify.User(ctx, bob.ID, notify.Note{Kind: "test.bob", Title: "for bob"})
	e.app.Notify.User(ctx, alice.ID, notify.Note{Kind: notify.MessageReceived, Title: "hello alice"})
	ev := s.next(t, 15*time.Second) // a wait, not a timing: PostgreSQL under load was once past 5 s
	var n map[string]any
	if ev["event"] != "notification" || json.Unmarshal([]byte(ev["data"]), &n) != nil || n["title"] != "hello alice" || ev["id"] != fmt.Sprint(n["id"]) {
		t.Fatalf("event: %v", ev)
	}
	lastID := ev["id"]

	// A message to alice arrives on her stream too, through the API, from
	// bob2, who works on her site.
	bob2, bobTok := e.user(t, "bob2", store.RoleViewer)
	site, err := e.app.DB.CreateEnvironment(ctx, store.NewEnvironment{Name: "Site", Slug: "site"})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []int64{alice.ID, bob2.ID} {
		if _, err := e.app.DB.SetUserEnvironments(ctx, id, []int64{site.ID}); err != nil {
			t.Fatal(err)
		}
	}
	if r := e.do(t, "POST", "/api/messages", bobTok, map[string]any{"recipient_id": alice.ID, "body": "hi there"}); r.Code != 201 {
		t.Fatalf("send: %d %s", r.Code, r.Body)
	}
	if ev := s.next(t, 5*time.Second); ev["event"] != "notification" || !strings.Contains(ev["data"], "message.received") {
		t.Fatalf("message notification: %v", ev)
	}

	t.Run("CatchUpFromLastEventID", func(t *testing.T) {
		e.app.Notify.User(ctx, alice.ID, notify.Note{Kind: "test.missed", Title: "missed"})
		s2 := openStream(t, srv.URL+"/api/notifications/stream", aliceTok, "Last-Event-ID", lastID)
		got := []string{}
		for len(got) < 2 {
			ev := s2.next(t, 5*time.Second)
			var n map[string]any
			json.Unmarshal([]byte(ev["data"]), &n)
			got = append(got, n["title"].(string))
		}
		if got[0] != "New message from bob2" || got[1] != "missed" {
			t.Fatalf("catch-up, oldest first: %v", got)
		}
	})

	t.Run("EndsWhenTheSessionIsRevoked", func(t *testing.T) {
		list := e.do(t, "GET", "/api/auth/sessions", aliceTok, nil).Data()["items"].([]any)
		sid := int(list[0].(map[string]any)["id"].(float64))
		if r := e.do(t, "DELETE", fmt.Sprintf("/api/auth/sessions/%d", sid), aliceTok, nil); r.Code != 200 {
			t.Fatalf("revoke: %d", r.Code)
		}
		deadline := time.After(5 * time.Second)
		for {
			select {
			case ev, ok := <-s.events:
				if !ok {
					return // the stream closed
				}
				if ev["event"] == "end" && !strings.Contains(ev["data"], "revoked") {
					t.Fatalf("end event: %v", ev)
				}
			case <-deadline:
				t.Fatal("the stream outlived its session")
			}
		}
	})
	if n := e.app.Notify.Subscribers(); n > 1 {
		t.Fatalf("%d streams still subscribed", n)
	}
}

func TestNotificationPruning(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	u, _ := e.user(t, "pat", store.RoleViewer)
	_, admin := e.user(t, "admin", store.RoleAdmin)
	e.app.Notify.User(ctx, u.ID, notify.Note{Kind: "old.read", Title: "old read"})
	e.app.Notify.User(ctx, u.ID, notify.Note{Kind: "old.unread", Title: "old unread"})
	list, _, _ := e.app.DB.ListNotifications(ctx, store.NotificationFilter{UserID: u.ID, Page: store.Page{Page: 1, PerPage: 10}})
	e.app.DB.MarkNotificationRead(ctx, u.ID, list[1].ID) // "old read"
	if r := e.do(t, "PUT", "/api/settings/system", admin, map[string]any{"notification_retention_days": 0}); r.Code != 422 {
		t.Fatalf("retention 0: %d", r.Code)
	}
	if r := e.do(t, "PUT", "/api/settings/system", admin, map[string]any{"notification_retention_days": 7}); r.Code != 200 || r.Data()["notification_retention_days"].(float64) != 7 {
		t.Fatalf("retention: %d %s", r.Code, r.Body)
	}
	e.clock.Advance(6 * 24 * time.Hour)
	e.app.Notify.User(ctx, u.ID, notify.Note{Kind: "new.read", Title: "new read"})
	fresh, _, _ := e.app.DB.ListNotifications(ctx, store.NotificationFilter{UserID: u.ID, Page: store.Page{Page: 1, PerPage: 1}})
	e.app.DB.MarkNotificationRead(ctx, u.ID, fresh[0].ID)
	e.clock.Advance(2 * 24 * time.Hour)
	hctx, release := e.app.DB.Hold(ctx)
	err := e.app.Prune(hctx)
	release()
	if err != nil {
		t.Fatal(err)
	}
	tok := e.login(t, "pat@example.com", "password-pat")
	var titles []string
	for _, it := range e.do(t, "GET", "/api/notifications", tok, nil).Data()["items"].([]any) {
		titles = append(titles, it.(map[string]any)["title"].(string))
	}
	if strings.Join(titles, ",") != "new read,old unread" {
		t.Fatalf("after pruning: %v", titles)
	}
}

// Catching up from Last-Event-ID delivers every missed notification, oldest
// first, past one page, and none twice.
func TestNotificationStreamCatchUpPages(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.app.DB.Now = func() time.Time { return time.Now().UTC() }
	srv := httptest.NewServer(e.h)
	t.Cleanup(srv.Close) // after the stream's body is closed (cleanups run last first)
	ctx := context.Background()
	u, tok := e.user(t, "pat", store.RoleViewer)
	e.app.Notify.User(ctx, u.ID, notify.Note{Kind: "k", Title: "seen"})
	first, _, _ := e.app.DB.ListNotifications(ctx, store.NotificationFilter{UserID: u.ID, Page: store.Page{Page: 1, PerPage: 1}})
	const missed = 250
	for i := 1; i <= missed; i++ {
		e.app.Notify.User(ctx, u.ID, notify.Note{Kind: "k", Title: fmt.Sprintf("missed %d", i)})
	}
	s := openStream(t, srv.URL+"/api/notifications/stream", tok, "Last-Event-ID", fmt.Sprint(first[0].ID))
	e.app.Notify.User(ctx, u.ID, notify.Note{Kind: "k", Title: "live"})
	var titles []string
	for len(titles) < missed+1 {
		ev := s.next(t, 5*time.Second)
		var n map[string]any
		json.Unmarshal([]byte(ev["data"]), &n)
		titles = append(titles, n["title"].(string))
	}
	for i := 0; i < missed; i++ {
		if titles[i] != fmt.Sprintf("missed %d", i+1) {
			t.Fatalf("catch-up item %d is %q", i, titles[i])
		}
	}
	if titles[missed] != "live" {
		t.Fatalf("after the catch-up: %q", titles[missed])
	}
	select {
	case ev := <-s.events:
		if ev["event"] == "notification" {
			t.Fatalf("sent twice: %v", ev)
		}
	case <-time.After(100 * time.Millisecond):
	}
}

// A restore ends every open stream: what it said may no longer be true.
func TestNotificationStreamEndsOnRestore(t *testing.T) {
	restoresOnSQLite(t)
	e := newEnv(t)
	e.app.DB.Now = func() time.Time { return time.Now().UTC() }
	srv := httptest.NewServer(e.h)
	t.Cleanup(srv.Close)
	_, root := e.user(t, "root", store.RoleSuperAdmin)
	_, viewer := e.user(t, "viewer", store.RoleViewer)
	name := e.do(t, "POST", "/api/backup", root, nil).Data()["name"].(string)
	s := openStream(t, srv.URL+"/api/notifications/stream", viewer)
	for e.app.Notify.Subscribers() == 0 {
		time.Sleep(time.Millisecond)
	}
	if r := e.do(t, "POST", "/api/backup/"+name+"/restore", root, nil); r.Code != 200 {
		t.Fatalf("restore: %d %s", r.Code, r.Body)
	}
	if ev := s.next(t, 5*time.Second); ev["event"] != "end" || !strings.Contains(ev["data"], "restored") {
		t.Fatalf("end: %v", ev)
	}
	if ev := s.next(t, 5*time.Second); ev != nil {
		t.Fatalf("after the end: %v", ev)
	}
}
