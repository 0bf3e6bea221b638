package store

import (
	"errors"
	"fmt"
	"strings"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Kind classifies an error so the HTTP layer can map it to a status in one
// table (server/respond.go) without knowing where the error came from.
type Kind int

const (
	KindInternal     Kind = iota // anything unexpected: 500, detail hidden
	KindInvalid                  // input breaks a rule: 422
	KindBadRequest               // request cannot be read at all: 400
	KindUnauthorized             // no or bad credentials: 401
	KindForbidden                // authenticated but not allowed: 403
	KindNotFound                 // does not exist or is not visible to the caller: 404
	KindConflict                 // clashes with current state: 409
	KindTooLarge                 // payload over a size limit: 413
	KindLocked                   // temporarily refused, retry later: 429
	KindUpstream                 // a remote service (LLM provider, WordPress) failed: 502
)

// Error is an error with a kind and a message that is safe to show a client.
// Err, when set, is the underlying cause; it is logged, never shown.
type Error struct {
	Kind       Kind
	Message    string
	Err        error
	RetryAfter int // seconds, for KindLocked
}

func (e *Error) Error() string {
	if e.Err != nil {
		if cause := e.Err.Error(); !strings.Contains(e.Message, cause) {
			return e.Message + ": " + cause
		}
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// E builds an *Error of the given kind with a formatted client-safe message.
func E(kind Kind, format string, args ...any) *Error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

// Invalid, NotFound, Conflict, ... are shorthands for E.
func Invalid(format string, args ...any) *Error  { return E(KindInvalid, format, args...) }
func NotFound(format string, args ...any) *Error { return E(KindNotFound, format, args...) }
func Conflict(format string, args ...any) *Error { return E(KindConflict, format, args...) }
func Forbidden(format string, args ...any) *Error {
	return E(KindForbidden, format, args...)
}
func Unauthorized(format string, args ...any) *Error {
	return E(KindUnauthorized, format, args...)
}

// KindOf reports the kind of err, KindInternal when it carries none.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return KindInternal
}

// IsNotFound reports whether err is a not-found error.
func IsNotFound(err error) bool { return err != nil && KindOf(err) == KindNotFound }

// translate turns driver errors that mean a rule was broken into kinds, once,
// here, so no caller ever inspects SQLite error codes. what names the thing
// being written, e.g. "user".
func translate(err error, what string) error {
	if err == nil {
		return nil
	}
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return err
	}
	switch se.Code() {
	case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
		field := uniqueField(se.Error())
		if field != "" {
			return &Error{Kind: KindConflict, Message: fmt.Sprintf("%s %s with this %s already exists", article(what), what, field), Err: err}
		}
		return &Error{Kind: KindConflict, Message: fmt.Sprintf("this %s already exists", what), Err: err}
	case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
		return &Error{Kind: KindInvalid, Message: fmt.Sprintf("%s refers to something that does not exist", what), Err: err}
	case sqlite3.SQLITE_CONSTRAINT_CHECK, sqlite3.SQLITE_CONSTRAINT_NOTNULL:
		return &Error{Kind: KindInvalid, Message: fmt.Sprintf("%s breaks a data rule", what), Err: err}
	}
	return err
}

// uniqueField pulls the column out of "UNIQUE constraint failed: users.email".
func uniqueField(msg string) string {
	i := strings.LastIndex(msg, "constraint failed: ")
	if i < 0 {
		return ""
	}
	after := msg[i+len("constraint failed: "):]
	after, _, _ = strings.Cut(after, ",")
	after, _, _ = strings.Cut(after, " ")
	if _, col, ok := strings.Cut(after, "."); ok {
		return col
	}
	return ""
}

// Message is the client-safe text of err: its Message when it is an *Error,
// a generic text otherwise.
func Message(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "internal server error"
}

func article(word string) string {
	if word != "" && strings.ContainsRune("aeiouAEIOU", rune(word[0])) {
		return "an"
	}
	return "a"
}
