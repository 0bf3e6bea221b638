package analytics

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/copydesk/copydesk/store"
)

var t0 = time.Date(2026, 3, 17, 15, 4, 5, 0, time.UTC)

// fakeStore records the filters it is asked with and answers with fixed
// data, so the tests see exactly what the service hands the store.
type fakeStore struct {
	filters []store.UsageFilter
	groups  []string
	series  map[string][]*store.UsageTotals
	events  []*store.UsageEvent
	err     error
}

func (f *fakeStore) ListUsage(_ context.Context, fl store.UsageFilter, _ store.Page) ([]*store.UsageEvent, int, error) {
	f.filters = append(f.filters, fl)
	return f.events, len(f.events), f.err
}

func (f *fakeStore) UsageSummary(_ context.Context, fl store.UsageFilter) (*store.UsageTotals, error) {
	f.filters = append(f.filters, fl)
	return &store.UsageTotals{Calls: 3}, f.err
}

func (f *fakeStore) UsageSeries(_ context.Context, fl store.UsageFilter, groupBy string) ([]*store.UsageTotals, error) {
	f.filters, f.groups = append(f.filters, fl), append(f.groups, groupBy)
	return f.series[groupBy], f.err
}

func (f *fakeStore) UsagePeriods(_ context.Context, fl store.UsageFilter, _ []time.Time, _ []string) ([]*store.UsageTotals, error) {
	f.filters = append(f.filters, fl)
	return nil, f.err
}

func (f *fakeStore) EachUsage(_ context.Context, fl store.UsageFilter, fn func(*store.UsageEvent) error) error {
	f.filters = append(f.filters, fl)
	for _, e := range f.events {
		if err := fn(e); err != nil {
			return err
		}
	}
	return f.err
}

func newService() (*Service, *fakeStore) {
	db := &fakeStore{}
	return New(db, func() time.Time { return t0 }), db
}

func ptr[T any](v T) *T { return &v }

func day(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }

func timeText(t *time.Time) string {
	if t == nil {
		return "open"
	}
	return t.Format(time.RFC3339)
}

func TestRange(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name     string
		q        Query
		from, to string // RFC 3339 or "open"
	}{
		{"Open", Query{}, "open", "open"},
		{"Days", Query{From: "2026-01-01", To: "2026-01-31"}, "2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z"},
		{"ToIsEndOfThatDay", Query{To: "2026-02-28"}, "open", "2026-03-01T00:00:00Z"},
		{"TimesInUTC", Query{From: "2026-01-01T10:00:00+02:00", To: "2026-01-01T12:00:00Z"}, "2026-01-01T08:00:00Z", "2026-01-01T12:00:00Z"},
		{"TimeToIsExact", Query{From: "2026-01-01", To: "2026-01-02T00:00:00Z"}, "2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			svc, _ := newService()
			sum, err := svc.Summary(ctx, store.Everything, c.q)
			if err != nil {
				t.Fatal(err)
			}
			if timeText(sum.From) != c.from || timeText(sum.To) != c.to {
				t.Fatalf("range %s – %s, want %s – %s", timeText(sum.From), timeText(sum.To), c.from, c.to)
			}
		})
	}
}

func TestRangeRefused(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name   string
		q      Query
		detail string
	}{
		{"FromWord", Query{From: "yesterday"}, "from: must be a date"},
		{"ToWord", Query{To: "tomorrow"}, "to: must be a date"},
		{"NoSuchMonth", Query{From: "2026-13-01"}, "from: must be a date"},
		{"ToBeforeFrom", Query{From: "2026-11-03", To: "2026-11-01"}, "to: must be after from"},
		{"ToEqualsFrom", Query{From: "2026-11-03T00:00:00Z", To: "2026-11-03T00:00:00Z"}, "to: must be after from"},
		// A day as "to" includes that day, so from and to on one day is fine;
		// a day before it is not.
		{"ToDayBeforeFromDay", Query{From: "2026-11-03", To: "2026-11-02"}, "to: must be after from"},
		// Year 10000 cannot be written as JSON: the answer echoing it was
		// an empty 200.
		{"ToLastDay", Query{To: "9999-12-31"}, "to: must fall in the years 2000 to 9999"},
		{"ToPastYear9999InUTC", Query{To: "9999-12-31T23:00:00-05:00"}, "to: must fall in the years 2000 to 9999"},
		{"FromBeforeYear0InUTC", Query{From: "0000-01-01T00:00:00+01:00"}, "from: must fall in the years 2000 to 9999"},
		{"FromBefore2000", Query{From: "1999-12-31"}, "from: must fall in the years 2000 to 9999"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			svc, db := newService()
			_, err := svc.Summary(ctx, store.Everything, c.q)
			if store.KindOf(err) != store.KindInvalid || !strings.Contains(err.Error(), c.detail) {
				t.Fatalf("got %v, want invalid with %q", err, c.detail)
			}
			if len(db.filters) != 0 {
				t.Fatal("a refused query reached the store")
			}
		})
	}
	t.Run("Bounds", func(t *testing.T) {
		svc, _ := newService()
		if _, err := svc.Summary(ctx, store.Everything, Query{From: "2000-01-01", To: "9999-12-30"}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("OneDay", func(t *testing.T) {
		svc, _ := newService()
		if _, err := svc.Summary(ctx, store.Everything, Query{From: "2026-11-03", To: "2026-11-03"}); err != nil {
			t.Fatal(err)
		}
	})
}

func TestDefaultRanges(t *testing.T) {
	ctx := context.Background()
	svc, _ := newService()
	ser, err := svc.Series(ctx, store.Everything, Query{}, "")
	if err != nil {
		t.Fatal(err)
	}
	if want := day(2026, 2, 16); ser.From == nil || !ser.From.Equal(want) || ser.To != nil {
		t.Errorf("series: %s – %s, want the last 30 days from %s", timeText(ser.From), timeText(ser.To), want)
	}
	costs, err := svc.Costs(ctx, store.Everything, Query{})
	if err != nil {
		t.Fatal(err)
	}
	if want := day(2026, 3, 1); costs.From == nil || !costs.From.Equal(want) || costs.To != nil {
		t.Errorf("costs: %s – %s, want the month from %s", timeText(costs.From), timeText(costs.To), want)
	}
	// Either bound given: no default.
	ser, err = svc.Series(ctx, store.Everything, Query{To: "2026-01-10"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if ser.From != nil {
		t.Errorf("series with to: from %s, want open", timeText(ser.From))
	}
	list, _, err := svc.List(ctx, store.Everything, Query{}, store.Page{Page: 1, PerPage: 50})
	if err != nil || list != nil {
		t.Fatal(list, err)
	}
}

func TestGrouping(t *testing.T) {
	ctx := context.Background()
	for _, g := range []string{"", "day", "model", "agent", "environment", "user"} {
		t.Run("Accepted/"+g, func(t *testing.T) {
			svc, db := newService()
			ser, err := svc.Series(ctx, store.Everything, Query{}, g)
			if err != nil {
				t.Fatal(err)
			}
			want := g
			if want == "" {
				want = "day"
			}
			if ser.GroupBy != want || db.groups[0] != want {
				t.Fatalf("grouped by %q (store %q), want %q", ser.GroupBy, db.groups[0], want)
			}
		})
	}
	for _, g := range []string{"week", "Day", "provider"} {
		t.Run("Refused/"+g, func(t *testing.T) {
			svc, db := newService()
			_, err := svc.Series(ctx, store.Everything, Query{}, g)
			if store.KindOf(err) != store.KindInvalid || !strings.Contains(err.Error(), "group_by: must be one of: day, model") {
				t.Fatalf("got %v", err)
			}
			if len(db.filters) != 0 {
				t.Fatal("a refused grouping reached the store")
			}
		})
	}
}

func TestScope(t *testing.T) {
	ctx := context.Background()
	viewer := store.NewScope(7, false, []int64{2, 5})
	t.Run("FilterCarriesScope", func(t *testing.T) {
		svc, db := newService()
		if _, _, err := svc.List(ctx, viewer, Query{UsageMatch: store.UsageMatch{Model: "gpt"}}, store.Page{Page: 1, PerPage: 10}); err != nil {
			t.Fatal(err)
		}
		f := db.filters[0]
		if f.Scope.UserID != 7 || f.Scope.Admin || len(f.Scope.Envs) != 2 || f.Model != "gpt" {
			t.Fatalf("filter %+v", f)
		}
	})
	t.Run("GrantedEnvironment", func(t *testing.T) {
		svc, db := newService()
		if _, err := svc.Summary(ctx, viewer, Query{UsageMatch: store.UsageMatch{EnvironmentID: ptr[int64](5)}}); err != nil {
			t.Fatal(err)
		}
		if *db.filters[0].EnvironmentID != 5 {
			t.Fatalf("filter %+v", db.filters[0])
		}
	})
	t.Run("ForeignEnvironmentIsNotFound", func(t *testing.T) {
		svc, db := newService()
		check := func(name string, err error) {
			t.Helper()
			if !store.IsNotFound(err) || !strings.Contains(err.Error(), "environment not found") {
				t.Errorf("%s: got %v, want environment not found", name, err)
			}
		}
		q := Query{UsageMatch: store.UsageMatch{EnvironmentID: ptr[int64](3)}}
		_, _, err := svc.List(ctx, viewer, q, store.Page{Page: 1, PerPage: 10})
		check("list", err)
		_, err = svc.Summary(ctx, viewer, q)
		check("summary", err)
		_, err = svc.Series(ctx, viewer, q, "model")
		check("series", err)
		_, err = svc.Costs(ctx, viewer, q)
		check("costs", err)
		opened := false
		err = svc.ExportCSV(ctx, viewer, q, func() io.Writer { opened = true; return io.Discard })
		check("export", err)
		if opened || len(db.filters) != 0 {
			t.Fatal("a foreign environment reached the store or the writer")
		}
	})
	t.Run("AdminAnyEnvironment", func(t *testing.T) {
		svc, _ := newService()
		if _, err := svc.Summary(ctx, store.NewScope(1, true, nil), Query{UsageMatch: store.UsageMatch{EnvironmentID: ptr[int64](99)}}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("BadDateBeforeForeignEnvironment", func(t *testing.T) {
		svc, _ := newService()
		_, err := svc.Summary(ctx, viewer, Query{From: "soon", UsageMatch: store.UsageMatch{EnvironmentID: ptr[int64](3)}})
		if store.KindOf(err) != store.KindInvalid {
			t.Fatalf("got %v, want invalid", err)
		}
	})
}

func TestCosts(t *testing.T) {
	svc, db := newService()
	db.series = map[string][]*store.UsageTotals{
		"model": {{Key: "gpt-4o", Calls: 2, Cost: store.MicrosOf(1.25)}, {Key: "llama", Calls: 4, UnpricedCalls: 4},
			{Key: "claude", Calls: 1, Cost: store.MicrosOf(0.5)}},
		"environment": {{Key: "2", Label: "Blog", Cost: store.MicrosOf(1.75)}},
	}
	costs, err := svc.Costs(context.Background(), store.Everything, Query{From: "2026-01-01"})
	if err != nil {
		t.Fatal(err)
	}
	if costs.TotalCost == nil || *costs.TotalCost != store.MicrosOf(1.75) || len(costs.ByModel) != 3 || len(costs.ByEnvironment) != 1 {
		t.Fatalf("costs %+v", costs)
	}
	if strings.Join(db.groups, ",") != "model,environment" {
		t.Fatalf("groupings asked: %v", db.groups)
	}
	t.Run("OnlyUnpriced", func(t *testing.T) {
		// Only calls without a price: the total is unknown, not 0.
		svc, db := newService()
		db.series = map[string][]*store.UsageTotals{"model": {{Key: "llama", Calls: 4, UnpricedCalls: 4}}, "environment": {}}
		if costs, err := svc.Costs(context.Background(), store.Everything, Query{From: "2026-01-01"}); err != nil || costs.TotalCost != nil {
			t.Fatalf("unpriced costs %+v (%v)", costs, err)
		}
	})
	t.Run("StoreError", func(t *testing.T) {
		svc, db := newService()
		db.err = errors.New("disk on fire")
		if _, err := svc.Costs(context.Background(), store.Everything, Query{}); err == nil {
			t.Fatal("store error lost")
		}
	})
}

func TestExportCSV(t *testing.T) {
	svc, db := newService()
	created := time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)
	db.events = []*store.UsageEvent{
		{ID: 1, CreatedAt: created, Provider: "openai", Model: "gpt-4o", InputTokens: 10, OutputTokens: 20, CachedTokens: 1,
			Cost: store.MicrosOfUSD(ptr(0.0125)), LatencyMS: 300, Status: "ok", Source: "chat", UserID: ptr[int64](7), EnvironmentID: ptr[int64](2)},
		{ID: 2, CreatedAt: created, Provider: "openai", Model: "=HYPERLINK(\"x\")", Status: "error", Error: "-boom", Source: "test", Estimated: true},
	}
	var buf bytes.Buffer
	if err := svc.ExportCSV(context.Background(), store.Everything, Query{}, func() io.Writer { return &buf }); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 || strings.Join(rows[0], ",") != strings.Join(csvHeader, ",") {
		t.Fatalf("rows %q", rows)
	}
	want1 := "1,2026-01-02T03:04:05.000Z,openai,gpt-4o,10,20,1,0.012500,300,ok,,chat,7,2,,,false" // six decimals, always
	want2 := `2,2026-01-02T03:04:05.000Z,openai,'=HYPERLINK("x"),0,0,0,,0,error,'-boom,test,,,,,true`
	if got := strings.Join(rows[1], ","); got != want1 {
		t.Errorf("row 1:\n got %s\nwant %s", got, want1)
	}
	if got := strings.Join(rows[2], ","); got != want2 {
		t.Errorf("row 2:\n got %s\nwant %s", got, want2)
	}
	t.Run("StoreErrorAfterStart", func(t *testing.T) {
		svc, db := newService()
		db.err = errors.New("disk on fire")
		opened := false
		err := svc.ExportCSV(context.Background(), store.Everything, Query{}, func() io.Writer { opened = true; return io.Discard })
		if err == nil || !opened {
			t.Fatalf("err %v, opened %v", err, opened)
		}
	})
}

func TestCSVSafe(t *testing.T) {
	for in, want := range map[string]string{"": "", "gpt-4o": "gpt-4o", "=1+1": "'=1+1", "+x": "'+x", "-x": "'-x", "@x": "'@x",
		"\tx": "'\tx", "\rx": "'\rx", "a=b": "a=b"} {
		if got := csvSafe(in); got != want {
			t.Errorf("csvSafe(%q) = %q, want %q", in, got, want)
		}
	}
}
