package autopilot

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/copydesk/copydesk/store"
)

// Days, months and the schedule window, in an environment's time zone.
// Everything here is a pure function of the time it is given, so the
// tests set the clock.

// zone is an environment's time zone; UTC when it has none (the
// environment service never stores one that does not load).
func zone(env *store.Environment) *time.Location {
	if loc, err := time.LoadLocation(env.Configuration.Timezone); err == nil && env.Configuration.Timezone != "" {
		return loc
	}
	return time.UTC
}

// dayStart is the midnight that starts t's day in loc; dayStart(t, loc)
// shifted by days is the start of another day (a day of 23 or 25 hours
// when the clocks change is still one day).
func dayStart(t time.Time, loc *time.Location, days int) time.Time {
	y, m, d := t.In(loc).Date()
	return time.Date(y, m, d+days, 0, 0, 0, 0, loc)
}

// monthStart is the midnight that starts t's month in loc, shifted by
// months.
func monthStart(t time.Time, loc *time.Location, months int) time.Time {
	y, m, _ := t.In(loc).Date()
	return time.Date(y, m+time.Month(months), 1, 0, 0, 0, 0, loc)
}

// window is the part of each day in which runs start: [start, end)
// minutes after midnight in loc; an end before the start spans midnight
// (22:00 to 06:00).
type window struct {
	start, end int
	loc        *time.Location
}

func windowOf(c store.AutopilotConfig, loc *time.Location) window {
	return window{start: c.WindowStart, end: c.WindowEnd, loc: loc}
}

// minutes is how long the window is open each day.
func (w window) minutes() int {
	if w.end > w.start {
		return w.end - w.start
	}
	return 1440 - w.start + w.end
}

// open is the earliest moment at or after t at which the window is open.
func (w window) open(t time.Time) time.Time {
	for days := -1; days <= 1; days++ { // yesterday's span may reach into today
		day := dayStart(t, w.loc, days)
		end := w.end
		if end <= w.start {
			end += 1440
		}
		// Minutes on the day's wall clock, so that a change of the clocks
		// does not move the window.
		from := time.Date(day.Year(), day.Month(), day.Day(), 0, w.start, 0, 0, w.loc)
		to := time.Date(day.Year(), day.Month(), day.Day(), 0, end, 0, 0, w.loc)
		if t.Before(to) {
			if t.Before(from) {
				return from
			}
			return t
		}
	}
	return t // not reached: tomorrow's span always ends after t
}

// schedule is what decides when an environment's next run is due.
type schedule struct {
	now   time.Time
	win   window
	max   int        // posts a day
	today int        // runs of today that count toward them
	last  *time.Time // when the latest run was made
	idle  *time.Time // the scheduler looks again no sooner
}

// interval spreads a day's posts evenly over the window: 4 posts in a
// window of 8 hours are 2 hours apart.
func (s schedule) interval() time.Duration {
	return time.Duration(s.win.minutes()) * time.Minute / time.Duration(max(1, s.max))
}

// due is when the next run is due: at once (now) or later, never before
// now. It is the first moment in the window that is an interval after the
// latest run, after the scheduler's idle time, and on the next day when
// today's posts are all made.
func (s schedule) due() time.Time {
	t := s.now
	if s.last != nil {
		if next := s.last.Add(s.interval()); next.After(t) {
			t = next
		}
	}
	if s.idle != nil && s.idle.After(t) {
		t = *s.idle
	}
	if s.today >= s.max {
		if tomorrow := dayStart(s.now, s.win.loc, 1); tomorrow.After(t) {
			t = tomorrow
		}
	}
	return s.win.open(t)
}

// ParseClock reads a time of day "HH:MM" (00:00 to 24:00) as minutes
// after midnight.
func ParseClock(field, v string) (int, error) {
	h, m, ok := strings.Cut(v, ":")
	hh, err1 := strconv.Atoi(h)
	mm, err2 := strconv.Atoi(m)
	if !ok || len(h) != 2 || len(m) != 2 || err1 != nil || err2 != nil || hh < 0 || mm < 0 || mm > 59 || hh > 24 || (hh == 24 && mm != 0) {
		return 0, store.Invalid("%s: must be a time of day HH:MM from 00:00 to 24:00, like 09:30", field)
	}
	return hh*60 + mm, nil
}

// FormatClock writes minutes after midnight as "HH:MM".
func FormatClock(m int) string { return fmt.Sprintf("%02d:%02d", m/60, m%60) }
