package stream_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/copydesk/copydesk/server/stream"
)

// drain reads a subscription to its end.
func drain(t *testing.T, s *stream.Subscription) []stream.Event {
	t.Helper()
	var got []stream.Event
	timeout := time.After(5 * time.Second)
	for {
		select {
		case ev, ok := <-s.Events():
			if !ok {
				return got
			}
			got = append(got, ev)
		case <-timeout:
			t.Fatal("the subscription did not end")
		}
	}
}

func ids(evs []stream.Event) string {
	var s []string
	for _, ev := range evs {
		s = append(s, fmt.Sprint(ev.ID))
	}
	return strings.Join(s, ",")
}

func publish(t *testing.T, b *stream.Broker, topic string, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		if _, err := b.Publish(topic, stream.Event{Name: "delta", Data: i}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestPublishNumbersInOrder(t *testing.T) {
	b := stream.New(stream.Options{Buffer: 100})
	b.Open("t", stream.TopicOptions{})
	s := b.Subscribe("t", 0)
	publish(t, b, "t", 50)
	b.Finish("t")
	got := drain(t, s)
	if len(got) != 50 || got[0].ID != 1 || got[49].ID != 50 || got[7].Data != 7 {
		t.Fatalf("got %s", ids(got))
	}
	for i, ev := range got {
		if ev.ID != int64(i+1) {
			t.Fatalf("out of order: %s", ids(got))
		}
	}
	if s.Err() != nil || len(s.History()) != 0 {
		t.Fatalf("err %v, history %v", s.Err(), s.History())
	}
}

// Durable topics bring their own ids; one out of order is refused rather
// than delivered to be skipped.
func TestPublishOwnIDs(t *testing.T) {
	b := stream.New(stream.Options{})
	// Nobody listens to an unopened topic: the event goes nowhere, and
	// nothing is kept.
	if id, err := b.Publish("u/1", stream.Event{ID: 9, Name: "n"}); err != nil || id != 9 {
		t.Fatalf("%d %v", id, err)
	}
	s := b.Subscribe("u/1", 0)
	if len(s.History()) != 0 {
		t.Fatalf("history of an unopened topic: %v", s.History())
	}
	for _, id := range []int64{10, 12} {
		if _, err := b.Publish("u/1", stream.Event{ID: id, Name: "n"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.Publish("u/1", stream.Event{ID: 11, Name: "n"}); !errors.Is(err, stream.ErrOutOfOrder) {
		t.Fatalf("out of order: %v", err)
	}
	s.Close()
	if got := drain(t, s); ids(got) != "10,12" {
		t.Fatalf("got %s", ids(got))
	}
	if n := b.Subscribers(""); n != 0 {
		t.Fatalf("%d subscribers after Close", n)
	}
	s.Close() // twice is harmless
}

func TestReplayFromBuffer(t *testing.T) {
	b := stream.New(stream.Options{})
	b.Open("t", stream.TopicOptions{Replay: 10})
	publish(t, b, "t", 5)
	s := b.Subscribe("t", 2)
	if got := ids(s.History()); got != "3,4,5" {
		t.Fatalf("history %s", got)
	}
	if up := b.Subscribe("t", 5); len(up.History()) != 0 {
		t.Fatalf("up to date, history %s", ids(up.History()))
	}
	// A fresh subscriber of a topic without a snapshot starts from now.
	if fresh := b.Subscribe("t", 0); len(fresh.History()) != 0 {
		t.Fatalf("fresh, history %s", ids(fresh.History()))
	}
	publish(t, b, "t", 1)
	b.Finish("t")
	if got := ids(drain(t, s)); got != "6" {
		t.Fatalf("live %s", got)
	}
}

// Resuming from further back than the buffer: the subscriber is told what
// it missed, then gets what is kept.
func TestReplayBeyondBuffer(t *testing.T) {
	b := stream.New(stream.Options{})
	b.Open("t", stream.TopicOptions{Replay: 3})
	publish(t, b, "t", 10)
	h := b.Subscribe("t", 2).History()
	if len(h) != 4 || h[0].Name != stream.EventMissed || h[0].ID != 0 || ids(h[1:]) != "8,9,10" {
		t.Fatalf("history %+v", h)
	}
	if !strings.Contains(fmt.Sprint(h[0].Data), "after 2 are no longer kept; what follows starts at 8") {
		t.Fatalf("missed: %+v", h[0].Data)
	}
	// Still inside the buffer.
	if got := ids(b.Subscribe("t", 7).History()); got != "8,9,10" {
		t.Fatalf("history %s", got)
	}
	// An id the topic never gave (another incarnation): a fresh start.
	if h := b.Subscribe("t", 99).History(); len(h) != 0 {
		t.Fatalf("history %+v", h)
	}
}

// text is a Snapshot of a text generation: the text so far.
type text struct{ s strings.Builder }

func (x *text) Apply(ev stream.Event) { x.s.WriteString(ev.Data.(string)) }
func (x *text) Event() (stream.Event, bool) {
	return stream.Event{Name: "snapshot", Data: x.s.String()}, x.s.Len() > 0
}

// Watchers that join a generation while it runs get the text so far, then
// every delta after it: none missed, none twice.
func TestSnapshotForLateJoiners(t *testing.T) {
	b := stream.New(stream.Options{Buffer: 1000})
	b.Open("gen", stream.TopicOptions{Replay: 4, Snapshot: &text{}})
	if h := b.Subscribe("gen", 0).History(); len(h) != 0 {
		t.Fatalf("snapshot before any text: %v", h)
	}
	const deltas = 500
	var want strings.Builder
	for i := 0; i < deltas; i++ {
		fmt.Fprintf(&want, "w%d ", i)
	}
	var wg sync.WaitGroup
	results := make(chan string, 20)
	var started sync.WaitGroup
	started.Add(1)
	wg.Go(func() {
		started.Done()
		for i := 0; i < deltas; i++ {
			if _, err := b.Publish("gen", stream.Event{Name: "delta", Data: fmt.Sprintf("w%d ", i)}); err != nil {
				t.Error(err)
			}
		}
		b.Finish("gen")
	})
	started.Wait()
	for w := 0; w < 20; w++ {
		wg.Go(func() {
			time.Sleep(time.Duration(w) * 50 * time.Microsecond)
			s := b.Subscribe("gen", 0)
			var got strings.Builder
			last := int64(0)
			for _, ev := range s.History() {
				got.WriteString(ev.Data.(string))
				last = ev.ID
			}
			for ev := range s.Events() {
				if ev.ID != last+1 && last != 0 {
					t.Errorf("after %d came %d", last, ev.ID)
				}
				last = ev.ID
				got.WriteString(ev.Data.(string))
			}
			if s.Err() != nil {
				t.Errorf("ended with %v", s.Err())
			}
			results <- got.String()
		})
	}
	wg.Wait()
	close(results)
	for got := range results {
		if got != want.String() {
			t.Fatalf("a watcher got %d bytes of %d", len(got), want.Len())
		}
	}
	// A reconnect beyond the small buffer gets the snapshot, with the id
	// of the last delta.
	h := b.Subscribe("gen", 3).History()
	if len(h) != 1 || h[0].Name != "snapshot" || h[0].ID != deltas || h[0].Data != want.String() {
		t.Fatalf("snapshot: %+v", h)
	}
}

// A subscriber that does not keep up is cut off: it keeps what was queued,
// and the publisher never waits for it.
func TestLaggedSubscriberIsCutOff(t *testing.T) {
	b := stream.New(stream.Options{Buffer: 4})
	b.Open("t", stream.TopicOptions{})
	slow := b.Subscribe("t", 0)
	fast := b.Subscribe("t", 0)
	for i := 1; i <= 10; i++ {
		publish(t, b, "t", 1)
		if ev := <-fast.Events(); ev.ID != int64(i) {
			t.Fatalf("fast got %d, want %d", ev.ID, i)
		}
	}
	b.Finish("t")
	if got := drain(t, slow); ids(got) != "1,2,3,4" || !errors.Is(slow.Err(), stream.ErrLagged) {
		t.Fatalf("slow got %s, %v", ids(got), slow.Err())
	}
	if got := drain(t, fast); len(got) != 0 || fast.Err() != nil {
		t.Fatalf("fast got %s more, %v", ids(got), fast.Err())
	}
}

// On a topic with Resync, a subscriber that does not keep up is not cut
// off: what waited in its queue becomes one event with the whole text so
// far, and it goes on from there. Its text is whole; the fast one's too.
func TestSlowSubscriberIsResynced(t *testing.T) {
	b := stream.New(stream.Options{Buffer: 4})
	b.Open("t", stream.TopicOptions{Snapshot: &text{}, Resync: "resync"})
	slow := b.Subscribe("t", 0)
	fast := b.Subscribe("t", 0)
	var want strings.Builder
	for i := 1; i <= 10; i++ {
		piece := fmt.Sprintf("w%d ", i)
		want.WriteString(piece)
		if _, err := b.Publish("t", stream.Event{Name: "delta", Data: piece}); err != nil {
			t.Fatal(err)
		}
		if ev := <-fast.Events(); ev.ID != int64(i) {
			t.Fatalf("fast got %d, want %d", ev.ID, i)
		}
	}
	// The queue filled at the fifth event (resync with 1..5), then took
	// 6, 7, 8 and was full again at the ninth (resync with 1..9), then 10.
	b.Finish("t")
	got := drain(t, slow)
	if ids(got) != "9,10" || got[0].Name != "resync" || got[0].Data != "w1 w2 w3 w4 w5 w6 w7 w8 w9 " || slow.Err() != nil {
		t.Fatalf("slow got %s %+v, %v", ids(got), got, slow.Err())
	}
	if text := got[0].Data.(string) + got[1].Data.(string); text != want.String() {
		t.Fatalf("slow has %q, want %q", text, want.String())
	}
	if got := drain(t, fast); len(got) != 0 || fast.Err() != nil {
		t.Fatalf("fast got %s more, %v", ids(got), fast.Err())
	}
}

// A reader that takes events while the queue is being resynced sees each
// piece of text once: before the resync event, or inside it, never lost.
func TestResyncWhileReading(t *testing.T) {
	b := stream.New(stream.Options{Buffer: 2})
	b.Open("t", stream.TopicOptions{Snapshot: &text{}, Resync: "resync"})
	s := b.Subscribe("t", 0)
	const n = 2000
	var want strings.Builder
	done := make(chan string)
	go func() {
		var got strings.Builder
		for ev := range s.Events() {
			if ev.Name == "resync" {
				got.Reset()
			}
			got.WriteString(ev.Data.(string))
		}
		done <- got.String()
	}()
	for i := 0; i < n; i++ {
		piece := fmt.Sprintf("%d,", i)
		want.WriteString(piece)
		if _, err := b.Publish("t", stream.Event{Name: "delta", Data: piece}); err != nil {
			t.Fatal(err)
		}
	}
	b.Finish("t")
	if got := <-done; got != want.String() {
		t.Fatalf("the reader ended with %d bytes of %d", len(got), want.Len())
	}
}

func TestManySubscribers(t *testing.T) {
	b := stream.New(stream.Options{Buffer: 1000})
	const subs, events = 50, 300
	b.Open("t", stream.TopicOptions{})
	var ss []*stream.Subscription
	for i := 0; i < subs; i++ {
		ss = append(ss, b.Subscribe("t", 0))
	}
	var wg sync.WaitGroup
	for _, s := range ss {
		wg.Go(func() {
			n := int64(0)
			for ev := range s.Events() {
				if ev.ID != n+1 {
					t.Errorf("after %d came %d", n, ev.ID)
				}
				n = ev.ID
			}
			if n != events {
				t.Errorf("got %d of %d", n, events)
			}
		})
	}
	publish(t, b, "t", events)
	if n := b.Subscribers("t"); n != subs {
		t.Fatalf("%d subscribers", n)
	}
	b.Finish("t")
	wg.Wait()
}

func TestFinishAndLinger(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	b := stream.New(stream.Options{Linger: time.Minute, Now: clock})
	b.Open("run", stream.TopicOptions{Snapshot: &text{}})
	s := b.Subscribe("run", 0)
	if _, err := b.Publish("run", stream.Event{Name: "delta", Data: "all"}); err != nil {
		t.Fatal(err)
	}
	b.Finish("run")
	if got := drain(t, s); len(got) != 1 || s.Err() != nil {
		t.Fatalf("got %v, %v", got, s.Err())
	}
	if _, err := b.Publish("run", stream.Event{Name: "delta", Data: "more"}); !errors.Is(err, stream.ErrFinished) {
		t.Fatalf("publish after finish: %v", err)
	}
	// A late joiner gets the snapshot, then the end at once.
	late := b.Subscribe("run", 0)
	if h := late.History(); len(h) != 1 || h[0].Data != "all" {
		t.Fatalf("late: %v", h)
	}
	if got := drain(t, late); len(got) != 0 || late.Err() != nil {
		t.Fatalf("late got %v, %v", got, late.Err())
	}
	mu.Lock()
	now = now.Add(time.Minute)
	mu.Unlock()
	if h := b.Subscribe("run", 0).History(); len(h) != 0 {
		t.Fatalf("after the linger: %v", h)
	}
	// Opening the name again starts afresh.
	b.Open("run", stream.TopicOptions{})
	if id, _ := b.Publish("run", stream.Event{Name: "delta", Data: "x"}); id != 1 {
		t.Fatalf("reopened topic numbered %d", id)
	}
}

func TestEndAllAndClose(t *testing.T) {
	b := stream.New(stream.Options{})
	b.Open("live", stream.TopicOptions{})
	a, c := b.Subscribe("live", 0), b.Subscribe("u/1", 0)
	b.EndAll("the database was restored")
	for _, s := range []*stream.Subscription{a, c} {
		if drain(t, s); s.Err() == nil || s.Err().Error() != "the database was restored" {
			t.Fatalf("ended with %v", s.Err())
		}
	}
	// The live topic stays; its producer goes on.
	if _, err := b.Publish("live", stream.Event{Name: "x"}); err != nil {
		t.Fatal(err)
	}
	again := b.Subscribe("live", 0)
	b.Close()
	if drain(t, again); !errors.Is(again.Err(), stream.ErrClosed) {
		t.Fatalf("after Close: %v", again.Err())
	}
	late := b.Subscribe("live", 0)
	if drain(t, late); !errors.Is(late.Err(), stream.ErrClosed) {
		t.Fatalf("subscribed after Close: %v", late.Err())
	}
	if _, err := b.Publish("live", stream.Event{Name: "x"}); !errors.Is(err, stream.ErrClosed) {
		t.Fatalf("publish after Close: %v", err)
	}
	if b.Subscribers("") != 0 {
		t.Fatal("subscribers left")
	}
}

// A producer waits for its client's subscription, and only for one of its
// own topic.
func TestWaitSubscriber(t *testing.T) {
	b := stream.New(stream.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	other := b.Subscribe("runs/420", 0)
	defer other.Close()
	if b.WaitSubscriber(ctx, "runs/42") {
		t.Fatal("a subscriber of another topic counted")
	}
	came := make(chan bool, 1)
	go func() { came <- b.WaitSubscriber(context.Background(), "runs/42") }()
	time.Sleep(10 * time.Millisecond)
	s := b.Subscribe("runs/42", 0)
	defer s.Close()
	select {
	case ok := <-came:
		if !ok {
			t.Fatal("the wait failed")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the producer did not notice its subscriber")
	}
	if !b.WaitSubscriber(context.Background(), "runs/42") {
		t.Fatal("a present subscriber is not seen at once")
	}
}
