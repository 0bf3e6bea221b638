package chat

import (
	"context"
	"strings"

	"github.com/copydesk/copydesk/server/valid"
	"github.com/copydesk/copydesk/store"
)

// Message is a message with the ids of its siblings: the messages with
// the same parent (itself included), oldest first, which are the
// branches a client can switch between.
type Message struct {
	*store.ChatMessage
	SiblingIDs []int64
}

// tree is a conversation's messages as parent links.
type tree struct {
	parent   map[int64]*int64
	children map[int64][]int64 // by parent id, 0 for the roots; oldest first
	order    []int64           // every id, oldest first
}

func newTree(nodes []store.ChatNode) *tree {
	t := &tree{parent: make(map[int64]*int64, len(nodes)), children: map[int64][]int64{}, order: make([]int64, 0, len(nodes))}
	for _, n := range nodes { // in id order, so children are oldest first
		t.parent[n.ID] = n.ParentID
		t.children[key(n.ParentID)] = append(t.children[key(n.ParentID)], n.ID)
		t.order = append(t.order, n.ID)
	}
	return t
}

func key(parent *int64) int64 {
	if parent == nil {
		return 0
	}
	return *parent
}

func (t *tree) siblings(id int64) []int64 {
	p, ok := t.parent[id]
	if !ok {
		return []int64{id}
	}
	return t.children[key(p)]
}

// ancestors is the path from the root to id, id included.
func (t *tree) ancestors(id int64) []int64 {
	var up []int64
	for cur := &id; cur != nil; cur = t.parent[*cur] {
		up = append(up, *cur)
	}
	for i, j := 0, len(up)-1; i < j; i, j = i+1, j-1 {
		up[i], up[j] = up[j], up[i]
	}
	return up
}

// active is the active branch: from the root through current (the newest
// message when current is nil or gone), then down through the newest
// child at each step.
func (t *tree) active(current *int64) []int64 {
	if len(t.order) == 0 {
		return []int64{}
	}
	start := t.order[len(t.order)-1]
	if current != nil {
		if _, ok := t.parent[*current]; ok {
			start = *current
		}
	}
	path := t.ancestors(start)
	for kids := t.children[start]; len(kids) > 0; kids = t.children[path[len(path)-1]] {
		path = append(path, kids[len(kids)-1])
	}
	return path
}

func (s *Service) tree(ctx context.Context, convID int64) (*tree, error) {
	nodes, err := s.db.ChatTree(ctx, convID)
	if err != nil {
		return nil, err
	}
	return newTree(nodes), nil
}

// views loads the messages of ids and adds their siblings.
func (s *Service) views(ctx context.Context, convID int64, t *tree, ids []int64) ([]Message, error) {
	msgs, err := s.db.ChatMessagesByIDs(ctx, convID, ids)
	if err != nil {
		return nil, err
	}
	out := make([]Message, len(msgs))
	for i, m := range msgs {
		out[i] = Message{ChatMessage: m, SiblingIDs: t.siblings(m.ID)}
	}
	return out, nil
}

// view is one message with its siblings.
func (s *Service) view(ctx context.Context, m *store.ChatMessage) (Message, error) {
	t, err := s.tree(ctx, m.ConversationID)
	if err != nil {
		return Message{}, err
	}
	return Message{ChatMessage: m, SiblingIDs: t.siblings(m.ID)}, nil
}

// Messages lists a conversation's messages in order: those of its active
// branch, or with all every message of every branch (by id: a message
// comes after its parent).
func (s *Service) Messages(ctx context.Context, sc store.Scope, convID int64, all bool, page store.Page) ([]Message, int, error) {
	c, err := s.Get(ctx, sc, convID)
	if err != nil {
		return nil, 0, err
	}
	t, err := s.tree(ctx, c.ID)
	if err != nil {
		return nil, 0, err
	}
	ids := t.active(c.CurrentMessageID)
	if all {
		ids = t.order
	}
	total := len(ids)
	from := min(max(page.Page-1, 0)*page.PerPage, total)
	ids = ids[from:min(from+page.PerPage, total)]
	out, err := s.views(ctx, c.ID, t, ids)
	return out, total, err
}

// message returns a message of a conversation of the caller's, with the
// conversation.
func (s *Service) message(ctx context.Context, sc store.Scope, id int64) (*store.ChatMessage, *store.ChatConversation, error) {
	m, err := s.db.ChatMessageByID(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	c, err := s.Get(ctx, sc, m.ConversationID)
	if store.IsNotFound(err) {
		return nil, nil, store.NotFound("message not found")
	}
	if err != nil {
		return nil, nil, err
	}
	return m, c, nil
}

// Message returns a message of the caller's.
func (s *Service) Message(ctx context.Context, sc store.Scope, id int64) (Message, error) {
	m, _, err := s.message(ctx, sc, id)
	if err != nil {
		return Message{}, err
	}
	return s.view(ctx, m)
}

// SendInput is a new user message.
type SendInput struct {
	Content string
	// ParentID is the reply it follows; nil: the end of the active branch.
	ParentID *int64
	Stream   bool
}

// Send stores a user message in a conversation of the caller's and the
// reply to be generated, and queues the generation. The caller serves the
// reply's stream (Topic) or waits for it (Done).
func (s *Service) Send(ctx context.Context, sc store.Scope, convID int64, in SendInput) (Message, error) {
	c, err := s.Get(ctx, sc, convID)
	if err != nil {
		return Message{}, err
	}
	if err := content(in.Content); err != nil {
		return Message{}, err
	}
	parent := in.ParentID
	if parent != nil {
		p, err := s.db.ChatMessageByID(ctx, *parent)
		if err != nil && !store.IsNotFound(err) {
			return Message{}, err
		}
		if err != nil || p.ConversationID != c.ID {
			return Message{}, store.Invalid("parent_id: conversation %d has no message %d", c.ID, *parent)
		}
		if p.Role != "assistant" {
			return Message{}, store.Invalid("parent_id: message %d is a user message: a message follows a reply "+
				"(to change message %d, edit it with PUT /api/openchat/messages/%d)", p.ID, p.ID, p.ID)
		}
	} else {
		t, err := s.tree(ctx, c.ID)
		if err != nil {
			return Message{}, err
		}
		if path := t.active(c.CurrentMessageID); len(path) > 0 {
			end, err := s.db.ChatMessageByID(ctx, path[len(path)-1])
			if err != nil {
				return Message{}, err
			}
			if end.Role == "user" {
				return Message{}, store.Conflict("message %d, at the end of the conversation, has no reply: regenerate one "+
					"(POST /api/openchat/messages/%d/regenerate), or send with parent_id", end.ID, end.ID)
			}
			parent = &end.ID
		}
	}
	return s.exchange(ctx, sc, c, store.NewChatExchange{ConversationID: c.ID, ParentID: parent, User: &in.Content}, in.Stream)
}

func content(v string) error {
	if strings.TrimSpace(v) == "" {
		return store.Invalid("content: must not be empty")
	}
	if err := valid.Text("content", v); err != nil {
		return err
	}
	return valid.MaxLen("content", v, maxContent)
}

// Regenerate queues another reply to the user message a reply answers (or
// to the user message id itself), beside the replies it has.
func (s *Service) Regenerate(ctx context.Context, sc store.Scope, id int64, streamed bool) (Message, error) {
	m, c, err := s.message(ctx, sc, id)
	if err != nil {
		return Message{}, err
	}
	answered := &m.ID
	if m.Role == "assistant" {
		answered = m.ParentID
	}
	return s.exchange(ctx, sc, c, store.NewChatExchange{ConversationID: c.ID, ParentID: answered}, streamed)
}

// Edit changes a user message by adding a new branch: a sibling user
// message with the new content, and a reply to it. The old message and
// its replies stay, on their own branch.
func (s *Service) Edit(ctx context.Context, sc store.Scope, id int64, text string, streamed bool) (Message, error) {
	m, c, err := s.message(ctx, sc, id)
	if err != nil {
		return Message{}, err
	}
	if m.Role != "user" {
		return Message{}, store.Invalid("message %d is a reply: only a user message is edited (regenerate a reply with "+
			"POST /api/openchat/messages/%d/regenerate)", m.ID, m.ID)
	}
	if err := content(text); err != nil {
		return Message{}, err
	}
	return s.exchange(ctx, sc, c, store.NewChatExchange{ConversationID: c.ID, ParentID: m.ParentID, User: &text}, streamed)
}

// exchange records an exchange with the job that generates its reply,
// after checking the conversation could generate one now.
func (s *Service) exchange(ctx context.Context, sc store.Scope, c *store.ChatConversation, n store.NewChatExchange, streamed bool) (Message, error) {
	if busy, err := s.db.GeneratingChatMessage(ctx, c.ID); err == nil {
		return Message{}, busyError(busy.ID)
	} else if !store.IsNotFound(err) {
		return Message{}, err
	}
	// A 409 now (no provider, an agent gone inactive) beats a failed reply.
	call, err := s.call(ctx, c, &sc)
	if err != nil {
		return Message{}, err
	}
	if _, _, err := s.engine.Plan(ctx, call); err != nil {
		return Message{}, err
	}
	reply, err := s.replies.Enqueue(streamed, func(j store.RunJob) (*store.ChatMessage, error) {
		_, reply, err := s.db.CreateChatExchange(ctx, n, j)
		return reply, err
	})
	if err != nil {
		if busy, berr := s.db.GeneratingChatMessage(ctx, c.ID); berr == nil && store.KindOf(err) == store.KindConflict {
			return Message{}, busyError(busy.ID) // another request came first
		}
		return Message{}, err
	}
	return s.view(ctx, reply)
}

func busyError(id int64) error {
	return store.Conflict("reply %d is still being generated in this conversation: wait for it, or stop it with "+
		"POST /api/openchat/messages/%d/stop", id, id)
}

// DeleteMessage deletes a message of the caller's with every message below
// it, and says how many went. Not while the conversation generates a
// reply: the reply may be below it.
func (s *Service) DeleteMessage(ctx context.Context, sc store.Scope, id int64) (int64, error) {
	m, c, err := s.message(ctx, sc, id)
	if err != nil {
		return 0, err
	}
	if busy, err := s.db.GeneratingChatMessage(ctx, c.ID); err == nil {
		return 0, busyError(busy.ID)
	} else if !store.IsNotFound(err) {
		return 0, err
	}
	return s.db.DeleteChatMessage(ctx, m.ID)
}

// Stop stops the generation of a reply of the caller's: what it holds so
// far is kept, as incomplete. It returns once the job is told; Done says
// when the reply is stored.
func (s *Service) Stop(ctx context.Context, sc store.Scope, id int64) error {
	m, _, err := s.message(ctx, sc, id)
	if err != nil {
		return err
	}
	if m.Status != store.ChatGenerating {
		return store.Conflict("message %d is %s: only a reply being generated can be stopped", m.ID, m.Status)
	}
	return s.cancelJob(ctx, m)
}

// Done returns a channel closed once the reply id is no longer being
// generated: at once when it is not (it reads the message, so call it
// under the database's hold, then wait without).
func (s *Service) Done(ctx context.Context, id int64) (<-chan struct{}, error) {
	s.mu.Lock()
	ch := s.waiting[id]
	if ch == nil {
		ch = make(chan struct{})
		s.waiting[id] = ch
	}
	s.mu.Unlock()
	// Registered first, then read: a reply stored before the read is
	// seen finished here, and one stored after it closes ch (finished).
	m, err := s.db.ChatMessageByID(ctx, id)
	if err != nil || m.Finished() {
		s.finished(id)
	}
	if err != nil && !store.IsNotFound(err) {
		return nil, err
	}
	return ch, nil
}

// finished closes the Done channel of a reply whose ending is stored.
func (s *Service) finished(id int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ch := s.waiting[id]; ch != nil {
		close(ch)
		delete(s.waiting, id)
	}
}
