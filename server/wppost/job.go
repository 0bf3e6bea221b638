package wppost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/copydesk/copydesk/server/jobs"
	"github.com/copydesk/copydesk/server/notify"
	"github.com/copydesk/copydesk/server/publish/wordpress"
	"github.com/copydesk/copydesk/store"
)

// PublishJob is the job kind that publishes a post on the job runner, as
// POST …/{id}/publish does in the request: the same code path (Publish),
// so a create that got no answer is looked up by slug before it is sent
// again, by the runner's retry as by a run after a restart, and no re-run
// makes a duplicate. Its payload is a PublishPayload.
const PublishJob = "wordpress.publish"

// PublishPayload is the payload of a PublishJob. Status and ScheduledAt,
// when set, are applied to the post before it is sent (as the body of
// POST …/{id}/publish is); QueuePublish applies them in the request and
// leaves them out, so that an edit made meanwhile is what gets sent.
// RequestedBy is the user who queued it, told how it ended (publishEnded);
// none (a job queued before it was recorded) tells nobody.
type PublishPayload struct {
	PostID      int64      `json:"post_id"`
	Status      string     `json:"status,omitempty"`
	ScheduledAt *time.Time `json:"scheduled_at,omitempty"`
	RequestedBy int64      `json:"requested_by,omitempty"`
}

// registerJobs registers PublishJob: background work (nobody waits on a
// connection for it), one at a time, so that two queued publishes of one
// post never send two creates side by side.
func (s *Service) registerJobs() {
	s.jobs.Register(PublishJob, jobs.Kind{Handle: s.runPublish, OnFinish: s.publishEnded, Background: true, Limit: 1})
}

// QueuePublish checks a publish as Publish does (the post, the status and
// schedule, which it applies now, and that the environment publishes to
// WordPress) and queues a PublishJob for it instead of sending it; the
// post's sync state is left as it is until the job runs. The scope's user
// is told how it ends.
func (s *Service) QueuePublish(ctx context.Context, sc store.Scope, id int64, in PublishInput) (*store.WordPressPost, *store.Job, error) {
	if s.jobs == nil {
		return nil, nil, errors.New("wppost: no job runner to queue a publish on")
	}
	p, err := s.Get(ctx, sc, id)
	if err != nil {
		return nil, nil, err
	}
	if _, err := s.site(ctx, sc, p.EnvironmentID); err != nil {
		return nil, nil, err
	}
	if p, err = s.applyPublishInput(ctx, sc, p, in); err != nil {
		return nil, nil, err
	}
	job, err := s.jobs.Enqueue(ctx, PublishJob, PublishPayload{PostID: p.ID, RequestedBy: sc.UserID}, jobs.EnqueueOptions{})
	if err != nil {
		return nil, nil, err
	}
	return p, job, nil
}

// runPublish carries out a PublishJob. A failure is recorded on the post
// by Publish (sync_status failed, last_error); the runner retries those
// worth it (jobRetryable) with its backoff, and fails the job on others.
func (s *Service) runPublish(ctx context.Context, job *store.Job) error {
	var p PublishPayload
	if err := json.Unmarshal(job.Payload, &p); err != nil || p.PostID <= 0 {
		return jobs.Permanent(fmt.Errorf("wordpress publish job %d: bad payload %s", job.ID, job.Payload))
	}
	_, err := s.publish(ctx, store.Everything, p.PostID, PublishInput{Status: p.Status, ScheduledAt: p.ScheduledAt}, false)
	if err == nil {
		return nil
	}
	if jobRetryable(err) {
		return jobs.Retry(err)
	}
	return jobs.Permanent(err)
}

// publishEnded tells whoever queued a publish how it ended, once: when the
// job reaches its final status, so an attempt the runner retries says
// nothing. A cancelled job needs no word (someone stopped it on purpose),
// nor does a post deleted meanwhile (the link would lead nowhere). A
// publish answered in the request (Publish) notifies nobody: its caller
// has the answer. The note is tagged with the post's environment, so a
// requester who lost it gets nothing.
func (s *Service) publishEnded(ctx context.Context, job *store.Job) {
	var pl PublishPayload
	if json.Unmarshal(job.Payload, &pl) != nil || job.Status == store.JobCancelled {
		return
	}
	p, err := s.db.WordPressPostByID(ctx, pl.PostID)
	if err != nil {
		return // deleted meanwhile, or unreadable: nothing to point to
	}
	if job.Status == store.JobFailed {
		s.published(ctx, p.EnvironmentID, p.ID, nil, errors.New(job.LastError), true)
	} else {
		s.published(ctx, p.EnvironmentID, p.ID, p, nil, true)
	}
	if s.note == nil || pl.RequestedBy <= 0 {
		return
	}
	note := notify.Note{Kind: notify.PostPublished, Title: p.Title, Link: fmt.Sprintf("/api/wordpress-posts/%d", p.ID),
		EnvironmentID: &p.EnvironmentID, Body: fmt.Sprintf("On WordPress as %s: %s", p.RemoteStatus, p.RemoteLink)}
	if job.Status == store.JobFailed {
		note.Kind, note.Body = notify.PostFailed, "Not published: "+notify.Preview(job.LastError, 200)
	}
	s.note.User(ctx, pl.RequestedBy, note)
}

// Retryable tells whether a failed publish may succeed when tried again
// later, by the rule the runner applies to PublishJob: for other work
// that publishes on the runner (the autopilot's runs).
func Retryable(err error) bool { return jobRetryable(err) }

// jobRetryable tells which failures of a publish the runner tries again:
// those the site may not give next time (429, 5xx), a site it could not
// reach, and a timeout. A timeout is retried here though a request's own
// retries stop at it: the next attempt adopts the post a create with no
// answer made (pendingCreate) rather than sending it again. Anything else
// (a refusal, a post or environment gone, bad content) fails at once.
func jobRetryable(err error) bool {
	var ie imageError
	if errors.As(err, &ie) {
		return false
	}
	switch store.KindOf(err) {
	case store.KindTimeout:
		return true
	case store.KindRemote:
		var we *wordpress.Error
		if errors.As(err, &we) {
			return wordpress.Retryable(we)
		}
		return true // no answer at all: the network
	}
	return false
}
