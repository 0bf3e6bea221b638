package backup

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/copydesk/copydesk/store"
)

// Schedule says when scheduled snapshots are taken and how many are kept.
type Schedule struct {
	Enabled bool `json:"enabled"`
	// Spec is a cron expression (minute hour day-of-month month
	// day-of-week, in UTC) or a descriptor: @daily, @hourly, @every 6h.
	Spec string `json:"spec"`
	// Retention is how many scheduled snapshots are kept; older ones are
	// deleted after each scheduled run. Other kinds are never pruned.
	Retention int `json:"retention"`
	// Since is when the schedule was last set; runs are counted from it.
	Since time.Time `json:"since"`
}

// ScheduleState is what the last scheduled run did.
type ScheduleState struct {
	LastRunAt  *time.Time `json:"last_run_at"`
	LastBackup string     `json:"last_backup"`
	LastError  string     `json:"last_error"`
}

// DefaultSchedule: off, daily at 03:00 UTC when turned on, keep 7.
var DefaultSchedule = Schedule{Enabled: false, Spec: "0 3 * * *", Retention: 7}

const (
	scheduleKey      = "backup.schedule"
	scheduleStateKey = "backup.schedule_state"
	// MinInterval is the shortest time allowed between scheduled runs.
	MinInterval = 5 * time.Minute
)

// ParseSpec checks a schedule expression and returns its parsed form.
func ParseSpec(spec string) (cron.Schedule, error) {
	spec = strings.TrimSpace(spec)
	sched, err := cron.ParseStandard(spec)
	if err != nil {
		return nil, store.Invalid("spec: %s (use a cron expression like \"0 3 * * *\" or @daily, @every 6h)", err.Error())
	}
	// Two consecutive runs tell the interval; refuse anything tighter than
	// MinInterval so a typo cannot fill the disk.
	t0 := sched.Next(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	if t0.IsZero() {
		return nil, store.Invalid("spec: never runs (no such date)")
	}
	if t1 := sched.Next(t0); !t1.IsZero() && t1.Sub(t0) < MinInterval {
		return nil, store.Invalid("spec: runs every %s; the shortest interval allowed is %s", t1.Sub(t0), MinInterval)
	}
	return sched, nil
}

// Schedule returns the schedule, its state and the next run (nil when off).
func (m *Manager) Schedule(ctx context.Context) (Schedule, ScheduleState, *time.Time, error) {
	s := DefaultSchedule
	var st ScheduleState
	if _, err := m.db.Setting(ctx, scheduleKey, &s); err != nil {
		return s, st, nil, err
	}
	if _, err := m.db.Setting(ctx, scheduleStateKey, &st); err != nil {
		return s, st, nil, err
	}
	return s, st, nextRun(s, st), nil
}

func nextRun(s Schedule, st ScheduleState) *time.Time {
	if !s.Enabled {
		return nil
	}
	sched, err := ParseSpec(s.Spec)
	if err != nil {
		return nil
	}
	from := s.Since
	if st.LastRunAt != nil && st.LastRunAt.After(from) {
		from = *st.LastRunAt
	}
	next := sched.Next(from.UTC())
	return &next
}

// SetSchedule checks and stores a schedule; runs are counted from now.
// Then OnScheduleChange, when set, plans the next run by it.
func (m *Manager) SetSchedule(ctx context.Context, s Schedule) (Schedule, error) {
	s.Spec = strings.TrimSpace(s.Spec)
	if _, err := ParseSpec(s.Spec); err != nil {
		return s, err
	}
	if s.Retention < 1 || s.Retention > 1000 {
		return s, store.Invalid("retention: must be between 1 and 1000")
	}
	s.Since = m.now().Truncate(time.Second)
	if err := m.db.SetSetting(ctx, scheduleKey, s); err != nil {
		return s, err
	}
	if m.OnScheduleChange != nil {
		if err := m.OnScheduleChange(ctx); err != nil {
			return s, fmt.Errorf("backup: the schedule is saved but its next run could not be planned: %w", err)
		}
	}
	return s, nil
}

// Next is when the next scheduled snapshot is due, on the schedule as
// stored: ok is false when scheduled backups are off. A run missed while
// the server was down is due at once. It is the Schedule of the job that
// takes scheduled snapshots (see jobs.Schedule); now is not needed, since
// runs are counted from the last one.
func (m *Manager) Next(ctx context.Context, _ time.Time) (time.Time, bool, error) {
	_, _, next, err := m.Schedule(ctx)
	if err != nil || next == nil {
		return time.Time{}, false, err
	}
	return *next, true, nil
}

// RunDue takes a scheduled snapshot if one is due at now, then prunes old
// scheduled snapshots. It reports whether it ran. A failure is recorded in
// the schedule state (shown by GET /api/backup/schedule), reported to
// OnScheduledRun and returned; a run stopped because ctx ended (a shutdown,
// a restore) is not a failure and is returned untold, to be run again. The
// caller holds the database (store.DB.Hold).
func (m *Manager) RunDue(ctx context.Context) (bool, error) {
	s, st, next, err := m.Schedule(ctx)
	if err != nil || next == nil || m.now().Before(*next) {
		return false, err
	}
	now := m.now()
	st.LastRunAt = &now
	meta, runErr := m.Create(ctx, KindScheduled)
	if runErr != nil && ctx.Err() != nil {
		return true, runErr
	}
	if runErr == nil {
		st.LastBackup, st.LastError = meta.Name, ""
		if _, err := m.Prune(KindScheduled, s.Retention); err != nil {
			runErr = fmt.Errorf("pruning old scheduled backups: %w", err)
		}
	}
	if runErr != nil {
		st.LastError = runErr.Error()
	}
	if err := m.db.SetSetting(ctx, scheduleStateKey, st); err != nil && runErr == nil {
		runErr = err
	}
	if m.OnScheduledRun != nil {
		m.OnScheduledRun(ctx, meta, runErr)
	}
	return true, runErr
}
