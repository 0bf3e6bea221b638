package store_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/copydesk/copydesk/store"
)

// fillUsage writes n usage events spread evenly over the year before end,
// across 5 environments, 20 users, 10 agents and 6 models, straight into
// the file for speed.
func fillUsage(t testing.TB, db *store.DB, n int, end time.Time) {
	t.Helper()
	ctx := context.Background()
	var envs []int64
	for i := 0; i < 5; i++ {
		e, err := db.CreateEnvironment(ctx, store.NewEnvironment{Name: fmt.Sprintf("Env %d", i), Slug: fmt.Sprintf("env-%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		envs = append(envs, e.ID)
	}
	conn, err := store.RawConn(db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	models := []string{"gpt-4o-mini", "gpt-4o", "gpt-4.1", "claude-sonnet-4-5", "claude-haiku-4-5", "llama3.1"}
	sources := []string{"execution", "chat", "live", "scout", "autopilot"}
	span := 365 * 24 * time.Hour
	const batch = 20000
	for done := 0; done < n; done += batch {
		tx, err := conn.Begin()
		if err != nil {
			t.Fatal(err)
		}
		st, err := tx.Prepare(`INSERT INTO usage_events (created_at, provider, model, input_tokens, output_tokens, cached_tokens,
			cost_micros, latency_ms, status, source, environment_id) VALUES (?, 'openai', ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
		if err != nil {
			t.Fatal(err)
		}
		for i := done; i < min(done+batch, n); i++ {
			at := end.Add(-span + time.Duration(int64(span)/int64(n)*int64(i)))
			var cost any = int64(i%1000) * 100
			if i%50 == 0 {
				cost = nil
			}
			status := "ok"
			if i%97 == 0 {
				status = "error"
			}
			if _, err := st.Exec(at.UTC().Format(store.TimeFormat), models[i%len(models)], 1000+i%500, 300+i%200, i%100, cost,
				200+i%800, status, sources[i%len(sources)], envs[i%len(envs)]); err != nil {
				t.Fatal(err)
			}
		}
		st.Close()
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	conn.Exec(`ANALYZE`)
}

// The day series over 30 days reads the time index, not the whole table.
func TestUsageSeriesUsesIndex(t *testing.T) {
	db, _ := openDB(t)
	conn, err := store.PlanConn(t, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rows, err := conn.Query(`EXPLAIN QUERY PLAN `+store.UsageSeriesQuery, "2026-01-01T00:00:00.000Z", "2026-01-31T00:00:00.000Z")
	if err != nil {
		t.Fatal(err)
	}
	var plan []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		rows.Scan(&id, &parent, &notused, &detail)
		plan = append(plan, detail)
	}
	rows.Close()
	if joined := strings.Join(plan, " | "); !strings.Contains(joined, "USING INDEX usage_events_time") {
		t.Fatalf("the series does not use usage_events_time: %s", joined)
	}
}

// BenchmarkUsageSeries30Days groups 30 days of a table of 1,000,000 usage
// events by day, by model, and for one environment.
// Run: go test -run '^$' -bench UsageSeries -benchtime 10x ./store/
func BenchmarkUsageSeries30Days(b *testing.B) {
	db, _ := openDB(b)
	end := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)
	fillUsage(b, db, 1_000_000, end)
	from := end.AddDate(0, 0, -30)
	ctx := context.Background()
	env := int64(1)
	for _, c := range []struct {
		name  string
		group string
		f     store.UsageFilter
	}{
		{"ByDay", store.GroupByDay, store.UsageFilter{From: &from, To: &end, Scope: store.Everything}},
		{"ByModel", store.GroupByModel, store.UsageFilter{From: &from, To: &end, Scope: store.Everything}},
		{"OneEnvironmentByDay", store.GroupByDay, store.UsageFilter{From: &from, To: &end, UsageMatch: store.UsageMatch{EnvironmentID: &env}, Scope: store.Everything}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				points, err := db.UsageSeries(ctx, c.f, c.group)
				if err != nil || len(points) == 0 {
					b.Fatalf("%d points: %v", len(points), err)
				}
			}
		})
	}
}
