package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
)

// ChatConversation is an OpenChat conversation (server/chat). It belongs to
// its owner alone, in an environment or none.
type ChatConversation struct {
	ID            int64
	UserID        int64
	EnvironmentID *int64
	// AgentID, when set, gives the conversation the agent's system prompt,
	// credential, model and parameters; Model otherwise picks a model
	// under the AI settings ("" for their default).
	AgentID *int64
	Model   string
	Title   string
	// Archived conversations leave the default list; pinned ones lead it.
	Archived bool
	Pinned   bool
	// CurrentMessageID is the message the active branch runs through;
	// nil: the newest message.
	CurrentMessageID *int64
	ActivityAt       time.Time // the last message's time
	CreatedAt        time.Time
	UpdatedAt        time.Time
}

const chatConversationColumns = `c.id, c.user_id, c.environment_id, c.agent_id, c.model, c.title, c.archived, c.pinned,
	c.current_message_id, c.activity_at, c.created_at, c.updated_at`

func scanChatConversation(row rowScanner) (*ChatConversation, error) {
	var c ChatConversation
	var env, agent, current sql.NullInt64
	var activity, created, updated string
	if err := row.Scan(&c.ID, &c.UserID, &env, &agent, &c.Model, &c.Title, &c.Archived, &c.Pinned, &current,
		&activity, &created, &updated); err != nil {
		return nil, err
	}
	c.EnvironmentID, c.AgentID, c.CurrentMessageID = nullID(env), nullID(agent), nullID(current)
	c.ActivityAt, c.CreatedAt, c.UpdatedAt = parseTime(activity), parseTime(created), parseTime(updated)
	return &c, nil
}

// NewChatConversation is what CreateChatConversation needs; the service
// has checked it.
type NewChatConversation struct {
	UserID        int64
	EnvironmentID *int64
	AgentID       *int64
	Model         string
	Title         string
	Pinned        bool
}

// CreateChatConversation inserts a conversation and returns it as stored.
func (db *DB) CreateChatConversation(ctx context.Context, n NewChatConversation) (*ChatConversation, error) {
	now := db.now()
	c, err := insertRow(ctx, db, scanChatConversation, `INSERT INTO chat_conversations (user_id, environment_id, agent_id, model,
		title, pinned, activity_at, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING `+returning(chatConversationColumns),
		n.UserID, n.EnvironmentID, n.AgentID, n.Model, n.Title, boolInt(n.Pinned), now, now, now)
	if err != nil {
		return nil, fmt.Errorf("store: create conversation: %w", translate(err, "conversation"))
	}
	return c, nil
}

// ChatConversationByID finds a conversation, whoever owns it.
func (db *DB) ChatConversationByID(ctx context.Context, id int64) (*ChatConversation, error) {
	return findRow(ctx, db, scanChatConversation, "conversation", `SELECT `+chatConversationColumns+` FROM chat_conversations c WHERE c.id = ?`, id)
}

// ChatConversationFilter narrows ListChatConversations.
type ChatConversationFilter struct {
	OwnerID int64 // whose conversations; required: nobody lists another's
	Scope   Scope // of those, the ones outside any environment or in one it sees
	// Archived lists the archived conversations instead of the others.
	Archived      bool
	Pinned        *bool
	EnvironmentID *int64
	// Q finds conversations whose title, or one of whose messages, holds
	// every word of it (a word's beginning matches: "sourd" finds
	// "sourdough"), without regard to case or accents.
	Q    string
	Sort Sort // by chatConversationSorts; pinned first, then newest activity, by default
	Page Page
}

// chatConversationSorts are the orders ListChatConversations takes besides
// its default, each led by an index of the owner's list (chatSortIndexes).
var chatConversationSorts = map[string]string{"activity_at": "c.activity_at", "created_at": "c.created_at", "title": "c.title COLLATE NOCASE"}

// chatSortIndexes are the indexes a sorted page walks. Named, because with
// pinned= the planner would rather search the default order's index on
// (owner, archived, pinned) and sort what it finds.
var chatSortIndexes = map[string]string{"activity_at": "chat_conversations_activity", "created_at": "chat_conversations_created",
	"title": "chat_conversations_title"}

func (ChatConversationFilter) sortColumns() map[string]string { return chatConversationSorts }

// ListChatConversations lists an owner's conversations: pinned first, then
// by newest activity, unless f.Sort asks for another order.
func (db *DB) ListChatConversations(ctx context.Context, f ChatConversationFilter) ([]*ChatConversation, int, error) {
	order, err := f.Sort.orderBy(chatConversationSorts, "c.pinned DESC, c.activity_at DESC, c.id DESC", "c.id")
	if err != nil {
		return nil, 0, err
	}
	where := []string{"c.user_id = ?", "c.archived = ?"}
	args := []any{f.OwnerID, boolInt(f.Archived)}
	if cond, scopeArgs := f.Scope.envIn("c.environment_id"); cond != "" {
		where, args = append(where, "(c.environment_id IS NULL OR "+cond+")"), append(args, scopeArgs...)
	}
	if f.Pinned != nil {
		where, args = append(where, "c.pinned = ?"), append(args, boolInt(*f.Pinned))
	}
	if f.EnvironmentID != nil {
		where, args = append(where, "c.environment_id = ?"), append(args, *f.EnvironmentID)
	}
	if cond, searchArgs := db.d.ChatSearch(f.Q); cond != "" {
		where, args = append(where, cond), append(args, searchArgs...)
	} else if strings.TrimSpace(f.Q) != "" {
		where = append(where, "1 = 0") // nothing in it is a word: nothing matches
	}
	from := "chat_conversations c"
	if index := chatSortIndexes[f.Sort.Field]; index != "" {
		from += " INDEXED BY " + index
	}
	return listPage(ctx, db, listQuery{from: from, count: "chat_conversations c", where: where, args: args, columns: chatConversationColumns,
		order: order, what: "conversations"}, f.Page, scanChatConversation)
}

// ftsQuery turns a user's search text into an FTS5 query: every word a
// quoted prefix ("sourd"*), all of them required. Words are runs of
// letters, digits and marks, as the tokenizer sees them, so no quote or FTS5
// syntax (AND, NEAR, column filters) of the user's reaches the query;
// "" when the text holds no word.
func ftsQuery(q string) string {
	var terms []string
	for _, w := range ftsWords(q) {
		terms = append(terms, `"`+w+`"*`)
	}
	return strings.Join(terms, " ")
}

// ftsWords are the words of a search text: runs of letters, digits and
// marks.
func ftsWords(q string) []string {
	return strings.FieldsFunc(q, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.IsMark(r) })
}

// ChatConversationUpdate changes a conversation; nil fields stay.
type ChatConversationUpdate struct {
	Title    *string
	Model    *string
	Archived *bool
	Pinned   *bool
	// SetAgent replaces the agent with AgentID (nil: none).
	SetAgent bool
	AgentID  *int64
	// SetCurrent replaces the current message with CurrentMessageID.
	SetCurrent       bool
	CurrentMessageID *int64
}

// UpdateChatConversation applies u and returns the conversation as stored.
func (db *DB) UpdateChatConversation(ctx context.Context, id int64, u ChatConversationUpdate) (*ChatConversation, error) {
	c, err := insertRow(ctx, db, scanChatConversation, `UPDATE chat_conversations SET title = COALESCE(?, title),
		model = COALESCE(?, model), archived = COALESCE(?, archived), pinned = COALESCE(?, pinned),
		agent_id = CASE WHEN ? THEN ? ELSE agent_id END,
		current_message_id = CASE WHEN ? THEN ? ELSE current_message_id END, updated_at = ?
		WHERE id = ? RETURNING `+returning(chatConversationColumns),
		u.Title, u.Model, nullBool(u.Archived), nullBool(u.Pinned), u.SetAgent, u.AgentID, u.SetCurrent, u.CurrentMessageID, db.now(), id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, NotFound("conversation not found")
	}
	if err != nil {
		return nil, fmt.Errorf("store: update conversation: %w", translate(err, "conversation"))
	}
	return c, nil
}

func nullBool(b *bool) any {
	if b == nil {
		return nil
	}
	return boolInt(*b)
}

// SetChatTitle gives a conversation title unless it has one (a title its
// owner set meanwhile wins), and reports whether it did.
func (db *DB) SetChatTitle(ctx context.Context, id int64, title string) (bool, error) {
	res, err := db.exec(ctx, `UPDATE chat_conversations SET title = ?, updated_at = ? WHERE id = ? AND title = ''`, title, db.now(), id)
	if err != nil {
		return false, fmt.Errorf("store: set conversation title: %w", err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// DeleteChatConversation deletes a conversation with its messages.
func (db *DB) DeleteChatConversation(ctx context.Context, id int64) error {
	return db.deleteByID(ctx, "chat_conversations", "conversation", id)
}
