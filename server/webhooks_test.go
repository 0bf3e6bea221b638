package server_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/copydesk/copydesk/server"
	"github.com/copydesk/copydesk/server/seo/seotest"
	"github.com/copydesk/copydesk/store"
)

// Tests of /api/webhooks against a local receiver that checks every
// signature as the Standard Webhooks specification words it (not with
// copydesk's own signing code).

// hookReceiver is a webhook receiver: it answers status after delay and
// keeps every request, its signature checked against secret.
type hookReceiver struct {
	srv    *httptest.Server
	mu     sync.Mutex
	secret string
	status int
	delay  time.Duration
	got    []hookRequest
}

type hookRequest struct {
	id, timestamp string
	body          []byte
	valid         bool // the signature verified
	at            time.Time
}

func newHookReceiver(t *testing.T) *hookReceiver {
	h := &hookReceiver{status: 200}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		delay, status, secret := h.delay, h.status, h.secret
		h.got = append(h.got, hookRequest{id: r.Header.Get("webhook-id"), timestamp: r.Header.Get("webhook-timestamp"), body: body,
			valid: specVerify(secret, r.Header, body), at: time.Now()})
		h.mu.Unlock()
		time.Sleep(delay)
		w.WriteHeader(status)
		fmt.Fprintf(w, "answered %d", status)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

// specVerify: the signature is "v1," and the base64 of the HMAC-SHA256 of
// "webhook-id.webhook-timestamp.body", keyed with the base64-decoded
// secret without its "whsec_" prefix; the header lists one or more
// signatures separated by spaces, and the timestamp must be recent.
func specVerify(secret string, h http.Header, body []byte) bool {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil || len(key) == 0 {
		return false
	}
	ts, err := strconv.ParseInt(h.Get("webhook-timestamp"), 10, 64)
	if err != nil || time.Since(time.Unix(ts, 0)).Abs() > 5*time.Minute {
		return false
	}
	signed := h.Get("webhook-id") + "." + h.Get("webhook-timestamp") + "." + string(body)
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(signed))
	expected := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	for _, s := range strings.Split(h.Get("webhook-signature"), " ") {
		if hmac.Equal([]byte(s), []byte(expected)) {
			return true
		}
	}
	return false
}

func (h *hookReceiver) set(secret string, status int, delay time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.secret, h.status, h.delay = secret, status, delay
}

func (h *hookReceiver) requests() []hookRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]hookRequest(nil), h.got...)
}

// waitRequests waits until the receiver has had n requests.
func (h *hookReceiver) waitRequests(t *testing.T, n int) []hookRequest {
	t.Helper()
	deadline := time.Now().Add(agBound)
	for {
		got := h.requests()
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d requests within %s; want %d", len(got), agBound, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func hookCreate(t *testing.T, e *env, tok string, envID int64, url string, events ...string) (id int64, secret string) {
	t.Helper()
	r := e.do(t, "POST", "/api/webhooks", tok, map[string]any{"environment_id": envID, "url": url, "events": events})
	if r.Code != 201 {
		t.Fatalf("create: %d %s", r.Code, r.Body)
	}
	return agID(r.Data()), r.Data()["secret"].(string)
}

func hookDeliveries(t *testing.T, e *env, tok string, id int64) []map[string]any {
	t.Helper()
	r := e.do(t, "GET", fmt.Sprintf("/api/webhooks/%d/deliveries", id), tok, nil)
	if r.Code != 200 {
		t.Fatalf("deliveries: %d %s", r.Code, r.Body)
	}
	return agItems(r.Data())
}

// waitDelivery waits until the webhook's newest delivery has the status.
func waitDelivery(t *testing.T, e *env, tok string, id int64, status string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(agBound)
	for {
		ds := hookDeliveries(t, e, tok, id)
		if len(ds) > 0 && ds[0]["status"] == status {
			return ds[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("deliveries %v; want the newest %s", ds, status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func withWebhookRetry(d time.Duration) envOption {
	return func(c *server.Config) { c.WebhookRetryDelay = d }
}

// Create, ping, a real event (a keyword import), the log of attempts, the
// secret shown once and rotated.
func TestWebhooksDeliverSigned(t *testing.T) {
	t.Parallel()
	f := agSetup(t)
	e := f.e
	recv := newHookReceiver(t)
	agRunJobs(t, e)
	id, secret := hookCreate(t, e, f.edATok, f.envA, recv.srv.URL+"/in", "keywords.imported")
	recv.set(secret, 204, 0)
	if r := e.do(t, "GET", fmt.Sprintf("/api/webhooks/%d", id), f.edATok, nil); r.Code != 200 || strings.Contains(r.Body, secret) ||
		!strings.HasPrefix(secret, r.Data()["secret_prefix"].(string)) {
		t.Fatalf("get: %d %s", r.Code, r.Body)
	}

	if r := e.do(t, "POST", fmt.Sprintf("/api/webhooks/%d/ping", id), f.edATok, nil); r.Code != 202 || r.Data()["type"] != "webhook.ping" {
		t.Fatalf("ping: %d %s", r.Code, r.Body)
	}
	got := recv.waitRequests(t, 1)
	var body struct {
		Type      string         `json:"type"`
		Timestamp string         `json:"timestamp"`
		Data      map[string]any `json:"data"`
	}
	if err := json.Unmarshal(got[0].body, &body); err != nil || !got[0].valid || body.Type != "webhook.ping" ||
		body.Data["webhook_id"] != float64(id) || body.Data["environment_id"] != float64(f.envA) {
		t.Fatalf("ping delivery %+v %s (%v)", got[0], got[0].body, err)
	}

	kp := seotest.GoogleKeywordPlanner([]seotest.Row{{Keyword: "espresso beans", Volume: "1K – 10K"}, {Keyword: "moka pot", Volume: "100"}})
	if r := e.importFile(t, f.edATok, map[string]string{"environment_id": fmt.Sprint(f.envA)}, "kp.csv", kp); r.Code != 200 {
		t.Fatalf("import: %d %s", r.Code, r.Body)
	}
	// envB's import is nobody's business here.
	if r := e.importFile(t, f.edBTok, map[string]string{"environment_id": fmt.Sprint(f.envB)}, "kp.csv", kp); r.Code != 200 {
		t.Fatalf("import B: %d %s", r.Code, r.Body)
	}
	got = recv.waitRequests(t, 2)
	if err := json.Unmarshal(got[1].body, &body); err != nil || !got[1].valid || body.Type != "keywords.imported" ||
		body.Data["created"] != float64(2) || body.Data["environment_id"] != float64(f.envA) {
		t.Fatalf("import delivery %+v %s (%v)", got[1], got[1].body, err)
	}
	d := waitDelivery(t, e, f.edATok, id, "succeeded")
	attempts := d["attempt_list"].([]any)
	a := attempts[0].(map[string]any)
	if len(attempts) != 1 || a["status_code"] != float64(204) || d["message_id"] != got[1].id || a["error"] != "" {
		t.Errorf("delivery %v", d)
	}

	// Rotated, the new secret signs; the old one no longer verifies.
	r := e.do(t, "POST", fmt.Sprintf("/api/webhooks/%d/rotate-secret", id), f.edATok, nil)
	if r.Code != 200 || r.Data()["secret"] == secret {
		t.Fatalf("rotate: %d %s", r.Code, r.Body)
	}
	e.do(t, "POST", fmt.Sprintf("/api/webhooks/%d/ping", id), f.edATok, nil)
	if got := recv.waitRequests(t, 3); got[2].valid {
		t.Errorf("a ping after the rotation verified with the old secret")
	}
	recv.set(r.Data()["secret"].(string), 200, 0)
	e.do(t, "POST", fmt.Sprintf("/api/webhooks/%d/ping", id), f.edATok, nil)
	if got := recv.waitRequests(t, 4); !got[3].valid {
		t.Errorf("a ping after the rotation did not verify with the new secret")
	}
	time.Sleep(200 * time.Millisecond)
	if n := len(recv.requests()); n != 4 {
		t.Errorf("%d requests; want 4 (no event of envB, no duplicate)", n)
	}
}

// A receiver answering 500 is tried again with a growing delay and the
// same webhook-id; once it answers 200 the delivery succeeds, and a
// re-send sends it once more.
func TestWebhooksRetryAfter500(t *testing.T) {
	t.Parallel()
	f := agSetup(t, withWebhookRetry(100*time.Millisecond))
	e := f.e
	recv := newHookReceiver(t)
	agRunJobs(t, e)
	id, secret := hookCreate(t, e, f.edATok, f.envA, recv.srv.URL, "post.published")
	recv.set(secret, 500, 0)
	e.do(t, "POST", fmt.Sprintf("/api/webhooks/%d/ping", id), f.edATok, nil)
	got := recv.waitRequests(t, 4)
	recv.set(secret, 200, 0)
	for i := range got {
		if !got[i].valid || got[i].id != got[0].id {
			t.Errorf("attempt %d: %+v", i+1, got[i])
		}
	}
	// 100 ms, 200 ms, 400 ms: each wait at least the one before (the
	// runner may start late, never early).
	for i, want := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond} {
		if gap := got[i+1].at.Sub(got[i].at); gap < want {
			t.Errorf("attempt %d came %s after the one before; want at least %s", i+2, gap, want)
		}
	}
	d := waitDelivery(t, e, f.edATok, id, "succeeded")
	attempts := d["attempt_list"].([]any)
	if len(attempts) < 5 {
		t.Fatalf("%d attempts", len(attempts))
	}
	for _, a := range attempts[:4] {
		a := a.(map[string]any)
		if a["status_code"] != float64(500) || a["response"] != "answered 500" || !strings.Contains(a["error"].(string), "500") {
			t.Errorf("attempt %v", a)
		}
	}
	w := e.do(t, "GET", fmt.Sprintf("/api/webhooks/%d", id), f.edATok, nil).Data()
	if w["consecutive_failures"] != float64(0) || w["failing_since"] != nil || w["last_success_at"] == nil {
		t.Errorf("webhook %v", w)
	}
	n := len(recv.requests())
	r := e.do(t, "POST", fmt.Sprintf("/api/webhooks/%d/deliveries/%d/resend", id, agID(d)), f.edATok, nil)
	if r.Code != 202 || r.Data()["status"] != "pending" {
		t.Fatalf("resend: %d %s", r.Code, r.Body)
	}
	if got := recv.waitRequests(t, n+1); got[n].id != got[0].id || !got[n].valid {
		t.Errorf("re-sent %+v", got[n])
	}
	// Another webhook's delivery is not this one's.
	other, _ := hookCreate(t, e, f.edATok, f.envA, recv.srv.URL, "post.failed")
	if r := e.do(t, "POST", fmt.Sprintf("/api/webhooks/%d/deliveries/%d/resend", other, agID(d)), f.edATok, nil); r.Code != 404 {
		t.Errorf("resend through another webhook: %d %s", r.Code, r.Body)
	}
}

// A receiver that takes seconds to answer holds no request of the API.
func TestWebhooksSlowReceiverDoesNotSlowTheAPI(t *testing.T) {
	t.Parallel()
	f := agSetup(t)
	e := f.e
	recv := newHookReceiver(t)
	agRunJobs(t, e)
	id, secret := hookCreate(t, e, f.edATok, f.envA, recv.srv.URL, "keywords.imported")
	recv.set(secret, 200, 3*time.Second)
	kp := seotest.GoogleKeywordPlanner([]seotest.Row{{Keyword: "pour over", Volume: "100"}})
	r := e.do(t, "POST", fmt.Sprintf("/api/webhooks/%d/ping", id), f.edATok, nil)
	if r.Code != 202 {
		t.Fatalf("ping: %d", r.Code)
	}
	ping := agID(r.Data())
	recv.waitRequests(t, 1) // the receiver is now sleeping on it
	for i := range 3 {
		t0 := time.Now()
		if r := e.importFile(t, f.edATok, map[string]string{"environment_id": fmt.Sprint(f.envA)}, "kp.csv", kp); r.Code != 200 {
			t.Fatalf("import: %d %s", r.Code, r.Body)
		}
		if r := e.do(t, "GET", "/api/webhooks", f.edATok, nil); r.Code != 200 {
			t.Fatalf("list: %d", r.Code)
		}
		if took := time.Since(t0); took > 2*time.Second {
			t.Errorf("requests %d took %s while the receiver slept", i, took)
		}
	}
	// The requests were answered while the ping was still under way.
	for _, d := range hookDeliveries(t, e, f.edATok, id) {
		if agID(d) == ping && d["status"] != "sending" {
			t.Errorf("the ping is %s; want still sending (the receiver sleeps 3 s)", d["status"])
		}
	}
	waitDelivery(t, e, f.edATok, id, "succeeded")
}

// A server stopped while a delivery is under way lets it finish and
// records the answer: started again on the same data, it does not send
// it a second time.
func TestWebhooksRestartMidDelivery(t *testing.T) {
	t.Parallel()
	f := agSetup(t)
	e := f.e
	dir := e.app.Config.DataDir
	recv := newHookReceiver(t)
	id, secret := hookCreate(t, e, f.edATok, f.envA, recv.srv.URL, "keywords.imported")
	recv.set(secret, 200, 1500*time.Millisecond)
	stop := startJobs(t, e)
	e.do(t, "POST", fmt.Sprintf("/api/webhooks/%d/ping", id), f.edATok, nil)
	recv.waitRequests(t, 1)
	stop() // mid-request: the receiver answers 1.5 s later
	if err := e.app.Close(); err != nil {
		t.Fatal(err)
	}
	again := openEnv(t, dir)
	again.app.DB.Now = func() time.Time { return time.Now().UTC() }
	startJobs(t, again)
	time.Sleep(time.Second)
	ds := hookDeliveries(t, again, again.login(t, "alice@example.com", "password-alice"), id)
	if len(ds) != 1 || ds[0]["status"] != "succeeded" || len(ds[0]["attempt_list"].([]any)) != 1 {
		t.Errorf("deliveries after the restart %v", ds)
	}
	if n := len(recv.requests()); n != 1 {
		t.Errorf("%d requests; want 1 (sent once, across the restart)", n)
	}
}

// Webhook URLs go through the web sources' guard: without
// --web-sources-private a loopback address is refused when saved, and a
// name that leads there (DNS may change after it was saved) when sent.
func TestWebhooksGuard(t *testing.T) {
	t.Parallel()
	f := agSetup(t, func(c *server.Config) { c.AllowWebSourcesPrivate = false })
	e := f.e
	recv := newHookReceiver(t)
	agRunJobs(t, e)
	for _, url := range []string{recv.srv.URL, "http://localhost:8080/in", "http://[::1]/in", "http://169.254.169.254/latest"} {
		r := e.do(t, "POST", "/api/webhooks", f.edATok, map[string]any{"environment_id": f.envA, "url": url, "events": []string{"post.failed"}})
		if r.Code != 422 || !strings.Contains(r.Detail(), "not allowed") {
			t.Errorf("%s: %d %s", url, r.Code, r.Body)
		}
	}
	// Saved when it was allowed (or its name resolved elsewhere then).
	hook, err := e.app.DB.CreateWebhook(context.Background(), store.NewWebhook{EnvironmentID: f.envA, URL: recv.srv.URL, Enabled: true,
		Events: []string{"post.failed"}, SecretPrefix: "whsec_abcd",
		Seal: func(id int64) ([]byte, error) { return e.app.Keys.Seal([]byte("whsec_YWJjZA=="), store.WebhookAAD(id)) }})
	if err != nil {
		t.Fatal(err)
	}
	e.do(t, "POST", fmt.Sprintf("/api/webhooks/%d/ping", hook.ID), f.edATok, nil)
	deadline := time.Now().Add(agBound)
	d := hookDeliveries(t, e, f.edATok, hook.ID)[0]
	for d["last_error"] == "" && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		d = hookDeliveries(t, e, f.edATok, hook.ID)[0]
	}
	if !strings.Contains(d["last_error"].(string), "not allowed") || len(recv.requests()) != 0 {
		t.Errorf("delivery %v; %d requests reached the receiver", d, len(recv.requests()))
	}
}

// Viewers see no webhook; bad input is a 422, not a 500.
func TestWebhooksRules(t *testing.T) {
	t.Parallel()
	f := agSetup(t)
	e := f.e
	if r := e.do(t, "GET", "/api/webhooks", f.viewATok, nil); r.Code != 403 {
		t.Errorf("viewer list: %d", r.Code)
	}
	for _, body := range []map[string]any{
		{"environment_id": f.envA, "url": "https://hooks.example/in", "events": []string{"post.nope"}},
		{"environment_id": f.envA, "url": "https://hooks.example/in", "events": []string{}},
		{"environment_id": f.envA, "url": "mailto:ann@example.com", "events": []string{"post.failed"}},
	} {
		if r := e.do(t, "POST", "/api/webhooks", f.edATok, body); r.Code != 422 {
			t.Errorf("%v: %d %s", body, r.Code, r.Body)
		}
	}
	if r := e.do(t, "POST", "/api/webhooks", f.edATok, map[string]any{"environment_id": f.envB, "url": "https://hooks.example/in",
		"events": []string{"post.failed"}}); r.Code != 404 {
		t.Errorf("in an environment not granted: %d", r.Code)
	}
}

// An autopilot run that publishes on WordPress tells post.published and
// run.succeeded, and a pause by its owner autopilot.paused; the archetype
// generation inside the run is told of as the run.
func TestWebhooksAutopilotEvents(t *testing.T) {
	t.Parallel()
	a := newAPEnv(t, store.PostWordPress, "publish", "sourdough starter")
	recv := newHookReceiver(t)
	id, secret := hookCreate(t, a.env, a.editor, a.envA, recv.srv.URL, "post.published", "run.succeeded", "run.failed", "autopilot.paused")
	recv.set(secret, 200, 0)
	a.control(t, "start", 200)
	startJobs(t, a.env)
	var runID int64
	agWaitFor(t, "a scheduled run", func() bool {
		if list := a.runs(t); len(list) > 0 {
			runID = agID(list[0])
			return true
		}
		return false
	})
	run := a.waitRun(t, runID, "succeeded")
	a.control(t, "pause", 200)
	got := recv.waitRequests(t, 3)
	time.Sleep(200 * time.Millisecond)
	if n := len(recv.requests()); n != 3 {
		t.Errorf("%d deliveries; want 3", n)
	}
	byType := map[string]map[string]any{}
	for _, r := range got {
		var b struct {
			Type string         `json:"type"`
			Data map[string]any `json:"data"`
		}
		if err := json.Unmarshal(r.body, &b); err != nil {
			t.Fatal(err)
		}
		byType[b.Type] = b.Data
	}
	post := run["post"].(map[string]any)
	if d := byType["post.published"]; d == nil || d["target"] != "wordpress" || d["post_id"] != post["id"] || d["status"] != "publish" ||
		d["environment_id"] != float64(a.envA) {
		t.Errorf("post.published %v", d)
	}
	if d := byType["run.succeeded"]; d == nil || d["kind"] != "autopilot" || d["run_id"] != float64(runID) || d["post_id"] != post["id"] ||
		d["keyword_id"] == nil {
		t.Errorf("run.succeeded %v", d)
	}
	if d := byType["autopilot.paused"]; d == nil || d["by"] != "user" || d["reason"] != "manual" {
		t.Errorf("autopilot.paused %v", d)
	}
	if ds := hookDeliveries(t, a.env, a.editor, id); len(ds) != 3 {
		t.Errorf("%d deliveries listed", len(ds))
	}
}

// A WordPress publish tells how it ended, in the request or queued: once
// each, a queued one when its job ends.
func TestWebhooksWordPressPublish(t *testing.T) {
	t.Parallel()
	w := newWPEnv(t)
	recv := newHookReceiver(t)
	hookCreate(t, w.env, w.editor, w.envA, recv.srv.URL, "post.published", "post.failed")
	startJobs(t, w.env)
	event := func(n int) (string, map[string]any) {
		t.Helper()
		got := recv.waitRequests(t, n)
		var b struct {
			Type string         `json:"type"`
			Data map[string]any `json:"data"`
		}
		if err := json.Unmarshal(got[n-1].body, &b); err != nil {
			t.Fatal(err)
		}
		return b.Type, b.Data
	}
	p := w.post(t, map[string]any{"title": "Rye", "content": "Bread.", "status": "publish"})
	if r := w.action(t, p["id"], "publish", nil); r.Code != 200 {
		t.Fatalf("publish: %d %s", r.Code, r.Body)
	}
	if typ, d := event(1); typ != "post.published" || d["post_id"] != p["id"] || d["queued"] != false || d["target"] != "wordpress" ||
		d["remote_id"] == nil || d["status"] != "publish" {
		t.Errorf("%s %v", typ, d)
	}
	w.site.Fail = func(*http.Request) (int, string, string, bool) {
		return 403, "rest_forbidden", "Sorry, you are not allowed.", true
	}
	if r := w.action(t, p["id"], "publish", nil); r.Code < 400 {
		t.Fatalf("publish to a refusing site: %d %s", r.Code, r.Body)
	}
	if typ, d := event(2); typ != "post.failed" || d["queued"] != false || !strings.Contains(fmt.Sprint(d["error"]), "not allowed") {
		t.Errorf("%s %v", typ, d)
	}
	if r := w.action(t, p["id"], "publish", map[string]any{"queue": true}); r.Code != 202 {
		t.Fatalf("queue: %d %s", r.Code, r.Body)
	}
	if typ, d := event(3); typ != "post.failed" || d["queued"] != true {
		t.Errorf("%s %v", typ, d)
	}
	time.Sleep(300 * time.Millisecond)
	if n := len(recv.requests()); n != 3 {
		t.Errorf("%d deliveries; want 3", n)
	}
}

// An agent run tells run.succeeded or run.failed with its ids, streamed
// or queued alike; a run of another environment tells this webhook nothing.
func TestWebhooksAgentRuns(t *testing.T) {
	t.Parallel()
	f := agSetup(t)
	e := f.e
	fake := fakeOpenAI(t, func(n int, req map[string]any) (int, string) {
		if n == 2 {
			return 400, "bad request"
		}
		return 200, "Done."
	})
	agConfigure(t, e, fake.URL+"/v1")
	recv := newHookReceiver(t)
	hookCreate(t, e, f.edATok, f.envA, recv.srv.URL, "run.succeeded", "run.failed")
	agRunJobs(t, e)
	agentA := agID(agCreate(t, e, f.edATok, map[string]any{"environment_id": f.envA, "name": "Writer", "kind": "writer", "system_prompt": "Write."}))
	ok := agID(agExecute(t, e, f.edATok, agentA, map[string]any{"input": "one"}))
	agWaitRun(t, e, f.edATok, ok)
	failed := agID(agExecute(t, e, f.edATok, agentA, map[string]any{"input": "two"}))
	agWaitRun(t, e, f.edATok, failed)
	got := recv.waitRequests(t, 2)
	want := []struct {
		typ string
		run int64
	}{{"run.succeeded", ok}, {"run.failed", failed}}
	for i, w := range want {
		var b struct {
			Type string         `json:"type"`
			Data map[string]any `json:"data"`
		}
		if err := json.Unmarshal(got[i].body, &b); err != nil {
			t.Fatal(err)
		}
		if b.Type != w.typ || b.Data["kind"] != "agent" || b.Data["run_id"] != float64(w.run) || b.Data["agent_id"] != float64(agentA) {
			t.Errorf("delivery %d: %s %v", i+1, b.Type, b.Data)
		}
		if w.typ == "run.failed" && b.Data["error"] == "" {
			t.Errorf("run.failed without its error: %v", b.Data)
		}
	}
	time.Sleep(200 * time.Millisecond)
	if n := len(recv.requests()); n != 2 {
		t.Errorf("%d deliveries; want 2", n)
	}
}

// No redirect is followed: a 3xx is the receiver's answer, and a failure
// (the address it points to could be anything, the guard's included).
func TestWebhooksRedirectIsAFailure(t *testing.T) {
	t.Parallel()
	f := agSetup(t)
	e := f.e
	recv := newHookReceiver(t)
	redirect := httptest.NewServer(http.RedirectHandler(recv.srv.URL, http.StatusFound))
	t.Cleanup(redirect.Close)
	agRunJobs(t, e)
	id, _ := hookCreate(t, e, f.edATok, f.envA, redirect.URL, "post.failed")
	e.do(t, "POST", fmt.Sprintf("/api/webhooks/%d/ping", id), f.edATok, nil)
	deadline := time.Now().Add(agBound)
	d := hookDeliveries(t, e, f.edATok, id)[0]
	for d["last_status"] == nil && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		d = hookDeliveries(t, e, f.edATok, id)[0]
	}
	if d["status"] != "pending" || d["last_status"] != float64(302) || !strings.Contains(d["last_error"].(string), "302") {
		t.Errorf("delivery %v", d)
	}
	if n := len(recv.requests()); n != 0 {
		t.Errorf("the redirect was followed (%d requests)", n)
	}
}
