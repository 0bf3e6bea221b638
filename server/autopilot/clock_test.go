package autopilot

import (
	"testing"
	"time"

	"github.com/copydesk/copydesk/store"
)

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func TestWindowOpen(t *testing.T) {
	t.Parallel()
	berlin := mustZone(t, "Europe/Berlin")
	utc := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	cases := []struct {
		name       string
		start, end int
		loc        *time.Location
		at, want   string
	}{
		{"WholeDay", 0, 1440, time.UTC, "2026-11-21T12:00:00Z", "2026-11-21T12:00:00Z"},
		{"BeforeOpening", 9 * 60, 17 * 60, time.UTC, "2026-11-21T06:00:00Z", "2026-11-21T09:00:00Z"},
		{"Inside", 9 * 60, 17 * 60, time.UTC, "2026-11-21T16:59:00Z", "2026-11-21T16:59:00Z"},
		{"AtTheEnd", 9 * 60, 17 * 60, time.UTC, "2026-11-21T17:00:00Z", "2026-11-22T09:00:00Z"},
		{"InTheZone", 14 * 60, 18 * 60, berlin, "2026-11-21T12:00:00Z", "2026-11-21T13:00:00Z"},
		{"OvernightLate", 22 * 60, 6 * 60, time.UTC, "2026-11-21T23:30:00Z", "2026-11-21T23:30:00Z"},
		{"OvernightEarly", 22 * 60, 6 * 60, time.UTC, "2026-11-21T03:00:00Z", "2026-11-21T03:00:00Z"},
		{"OvernightDay", 22 * 60, 6 * 60, time.UTC, "2026-11-21T12:00:00Z", "2026-11-21T22:00:00Z"},
		// The clocks go forward at 02:00 on 29 March 2026 in Berlin: the
		// window still opens at 09:00 on the wall clock, now UTC+2.
		{"AfterTheClocksChange", 9 * 60, 17 * 60, berlin, "2026-03-28T20:00:00Z", "2026-03-29T07:00:00Z"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := window{start: c.start, end: c.end, loc: c.loc}
			if got := w.open(utc(c.at)); !got.Equal(utc(c.want)) {
				t.Fatalf("open(%s) = %s, want %s", c.at, got.UTC().Format(time.RFC3339), c.want)
			}
		})
	}
}

func TestScheduleDue(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	at := func(h, m int) *time.Time { v := time.Date(2026, 11, 21, h, m, 0, 0, time.UTC); return &v }
	nineToFive := window{start: 9 * 60, end: 17 * 60, loc: time.UTC}
	cases := []struct {
		name string
		s    schedule
		want time.Time
	}{
		{"FirstRunAtOnce", schedule{now: now, win: nineToFive, max: 4}, now},
		// 4 posts in 8 hours: 2 hours apart.
		{"Spaced", schedule{now: now, win: nineToFive, max: 4, today: 1, last: at(11, 0)}, *at(13, 0)},
		{"SpacedLongAgo", schedule{now: now, win: nineToFive, max: 4, today: 1, last: at(9, 0)}, now},
		{"SpacingPastTheWindow", schedule{now: now, win: nineToFive, max: 4, today: 3, last: at(16, 0)}, time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)},
		{"DayDone", schedule{now: now, win: nineToFive, max: 2, today: 2, last: at(9, 0)}, time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)},
		{"Idle", schedule{now: now, win: nineToFive, max: 4, idle: at(12, 30)}, *at(12, 30)},
		{"WholeDayHundred", schedule{now: now, win: window{end: 1440, loc: time.UTC}, max: 100, today: 1, last: at(11, 50)},
			time.Date(2026, 11, 21, 12, 4, 24, 0, time.UTC)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.s.due(); !got.Equal(c.want) {
				t.Fatalf("due = %s, want %s", got, c.want)
			}
		})
	}
}

func TestDaysAndMonthsInTheZone(t *testing.T) {
	t.Parallel()
	tokyo := mustZone(t, "Asia/Tokyo")
	// 20:00 UTC on 31 December is 05:00 on 1 January in Tokyo.
	now := time.Date(2026, 12, 31, 20, 0, 0, 0, time.UTC)
	if got, want := dayStart(now, tokyo, 0), time.Date(2026, 12, 31, 15, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("day start %s, want %s", got.UTC(), want)
	}
	if got, want := monthStart(now, tokyo, 0), time.Date(2026, 12, 31, 15, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("month start %s, want %s", got.UTC(), want)
	}
	if got, want := monthStart(now, time.UTC, 1), time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("next month in UTC %s, want %s", got, want)
	}
	if got := zone(&store.Environment{}); got != time.UTC {
		t.Errorf("no time zone: %s", got)
	}
}

func TestParseClock(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int{"00:00": 0, "09:30": 570, "23:59": 1439, "24:00": 1440} {
		if got, err := ParseClock("f", in); err != nil || got != want || FormatClock(got) != in {
			t.Errorf("ParseClock(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "9:30", "24:01", "12:60", "-1:00", "12", "12:3", "ab:cd", "12:30:00"} {
		if _, err := ParseClock("f", in); store.KindOf(err) != store.KindInvalid {
			t.Errorf("ParseClock(%q): %v, want invalid", in, err)
		}
	}
}

func TestNormalizeConfig(t *testing.T) {
	t.Parallel()
	c, err := normalize(ConfigInput{})
	if err != nil || c.WindowStart != 0 || c.WindowEnd != 1440 || c.MaxPostsPerDay != 1 || c.PostStatus != "campaign" || !c.AutoResume ||
		c.DailyBudget != nil || len(c.CampaignIDs) != 0 {
		t.Fatalf("defaults: %+v %v", c, err)
	}
	off, budget := false, 2.5
	c, err = normalize(ConfigInput{WindowStart: "22:00", WindowEnd: "00:00", MaxPostsPerDay: 3, DailyBudgetUSD: &budget, PostStatus: "draft",
		AutoResume: &off, CampaignIDs: []int64{3, 1}, Variables: map[string]string{"audience": "  bakers "}})
	if err != nil || c.WindowStart != 1320 || c.WindowEnd != 1440 || c.MaxPostsPerDay != 3 || *c.DailyBudget != 2_500_000 || c.AutoResume ||
		c.PostStatus != "draft" || c.CampaignIDs[0] != 3 || c.Variables["audience"] != "bakers" {
		t.Fatalf("given: %+v %v", c, err)
	}
	zero := 0.0
	for name, in := range map[string]ConfigInput{
		"window_start":       {WindowStart: "24:00"},
		"window_end":         {WindowStart: "10:00", WindowEnd: "10:00"},
		"max_posts_per_day":  {MaxPostsPerDay: 101},
		"monthly_budget_usd": {MonthlyBudgetUSD: &zero},
		"post_status":        {PostStatus: "scheduled"},
		"campaign_ids":       {CampaignIDs: []int64{0}},
		"variables.intent":   {Variables: map[string]string{"intent": "x"}},
		"variables":          {Variables: map[string]string{"1st": "x"}},
	} {
		if _, err := normalize(in); store.KindOf(err) != store.KindInvalid || !containsField(err, name) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func containsField(err error, field string) bool {
	return err != nil && len(store.Message(err)) >= len(field) && store.Message(err)[:len(field)] == field
}
