package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// Slugs the store generates: a row named from its name by the service's
// rule, the first free one taken in the transaction that inserts it (the
// categories, tags, posts and campaigns).

// maxSlugTries bounds the search for a free generated slug.
const maxSlugTries = 100

// slugPlaceholder names a row between its insert and its naming, in the
// same transaction: no slug can contain "~", so it never clashes with one.
const slugPlaceholder = "~new"

// SlugTries makes the n-th try (from 1) of a generated slug for the row
// with id: the service's rule (server/slug), which the store applies in the
// transaction that inserts the row, so a name that slugs to nothing can be
// named by its id.
type SlugTries func(id int64, try int) string

// nameRow gives the row id of table the first free slug of tries, within
// tx; a unique slug index makes a taken one fail, and only that statement
// is undone (a savepoint: PostgreSQL, unlike SQLite, aborts the whole
// transaction on a failed statement otherwise).
func nameRow(ctx context.Context, tx *sql.Tx, table string, id int64, tries SlugTries, what string) error {
	for try := 1; try <= maxSlugTries; try++ {
		err := undoable(ctx, tx, func() error {
			_, err := tx.ExecContext(ctx, `UPDATE `+table+` SET slug = ? WHERE id = ?`, tries(id, try), id)
			return err
		})
		if err == nil {
			return nil
		}
		if KindOf(translate(err, what)) != KindConflict {
			return err
		}
	}
	return Conflict("no free slug for this %s after %d tries: give one", what, maxSlugTries)
}

// insertSlugged inserts a row of table with insert, under the given slug
// (taken: a conflict), or, when none is given, under the placeholder and
// then the first free slug of tries (nameRow). tx is the caller's.
func insertSlugged(ctx context.Context, tx *sql.Tx, table, what, given string, tries SlugTries, insert func(slug string) (int64, error)) (int64, error) {
	if given == "" && tries == nil {
		// A caller's mistake, said at once: nameRow would call a nil func
		// under the writer's transaction.
		return 0, Invalid("slug: a %s needs a slug or a way to make one", what)
	}
	s := given
	if s == "" {
		s = slugPlaceholder
	}
	id, err := insert(s)
	if err != nil {
		return 0, slugTaken(translate(err, what), what)
	}
	if given == "" {
		return id, nameRow(ctx, tx, table, id, tries, what)
	}
	return id, nil
}

// slugTaken is the conflict of a given slug, in the caller's words.
func slugTaken(err error, what string) error {
	if KindOf(err) == KindConflict {
		return &Error{Kind: KindConflict, Message: fmt.Sprintf("slug: another %s of this environment has this slug", what), Err: err}
	}
	return err
}

// undoable runs fn, one statement of tx that may fail, under a savepoint:
// when it fails, the transaction goes on as before it, on both engines.
func undoable(ctx context.Context, tx *sql.Tx, fn func() error) error {
	if _, err := tx.ExecContext(ctx, `SAVEPOINT undoable`); err != nil {
		return err
	}
	if err := fn(); err != nil {
		if _, undoErr := tx.ExecContext(ctx, `ROLLBACK TO SAVEPOINT undoable`); undoErr != nil {
			return errors.Join(err, undoErr)
		}
		_, _ = tx.ExecContext(ctx, `RELEASE SAVEPOINT undoable`)
		return err
	}
	_, err := tx.ExecContext(ctx, `RELEASE SAVEPOINT undoable`)
	return err
}
