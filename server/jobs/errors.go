package jobs

import (
	"errors"
	"fmt"
)

// Retryable is implemented by errors that know whether the work is worth
// trying again (a timeout, a 429 or 5xx from a remote service: yes; bad
// input: no).
type Retryable interface {
	Retryable() bool
}

// ErrRetry marks a handler error as temporary: a handler returns an error
// that wraps it, e.g. fmt.Errorf("fetch feed: %w", jobs.ErrRetry), and the
// job is tried again after a backoff while it has attempts left.
var ErrRetry error = retrySentinel{}

type retrySentinel struct{}

func (retrySentinel) Error() string   { return "temporary failure" }
func (retrySentinel) Retryable() bool { return true }

// ErrCancelled is the cause (context.Cause) of a handler's context when its
// job was cancelled, as opposed to the runner shutting down.
var ErrCancelled = errors.New("jobs: job cancelled")

// ErrLeaseLost is the cause of a handler's context ending when its job's
// lease could not be renewed: another instance took the job over.
var ErrLeaseLost = errors.New("jobs: the job's lease was lost to another instance")

// marked is an error with a verdict on retrying; its text is the wrapped
// error's own.
type marked struct {
	err   error
	retry bool
}

func (m *marked) Error() string   { return m.err.Error() }
func (m *marked) Unwrap() error   { return m.err }
func (m *marked) Retryable() bool { return m.retry }

// Permanent marks err as not worth retrying, whatever it wraps: the job
// fails at once. Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &marked{err: err, retry: false}
}

// Retry marks err as temporary, like wrapping ErrRetry, but keeps its text.
// Retry(nil) is nil.
func Retry(err error) error {
	if err == nil {
		return nil
	}
	return &marked{err: err, retry: true}
}

// IsRetryable reports whether a handler's error asks for another attempt.
// The outermost error in the chain that has a verdict (Permanent, Retry,
// ErrRetry, or any Retryable) decides; an error without one is not retried,
// because most work here (publishing a post, charging a provider) is not
// safe to repeat unless its handler says so.
func IsRetryable(err error) bool {
	var r Retryable
	return errors.As(err, &r) && r.Retryable()
}

// panicError is a handler's panic: a bug, so never retried.
type panicError struct {
	value any
	stack []byte
}

func (p *panicError) Error() string   { return fmt.Sprintf("panic: %v", p.value) }
func (p *panicError) Retryable() bool { return false }
