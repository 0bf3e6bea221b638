package stream_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/copydesk/copydesk/server/stream"
)

// pipeResponse is a ResponseWriter whose writes block until the client
// reads them: a client that stops reading is a slow subscriber.
type pipeResponse struct {
	h  http.Header
	pw *io.PipeWriter
}

func (p *pipeResponse) Header() http.Header         { return p.h }
func (p *pipeResponse) Write(b []byte) (int, error) { return p.pw.Write(b) }
func (p *pipeResponse) WriteHeader(int)             {}
func (p *pipeResponse) Flush()                      {}

// sse is one parsed event (or comment).
type sse struct{ Event, ID, Data, Comment string }

type client struct {
	r      *bufio.Reader
	pr     *io.PipeReader
	header http.Header
	cancel context.CancelFunc
	done   chan struct{} // closed when Serve returns
}

// serve runs b.Serve for one client; headers are request headers.
func serve(t *testing.T, b *stream.Broker, topic string, o stream.ServeOptions, headers ...string) *client {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := httptest.NewRequestWithContext(ctx, "GET", "/stream", nil)
	for i := 0; i+1 < len(headers); i += 2 {
		r.Header.Set(headers[i], headers[i+1])
	}
	pr, pw := io.Pipe()
	w := &pipeResponse{h: http.Header{}, pw: pw}
	c := &client{r: bufio.NewReader(pr), pr: pr, header: w.h, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		defer pw.Close()
		b.Serve(w, r, topic, o)
	}()
	t.Cleanup(func() {
		cancel()
		pr.Close()
		<-c.done
	})
	if ev := c.next(t); ev.Comment != "connected" {
		t.Fatalf("first: %+v", ev)
	}
	return c
}

// next reads one event; nil at the end of the stream.
func (c *client) next(t *testing.T) *sse {
	t.Helper()
	got := make(chan *sse, 1)
	go func() {
		ev := &sse{}
		seen := false
		for {
			line, err := c.r.ReadString('\n')
			if err != nil {
				got <- nil
				return
			}
			line = strings.TrimSuffix(line, "\n")
			if line == "" {
				if seen {
					got <- ev
					return
				}
				continue
			}
			seen = true
			k, v, _ := strings.Cut(line, ":")
			v = strings.TrimPrefix(v, " ")
			switch k {
			case "":
				ev.Comment = v
			case "event":
				ev.Event = v
			case "id":
				ev.ID = v
			case "data":
				ev.Data = v
			}
		}
	}()
	select {
	case ev := <-got:
		return ev
	case <-time.After(5 * time.Second):
		t.Fatal("no event within 5s")
		return nil
	}
}

// event reads past comments to the next named event.
func (c *client) event(t *testing.T) *sse {
	t.Helper()
	for {
		ev := c.next(t)
		if ev == nil || ev.Event != "" || ev.Data != "" {
			return ev
		}
	}
}

func (c *client) ended(t *testing.T) {
	t.Helper()
	select {
	case <-c.done:
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return")
	}
}

func TestServeHeadersAndEvents(t *testing.T) {
	b := stream.New(stream.Options{})
	c := serve(t, b, "u/1", stream.ServeOptions{Encode: func(v any) any { return map[string]any{"n": v} }})
	for k, v := range map[string]string{"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"} {
		if got := c.header.Get(k); got != v {
			t.Errorf("%s: %q", k, got)
		}
	}
	if _, err := b.Publish("u/1", stream.Event{ID: 7, Name: "notification", Data: 1}); err != nil {
		t.Fatal(err)
	}
	if ev := c.event(t); *ev != (sse{Event: "notification", ID: "7", Data: `{"n":1}`}) {
		t.Fatalf("event: %+v", ev)
	}
	// The client goes: Serve returns and unsubscribes.
	c.cancel()
	c.ended(t)
	if n := b.Subscribers(""); n != 0 {
		t.Fatalf("%d subscribers after the client left", n)
	}
}

// Event data is encoded by Options.Marshal (the server's encoder).
func TestServeMarshal(t *testing.T) {
	b := stream.New(stream.Options{Marshal: func(v any) ([]byte, error) { return []byte(fmt.Sprintf(`{"v":%q}`, v)), nil }})
	c := serve(t, b, "u/1", stream.ServeOptions{})
	if _, err := b.Publish("u/1", stream.Event{ID: 1, Name: "notification", Data: "<b>"}); err != nil {
		t.Fatal(err)
	}
	if ev := c.event(t); ev.Data != `{"v":"<b>"}` {
		t.Fatalf("data: %s", ev.Data)
	}
}

// HEAD gets the stream's headers and no stream: Serve returns at once,
// without subscribing.
func TestServeHead(t *testing.T) {
	b := stream.New(stream.Options{})
	w := httptest.NewRecorder()
	b.Serve(w, httptest.NewRequest("HEAD", "/stream", nil), "u/1", stream.ServeOptions{})
	if w.Code != 200 || w.Header().Get("Content-Type") != "text/event-stream" || w.Body.Len() != 0 || b.Subscribers("") != 0 {
		t.Fatalf("%d %v %q", w.Code, w.Header(), w.Body)
	}
}

// Last-Event-ID on a live topic replays from its buffer.
func TestServeResumesFromBuffer(t *testing.T) {
	b := stream.New(stream.Options{})
	b.Open("gen", stream.TopicOptions{})
	publish(t, b, "gen", 5)
	c := serve(t, b, "gen", stream.ServeOptions{}, "Last-Event-ID", "3")
	publish(t, b, "gen", 1)
	b.Finish("gen")
	var got []string
	for ev := c.event(t); ev != nil; ev = c.event(t) {
		got = append(got, ev.ID+"="+ev.Data)
	}
	if strings.Join(got, ",") != "4=3,5=4,6=0" {
		t.Fatalf("got %v", got)
	}
	c.ended(t)
}

// A durable topic replays from the caller's store, page by page, under
// Hold; what is published during the replay is neither lost nor sent
// twice.
func TestServeDurableReplay(t *testing.T) {
	b := stream.New(stream.Options{})
	var mu sync.Mutex
	stored := []int64{}
	for id := int64(1); id <= 450; id++ {
		stored = append(stored, id)
	}
	raise := func(id int64) { // store, then publish, as the notifier does
		mu.Lock()
		stored = append(stored, id)
		mu.Unlock()
		if _, err := b.Publish("u/1", stream.Event{ID: id, Name: "n", Data: id}); err != nil {
			t.Error(err)
		}
	}
	var held, calls atomic.Int32
	replay := func(ctx context.Context, after int64, limit int) ([]stream.Event, error) {
		if held.Load() != 1 {
			t.Error("replay without the hold")
		}
		if calls.Add(1) == 1 {
			raise(451) // raised while the catch-up runs
		}
		mu.Lock()
		defer mu.Unlock()
		var out []stream.Event
		for _, id := range stored {
			if id > after && len(out) < limit {
				out = append(out, stream.Event{ID: id, Name: "n", Data: id})
			}
		}
		return out, nil
	}
	hold := func(ctx context.Context, fn func(context.Context) error) error {
		held.Add(1)
		defer held.Add(-1)
		return fn(ctx)
	}
	c := serve(t, b, "u/1", stream.ServeOptions{Replay: replay, Hold: hold}, "Last-Event-ID", "100")
	for want := int64(101); want <= 451; want++ {
		if ev := c.event(t); ev.ID != fmt.Sprint(want) {
			t.Fatalf("got %+v, want id %d", ev, want)
		}
	}
	raise(452)
	if ev := c.event(t); ev.ID != "452" {
		t.Fatalf("live after the catch-up: %+v (451 twice?)", ev)
	}
	if calls.Load() != 2 {
		t.Fatalf("%d replay pages", calls.Load())
	}
}

// A Last-Event-ID ahead of the store (from before a restore) replays
// nothing and skips nothing: the ids raised next are delivered.
func TestServeDurableReplayAheadOfStore(t *testing.T) {
	b := stream.New(stream.Options{})
	replay := func(context.Context, int64, int) ([]stream.Event, error) { return nil, nil }
	c := serve(t, b, "u/1", stream.ServeOptions{Replay: replay}, "Last-Event-ID", "80")
	if _, err := b.Publish("u/1", stream.Event{ID: 51, Name: "n", Data: 51}); err != nil {
		t.Fatal(err)
	}
	if ev := c.event(t); ev.ID != "51" {
		t.Fatalf("got %+v", ev)
	}
}

func TestServeReplayFailureEnds(t *testing.T) {
	b := stream.New(stream.Options{})
	c := serve(t, b, "u/1", stream.ServeOptions{Replay: func(context.Context, int64, int) ([]stream.Event, error) {
		return nil, errors.New("disk on fire")
	}}, "Last-Event-ID", "5")
	ev := c.event(t)
	if ev.Event != "end" || !strings.Contains(ev.Data, "the events after 5 could not be read") || strings.Contains(ev.Data, "fire") {
		t.Fatalf("end: %+v", ev)
	}
	c.ended(t)
}

// A client that stops reading is cut off once its queue is full: it gets
// what was queued, then `lagged` with the id to resume from, and resuming
// from there loses nothing.
func TestServeLagged(t *testing.T) {
	b := stream.New(stream.Options{Buffer: 3})
	b.Open("gen", stream.TopicOptions{Replay: 100})
	c := serve(t, b, "gen", stream.ServeOptions{})
	// Three events fill the queue (and Serve may have taken one or two to
	// write, blocked on the client); the rest cut it off. Publishing
	// never waits.
	publish(t, b, "gen", 10)
	var last int
	for ev := c.event(t); ev != nil; ev = c.event(t) {
		if ev.Event == "lagged" {
			want := fmt.Sprintf(`{"last_event_id":%d,"detail":"reconnect with Last-Event-ID: %d"}`, last, last)
			if ev.Data != want || ev.ID != "" {
				t.Fatalf("lagged: %+v, want %s", ev, want)
			}
			last = -last
			continue
		}
		if last < 0 || ev.ID != fmt.Sprint(last+1) {
			t.Fatalf("after %d: %+v", last, ev)
		}
		last++
	}
	if last > -3 || last < -5 {
		t.Fatalf("cut off after %d events", -last)
	}
	c.ended(t)
	again := serve(t, b, "gen", stream.ServeOptions{}, "Last-Event-ID", fmt.Sprint(-last))
	if ev := again.event(t); ev.ID != fmt.Sprint(1-last) {
		t.Fatalf("resumed with %+v", ev)
	}
}

// Each heartbeat re-checks the session under the hold; when the check
// fails the stream ends with the reason.
func TestServeHeartbeatRecheck(t *testing.T) {
	b := stream.New(stream.Options{Heartbeat: 10 * time.Millisecond})
	var checks atomic.Int32
	var held atomic.Bool
	recheck := func(ctx context.Context) error {
		if !held.Load() {
			t.Error("recheck without the hold")
		}
		if checks.Add(1) >= 3 {
			return errors.New("the session was revoked")
		}
		return nil
	}
	hold := func(ctx context.Context, fn func(context.Context) error) error {
		held.Store(true)
		defer held.Store(false)
		return fn(ctx)
	}
	c := serve(t, b, "u/1", stream.ServeOptions{Recheck: recheck, Hold: hold})
	beats := 0
	for {
		ev := c.next(t)
		if ev == nil {
			t.Fatal("ended without an end event")
		}
		if ev.Comment == "heartbeat" {
			beats++
			continue
		}
		if ev.Event != "end" || ev.Data != `{"detail":"the session was revoked"}` {
			t.Fatalf("end: %+v", ev)
		}
		break
	}
	if beats != 2 {
		t.Fatalf("%d heartbeats before the failed check", beats)
	}
	c.ended(t)
}

func TestServeEndsOnEndAllAndClose(t *testing.T) {
	b := stream.New(stream.Options{})
	b.Open("gen", stream.TopicOptions{})
	c1 := serve(t, b, "u/1", stream.ServeOptions{})
	c2 := serve(t, b, "gen", stream.ServeOptions{})
	b.EndAll("the database was restored from a backup")
	for _, c := range []*client{c1, c2} {
		if ev := c.event(t); ev.Event != "end" || ev.Data != `{"detail":"the database was restored from a backup"}` {
			t.Fatalf("end: %+v", ev)
		}
		c.ended(t)
	}
	c3 := serve(t, b, "u/1", stream.ServeOptions{})
	b.Close()
	if ev := c3.event(t); ev.Event != "end" || ev.Data != `{"detail":"the server is stopping"}` {
		t.Fatalf("end: %+v", ev)
	}
	c3.ended(t)
	late := serve(t, b, "u/1", stream.ServeOptions{})
	if ev := late.event(t); ev.Event != "end" {
		t.Fatalf("after Close: %+v", ev)
	}
	late.ended(t)
}

// Many clients of one topic over real HTTP each get every event in order.
func TestServeManyClients(t *testing.T) {
	b := stream.New(stream.Options{Buffer: 1000})
	b.Open("gen", stream.TopicOptions{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.Serve(w, r, "gen", stream.ServeOptions{})
	}))
	defer srv.Close()
	const clients, events = 20, 200
	var wg sync.WaitGroup
	var ready sync.WaitGroup
	ready.Add(clients)
	for i := 0; i < clients; i++ {
		wg.Go(func() {
			resp, err := http.Get(srv.URL)
			if err != nil {
				t.Error(err)
				ready.Done()
				return
			}
			defer resp.Body.Close()
			sc := bufio.NewScanner(resp.Body)
			sc.Scan() // ": connected"
			ready.Done()
			n := 0
			for sc.Scan() {
				if id, ok := strings.CutPrefix(sc.Text(), "id: "); ok {
					n++
					if id != fmt.Sprint(n) {
						t.Errorf("got id %s, want %d", id, n)
						return
					}
				}
			}
			if n != events {
				t.Errorf("got %d of %d", n, events)
			}
		})
	}
	ready.Wait()
	for b.Subscribers("gen") < clients {
		time.Sleep(time.Millisecond)
	}
	publish(t, b, "gen", events)
	b.Finish("gen")
	wg.Wait()
}

// ServeFinished sends a finished generation's stored outcome, without ids,
// and ends; HEAD gets the headers alone. It subscribes to nothing.
func TestServeFinished(t *testing.T) {
	b := stream.New(stream.Options{})
	o := stream.ServeOptions{Encode: func(v any) any { return map[string]any{"n": v} }}
	w := httptest.NewRecorder()
	b.ServeFinished(w, httptest.NewRequest("GET", "/stream", nil), o,
		stream.Event{ID: 9, Name: "done", Data: 1}, stream.Event{Name: "note", Data: 2})
	want := ": connected\n\nevent: done\ndata: {\"n\":1}\n\nevent: note\ndata: {\"n\":2}\n\n"
	if w.Code != 200 || w.Header().Get("Content-Type") != "text/event-stream" || w.Body.String() != want {
		t.Fatalf("%d %v %q", w.Code, w.Header(), w.Body)
	}
	w = httptest.NewRecorder()
	b.ServeFinished(w, httptest.NewRequest("HEAD", "/stream", nil), o, stream.Event{Name: "done", Data: 1})
	if w.Code != 200 || w.Header().Get("Content-Type") != "text/event-stream" || w.Body.Len() != 0 || b.Subscribers("") != 0 {
		t.Fatalf("HEAD: %d %v %q", w.Code, w.Header(), w.Body)
	}
}
