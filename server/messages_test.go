package server_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/copydesk/copydesk/store"
)

func TestMessages(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	ann, annTok := e.user(t, "ann", store.RoleViewer)
	ben, benTok := e.user(t, "ben", store.RoleEditor)
	cat, catTok := e.user(t, "cat", store.RoleViewer)
	gone, _ := e.user(t, "gone", store.RoleViewer)
	// They work on one site, so they may write to each other.
	team, err := e.app.DB.CreateEnvironment(ctx, store.NewEnvironment{Name: "Team", Slug: "team"})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []*store.User{ann, ben, cat, gone} {
		if _, err := e.app.DB.SetUserEnvironments(ctx, u.ID, []int64{team.ID}); err != nil {
			t.Fatal(err)
		}
	}
	e.app.DB.SetUserActive(ctx, gone.ID, false)

	send := func(tok string, to int64, body string) resp {
		return e.do(t, "POST", "/api/messages", tok, map[string]any{"recipient_id": to, "body": body})
	}
	bad := []struct {
		name   string
		body   any
		status int
		detail string
	}{
		{"EmptyBody", map[string]any{"recipient_id": ben.ID, "body": ""}, 422, "body"},
		{"BlankBody", map[string]any{"recipient_id": ben.ID, "body": "   \n "}, 422, "body"},
		{"HugeBody", map[string]any{"recipient_id": ben.ID, "body": strings.Repeat("é", 10001)}, 422, "at most 10000"},
		{"LongSubject", map[string]any{"recipient_id": ben.ID, "body": "x", "subject": strings.Repeat("s", 201)}, 422, "subject"},
		{"UnknownRecipient", map[string]any{"recipient_id": 99999, "body": "x"}, 422, "recipient_id"},
		{"DisabledRecipient", map[string]any{"recipient_id": gone.ID, "body": "x"}, 422, "recipient_id"},
		{"Self", map[string]any{"recipient_id": ann.ID, "body": "x"}, 422, "yourself"},
		{"NoRecipient", map[string]any{"body": "x"}, 422, "recipient_id"},
		{"ZeroRecipient", map[string]any{"recipient_id": 0, "body": "x"}, 422, "recipient_id"},
		{"StringRecipient", map[string]any{"recipient_id": "ben", "body": "x"}, 422, "recipient_id"},
		{"Malformed", `{"recipient_id": 2, "body": "x"`, 400, ""},
		{"OverTheBodyLimit", `{"recipient_id": 2, "body": "` + strings.Repeat("x", 1<<20) + `"}`, 413, ""},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			r := e.do(t, "POST", "/api/messages", annTok, c.body)
			if r.Code != c.status || !strings.Contains(r.Detail(), c.detail) {
				t.Fatalf("got %d %s", r.Code, truncate(r.Body, 200))
			}
		})
	}
	if n := e.do(t, "GET", "/api/messages/sent", annTok, nil).Data()["total"].(float64); n != 0 {
		t.Fatalf("refused messages were stored: %v", n)
	}
	if n, _ := e.app.DB.UnreadNotifications(ctx, ben.ID); n != 0 {
		t.Fatalf("refused messages notified: %d", n)
	}

	first := send(annTok, ben.ID, "Hi Ben, the draft is ready.")
	if first.Code != 201 {
		t.Fatalf("send: %d %s", first.Code, first.Body)
	}
	m := first.Data()
	if m["sender"].(map[string]any)["username"] != "ann" || m["recipient_id"].(float64) != float64(ben.ID) || m["read_at"] != nil {
		t.Fatalf("message: %v", m)
	}
	firstID := int(m["id"].(float64))
	e.clock.Advance(time.Second)
	e.do(t, "POST", "/api/messages", annTok, map[string]any{"recipient_id": ben.ID, "body": "Second note", "subject": "Re: draft"})
	e.clock.Advance(time.Second)
	send(benTok, ann.ID, "Thanks!")
	e.clock.Advance(time.Second)
	send(catTok, ben.ID, "Hello from cat")

	t.Run("Notified", func(t *testing.T) {
		list, _, _ := e.app.DB.ListNotifications(ctx, store.NotificationFilter{UserID: ben.ID, Page: store.Page{Page: 1, PerPage: 10}})
		if len(list) != 3 || list[2].Kind != "message.received" || list[2].Link != fmt.Sprintf("/api/messages/conversations/%d", ann.ID) {
			t.Fatalf("notifications of ben: %+v", list)
		}
		if !strings.Contains(list[1].Title, "Re: draft") {
			t.Fatalf("subject not in the title: %q", list[1].Title)
		}
	})
	t.Run("InboxAndSent", func(t *testing.T) {
		inbox := e.do(t, "GET", "/api/messages/inbox?per_page=2", benTok, nil).Data()
		items := inbox["items"].([]any)
		if inbox["total"].(float64) != 3 || len(items) != 2 || items[0].(map[string]any)["body"] != "Hello from cat" {
			t.Fatalf("inbox: %v", inbox)
		}
		sent := e.do(t, "GET", "/api/messages/sent", annTok, nil).Data()
		if sent["total"].(float64) != 2 {
			t.Fatalf("sent: %v", sent)
		}
		if n := e.do(t, "GET", "/api/messages/inbox?unread=true", benTok, nil).Data()["total"].(float64); n != 3 {
			t.Fatalf("unread inbox: %v", n)
		}
	})
	t.Run("Conversations", func(t *testing.T) {
		list := e.do(t, "GET", "/api/messages/conversations", benTok, nil).Data()
		items := list["items"].([]any)
		if list["total"].(float64) != 2 || len(items) != 2 {
			t.Fatalf("conversations: %v", list)
		}
		top := items[0].(map[string]any)
		if top["with"].(map[string]any)["username"] != "cat" || top["unread"].(float64) != 1 {
			t.Fatalf("most recent first: %v", top)
		}
		withAnn := items[1].(map[string]any)
		if withAnn["total"].(float64) != 3 || withAnn["unread"].(float64) != 2 || withAnn["last_message"].(map[string]any)["body"] != "Thanks!" {
			t.Fatalf("with ann: %v", withAnn)
		}
		thread := e.do(t, "GET", fmt.Sprintf("/api/messages/conversations/%d?per_page=2&page=2", ann.ID), benTok, nil).Data()
		if thread["total"].(float64) != 3 || len(thread["items"].([]any)) != 1 {
			t.Fatalf("thread page 2: %v", thread)
		}
		if r := e.do(t, "GET", "/api/messages/conversations/99999", benTok, nil); r.Code != 404 {
			t.Fatalf("unknown user: %d", r.Code)
		}
		if r := e.do(t, "GET", "/api/messages/conversations/abc", benTok, nil); r.Code != 404 {
			t.Fatalf("bad id: %d", r.Code)
		}
	})
	t.Run("Read", func(t *testing.T) {
		path := fmt.Sprintf("/api/messages/%d/read", firstID)
		if r := e.do(t, "POST", path, catTok, nil); r.Code != 404 {
			t.Fatalf("a stranger reads: %d", r.Code)
		}
		if r := e.do(t, "POST", path, annTok, nil); r.Code != 422 {
			t.Fatalf("the sender marks read: %d %s", r.Code, r.Body)
		}
		if r := e.do(t, "POST", path, benTok, nil); r.Code != 200 || r.Data()["read_at"] == nil {
			t.Fatalf("read: %d %s", r.Code, r.Body)
		}
		if n := e.do(t, "GET", "/api/messages/inbox?unread=true", benTok, nil).Data()["total"].(float64); n != 2 {
			t.Fatalf("unread after reading one: %v", n)
		}
	})
	t.Run("DeleteForOneSide", func(t *testing.T) {
		path := fmt.Sprintf("/api/messages/%d", firstID)
		if r := e.do(t, "DELETE", path, catTok, nil); r.Code != 404 {
			t.Fatalf("a stranger deletes: %d", r.Code)
		}
		if r := e.do(t, "DELETE", path, benTok, nil); r.Code != 200 {
			t.Fatalf("delete: %d %s", r.Code, r.Body)
		}
		if n := e.do(t, "GET", "/api/messages/inbox", benTok, nil).Data()["total"].(float64); n != 2 {
			t.Fatalf("ben's inbox after delete: %v", n)
		}
		if n := e.do(t, "GET", "/api/messages/sent", annTok, nil).Data()["total"].(float64); n != 2 {
			t.Fatalf("ann lost her copy: %v", n)
		}
		if r := e.do(t, "DELETE", path, benTok, nil); r.Code != 404 {
			t.Fatalf("delete twice: %d", r.Code)
		}
		if r := e.do(t, "POST", path+"/read", benTok, nil); r.Code != 404 {
			t.Fatalf("read a deleted message: %d", r.Code)
		}
		if r := e.do(t, "DELETE", path, annTok, nil); r.Code != 200 {
			t.Fatalf("the other side deletes: %d", r.Code)
		}
		if _, err := e.app.DB.MessageFor(ctx, ben.ID, int64(firstID)); !store.IsNotFound(err) {
			t.Fatalf("row kept after both sides deleted: %v", err)
		}
		for _, bad := range []string{"abc", "0", "-3"} {
			if r := e.do(t, "DELETE", "/api/messages/"+bad, benTok, nil); r.Code != 404 {
				t.Errorf("%s: %d", bad, r.Code)
			}
		}
	})
}

// TestMessageRecipients: the directory of people a user may write to (the
// active users sharing an environment with them, and the admins; everyone
// for an admin), and that a message to anyone else is refused.
func TestMessageRecipients(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	a, _ := e.app.DB.CreateEnvironment(ctx, store.NewEnvironment{Name: "A", Slug: "a"})
	b, _ := e.app.DB.CreateEnvironment(ctx, store.NewEnvironment{Name: "B", Slug: "b"})
	type person struct {
		u   *store.User
		tok string
	}
	mk := func(name string, role store.Role, envs ...int64) person {
		u, tok := e.user(t, name, role)
		if _, err := e.app.DB.SetUserEnvironments(ctx, u.ID, envs); err != nil {
			t.Fatal(err)
		}
		return person{u, tok}
	}
	amy := mk("amy", store.RoleViewer, a.ID)       // A
	bea := mk("bea", store.RoleEditor, a.ID, b.ID) // A and B
	cal := mk("cal", store.RoleViewer, b.ID)       // B
	dot := mk("dot", store.RoleViewer)             // no environment (self-registered)
	root := mk("root", store.RoleSuperAdmin)       // admins are everyone's
	zed := mk("zed", store.RoleAdmin)              //
	off := mk("off", store.RoleViewer, a.ID, b.ID) // disabled below
	if _, err := e.app.DB.UpdateUser(ctx, bea.u.ID, store.UserUpdate{FullName: ptrTo("Beatrice Quill")}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.app.DB.SetUserActive(ctx, off.u.ID, false); err != nil {
		t.Fatal(err)
	}
	names := func(tok, query string) []string {
		t.Helper()
		r := e.do(t, "GET", "/api/messages/recipients"+query, tok, nil)
		if r.Code != 200 {
			t.Fatalf("recipients%s: %d %s", query, r.Code, r.Body)
		}
		out := []string{}
		for _, it := range r.Data()["items"].([]any) {
			out = append(out, it.(map[string]any)["username"].(string))
		}
		return out
	}
	directories := []struct {
		who  person
		want string
	}{
		{amy, "[bea root zed]"},         // shares A with bea
		{bea, "[amy cal root zed]"},     // A and B: nobody twice
		{cal, "[bea root zed]"},         // B
		{dot, "[root zed]"},             // no environment: the admins
		{zed, "[amy bea cal dot root]"}, // an admin: every active user
		{root, "[amy bea cal dot zed]"},
	}
	for _, c := range directories {
		t.Run("Directory/"+c.who.u.Username, func(t *testing.T) {
			if got := fmt.Sprint(names(c.who.tok, "")); got != c.want {
				t.Fatalf("got %s, want %s", got, c.want)
			}
		})
	}
	t.Run("Fields", func(t *testing.T) {
		r := e.do(t, "GET", "/api/messages/recipients?q=quill", amy.tok, nil)
		items := r.Data()["items"].([]any)
		if len(items) != 1 {
			t.Fatalf("%s", r.Body)
		}
		it := items[0].(map[string]any)
		if it["id"] != float64(bea.u.ID) || it["username"] != "bea" || it["full_name"] != "Beatrice Quill" || len(it) != 4 {
			t.Fatalf("item %v: want id, username, full_name, avatar_url and nothing else", it)
		}
	})
	t.Run("Search", func(t *testing.T) {
		for q, want := range map[string]string{
			"?q=BEA": "[bea]", "?q=quill": "[bea]", "?q=z": "[zed]", "?q=cal": "[]", // cal is in B
			"?q=example.com": "[]", // e-mail addresses are not searched
			"?q=%25":         "[]", // a literal %
		} {
			if got := fmt.Sprint(names(amy.tok, q)); got != want {
				t.Errorf("%s: got %s, want %s", q, got, want)
			}
		}
	})
	t.Run("Pages", func(t *testing.T) {
		r := e.do(t, "GET", "/api/messages/recipients?per_page=2&page=2", zed.tok, nil)
		d := r.Data()
		if d["total"] != 5.0 || d["page"] != 2.0 || d["per_page"] != 2.0 || fmt.Sprint(names(zed.tok, "?per_page=2&page=2")) != "[cal dot]" {
			t.Fatalf("%s", r.Body)
		}
		for _, q := range []string{"?per_page=0", "?page=0", "?q=" + strings.Repeat("x", 201), "?username=amy"} {
			if r := e.do(t, "GET", "/api/messages/recipients"+q, zed.tok, nil); r.Code != 422 {
				t.Errorf("%s: %d %s", truncate(q, 20), r.Code, r.Body)
			}
		}
	})
	send := func(from person, to int64) resp {
		return e.do(t, "POST", "/api/messages", from.tok, map[string]any{"recipient_id": to, "body": "hello"})
	}
	sends := []struct {
		name     string
		from     person
		to       int64
		accepted bool
	}{
		{"SharedEnvironment", amy, bea.u.ID, true},
		{"ToAnAdmin", dot, zed.u.ID, true},
		{"AdminToAnyone", zed, dot.u.ID, true},
		{"NoSharedEnvironment", amy, cal.u.ID, false},
		{"NoEnvironmentToAViewer", dot, amy.u.ID, false},
		{"Disabled", amy, off.u.ID, false},
		{"UnknownID", amy, 99999, false},
	}
	var refused []string
	for _, c := range sends {
		t.Run("Send/"+c.name, func(t *testing.T) {
			r := send(c.from, c.to)
			if c.accepted {
				if r.Code != 201 {
					t.Fatalf("%d %s", r.Code, r.Body)
				}
				return
			}
			if r.Code != 422 || !strings.HasPrefix(r.Detail(), "recipient_id: ") || !strings.Contains(r.Detail(), "GET /api/messages/recipients") {
				t.Fatalf("%d %s", r.Code, r.Body)
			}
			refused = append(refused, r.Detail())
		})
	}
	// An id outside the directory, disabled or unknown reads the same: the
	// refusal tells nothing about who exists.
	for _, d := range refused {
		if d != refused[0] {
			t.Errorf("refusals differ: %q and %q", d, refused[0])
		}
	}
	if n, _ := e.app.DB.UnreadNotifications(ctx, cal.u.ID); n != 0 {
		t.Errorf("a refused message notified cal")
	}
}

func ptrTo[T any](v T) *T { return &v }
