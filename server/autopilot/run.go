package autopilot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/copydesk/copydesk/server/cie"
	"github.com/copydesk/copydesk/server/engine"
	"github.com/copydesk/copydesk/server/jobs"
	"github.com/copydesk/copydesk/server/notify"
	"github.com/copydesk/copydesk/server/webhook"
	"github.com/copydesk/copydesk/store"
)

// Job kinds of the autopilot.
const (
	// RunJob carries one run through its steps. A failure worth another
	// try (a provider's 429 or 5xx, a site that did not answer) is tried
	// again from the step that failed; after a restart the job runs again
	// from the first unfinished step.
	RunJob = "autopilot.run"
	// ScheduleJob is the recurring kind that starts due runs and resumes
	// pauses that end by themselves; Next plans it.
	ScheduleJob = "autopilot.schedule"
)

// Source is the usage source of the autopilot's generations.
const Source = "autopilot"

type payload struct {
	RunID int64 `json:"run_id"`
}

// runJob is the job of a run, as the store records it with the run.
func runJob() store.RunJob {
	return store.RunJob{Kind: RunJob, Payload: func(id int64) any { return payload{RunID: id} }}
}

func (s *Service) registerJobs() {
	s.jobs.Register(RunJob, jobs.Kind{Handle: s.carryOut, OnFinish: s.jobFinished, Background: true})
	s.jobs.Register(ScheduleJob, jobs.Kind{Handle: s.tick, Next: s.Next})
}

// step is one step after the pick: it does its work and records its own
// success; a failure is returned with the usage it had, for the caller to
// record.
type step func(ctx context.Context, job *store.Job, run *store.AutopilotRun) (store.StepEnd, error)

// errPaused ends a run's job without an outcome: the run waits for its
// autopilot to resume.
var errPaused = errors.New("autopilot: the run is paused")

// carryOut carries a run through its steps from the first one not done.
func (s *Service) carryOut(ctx context.Context, job *store.Job) error {
	var p payload
	if err := json.Unmarshal(job.Payload, &p); err != nil || p.RunID <= 0 {
		return jobs.Permanent(fmt.Errorf("autopilot job %d: bad payload %s", job.ID, job.Payload))
	}
	run, err := s.db.AutopilotRunByID(ctx, p.RunID)
	if err != nil {
		return jobs.Permanent(err)
	}
	if run.Finished() || run.Status == store.RunPaused {
		return nil // stopped or paused while it was queued
	}
	if ok, err := s.db.StartAutopilotRun(ctx, run.ID); err != nil || !ok {
		return err // !ok: stopped just now
	}
	steps := map[string]step{store.StepGenerate: s.generate, store.StepCreatePost: s.createPost, store.StepPublish: s.publishPost}
	for {
		if run, err = s.db.AutopilotRunByID(ctx, run.ID); err != nil || run.Finished() {
			return err
		}
		s.emit(ctx, run.EnvironmentID, EventRun, run)
		next := ""
		for _, name := range store.AutopilotSteps {
			if !run.Step(name).Done() {
				next = name
				break
			}
		}
		if next == "" {
			return s.succeed(ctx, run)
		}
		if err := s.boundary(ctx, run, next); errors.Is(err, errPaused) {
			return nil
		} else if err != nil {
			return err
		}
		do := steps[next]
		if do == nil {
			return jobs.Permanent(fmt.Errorf("autopilot run %d: step %s cannot be done again", run.ID, next))
		}
		if end, err := do(ctx, job, run); err != nil {
			return s.stepFailed(ctx, job, run, next, end, err)
		}
	}
}

// boundary is what happens between two steps: a stop or pause the owner
// asked for, and, before the metered step, the budgets. It returns
// errPaused when the run goes no further now.
func (s *Service) boundary(ctx context.Context, run *store.AutopilotRun, next string) error {
	switch run.Control {
	case store.ControlStop:
		s.cancel(ctx, run, "stopped by its owner")
		return errPaused
	case store.ControlPause:
		return s.pauseRun(ctx, run, "paused by its owner")
	}
	if next != store.StepGenerate {
		return nil
	}
	env, err := s.db.EnvironmentByID(ctx, run.EnvironmentID)
	if err != nil {
		return err
	}
	ap, err := s.db.AutopilotOf(ctx, env.ID)
	if err != nil {
		return err
	}
	reason, detail, resume, err := s.budgetStop(ctx, env, ap.Config)
	if err != nil || reason == "" {
		return err
	}
	if ap.State == store.AutopilotStopped {
		// A run asked for by hand while stopped: nothing to resume.
		s.fail(ctx, run, detail)
		return errPaused
	}
	// The autopilot first, then its run: whoever sees the run paused sees
	// why.
	s.pauseSelf(ctx, env, reason, detail, resume, ap.Config.AutoResume)
	return s.pauseRun(ctx, run, detail)
}

// pauseRun makes a run wait for its autopilot; errPaused when it did.
func (s *Service) pauseRun(ctx context.Context, run *store.AutopilotRun, why string) error {
	if _, err := s.db.PauseAutopilotRun(ctx, run.ID, why); err != nil {
		return err
	}
	s.emitRun(ctx, run.ID)
	return errPaused
}

// ---- the steps ----

// generate writes the run's article: its own generation, made once. A
// generation that succeeded is never made again; one that was cut off or
// failed is taken again (the same row), so the run has one generation.
func (s *Service) generate(ctx context.Context, job *store.Job, run *store.AutopilotRun) (store.StepEnd, error) {
	var n *store.NewCIERun
	if run.CIERunID != nil {
		g, err := s.db.CIERunByID(ctx, *run.CIERunID)
		if err != nil {
			return store.StepEnd{}, err
		}
		if g.Status == store.RunSucceeded {
			return store.StepEnd{}, s.db.FinishAutopilotStep(ctx, run.ID, store.StepGenerate, generated(g))
		}
	} else {
		in, err := s.generationInput(ctx, run)
		if err != nil {
			return store.StepEnd{}, jobs.Permanent(err)
		}
		if n, err = s.gen.Prepare(ctx, in); err != nil {
			return store.StepEnd{}, jobs.Permanent(err)
		}
	}
	genID, err := s.db.BeginAutopilotGeneration(ctx, run.ID, n, job.ID)
	if err != nil {
		return store.StepEnd{}, err
	}
	s.emitRun(ctx, run.ID)
	g, err := s.gen.Execute(ctx, genID, Source)
	if err != nil {
		var end store.StepEnd
		if g != nil {
			end = generated(g)
			err = generationFailed(g, err)
		}
		return end, err
	}
	return store.StepEnd{}, s.db.FinishAutopilotStep(ctx, run.ID, store.StepGenerate, generated(g))
}

// generationFailed is the error of a generation that did not succeed with
// its own words, as its run recorded them ("the model's answer did not
// follow the article format, twice ..."), and its id: the run's error,
// its generate step and the notification said "internal server error".
// The cause stays wrapped, for retryable.
func generationFailed(g *store.CIERun, err error) error {
	why := g.Error
	if why == "" {
		if store.KindOf(err) == store.KindInternal {
			return err
		}
		why = store.Message(err)
	}
	return &store.Error{Kind: store.KindRemote, Message: fmt.Sprintf("generation %d: %s", g.ID, why), Err: err}
}

// generated is the end of a generate step with its generation.
func generated(g *store.CIERun) store.StepEnd {
	e := store.StepEnd{Status: store.StepSucceeded, Detail: fmt.Sprintf("generation %d: %q", g.ID, g.Title),
		InputTokens: g.InputTokens, OutputTokens: g.OutputTokens, Cost: g.Cost}
	if g.Status != store.RunSucceeded {
		e.Detail = fmt.Sprintf("generation %d", g.ID)
	}
	return e
}

// generationInput is what the run's generation is made from: the
// campaign's archetype and agent, the keyword's values and the config's.
func (s *Service) generationInput(ctx context.Context, run *store.AutopilotRun) (cie.SystemInput, error) {
	if run.CampaignID == nil {
		return cie.SystemInput{}, errors.New("the run's campaign was deleted")
	}
	c, err := s.db.CampaignByID(ctx, *run.CampaignID)
	if store.IsNotFound(err) {
		return cie.SystemInput{}, errors.New("the run's campaign was deleted")
	}
	if err != nil {
		return cie.SystemInput{}, err
	}
	if c.ArchetypeID == nil {
		return cie.SystemInput{}, fmt.Errorf("campaign %q has no archetype", c.Name)
	}
	ap, err := s.db.AutopilotOf(ctx, run.EnvironmentID)
	if err != nil {
		return cie.SystemInput{}, err
	}
	values := map[string]string{}
	for k, v := range ap.Config.Variables {
		values[k] = v
	}
	values["keyword"], values["campaign"] = run.Keyword, c.Name
	if run.KeywordID != nil {
		if k, err := s.db.KeywordByID(ctx, *run.KeywordID); err == nil {
			values["cluster"], values["parent_keyword"], values["target_url"] = k.Cluster, k.ParentKeyword, k.TargetURL
			values["intent"] = strings.Join(k.Intent, ", ")
		}
	}
	return cie.SystemInput{ArchetypeID: *c.ArchetypeID, AgentID: c.AgentID, EnvironmentID: run.EnvironmentID, Values: values}, nil
}

// createPost makes the run's post from its generation, as a draft: found
// again when an earlier attempt made it but was cut off before recording
// it (the post records its generation).
func (s *Service) createPost(ctx context.Context, _ *store.Job, run *store.AutopilotRun) (store.StepEnd, error) {
	if run.CIERunID == nil {
		return store.StepEnd{}, jobs.Permanent(errors.New("the run has no generation to make its post from"))
	}
	if err := s.db.BeginAutopilotStep(ctx, run.ID, store.StepCreatePost); err != nil {
		return store.StepEnd{}, err
	}
	s.emitRun(ctx, run.ID)
	ref, err := s.db.PostOfGeneration(ctx, run.Target, *run.CIERunID)
	if err != nil {
		return store.StepEnd{}, err
	}
	var detail string
	if ref != nil {
		detail = fmt.Sprintf("%s post %d, made from generation %d by an earlier attempt", run.Target, ref.ID, *run.CIERunID)
	} else {
		p, err := s.posts.FromGeneration(ctx, store.Everything, 0, *run.CIERunID, run.Target, "")
		if err != nil {
			return store.StepEnd{}, jobs.Permanent(err)
		}
		ref, detail = &store.PostRef{Kind: p.Kind, ID: p.ID}, p.Detail
	}
	_, err = s.db.LinkAutopilotPost(ctx, run.ID, *ref, detail)
	return store.StepEnd{}, err
}

// publishPost publishes the run's post, or leaves it a draft, on its
// target (server/posttarget): a WordPress post is sent to the site with
// its status (publish or draft: a draft waits there for a person), an
// Astro post loses its draft flag or keeps it (the step is then skipped).
// Publishing again after an attempt that was cut off finishes it rather
// than doubling it (a WordPress create that got no answer is adopted).
func (s *Service) publishPost(ctx context.Context, _ *store.Job, run *store.AutopilotRun) (store.StepEnd, error) {
	if run.Post == nil {
		return store.StepEnd{}, jobs.Permanent(errors.New("the run's post was deleted before it was published"))
	}
	t, err := s.posts.Target(run.Post.Kind)
	if err != nil {
		return store.StepEnd{}, jobs.Permanent(err)
	}
	if err := s.db.BeginAutopilotStep(ctx, run.ID, store.StepPublish); err != nil {
		return store.StepEnd{}, err
	}
	s.emitRun(ctx, run.ID)
	p, err := t.Publish(ctx, store.Everything, run.Post.ID, run.PostStatus)
	if err != nil {
		return store.StepEnd{}, err
	}
	end := store.StepEnd{Status: store.StepSucceeded, Detail: p.Detail}
	if p.Skipped {
		end.Status = store.StepSkipped
	}
	return store.StepEnd{}, s.db.FinishAutopilotStep(ctx, run.ID, store.StepPublish, end)
}

// ---- endings ----

// stepFailed records a step's failure and says what becomes of the run:
// nothing when the job was stopped (it runs again from this step), a
// retry when another try may help, otherwise the run fails.
func (s *Service) stepFailed(ctx context.Context, job *store.Job, run *store.AutopilotRun, name string, end store.StepEnd, err error) error {
	if ctx.Err() != nil {
		return ctx.Err() // cancelled, shut down or a restore: the step is still "running", and is done again
	}
	wctx := context.WithoutCancel(ctx)
	end.Status, end.Error = store.StepFailed, store.Message(err)
	if ferr := s.db.FinishAutopilotStep(wctx, run.ID, name, end); ferr != nil {
		return errors.Join(err, ferr)
	}
	if s.retryable(run, name, err) && job.Attempts < job.MaxAttempts {
		s.emitRun(wctx, run.ID)
		return jobs.Retry(err)
	}
	s.fail(wctx, run, fmt.Sprintf("%s: %s", strings.ReplaceAll(name, "_", " "), store.Message(err)))
	return jobs.Permanent(err)
}

// retryable tells the failures of a step another try may mend: the
// provider's that say so (429, 5xx, no answer) for the generation, the
// target's by its own rule for the post. A Permanent mark wins.
func (s *Service) retryable(run *store.AutopilotRun, step string, err error) bool {
	var m interface{ Retryable() bool }
	if errors.As(err, &m) && !m.Retryable() {
		return false
	}
	if step == store.StepGenerate {
		return engine.Retryable(err)
	}
	t, terr := s.posts.Target(run.Target)
	return terr == nil && t.Retryable(err)
}

// succeed ends a run whose steps are all done: its keyword published (or
// in progress, for a draft), a notification, and the daily limit checked.
func (s *Service) succeed(ctx context.Context, run *store.AutopilotRun) error {
	kw := store.KeywordPublished
	if run.PostStatus != "publish" {
		kw = store.KeywordInProgress
	}
	run, changed, err := s.db.FinishAutopilotRun(ctx, run.ID, store.AutopilotRunEnd{Status: store.RunSucceeded, KeywordStatus: kw})
	if err != nil || !changed {
		return err
	}
	s.emit(ctx, run.EnvironmentID, EventRun, run)
	s.runEnded(ctx, run)
	note := notify.Note{Kind: NotePublished, Title: fmt.Sprintf("AutoPilot published a post for %q", run.Keyword), Link: runLink(run)}
	if run.PostStatus != "publish" {
		note.Kind, note.Title = NoteDrafted, fmt.Sprintf("AutoPilot wrote a draft for %q", run.Keyword)
	}
	if st := run.Step(store.StepPublish); st != nil {
		note.Body = st.Detail
	}
	s.notify.Environment(ctx, run.EnvironmentID, note)
	return s.checkDailyLimit(ctx, run.EnvironmentID)
}

// runEnded is the webhook event of a run that succeeded or failed.
func (s *Service) runEnded(ctx context.Context, run *store.AutopilotRun) {
	ids := map[string]any{"campaign_id": run.CampaignID, "keyword_id": run.KeywordID, "generation_id": run.CIERunID,
		"target": run.Target, "post_id": nil}
	if run.Post != nil {
		ids["post_id"] = run.Post.ID
	}
	if e, ok := webhook.RunEnded(webhook.RunAutopilot, run.EnvironmentID, run.ID, run.Status, run.Error, ids); ok {
		s.hooks.Emit(ctx, e)
	}
}

// checkDailyLimit pauses a running autopilot whose posts of the day are
// all made, until the next day when its config says so.
func (s *Service) checkDailyLimit(ctx context.Context, envID int64) error {
	env, err := s.db.EnvironmentByID(ctx, envID)
	if err != nil {
		return err
	}
	ap, err := s.db.AutopilotOf(ctx, envID)
	if err != nil || ap.State != store.AutopilotRunning {
		return err
	}
	now, loc := s.now(), zone(env)
	n, _, err := s.db.AutopilotRunsSince(ctx, envID, dayStart(now, loc, 0))
	if err != nil || n < ap.Config.MaxPostsPerDay {
		return err
	}
	s.pauseSelf(ctx, env, store.PauseDailyLimit, fmt.Sprintf("the daily limit of %d post(s) is reached for %s", ap.Config.MaxPostsPerDay,
		now.In(loc).Format("2 January 2006")), dayStart(now, loc, 1), ap.Config.AutoResume)
	return nil
}

// fail ends a run as failed (its keyword back to what it was when it made
// no post), tells the environment, and pauses the autopilot after
// failuresToPause failures in a row.
func (s *Service) fail(ctx context.Context, run *store.AutopilotRun, why string) {
	run, changed, err := s.db.FinishAutopilotRun(ctx, run.ID, store.AutopilotRunEnd{Status: store.RunFailed, Error: why})
	if err != nil {
		s.log.Error("autopilot: fail a run", "run", run.ID, "err", err)
		return
	}
	if !changed {
		return
	}
	s.emit(ctx, run.EnvironmentID, EventRun, run)
	s.runEnded(ctx, run)
	s.notify.Environment(ctx, run.EnvironmentID, notify.Note{Kind: NoteFailed, Title: fmt.Sprintf("AutoPilot failed to write %q", run.Keyword),
		Body: why, Link: runLink(run)})
	ap, err := s.db.AutopilotOf(ctx, run.EnvironmentID)
	if err != nil || ap.State != store.AutopilotRunning || ap.Failures < failuresToPause {
		return
	}
	env, err := s.db.EnvironmentByID(ctx, run.EnvironmentID)
	if err != nil {
		return
	}
	// No resume by itself: a failing setup needs a person.
	s.pauseSelf(ctx, env, store.PauseFailures, fmt.Sprintf("%d runs failed in a row, the last with: %s", ap.Failures, why), s.now(), false)
}

// cancel ends a run as cancelled; its keyword goes back when it made no
// post.
func (s *Service) cancel(ctx context.Context, run *store.AutopilotRun, why string) {
	run, changed, err := s.db.FinishAutopilotRun(context.WithoutCancel(ctx), run.ID, store.AutopilotRunEnd{Status: store.RunCancelled, Error: why})
	if err != nil {
		s.log.Error("autopilot: cancel a run", "run", run.ID, "err", err)
		return
	}
	if changed {
		s.emit(ctx, run.EnvironmentID, EventRun, run)
	}
}

// pauseSelf pauses a running autopilot for a reason of its own and says
// so; with autoResume it resumes by itself at resume.
func (s *Service) pauseSelf(ctx context.Context, env *store.Environment, reason, detail string, resume time.Time, autoResume bool) {
	ch := store.AutopilotState{From: []string{store.AutopilotRunning}, State: store.AutopilotPaused, PauseReason: reason,
		PauseDetail: detail}
	if autoResume {
		ch.ResumeAt = &resume
	}
	ap, changed, err := s.db.SetAutopilotState(context.WithoutCancel(ctx), env.ID, ch)
	if err != nil {
		s.log.Error("autopilot: pause", "environment", env.ID, "reason", reason, "err", err)
		return
	}
	if !changed {
		return
	}
	s.emit(ctx, env.ID, EventStatus, ap)
	data := map[string]any{"by": "autopilot", "reason": reason, "detail": detail}
	if autoResume {
		data["resume_at"] = resume.UTC().Format(time.RFC3339)
	}
	s.hooks.Emit(ctx, webhook.Event{Type: webhook.AutopilotPaused, EnvironmentID: env.ID, Data: data})
	body := detail + ". Resume it with POST /api/autopilot/resume."
	if autoResume {
		body = fmt.Sprintf("%s. It resumes by itself at %s (%s).", detail, resume.In(zone(env)).Format("2006-01-02 15:04 MST"), zone(env))
	}
	s.notify.Environment(ctx, env.ID, notify.Note{Kind: NotePaused, Title: fmt.Sprintf("AutoPilot of %s paused itself", env.Name), Body: body,
		Link: statusLink(env.ID)})
}

// jobFinished closes the run of a job that ended without closing it (a
// panic, attempts spent by restarts, a cancel), and plans the scheduler's
// next look, which the run's end moves.
func (s *Service) jobFinished(ctx context.Context, job *store.Job) {
	defer s.plan.Now(ctx)
	var p payload
	if err := json.Unmarshal(job.Payload, &p); err != nil {
		s.log.Error("autopilot job with a bad payload", "job", job.ID, "err", err)
		return
	}
	run, err := s.db.AutopilotRunByID(ctx, p.RunID)
	if err != nil {
		s.log.Error("the run of a finished autopilot job", "run", p.RunID, "job", job.ID, "err", err)
		return
	}
	if run.Finished() || run.Status == store.RunPaused || (run.JobID != nil && *run.JobID != job.ID) {
		return
	}
	if job.Status == store.JobCancelled {
		s.cancel(ctx, run, "cancelled")
		return
	}
	why := job.LastError
	if why == "" {
		why = "its job ended without finishing it"
	}
	s.fail(ctx, run, why)
}

func runLink(run *store.AutopilotRun) string { return fmt.Sprintf("/api/autopilot/runs/%d", run.ID) }

func statusLink(envID int64) string {
	return fmt.Sprintf("/api/autopilot/status?environment_id=%d", envID)
}
