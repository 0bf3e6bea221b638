// Package message holds the rules of direct messages (/api/messages): who
// may write to whom, what a message may hold, who may mark one read, and
// the notification a recipient gets. Each side sees a message until it
// deletes it for itself; nobody else ever sees it.
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
	CreateMessage(ctx context.Context, n store.NewMessage) (*store.DirectMessage, error)
	MessageFor(ctx context.Context, userID, id int64) (*store.DirectMessage, error)
	Inbox(ctx context.Context, f store.MessageFilter) ([]*store.DirectMessage, int, error)
	Sent(ctx context.Context, f store.MessageFilter) ([]*store.DirectMessage, int, error)
	Conversations(ctx context.Context, userID int64, p store.Page) ([]*store.ConversationSummary, int, error)
	Conversation(ctx context.Context, userID, otherID int64, p store.Page) ([]*store.DirectMessage, int, error)
	MarkMessageRead(ctx context.Context, recipientID, id int64) (*store.DirectMessage, error)
	DeleteMessageFor(ctx context.Context, userID, id int64) error
}

// Notifier tells a user something; *notify.Notifier satisfies it. It never
// fails the work that raised the note.
type Notifier interface {
	User(ctx context.Context, userID int64, note notify.Note)
}

// Service implements the message rules over the store.
type Service struct {
	db     Store
	notify Notifier
}

// New returns the service.
func New(db Store, n Notifier) *Service {
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

// Send stores a message from senderID and notifies the recipient. The
// recipient must be another active user (else invalid).
func (s *Service) Send(ctx context.Context, senderID int64, d Draft) (*store.DirectMessage, error) {
	d, err := d.Normalize()
	if err != nil {
		return nil, err
	}
	if d.RecipientID == senderID {
		return nil, store.Invalid("recipient_id: you cannot send a message to yourself")
	}
	to, err := s.db.UserByID(ctx, d.RecipientID)
	if store.IsNotFound(err) || (err == nil && !to.IsActive) {
		return nil, store.Invalid("recipient_id: no active user has this id")
	}
	if err != nil {
		return nil, err
	}
	m, err := s.db.CreateMessage(ctx, store.NewMessage{SenderID: senderID, RecipientID: d.RecipientID, Subject: d.Subject, Body: d.Body})
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
