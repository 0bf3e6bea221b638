package storetest

import (
	"context"
	"database/sql"
	"net/url"
	"strings"
	"testing"

	"github.com/copydesk/copydesk/store"
)

// TestClonesResetToTheFixture: a copy a test wrote to, deleted from and
// drew ids in, once reset, holds what a fresh copy holds, row for row, and
// draws the same next id: the route tables' cases cannot tell a reset copy
// from a new one.
func TestClonesResetToTheFixture(t *testing.T) {
	RequirePostgres(t)
	ctx := context.Background()
	fixture := NewPostgres(t)
	db, err := store.Open(ctx, fixture, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	owner := MustUser(t, db, "owner", store.RoleAdmin)
	env, err := db.CreateEnvironment(ctx, store.NewEnvironment{Name: "Site", Slug: "site"})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	c := NewClones(t, fixture, 1)
	if c.reset == "" {
		t.Skip("the test database's user is not a superuser: copies are dropped, not reset")
	}
	used := c.Get(t)
	db, err = store.Open(ctx, used, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	MustUser(t, db, "extra", store.RoleEditor)
	if err := db.DeleteEnvironment(ctx, env.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateEnvironment(ctx, store.NewEnvironment{Name: "Other", Slug: "other"}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.resetCopy(dbName(t, used)); err != nil {
		t.Fatalf("reset: %v", err)
	}
	fresh := c.Get(t)
	if fresh == used {
		t.Fatal("Get handed out the copy in use")
	}
	if got, want := contents(t, used), contents(t, fresh); got != want {
		t.Fatalf("a reset copy differs from a fresh one:\n reset: %.2000s\n fresh: %.2000s", got, want)
	}
	for _, u := range []string{used, fresh} {
		db, err := store.Open(ctx, u, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		e, err := db.CreateEnvironment(ctx, store.NewEnvironment{Name: "Next", Slug: "next"})
		if err != nil {
			t.Fatal(err)
		}
		if e.ID != env.ID+1 {
			t.Errorf("the next environment's id is %d, want %d (after the fixture's)", e.ID, env.ID+1)
		}
		if _, err := db.UserByID(ctx, owner.ID); err != nil {
			t.Errorf("the fixture's user: %v", err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func dbName(t *testing.T, u string) string {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimPrefix(p.Path, "/")
}

// contents is every row of every table of the database at u, and its
// sequences' values, as one text.
func contents(t *testing.T, u string) string {
	t.Helper()
	db, err := sql.Open("pgx", u)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var out string
	err = db.QueryRow(`SELECT string_agg(format('%s: %s', table_name, n), E'\n' ORDER BY table_name) FROM (
		SELECT table_name, query_to_xml(format('SELECT md5(COALESCE(string_agg(t::text, %L ORDER BY t::text), %L)) AS h FROM %I t', '|', '', table_name), false, false, '')::text AS n
		FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'
		UNION ALL
		SELECT sequencename, last_value::text FROM pg_sequences WHERE schemaname = current_schema()) x`).Scan(&out)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
