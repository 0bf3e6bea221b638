package autopilot

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/copydesk/copydesk/server/notify"
	"github.com/copydesk/copydesk/store"
)

// The scheduler: the recurring job ScheduleJob, planned by Next for the
// earliest moment any autopilot needs it (a run due, a pause that ends).

// idleRecheck is how long the scheduler leaves an autopilot that had
// nothing to write before it looks again: new keywords and campaigns are
// noticed that soon (or at once with run-now, or a new config).
const idleRecheck = 30 * time.Minute

// orphanSettle is how long after its job ended a run may still be open
// (its job's end hook closes it) before the scheduler closes it.
const orphanSettle = time.Minute

// Next is the scheduler's Schedule: the earliest moment an autopilot
// needs it, the resume time of a pause that ends by itself or the due
// time of a running autopilot's next run (one with a run under way needs
// nothing until it ends, which plans again). Nothing running: off.
func (s *Service) Next(ctx context.Context, now time.Time) (time.Time, bool, error) {
	aps, err := s.db.ScheduledAutopilots(ctx)
	if err != nil {
		return time.Time{}, false, err
	}
	var next time.Time
	found := false
	for _, ap := range aps {
		t, ok, err := s.nextFor(ctx, ap, now)
		if err != nil {
			return time.Time{}, false, err
		}
		if ok && (!found || t.Before(next)) {
			next, found = t, true
		}
	}
	return next, found, nil
}

// nextFor is when one autopilot needs the scheduler; false: not until
// something changes.
func (s *Service) nextFor(ctx context.Context, ap *store.Autopilot, now time.Time) (time.Time, bool, error) {
	if ap.State == store.AutopilotPaused {
		if ap.ResumeAt == nil {
			return time.Time{}, false, nil
		}
		return *ap.ResumeAt, true, nil
	}
	sch, active, err := s.scheduleOf(ctx, ap, now)
	if err != nil || active {
		return time.Time{}, false, err
	}
	return sch.due(), true, nil
}

// scheduleOf is a running autopilot's schedule now; active says a run is
// under way (and nothing is due until it ends).
func (s *Service) scheduleOf(ctx context.Context, ap *store.Autopilot, now time.Time) (schedule, bool, error) {
	env, err := s.db.EnvironmentByID(ctx, ap.EnvironmentID)
	if err != nil {
		return schedule{}, false, err
	}
	run, err := s.db.ActiveAutopilotRun(ctx, ap.EnvironmentID)
	if err != nil || run != nil {
		return schedule{}, run != nil, err
	}
	loc := zone(env)
	today, last, err := s.db.AutopilotRunsSince(ctx, env.ID, dayStart(now, loc, 0))
	if err != nil {
		return schedule{}, false, err
	}
	return schedule{now: now, win: windowOf(ap.Config, loc), max: ap.Config.MaxPostsPerDay, today: today, last: last, idle: ap.IdleUntil}, false, nil
}

// tick is the scheduler's job: it closes runs whose job is gone, resumes
// the pauses whose time has come, and starts the runs that are due. One
// autopilot's trouble is logged and noted on it, never another's.
func (s *Service) tick(ctx context.Context, _ *store.Job) error {
	now := s.now()
	orphans, err := s.db.OrphanAutopilotRuns(ctx, "its job is gone (the server stopped for good, or the database was restored)", now.Add(-orphanSettle))
	if err != nil {
		return err
	}
	for _, run := range orphans {
		s.emit(ctx, run.EnvironmentID, EventRun, run)
		s.notify.Environment(ctx, run.EnvironmentID, notify.Note{Kind: NoteFailed, Title: fmt.Sprintf("AutoPilot failed to write %q", run.Keyword),
			Body: run.Error, Link: runLink(run)})
	}
	aps, err := s.db.ScheduledAutopilots(ctx)
	if err != nil {
		return err
	}
	for _, ap := range aps {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err := s.tickOne(ctx, ap, now); err != nil && ctx.Err() == nil {
			s.log.Error("autopilot: schedule", "environment", ap.EnvironmentID, "err", err)
			// Look again later rather than at once: the plan must move on.
			if ierr := s.db.SetAutopilotIdle(ctx, ap.EnvironmentID, now.Add(idleRecheck), "the scheduler failed: "+store.Message(err)); ierr != nil {
				s.log.Error("autopilot: note the scheduler's failure", "environment", ap.EnvironmentID, "err", ierr)
			}
		}
	}
	return nil
}

// tickOne does what one autopilot needs now.
func (s *Service) tickOne(ctx context.Context, ap *store.Autopilot, now time.Time) error {
	env, err := s.db.EnvironmentByID(ctx, ap.EnvironmentID)
	if store.IsNotFound(err) {
		return nil // deleted meanwhile: its autopilot went with it
	}
	if err != nil {
		return err
	}
	if ap.State == store.AutopilotPaused {
		if ap.ResumeAt != nil && !now.Before(*ap.ResumeAt) {
			return s.resumeSelf(ctx, env, ap)
		}
		return nil
	}
	sch, active, err := s.scheduleOf(ctx, ap, now)
	if err != nil || active || sch.due().After(now) {
		return err
	}
	if reason, detail, resume, err := s.budgetStop(ctx, env, ap.Config); err != nil {
		return err
	} else if reason != "" {
		s.pauseSelf(ctx, env, reason, detail, resume, ap.Config.AutoResume)
		return nil
	}
	cands, note, err := s.candidates(ctx, env, ap, true)
	if err != nil {
		return err
	}
	if len(cands) == 0 {
		return s.db.SetAutopilotIdle(ctx, env.ID, now.Add(idleRecheck), note)
	}
	run, err := s.db.CreateAutopilotRun(ctx, store.NewAutopilotRun{EnvironmentID: env.ID, Trigger: "schedule", Candidates: cands,
		PickStarted: now, Job: runJob()})
	switch {
	case errors.Is(err, store.ErrNoKeyword):
		return s.db.SetAutopilotIdle(ctx, env.ID, now.Add(idleRecheck), store.Message(err))
	case store.KindOf(err) == store.KindConflict:
		return nil // a run-now came first
	case err != nil:
		return err
	}
	s.jobs.Signal()
	s.emit(ctx, env.ID, EventRun, run)
	return nil
}

// resumeSelf ends a pause whose time has come: the autopilot runs again,
// its paused run goes on, and the environment is told. A budget that is
// still reached (a monthly one on a new day) keeps it paused, until its
// own end.
func (s *Service) resumeSelf(ctx context.Context, env *store.Environment, ap *store.Autopilot) error {
	was := reasonWords(ap)
	if reason, detail, resume, err := s.budgetStop(ctx, env, ap.Config); err != nil {
		return err
	} else if reason != "" {
		ch := store.AutopilotState{From: []string{store.AutopilotPaused}, State: store.AutopilotPaused, PauseReason: reason, PauseDetail: detail,
			ResumeAt: &resume}
		_, _, err := s.db.SetAutopilotState(ctx, env.ID, ch)
		return err
	}
	ap, changed, err := s.db.SetAutopilotState(ctx, env.ID, store.AutopilotState{From: []string{store.AutopilotPaused},
		State: store.AutopilotRunning, ResetFailures: true})
	if err != nil || !changed {
		return err
	}
	s.emit(ctx, env.ID, EventStatus, ap)
	if err := s.resumeRun(ctx, env.ID); err != nil {
		return err
	}
	s.notify.Environment(ctx, env.ID, notify.Note{Kind: NoteResumed, Title: fmt.Sprintf("AutoPilot of %s resumed", env.Name),
		Body: "It had paused itself: " + was + ".", Link: statusLink(env.ID)})
	return nil
}
