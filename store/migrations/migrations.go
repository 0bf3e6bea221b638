// Package migrations holds the database's numbered schema migrations,
// NNNN_name.sql, embedded in the binary; store applies them. It is a leaf
// package so that `copydesk version` can report the newest (Latest) before
// the SQLite driver and the rest of the program initialise (see
// internal/buildinfo).
package migrations

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"sync"
)

//go:embed *.sql baseline-sqlite.dump
var files embed.FS

// File is one migration, known by its name alone.
type File struct {
	Version int
	Name    string
}

// List returns the migrations in version order, without reading them.
func List() ([]File, error) {
	entries, err := fs.ReadDir(files, ".")
	if err != nil {
		return nil, err
	}
	ms := make([]File, 0, len(entries))
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".sql") || strings.HasSuffix(e.Name(), PostgresSuffix) {
			continue
		}
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("migrations: %q is not named NNNN_name.sql", e.Name())
		}
		ms = append(ms, File{Version: v, Name: e.Name()})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	return ms, nil
}

// SQL returns the text of the migration called name.
func SQL(name string) (string, error) {
	b, err := files.ReadFile(name)
	return string(b), err
}

// BaselineName is the file holding what the migrations make of an empty
// SQLite database (its schema, its rows and its application id), dumped
// by store's TestSQLiteBaselineIsCurrent: a first start runs it instead of
// every migration (see store.DB.migrate). It is a generated dump, not a
// migration, so its name does not end in .sql.
const BaselineName = "baseline-sqlite.dump"

// Baseline returns the SQLite baseline's text.
func Baseline() (string, error) {
	b, err := files.ReadFile(BaselineName)
	return string(b), err
}

// PostgresSuffix ends the name of a migration's PostgreSQL text, kept
// beside the migration (NNNN_name.pg.sql) where translating its SQLite text
// cannot work.
const PostgresSuffix = ".pg.sql"

// PostgresSQL returns the PostgreSQL text of the migration called name
// (NNNN_name.sql), if it has one of its own.
func PostgresSQL(name string) (text string, ok bool, err error) {
	b, err := files.ReadFile(strings.TrimSuffix(name, ".sql") + PostgresSuffix)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	return string(b), err == nil, err
}

// latest is worked out once: the embedded files cannot change.
var latest = sync.OnceValue(func() int {
	ms, err := List()
	if err != nil || len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].Version
})

// Latest is the newest migration's version: the schema this binary writes.
func Latest() int { return latest() }
