// Package live holds live agent sessions (the /api/live-agents group): an
// agent bound to an environment, in which editors ask for generations that
// everyone who sees the environment watches as they are written. The
// handlers in server/live_agents.go only parse, call one method and render.
//
// A generation runs on the job runner (the live.generate kind), never in
// the request that asked for it nor in any watcher's: its text goes to the
// session's topic on the event-stream broker, which fans it out to every
// watcher without waiting for any (see room.go). One generation at a time
// per session; its output, finished, cancelled or cut off, is appended to
// the session's transcript with its usage.
//
// Who sees what: a session belongs to its environment; those who see the
// environment see the session, its transcript and its stream (the routes
// let editors and up change anything). Anything else is not found.
package live

import (
	"context"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

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
	LiveSessionByID(ctx context.Context, id int64) (*store.LiveSession, error)
	ListLiveSessions(ctx context.Context, f store.LiveSessionFilter) ([]*store.LiveSession, int, error)
	CreateLiveSession(ctx context.Context, n store.NewLiveSession) (*store.LiveSession, error)
	CloseLiveSession(ctx context.Context, id int64) (*store.LiveSession, error)
	DeleteLiveSession(ctx context.Context, id int64) error

	LiveGenerationByID(ctx context.Context, id int64) (*store.LiveGeneration, error)
	ActiveLiveGeneration(ctx context.Context, sessionID int64) (*store.LiveGeneration, error)
	LastLiveOutput(ctx context.Context, sessionID int64) (*store.LiveGeneration, error)
	ListLiveGenerations(ctx context.Context, sessionID int64) ([]*store.LiveGeneration, error)
	CreateLiveGenerationWithJob(ctx context.Context, n store.NewLiveGeneration, j store.RunJob) (*store.LiveGeneration, error)
	StartLiveGeneration(ctx context.Context, id int64) (bool, error)
	FinishLiveGeneration(ctx context.Context, id int64, o store.LiveOutcome) (*store.LiveGeneration, error)

	AgentByID(ctx context.Context, id int64) (*store.Agent, error)
}

// Engine generates text and accounts for it (server/engine).
type Engine interface {
	Effective(ctx context.Context, envID *int64) (engine.Effective, error)
	Plan(ctx context.Context, c engine.Call) (provider, model string, err error)
	Stream(ctx context.Context, c engine.Call, onDelta func(string) error) (*engine.Result, error)
}

// Deps are what the service works with.
type Deps struct {
	Store        Store
	Environments environment.Getter
	Engine       Engine
	Jobs         jobs.Queue
	Events       *stream.Broker // where sessions are watched
	Log          *slog.Logger
	// MaxGenerations bounds a session's transcript; DefaultMaxGenerations
	// when 0.
	MaxGenerations int
}

// Service implements the session rules and carries out generations.
type Service struct {
	db     Store
	envs   environment.Getter
	engine Engine
	jobs   jobs.Queue
	events *stream.Broker
	log    *slog.Logger
	max    int // generations per session

	mu    sync.Mutex
	rooms map[int64]*room // by session id: the sessions watched or generating now (room.go)
	// The other instances (instances.go): who watches there, by session
	// and instance (stream.Relayed.From); when this one last told them
	// who watches here.
	remote map[int64]map[string]remoteWatchers
	told   map[int64]time.Time

	gens *generation.Kind[*store.LiveGeneration] // how a generation is carried out (generate.go)
}

// New returns the service and registers its job kind with d.Jobs.
func New(d Deps) *Service {
	s := &Service{db: d.Store, envs: d.Environments, engine: d.Engine, jobs: d.Jobs, events: d.Events, log: d.Log,
		max: d.MaxGenerations, rooms: map[int64]*room{}, remote: map[int64]map[string]remoteWatchers{}, told: map[int64]time.Time{}}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.max <= 0 {
		s.max = DefaultMaxGenerations
	}
	s.registerJobs()
	s.mirror()
	return s
}

// Limits of what a session is given.
const (
	maxTitle  = 200
	maxPrompt = 100000
	// DefaultMaxGenerations bounds a session's transcript, which its GET
	// returns whole.
	DefaultMaxGenerations = 500
)

// ---- sessions ----

// NewSession is what Create needs.
type NewSession struct {
	EnvironmentID int64
	AgentID       int64
	Title         string // "": "Live session with <agent name>"
}

// Create opens a session of an agent in an environment the scope sees; the
// agent must be one the scope sees and may run there.
func (s *Service) Create(ctx context.Context, sc store.Scope, n NewSession) (*store.LiveSession, error) {
	if _, err := environment.For(ctx, s.envs, sc, n.EnvironmentID); err != nil {
		return nil, err
	}
	a, err := store.AgentNamed(ctx, s.db.AgentByID, sc, n.AgentID)
	if err != nil {
		return nil, err
	}
	if err := a.RequireIn(n.EnvironmentID); err != nil {
		return nil, err
	}
	title := strings.TrimSpace(n.Title)
	if title == "" {
		title = "Live session with " + a.Name
	}
	if err := valid.Line("title", title); err != nil {
		return nil, err
	}
	if err := valid.MaxLen("title", title, maxTitle); err != nil {
		return nil, err
	}
	in := store.NewLiveSession{EnvironmentID: n.EnvironmentID, AgentID: a.ID, Title: title}
	if sc.UserID != 0 {
		in.CreatedBy = &sc.UserID
	}
	return s.db.CreateLiveSession(ctx, in)
}

// Session returns a session the scope sees; any other is not found.
func (s *Service) Session(ctx context.Context, sc store.Scope, id int64) (*store.LiveSession, error) {
	return store.Seen(ctx, id, s.db.LiveSessionByID, func(sess *store.LiveSession) bool { return sc.Sees(sess.EnvironmentID) }, "live session")
}

// View is a session with its transcript and who watches it now.
type View struct {
	Session     *store.LiveSession
	Generations []*store.LiveGeneration // oldest first; the last may be under way
	Watchers    []Watcher
}

// Get returns a session the scope sees with its transcript.
func (s *Service) Get(ctx context.Context, sc store.Scope, id int64) (*View, error) {
	sess, err := s.Session(ctx, sc, id)
	if err != nil {
		return nil, err
	}
	gens, err := s.db.ListLiveGenerations(ctx, sess.ID)
	if err != nil {
		return nil, err
	}
	return &View{Session: sess, Generations: gens, Watchers: s.watchers(sess.ID)}, nil
}

// ListQuery narrows List.
type ListQuery struct {
	EnvironmentID *int64
	Status        string // store.LiveOpen, store.LiveClosed or ""
	Sort          store.Sort
	Page          store.Page
}

// List lists the sessions the scope sees, newest first unless sorted
// otherwise.
func (s *Service) List(ctx context.Context, sc store.Scope, q ListQuery) ([]*store.LiveSession, int, error) {
	if err := sc.RequireFilter(q.EnvironmentID); err != nil {
		return nil, 0, err
	}
	if q.Status != "" && !slices.Contains([]string{store.LiveOpen, store.LiveClosed}, q.Status) {
		return nil, 0, store.Invalid("status: must be open or closed")
	}
	return s.db.ListLiveSessions(ctx, store.LiveSessionFilter{Scope: sc, EnvironmentID: q.EnvironmentID, Status: q.Status, Sort: q.Sort,
		Page: q.Page})
}

// Close closes a session the scope sees: a generation under way is
// cancelled (its text so far kept), watchers get `closed` and their
// streams end, and the session takes no more generations. Closing a
// closed session changes nothing.
func (s *Service) Close(ctx context.Context, sc store.Scope, id int64, by string) (*store.LiveSession, error) {
	sess, err := s.Session(ctx, sc, id)
	if err != nil || sess.Status == store.LiveClosed {
		return sess, err
	}
	if err := s.stopActive(ctx, sess.ID, "the session was closed by "+by); err != nil {
		return nil, err
	}
	if sess, err = s.db.CloseLiveSession(ctx, sess.ID); err != nil {
		return nil, err
	}
	s.ended(sess.ID, Closed{SessionID: sess.ID, Detail: "the session was closed by " + by})
	return sess, nil
}

// Delete deletes a session the scope sees with its transcript, cancelling
// a generation under way; posts saved from it stay.
func (s *Service) Delete(ctx context.Context, sc store.Scope, id int64, by string) error {
	sess, err := s.Session(ctx, sc, id)
	if err != nil {
		return err
	}
	if err := s.stopActive(ctx, sess.ID, "the session was deleted by "+by); err != nil {
		return err
	}
	if err := s.db.DeleteLiveSession(ctx, sess.ID); err != nil {
		return err
	}
	s.ended(sess.ID, Closed{SessionID: sess.ID, Deleted: true, Detail: "the session was deleted by " + by})
	return nil
}

// LastOutput is what save-as-post saves of a session the scope sees: its
// newest succeeded generation. A conflict says why there is none.
func (s *Service) LastOutput(ctx context.Context, sc store.Scope, id int64) (*store.LiveSession, *store.LiveGeneration, error) {
	sess, err := s.Session(ctx, sc, id)
	if err != nil {
		return nil, nil, err
	}
	g, err := s.db.LastLiveOutput(ctx, sess.ID)
	if store.IsNotFound(err) {
		return nil, nil, store.Conflict("live session %d has no finished output to save yet: only a generation that succeeded is saved", sess.ID)
	}
	if err != nil {
		return nil, nil, err
	}
	if strings.TrimSpace(g.Output) == "" {
		return nil, nil, store.Conflict("the last output of live session %d is empty: there is nothing to save", sess.ID)
	}
	return sess, g, nil
}

// Topic is the event-stream topic of a session.
func Topic(sessionID int64) string { return "live/sessions/" + strconv.FormatInt(sessionID, 10) }
