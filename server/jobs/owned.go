package jobs

import (
	"context"
	"log/slog"

	"github.com/copydesk/copydesk/store"
)

// Owned describes a kind of record whose work is one job of the runner,
// such as a scout run or a strategy build, for the rules its service
// shares with the others of the kind: how one is cancelled (Cancel) and
// when one may be deleted (Delete).
type Owned[R any] struct {
	Noun      string // how a refusal names one: "scout run", "strategy"
	Short     string // what only a queued or running one may be: "run", "strategy"
	CancelAt  string // the route that cancels one, with %d for its id
	Cancelled string // the status of a cancelled one
	// Info tells a record's id, status, whether that status is final,
	// and its job (nil: none).
	Info func(r R) (id int64, status string, done bool, job *int64)
}

// Cancel cancels r, which the caller found and may change: a finished
// one is a conflict. The ending is recorded first (end: it keeps the
// first ending, so a record that finished meanwhile is a conflict too),
// then r's job is cancelled (Stop): a queued job ends at once, a running
// one has its context cancelled and finds the ending recorded. A job that
// cannot be stopped now is logged: it finds its record finished when it
// starts or ends, and leaves it. It returns r as it ended.
func (o Owned[R]) Cancel(ctx context.Context, c Canceller, log *slog.Logger, r R, end func() (R, error)) (R, error) {
	var zero R
	id, status, done, job := o.Info(r)
	if done {
		return zero, o.notRunning(id, status)
	}
	ended, err := end()
	if err != nil {
		return zero, err
	}
	if _, status, _, _ := o.Info(ended); status != o.Cancelled {
		return zero, o.notRunning(id, status)
	}
	if err := Stop(ctx, c, job); err != nil {
		log.Error(o.Noun+" cancelled, but its job could not be stopped", "id", id, "err", err)
	}
	return ended, nil
}

// Delete deletes r (del) when it is finished; a queued or running one is
// a conflict: it is cancelled first, or its job would go on working for a
// record that is gone.
func (o Owned[R]) Delete(r R, del func(id int64) error) error {
	id, status, done, _ := o.Info(r)
	if !done {
		return store.Conflict("%s %d is %s: cancel it first (POST "+o.CancelAt+")", o.Noun, id, status, id)
	}
	return del(id)
}

func (o Owned[R]) notRunning(id int64, status string) error {
	return store.Conflict("%s %d already %s: only a queued or running %s can be cancelled", o.Noun, id, status, o.Short)
}
