package jobs

import (
	"context"
	"log/slog"

	"github.com/copydesk/copydesk/store"
)

// Owned describes a kind of record whose work is one job of the runner,
// such as a scout run or a strategy build, for the rules its service
// shares with the others of the kind: who sees one (Get, List), how one
// is queued (Queue), taken up by its job (Begin), cancelled (Cancel) and
// ended when its job ended without ending it (JobEnded), and when one may
// be deleted (Delete). A service makes its Owned in New, from its store
// and runner.
type Owned[T any] struct {
	Noun      string // how a refusal names one: "scout run", "strategy"
	Short     string // what only a queued or running one may be: "run", "strategy"
	CancelAt  string // the route that cancels one, with %d for its id
	Failed    string // the status of a failed one
	Cancelled string // the status of a cancelled one
	// Info tells a record's id, environment, status, whether that status
	// is final, and its job (nil: none).
	Info func(r *T) (id, envID int64, status string, done bool, job *int64)

	// Kind is the job kind; Limit, above 0, how many an environment may
	// have queued or running (store.RunJob). Jobs runs them; Log is told
	// what could not be done once the record was.
	Kind  string
	Limit int
	Jobs  Queue
	Log   *slog.Logger

	// What the rules need of the store: a record by id; the records a
	// scope sees; a queued record marked running (false: it was not
	// queued); the ending recorded (status and why), unless one is
	// recorded already, returning the record as stored; a record deleted.
	ByID   func(ctx context.Context, id int64) (*T, error)
	Find   func(ctx context.Context, sc store.Scope, q OwnedQuery) ([]*T, int, error)
	Start  func(ctx context.Context, id int64) (bool, error)
	End    func(ctx context.Context, id int64, status, why string) (*T, error)
	Remove func(ctx context.Context, id int64) error
}

// OwnedQuery narrows a list of records of a kind.
type OwnedQuery struct {
	EnvironmentID *int64
	Status        string
	Sort          store.Sort
	Page          store.Page
}

// Get returns the record id when the scope sees its environment; any
// other is not found, as one that does not exist.
func (o Owned[T]) Get(ctx context.Context, sc store.Scope, id int64) (*T, error) {
	return store.Seen(ctx, id, o.ByID, func(r *T) bool {
		_, envID, _, _, _ := o.Info(r)
		return sc.Sees(envID)
	}, o.Noun)
}

// GetWith is Get with the record's parts (parts: the store's read of
// them by the record's id), such as a scout run's candidates.
func GetWith[T, P any](ctx context.Context, o Owned[T], sc store.Scope, id int64,
	parts func(ctx context.Context, id int64) ([]*P, error)) (*T, []*P, error) {
	r, err := o.Get(ctx, sc, id)
	if err != nil {
		return nil, nil, err
	}
	ps, err := parts(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	return r, ps, nil
}

// List lists the records the scope sees; an environment it does not see
// is not found.
func (o Owned[T]) List(ctx context.Context, sc store.Scope, q OwnedQuery) ([]*T, int, error) {
	if err := sc.RequireFilter(q.EnvironmentID); err != nil {
		return nil, 0, err
	}
	return o.Find(ctx, sc, q)
}

// Queue makes a record with its job (create: the store's insert of both,
// in one transaction) and signals the runner. The job is tried once: the
// work asks paid services, and doing it again is the user's call.
func (o Owned[T]) Queue(create func(j store.RunJob) (*T, error), payload func(id int64) any) (*T, error) {
	r, err := create(store.RunJob{Kind: o.Kind, MaxAttempts: 1, Limit: o.Limit, Payload: payload})
	if err != nil {
		return nil, err
	}
	o.Jobs.Signal()
	return r, nil
}

// Begin is how the job of record id takes it up: it returns the record,
// marked running, or false when there is nothing to do: the record was
// deleted meanwhile, or is finished (cancelled while queued) or running
// already.
func (o Owned[T]) Begin(ctx context.Context, id int64) (*T, bool, error) {
	r, err := o.ByID(ctx, id)
	if store.IsNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if _, _, _, done, _ := o.Info(r); done {
		return nil, false, nil
	}
	if ok, err := o.Start(ctx, id); err != nil || !ok {
		return nil, false, err
	}
	return r, true, nil
}

// Cancel cancels record id, which the scope must see, saying who did
// (by): a finished one is a conflict. The ending is recorded first (End
// keeps the first ending, so a record that finished meanwhile is a
// conflict too), then its job is cancelled (Stop): a queued job ends at
// once, a running one has its context cancelled and finds the ending
// recorded. A job that cannot be stopped now is logged: it finds its
// record finished when it starts or ends, and leaves it. It returns the
// record as it ended.
func (o Owned[T]) Cancel(ctx context.Context, sc store.Scope, id int64, by string) (*T, error) {
	r, err := o.Get(ctx, sc, id)
	if err != nil {
		return nil, err
	}
	_, _, status, done, job := o.Info(r)
	if done {
		return nil, o.notRunning(id, status)
	}
	ended, err := o.End(ctx, id, o.Cancelled, "cancelled by "+by)
	if err != nil {
		return nil, err
	}
	if _, _, status, _, _ := o.Info(ended); status != o.Cancelled {
		return nil, o.notRunning(id, status)
	}
	if err := Stop(ctx, o.Jobs, job); err != nil {
		o.Log.Error(o.Noun+" cancelled, but its job could not be stopped", "id", id, "err", err)
	}
	return ended, nil
}

// Delete deletes record id, which the scope must see, when it is
// finished; a queued or running one is a conflict: it is cancelled first,
// or its job would go on working for a record that is gone.
func (o Owned[T]) Delete(ctx context.Context, sc store.Scope, id int64) error {
	r, err := o.Get(ctx, sc, id)
	if err != nil {
		return err
	}
	if _, _, status, done, _ := o.Info(r); !done {
		return store.Conflict("%s %d is %s: cancel it first (POST "+o.CancelAt+")", o.Noun, id, status, id)
	}
	return o.Remove(ctx, id)
}

// JobEnded ends record id of a job that ended without ending it (the
// kind's OnFinish, called once per job whatever ended it): cancelled when
// the job was, else failed with the job's last error. A record that ended
// itself keeps its ending. It returns the record as it ended, or false
// when there is none to tell of: deleted (with its environment, perhaps)
// or not written, which is logged.
func (o Owned[T]) JobEnded(ctx context.Context, job *store.Job, id int64) (*T, bool) {
	status, why := Ending(job, o.Failed, o.Cancelled)
	r, err := o.End(context.WithoutCancel(ctx), id, status, why)
	if err != nil {
		if !store.IsNotFound(err) {
			o.Log.Error("finish "+o.Noun, "id", id, "job", job.ID, "err", err)
		}
		return nil, false
	}
	return r, true
}

// Ending is how a record whose job ended without ending it ends: with
// status cancelled ("cancelled") when the job was cancelled, else with
// status failed and the job's last error.
func Ending(job *store.Job, failed, cancelled string) (status, why string) {
	if job.Status == store.JobCancelled {
		return cancelled, "cancelled"
	}
	return failed, job.LastError
}

func (o Owned[T]) notRunning(id int64, status string) error {
	return store.Conflict("%s %d already %s: only a queued or running %s can be cancelled", o.Noun, id, status, o.Short)
}
