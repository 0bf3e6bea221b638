// Package chat is OpenChat (the /api/openchat group): conversations with
// a model or an agent, whose messages form a tree of branches, and the
// replies, which the job runner generates whether or not anyone watches.
// The handlers in server/openchat.go only parse, call and render.
//
// Who sees what: a conversation belongs to its owner alone. Anyone else,
// admins included, gets not found, as for direct messages; so does the
// owner for a conversation in an environment they no longer see. Viewers
// read the conversations they own; editors and up chat (the route table
// refuses viewers the writes).
//
// Branches: a message's parent is the message it answers or follows.
// Regenerating a reply adds a sibling reply under the same user message;
// editing a user message adds a sibling user message with a new reply.
// Nothing is overwritten. The conversation's active branch runs from the
// root through its current message, then down through the newest child
// at each step; every new reply becomes the current message, so the
// newest branch is the one shown, and the client may make any message
// current to show another. Each message carries its siblings' ids for a
// client to offer the choice.
package chat

import (
	"context"
	"log/slog"
	"strings"
	"sync"

	"github.com/copydesk/copydesk/server/engine"
	"github.com/copydesk/copydesk/server/environment"
	"github.com/copydesk/copydesk/server/generation"
	"github.com/copydesk/copydesk/server/jobs"
	"github.com/copydesk/copydesk/server/stream"
	"github.com/copydesk/copydesk/server/valid"
	"github.com/copydesk/copydesk/store"
)

// Store is what the service needs of the store.
type Store interface {
	CreateChatConversation(ctx context.Context, n store.NewChatConversation) (*store.ChatConversation, error)
	ChatConversationByID(ctx context.Context, id int64) (*store.ChatConversation, error)
	ListChatConversations(ctx context.Context, f store.ChatConversationFilter) ([]*store.ChatConversation, int, error)
	UpdateChatConversation(ctx context.Context, id int64, u store.ChatConversationUpdate) (*store.ChatConversation, error)
	SetChatTitle(ctx context.Context, id int64, title string) (bool, error)
	DeleteChatConversation(ctx context.Context, id int64) error

	ChatMessageByID(ctx context.Context, id int64) (*store.ChatMessage, error)
	ChatTree(ctx context.Context, conversationID int64) ([]store.ChatNode, error)
	ChatMessagesByIDs(ctx context.Context, conversationID int64, ids []int64) ([]*store.ChatMessage, error)
	GeneratingChatMessage(ctx context.Context, conversationID int64) (*store.ChatMessage, error)
	CreateChatExchange(ctx context.Context, n store.NewChatExchange, j store.RunJob) (user, reply *store.ChatMessage, err error)
	FinishChatMessage(ctx context.Context, id int64, o store.ChatOutcome) (*store.ChatMessage, error)
	DeleteChatMessage(ctx context.Context, id int64) (int64, error)

	AgentByID(ctx context.Context, id int64) (*store.Agent, error)
}

// Deps are what the service works with.
type Deps struct {
	Store        Store
	Environments environment.Getter
	Engine       engine.Streamer
	Jobs         jobs.Queue
	Events       *stream.Broker // where replies are published as they are generated
	Log          *slog.Logger
}

// Service implements the conversation rules and generates replies.
type Service struct {
	db     Store
	envs   environment.Getter
	engine engine.Streamer
	jobs   jobs.Queue
	events *stream.Broker
	log    *slog.Logger

	// waiting holds, per reply being generated, a channel closed once its
	// ending is stored (Done).
	mu      sync.Mutex
	waiting map[int64]chan struct{}

	replies *generation.Kind[*store.ChatMessage] // how a reply is generated (reply.go)
}

// New returns the service and registers its job kind with d.Jobs.
func New(d Deps) *Service {
	s := &Service{db: d.Store, envs: d.Environments, engine: d.Engine, jobs: d.Jobs, events: d.Events, log: d.Log,
		waiting: map[int64]chan struct{}{}}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.registerJobs()
	return s
}

// Limits of what a conversation holds.
const (
	maxTitle   = 200
	maxModel   = 200
	maxContent = 100000
)

// ---- conversations ----

// Get returns a conversation of the caller's that they may still see; any
// other is not found.
func (s *Service) Get(ctx context.Context, sc store.Scope, id int64) (*store.ChatConversation, error) {
	return store.Seen(ctx, id, s.db.ChatConversationByID, func(c *store.ChatConversation) bool { return owns(sc, c) }, "conversation")
}

// owns is the one rule of who sees a conversation: its owner, while they
// see its environment.
func owns(sc store.Scope, c *store.ChatConversation) bool {
	return sc.UserID != 0 && c.UserID == sc.UserID && (c.EnvironmentID == nil || sc.Sees(*c.EnvironmentID))
}

// NewConversation is what a caller starts a conversation with.
type NewConversation struct {
	Title         string
	AgentID       *int64
	Model         string
	EnvironmentID *int64
	Pinned        bool
}

// Create starts a conversation of the caller's. With an agent and no
// environment, the conversation is in the agent's environment (none for a
// global agent).
func (s *Service) Create(ctx context.Context, sc store.Scope, in NewConversation) (*store.ChatConversation, error) {
	if sc.UserID == 0 {
		return nil, store.Forbidden("only a user has conversations")
	}
	n := store.NewChatConversation{UserID: sc.UserID, EnvironmentID: in.EnvironmentID, AgentID: in.AgentID, Pinned: in.Pinned}
	var err error
	if n.Title, err = title(in.Title); err != nil {
		return nil, err
	}
	if n.Model, err = model(in.Model); err != nil {
		return nil, err
	}
	if n.AgentID != nil && n.Model != "" {
		return nil, store.Invalid("model: give an agent_id or a model, not both: the agent's model applies")
	}
	if n.EnvironmentID != nil {
		if err := s.environment(ctx, sc, *n.EnvironmentID); err != nil {
			return nil, err
		}
	}
	if n.AgentID != nil {
		ag, err := s.agent(ctx, sc, *n.AgentID, n.EnvironmentID)
		if err != nil {
			return nil, err
		}
		if n.EnvironmentID == nil {
			n.EnvironmentID = ag.EnvironmentID
		}
	}
	return s.db.CreateChatConversation(ctx, n)
}

func title(v string) (string, error) {
	v = strings.TrimSpace(v)
	if err := valid.Line("title", v); err != nil {
		return "", err
	}
	return v, valid.MaxLen("title", v, maxTitle)
}

func model(v string) (string, error) {
	v = strings.TrimSpace(v)
	if err := valid.Line("model", v); err != nil {
		return "", err
	}
	return v, valid.MaxLen("model", v, maxModel)
}

// environment checks that the caller may put a conversation in envID.
func (s *Service) environment(ctx context.Context, sc store.Scope, envID int64) error {
	if _, err := environment.For(ctx, s.envs, sc, envID); err != nil {
		return err
	}
	return nil
}

// agent returns an agent the caller may chat with in envID (nil: outside
// any environment): one they see, active, and usable there.
func (s *Service) agent(ctx context.Context, sc store.Scope, id int64, envID *int64) (*store.Agent, error) {
	ag, err := store.AgentNamed(ctx, s.db.AgentByID, sc, id)
	if err != nil {
		return nil, err
	}
	if !ag.IsActive {
		return nil, store.Conflict("agent %d is not active: set is_active to chat with it", id)
	}
	if envID != nil {
		if err := ag.RequireIn(*envID); err != nil {
			return nil, err
		}
	}
	if envID == nil && ag.EnvironmentID != nil && !sc.Sees(*ag.EnvironmentID) {
		return nil, store.Invalid("agent_id: agent %d belongs to an environment you do not see: give environment_id", id)
	}
	return ag, nil
}

// ListFilter narrows List.
type ListFilter struct {
	Archived      bool
	Pinned        *bool
	EnvironmentID *int64
	Q             string
	Sort          store.Sort // the default: pinned first, then newest activity
}

// List lists the caller's conversations: pinned first, then by newest
// activity, or in the order f.Sort asks for.
func (s *Service) List(ctx context.Context, sc store.Scope, f ListFilter, page store.Page) ([]*store.ChatConversation, int, error) {
	if sc.UserID == 0 {
		return []*store.ChatConversation{}, 0, nil
	}
	if err := valid.Line("q", f.Q); err != nil {
		return nil, 0, err
	}
	if f.EnvironmentID != nil && !sc.Sees(*f.EnvironmentID) {
		return []*store.ChatConversation{}, 0, nil // nothing of theirs is there
	}
	return s.db.ListChatConversations(ctx, store.ChatConversationFilter{OwnerID: sc.UserID, Scope: sc, Archived: f.Archived,
		Pinned: f.Pinned, EnvironmentID: f.EnvironmentID, Q: f.Q, Sort: f.Sort, Page: page})
}

// Patch changes a conversation; nil fields stay. An agent and a model are
// exclusive, as at creation: Model (even "") replaces the agent with a
// model under the AI settings, AgentID replaces the model with an agent.
type Patch struct {
	Title    *string
	Model    *string
	AgentID  *int64
	Archived *bool
	Pinned   *bool
	// CurrentMessageID shows the branch through that message.
	CurrentMessageID *int64
}

// Update changes a conversation of the caller's.
func (s *Service) Update(ctx context.Context, sc store.Scope, id int64, p Patch) (*store.ChatConversation, error) {
	c, err := s.Get(ctx, sc, id)
	if err != nil {
		return nil, err
	}
	u := store.ChatConversationUpdate{Archived: p.Archived, Pinned: p.Pinned}
	if p.Title != nil {
		t, err := title(*p.Title)
		if err != nil {
			return nil, err
		}
		if t == "" {
			return nil, store.Invalid("title: must not be empty")
		}
		u.Title = &t
	}
	if p.AgentID != nil && p.Model != nil {
		return nil, store.Invalid("model: give an agent_id or a model, not both: the agent's model applies")
	}
	if p.Model != nil {
		m, err := model(*p.Model)
		if err != nil {
			return nil, err
		}
		u.Model, u.SetAgent = &m, true
	}
	if p.AgentID != nil {
		ag, err := s.agent(ctx, sc, *p.AgentID, c.EnvironmentID)
		if err != nil {
			return nil, err
		}
		if c.EnvironmentID == nil && ag.EnvironmentID != nil {
			// A conversation does not move: its usage stays outside any
			// environment, where an environment's agent does not work.
			return nil, store.Invalid("agent_id: agent %d belongs to environment %d and this conversation to none: start a conversation there",
				ag.ID, *ag.EnvironmentID)
		}
		empty := ""
		u.SetAgent, u.AgentID, u.Model = true, p.AgentID, &empty
	}
	if p.CurrentMessageID != nil {
		m, err := s.db.ChatMessageByID(ctx, *p.CurrentMessageID)
		if err != nil && !store.IsNotFound(err) {
			return nil, err
		}
		if err != nil || m.ConversationID != c.ID {
			return nil, store.Invalid("current_message_id: conversation %d has no message %d", c.ID, *p.CurrentMessageID)
		}
		u.SetCurrent, u.CurrentMessageID = true, p.CurrentMessageID
	}
	return s.db.UpdateChatConversation(ctx, c.ID, u)
}

// Delete deletes a conversation of the caller's with its messages. A reply
// being generated in it is stopped first.
func (s *Service) Delete(ctx context.Context, sc store.Scope, id int64) error {
	c, err := s.Get(ctx, sc, id)
	if err != nil {
		return err
	}
	if err := s.stopGenerating(ctx, c.ID); err != nil {
		return err
	}
	return s.db.DeleteChatConversation(ctx, c.ID)
}

// stopGenerating cancels the job of the reply being generated in a
// conversation, if one is.
func (s *Service) stopGenerating(ctx context.Context, convID int64) error {
	m, err := s.db.GeneratingChatMessage(ctx, convID)
	if store.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	return s.cancelJob(ctx, m)
}

func (s *Service) cancelJob(ctx context.Context, m *store.ChatMessage) error {
	return jobs.Stop(ctx, s.jobs, m.JobID)
}
