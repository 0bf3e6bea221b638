package store_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/copydesk/copydesk/store"
)

// chatJob is the job of a test exchange.
var chatJob = store.RunJob{Kind: "chat.reply", MaxAttempts: 1, Payload: func(id int64) any { return map[string]int64{"message_id": id} }}

// chatExchange records a user message and its reply, finished with text.
func chatExchange(t *testing.T, db *store.DB, convID int64, parent *int64, user, reply string) (*store.ChatMessage, *store.ChatMessage) {
	t.Helper()
	ctx := context.Background()
	u, r, err := db.CreateChatExchange(ctx, store.NewChatExchange{ConversationID: convID, ParentID: parent, User: &user}, chatJob)
	if err != nil {
		t.Fatal(err)
	}
	if r, err = db.FinishChatMessage(ctx, r.ID, store.ChatOutcome{Status: store.ChatComplete, Output: reply}); err != nil {
		t.Fatal(err)
	}
	return u, r
}

// chatSearch lists the owner's conversations matching q, as ids.
func chatSearch(t *testing.T, db *store.DB, owner int64, q string) []int64 {
	t.Helper()
	list, total, err := db.ListChatConversations(context.Background(), store.ChatConversationFilter{OwnerID: owner, Scope: store.Everything,
		Q: q, Page: store.Page{Page: 1, PerPage: 50}})
	if err != nil {
		t.Fatal(err)
	}
	if total != len(list) {
		t.Fatalf("search %q: total %d for %d items", q, total, len(list))
	}
	ids := []int64{}
	for _, c := range list {
		ids = append(ids, c.ID)
	}
	return ids
}

// The search indexes follow every write: new messages, a reply's text
// arriving, a title changing, a branch deleted, a conversation deleted
// (through the cascade), and a new row that reuses a deleted row's id
// finds only its own text.
func TestChatSearchStaysInStep(t *testing.T) {
	t.Parallel()
	db, _ := openDB(t)
	ctx := context.Background()
	u := mustUser(t, db, "ann", store.RoleEditor)
	other := mustUser(t, db, "ben", store.RoleEditor)
	a, err := db.CreateChatConversation(ctx, store.NewChatConversation{UserID: u.ID, Title: "Baking plans"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := db.CreateChatConversation(ctx, store.NewChatConversation{UserID: u.ID})
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := db.CreateChatConversation(ctx, store.NewChatConversation{UserID: other.ID, Title: "Baking too"})
	if err != nil {
		t.Fatal(err)
	}
	_, r1 := chatExchange(t, db, a.ID, nil, "How long does sourdough proof?", "Four to twelve hours.")
	u2, _ := chatExchange(t, db, b.ID, nil, "Compost ratios?", "Three parts brown to one part green; crème brûlée aside.")
	chatExchange(t, db, theirs.ID, nil, "sourdough again", "yes")

	for _, c := range []struct {
		name string
		q    string
		want []int64
	}{
		{"Title", "baking", []int64{a.ID}},
		{"UserText", "sourdough", []int64{a.ID}},
		{"ReplyText", "twelve", []int64{a.ID}},
		{"Prefix", "sourd", []int64{a.ID}},
		{"EveryWord", "brown green", []int64{b.ID}},
		{"NotAllWords", "brown sourdough", []int64{}},
		{"Accents", "creme brulee", []int64{b.ID}},
		{"CaseAndPunctuation", `"COMPOST" (ratios`, []int64{b.ID}},
		{"OneMessageHoldsThemAll", "sourdough twelve", []int64{}},
		{"NoWord", `"*" ()`, []int64{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := chatSearch(t, db, u.ID, c.q); !slices.Equal(got, c.want) {
				t.Fatalf("search %q: %v, want %v", c.q, got, c.want)
			}
		})
	}

	// A rename: the old title no longer matches, the new one does.
	if _, err := db.UpdateChatConversation(ctx, a.ID, store.ChatConversationUpdate{Title: ptr("Bread notes")}); err != nil {
		t.Fatal(err)
	}
	if got := chatSearch(t, db, u.ID, "baking"); len(got) != 0 {
		t.Fatalf("old title still found: %v", got)
	}
	if got := chatSearch(t, db, u.ID, "bread notes"); !slices.Equal(got, []int64{a.ID}) {
		t.Fatalf("new title: %v", got)
	}
	// Deleting a reply takes its text out of the search, not its user
	// message's.
	if n, err := db.DeleteChatMessage(ctx, r1.ID); err != nil || n != 1 {
		t.Fatalf("delete reply: %d %v", n, err)
	}
	if got := chatSearch(t, db, u.ID, "twelve"); len(got) != 0 {
		t.Fatalf("deleted reply still found: %v", got)
	}
	if got := chatSearch(t, db, u.ID, "proof"); !slices.Equal(got, []int64{a.ID}) {
		t.Fatalf("user message: %v", got)
	}
	// Deleting a user message takes its replies along.
	if n, err := db.DeleteChatMessage(ctx, u2.ID); err != nil || n != 2 {
		t.Fatalf("delete branch: %d %v", n, err)
	}
	if got := chatSearch(t, db, u.ID, "compost"); len(got) != 0 {
		t.Fatalf("deleted branch still found: %v", got)
	}
	// A deleted conversation goes with its messages, from both indexes;
	// the ids SQLite hands out again carry only their own text.
	if err := db.DeleteChatConversation(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	c, err := db.CreateChatConversation(ctx, store.NewChatConversation{UserID: u.ID})
	if err != nil {
		t.Fatal(err)
	}
	chatExchange(t, db, c.ID, nil, "tomatoes", "water them")
	for _, q := range []string{"bread", "sourdough", "proof"} {
		if got := chatSearch(t, db, u.ID, q); len(got) != 0 {
			t.Fatalf("%q found after its conversation was deleted: %v", q, got)
		}
	}
	if got := chatSearch(t, db, u.ID, "water them"); !slices.Equal(got, []int64{c.ID}) {
		t.Fatalf("new conversation: %v", got)
	}
}

// One reply generates at a time per conversation; the first ending of a
// reply is kept; a reply becomes the conversation's current message.
func TestChatExchangeRules(t *testing.T) {
	t.Parallel()
	db, clk := openDB(t)
	ctx := context.Background()
	u := mustUser(t, db, "ann", store.RoleEditor)
	c, err := db.CreateChatConversation(ctx, store.NewChatConversation{UserID: u.ID})
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute)
	text := "hi"
	user, reply, err := db.CreateChatExchange(ctx, store.NewChatExchange{ConversationID: c.ID, User: &text}, chatJob)
	if err != nil {
		t.Fatal(err)
	}
	if user.Role != "user" || user.Status != store.ChatComplete || reply.Status != store.ChatGenerating || *reply.ParentID != user.ID ||
		reply.JobID == nil {
		t.Fatalf("exchange: %+v %+v", user, reply)
	}
	got, err := db.ChatConversationByID(ctx, c.ID)
	if err != nil || *got.CurrentMessageID != reply.ID || !got.ActivityAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("conversation after the exchange: %+v %v", got, err)
	}
	_, _, err = db.CreateChatExchange(ctx, store.NewChatExchange{ConversationID: c.ID, ParentID: &user.ID}, chatJob)
	wantKind(t, err, store.KindConflict)
	if g, err := db.GeneratingChatMessage(ctx, c.ID); err != nil || g.ID != reply.ID {
		t.Fatalf("generating: %v %v", g, err)
	}

	first, err := db.FinishChatMessage(ctx, reply.ID, store.ChatOutcome{Status: store.ChatIncomplete, Output: "par", Error: "stopped"})
	if err != nil || first.Status != store.ChatIncomplete || first.FinishedAt == nil {
		t.Fatalf("finish: %+v %v", first, err)
	}
	again, err := db.FinishChatMessage(ctx, reply.ID, store.ChatOutcome{Status: store.ChatComplete, Output: "partial and more"})
	if err != nil || again.Status != store.ChatIncomplete || again.Content != "par" {
		t.Fatalf("a second ending replaced the first: %+v %v", again, err)
	}
	// Now another reply may be generated: a sibling of the first.
	_, sibling, err := db.CreateChatExchange(ctx, store.NewChatExchange{ConversationID: c.ID, ParentID: &user.ID}, chatJob)
	if err != nil || *sibling.ParentID != user.ID {
		t.Fatalf("regenerated: %+v %v", sibling, err)
	}
	tree, err := db.ChatTree(ctx, c.ID)
	if err != nil || len(tree) != 3 || tree[1].ID != reply.ID || tree[2].ID != sibling.ID || *tree[2].ParentID != user.ID {
		t.Fatalf("tree: %+v %v", tree, err)
	}
	// A reply left generating by a dead process fails at the next start;
	// one whose job is still queued is the job's.
	if n, err := db.FailOrphanChatMessages(ctx, "interrupted by a restart"); err != nil || n != 0 {
		t.Fatalf("orphans with a live job: %d %v", n, err)
	}
	if _, err := db.CancelJob(ctx, *sibling.JobID); err != nil {
		t.Fatal(err)
	}
	if n, err := db.FailOrphanChatMessages(ctx, "interrupted by a restart"); err != nil || n != 1 {
		t.Fatalf("orphans: %d %v", n, err)
	}
	if m, err := db.ChatMessageByID(ctx, sibling.ID); err != nil || m.Status != store.ChatFailed || m.Error != "interrupted by a restart" {
		t.Fatalf("orphan: %+v %v", m, err)
	}
	// A branch whose messages are gone leaves the conversation's current
	// message unset, not dangling.
	if _, err := db.DeleteChatMessage(ctx, user.ID); err != nil {
		t.Fatal(err)
	}
	if got, err := db.ChatConversationByID(ctx, c.ID); err != nil || got.CurrentMessageID != nil {
		t.Fatalf("after the branch went: %+v %v", got, err)
	}
}

// The owner's list: pinned first, newest activity next; archived apart;
// the scope's environments and those outside any.
func TestListChatConversations(t *testing.T) {
	t.Parallel()
	db, clk := openDB(t)
	ctx := context.Background()
	u := mustUser(t, db, "ann", store.RoleEditor)
	envA, err := db.CreateEnvironment(ctx, store.NewEnvironment{Name: "A", Slug: "a"})
	if err != nil {
		t.Fatal(err)
	}
	envB, err := db.CreateEnvironment(ctx, store.NewEnvironment{Name: "B", Slug: "b"})
	if err != nil {
		t.Fatal(err)
	}
	mk := func(n store.NewChatConversation) int64 {
		clk.Advance(time.Second)
		n.UserID = u.ID
		c, err := db.CreateChatConversation(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		return c.ID
	}
	old := mk(store.NewChatConversation{Title: "old"})
	pinned := mk(store.NewChatConversation{Title: "pinned", Pinned: true})
	inA := mk(store.NewChatConversation{Title: "in A", EnvironmentID: &envA.ID})
	inB := mk(store.NewChatConversation{Title: "in B", EnvironmentID: &envB.ID})
	archived := mk(store.NewChatConversation{Title: "archived"})
	if _, err := db.UpdateChatConversation(ctx, archived, store.ChatConversationUpdate{Archived: ptr(true)}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	chatExchange(t, db, old, nil, "bump", "bumped") // newest activity now

	scopeA := store.NewScope(u.ID, false, []int64{envA.ID})
	for _, c := range []struct {
		name string
		f    store.ChatConversationFilter
		want []int64
	}{
		{"Admin", store.ChatConversationFilter{Scope: store.Everything}, []int64{pinned, old, inB, inA}},
		{"Scope", store.ChatConversationFilter{Scope: scopeA}, []int64{pinned, old, inA}},
		{"Archived", store.ChatConversationFilter{Scope: scopeA, Archived: true}, []int64{archived}},
		{"Pinned", store.ChatConversationFilter{Scope: scopeA, Pinned: ptr(false)}, []int64{old, inA}},
		{"Environment", store.ChatConversationFilter{Scope: store.Everything, EnvironmentID: &envB.ID}, []int64{inB}},
		{"ByTitle", store.ChatConversationFilter{Scope: store.Everything, Sort: store.Sort{Field: "title"}}, []int64{inA, inB, old, pinned}},
		{"ByNewest", store.ChatConversationFilter{Scope: store.Everything, Sort: store.Sort{Field: "created_at", Desc: true}}, []int64{inB, inA, pinned, old}},
		{"ByActivity", store.ChatConversationFilter{Scope: store.Everything, Sort: store.Sort{Field: "activity_at"}}, []int64{pinned, inA, inB, old}},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.f.OwnerID, c.f.Page = u.ID, store.Page{Page: 1, PerPage: 10}
			list, total, err := db.ListChatConversations(ctx, c.f)
			if err != nil {
				t.Fatal(err)
			}
			var got []int64
			for _, x := range list {
				got = append(got, x.ID)
			}
			if !slices.Equal(got, c.want) || total != len(c.want) {
				t.Fatalf("got %v (total %d), want %v", got, total, c.want)
			}
		})
	}
	_, _, err = db.ListChatConversations(ctx, store.ChatConversationFilter{OwnerID: u.ID, Sort: store.Sort{Field: "pinned"},
		Page: store.Page{Page: 1, PerPage: 10}})
	wantKind(t, err, store.KindInvalid)
}
