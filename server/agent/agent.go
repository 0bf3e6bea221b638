// Package agent holds the rules of agents (the /api/agents group):
// configured AI workers, in an environment or global; which environments
// may use them; who sees and who changes them; and their runs, which the
// job runner carries out, queued or streamed to the request that started
// them (see run.go). The handlers in server/agents.go and
// server/agent_runs.go only parse, call one method and render.
//
// Who sees what: an agent is visible to a scope when it is global, of an
// environment in the scope, or assigned to one; anything else is not found.
// Admins change every agent; editors only the agents of their own
// environments; only admins change global agents (a using environment does
// not own an agent). A run is visible in its environment, or to its
// requester when it ran outside any.
package agent

import (
	"context"
	"log/slog"
	"slices"

	"github.com/copydesk/copydesk/server/engine"
	"github.com/copydesk/copydesk/server/environment"
	"github.com/copydesk/copydesk/server/generation"
	"github.com/copydesk/copydesk/server/jobs"
	"github.com/copydesk/copydesk/server/notify"
	"github.com/copydesk/copydesk/server/stream"
	"github.com/copydesk/copydesk/server/webhook"
	"github.com/copydesk/copydesk/store"
)

// Store is what the service needs of the store.
type Store interface {
	AgentByID(ctx context.Context, id int64) (*store.Agent, error)
	ListAgents(ctx context.Context, f store.AgentFilter) ([]*store.Agent, int, error)
	CreateAgent(ctx context.Context, in store.AgentInput, createdBy int64) (*store.Agent, error)
	ReplaceAgent(ctx context.Context, id int64, in store.AgentInput) (*store.Agent, error)
	DeleteAgent(ctx context.Context, id int64) error
	SetAgentAssignments(ctx context.Context, agentID int64, sc store.Scope, envIDs []int64) ([]int64, error)

	RunByID(ctx context.Context, id int64) (*store.AgentRun, error)
	ListRuns(ctx context.Context, f store.RunFilter) ([]*store.AgentRun, int, error)
	CreateRun(ctx context.Context, n store.NewRun) (*store.AgentRun, error)
	CreateRunWithJob(ctx context.Context, n store.NewRun, j store.RunJob) (*store.AgentRun, error)
	StartRun(ctx context.Context, id int64) (bool, error)
	FinishRun(ctx context.Context, id int64, o store.RunOutcome) (*store.AgentRun, error)
	RequeueRun(ctx context.Context, id int64, errText string) error
}

// Credentials holds the rule for choosing a credential to generate with
// (server/credential).
type Credentials interface {
	CheckAI(ctx context.Context, credID, envID *int64) error
}

// Engine generates text and accounts for it (server/engine).
type Engine interface {
	Plan(ctx context.Context, c engine.Call) (provider, model string, err error)
	Generate(ctx context.Context, c engine.Call) (*engine.Result, error)
	Stream(ctx context.Context, c engine.Call, onDelta func(string) error) (*engine.Result, error)
}

// Deps are what the service works with.
type Deps struct {
	Store        Store
	Environments environment.Getter
	Credentials  Credentials
	Engine       Engine
	Jobs         jobs.Queue
	Notify       notify.ToUser
	Events       *stream.Broker  // where streamed runs are published
	Hooks        webhook.Emitter // run.succeeded, run.failed; nil: none
	Log          *slog.Logger
}

// Service implements the agent rules and carries out runs.
type Service struct {
	db     Store
	envs   environment.Getter
	creds  Credentials
	engine Engine
	jobs   jobs.Queue
	notify notify.ToUser
	events *stream.Broker
	hooks  webhook.Emitter
	log    *slog.Logger
	runs   *generation.Kind[*store.AgentRun] // how a run is carried out (run.go)
}

// New returns the service and registers its job kinds with d.Jobs.
func New(d Deps) *Service {
	s := &Service{db: d.Store, envs: d.Environments, creds: d.Credentials, engine: d.Engine, jobs: d.Jobs,
		notify: d.Notify, events: d.Events, hooks: webhook.Or(d.Hooks), log: d.Log}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.registerJobs()
	return s
}

// Get returns an agent the scope sees, with the assignments it sees; any
// other agent is not found.
func (s *Service) Get(ctx context.Context, sc store.Scope, id int64) (*store.Agent, error) {
	a, err := s.get(ctx, sc, id)
	if err != nil {
		return nil, err
	}
	return a.SeenBy(sc), nil
}

// get returns an agent the scope sees with all its assignments, for the
// rules (where an agent may run); callers get it through SeenBy.
func (s *Service) get(ctx context.Context, sc store.Scope, id int64) (*store.Agent, error) {
	return store.Seen(ctx, id, s.db.AgentByID, func(a *store.Agent) bool { return a.VisibleIn(sc) }, "agent")
}

// managed returns an agent the scope may change: one it does not see is
// not found, one it sees but does not own is forbidden.
func (s *Service) managed(ctx context.Context, sc store.Scope, id int64) (*store.Agent, error) {
	a, err := s.get(ctx, sc, id)
	if err != nil {
		return nil, err
	}
	if err := mayManage(sc, a); err != nil {
		return nil, err
	}
	return a, nil
}

// mayManage: admins manage every agent; others those of their own
// environments. Global or merely assigned agents are for admins.
func mayManage(sc store.Scope, a *store.Agent) error {
	switch {
	case sc.Admin:
		return nil
	case a.EnvironmentID == nil:
		return store.Forbidden("only admins change global agents")
	case !sc.Sees(*a.EnvironmentID):
		return store.Forbidden("the agent belongs to another environment: only its editors and admins change it")
	}
	return nil
}

// ListQuery narrows List.
type ListQuery struct {
	EnvironmentID *int64 // agents of this environment or assigned to it
	Kind          string
	Active        *bool
	Q             string // matches name or description
	Page          store.Page
}

// List lists the agents the scope sees, by name, each with the assignments
// it sees. Asking for an environment outside the scope is not found.
func (s *Service) List(ctx context.Context, sc store.Scope, q ListQuery) ([]*store.Agent, int, error) {
	if err := sc.RequireFilter(q.EnvironmentID); err != nil {
		return nil, 0, err
	}
	if q.Kind != "" && !slices.Contains(store.AgentKinds, q.Kind) {
		return nil, 0, errKind
	}
	list, total, err := s.db.ListAgents(ctx, store.AgentFilter{Scope: sc, EnvironmentID: q.EnvironmentID, Kind: q.Kind,
		Active: q.Active, Q: q.Q, Page: q.Page})
	if err != nil {
		return nil, 0, err
	}
	for i, a := range list {
		list[i] = a.SeenBy(sc)
	}
	return list, total, nil
}

// Create checks and stores an agent. Others than admins create agents in
// their environments only; a global agent (no environment) is for admins.
func (s *Service) Create(ctx context.Context, sc store.Scope, in store.AgentInput) (*store.Agent, error) {
	if err := s.check(ctx, sc, &in); err != nil {
		return nil, err
	}
	return s.db.CreateAgent(ctx, in, sc.UserID)
}

// Change holds the fields to change; nil leaves one alone. An agent's
// environment does not change.
type Change struct {
	Name         *string
	Description  *string
	Kind         *string
	CredentialID *int64 // 0: back to the AI content settings' credential
	Model        *string
	SystemPrompt *string
	Temperature  *float64
	MaxTokens    *int
	IsActive     *bool
	// ClearTemperature and ClearMaxTokens set them back to null (the
	// model's default); with a value given too, the change is refused.
	ClearTemperature, ClearMaxTokens bool
}

// Update changes the fields given, checking the agent as it will be.
func (s *Service) Update(ctx context.Context, sc store.Scope, id int64, ch Change) (*store.Agent, error) {
	a, err := s.managed(ctx, sc, id)
	if err != nil {
		return nil, err
	}
	in := a.AgentInput
	set(&in.Name, ch.Name)
	set(&in.Description, ch.Description)
	set(&in.Kind, ch.Kind)
	set(&in.Model, ch.Model)
	set(&in.SystemPrompt, ch.SystemPrompt)
	set(&in.IsActive, ch.IsActive)
	if ch.CredentialID != nil {
		in.CredentialID = ch.CredentialID
		if *ch.CredentialID == 0 {
			in.CredentialID = nil
		}
	}
	if ch.ClearTemperature && ch.Temperature != nil {
		return nil, store.Invalid("temperature: give a value or clear it, not both")
	}
	if ch.ClearMaxTokens && ch.MaxTokens != nil {
		return nil, store.Invalid("max_tokens: give a value or clear it, not both")
	}
	if ch.Temperature != nil || ch.ClearTemperature {
		in.Temperature = ch.Temperature
	}
	if ch.MaxTokens != nil || ch.ClearMaxTokens {
		in.MaxTokens = ch.MaxTokens
	}
	if err := s.check(ctx, sc, &in); err != nil {
		return nil, err
	}
	a, err = s.db.ReplaceAgent(ctx, a.ID, in)
	if err != nil {
		return nil, err
	}
	return a.SeenBy(sc), nil
}

func set[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

// Delete deletes an agent the scope may change, and its runs.
func (s *Service) Delete(ctx context.Context, sc store.Scope, id int64) error {
	a, err := s.managed(ctx, sc, id)
	if err != nil {
		return err
	}
	return s.db.DeleteAgent(ctx, a.ID)
}

// SetAssignments replaces the environments, beyond its own, that may use an
// agent the scope may change, and returns the agent with them. Others than
// admins assign only to environments they see (any other does not exist
// for them), and change only that part: assignments to environments they
// do not see are kept, and not shown.
func (s *Service) SetAssignments(ctx context.Context, sc store.Scope, id int64, envIDs []int64) (*store.Agent, error) {
	a, err := s.managed(ctx, sc, id)
	if err != nil {
		return nil, err
	}
	if err := checkAssignments(sc, envIDs); err != nil {
		return nil, err
	}
	ids, err := s.db.SetAgentAssignments(ctx, a.ID, sc, envIDs)
	if err != nil {
		return nil, err
	}
	a.Assignments = ids
	return a.SeenBy(sc), nil
}

// check normalizes an agent's fields and checks where it lives: an
// environment the scope sees (required of others than admins), and a
// credential usable there.
func (s *Service) check(ctx context.Context, sc store.Scope, in *store.AgentInput) error {
	if err := normalize(in); err != nil {
		return err
	}
	if in.EnvironmentID == nil && !sc.Admin {
		return store.Invalid("environment_id: is required: only admins create global agents")
	}
	if in.EnvironmentID != nil {
		if _, err := environment.For(ctx, s.envs, sc, *in.EnvironmentID); err != nil {
			return err
		}
	}
	return s.creds.CheckAI(ctx, in.CredentialID, in.EnvironmentID)
}
