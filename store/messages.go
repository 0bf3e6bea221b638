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

func scanMessage(row rowScanner) (*DirectMessage, error) {
	var m DirectMessage
	var readAt sql.NullString
	var created string
	if err := row.Scan(&m.ID, &m.SenderID, &m.RecipientID, &m.Subject, &m.Body, &readAt, &created,
		&m.Sender.Username, &m.Sender.FullName, &m.Sender.AvatarVersion,
		&m.Recipient.Username, &m.Recipient.FullName, &m.Recipient.AvatarVersion); err != nil {
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
		columns: messageColumns, order: "m.id DESC", what: "messages"}, p, scanMessage)
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
// most recent conversation first.
func (db *DB) Conversations(ctx context.Context, userID int64, p Page) ([]*ConversationSummary, int, error) {
	const perCounterpart = `SELECT CASE WHEN m.sender_id = ?1 THEN m.recipient_id ELSE m.sender_id END AS other,
			MAX(m.id) AS last_id, COUNT(*) AS total,
			SUM(m.recipient_id = ?1 AND m.read_at IS NULL) AS unread
		FROM messages m
		WHERE (m.sender_id = ?1 AND m.sender_deleted_at IS NULL) OR (m.recipient_id = ?1 AND m.recipient_deleted_at IS NULL)
		GROUP BY other`
	var total int
	if err := db.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM (`+perCounterpart+`)`, userID).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("store: count conversations: %w", err)
	}
	rows, err := db.r.QueryContext(ctx, `SELECT c.other, c.last_id, c.total, c.unread FROM (`+perCounterpart+`) c
		ORDER BY c.last_id DESC LIMIT ?2 OFFSET ?3`, userID, p.limit(), p.offset())
	if err != nil {
		return nil, 0, fmt.Errorf("store: list conversations: %w", err)
	}
	type row struct{ other, last, total, unread int64 }
	var found []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.other, &r.last, &r.total, &r.unread); err != nil {
			rows.Close()
			return nil, 0, err
		}
		found = append(found, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	out := make([]*ConversationSummary, 0, len(found))
	for _, r := range found {
		last, err := db.messageWhere(ctx, db.r, `m.id = ?`, r.last)
		if err != nil {
			return nil, 0, err
		}
		with := last.Sender
		if last.SenderID == userID {
			with = last.Recipient
		}
		out = append(out, &ConversationSummary{With: with, Last: last, Unread: int(r.unread), Total: int(r.total)})
	}
	return out, total, nil
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
