package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Live agent sessions (server/live): an agent bound to an environment,
// whose generations everyone who sees the environment can watch. The
// generations, which make the session's transcript, are in
// live_generations.go.

// Statuses of a live session.
const (
	LiveOpen   = "open"
	LiveClosed = "closed"
)

// LiveSession is one live session.
type LiveSession struct {
	ID            int64
	EnvironmentID int64
	AgentID       *int64 // nil once the agent is deleted
	Title         string
	Status        string
	CreatedBy     *int64
	CreatedAt     time.Time
	UpdatedAt     time.Time // the session's last change: created, a generation asked for or ended, closed
	ClosedAt      *time.Time
}

const liveSessionColumns = `s.id, s.environment_id, s.agent_id, s.title, s.status, s.created_by, s.created_at, s.updated_at, s.closed_at`

func scanLiveSession(row rowScanner) (*LiveSession, error) {
	var s LiveSession
	var agent, by sql.NullInt64
	var created, updated string
	var closed sql.NullString
	if err := row.Scan(&s.ID, &s.EnvironmentID, &agent, &s.Title, &s.Status, &by, &created, &updated, &closed); err != nil {
		return nil, err
	}
	s.AgentID, s.CreatedBy = nullID(agent), nullID(by)
	s.CreatedAt, s.UpdatedAt, s.ClosedAt = parseTime(created), parseTime(updated), parseNullTime(closed)
	return &s, nil
}

// NewLiveSession is what CreateLiveSession needs.
type NewLiveSession struct {
	EnvironmentID int64
	AgentID       int64
	Title         string
	CreatedBy     *int64
}

// CreateLiveSession stores an open session.
func (db *DB) CreateLiveSession(ctx context.Context, n NewLiveSession) (*LiveSession, error) {
	now := db.now()
	s, err := insertRow(ctx, db, scanLiveSession, `INSERT INTO live_sessions (environment_id, agent_id, title, status, created_by,
		created_at, updated_at) VALUES (?, ?, ?, 'open', ?, ?, ?) RETURNING `+returning(liveSessionColumns),
		n.EnvironmentID, n.AgentID, n.Title, n.CreatedBy, now, now)
	if err != nil {
		return nil, fmt.Errorf("store: create live session: %w", translate(err, "live session"))
	}
	return s, nil
}

// LiveSessionByID finds a session.
func (db *DB) LiveSessionByID(ctx context.Context, id int64) (*LiveSession, error) {
	return findRow(ctx, db, scanLiveSession, "live session", `SELECT `+liveSessionColumns+` FROM live_sessions s WHERE s.id = ?`, id)
}

// LiveSessionFilter narrows ListLiveSessions.
type LiveSessionFilter struct {
	Scope         Scope  // only the sessions of the environments it sees
	EnvironmentID *int64 // one environment's
	Status        string // LiveOpen or LiveClosed; "" for both
	Sort          Sort   // by liveSessionSorts; newest first by default
	Page          Page
}

func (LiveSessionFilter) sortColumns() map[string]string { return liveSessionSorts }

// liveSessionSorts are the fields sessions sort by: when they were made
// (their id order) and their last activity.
var liveSessionSorts = map[string]string{"created_at": "s.id", "updated_at": "s.updated_at"}

// ListLiveSessions lists sessions, newest first unless sorted otherwise.
func (db *DB) ListLiveSessions(ctx context.Context, f LiveSessionFilter) ([]*LiveSession, int, error) {
	order, err := f.Sort.orderBy(liveSessionSorts, "s.id DESC", "s.id")
	if err != nil {
		return nil, 0, err
	}
	var where []string
	var args []any
	// The unary + keeps SQLite from answering the scope with the
	// environment index, which would gather the scope's sessions and sort
	// them; the page walks the sessions newest first instead.
	if cond, scopeArgs := f.Scope.envIn("+s.environment_id"); cond != "" {
		where, args = append(where, cond), append(args, scopeArgs...)
	}
	if f.EnvironmentID != nil {
		where, args = append(where, "s.environment_id = ?"), append(args, *f.EnvironmentID)
	}
	if f.Status != "" {
		where, args = append(where, "s.status = ?"), append(args, f.Status)
	}
	return listPage(ctx, db, listQuery{from: "live_sessions s", where: where, args: args, columns: liveSessionColumns,
		order: order, what: "live sessions"}, f.Page, scanLiveSession)
}

// CloseLiveSession closes a session; closing a closed one changes nothing.
func (db *DB) CloseLiveSession(ctx context.Context, id int64) (*LiveSession, error) {
	now := db.now()
	if _, err := db.exec(ctx, `UPDATE live_sessions SET status = 'closed', closed_at = ?, updated_at = ? WHERE id = ? AND status = 'open'`,
		now, now, id); err != nil {
		return nil, fmt.Errorf("store: close live session: %w", err)
	}
	return db.LiveSessionByID(ctx, id)
}

// DeleteLiveSession deletes a session and its transcript; posts saved
// from it stay.
func (db *DB) DeleteLiveSession(ctx context.Context, id int64) error {
	return db.deleteByID(ctx, "live_sessions", "live session", id)
}
