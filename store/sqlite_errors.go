package store

import (
	"errors"
	"fmt"
	"strings"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// translate turns driver errors that mean a rule was broken into kinds, once,
// here, so no caller ever inspects SQLite error codes. what names the thing
// being written, e.g. "user". PostgreSQL's errors get the same kinds
// and messages (translatePostgres).
func translate(err error, what string) error {
	if err == nil {
		return nil
	}
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return translatePostgres(err, what)
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
		// A column X_key holds the form X is compared in (users.email_key):
		// the client knows the field as X.
		return strings.TrimSuffix(col, "_key")
	}
	return ""
}
