package chat_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/copydesk/copydesk/server/ai"
	"github.com/copydesk/copydesk/server/chat"
	"github.com/copydesk/copydesk/server/engine"
	"github.com/copydesk/copydesk/server/environment"
	"github.com/copydesk/copydesk/server/jobs"
	"github.com/copydesk/copydesk/server/stream"
	"github.com/copydesk/copydesk/store"
	"github.com/copydesk/copydesk/store/storetest"
)

// The service's rules over the real store and job runner, with a stand-in
// for the engine (the HTTP tests in server/openchat_test.go run the real
// one against a local provider).

const bound = 10 * time.Second

func ptr[T any](v T) *T { return &v }

// fakeEngine answers replies with pieces and titles with title; a reply
// blocks after its first piece until its caller gives up while block is
// set. window is the context window it reports. Tests change its settings
// through set, as the job runner reads them.
type fakeEngine struct {
	started chan struct{} // a token when a reply blocks

	mu       sync.Mutex
	pieces   []string
	title    string
	titleErr error
	planErr  error
	window   int
	block    bool
	calls    []engine.Call // replies
}

func newEngine(pieces ...string) *fakeEngine {
	return &fakeEngine{pieces: pieces, title: "A fine title", window: 100000, started: make(chan struct{}, 16)}
}

func (f *fakeEngine) set(fn func(f *fakeEngine)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

func (f *fakeEngine) Effective(context.Context, *int64) (engine.Effective, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	eff := engine.Defaults
	eff.MaxOutputTokens = 100
	eff.ContextWindows = map[string]int{"gpt-test": f.window}
	return eff, nil
}

func (f *fakeEngine) Plan(context.Context, engine.Call) (string, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return "openai", "gpt-test", f.planErr
}

func (f *fakeEngine) Generate(_ context.Context, c engine.Call) (*engine.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c.Source != "chat" {
		return nil, errors.New("a title not counted as chat")
	}
	if f.titleErr != nil {
		return nil, f.titleErr
	}
	return &engine.Result{Text: f.title, Model: "gpt-test"}, nil
}

func (f *fakeEngine) Stream(ctx context.Context, c engine.Call, onDelta func(string) error) (*engine.Result, error) {
	f.mu.Lock()
	f.calls = append(f.calls, c)
	block, pieces := f.block, f.pieces
	f.mu.Unlock()
	var text strings.Builder
	for i, p := range pieces {
		if block && i == 1 {
			f.started <- struct{}{}
			<-ctx.Done()
			return &engine.Result{Text: text.String(), Model: "gpt-test", Partial: true, UsageEstimated: true,
				Usage: ai.Usage{InputTokens: 3, OutputTokens: 1}}, ctx.Err()
		}
		if err := onDelta(p); err != nil {
			return nil, err
		}
		text.WriteString(p)
	}
	return &engine.Result{Text: text.String(), Model: "gpt-test", Usage: ai.Usage{InputTokens: 7, OutputTokens: 2}}, nil
}

func (f *fakeEngine) Calls() []engine.Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// rig is the service over a fresh database: environments A and B, editor
// a (of A), editor b (of B), an admin; a running job runner.
type rig struct {
	svc        *chat.Service
	db         *store.DB
	eng        *fakeEngine
	envA, envB int64
	a, b       store.Scope
	admin      store.Scope
}

func newRig(t *testing.T, eng *fakeEngine) *rig {
	t.Helper()
	ctx := context.Background()
	db, _ := storetest.OpenDB(t)
	envs := environment.New(db)
	r := &rig{db: db, eng: eng}
	var ids []int64
	for _, name := range []string{"ann", "ben", "root"} {
		u := storetest.MustUser(t, db, name, store.RoleEditor)
		ids = append(ids, u.ID)
	}
	r.admin = store.NewScope(ids[2], true, nil)
	for _, p := range []*int64{&r.envA, &r.envB} {
		e, err := envs.Create(ctx, r.admin, store.NewEnvironment{Name: "Site"})
		if err != nil {
			t.Fatal(err)
		}
		*p = e.ID
	}
	r.a = store.NewScope(ids[0], false, []int64{r.envA})
	r.b = store.NewScope(ids[1], false, []int64{r.envB})
	events := stream.New(stream.Options{})
	t.Cleanup(events.Close)
	runner := jobs.New(db, nil, jobs.Options{Workers: 2, PollInterval: 20 * time.Millisecond})
	r.svc = chat.New(chat.Deps{Store: db, Environments: envs, Engine: eng, Jobs: runner, Events: events, Log: slog.New(slog.DiscardHandler)})
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- runner.Run(runCtx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return r
}

func kindOf(err error) string {
	if err == nil {
		return "ok"
	}
	if k, ok := map[store.Kind]string{store.KindNotFound: "404", store.KindForbidden: "403", store.KindInvalid: "422",
		store.KindConflict: "409"}[store.KindOf(err)]; ok {
		return k
	}
	return err.Error()
}

// wait waits for a reply's ending and returns it.
func (r *rig) wait(t *testing.T, sc store.Scope, id int64) chat.Message {
	t.Helper()
	done, err := r.svc.Done(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(bound):
		t.Fatalf("reply %d did not end within %s", id, bound)
	}
	m, err := r.svc.Message(context.Background(), sc, id)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func (r *rig) send(t *testing.T, sc store.Scope, convID int64, text string) chat.Message {
	t.Helper()
	m, err := r.svc.Send(context.Background(), sc, convID, chat.SendInput{Content: text})
	if err != nil {
		t.Fatal(err)
	}
	return r.wait(t, sc, m.ID)
}

// Who may start a conversation with what.
func TestCreateRules(t *testing.T) {
	r := newRig(t, newEngine("ok"))
	ctx := context.Background()
	agentA, err := r.db.CreateAgent(ctx, store.AgentInput{EnvironmentID: &r.envA, Name: "A", Kind: "writer", IsActive: true}, 1)
	if err != nil {
		t.Fatal(err)
	}
	global, err := r.db.CreateAgent(ctx, store.AgentInput{Name: "G", Kind: "writer", IsActive: true}, 1)
	if err != nil {
		t.Fatal(err)
	}
	idle, err := r.db.CreateAgent(ctx, store.AgentInput{EnvironmentID: &r.envA, Name: "Idle", Kind: "writer"}, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		sc      store.Scope
		in      chat.NewConversation
		want    string
		wantEnv *int64
	}{
		{"Plain", r.a, chat.NewConversation{Title: "  Hi  "}, "ok", nil},
		{"InOwnEnvironment", r.a, chat.NewConversation{EnvironmentID: &r.envA}, "ok", &r.envA},
		{"InOtherEnvironment", r.a, chat.NewConversation{EnvironmentID: &r.envB}, "422", nil},
		{"AgentGivesItsEnvironment", r.a, chat.NewConversation{AgentID: &agentA.ID}, "ok", &r.envA},
		{"GlobalAgentAnywhere", r.b, chat.NewConversation{AgentID: &global.ID}, "ok", nil},
		{"OthersAgent", r.b, chat.NewConversation{AgentID: &agentA.ID}, "422", nil},
		{"AgentNotAssigned", r.admin, chat.NewConversation{AgentID: &agentA.ID, EnvironmentID: &r.envB}, "422", nil},
		{"InactiveAgent", r.a, chat.NewConversation{AgentID: &idle.ID}, "409", nil},
		{"AgentAndModel", r.a, chat.NewConversation{AgentID: &global.ID, Model: "gpt-4o"}, "422", nil},
		{"ControlCharacters", r.a, chat.NewConversation{Title: "a\nb"}, "422", nil},
		{"TooLong", r.a, chat.NewConversation{Title: strings.Repeat("x", 201)}, "422", nil},
		{"NoUser", store.Everything, chat.NewConversation{}, "403", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			conv, err := r.svc.Create(ctx, c.sc, c.in)
			if got := kindOf(err); got != c.want {
				t.Fatalf("got %s, want %s", got, c.want)
			}
			if err == nil && (conv.UserID != c.sc.UserID || !equalID(conv.EnvironmentID, c.wantEnv) || conv.Title != strings.TrimSpace(c.in.Title)) {
				t.Fatalf("conversation %+v", conv)
			}
		})
	}
}

func equalID(a, b *int64) bool { return a == nil && b == nil || a != nil && b != nil && *a == *b }

// A conversation is its owner's, while they see its environment; nobody
// else's, admins included.
func TestOwnership(t *testing.T) {
	r := newRig(t, newEngine("ok"))
	ctx := context.Background()
	inA, err := r.svc.Create(ctx, r.a, chat.NewConversation{EnvironmentID: &r.envA})
	if err != nil {
		t.Fatal(err)
	}
	loose, err := r.svc.Create(ctx, r.a, chat.NewConversation{})
	if err != nil {
		t.Fatal(err)
	}
	lostA := store.NewScope(r.a.UserID, false, nil) // a, after losing A
	for _, c := range []struct {
		name string
		sc   store.Scope
		conv int64
		want string
	}{
		{"Owner", r.a, inA.ID, "ok"},
		{"OwnerWithoutEnvironment", r.a, loose.ID, "ok"},
		{"OtherEditor", r.b, loose.ID, "404"},
		{"Admin", r.admin, loose.ID, "404"},
		{"System", store.Everything, loose.ID, "404"},
		{"OwnerLostEnvironment", lostA, inA.ID, "404"},
		{"OwnerLostOtherEnvironment", lostA, loose.ID, "ok"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := r.svc.Get(ctx, c.sc, c.conv)
			if got := kindOf(err); got != c.want {
				t.Fatalf("get: %s, want %s", got, c.want)
			}
			_, err = r.svc.Update(ctx, c.sc, c.conv, chat.Patch{Pinned: ptr(true)})
			if got := kindOf(err); got != c.want {
				t.Fatalf("update: %s, want %s", got, c.want)
			}
			_, _, err = r.svc.Messages(ctx, c.sc, c.conv, false, store.Page{Page: 1, PerPage: 10})
			if got := kindOf(err); got != c.want {
				t.Fatalf("messages: %s, want %s", got, c.want)
			}
		})
	}
	list, total, err := r.svc.List(ctx, lostA, chat.ListFilter{}, store.Page{Page: 1, PerPage: 10})
	if err != nil || total != 1 || list[0].ID != loose.ID {
		t.Fatalf("list after losing A: %v %d %v", list, total, err)
	}
	if _, total, _ := r.svc.List(ctx, r.a, chat.ListFilter{EnvironmentID: &r.envB}, store.Page{Page: 1, PerPage: 10}); total != 0 {
		t.Fatalf("a list of an environment not seen: %d", total)
	}
}

// A reply: the branch's history, trimmed to the window, the reply stored
// with its usage, the first one naming the conversation.
func TestReplyAndTitle(t *testing.T) {
	eng := newEngine("Hello ", "there.")
	r := newRig(t, eng)
	ctx := context.Background()
	conv, err := r.svc.Create(ctx, r.a, chat.NewConversation{EnvironmentID: &r.envA, Model: "gpt-test"})
	if err != nil {
		t.Fatal(err)
	}
	first := r.send(t, r.a, conv.ID, "Hi")
	if first.Status != store.ChatComplete || first.Content != "Hello there." || first.InputTokens != 7 || first.Model != "gpt-test" ||
		!slices.Equal(first.SiblingIDs, []int64{first.ID}) {
		t.Fatalf("reply %+v", first)
	}
	got, _ := r.svc.Get(ctx, r.a, conv.ID)
	if got.Title != "A fine title" {
		t.Fatalf("title %q", got.Title)
	}
	call := eng.Calls()[0]
	if call.Source != "chat" || *call.EnvironmentID != r.envA || *call.UserID != r.a.UserID || call.Model != "gpt-test" {
		t.Fatalf("call %+v", call)
	}
	// A window that holds only the last message: the rest is trimmed.
	eng.set(func(f *fakeEngine) { f.window = 100 + 50 }) // max output 100; 90% of 50 is 45 tokens
	second := r.send(t, r.a, conv.ID, strings.Repeat("y", 150))
	if second.TrimmedMessages != 2 || len(eng.Calls()[1].Messages) != 1 {
		t.Fatalf("trimmed %d, sent %d messages", second.TrimmedMessages, len(eng.Calls()[1].Messages))
	}
	// A failed title leaves the start of the message as the title.
	eng.set(func(f *fakeEngine) { f.titleErr = errors.New("no") })
	other, _ := r.svc.Create(ctx, r.a, chat.NewConversation{})
	r.send(t, r.a, other.ID, "  What should I\n  plant in   April?  ")
	if got, _ := r.svc.Get(ctx, r.a, other.ID); got.Title != "What should I plant in April?" {
		t.Fatalf("fallback title %q", got.Title)
	}
}

// Stop keeps the text so far as incomplete; stopping a finished reply is
// a conflict; deleting a conversation stops its reply.
func TestStop(t *testing.T) {
	eng := newEngine("Once ", "upon a time.")
	eng.block = true
	r := newRig(t, eng)
	ctx := context.Background()
	conv, _ := r.svc.Create(ctx, r.a, chat.NewConversation{Title: "Story"})
	reply, err := r.svc.Send(ctx, r.a, conv.ID, chat.SendInput{Content: "Tell me"})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-eng.started:
	case <-time.After(bound):
		t.Fatal("the reply did not start")
	}
	if _, err := r.svc.Send(ctx, r.a, conv.ID, chat.SendInput{Content: "More"}); kindOf(err) != "409" {
		t.Fatalf("send while generating: %v", err)
	}
	if err := r.svc.Stop(ctx, r.b, reply.ID); kindOf(err) != "404" {
		t.Fatalf("another stops it: %v", err)
	}
	if err := r.svc.Stop(ctx, r.a, reply.ID); err != nil {
		t.Fatal(err)
	}
	m := r.wait(t, r.a, reply.ID)
	if m.Status != store.ChatIncomplete || m.Content != "Once " || m.Error != "stopped" || !m.UsageEstimated || m.OutputTokens != 1 {
		t.Fatalf("stopped reply %+v", m.ChatMessage)
	}
	if err := r.svc.Stop(ctx, r.a, reply.ID); kindOf(err) != "409" {
		t.Fatalf("stop again: %v", err)
	}
	if got, _ := r.svc.Get(ctx, r.a, conv.ID); got.Title != "Story" {
		t.Fatalf("title %q", got.Title)
	}

	// Deleting a conversation stops the reply being generated in it.
	next, err := r.svc.Send(ctx, r.a, conv.ID, chat.SendInput{Content: "Again"})
	if err != nil {
		t.Fatal(err)
	}
	<-eng.started
	done, _ := r.svc.Done(ctx, next.ID)
	if err := r.svc.Delete(ctx, r.a, conv.ID); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(bound):
		t.Fatal("the reply of a deleted conversation did not end")
	}
	if _, err := r.db.ChatMessageByID(ctx, next.ID); !store.IsNotFound(err) {
		t.Fatalf("the reply outlived its conversation: %v", err)
	}
}

// Sending, regenerating and editing: where each lands, what each sends,
// and what is refused.
func TestBranchRules(t *testing.T) {
	eng := newEngine("ok")
	r := newRig(t, eng)
	ctx := context.Background()
	conv, _ := r.svc.Create(ctx, r.a, chat.NewConversation{Title: "T"})
	r1 := r.send(t, r.a, conv.ID, "q1")
	u1 := *r1.ParentID
	if _, err := r.svc.Send(ctx, r.a, conv.ID, chat.SendInput{Content: "x", ParentID: &u1}); kindOf(err) != "422" {
		t.Fatalf("a user message after a user message: %v", err)
	}
	if _, err := r.svc.Edit(ctx, r.a, r1.ID, "x", false); kindOf(err) != "422" {
		t.Fatalf("editing a reply: %v", err)
	}
	if _, err := r.svc.Send(ctx, r.a, conv.ID, chat.SendInput{Content: "\x00"}); kindOf(err) != "422" {
		t.Fatalf("a control character: %v", err)
	}
	regen, err := r.svc.Regenerate(ctx, r.a, r1.ID, false)
	if err != nil {
		t.Fatal(err)
	}
	r2 := r.wait(t, r.a, regen.ID)
	if *r2.ParentID != u1 || !slices.Equal(r2.SiblingIDs, []int64{r1.ID, r2.ID}) {
		t.Fatalf("regenerated %+v", r2)
	}
	if got := eng.Calls()[1].Messages; len(got) != 1 || got[0].Content != "q1" {
		t.Fatalf("a regenerated reply is sent its branch only: %v", got)
	}
	// A branch that ends with a user message (its reply deleted) takes no
	// message until it has a reply.
	if _, err := r.svc.DeleteMessage(ctx, r.a, r2.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := r.svc.DeleteMessage(ctx, r.a, r1.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := r.svc.Send(ctx, r.a, conv.ID, chat.SendInput{Content: "next"}); kindOf(err) != "409" {
		t.Fatalf("after a user message without a reply: %v", err)
	}
	regen, err = r.svc.Regenerate(ctx, r.a, u1, false)
	if err != nil {
		t.Fatal(err)
	}
	r.wait(t, r.a, regen.ID)
	r.send(t, r.a, conv.ID, "next")
	// Without a provider, nothing is recorded.
	eng.set(func(f *fakeEngine) { f.planErr = store.Conflict("no AI provider is configured") })
	if _, err := r.svc.Send(ctx, r.a, conv.ID, chat.SendInput{Content: "more"}); kindOf(err) != "409" {
		t.Fatalf("no provider: %v", err)
	}
	if _, total, _ := r.svc.Messages(ctx, r.a, conv.ID, true, store.Page{Page: 1, PerPage: 50}); total != 4 {
		t.Fatalf("%d messages; a refused send stored some", total)
	}
}

// The Markdown export: the active branch, with who wrote what and what
// did not complete.
func TestMarkdownExport(t *testing.T) {
	eng := newEngine("**bold** answer")
	r := newRig(t, eng)
	ctx := context.Background()
	conv, _ := r.svc.Create(ctx, r.a, chat.NewConversation{Title: "Notes  on   two lines", Model: "gpt-test"})
	r1 := r.send(t, r.a, conv.ID, "question one")
	regen, _ := r.svc.Regenerate(ctx, r.a, r1.ID, false)
	r.wait(t, r.a, regen.ID)
	tr, err := r.svc.Export(ctx, r.a, conv.ID)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := tr.Markdown(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# Notes on two lines\n", "- Model: gpt-test\n", "2 shown, 3 in all branches", "## User · ",
		"question one\n", "## Assistant (gpt-test) · ", "**bold** answer\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("lacks %q:\n%s", want, b.String())
		}
	}
	if _, err := r.svc.Export(ctx, r.b, conv.ID); kindOf(err) != "404" {
		t.Fatalf("another's export: %v", err)
	}
	// A reply that did not complete says so, and why.
	tr.Messages[2].Status, tr.Messages[2].Error = store.ChatIncomplete, "stopped"
	b.Reset()
	if err := tr.Markdown(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "**bold** answer\n\n> *This reply is incomplete: stopped.*\n") {
		t.Errorf("no note on the incomplete reply:\n%s", b.String())
	}
}
