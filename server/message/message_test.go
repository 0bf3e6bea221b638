package message

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/copydesk/copydesk/server/notify"
	"github.com/copydesk/copydesk/store"
)

// fakeStore holds users and messages in memory; it answers as *store.DB
// does for what the rules depend on. Its directory is a list per user
// (the real one, by environments and roles, is store's and is tested
// there and through the API).
type fakeStore struct {
	users     map[int64]*store.User
	directory map[int64][]int64 // user -> whom they may write to
	messages  map[int64]*store.DirectMessage
	created   []store.NewMessage
	read      []int64
	err       error // returned by UserByID and InDirectory when set
}

func newFakeStore() *fakeStore {
	return &fakeStore{
		users: map[int64]*store.User{
			1: {ID: 1, Username: "ann", IsActive: true},
			2: {ID: 2, Username: "ben", IsActive: true},
			3: {ID: 3, Username: "gone", IsActive: false},
			4: {ID: 4, Username: "stranger", IsActive: true},
		},
		directory: map[int64][]int64{1: {2}, 2: {1}},
		messages:  map[int64]*store.DirectMessage{},
	}
}

func (f *fakeStore) InDirectory(_ context.Context, sc store.Scope, id int64) (bool, error) {
	if f.err != nil {
		return false, f.err
	}
	return slices.Contains(f.directory[sc.UserID], id) && f.users[id] != nil && f.users[id].IsActive, nil
}

func (f *fakeStore) ListDirectory(_ context.Context, df store.DirectoryFilter) ([]store.UserSummary, int, error) {
	var out []store.UserSummary
	for _, id := range f.directory[df.Scope.UserID] {
		if u := f.users[id]; strings.Contains(u.Username, df.Q) {
			out = append(out, store.UserSummary{ID: u.ID, Username: u.Username})
		}
	}
	return out, len(out), nil
}

func (f *fakeStore) UserByID(_ context.Context, id int64) (*store.User, error) {
	if f.err != nil {
		return nil, f.err
	}
	u, ok := f.users[id]
	if !ok {
		return nil, store.NotFound("user not found")
	}
	return u, nil
}

func (f *fakeStore) CreateMessage(_ context.Context, n store.NewMessage) (*store.DirectMessage, error) {
	f.created = append(f.created, n)
	m := &store.DirectMessage{ID: int64(len(f.created)), SenderID: n.SenderID, RecipientID: n.RecipientID, Subject: n.Subject, Body: n.Body,
		Sender: store.UserSummary{ID: n.SenderID, Username: f.users[n.SenderID].Username}}
	f.messages[m.ID] = m
	return m, nil
}

func (f *fakeStore) MessageFor(_ context.Context, userID, id int64) (*store.DirectMessage, error) {
	m, ok := f.messages[id]
	if !ok || (m.SenderID != userID && m.RecipientID != userID) {
		return nil, store.NotFound("message not found")
	}
	return m, nil
}

func (f *fakeStore) MarkMessageRead(ctx context.Context, recipientID, id int64) (*store.DirectMessage, error) {
	f.read = append(f.read, id)
	return f.MessageFor(ctx, recipientID, id)
}

func (f *fakeStore) Inbox(context.Context, store.MessageFilter) ([]*store.DirectMessage, int, error) {
	return nil, 0, nil
}

func (f *fakeStore) Sent(context.Context, store.MessageFilter) ([]*store.DirectMessage, int, error) {
	return nil, 0, nil
}

func (f *fakeStore) Conversations(context.Context, int64, store.Page) ([]*store.ConversationSummary, int, error) {
	return nil, 0, nil
}

func (f *fakeStore) Conversation(context.Context, int64, int64, store.Page) ([]*store.DirectMessage, int, error) {
	return nil, 0, nil
}

func (f *fakeStore) DeleteMessageFor(context.Context, int64, int64) error { return nil }

type sentNote struct {
	userID int64
	note   notify.Note
}

type fakeNotifier struct{ notes []sentNote }

func (n *fakeNotifier) User(_ context.Context, userID int64, note notify.Note) {
	n.notes = append(n.notes, sentNote{userID, note})
}

func newService() (*Service, *fakeStore, *fakeNotifier) {
	db, n := newFakeStore(), &fakeNotifier{}
	return New(db, n), db, n
}

func TestNormalize(t *testing.T) {
	ok := []struct {
		name        string
		in          Draft
		wantSubject string
	}{
		{"Plain", Draft{Body: "hi"}, ""},
		{"LongestBody", Draft{Body: strings.Repeat("é", MaxBody)}, ""},
		{"LinesAndTabs", Draft{Body: "a\nb\r\n\tc"}, ""},
		{"RightToLeftInBody", Draft{Body: "\u202bשלום\u202c and \u2067مرحبا\u2069"}, ""},
		{"RightToLeftSubject", Draft{Subject: "שלום", Body: "x"}, "שלום"},
		{"SubjectTrimmed", Draft{Subject: "  Re: draft \n", Body: "x"}, "Re: draft"},
		{"LongestSubject", Draft{Subject: strings.Repeat("s", MaxSubject), Body: "x"}, strings.Repeat("s", MaxSubject)},
	}
	for _, c := range ok {
		t.Run("OK/"+c.name, func(t *testing.T) {
			d, err := c.in.Normalize()
			if err != nil {
				t.Fatal(err)
			}
			if d.Subject != c.wantSubject || d.Body != c.in.Body {
				t.Fatalf("got %+v", d)
			}
		})
	}
	bad := []struct {
		name   string
		in     Draft
		detail string
	}{
		{"EmptyBody", Draft{}, "body: must not be empty"},
		{"BlankBody", Draft{Body: "  \n\t "}, "body: must not be empty"},
		{"LongBody", Draft{Body: strings.Repeat("é", MaxBody+1)}, "body: must be at most 10000 characters"},
		{"NULInBody", Draft{Body: "a\x00b"}, "body: must not contain control characters"},
		{"EscapeInBody", Draft{Body: "a\x1b[31mred"}, "body: must not contain control characters"},
		{"DELInBody", Draft{Body: "a\x7f"}, "body: must not contain control characters"},
		{"LongSubject", Draft{Subject: strings.Repeat("s", MaxSubject+1), Body: "x"}, "subject: must be at most 200 characters"},
		{"LineBreakInSubject", Draft{Subject: "one\ntwo", Body: "x"}, "subject: must not contain control characters"},
		{"TabInSubject", Draft{Subject: "one\ttwo", Body: "x"}, "subject: must not contain control characters"},
		{"BidiOverrideInSubject", Draft{Subject: "Invoice \u202efdp.exe", Body: "x"}, "subject: must not contain bidirectional"},
		{"BidiIsolateInSubject", Draft{Subject: "from \u2067admin\u2069", Body: "x"}, "subject: must not contain bidirectional"},
		{"C1InBody", Draft{Body: "a\u009bb"}, "body: must not contain control characters"},
	}
	for _, c := range bad {
		t.Run("Refused/"+c.name, func(t *testing.T) {
			_, err := c.in.Normalize()
			if store.KindOf(err) != store.KindInvalid || !strings.Contains(err.Error(), c.detail) {
				t.Fatalf("got %v, want invalid with %q", err, c.detail)
			}
		})
	}
}

// The writers of the tests, by their scopes.
var (
	ann = store.Scope{UserID: 1}
	ben = store.Scope{UserID: 2}
)

func TestSend(t *testing.T) {
	ctx := context.Background()
	refused := []struct {
		name   string
		to     int64
		detail string
	}{
		{"Self", 1, "recipient_id: you cannot send a message to yourself"},
		{"UnknownRecipient", 99, msgNotRecipient},
		{"DisabledRecipient", 3, msgNotRecipient},
		{"OutsideTheDirectory", 4, msgNotRecipient},
	}
	for _, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			svc, db, n := newService()
			_, err := svc.Send(ctx, ann, Draft{RecipientID: c.to, Body: "hi"})
			if store.KindOf(err) != store.KindInvalid || !strings.Contains(err.Error(), c.detail) {
				t.Fatalf("got %v, want invalid with %q", err, c.detail)
			}
			if len(db.created) != 0 || len(n.notes) != 0 {
				t.Fatal("a refused message was stored or notified")
			}
		})
	}
	t.Run("InvalidDraftBeforeRecipient", func(t *testing.T) {
		svc, _, _ := newService()
		if _, err := svc.Send(ctx, ann, Draft{RecipientID: 99, Body: ""}); err == nil || !strings.Contains(err.Error(), "body") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("StoreErrorKept", func(t *testing.T) {
		svc, db, _ := newService()
		db.err = errors.New("disk on fire")
		if _, err := svc.Send(ctx, ann, Draft{RecipientID: 2, Body: "hi"}); err == nil || store.KindOf(err) == store.KindInvalid {
			t.Fatalf("got %v, want the store's error", err)
		}
	})
	t.Run("OK", func(t *testing.T) {
		svc, db, n := newService()
		body := "Hi Ben,\n\nthe draft is ready. " + strings.Repeat("More words here. ", 20)
		m, err := svc.Send(ctx, ann, Draft{RecipientID: 2, Subject: " Re: draft ", Body: body})
		if err != nil {
			t.Fatal(err)
		}
		if m.Subject != "Re: draft" || db.created[0].Subject != "Re: draft" || db.created[0].Body != body {
			t.Fatalf("stored %+v", db.created[0])
		}
		if len(n.notes) != 1 {
			t.Fatalf("notes %+v", n.notes)
		}
		got := n.notes[0]
		if got.userID != 2 || got.note.Kind != notify.MessageReceived || got.note.Title != "New message from ann: Re: draft" ||
			got.note.Link != "/api/messages/conversations/1" || got.note.Body != notify.Preview(body, 140) {
			t.Fatalf("note %+v", got)
		}
	})
	t.Run("NoSubjectTitle", func(t *testing.T) {
		svc, _, n := newService()
		if _, err := svc.Send(ctx, ben, Draft{RecipientID: 1, Body: "yo"}); err != nil {
			t.Fatal(err)
		}
		if n.notes[0].note.Title != "New message from ben" {
			t.Fatalf("title %q", n.notes[0].note.Title)
		}
	})
}

func TestRecipients(t *testing.T) {
	ctx := context.Background()
	svc, _, _ := newService()
	list, total, err := svc.Recipients(ctx, ann, "be", store.Page{Page: 1, PerPage: 50})
	if err != nil || total != 1 || list[0].Username != "ben" {
		t.Fatalf("got %v %d %v", list, total, err)
	}
	if _, _, err := svc.Recipients(ctx, ann, strings.Repeat("é", MaxQuery+1), store.Page{Page: 1, PerPage: 50}); store.KindOf(err) != store.KindInvalid ||
		!strings.HasPrefix(err.Error(), "q: ") {
		t.Fatalf("a long q: %v, want invalid naming q", err)
	}
}

func TestMarkRead(t *testing.T) {
	ctx := context.Background()
	svc, db, _ := newService()
	m, err := svc.Send(ctx, ann, Draft{RecipientID: 2, Body: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.MarkRead(ctx, 1, m.ID); store.KindOf(err) != store.KindInvalid {
		t.Fatalf("sender marks read: %v, want invalid", err)
	}
	if _, err := svc.MarkRead(ctx, 3, m.ID); !store.IsNotFound(err) {
		t.Fatalf("a stranger marks read: %v, want not found", err)
	}
	if len(db.read) != 0 {
		t.Fatal("a refused mark reached the store")
	}
	if _, err := svc.MarkRead(ctx, 2, m.ID); err != nil || len(db.read) != 1 {
		t.Fatalf("recipient marks read: %v", err)
	}
}

func TestConversationWithUnknownUser(t *testing.T) {
	svc, _, _ := newService()
	if _, _, err := svc.Conversation(context.Background(), 1, 99, store.Page{Page: 1, PerPage: 50}); !store.IsNotFound(err) {
		t.Fatalf("got %v, want not found", err)
	}
	if _, _, err := svc.Conversation(context.Background(), 1, 3, store.Page{Page: 1, PerPage: 50}); err != nil {
		t.Fatalf("a disabled user's thread stays readable: %v", err)
	}
}
