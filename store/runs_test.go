package store_test

import (
	"context"
	"testing"

	"github.com/copydesk/copydesk/store"
)

// The first ending recorded is kept, for every kind of generation; the
// usage of the call comes with the later one (a cancel records the ending
// at once, the call's usage comes when it stops), and a later ending
// without usage changes nothing.
func TestFinishKeepsFirstEndingTakesUsage(t *testing.T) {
	ctx := context.Background()
	db, _ := openDB(t)
	u := mustUser(t, db, "alice", store.RoleEditor)
	ag, err := db.CreateAgent(ctx, store.AgentInput{Name: "w", Kind: "writer", IsActive: true}, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	cost := 0.25
	env, err := db.CreateEnvironment(ctx, store.NewEnvironment{Name: "Site", Slug: "site"})
	if err != nil {
		t.Fatal(err)
	}
	conv, err := db.CreateChatConversation(ctx, store.NewChatConversation{UserID: u.ID, Title: "t"})
	if err != nil {
		t.Fatal(err)
	}
	late := store.Outcome{Status: store.RunFailed, Output: "late text", Error: "the call ended", Attempts: 1,
		Usage: store.Usage{Model: "m", InputTokens: 7, OutputTokens: 3, Cost: store.MicrosOfUSD(&cost), StopReason: "error"}}
	// The stop reason is the first ending's too.
	check := func(t *testing.T, status, errText, stop, model string, in, out int64) {
		t.Helper()
		if status != store.RunCancelled && status != store.ChatIncomplete || errText != "cancelled by alice" || stop != "cancelled" ||
			model != "m" || in != 7 || out != 3 {
			t.Fatalf("ended %s %q (%s), usage %s %d/%d", status, errText, stop, model, in, out)
		}
	}
	first := func(status string) store.Outcome {
		return store.Outcome{Status: status, Error: "cancelled by alice", Usage: store.Usage{StopReason: "cancelled"}}
	}
	t.Run("AgentRun", func(t *testing.T) {
		r, err := db.CreateRunWithJob(ctx, store.NewRun{AgentID: ag.ID, Input: "go"}, store.RunJob{Kind: "k", Payload: func(id int64) any { return id }})
		if err != nil {
			t.Fatal(err)
		}
		db.FinishRun(ctx, r.ID, first(store.RunCancelled))
		db.FinishRun(ctx, r.ID, store.Outcome{Status: store.RunFailed, Error: "job failed"})
		if r, err = db.FinishRun(ctx, r.ID, late); err != nil {
			t.Fatal(err)
		}
		check(t, r.Status, r.Error, r.StopReason, r.Model, r.InputTokens, r.OutputTokens)
		if r.Output != "" || r.Cost == nil || r.Cost.USD() != cost {
			t.Fatalf("run: %+v", r)
		}
	})
	t.Run("CIERun", func(t *testing.T) {
		a, err := db.CreateArchetype(ctx, store.ArchetypeInput{Name: "a", PromptTemplate: "Write about {{keyword}}.", TargetWords: 800}, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		r, err := db.CreateCIERunWithJob(ctx, store.NewCIERun{ArchetypeID: a.ID, EnvironmentID: env.ID, SystemPrompt: "s", UserPrompt: "u"},
			store.RunJob{Kind: "k", Payload: func(id int64) any { return id }})
		if err != nil {
			t.Fatal(err)
		}
		db.FinishCIERun(ctx, r.ID, first(store.RunCancelled))
		if r, err = db.FinishCIERun(ctx, r.ID, late); err != nil {
			t.Fatal(err)
		}
		check(t, r.Status, r.Error, r.StopReason, r.Model, r.InputTokens, r.OutputTokens)
		if r.Attempts != 1 || r.RawOutput != "" {
			t.Fatalf("run: %+v", r)
		}
	})
	t.Run("ChatReply", func(t *testing.T) {
		text := "hi"
		_, m, err := db.CreateChatExchange(ctx, store.NewChatExchange{ConversationID: conv.ID, User: &text}, chatJob)
		if err != nil {
			t.Fatal(err)
		}
		db.FinishChatMessage(ctx, m.ID, first(store.ChatIncomplete))
		if m, err = db.FinishChatMessage(ctx, m.ID, late); err != nil {
			t.Fatal(err)
		}
		check(t, m.Status, m.Error, m.StopReason, m.Model, m.InputTokens, m.OutputTokens)
	})
	t.Run("LiveGeneration", func(t *testing.T) {
		sess, err := db.CreateLiveSession(ctx, store.NewLiveSession{AgentID: ag.ID, EnvironmentID: env.ID, CreatedBy: &u.ID, Title: "s"})
		if err != nil {
			t.Fatal(err)
		}
		g, err := db.CreateLiveGenerationWithJob(ctx, store.NewLiveGeneration{SessionID: sess.ID, UserID: &u.ID, Prompt: "go"},
			store.RunJob{Kind: "k", Payload: func(id int64) any { return id }})
		if err != nil {
			t.Fatal(err)
		}
		db.FinishLiveGeneration(ctx, g.ID, first(store.RunCancelled))
		if g, err = db.FinishLiveGeneration(ctx, g.ID, late); err != nil {
			t.Fatal(err)
		}
		check(t, g.Status, g.Error, g.StopReason, g.Model, g.InputTokens, g.OutputTokens)
	})
}
