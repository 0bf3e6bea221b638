package searchphrase

import (
	"context"
	"fmt"
	"time"

	"github.com/copydesk/copydesk/server/notify"
	"github.com/copydesk/copydesk/store"
)

// ScheduleJob is the recurring job kind that queues the runs of the
// watched phrases that are due. Its schedule is the earliest next_run_at
// of the active phrases, or none while batch runs are queued or running.
const ScheduleJob = "search.schedule"

// batch is how many runs may be queued or running at once for the
// scheduler to queue more (on-demand runs count too): each run asks
// SerpApi twice and a model, and a backlog of due phrases queued all at
// once would make a run a user asks for wait behind it. The end of each
// run plans the scheduler again, which queues the next due phrases.
const batch = 5

// next is ScheduleJob's schedule: when the earliest active phrase is
// due, or none while the runs in flight fill the batch (the end of one
// replans).
func (s *Service) next(ctx context.Context, _ time.Time) (time.Time, bool, error) {
	at, inFlight, err := s.db.NextSearchPhraseRun(ctx)
	if err != nil || at == nil || inFlight >= batch {
		return time.Time{}, false, err
	}
	return *at, true, nil
}

// queueDue is ScheduleJob's handler: it queues the runs of the due
// phrases, the longest due first, up to the batch, through the same job
// kind and code as an on-demand run (RunJob). A phrase whose run is
// queued or running already is not due, so it never runs twice at once.
func (s *Service) queueDue(ctx context.Context, _ *store.Job) error {
	ids, err := s.db.QueueDueSearchPhraseRuns(ctx, s.now(), batch, store.PhraseRunJob{Kind: RunJob, MaxAttempts: 1,
		Payload: func(id int64, previous string) any { return payload{PhraseID: id, Scheduled: true, Previous: previous} }})
	if len(ids) > 0 {
		s.jobs.Signal()
		s.log.Info("search phrases: scheduled runs queued", "phrases", ids)
	}
	return err
}

// tell notifies the creator of a phrase how its scheduled run ended, when
// it is news: new ideas (run.succeeded), or a failure (run.failed) after
// a run that did not fail (previous: the status the run before ended
// with). A run that found nothing new, was cancelled, or failed once more
// says nothing: a watched phrase runs every interval (every 5 minutes at
// the least), and its notifications should be worth reading; one note per
// streak of failures, as a web source's, and the phrase's last_run_error
// says the rest. after is the phrase as the run's end wrote it (nil: the
// run did not end it), never as read later, when a run queued meanwhile
// would hide this one's end; the note is tagged with its environment, so
// it reaches the creator only while they see it.
func (s *Service) tell(ctx context.Context, after *store.SearchPhrase, added int, previous string) {
	if s.notify == nil || after == nil || after.CreatedBy == nil {
		return
	}
	note := notify.Note{EnvironmentID: &after.EnvironmentID}
	switch {
	case after.RunStatus == store.PhraseFailed && previous != store.PhraseFailed:
		note.Kind, note.Title = notify.RunFailed, fmt.Sprintf("Scheduled search for %q failed", after.Phrase)
		note.Body = notify.Preview(after.LastRunError, 200)
		note.Link = fmt.Sprintf("/api/search-phrases/%d", after.ID)
	case after.RunStatus == store.PhraseSucceeded && added > 0:
		note.Kind, note.Title = notify.RunSucceeded, fmt.Sprintf("Scheduled search for %q found %s", after.Phrase, ideasCount(added))
		note.Body = notify.Preview(after.LastRunError, 200) // a source that failed, if one did
		note.Link = fmt.Sprintf("/api/search-phrases/%d/ideas", after.ID)
	default:
		return
	}
	s.notify.User(ctx, *after.CreatedBy, note)
}

func ideasCount(n int) string {
	if n == 1 {
		return "1 new idea"
	}
	return fmt.Sprintf("%d new ideas", n)
}
