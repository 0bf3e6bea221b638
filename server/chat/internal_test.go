package chat

import (
	"slices"
	"strings"
	"testing"

	"github.com/copydesk/copydesk/server/stream"
	"github.com/copydesk/copydesk/store"
)

func id(v int64) *int64 { return &v }

// The tree of
//
//	1 user ─┬─ 2 reply ── 4 user ─┬─ 5 reply
//	        │                     └─ 7 user (an edit of 4) ── 8 reply
//	        └─ 3 reply (regenerated)
//	6 user (an edit of 1, a root)
func sampleTree() *tree {
	return newTree([]store.ChatNode{{ID: 1}, {ID: 2, ParentID: id(1)}, {ID: 3, ParentID: id(1)}, {ID: 4, ParentID: id(2)},
		{ID: 5, ParentID: id(4)}, {ID: 6}, {ID: 7, ParentID: id(2)}, {ID: 8, ParentID: id(7)}})
}

func TestActiveBranch(t *testing.T) {
	tr := sampleTree()
	for _, c := range []struct {
		name    string
		current *int64
		want    []int64
	}{
		{"NoCurrent: the newest message", nil, []int64{1, 2, 7, 8}},
		{"Leaf", id(5), []int64{1, 2, 4, 5}},
		{"Middle: down through the newest", id(2), []int64{1, 2, 7, 8}},
		{"Root: down through the newest", id(1), []int64{1, 3}},
		{"OtherRoot", id(6), []int64{6}},
		{"Gone: the newest", id(99), []int64{1, 2, 7, 8}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := tr.active(c.current); !slices.Equal(got, c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
		})
	}
	if got := newTree(nil).active(nil); len(got) != 0 {
		t.Fatalf("empty tree: %v", got)
	}
	for msg, want := range map[int64][]int64{1: {1, 6}, 6: {1, 6}, 2: {2, 3}, 4: {4, 7}, 5: {5}, 99: {99}} {
		if got := tr.siblings(msg); !slices.Equal(got, want) {
			t.Errorf("siblings of %d: %v, want %v", msg, got, want)
		}
	}
	if got := tr.ancestors(8); !slices.Equal(got, []int64{1, 2, 7, 8}) {
		t.Errorf("ancestors of 8: %v", got)
	}
}

func TestCleanTitle(t *testing.T) {
	for in, want := range map[string]string{
		"Sourdough Basics":                         "Sourdough Basics",
		"\n\n  \"Sourdough Basics.\"  \nMore text": "Sourdough Basics",
		"Title: **Sourdough Basics**":              "Sourdough Basics",
		"# Compost “for beginners”":                "Compost “for beginners”",
		"a\u202eb\x07c":                            "abc",
		"":                                         "",
		strings.Repeat("word ", 30):                strings.TrimSpace(strings.Repeat("word ", 16)) + "…",
	} {
		if got := cleanTitle(in); got != want {
			t.Errorf("cleanTitle(%q) = %q, want %q", in, got, want)
		}
	}
}

// The prompt of a branch: user messages, and the replies that hold text.
func TestHistory(t *testing.T) {
	msgs := []*store.ChatMessage{
		{Role: "user", Content: "a"}, {Role: "assistant", Status: store.ChatFailed, Content: ""},
		{Role: "user", Content: "b"}, {Role: "assistant", Status: store.ChatIncomplete, Content: "partial"},
		{Role: "user", Content: "c"}, {Role: "assistant", Status: store.ChatComplete, Content: "  "},
		{Role: "user", Content: "d"},
	}
	var got []string
	for _, m := range history(msgs) {
		got = append(got, m.Role+":"+m.Content)
	}
	if want := []string{"user:a", "user:b", "assistant:partial", "user:c", "user:d"}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// A late watcher's snapshot: nothing before the reply, then the reply with
// the text so far, the title, and the stored reply with its usage once
// done.
func TestSnapshot(t *testing.T) {
	var x snapshot
	if _, ok := x.Event(); ok {
		t.Fatal("a snapshot before the reply")
	}
	start := Message{ChatMessage: &store.ChatMessage{ID: 4, Status: store.ChatGenerating}}
	x.Apply(stream.Event{Name: EventMessage, Data: start})
	x.Apply(stream.Event{Name: EventDelta, Data: Delta{Text: "Green "}})
	ev, ok := x.Event()
	x.Apply(stream.Event{Name: EventDelta, Data: Delta{Text: "tea"}})
	if s := ev.Data.(Snapshot); !ok || ev.Name != EventSnapshot || s.Text != "Green " || s.Message.ID != 4 || s.Usage != nil {
		t.Fatalf("snapshot: %+v (it must not change once returned)", ev)
	}
	x.Apply(stream.Event{Name: EventTitle, Data: Title{ConversationID: 1, Title: "Tea"}})
	done := Message{ChatMessage: &store.ChatMessage{ID: 4, Status: store.ChatComplete, Content: "Green tea"}}
	x.Apply(stream.Event{Name: EventDone, Data: Done{Message: done, Usage: Usage{OutputTokens: 2}}})
	ev, _ = x.Event()
	if s := ev.Data.(Snapshot); s.Text != "Green tea" || s.Title != "Tea" || s.Message.Status != store.ChatComplete || s.Usage.OutputTokens != 2 {
		t.Fatalf("final snapshot: %+v", s)
	}
}
