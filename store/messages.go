package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// DirectMessage is a message between two users.
type DirectMessage struct {
	ID          int64
	SenderID    int64
	RecipientID int64
	Subject     string
	Body        string
	ReadAt      *time.Time
	CreatedAt   time.Time
	Sender      UserSummary
	Recipient   UserSummary
}

// UserSummary is how a user appears beside something else.
type UserSummary struct {
	ID            int64
	Username      string
	FullName      string
	AvatarVersion int64
}

const messageColumns = `m.id, m.sender_id, m.recipient_id, m.subject, m.body, m.read_at, m.created_at,
	s.username, s.full_name, s.avatar_version, r.username, r.full_name, r.avatar_version`

const messageSelect = `SELECT ` + messageColumns + `
	FROM messages m JOIN users s ON s.id = m.sender_id JOIN users r ON r.id = m.recipient_id`

// scanMessage reads messageColumns, then any extra columns into extra.
func scanMessage(row rowScanner, extra ...any) (*DirectMessage, error) {
	var m DirectMessage
	var readAt sql.NullString
	var created string
	dest := append([]any{&m.ID, &m.SenderID, &m.RecipientID, &m.Subject, &m.Body, &readAt, &created,
		&m.Sender.Username, &m.Sender.FullName, &m.Sender.AvatarVersion,
		&m.Recipient.Username, &m.Recipient.FullName, &m.Recipient.AvatarVersion}, extra...)
	if err := row.Scan(dest...); err != nil {
		return nil, err
	}
	m.Sender.ID, m.Recipient.ID = m.SenderID, m.RecipientID
	m.ReadAt = parseNullTime(readAt)
	m.CreatedAt = parseTime(created)
	return &m, nil
}

// NewMessage is what CreateMessage needs.
type NewMessage struct {
	SenderID    int64
	RecipientID int64
	Subject     string
	Body        string
}

// CreateMessage stores a message. Who may write to whom is the message
// service's rule; here an unknown user is only a broken reference.
func (db *DB) CreateMessage(ctx context.Context, n NewMessage) (*DirectMessage, error) {
	lo, hi := min(n.SenderID, n.RecipientID), max(n.SenderID, n.RecipientID)
	id, err := db.insert(ctx, `INSERT INTO messages (sender_id, recipient_id, pair_lo, pair_hi, subject, body, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id`, n.SenderID, n.RecipientID, lo, hi, n.Subject, n.Body, db.now())
	if err != nil {
		return nil, translate(err, "message")
	}
	return db.messageWhere(ctx, db.w, `m.id = ?`, id)
}

func (db *DB) messageWhere(ctx context.Context, q queryer, where string, args ...any) (*DirectMessage, error) {
	m, err := scanMessage(q.QueryRowContext(ctx, messageSelect+` WHERE `+where, args...))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, NotFound("message not found")
	}
	if err != nil {
		return nil, fmt.Errorf("store: find message: %w", err)
	}
	return m, nil
}

// MessageFor returns a message the user sent or received and has not
// deleted; any other is not found.
func (db *DB) MessageFor(ctx context.Context, userID, id int64) (*DirectMessage, error) {
	return db.messageWhere(ctx, db.r, `m.id = ? AND ((m.sender_id = ? AND m.sender_deleted_at IS NULL)
		OR (m.recipient_id = ? AND m.recipient_deleted_at IS NULL))`, id, userID, userID)
}

// MessageFilter narrows the message lists.
type MessageFilter struct {
	UserID     int64
	UnreadOnly bool // inbox only
	Page
}

// Inbox lists the messages a user received and kept, newest first. It walks
// the index messages_inbox (see TestInboxUsesIndex).
func (db *DB) Inbox(ctx context.Context, f MessageFilter) ([]*DirectMessage, int, error) {
	cond := `m.recipient_id = ? AND m.recipient_deleted_at IS NULL`
	if f.UnreadOnly {
		cond += ` AND m.read_at IS NULL`
	}
	return db.pageOfMessages(ctx, cond, f.Page, f.UserID)
}

// InboxQuery is the query behind Inbox, for EXPLAIN QUERY PLAN in tests.
const InboxQuery = messageSelect + ` WHERE m.recipient_id = ? AND m.recipient_deleted_at IS NULL ORDER BY m.id DESC LIMIT ? OFFSET ?`

// Sent lists the messages a user sent and kept, newest first.
func (db *DB) Sent(ctx context.Context, f MessageFilter) ([]*DirectMessage, int, error) {
	return db.pageOfMessages(ctx, `m.sender_id = ? AND m.sender_deleted_at IS NULL`, f.Page, f.UserID)
}

// Conversation lists the messages between a user and another one that the
// user kept, newest first.
func (db *DB) Conversation(ctx context.Context, userID, otherID int64, p Page) ([]*DirectMessage, int, error) {
	lo, hi := min(userID, otherID), max(userID, otherID)
	return db.pageOfMessages(ctx, `m.pair_lo = ? AND m.pair_hi = ? AND
		((m.sender_id = ? AND m.sender_deleted_at IS NULL) OR (m.recipient_id = ? AND m.recipient_deleted_at IS NULL))`,
		p, lo, hi, userID, userID)
}

func (db *DB) pageOfMessages(ctx context.Context, cond string, p Page, args ...any) ([]*DirectMessage, int, error) {
	const joins = ` JOIN users s ON s.id = m.sender_id JOIN users r ON r.id = m.recipient_id`
	return listPage(ctx, db, listQuery{from: "messages m" + joins, count: "messages m", where: []string{cond}, args: args,
		columns: messageColumns, order: "m.id DESC", what: "messages"}, p, func(row rowScanner) (*DirectMessage, error) { return scanMessage(row) })
}

// ConversationSummary is one row of a user's conversation list.
type ConversationSummary struct {
	With   UserSummary
	Last   *DirectMessage
	Unread int
	Total  int
}

// Conversations lists, for each user the given user exchanged messages
// with, the last kept message and how many received ones are unread; the
// most recent conversation first. It reads the rows the conversations
// triggers keep (migration 0005), with their last messages, in one query.
func (db *DB) Conversations(ctx context.Context, userID int64, p Page) ([]*ConversationSummary, int, error) {
	const joins = ` JOIN messages m ON m.id = c.last_id JOIN users s ON s.id = m.sender_id JOIN users r ON r.id = m.recipient_id`
	return listPage(ctx, db, listQuery{from: "conversations c" + joins, count: "conversations c", where: []string{"c.user_id = ?"},
		args: []any{userID}, columns: messageColumns + ", c.total, c.unread", order: "c.last_id DESC", what: "conversations"}, p,
		func(row rowScanner) (*ConversationSummary, error) {
			var c ConversationSummary
			last, err := scanMessage(row, &c.Total, &c.Unread)
			if err != nil {
				return nil, err
			}
			c.Last, c.With = last, last.Sender
			if last.SenderID == userID {
				c.With = last.Recipient
			}
			return &c, nil
		})
}

// MarkMessageRead marks a message the user received and kept read (once:
// a second call keeps the first time). Any other message is not found;
// that only the recipient may do this is the message service's rule.
func (db *DB) MarkMessageRead(ctx context.Context, recipientID, id int64) (*DirectMessage, error) {
	res, err := db.exec(ctx, `UPDATE messages SET read_at = COALESCE(read_at, ?)
		WHERE id = ? AND recipient_id = ? AND recipient_deleted_at IS NULL`, db.now(), id, recipientID)
	if err != nil {
		return nil, fmt.Errorf("store: mark message read: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return nil, fmt.Errorf("store: mark message read: %w", err)
	}
	if n == 0 {
		return nil, NotFound("message not found")
	}
	return db.messageWhere(ctx, db.w, `m.id = ?`, id)
}

// DeleteMessageFor removes a message for one side only; the other side keeps
// it. When both sides have deleted it, the row goes.
func (db *DB) DeleteMessageFor(ctx context.Context, userID, id int64) error {
	now := db.now()
	return db.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE messages SET
			sender_deleted_at = CASE WHEN sender_id = ?1 THEN ?2 ELSE sender_deleted_at END,
			recipient_deleted_at = CASE WHEN recipient_id = ?1 THEN ?2 ELSE recipient_deleted_at END
			WHERE id = ?3 AND ((sender_id = ?1 AND sender_deleted_at IS NULL) OR (recipient_id = ?1 AND recipient_deleted_at IS NULL))`,
			userID, now, id)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		if n == 0 {
			return NotFound("message not found")
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM messages WHERE id = ? AND sender_deleted_at IS NOT NULL AND recipient_deleted_at IS NOT NULL`, id)
		return err
	})
}
