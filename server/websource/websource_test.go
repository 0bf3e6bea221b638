package websource_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/copydesk/copydesk/server/feed"
	"github.com/copydesk/copydesk/server/jobs"
	"github.com/copydesk/copydesk/server/notify"
	"github.com/copydesk/copydesk/server/websource"
	"github.com/copydesk/copydesk/store"
)

func TestCheckURL(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in, want string
		detail   string // of the 422, when refused
	}{
		{in: " https://blog.example/feed.xml ", want: "https://blog.example/feed.xml"},
		{in: "http://blog.example/?feed=rss2#top", want: "http://blog.example/?feed=rss2"},
		{in: "http://10.0.0.5:8080/feed", want: "http://10.0.0.5:8080/feed"}, // judged when fetched
		{in: "ftp://blog.example/feed", detail: "url: must be an http or https address"},
		{in: "blog.example/feed", detail: "url: must be an http or https address"},
		{in: "https://ann:pw@blog.example/feed", detail: "url: must be an http or https address"},
		{in: "http://169.254.169.254/latest/meta-data/", detail: "url: address 169.254.169.254 is not allowed"},
		{in: "http://[fe80::1]/feed", detail: "url: address fe80::1 is not allowed"},
		{in: "https://blog.example/\nfeed", detail: "url: must not contain control characters"},
		{in: "https://blog.example/" + strings.Repeat("a", 2048), detail: "url: must be at most 2048 characters"},
	}
	for _, c := range cases {
		got, err := websource.CheckURL(c.in)
		if c.detail != "" {
			if store.KindOf(err) != store.KindInvalid || !strings.HasPrefix(store.Message(err), c.detail) {
				t.Errorf("%q: %q, %v; want a 422 starting %q", c.in, got, err, c.detail)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q: %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

// The back-off: interval × 2^n after n failures in a row, at least a
// Retry-After, at most 32 intervals or a day, whichever is shorter, and
// never below the interval.
func TestDelay(t *testing.T) {
	t.Parallel()
	const h, m = time.Hour, time.Minute
	cases := []struct {
		name       string
		interval   time.Duration
		failures   int
		retryAfter time.Duration
		want       time.Duration
	}{
		{"Success", h, 0, 0, h},
		{"OneFailure", h, 1, 0, 2 * h},
		{"TwoFailures", h, 2, 0, 4 * h},
		{"FourFailures", h, 4, 0, 16 * h},
		{"CappedAtADay", h, 5, 0, 24 * h},
		{"StillCapped", h, 1000, 0, 24 * h},
		{"ShortIntervalCappedAt32", 5 * m, 5, 0, 160 * m},
		{"ShortIntervalStillAt32", 5 * m, 40, 0, 160 * m},
		{"ShortIntervalBelowCap", 5 * m, 3, 0, 40 * m},
		{"DailyNotSlowed", 24 * h, 3, 0, 24 * h},
		{"MonthlyNotSlowed", 30 * 24 * h, 60, 0, 30 * 24 * h},
		{"RetryAfterLonger", h, 1, 5 * h, 5 * h},
		{"RetryAfterShorter", h, 3, 30 * m, 8 * h},
		{"RetryAfterBeyondCap", h, 1, 72 * h, 24 * h},
		{"RetryAfterBeyondShortCap", 5 * m, 1, 6 * h, 160 * m},
	}
	for _, c := range cases {
		if got := websource.Delay(c.interval, c.failures, c.retryAfter); got != c.want {
			t.Errorf("%s: Delay(%s, %d, %s) = %s, want %s", c.name, c.interval, c.failures, c.retryAfter, got, c.want)
		}
	}
}

// recordStore is a Store that records every fetch as rec says, and whose
// source rec.Source is; the other methods are not called.
type recordStore struct {
	websource.Store
	rec store.WebFetchRecord
}

func (s *recordStore) WebSourceByID(context.Context, int64) (*store.WebSource, error) {
	return s.rec.Source, nil
}

func (s *recordStore) RecordWebSourceFetch(context.Context, int64, store.WebFetch) (*store.WebFetchRecord, error) {
	rec := s.rec
	return &rec, nil
}

type failingFetcher struct{}

func (failingFetcher) Fetch(context.Context, feed.Request) (*feed.Result, error) {
	return nil, errors.New("connection refused")
}

type quietRunner struct{}

func (quietRunner) Register(string, jobs.Kind)           {}
func (quietRunner) Replan(context.Context, string) error { return nil }

type kindNotifier struct{ kinds []string }

func (n *kindNotifier) EnvironmentRole(_ context.Context, _ int64, _ store.Role, note notify.Note) {
	n.kinds = append(n.kinds, note.Kind)
}

// Whether a fetch tells the editors is decided by the failure counts its
// own write moved between, never by the source as another fetch of it
// running at once may have left it: each crossing of NotifyAfter is told
// by the one fetch that made it.
func TestTellJudgesThisFetch(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name          string
		recorded      bool
		before, after int
		now           int // the source's count as a later read would see it
		want          string
	}{
		{"Reaches", true, 4, 5, 5, "websource.failing"},
		{"ReachesThenAnotherFails", true, 4, 5, 6, "websource.failing"},
		{"ReachesThenAnotherAnswers", true, 4, 5, 0, "websource.failing"},
		{"Beyond", true, 5, 6, 6, ""},
		{"AnotherReachedFirst", true, 5, 6, 5, ""},
		{"Below", true, 3, 4, 5, ""},
		{"Recovers", true, 5, 0, 0, "websource.recovered"},
		{"RecoversThenAnotherFails", true, 7, 0, 1, "websource.recovered"},
		{"AnswersBeforeItWasTold", true, 4, 0, 5, ""},
		{"NotRecorded", false, 4, 4, 5, ""},
	}
	for _, c := range cases {
		db := &recordStore{rec: store.WebFetchRecord{Recorded: c.recorded, FailuresBefore: c.before, FailuresAfter: c.after,
			Source: &store.WebSource{ID: 1, EnvironmentID: 2, URL: "https://blog.example/feed", ConsecutiveFailures: c.now}}}
		n := &kindNotifier{}
		s := websource.New(websource.Deps{Store: db, Fetcher: failingFetcher{}, Jobs: quietRunner{}, Notify: n})
		if _, err := s.Fetch(context.Background(), store.Everything, 1); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := strings.Join(n.kinds, ","); got != c.want {
			t.Errorf("%s: told %q, want %q", c.name, got, c.want)
		}
	}
}
