package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Statuses of a chat message. A user message is complete from the start;
// a reply is generating while its job runs.
const (
	ChatGenerating = "generating"
	ChatComplete   = "complete"
	ChatIncomplete = "incomplete" // stopped, or cut off after some text
	ChatFailed     = "failed"
)

// ChatMessage is one message of a conversation. Messages form a tree
// through ParentID (see migration 0014).
type ChatMessage struct {
	ID             int64
	ConversationID int64
	ParentID       *int64
	Role           string // user or assistant
	Content        string
	Status         string
	Error          string
	Usage
	UsageEstimated bool
	// TrimmedMessages is how many of the oldest messages of the history
	// were left out of the prompt to fit the model's context window.
	TrimmedMessages int
	JobID           *int64
	CreatedAt       time.Time
	FinishedAt      *time.Time
}

// Finished reports whether the message is no longer being generated.
func (m *ChatMessage) Finished() bool { return m.Status != ChatGenerating }

const chatMessageColumns = `m.id, m.conversation_id, m.parent_id, m.role, m.content, m.status, m.error, m.model, m.input_tokens,
	m.output_tokens, m.stop_reason, m.cost_micros, m.usage_estimated, m.trimmed_messages, m.job_id, m.created_at, m.finished_at`

func scanChatMessage(row rowScanner) (*ChatMessage, error) {
	var m ChatMessage
	var parent, job sql.NullInt64
	var cost sql.NullInt64
	var created string
	var finished sql.NullString
	if err := row.Scan(&m.ID, &m.ConversationID, &parent, &m.Role, &m.Content, &m.Status, &m.Error, &m.Model, &m.InputTokens,
		&m.OutputTokens, &m.StopReason, &cost, &m.UsageEstimated, &m.TrimmedMessages, &job, &created, &finished); err != nil {
		return nil, err
	}
	m.ParentID, m.JobID = nullID(parent), nullID(job)
	m.Cost = nullMicros(cost)
	m.CreatedAt, m.FinishedAt = parseTime(created), parseNullTime(finished)
	return &m, nil
}

// ChatMessageByID finds a message.
func (db *DB) ChatMessageByID(ctx context.Context, id int64) (*ChatMessage, error) {
	return findRow(ctx, db, scanChatMessage, "message", `SELECT `+chatMessageColumns+` FROM chat_messages m WHERE m.id = ?`, id)
}

// ChatNode is a message's place in its conversation's tree.
type ChatNode struct {
	ID       int64
	ParentID *int64
}

// ChatTree is the tree of a conversation's messages, in id order (a
// message comes after its parent), read from an index alone.
func (db *DB) ChatTree(ctx context.Context, conversationID int64) ([]ChatNode, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT m.id, m.parent_id FROM chat_messages m WHERE m.conversation_id = ? ORDER BY m.id`, conversationID)
	if err != nil {
		return nil, fmt.Errorf("store: conversation tree: %w", err)
	}
	defer rows.Close()
	out := []ChatNode{}
	for rows.Next() {
		var n ChatNode
		var parent sql.NullInt64
		if err := rows.Scan(&n.ID, &parent); err != nil {
			return nil, fmt.Errorf("store: conversation tree: %w", err)
		}
		n.ParentID = nullID(parent)
		out = append(out, n)
	}
	return out, rows.Err()
}

// chatBatch bounds the ids of one ChatMessagesByIDs query.
const chatBatch = 500

// ChatMessagesByIDs returns the messages of a conversation with these ids,
// in id order; ids of other conversations are skipped.
func (db *DB) ChatMessagesByIDs(ctx context.Context, conversationID int64, ids []int64) ([]*ChatMessage, error) {
	out := []*ChatMessage{}
	for len(ids) > 0 {
		batch := ids[:min(chatBatch, len(ids))]
		ids = ids[len(batch):]
		args := make([]any, 0, len(batch)+1)
		args = append(args, conversationID)
		for _, id := range batch {
			args = append(args, id)
		}
		rows, err := db.listRows(ctx, `SELECT `+chatMessageColumns+` FROM chat_messages m WHERE m.conversation_id = ? AND m.id IN (`+
			strings.Repeat("?,", len(batch)-1)+`?) ORDER BY m.id`, args...)
		if err != nil {
			return nil, fmt.Errorf("store: list messages: %w", err)
		}
		for rows.Next() {
			m, err := scanChatMessage(rows)
			if err != nil {
				rows.Close()
				return nil, fmt.Errorf("store: list messages: %w", err)
			}
			out = append(out, m)
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("store: list messages: %w", err)
		}
	}
	return out, nil
}

// GeneratingChatMessage is the reply being generated in a conversation;
// not found when none is.
func (db *DB) GeneratingChatMessage(ctx context.Context, conversationID int64) (*ChatMessage, error) {
	m, err := scanChatMessage(db.r.QueryRowContext(ctx, `SELECT `+chatMessageColumns+` FROM chat_messages m
		WHERE m.conversation_id = ? AND m.status = 'generating'`, conversationID))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, NotFound("no reply is being generated")
	}
	if err != nil {
		return nil, fmt.Errorf("store: generating message: %w", err)
	}
	return m, nil
}

// NewChatExchange is a reply to generate, with the user message it answers
// when that is new.
type NewChatExchange struct {
	ConversationID int64
	// ParentID is where the exchange hangs: with User, the user message's
	// parent (the reply it follows, nil at the start); without, the user
	// message the reply answers.
	ParentID *int64
	// User is the text of a new user message; nil to answer ParentID again
	// (a regenerated reply).
	User *string
}

// ErrChatBusy is the conflict of an exchange in a conversation that is
// already generating a reply.
var ErrChatBusy = errors.New("store: a reply is already being generated in this conversation")

// CreateChatExchange records the user message (if new), the reply to be
// generated and the job that generates it, and makes the reply the
// conversation's current message, in one transaction. A conversation
// generates one reply at a time: ErrChatBusy (a conflict) otherwise.
func (db *DB) CreateChatExchange(ctx context.Context, n NewChatExchange, j RunJob) (user, reply *ChatMessage, err error) {
	if n.User == nil && n.ParentID == nil {
		return nil, nil, Invalid("a reply needs the message it answers")
	}
	err = db.tx(ctx, func(tx *sql.Tx) error {
		now := db.now()
		parent := n.ParentID
		if n.User != nil {
			u, err := scanChatMessage(tx.QueryRowContext(ctx, `INSERT INTO chat_messages (conversation_id, parent_id, role, content,
				status, created_at, finished_at) VALUES (?, ?, 'user', ?, 'complete', ?, ?) RETURNING `+returning(chatMessageColumns),
				n.ConversationID, n.ParentID, *n.User, now, now))
			if err != nil {
				return translate(err, "message")
			}
			user, parent = u, &u.ID
		}
		r, err := scanChatMessage(tx.QueryRowContext(ctx, `INSERT INTO chat_messages (conversation_id, parent_id, role, status, created_at)
			VALUES (?, ?, 'assistant', 'generating', ?) RETURNING `+returning(chatMessageColumns), n.ConversationID, parent, now))
		if err != nil {
			if err = translate(err, "message"); KindOf(err) == KindConflict {
				return &Error{Kind: KindConflict, Message: "a reply is already being generated in this conversation", Err: ErrChatBusy}
			}
			return err
		}
		if r.JobID, err = db.insertRunJobTx(ctx, tx, "chat_messages", r.ID, j); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE chat_conversations SET current_message_id = ?, activity_at = ? WHERE id = ?`,
			r.ID, now, n.ConversationID); err != nil {
			return err
		}
		reply = r
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("store: create chat exchange: %w", err)
	}
	return user, reply, nil
}

// FinishChatMessage records how a reply's generation ended and returns the
// reply; one already finished keeps its first ending, and takes the usage
// (see finishTx).
func (db *DB) FinishChatMessage(ctx context.Context, id int64, o ChatOutcome) (*ChatMessage, error) {
	err := db.tx(ctx, func(tx *sql.Tx) error {
		_, err := db.finishTx(ctx, tx, chatReplyTable, id, o)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: finish message: %w", translate(err, "message"))
	}
	m, err := findIn(ctx, db.w, scanChatMessage, "message", `SELECT `+chatMessageColumns+` FROM chat_messages m WHERE m.id = ?`, id)
	if err != nil {
		return nil, fmt.Errorf("store: finish message: %w", err)
	}
	return m, nil
}

var chatReplyTable = generationTable{table: "chat_messages", unfinished: "'generating'",
	ending: func(o Outcome) []column { return []column{{"content", o.Output}, {"trimmed_messages", o.Trimmed}} },
	usage: func(o Outcome) []column {
		return []column{{"usage_estimated", o.UsageEstimated}, {"trimmed_messages", o.Trimmed}}
	}}

// DeleteChatMessage deletes a message and every message below it (its
// replies, and theirs), in one statement, and says how many went.
func (db *DB) DeleteChatMessage(ctx context.Context, id int64) (int64, error) {
	res, err := db.exec(ctx, `DELETE FROM chat_messages WHERE id IN (
		WITH RECURSIVE branch (id) AS (SELECT CAST(? AS BIGINT) UNION ALL SELECT m.id FROM chat_messages m JOIN branch b ON m.parent_id = b.id)
		SELECT id FROM branch)`, id)
	if err != nil {
		return 0, fmt.Errorf("store: delete message: %w", err)
	}
	n, _ := res.RowsAffected()
	if n == 0 {
		return 0, NotFound("message not found")
	}
	return n, nil
}

// FailOrphanChatMessages is FailOrphanRuns for replies: those left
// generating with no live job fail with reason.
func (db *DB) FailOrphanChatMessages(ctx context.Context, reason string) (int64, error) {
	return db.failOrphans(ctx, "chat_messages", "'generating'", "messages", reason)
}
