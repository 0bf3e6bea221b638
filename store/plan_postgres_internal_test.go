package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver, for the schema of the test's own
)

// TestListQueryPlansPostgres is TestListQueryPlans' promise on PostgreSQL:
// every list, with every filter and order, over the same few thousand rows
// per table (fillPlanData, then ANALYZE), is checked with EXPLAIN: a page
// query does not sort more than sortLimit of its matches (a Sort or an
// Incremental Sort node whose estimate is larger): it walks an index in
// its order (or the table's id order), stopping when the page is full.
//
// EXPLAIN runs with enable_sort off. PostgreSQL's planner, unlike SQLite's,
// weighs its statistics: over a few thousand rows, sorting the hundreds a
// filter finds is often its cheapest plan, and would be again on a real
// table that small. What the test asks is whether an index can serve the
// order, so a sort is made as costly as the planner can make it: a Sort
// that is left means no index in the schema gives the rows in that order
// (a column missing, id not written out at the end of the index, a
// collation or a NULLS order the query does not share; see migration
// 0029). A small sort is still allowed: the child rows of one page.
//
// It runs whenever COPYDESK_TEST_DATABASE names a PostgreSQL database
// (CI's PostgreSQL step), in a schema of its own.
func TestListQueryPlansPostgres(t *testing.T) {
	base := os.Getenv("COPYDESK_TEST_DATABASE")
	if base == "" {
		t.Skip("runs on PostgreSQL only: set COPYDESK_TEST_DATABASE=postgres://... to run it")
	}
	t.Parallel() // its own schema, filled with a few thousand rows per table
	ctx := context.Background()
	// A schema of the test's own (the store's tests cannot use storetest,
	// which imports the store).
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "plan_" + hex.EncodeToString(b)
	if _, err := admin.Exec(`CREATE SCHEMA ` + schema); err != nil {
		t.Fatal(err)
	}
	defer admin.Exec(`DROP SCHEMA ` + schema + ` CASCADE`)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	db, err := Open(ctx, u.String(), Options{Readers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	fillPlanData(t, db)
	if _, err := db.w.ExecContext(ctx, `ANALYZE`); err != nil {
		t.Fatal(err)
	}
	checkEveryList(t, db, checkPostgresPlan)
}

// sortLimit is the most rows a page query may sort (PostgreSQL's estimate).
const sortLimit = 100

// sortNode is a Sort step of EXPLAIN's text and its estimated rows.
var sortNode = regexp.MustCompile(`(?:^|\s)Sort  \(cost=\S+ rows=(\d+)`)

func checkPostgresPlan(t *testing.T, db *DB, query string, args []any, call planCall) {
	t.Helper()
	ctx := context.Background()
	conn, err := db.r.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `SET enable_sort = off`); err != nil {
		t.Fatal(err)
	}
	defer conn.ExecContext(ctx, `RESET enable_sort`)
	rows, err := conn.QueryContext(ctx, "EXPLAIN "+query, args...)
	if err != nil {
		t.Fatalf("explain: %v\n%s", err, query)
	}
	var plan []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, line)
	}
	rows.Close()
	paged := strings.HasSuffix(query, "LIMIT ? OFFSET ?")
	var bad []string
	for _, step := range plan {
		if m := sortNode.FindStringSubmatch(step); paged && m != nil {
			if rows, _ := strconv.Atoi(m[1]); rows > sortLimit {
				bad = append(bad, "sorts: "+strings.TrimSpace(step))
			}
		}
	}
	t.Logf("%s\n  %s", query, strings.Join(plan, "\n  "))
	if len(bad) > 0 {
		t.Errorf("%s\n\nplan:\n  %s\n\nquery: %s\nargs: %v", strings.Join(bad, "\n"), strings.Join(plan, "\n  "), query, args)
	}
}
