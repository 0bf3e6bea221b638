package store

import (
	"errors"
	"fmt"
	"strings"
)

// Kind classifies an error by what went wrong, in the terms of the domain,
// so that the HTTP layer maps kinds to statuses in its one table
// (server/respond.go) without knowing where an error came from. Nothing
// here knows HTTP or the SQLite driver: a second store implementation
// returns the same kinds.
type Kind int

const (
	KindInternal     Kind = iota // anything unexpected; the detail is hidden
	KindInvalid                  // input breaks a rule
	KindMalformed                // input cannot be read at all
	KindUnauthorized             // no or bad credentials
	KindForbidden                // authenticated but not allowed
	KindNotFound                 // does not exist or is not visible to the caller
	KindConflict                 // clashes with current state
	KindTooLarge                 // input over a size limit
	KindRetryLater               // refused for now; RetryAfter says when to try again
	KindRemote                   // a remote service (LLM provider, WordPress) failed
	KindUnavailable              // the service is busy or cannot serve for now; RetryAfter says when to try again
	KindTimeout                  // a remote service (WordPress) did not answer in time
)

// Error is an error with a kind and a message that is safe to show a client.
// Err, when set, is the underlying cause; it is logged, never shown.
type Error struct {
	Kind       Kind
	Message    string
	Err        error
	RetryAfter int // seconds, for KindRetryLater and KindUnavailable
	// Fields names the request's fields the error is about, when it is
	// about several (a 422's "fields" beside its detail).
	Fields []string
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
func Invalid(format string, args ...any) *Error { return E(KindInvalid, format, args...) }

// InvalidFields is Invalid naming the fields it is about.
func InvalidFields(fields []string, format string, args ...any) *Error {
	e := E(KindInvalid, format, args...)
	e.Fields = fields
	return e
}
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

// Message is the client-safe text of err: its Message when it is an *Error,
// a generic text otherwise.
func Message(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "internal server error"
}

// article is the indefinite article of word as it sounds: "an agent", "an
// AI content setting", but "a user", "a usage event" and "a unique ...",
// whose u sounds like "you" (u, then one consonant other than n, then a
// vowel; or "uni"). Words it would get wrong ("a unowned") are not used.
func article(word string) string {
	w := strings.ToLower(word)
	switch {
	case w == "" || !strings.ContainsRune("aeiou", rune(w[0])):
		return "a"
	case w[0] == 'u' && (strings.HasPrefix(w, "uni") ||
		len(w) >= 3 && !strings.ContainsRune("aeioun", rune(w[1])) && strings.ContainsRune("aeiou", rune(w[2]))):
		return "a"
	}
	return "an"
}
