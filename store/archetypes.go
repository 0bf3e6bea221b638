package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Section is one part of an archetype's outline.
type Section struct {
	Heading  string `json:"heading"`
	Guidance string `json:"guidance"`
}

// Archetype is an article recipe of content intelligence (server/cie):
// global (EnvironmentID nil) or of one environment. Builtin is the slug of
// one of the archetypes migration 0012 ships, "" for others.
type Archetype struct {
	ID int64
	ArchetypeInput
	Builtin   string
	CreatedBy *int64
	CreatedAt time.Time
	UpdatedAt time.Time
}

// ArchetypeInput is what an archetype is made of; the service checks it.
type ArchetypeInput struct {
	EnvironmentID     *int64 // kept by ReplaceArchetype: an archetype does not move
	Name              string
	Description       string
	Outline           []Section
	PromptTemplate    string
	OptionalVariables []string
	TargetWords       int
	Tone              string
}

const archetypeColumns = `a.id, a.environment_id, a.builtin, a.name, a.description, a.outline, a.prompt_template,
	a.optional_variables, a.target_words, a.tone, a.created_by, a.created_at, a.updated_at`

func scanArchetype(row rowScanner) (*Archetype, error) {
	var a Archetype
	var env, by sql.NullInt64
	var builtin sql.NullString
	var outline, optional, created, updated string
	if err := row.Scan(&a.ID, &env, &builtin, &a.Name, &a.Description, &outline, &a.PromptTemplate, &optional,
		&a.TargetWords, &a.Tone, &by, &created, &updated); err != nil {
		return nil, err
	}
	a.EnvironmentID, a.CreatedBy, a.Builtin = nullID(env), nullID(by), builtin.String
	if err := json.Unmarshal([]byte(outline), &a.Outline); err != nil {
		return nil, fmt.Errorf("archetype %d outline: %w", a.ID, err)
	}
	if err := json.Unmarshal([]byte(optional), &a.OptionalVariables); err != nil {
		return nil, fmt.Errorf("archetype %d optional variables: %w", a.ID, err)
	}
	a.CreatedAt, a.UpdatedAt = parseTime(created), parseTime(updated)
	return &a, nil
}

// archetypeJSON encodes the outline and optional variables for storage.
func archetypeJSON(in ArchetypeInput) (outline, optional string, err error) {
	if in.Outline == nil {
		in.Outline = []Section{}
	}
	if in.OptionalVariables == nil {
		in.OptionalVariables = []string{}
	}
	o, err := json.Marshal(in.Outline)
	if err != nil {
		return "", "", err
	}
	v, err := json.Marshal(in.OptionalVariables)
	if err != nil {
		return "", "", err
	}
	return string(o), string(v), nil
}

// ArchetypeByID finds an archetype.
func (db *DB) ArchetypeByID(ctx context.Context, id int64) (*Archetype, error) {
	return findRow(ctx, db, scanArchetype, "archetype", `SELECT `+archetypeColumns+` FROM archetypes a WHERE a.id = ?`, id)
}

// CreateArchetype stores a new archetype.
func (db *DB) CreateArchetype(ctx context.Context, in ArchetypeInput, createdBy int64) (*Archetype, error) {
	outline, optional, err := archetypeJSON(in)
	if err != nil {
		return nil, err
	}
	var by *int64
	if createdBy != 0 {
		by = &createdBy
	}
	now := db.now()
	a, err := insertRow(ctx, db, scanArchetype, `INSERT INTO archetypes (environment_id, name, description, outline, prompt_template,
		optional_variables, target_words, tone, created_by, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		RETURNING `+returning(archetypeColumns),
		in.EnvironmentID, in.Name, in.Description, outline, in.PromptTemplate, optional, in.TargetWords, in.Tone, by, now, now)
	if err != nil {
		return nil, translate(err, "archetype")
	}
	return a, nil
}

// ReplaceArchetype replaces an archetype's fields but its environment. A
// built-in archetype is not changed: the service refuses first, and the
// statement leaves it alone whatever the caller.
func (db *DB) ReplaceArchetype(ctx context.Context, id int64, in ArchetypeInput) (*Archetype, error) {
	outline, optional, err := archetypeJSON(in)
	if err != nil {
		return nil, err
	}
	a, err := insertRow(ctx, db, scanArchetype, `UPDATE archetypes SET name = ?, description = ?, outline = ?, prompt_template = ?,
		optional_variables = ?, target_words = ?, tone = ?, updated_at = ? WHERE id = ? AND builtin IS NULL
		RETURNING `+returning(archetypeColumns),
		in.Name, in.Description, outline, in.PromptTemplate, optional, in.TargetWords, in.Tone, db.now(), id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, NotFound("archetype not found")
	}
	if err != nil {
		return nil, translate(err, "archetype")
	}
	return a, nil
}

// DeleteArchetype deletes an archetype that is not built in; its runs
// stay, without it.
func (db *DB) DeleteArchetype(ctx context.Context, id int64) error {
	res, err := db.exec(ctx, `DELETE FROM archetypes WHERE id = ? AND builtin IS NULL`, id)
	if err != nil {
		return fmt.Errorf("store: delete archetype: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return NotFound("archetype not found")
	}
	return nil
}

// ArchetypeFilter narrows ListArchetypes.
type ArchetypeFilter struct {
	// EnvironmentID keeps the global archetypes and this environment's.
	EnvironmentID *int64
	// Scope keeps the global archetypes and those of its environments.
	Scope Scope
	Page
}

// ListArchetypes lists archetypes in id order (the built-ins first).
func (db *DB) ListArchetypes(ctx context.Context, f ArchetypeFilter) ([]*Archetype, int, error) {
	var where []string
	var args []any
	if cond, scopeArgs := f.Scope.envIn("a.environment_id"); cond != "" {
		where, args = append(where, "(a.environment_id IS NULL OR "+cond+")"), append(args, scopeArgs...)
	}
	if f.EnvironmentID != nil {
		where, args = append(where, "(a.environment_id IS NULL OR a.environment_id = ?)"), append(args, *f.EnvironmentID)
	}
	return listPage(ctx, db, listQuery{from: "archetypes a", where: where, args: args, columns: archetypeColumns,
		order: "a.id", what: "archetypes"}, f.Page, scanArchetype)
}
