package store

import (
	"context"
	"slices"
	"strings"
)

// Scope is what one caller may see: every environment (admins), or the
// environments granted to them. It is computed once per request from the
// principal (server/auth) and handed to services, which pass it to every
// store filter. The tenancy rule "not granted means not found" is decided
// here and nowhere else: Require for one environment, the filters' cond for
// lists.
//
// The zero Scope sees nothing. Background work that acts for the system
// uses Everything.
type Scope struct {
	UserID int64   // the caller; 0 for the system
	Admin  bool    // admin or super_admin: every environment
	Envs   []int64 // granted environments, sorted, when not Admin
}

// Everything is the scope of the system itself (jobs, housekeeping).
var Everything = Scope{Admin: true}

// NewScope builds a caller's scope from their grants.
func NewScope(userID int64, admin bool, granted []int64) Scope {
	if admin {
		return Scope{UserID: userID, Admin: true}
	}
	envs := slices.Clone(granted)
	slices.Sort(envs)
	return Scope{UserID: userID, Envs: slices.Compact(envs)}
}

// Sees reports whether the environment is visible.
func (s Scope) Sees(envID int64) bool {
	if s.Admin {
		return true
	}
	_, ok := slices.BinarySearch(s.Envs, envID)
	return ok
}

// Require is the one "not granted → 404" rule: an environment outside the
// scope does not exist for the caller. what names the resource the caller
// asked for ("environment", "agent", "run").
func (s Scope) Require(envID int64, what string) error {
	if s.Sees(envID) {
		return nil
	}
	return NotFound("%s not found", what)
}

// RequireFilter is Require for a list's optional environment filter: no
// filter (nil) passes; an environment outside the scope is not found.
func (s Scope) RequireFilter(envID *int64) error {
	if envID == nil {
		return nil
	}
	return s.Require(*envID, "environment")
}

// Seen is the one shape of a service's "get one": the row byID finds, when
// sees (the resource's rule: Sees of its environment, SeesOwned, an agent's
// VisibleIn…) lets the caller see it; any other is not found, naming what
// ("webhook", "run"), exactly as a row that does not exist.
func Seen[T any](ctx context.Context, id int64, byID func(context.Context, int64) (*T, error), sees func(*T) bool, what string) (*T, error) {
	v, err := byID(ctx, id)
	if err != nil {
		return nil, err
	}
	if !sees(v) {
		return nil, NotFound("%s not found", what)
	}
	return v, nil
}

// RequireAdmin is the rule for what only admins do (create environments,
// manage credentials and settings): anyone else is refused. The routes
// refuse low roles before any lookup too; this keeps the rule with the
// services that own it, whoever calls them.
func (s Scope) RequireAdmin() error {
	if s.Admin {
		return nil
	}
	return Forbidden("this needs the admin role or higher")
}

// SeesOwned is the rule for resources that may live outside any
// environment and then belong to the user who made them (runs, usage):
// within the scope, or the caller's own.
func (s Scope) SeesOwned(envID, ownerID *int64) bool {
	if s.Admin {
		return true
	}
	if envID != nil {
		return s.Sees(*envID)
	}
	return ownerID != nil && *ownerID == s.UserID && s.UserID != 0
}

// envIn renders "col is a visible environment" for a store query, with its
// arguments; "" when every environment is visible.
func (s Scope) envIn(col string) (string, []any) {
	if s.Admin {
		return "", nil
	}
	if len(s.Envs) == 0 {
		return "1 = 0", nil
	}
	args := make([]any, len(s.Envs))
	for i, id := range s.Envs {
		args[i] = id
	}
	return col + " IN (" + strings.Repeat("?,", len(s.Envs)-1) + "?)", args
}

// ownedIn renders SeesOwned for a store query: col is a visible
// environment, or NULL with owner the caller.
func (s Scope) ownedIn(envCol, ownerCol string) (string, []any) {
	if s.Admin {
		return "", nil
	}
	cond, args := s.envIn(envCol)
	return "(" + cond + " OR (" + envCol + " IS NULL AND " + ownerCol + " = ?))", append(args, s.UserID)
}
