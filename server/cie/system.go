package cie

import (
	"context"
	"errors"
	"slices"

	"github.com/copydesk/copydesk/store"
)

// Generations the system makes (the autopilot's): no caller's scope, the
// usage named by the maker's source, and carried out inside the maker's
// own job rather than one of their own, so that the maker decides when a
// generation is made again and when it is not.

// SystemInput is a generation the system asks for.
type SystemInput struct {
	ArchetypeID   int64
	AgentID       *int64
	EnvironmentID int64
	// Values are offered for the template's variables; those the
	// archetype neither uses nor declares optional are left out, so that
	// one set of values serves every archetype.
	Values map[string]string
}

// Prepare checks a system generation as Generate checks a caller's (the
// archetype and the agent usable in the environment, the variables, a
// usable provider) and renders its prompts: the generation to record.
// Its errors are the same 422s and 409s.
func (s *Service) Prepare(ctx context.Context, in SystemInput) (*store.NewCIERun, error) {
	a, err := s.Get(ctx, store.Everything, in.ArchetypeID)
	if store.IsNotFound(err) {
		return nil, store.Invalid("archetype_id: no archetype with id %d", in.ArchetypeID)
	}
	if err != nil {
		return nil, err
	}
	if err := s.usableIn(ctx, store.Everything, a, in.EnvironmentID); err != nil {
		return nil, err
	}
	var ag *store.Agent
	if in.AgentID != nil {
		if ag, err = s.agent(ctx, store.Everything, *in.AgentID, in.EnvironmentID); err != nil {
			return nil, err
		}
	}
	used := Placeholders(a.PromptTemplate)
	values := map[string]string{}
	for k, v := range in.Values {
		if slices.Contains(used, k) || slices.Contains(a.OptionalVariables, k) {
			values[k] = v
		}
	}
	p, err := s.prompt(ctx, a, values, &in.EnvironmentID, ag)
	if err != nil {
		return nil, err
	}
	n := &store.NewCIERun{ArchetypeID: a.ID, AgentID: in.AgentID, EnvironmentID: in.EnvironmentID, Variables: values,
		SystemPrompt: p.System, UserPrompt: p.User}
	if _, _, err := s.engine.Plan(ctx, call(&store.CIERun{AgentID: n.AgentID, EnvironmentID: n.EnvironmentID,
		SystemPrompt: p.System, UserPrompt: p.User}, ag)); err != nil {
		return nil, err
	}
	return n, nil
}

// Execute carries out a recorded generation within the caller's job, its
// usage under source: it marks it running, asks for the article (once
// more with the parse error when the answer does not parse, as every
// generation does) and records the outcome. A generation that succeeded
// already is returned as it is. The error says why it did not succeed:
// the engine's (engine.Retryable tells whether another try may help) or
// the answer's that did not parse. When ctx ends first nothing is
// recorded: the generation stays running, for the caller to take up.
func (s *Service) Execute(ctx context.Context, id int64, source string) (*store.CIERun, error) {
	run, err := s.db.CIERunByID(ctx, id)
	if err != nil {
		return nil, err
	}
	if run.Status == store.RunSucceeded {
		return run, nil
	}
	if ok, err := s.db.StartCIERun(ctx, id); err != nil {
		return nil, err
	} else if !ok {
		return nil, store.Conflict("generation %d is %s and cannot run", id, run.Status)
	}
	if run, err = s.db.CIERunByID(ctx, id); err != nil {
		return nil, err
	}
	var ag *store.Agent
	if run.AgentID != nil {
		if ag, err = s.db.AgentByID(ctx, *run.AgentID); err != nil && !store.IsNotFound(err) {
			return nil, err
		}
	}
	c := call(run, ag)
	c.Source = source
	o, err := s.generateAs(ctx, c, nil)
	if err != nil && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	finished, ferr := s.db.FinishCIERun(context.WithoutCancel(ctx), id, o)
	if ferr != nil {
		return nil, errors.Join(err, ferr)
	}
	if err == nil && finished.Status != store.RunSucceeded {
		err = errors.New(finished.Error)
	}
	return finished, err
}
