// Package message holds the rules of direct messages (/api/messages): who
// may write to whom, what a message may hold, who may mark one read, and
// the notification a recipient gets. Each side sees a message until it
// deletes it for itself; nobody else ever sees it.
//
// Who may write to whom is the directory (store.ListDirectory): the active
// users who share an environment with the writer, and the admins; an
// admin, who sees every environment, may write to every active user. The
// directory is what a writer can look people up in, and the only people
// a message may go to.
package message

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/copydesk/copydesk/server/notify"
	"github.com/copydesk/copydesk/server/valid"
	"github.com/copydesk/copydesk/store"
)

// Limits of a message, in characters.
const (
	MaxBody    = 10000
	MaxSubject = 200
)

// previewLength is how much of the body the notification shows.
const previewLength = 140

// Store is what the service needs of the store; *store.DB satisfies it.
type Store interface {
	UserByID(ctx context.Context, id int64) (*store.User, error)
	ListDirectory(ctx context.Context, f store.DirectoryFilter) ([]store.UserSummary, int, error)
	InDirectory(ctx context.Context, sc store.Scope, userID int64) (bool, error)
	CreateMessage(ctx context.Context, n store.NewMessage) (*store.DirectMessage, error)
	MessageFor(ctx context.Context, userID, id int64) (*store.DirectMessage, error)
	Inbox(ctx context.Context, f store.MessageFilter) ([]*store.DirectMessage, int, error)
	Sent(ctx context.Context, f store.MessageFilter) ([]*store.DirectMessage, int, error)
	Conversations(ctx context.Context, userID int64, p store.Page) ([]*store.ConversationSummary, int, error)
	Conversation(ctx context.Context, userID, otherID int64, p store.Page) ([]*store.DirectMessage, int, error)
	MarkMessageRead(ctx context.Context, recipientID, id int64) (*store.DirectMessage, error)
	DeleteMessageFor(ctx context.Context, userID, id int64) error
}

// Service implements the message rules over the store.
type Service struct {
	db     Store
	notify notify.ToUser
}

// New returns the service.
func New(db Store, n notify.ToUser) *Service {
	return &Service{db: db, notify: n}
}

// Draft is a message to send.
type Draft struct {
	RecipientID int64
	Subject     string
	Body        string
}

// Normalize checks a draft and returns it as it is stored: the subject
// trimmed. The body keeps its text as written.
func (d Draft) Normalize() (Draft, error) {
	switch {
	case strings.TrimSpace(d.Body) == "":
		return d, store.Invalid("body: must not be empty")
	case utf8.RuneCountInString(d.Body) > MaxBody:
		return d, store.Invalid("body: must be at most %d characters", MaxBody)
	}
	if err := valid.Text("body", d.Body); err != nil {
		return d, err
	}
	if utf8.RuneCountInString(d.Subject) > MaxSubject {
		return d, store.Invalid("subject: must be at most %d characters", MaxSubject)
	}
	// The subject is one line (it becomes the notification's title); spaces
	// and line breaks around it are dropped, any inside it refused.
	d.Subject = strings.TrimSpace(d.Subject)
	return d, valid.Line("subject", d.Subject)
}

// MaxQuery is the longest directory search, in characters.
const MaxQuery = 200

// Recipients lists a page of the people the scope's user may write to, by
// username; q, when not empty, keeps those whose username or full name
// contains it.
func (s *Service) Recipients(ctx context.Context, sc store.Scope, q string, p store.Page) ([]store.UserSummary, int, error) {
	if utf8.RuneCountInString(q) > MaxQuery {
		return nil, 0, store.Invalid("q: must be at most %d characters", MaxQuery)
	}
	return s.db.ListDirectory(ctx, store.DirectoryFilter{Scope: sc, Q: q, Page: p})
}

// msgNotRecipient is the one answer for a recipient that is unknown,
// disabled or outside the directory, so that it tells nothing about ids
// the writer may not see.
const msgNotRecipient = "recipient_id: is not someone you can write to; GET /api/messages/recipients lists who is"

// Send stores a message from the scope's user and notifies the recipient,
// who must be in the sender's directory (else invalid).
func (s *Service) Send(ctx context.Context, sc store.Scope, d Draft) (*store.DirectMessage, error) {
	d, err := d.Normalize()
	if err != nil {
		return nil, err
	}
	if d.RecipientID == sc.UserID {
		return nil, store.Invalid("recipient_id: you cannot send a message to yourself")
	}
	ok, err := s.db.InDirectory(ctx, sc, d.RecipientID)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, store.Invalid("%s", msgNotRecipient)
	}
	m, err := s.db.CreateMessage(ctx, store.NewMessage{SenderID: sc.UserID, RecipientID: d.RecipientID, Subject: d.Subject, Body: d.Body})
	if err != nil {
		return nil, err
	}
	title := "New message from " + m.Sender.Username
	if m.Subject != "" {
		title += ": " + m.Subject
	}
	s.notify.User(ctx, m.RecipientID, notify.Note{Kind: notify.MessageReceived, Title: title,
		Body: notify.Preview(m.Body, previewLength), Link: fmt.Sprintf("/api/messages/conversations/%d", m.SenderID)})
	return m, nil
}

// Inbox lists the messages userID received and kept, newest first;
// unreadOnly keeps the unread ones.
func (s *Service) Inbox(ctx context.Context, userID int64, unreadOnly bool, p store.Page) ([]*store.DirectMessage, int, error) {
	return s.db.Inbox(ctx, store.MessageFilter{UserID: userID, UnreadOnly: unreadOnly, Page: p})
}

// Sent lists the messages userID sent and kept, newest first.
func (s *Service) Sent(ctx context.Context, userID int64, p store.Page) ([]*store.DirectMessage, int, error) {
	return s.db.Sent(ctx, store.MessageFilter{UserID: userID, Page: p})
}

// Conversations lists one row per person userID exchanged messages with,
// the most recent first.
func (s *Service) Conversations(ctx context.Context, userID int64, p store.Page) ([]*store.ConversationSummary, int, error) {
	return s.db.Conversations(ctx, userID, p)
}

// Conversation lists the thread between userID and otherID that userID
// kept, newest first. An unknown other user is not found.
func (s *Service) Conversation(ctx context.Context, userID, otherID int64, p store.Page) ([]*store.DirectMessage, int, error) {
	if _, err := s.db.UserByID(ctx, otherID); err != nil {
		return nil, 0, err
	}
	return s.db.Conversation(ctx, userID, otherID, p)
}

// MarkRead marks a message userID received read. A message userID cannot
// see is not found; one userID sent is invalid: only the recipient reads it.
func (s *Service) MarkRead(ctx context.Context, userID, id int64) (*store.DirectMessage, error) {
	m, err := s.db.MessageFor(ctx, userID, id)
	if err != nil {
		return nil, err
	}
	if m.RecipientID != userID {
		return nil, store.Invalid("only the recipient can mark a message read")
	}
	return s.db.MarkMessageRead(ctx, userID, id)
}

// Delete removes a message for userID only; the other side keeps it.
func (s *Service) Delete(ctx context.Context, userID, id int64) error {
	return s.db.DeleteMessageFor(ctx, userID, id)
}
