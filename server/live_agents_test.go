package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/copydesk/copydesk/server"
	"github.com/copydesk/copydesk/store"
)

// Tests of /api/live-agents through the real router, the job runner and a
// local provider speaking OpenAI's streamed wire format; watchers are real
// HTTP clients of an httptest server. Identifiers are prefixed "lv".

// lvProvider is a local OpenAI-compatible server whose streamed answers the
// test feeds piece by piece: each call writes the pieces sent on pieces as
// chunks until it takes lvEnd, then finishes with the usage chunk.
type lvProvider struct {
	srv      *httptest.Server
	pieces   chan string
	started  chan struct{}    // a token per call that arrived
	gone     chan struct{}    // a token per call whose caller went away
	requests chan lvRequestIn // what each call was sent
}

type lvRequestIn struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
}

// lvEnd ends a call's answer.
const lvEnd = "\x00end"

func newLVProvider(t *testing.T) *lvProvider {
	t.Helper()
	p := &lvProvider{pieces: make(chan string, 8192), started: make(chan struct{}, 16), gone: make(chan struct{}, 16),
		requests: make(chan lvRequestIn, 16)}
	p.srv = agOpenAI(t, func(w http.ResponseWriter, r *http.Request) {
		var in lvRequestIn
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			t.Errorf("provider got a body that is not JSON: %v", err)
		}
		p.requests <- in
		p.started <- struct{}{}
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := func(body string) {
			fmt.Fprintf(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o-mini\",%s}\n\n", body)
			w.(http.Flusher).Flush()
		}
		for {
			select {
			case piece := <-p.pieces:
				if piece == lvEnd {
					chunk(`"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]`)
					chunk(`"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":7,"total_tokens":19}`)
					fmt.Fprint(w, "data: [DONE]\n\n")
					return
				}
				b, _ := json.Marshal(piece)
				chunk(`"choices":[{"index":0,"delta":{"content":` + string(b) + `},"finish_reason":null}]`)
			case <-r.Context().Done():
				p.gone <- struct{}{}
				return
			}
		}
	})
	return p
}

// send feeds pieces to the call under way (or the next one).
func (p *lvProvider) send(pieces ...string) {
	for _, s := range pieces {
		p.pieces <- s
	}
}

// lvRig is agSetup's app with the job runner running, a live provider as
// the default, an agent in A, a session of it, and an HTTP server.
type lvRig struct {
	*agFixture
	prov    *lvProvider
	srv     *httptest.Server
	agentA  int64
	session int64
}

func newLVRig(t *testing.T, opts ...envOption) *lvRig {
	t.Helper()
	f := agSetup(t, opts...)
	r := &lvRig{agFixture: f, prov: newLVProvider(t)}
	agConfigure(t, f.e, r.prov.srv.URL+"/v1")
	agRunJobs(t, f.e)
	r.srv = httptest.NewServer(f.e.h)
	t.Cleanup(r.srv.Close)
	r.agentA = agID(agCreate(t, f.e, f.edATok, map[string]any{"name": "Writer", "kind": "writer", "environment_id": f.envA,
		"system_prompt": "You write about {{topic}}."}))
	r.session = r.create(t, f.edATok, map[string]any{"agent_id": r.agentA, "environment_id": f.envA, "title": "Launch post"})
	return r
}

func (r *lvRig) path(id int64, rest string) string {
	return fmt.Sprintf("/api/live-agents/sessions/%d%s", id, rest)
}

func (r *lvRig) create(t *testing.T, tok string, body map[string]any) int64 {
	t.Helper()
	res := r.e.do(t, "POST", "/api/live-agents/sessions", tok, body)
	if res.Code != 201 {
		t.Fatalf("create session: %d %s", res.Code, res.Body)
	}
	return agID(res.Data())
}

// generate asks for a generation and expects 202 with it queued.
func (r *lvRig) generate(t *testing.T, id int64, body map[string]any) int64 {
	t.Helper()
	res := r.e.do(t, "POST", r.path(id, "/generate"), r.edATok, body)
	if res.Code != 202 || res.Data()["status"] != "queued" {
		t.Fatalf("generate: %d %s", res.Code, res.Body)
	}
	// The message names the real ids, not a path template.
	want := fmt.Sprintf("generation %d queued; watch it with GET /api/live-agents/sessions/%d/stream", agID(res.Data()), id)
	if msg := res.JSON()["message"]; msg != want {
		t.Fatalf("message %q, want %q", msg, want)
	}
	return agID(res.Data())
}

// detail is GET of a session.
func (r *lvRig) detail(t *testing.T, id int64) map[string]any {
	t.Helper()
	res := r.e.do(t, "GET", r.path(id, ""), r.viewATok, nil)
	if res.Code != 200 {
		t.Fatalf("get session: %d %s", res.Code, res.Body)
	}
	return res.Data()
}

// waitIdle waits until no generation is under way in the session, and
// returns its transcript.
func (r *lvRig) waitIdle(t *testing.T, id int64) []map[string]any {
	t.Helper()
	var d map[string]any
	agWaitFor(t, "the generation to end", func() bool {
		d = r.detail(t, id)
		return d["generation"] == nil
	})
	return lvEntries(d)
}

func lvEntries(d map[string]any) []map[string]any {
	var out []map[string]any
	for _, it := range d["transcript"].([]any) {
		out = append(out, it.(map[string]any))
	}
	return out
}

// lvEvent is one Server-Sent Event of a live stream.
type lvEvent struct {
	name, id string
	data     map[string]any
}

// lvWatcher is a watcher on a real connection; its reader keeps up, so it
// never falls behind.
type lvWatcher struct {
	events chan lvEvent
	stop   context.CancelFunc
	done   chan struct{}
}

func lvWatch(t *testing.T, url, tok string) *lvWatcher {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if res.StatusCode != 200 {
		b, _ := io.ReadAll(res.Body)
		cancel()
		t.Fatalf("stream: %d %s", res.StatusCode, b)
	}
	w := &lvWatcher{events: make(chan lvEvent, 1<<16), stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		defer res.Body.Close()
		lvRead(res.Body, w.events)
	}()
	t.Cleanup(func() { cancel(); <-w.done })
	return w
}

// lvRead parses a stream into events until it ends, then closes out.
func lvRead(r io.Reader, out chan<- lvEvent) {
	defer close(out)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	var cur lvEvent
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.name != "" {
				out <- cur
			}
			cur = lvEvent{}
		case strings.HasPrefix(line, "event: "):
			cur.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "id: "):
			cur.id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "data: "):
			_ = json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &cur.data)
		}
	}
}

// next is the next event; it fails the test at the end of the stream or
// after agBound.
func (w *lvWatcher) next(t *testing.T) lvEvent {
	t.Helper()
	select {
	case ev, ok := <-w.events:
		if !ok {
			t.Fatal("the stream ended")
		}
		return ev
	case <-time.After(agBound):
		t.Fatalf("no event within %s", agBound)
		return lvEvent{}
	}
}

// until reads events up to and including the first named name.
func (w *lvWatcher) until(t *testing.T, name string) []lvEvent {
	t.Helper()
	var evs []lvEvent
	for {
		ev := w.next(t)
		evs = append(evs, ev)
		if ev.name == name {
			return evs
		}
	}
}

// lvText is what a client makes of a stream's events: the text of the
// generation of the moment (snapshot and resync replace it, generation
// starts it over, delta appends).
type lvText struct {
	text    string
	deltas  []string
	resyncs int
	status  string // of the generation, as last told
}

func (x *lvText) apply(ev lvEvent) {
	gen, _ := ev.data["generation"].(map[string]any)
	switch ev.name {
	case "snapshot", "resync":
		x.text, _ = ev.data["text"].(string)
		if ev.name == "resync" {
			x.resyncs++
		}
		if gen != nil {
			x.status, _ = gen["status"].(string)
		}
	case "generation":
		x.text, x.status = "", ev.data["status"].(string)
	case "delta":
		piece := ev.data["text"].(string)
		x.text += piece
		x.deltas = append(x.deltas, piece)
	case "done":
		x.status = ev.data["status"].(string)
	}
}

// ---- streaming ----

// Two watchers see the same events; the generation's text, usage and model
// land in the transcript, and the usage in analytics with source live and
// the session's environment. The agent's system prompt is filled in.
func TestLiveGenerationStreamsToEveryWatcher(t *testing.T) {
	t.Parallel()
	r := newLVRig(t)
	stream := r.srv.URL + r.path(r.session, "/stream")
	w1 := lvWatch(t, stream, r.edATok)
	w2 := lvWatch(t, stream, r.viewATok) // a viewer watches
	for _, w := range []*lvWatcher{w1, w2} {
		if ev := w.next(t); ev.name != "snapshot" || ev.data["generation"] != nil || ev.data["text"] != "" {
			t.Fatalf("first event: %+v", ev)
		}
	}
	// w1 hears w2 come: presence names who watches.
	var who []string
	for _, ev := range w1.until(t, "presence") {
		for _, p := range ev.data["watchers"].([]any) {
			who = append(who, p.(map[string]any)["username"].(string))
		}
	}
	if strings.Join(who, ",") != "alice,victor" {
		t.Fatalf("watchers: %v", who)
	}

	pieces := []string{"# Launch\n\n", "We ", "ship ", "on ", "Monday."}
	r.prov.send(append(pieces, lvEnd)...)
	genID := r.generate(t, r.session, map[string]any{"prompt": "Write about {{topic}}.", "variables": map[string]any{"topic": "the launch"}})
	var got [2][]lvEvent
	for i, w := range []*lvWatcher{w1, w2} {
		got[i] = w.until(t, "done")
	}
	for i := range got {
		var x lvText
		for _, ev := range got[i] {
			if ev.name == "presence" {
				continue
			}
			x.apply(ev)
		}
		if strings.Join(x.deltas, "") != strings.Join(pieces, "") || x.status != "succeeded" {
			t.Fatalf("watcher %d: deltas %q, status %s", i+1, x.deltas, x.status)
		}
	}
	// The same deltas, with the same ids, in the same order.
	ids := func(evs []lvEvent) string {
		var s []string
		for _, ev := range evs {
			if ev.name != "presence" {
				s = append(s, ev.name+"#"+ev.id)
			}
		}
		return strings.Join(s, " ")
	}
	if ids(got[0]) != ids(got[1]) {
		t.Fatalf("the watchers saw different events:\n%s\n%s", ids(got[0]), ids(got[1]))
	}
	req := <-r.prov.requests
	if req.Messages[0].Role != "system" || req.Messages[0].Content != "You write about the launch." ||
		req.Messages[len(req.Messages)-1].Content != "Write about the launch." {
		t.Fatalf("provider was sent %+v", req.Messages)
	}

	entries := r.waitIdle(t, r.session)
	if len(entries) != 2 || entries[0]["role"] != "prompt" || entries[0]["content"] != "Write about {{topic}}." ||
		entries[1]["role"] != "output" || entries[1]["status"] != "complete" || entries[1]["content"] != strings.Join(pieces, "") ||
		entries[1]["model"] != "gpt-4o-mini" || agNum(entries[1]["output_tokens"]) != 7 || agNum(entries[0]["generation_id"]) != float64(genID) {
		t.Fatalf("transcript: %v", entries)
	}
	_, usage := agUsage(t, r.e, r.adminTok, "&source=live")
	if len(usage) != 1 || agNum(usage[0]["environment_id"]) != float64(r.envA) || agNum(usage[0]["agent_id"]) != float64(r.agentA) {
		t.Fatalf("usage: %v", usage)
	}
}

// A watcher that attaches mid-generation gets what was written so far in
// one snapshot, then the live deltas: its text is whole.
func TestLiveLateWatcherCatchesUp(t *testing.T) {
	t.Parallel()
	r := newLVRig(t)
	stream := r.srv.URL + r.path(r.session, "/stream")
	early := lvWatch(t, stream, r.edATok)
	early.until(t, "snapshot")
	r.generate(t, r.session, map[string]any{"prompt": "Write."})
	r.prov.send("one ", "two ", "three ")
	var seen lvText
	for strings.Count(seen.text, " ") < 3 {
		seen.apply(early.next(t))
	}
	late := lvWatch(t, stream, r.viewATok)
	first := late.next(t)
	gen, _ := first.data["generation"].(map[string]any)
	if first.name != "snapshot" || first.data["text"] != "one two three " || gen == nil || gen["status"] != "running" {
		t.Fatalf("late watcher's first event: %+v", first)
	}
	r.prov.send("four.", lvEnd)
	x := lvText{}
	x.apply(first)
	for _, ev := range late.until(t, "done") {
		x.apply(ev)
	}
	if x.text != "one two three four." || x.status != "succeeded" || x.resyncs != 0 {
		t.Fatalf("late watcher: %+v", x)
	}
}

// smallBuffers makes every accepted connection's send buffer small, so a
// client that does not read blocks the server's writes after a few KB.
type smallBuffers struct{ net.Listener }

func (l smallBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(4096)
	}
	return c, err
}

// A watcher that does not read is resynced with the whole text rather
// than cut off or given a text with holes, and the generation does not
// wait for it.
//
// It is deterministic: the slow watcher reads nothing until the
// generation has ended, and the generation's events (2,000 deltas, some
// 250 KB) are far more than its queue (128 events) and both sockets'
// buffers (set small) hold.
func TestLiveSlowWatcherIsResynced(t *testing.T) {
	t.Parallel()
	r := newLVRig(t)
	srv := httptest.NewUnstartedServer(r.e.h)
	srv.Listener = smallBuffers{srv.Listener}
	srv.Start()
	t.Cleanup(srv.Close)

	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	_ = conn.(*net.TCPConn).SetReadBuffer(4096)
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: copydesk\r\nAuthorization: Bearer %s\r\n\r\n", r.path(r.session, "/stream"), r.viewATok)
	slow, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil || slow.StatusCode != 200 {
		t.Fatalf("slow watcher: %v %v", slow, err)
	}
	other := lvWatch(t, r.srv.URL+r.path(r.session, "/stream"), r.edATok)

	var want strings.Builder
	for i := range 2000 {
		piece := fmt.Sprintf("piece %04d of a long answer that fills buffers quickly. ", i)
		want.WriteString(piece)
		r.prov.send(piece)
	}
	r.prov.send(lvEnd)
	r.generate(t, r.session, map[string]any{"prompt": "Write a lot."})
	entries := r.waitIdle(t, r.session)
	if out := entries[len(entries)-1]; out["status"] != "complete" || out["content"] != want.String() {
		t.Fatalf("the generation did not finish whole: %v", truncate(fmt.Sprint(out), 300))
	}

	// A watcher that reads as it comes has the whole text too (whether it
	// kept up with every delta depends on the machine: it may have been
	// resynced as well).
	var ox lvText
	for _, ev := range other.until(t, "done") {
		ox.apply(ev)
	}
	if ox.text != want.String() {
		t.Fatalf("reading watcher: %d deltas, %d resyncs, %d of %d bytes", len(ox.deltas), ox.resyncs, len(ox.text), want.Len())
	}

	// Only now does the slow watcher read: what its socket held, then the
	// resync that replaced its queue, then what followed.
	events := make(chan lvEvent, 1<<16)
	go lvRead(slow.Body, events)
	var sx lvText
	for sx.status != "succeeded" {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatalf("the slow watcher's stream ended: %+v", sx)
			}
			sx.apply(ev)
		case <-time.After(agBound):
			t.Fatalf("the slow watcher got no end: %d resyncs, %d bytes", sx.resyncs, len(sx.text))
		}
	}
	if sx.resyncs == 0 || sx.text != want.String() {
		t.Fatalf("slow watcher: %d resyncs, %d deltas, text %d of %d bytes", sx.resyncs, len(sx.deltas), len(sx.text), want.Len())
	}
}

// ---- cancel, one at a time, closed sessions ----

// Cancel stops the call and keeps what was written, as the generation's
// output (cancelled) and in the transcript (incomplete); watchers get the
// end. A second generation while one runs is a 409; after the cancel the
// session generates again.
func TestLiveCancelKeepsPartialOutput(t *testing.T) {
	t.Parallel()
	r := newLVRig(t)
	w := lvWatch(t, r.srv.URL+r.path(r.session, "/stream"), r.viewATok)
	genID := r.generate(t, r.session, map[string]any{"prompt": "Write."})
	r.prov.send("Half ", "a ", "story")
	var x lvText
	for x.text != "Half a story" {
		x.apply(w.next(t))
	}
	if res := r.e.do(t, "POST", r.path(r.session, "/generate"), r.edATok, map[string]any{"prompt": "Another"}); res.Code != 409 ||
		!strings.Contains(res.Detail(), "already under way") {
		t.Fatalf("second generation: %d %s", res.Code, res.Body)
	}
	if res := r.e.do(t, "POST", r.path(r.session, "/cancel"), r.viewATok, nil); res.Code != 403 {
		t.Fatalf("viewer cancel: %d %s", res.Code, res.Body)
	}
	res := r.e.do(t, "POST", r.path(r.session, "/cancel"), r.edATok, nil)
	if res.Code != 200 || res.Data()["status"] != "cancelled" || res.Data()["output"] != "Half a story" ||
		res.Data()["error"] != "cancelled by alice" || agID(res.Data()) != genID {
		t.Fatalf("cancel: %d %s", res.Code, res.Body)
	}
	// The answer shows what is stored: the model and the cut call's
	// (estimated) usage, recorded before the answer.
	if d := res.Data(); d["model"] == "" || agNum(d["output_tokens"]) == 0 || d["usage_estimated"] != true {
		t.Fatalf("cancel answers without the call's model and usage: %s", res.Body)
	}
	agWaitChan(t, r.prov.gone, "the provider call being cut")
	for _, ev := range w.until(t, "done") {
		x.apply(ev)
	}
	if x.status != "cancelled" || x.text != "Half a story" {
		t.Fatalf("watcher: %+v", x)
	}
	entries := r.waitIdle(t, r.session)
	if out := entries[1]; out["status"] != "incomplete" || out["content"] != "Half a story" || out["error"] != "cancelled by alice" ||
		out["stop_reason"] != "cancelled" || out["truncated"] != false {
		t.Fatalf("transcript: %v", entries)
	}
	if res := r.e.do(t, "POST", r.path(r.session, "/cancel"), r.edATok, nil); res.Code != 409 || !strings.Contains(res.Detail(), "no generation") {
		t.Fatalf("cancel again: %d %s", res.Code, res.Body)
	}
	// The usage of the cut call is recorded, estimated from its text, as
	// cancelled: not as an error.
	var usage []map[string]any
	agWaitFor(t, "the cut call's usage", func() bool {
		_, usage = agUsage(t, r.e, r.adminTok, "&source=live")
		return len(usage) == 1
	})
	if u := usage[0]; u["status"] != "cancelled" || u["estimated"] != true || agNum(u["output_tokens"]) == 0 {
		t.Fatalf("usage of the cancelled call: %v", u)
	}

	// The next generation gets the session's history: only exchanges that
	// succeeded, so not the cancelled one.
	r.prov.send("Done.", lvEnd)
	r.generate(t, r.session, map[string]any{"prompt": "Start over."})
	r.waitIdle(t, r.session)
	<-r.prov.requests
	if req := <-r.prov.requests; len(req.Messages) != 2 || req.Messages[1].Content != "Start over." {
		t.Fatalf("second call: %+v", req.Messages)
	}
	r.prov.send("More.", lvEnd)
	r.generate(t, r.session, map[string]any{"prompt": "Go on."})
	r.waitIdle(t, r.session)
	req := <-r.prov.requests
	var roles []string
	for _, m := range req.Messages {
		roles = append(roles, m.Role+":"+m.Content)
	}
	if strings.Join(roles, "|") != "system:You write about {{topic}}.|user:Start over.|assistant:Done.|user:Go on." {
		t.Fatalf("third call: %v", roles)
	}
}

// Closing cancels a generation under way (its text kept), ends every
// stream with `closed`, and refuses generations and watchers afterwards;
// the transcript stays readable.
func TestLiveCloseEndsSession(t *testing.T) {
	t.Parallel()
	r := newLVRig(t)
	w := lvWatch(t, r.srv.URL+r.path(r.session, "/stream"), r.viewATok)
	r.generate(t, r.session, map[string]any{"prompt": "Write."})
	r.prov.send("Begun")
	var x lvText
	for x.text != "Begun" {
		x.apply(w.next(t))
	}
	res := r.e.do(t, "POST", r.path(r.session, "/close"), r.edATok, nil)
	if res.Code != 200 || res.Data()["status"] != "closed" || res.Data()["closed_at"] == nil {
		t.Fatalf("close: %d %s", res.Code, res.Body)
	}
	evs := w.until(t, "closed")
	if last := evs[len(evs)-1]; !strings.Contains(last.data["detail"].(string), "closed by alice") {
		t.Fatalf("closed: %+v", last)
	}
	if _, ok := <-w.events; ok {
		t.Fatal("the stream went on after closed")
	}
	entries := r.waitIdle(t, r.session)
	if out := entries[1]; out["status"] != "incomplete" || out["content"] != "Begun" || !strings.Contains(out["error"].(string), "closed by alice") {
		t.Fatalf("transcript: %v", entries)
	}
	cases := []struct {
		name, method, path string
		body               any
		code               int
		detail             string
	}{
		{"Generate", "POST", r.path(r.session, "/generate"), map[string]any{"prompt": "More"}, 409, "is closed"},
		{"Watch", "GET", r.path(r.session, "/stream"), nil, 409, "is closed"},
		{"Cancel", "POST", r.path(r.session, "/cancel"), nil, 409, "no generation"},
		{"CloseAgain", "POST", r.path(r.session, "/close"), nil, 200, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := r.e.do(t, c.method, c.path, r.edATok, c.body)
			if res.Code != c.code || !strings.Contains(res.Detail(), c.detail) {
				t.Fatalf("%d %s; want %d with %q", res.Code, res.Body, c.code, c.detail)
			}
		})
	}
	if res := r.e.do(t, "GET", "/api/live-agents/sessions?status=closed", r.viewATok, nil); agNum(res.Data()["total"]) != 1 {
		t.Fatalf("closed sessions: %s", res.Body)
	}
	if res := r.e.do(t, "DELETE", r.path(r.session, ""), r.edATok, nil); res.Code != 200 {
		t.Fatalf("delete: %d %s", res.Code, res.Body)
	}
	if res := r.e.do(t, "GET", r.path(r.session, ""), r.edATok, nil); res.Code != 404 {
		t.Fatalf("deleted session: %d %s", res.Code, res.Body)
	}
}

// ---- sessions, tenancy and roles ----

func TestLiveSessionRules(t *testing.T) {
	t.Parallel()
	r := newLVRig(t)
	agentB := agID(agCreate(t, r.e, r.edBTok, map[string]any{"name": "B writer", "kind": "writer", "environment_id": r.envB}))
	global := agID(agCreate(t, r.e, r.adminTok, map[string]any{"name": "Global", "kind": "seo"}))
	sessB := r.create(t, r.edBTok, map[string]any{"agent_id": agentB, "environment_id": r.envB})
	cases := []struct {
		name, method, path, tok string
		body                    any
		code                    int
		detail                  string
	}{
		{"CreateDefaultTitle", "POST", "/api/live-agents/sessions", r.edATok, map[string]any{"agent_id": global, "environment_id": r.envA}, 201, ""},
		{"CreateViewer", "POST", "/api/live-agents/sessions", r.viewATok, map[string]any{"agent_id": r.agentA, "environment_id": r.envA}, 403, ""},
		{"CreateOtherEnvironment", "POST", "/api/live-agents/sessions", r.edATok, map[string]any{"agent_id": r.agentA, "environment_id": r.envB}, 422, "environment_id"},
		{"CreateUnseenAgent", "POST", "/api/live-agents/sessions", r.edATok, map[string]any{"agent_id": agentB, "environment_id": r.envA}, 422, "agent_id: no agent"},
		{"CreateAgentNotThere", "POST", "/api/live-agents/sessions", r.edATok, map[string]any{"agent_id": r.agentA, "environment_id": r.envC}, 422, "not assigned"},
		{"CreateBadTitle", "POST", "/api/live-agents/sessions", r.edATok, map[string]any{"agent_id": r.agentA, "environment_id": r.envA, "title": "a\u202eb"}, 422, "title"},
		{"CreateNoAgent", "POST", "/api/live-agents/sessions", r.edATok, map[string]any{"environment_id": r.envA}, 422, "agent_id"},
		{"GetOtherEnvironment", "GET", r.path(sessB, ""), r.edATok, nil, 404, "not found"},
		{"WatchOtherEnvironment", "GET", r.path(sessB, "/stream"), r.viewATok, nil, 404, "not found"},
		{"GenerateOtherEnvironment", "POST", r.path(sessB, "/generate"), r.edATok, map[string]any{"prompt": "x"}, 404, "not found"},
		{"GenerateViewer", "POST", r.path(r.session, "/generate"), r.viewATok, map[string]any{"prompt": "x"}, 403, ""},
		{"GenerateEmptyPrompt", "POST", r.path(r.session, "/generate"), r.edATok, map[string]any{"prompt": "  "}, 422, "prompt"},
		{"GenerateUnknownField", "POST", r.path(r.session, "/generate"), r.edATok, map[string]any{"prompt": "x", "stream": true}, 422, "stream"},
		{"CloseViewer", "POST", r.path(r.session, "/close"), r.viewATok, nil, 403, ""},
		{"DeleteOtherEnvironment", "DELETE", r.path(sessB, ""), r.edATok, nil, 404, "not found"},
		{"ListOtherEnvironment", "GET", fmt.Sprintf("/api/live-agents/sessions?environment_id=%d", r.envB), r.viewATok, nil, 404, "not found"},
		{"ListBadStatus", "GET", "/api/live-agents/sessions?status=paused", r.viewATok, nil, 422, "status"},
		{"Missing", "GET", r.path(999999, ""), r.adminTok, nil, 404, "not found"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := r.e.do(t, c.method, c.path, c.tok, c.body)
			if res.Code != c.code || !strings.Contains(res.Detail(), c.detail) {
				t.Fatalf("%d %s; want %d with %q", res.Code, res.Body, c.code, c.detail)
			}
			if c.name == "CreateDefaultTitle" && res.Data()["title"] != "Live session with Global" {
				t.Fatalf("title: %s", res.Body)
			}
		})
	}
	// Lists: each sees their environments' sessions, newest first.
	list := func(tok, query string) []int64 {
		res := r.e.do(t, "GET", "/api/live-agents/sessions"+query, tok, nil)
		if res.Code != 200 {
			t.Fatalf("list: %d %s", res.Code, res.Body)
		}
		var ids []int64
		for _, it := range agItems(res.Data()) {
			ids = append(ids, agID(it))
		}
		return ids
	}
	if got := list(r.viewATok, ""); len(got) != 2 || got[1] != r.session {
		t.Fatalf("viewer A lists %v", got)
	}
	if got := list(r.adminTok, fmt.Sprintf("?environment_id=%d&status=open", r.envB)); len(got) != 1 || got[0] != sessB {
		t.Fatalf("admin lists B: %v", got)
	}
	// By last activity: a generation asked for moves the older session up.
	r.prov.send("Hi.", lvEnd)
	r.generate(t, r.session, map[string]any{"prompt": "Hello"})
	r.waitIdle(t, r.session)
	if got := list(r.viewATok, "?sort=-updated_at"); len(got) != 2 || got[0] != r.session {
		t.Fatalf("by last activity: %v", got)
	}
	if got := list(r.viewATok, "?sort=created_at"); len(got) != 2 || got[0] != r.session {
		t.Fatalf("oldest first: %v", got)
	}
	if res := r.e.do(t, "GET", "/api/live-agents/sessions?sort=title", r.viewATok, nil); res.Code != 422 || !strings.Contains(res.Detail(), "sort") {
		t.Fatalf("unknown sort: %d %s", res.Code, res.Body)
	}

	// A session whose agent went cannot generate, and says why.
	if res := r.e.do(t, "DELETE", fmt.Sprintf("/api/agents/%d", agentB), r.edBTok, nil); res.Code != 200 {
		t.Fatalf("delete agent: %d %s", res.Code, res.Body)
	}
	if res := r.e.do(t, "POST", r.path(sessB, "/generate"), r.edBTok, map[string]any{"prompt": "x"}); res.Code != 409 ||
		!strings.Contains(res.Detail(), "was deleted") {
		t.Fatalf("generate without agent: %d %s", res.Code, res.Body)
	}
	if d := r.e.do(t, "GET", r.path(sessB, ""), r.edBTok, nil).Data(); d["session"].(map[string]any)["agent_id"] != nil {
		t.Fatalf("session of a deleted agent: %v", d)
	}
}

// A watcher that loses the environment is ended at the next heartbeat.
func TestLiveStreamEndsWhenEnvironmentIsRevoked(t *testing.T) {
	t.Parallel()
	r := newLVRig(t, func(c *server.Config) { c.StreamHeartbeat = 30 * time.Millisecond })
	w := lvWatch(t, r.srv.URL+r.path(r.session, "/stream"), r.viewATok)
	w.until(t, "snapshot")
	if _, err := r.e.app.DB.SetUserEnvironments(context.Background(), r.viewA.ID, nil); err != nil {
		t.Fatal(err)
	}
	evs := w.until(t, "end")
	if end := evs[len(evs)-1]; !strings.Contains(end.data["detail"].(string), "not found") {
		t.Fatalf("end: %+v", end)
	}
}

// ---- saving ----

// The last output becomes a draft of either target in the session's
// environment, recording the generation; the title comes from its first
// heading unless given.
func TestLiveSaveAsPost(t *testing.T) {
	t.Parallel()
	r := newLVRig(t)
	project := astroProject(t, &cmsEnv{env: r.e, admin: r.adminTok}, r.envA)
	save := func(body map[string]any) resp {
		return r.e.do(t, "POST", r.path(r.session, "/save-as-post"), r.edATok, body)
	}
	if res := save(map[string]any{"target": "astro"}); res.Code != 409 || !strings.Contains(res.Detail(), "no finished output") {
		t.Fatalf("nothing yet: %d %s", res.Code, res.Body)
	}
	r.prov.send("# Launch day\n\n", "We ship on Monday.", lvEnd)
	genID := r.generate(t, r.session, map[string]any{"prompt": "Write."})
	r.waitIdle(t, r.session)

	res := save(map[string]any{"target": "wordpress"})
	wp, _ := res.Data()["wordpress"].(map[string]any)
	if res.Code != 201 || wp["title"] != "Launch day" || wp["content"] != "We ship on Monday." || wp["status"] != "draft" ||
		agNum(wp["live_generation_id"]) != float64(genID) || agNum(wp["environment_id"]) != float64(r.envA) {
		t.Fatalf("wordpress: %d %s", res.Code, res.Body)
	}
	res = save(map[string]any{"target": "astro", "title": "Our launch"})
	astro, _ := res.Data()["astro"].(map[string]any)
	if res.Code != 201 || astro["title"] != "Our launch" || agNum(astro["live_generation_id"]) != float64(genID) {
		t.Fatalf("astro: %d %s", res.Code, res.Body)
	}
	file, err := os.ReadFile(filepath.Join(project, "src", "content", "blog", astro["file"].(string)))
	if err != nil || !strings.Contains(string(file), `title: "Our launch"`) || !strings.Contains(string(file), "# Launch day\n\nWe ship on Monday.") {
		t.Fatalf("file: %s %v", file, err)
	}
	if res := r.e.do(t, "POST", r.path(r.session, "/save-as-post"), r.viewATok, map[string]any{"target": "astro"}); res.Code != 403 {
		t.Fatalf("viewer: %d %s", res.Code, res.Body)
	}
}

// A restore does not wait for a generation: the job yields (its provider
// call is cut), the stream ends saying why, and the session generates again from what the restored
// database says.
func TestLiveRestoreDoesNotWait(t *testing.T) {
	restoresOnSQLite(t)
	t.Parallel()
	r := newLVRig(t)
	_, root := r.e.user(t, "super", store.RoleSuperAdmin)
	b := r.e.do(t, "POST", "/api/backup", root, nil)
	if b.Code != 201 {
		t.Fatalf("backup: %d %s", b.Code, b.Body)
	}
	w := lvWatch(t, r.srv.URL+r.path(r.session, "/stream"), r.viewATok)
	r.generate(t, r.session, map[string]any{"prompt": "Write."})
	agWaitChan(t, r.prov.started, "the provider call")
	// The provider answers nothing until its caller goes: a restore that
	// waited for the generation to end would never return.
	if res := r.e.do(t, "POST", "/api/backup/"+b.Data()["name"].(string)+"/restore", root, nil); res.Code != 200 {
		t.Fatalf("restore: %d %s", res.Code, res.Body)
	}
	agWaitChan(t, r.prov.gone, "the provider call being cut")
	// The stream ends for the restore, or, if its heartbeat came first,
	// for the session the restore ended.
	evs := w.until(t, "end")
	if d := evs[len(evs)-1].data["detail"].(string); !strings.Contains(d, "restored") && !strings.Contains(d, "revoked") {
		t.Fatalf("end: %s", d)
	}
	tok := r.e.login(t, "alice@example.com", "password-alice") // a restore ends every session
	r.prov.send("Again.", lvEnd)
	if res := r.e.do(t, "POST", r.path(r.session, "/generate"), tok, map[string]any{"prompt": "Again"}); res.Code != 202 {
		t.Fatalf("generate after the restore: %d %s", res.Code, res.Body)
	}
}

// ---- the server stopping ----

// Stopping the server stops a generation under way without waiting for
// it: its text so far is recorded (cancelled, "the server stopped"), and
// the stream ends.
func TestLiveGenerationStopsWithTheServer(t *testing.T) {
	t.Parallel()
	f := agSetup(t, func(c *server.Config) { c.HTTPAddr = "127.0.0.1:0"; c.NoScheduler = true })
	prov := newLVProvider(t)
	agConfigure(t, f.e, prov.srv.URL+"/v1")
	agent := agID(agCreate(t, f.e, f.edATok, map[string]any{"name": "Writer", "kind": "writer", "environment_id": f.envA}))
	r := &lvRig{agFixture: f, prov: prov}
	r.session = r.create(t, f.edATok, map[string]any{"agent_id": agent, "environment_id": f.envA})
	stop := serveApp(t, f.e)
	w := lvWatch(t, "http://"+f.e.app.Addr()+r.path(r.session, "/stream"), f.viewATok)
	genID := r.generate(t, r.session, map[string]any{"prompt": "Write."})
	prov.send("So far")
	var x lvText
	for x.text != "So far" {
		x.apply(w.next(t))
	}
	if !stop("the server waited for the generation") {
		t.FailNow()
	}
	for range w.events { // the stream ends
	}
	g, err := f.e.app.DB.LiveGenerationByID(context.Background(), genID)
	if err != nil || g.Status != store.RunCancelled || g.Output != "So far" || g.Error != "the server stopped" {
		t.Fatalf("generation after the stop: %+v %v", g, err)
	}
}

// Deleting a session mid-generation stops the call; its usage is recorded
// as cancelled with the partial usage, not as an internal server error.
func TestLiveDeleteMidGenerationIsCancelled(t *testing.T) {
	t.Parallel()
	r := newLVRig(t)
	w := lvWatch(t, r.srv.URL+r.path(r.session, "/stream"), r.viewATok)
	r.generate(t, r.session, map[string]any{"prompt": "Write."})
	r.prov.send("Begun ", "here")
	var x lvText
	for x.text != "Begun here" {
		x.apply(w.next(t))
	}
	if res := r.e.do(t, "DELETE", r.path(r.session, ""), r.edATok, nil); res.Code != 200 {
		t.Fatalf("delete: %d %s", res.Code, res.Body)
	}
	var usage []map[string]any
	agWaitFor(t, "the stopped call's usage", func() bool {
		_, usage = agUsage(t, r.e, r.adminTok, "&source=live")
		return len(usage) == 1
	})
	if u := usage[0]; u["status"] != "cancelled" || u["error"] == "internal server error" || agNum(u["output_tokens"]) == 0 {
		t.Fatalf("usage of the call of a deleted session: %v", u)
	}
}
