// Package posttarget is where a post goes. A Target is one place posts
// are made and published (WordPress: server/wppost, a local post sent to
// the environment's site; Astro: server/astropost, a file in the
// environment's project); the Service picks a target by its name, tells
// whether an environment's configuration sets it up, and makes drafts of
// generated text for every target by the same rules (save-as-post: a
// run's output, an archetype generation's article, a live session's last
// output). What is real to one target (a remote id and its sync state, a
// file and its front matter) stays inside it.
package posttarget

import (
	"context"
	"fmt"
	"strings"

	"github.com/copydesk/copydesk/server/heading"
	"github.com/copydesk/copydesk/store"
)

// Draft is a post to make from generated text.
type Draft struct {
	EnvironmentID int64
	UserID        int64 // who asked for it; 0 for the autopilot
	Title         string
	// Description is a summary for search results and feeds; "" lets
	// the target make one if it needs one (Astro's first paragraph).
	Description      string
	Body             string // Markdown
	store.PostOrigin        // what the text came from
}

// Post is a post of a target, with what the call that returned it did.
type Post struct {
	Kind  string // store.PostWordPress or store.PostAstro
	ID    int64
	Title string
	// The post itself: the one of its kind is set.
	WordPress *store.WordPressPost
	Astro     *store.AstroPost
	// Detail says in a sentence what was done ("WordPress post 4 "Rye"
	// made as a draft"); Skipped says nothing was (a draft left a draft).
	Detail  string
	Skipped bool
}

// Target is one place posts go.
type Target interface {
	// Kind is the target's name: store.PostWordPress or store.PostAstro.
	Kind() string
	// Ready says whether an environment's configuration sets the target
	// up for publishing: nil, or a conflict saying what to set.
	Ready(env *store.Environment) error
	// Draft makes a draft post in the draft's environment.
	Draft(ctx context.Context, sc store.Scope, d Draft) (*Post, error)
	// Get returns a post the scope sees.
	Get(ctx context.Context, sc store.Scope, id int64) (*Post, error)
	// Publish gives a post the status ("publish", or "draft": left for a
	// person to publish) where it is read: done again, it does nothing
	// more, and an attempt cut off half way is finished, never doubled.
	Publish(ctx context.Context, sc store.Scope, id int64, status string) (*Post, error)
	// Retryable tells the failures of Draft or Publish that another try
	// may mend (a site that did not answer, its 429 and 5xx).
	Retryable(err error) bool
}

// Runs reads an agent run as a scope sees it (server/agent).
type Runs interface {
	Run(ctx context.Context, sc store.Scope, id int64) (*store.AgentRun, error)
}

// Generations reads a succeeded archetype generation as a scope sees it
// (server/cie).
type Generations interface {
	Succeeded(ctx context.Context, sc store.Scope, id int64) (*store.CIERun, error)
}

// Lives reads the last output of a live session as a scope sees it
// (server/live).
type Lives interface {
	LastOutput(ctx context.Context, sc store.Scope, id int64) (*store.LiveSession, *store.LiveGeneration, error)
}

// Sources are where generated text comes from.
type Sources struct {
	Runs        Runs
	Generations Generations
	Lives       Lives
}

// Service resolves targets and makes drafts of generated text.
type Service struct {
	targets map[string]Target
	kinds   []string
	src     Sources
}

// New returns the service of the targets.
func New(src Sources, targets ...Target) *Service {
	s := &Service{targets: map[string]Target{}, src: src}
	for _, t := range targets {
		s.targets[t.Kind()] = t
		s.kinds = append(s.kinds, t.Kind())
	}
	return s
}

// Target is the target of a name; an unknown one is invalid.
func (s *Service) Target(kind string) (Target, error) {
	t, ok := s.targets[kind]
	if !ok {
		return nil, store.Invalid("target: must be one of %s", strings.Join(s.kinds, ", "))
	}
	return t, nil
}

// For is the target of a name that an environment's configuration sets
// up; a conflict says what it lacks.
func (s *Service) For(env *store.Environment, kind string) (Target, error) {
	t, err := s.Target(kind)
	if err != nil {
		return nil, err
	}
	if err := t.Ready(env); err != nil {
		return nil, err
	}
	return t, nil
}

// FromRun makes a draft of a succeeded run's output in the run's
// environment. The post records the run.
func (s *Service) FromRun(ctx context.Context, sc store.Scope, userID, runID int64, kind, title string) (*Post, error) {
	t, err := s.Target(kind)
	if err != nil {
		return nil, err
	}
	run, err := s.src.Runs.Run(ctx, sc, runID)
	if err != nil {
		return nil, err
	}
	if run.Status != store.RunSucceeded {
		return nil, store.Conflict("run %d is %s: only the output of a succeeded run can be saved as a post", run.ID, run.Status)
	}
	if run.EnvironmentID == nil {
		return nil, store.Invalid("run %d ran outside any environment, and a post belongs to one: run the agent in an environment", run.ID)
	}
	return fromText(ctx, sc, t, run.Output, title, fmt.Sprintf("the output of run %d", run.ID),
		Draft{EnvironmentID: *run.EnvironmentID, UserID: userID, PostOrigin: store.PostOrigin{RunID: &run.ID}})
}

// FromLive makes a draft of the last output of a live session (its
// newest succeeded generation) in the session's environment. The post
// records the generation.
func (s *Service) FromLive(ctx context.Context, sc store.Scope, userID, sessionID int64, kind, title string) (*Post, error) {
	t, err := s.Target(kind)
	if err != nil {
		return nil, err
	}
	sess, g, err := s.src.Lives.LastOutput(ctx, sc, sessionID)
	if err != nil {
		return nil, err
	}
	return fromText(ctx, sc, t, g.Output, title, fmt.Sprintf("the last output of live session %d", sess.ID),
		Draft{EnvironmentID: sess.EnvironmentID, UserID: userID, PostOrigin: store.PostOrigin{LiveGenerationID: &g.ID}})
}

// fromText makes a draft of generated Markdown (what names it in an
// error). An empty text is refused, as a run that did not succeed is:
// there is nothing to save. Without a title, the text's first heading is
// the title (heading.Title), and a level-1 heading that gave it leaves
// the body, since both targets show the title themselves; text without a
// heading gives its first line (heading.FirstLine), which stays.
func fromText(ctx context.Context, sc store.Scope, t Target, text, title, what string, d Draft) (*Post, error) {
	if strings.TrimSpace(text) == "" {
		return nil, store.Conflict("%s is empty: there is nothing to save as a post", what)
	}
	body := text
	if title = strings.TrimSpace(title); title == "" {
		var ok bool
		if title, body, ok = heading.Title(text); !ok {
			if title, ok = heading.FirstLine(text); !ok {
				return nil, store.Invalid("title: is required: %s has no line of text to take it from", what)
			}
		}
	}
	d.Title, d.Body = title, body
	return t.Draft(ctx, sc, d)
}

// FromGeneration makes a draft of a succeeded archetype generation's
// article in its environment: its title (unless one is given),
// description and Markdown body. The post records the generation.
func (s *Service) FromGeneration(ctx context.Context, sc store.Scope, userID, id int64, kind, title string) (*Post, error) {
	t, err := s.Target(kind)
	if err != nil {
		return nil, err
	}
	g, err := s.src.Generations.Succeeded(ctx, sc, id)
	if err != nil {
		return nil, err
	}
	if title = strings.TrimSpace(title); title == "" {
		title = g.Title
	}
	return t.Draft(ctx, sc, Draft{EnvironmentID: g.EnvironmentID, UserID: userID, Title: title, Description: g.Description, Body: g.Body,
		PostOrigin: store.PostOrigin{CIERunID: &g.ID}})
}
