package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/copydesk/copydesk/store/storetest"
)

// Two real `copydesk serve` processes on one PostgreSQL database, with one
// secret key: what one does bites at the other on the next request, and
// what one raises reaches streams on the other. Skipped without
// COPYDESK_TEST_DATABASE.

// instances starts n servers on a fresh PostgreSQL database, each with a
// data directory of its own, after creating the accounts (email, role)
// with adminPass as their password.
func instances(t *testing.T, n int, accounts ...[2]string) []string {
	t.Helper()
	db := storetest.NewPostgres(t)
	env := []string{"COPYDESK_SECRET_KEY=" + strings.Repeat("fedcba9876543210", 3), "COPYDESK_DATABASE=" + db}
	for _, a := range accounts {
		name, _, _ := strings.Cut(a[0], "@")
		_, errOut, code := runEnv(t, env, adminPass+"\n", "users", "create", "--init", "--data-dir", t.TempDir(),
			"--email", a[0], "--username", name+"_user", "--role", a[1], "--password-stdin")
		if code != 0 {
			t.Fatalf("users create %s: exit %d\n%s", a[0], code, errOut)
		}
	}
	bases := make([]string, n)
	for i := range bases {
		bases[i], _ = startServer(t, t.TempDir(), nil, env...)
	}
	return bases
}

// A session ended, a role changed and a user disabled through A bite at B
// on the next request, though B had them cached.
func TestInstancesRevokeAcross(t *testing.T) {
	storetest.RequirePostgres(t)
	t.Parallel()
	bases := instances(t, 2, [2]string{adminEmail, "super_admin"}, [2]string{"bob@example.com", "editor"},
		[2]string{"carol@example.com", "viewer"})
	a, b := bases[0], bases[1]
	admin, _ := login(t, a, adminEmail, adminPass)
	bob, _ := login(t, a, "bob@example.com", adminPass)
	carol, _ := login(t, a, "carol@example.com", adminPass)
	var carolID float64
	for _, tok := range []string{bob, carol} {
		status, body := httpJSON(t, "GET", b+"/api/auth/me", tok, nil)
		me := wantData(t, "me on B", status, body, 200)
		carolID, _ = me["id"].(float64)
	}
	// Twice on B, so that its cache holds both sessions.
	for _, tok := range []string{bob, carol} {
		status, body := httpJSON(t, "GET", b+"/api/auth/me", tok, nil)
		wantData(t, "me on B again", status, body, 200)
	}

	status, body := httpJSON(t, "POST", a+"/api/auth/logout", bob, nil)
	if status != 200 {
		t.Fatalf("logout on A: %d %v", status, body)
	}
	status, body = httpJSON(t, "GET", b+"/api/auth/me", bob, nil)
	wantError(t, "a session ended on A, on B", status, body, 401)

	status, body = httpJSON(t, "PUT", fmt.Sprintf("%s/api/auth/users/%d/role", a, int64(carolID)), admin, map[string]any{"role": "editor"})
	wantData(t, "carol made an editor on A", status, body, 200)
	status, body = httpJSON(t, "GET", b+"/api/auth/me", carol, nil)
	if me := wantData(t, "carol on B", status, body, 200); me["role"] != "editor" {
		t.Errorf("a role changed on A is %v on B", me["role"])
	}

	status, body = httpJSON(t, "PUT", fmt.Sprintf("%s/api/auth/users/%d/status", a, int64(carolID)), admin, map[string]any{"is_active": false})
	wantData(t, "disable carol on A", status, body, 200)
	status, body = httpJSON(t, "GET", b+"/api/auth/me", carol, nil)
	wantError(t, "a user disabled on A, on B", status, body, 401)
	status, body = httpJSON(t, "POST", b+"/api/auth/login", "", loginBody("carol@example.com", adminPass))
	if status == 200 {
		t.Errorf("a user disabled on A signed in on B: %v", body)
	}
}

// sse reads one event stream: each event's name and data, in order.
type sse struct {
	events chan [2]string
	cancel context.CancelFunc
}

func openSSE(t *testing.T, url, token string) *sse {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := (&http.Client{Transport: &http.Transport{Proxy: nil}}).Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		cancel()
		t.Fatalf("GET %s: %d", url, resp.StatusCode)
	}
	s := &sse{events: make(chan [2]string, 1024), cancel: cancel}
	t.Cleanup(func() { cancel(); resp.Body.Close() })
	go func() {
		defer close(s.events)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var name, data string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if name != "" || data != "" {
					s.events <- [2]string{name, data}
				}
				name, data = "", ""
			case strings.HasPrefix(line, "event: "):
				name = line[len("event: "):]
			case strings.HasPrefix(line, "data: "):
				data += line[len("data: "):]
			}
		}
	}()
	return s
}

// next waits for the next event named name, skipping others.
func (s *sse) next(t *testing.T, name string) map[string]any {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				t.Fatalf("the stream ended before a %s event", name)
			}
			if ev[0] != name {
				continue
			}
			var v map[string]any
			if err := json.Unmarshal([]byte(ev[1]), &v); err != nil {
				t.Fatalf("%s event: %v in %q", name, err, ev[1])
			}
			return v
		case <-timeout:
			t.Fatalf("no %s event within 10 s", name)
		}
	}
}

// A notification stored through A reaches its user's stream on B; the
// stream resumes on A from Last-Event-ID.
func TestInstancesNotificationAcross(t *testing.T) {
	storetest.RequirePostgres(t)
	t.Parallel()
	bases := instances(t, 2, [2]string{adminEmail, "super_admin"}, [2]string{"bob@example.com", "editor"})
	a, b := bases[0], bases[1]
	admin, _ := login(t, a, adminEmail, adminPass)
	bob, _ := login(t, b, "bob@example.com", adminPass)
	status, body := httpJSON(t, "GET", b+"/api/auth/me", bob, nil)
	bobID := wantData(t, "me", status, body, 200)["id"]

	stream := openSSE(t, b+"/api/notifications/stream", bob)
	send := func(i int) {
		status, body := httpJSON(t, "POST", a+"/api/messages", admin, map[string]any{"recipient_id": bobID, "subject": "hello", "body": fmt.Sprint("message ", i)})
		if status != 201 && status != 200 {
			t.Fatalf("message on A: %d %v", status, body)
		}
	}
	send(0)
	first := stream.next(t, "notification")
	if first["kind"] != "message.received" {
		t.Fatalf("notification on B: %v", first)
	}
	// Resuming on A from the first one's id brings the next, stored via A.
	send(1)
	second := stream.next(t, "notification")
	if second["id"].(float64) <= first["id"].(float64) {
		t.Fatalf("ids out of order: %v then %v", first["id"], second["id"])
	}
	req, _ := http.NewRequest("GET", a+"/api/notifications/stream", nil)
	req.Header.Set("Authorization", "Bearer "+bob)
	req.Header.Set("Last-Event-ID", fmt.Sprint(int64(first["id"].(float64))))
	resp, err := (&http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{Proxy: nil}}).Do(req)
	if err != nil && resp == nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	found := false
	for sc.Scan() && !found {
		found = strings.HasPrefix(sc.Text(), "id: "+fmt.Sprint(int64(second["id"].(float64))))
	}
	if !found {
		t.Errorf("Last-Event-ID %v on A did not replay notification %v", first["id"], second["id"])
	}

	// The latency across instances, written in docs/scaling.md: from the
	// message's request on A to its notification on B (the write
	// included). Only when asked: 200 round trips.
	if os.Getenv("COPYDESK_MEASURE_EVENTS") == "" {
		return
	}
	var took []time.Duration
	for i := range 200 {
		start := time.Now()
		send(i + 2)
		stream.next(t, "notification")
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	t.Logf("a notification from a request on A to a stream on B: p50 %v, p99 %v, max %v (200 events)",
		took[len(took)/2], took[len(took)*99/100], took[len(took)-1])
}

// A live session watched on A and on B: whichever instance's job runner
// takes the generation, the watcher on the other gets its whole text, the
// same as the one beside it, and who watches names both.
func TestInstancesLiveSessionAcross(t *testing.T) {
	storetest.RequirePostgres(t)
	t.Parallel()
	const model = "qwen2.5:3b"
	llm := fakeOpenAI(t, model)
	bases := instances(t, 2, [2]string{adminEmail, "super_admin"}, [2]string{"bob@example.com", "admin"})
	a, b := bases[0], bases[1]
	admin, _ := login(t, a, adminEmail, adminPass)
	bob, _ := login(t, b, "bob@example.com", adminPass)
	post := func(base, tok, path string, body any) map[string]any {
		t.Helper()
		status, out := httpJSON(t, "POST", base+path, tok, body)
		if status != 201 && status != 202 && status != 200 {
			t.Fatalf("POST %s: %d %v", path, status, out)
		}
		return out["data"].(map[string]any)
	}
	env := post(a, admin, "/api/environments", map[string]any{"name": "Garden"})["id"]
	cred := post(a, admin, "/api/configurations", map[string]any{"name": "Local model", "provider": "openai_compatible",
		"base_url": llm.URL + "/v1", "default_model": model})["id"]
	if status, out := httpJSON(t, "PUT", a+"/api/settings/ai-content", admin, map[string]any{"credential_id": cred, "model": model}); status != 200 {
		t.Fatalf("ai settings: %d %v", status, out)
	}
	agent := post(a, admin, "/api/agents", map[string]any{"environment_id": env, "name": "Writer", "kind": "writer"})["id"]
	session := post(a, admin, "/api/live-agents/sessions", map[string]any{"agent_id": agent, "environment_id": env, "title": "Compost"})["id"]
	path := fmt.Sprintf("/api/live-agents/sessions/%v/stream", session)
	onA, onB := openSSE(t, a+path, admin), openSSE(t, b+path, bob)
	onA.next(t, "snapshot")
	onB.next(t, "snapshot")
	// A hears of the watcher on B.
	for {
		p := onA.next(t, "presence")
		if ws, _ := p["watchers"].([]any); len(ws) == 2 {
			break
		}
	}
	post(b, bob, fmt.Sprintf("/api/live-agents/sessions/%v/generate", session), map[string]any{"prompt": "Three sentences on compost."})
	for name, s := range map[string]*sse{"A": onA, "B": onB} {
		var text strings.Builder
		timeout := time.After(20 * time.Second)
		for {
			var ev [2]string
			var ok bool
			select {
			case ev, ok = <-s.events:
			case <-timeout:
				t.Fatalf("the generation did not end on %s within 20 s", name)
			}
			if !ok {
				t.Fatalf("the stream on %s ended", name)
			}
			if ev[0] == "delta" {
				var d map[string]any
				_ = json.Unmarshal([]byte(ev[1]), &d)
				text.WriteString(d["text"].(string))
			}
			if ev[0] == "done" {
				break
			}
		}
		if text.String() != "Compost turns kitchen scraps into soil." {
			t.Errorf("the watcher on %s put together %q", name, text.String())
		}
	}
}
