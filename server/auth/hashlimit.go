package auth

import (
	"bufio"
	"context"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/copydesk/copydesk/store"
)

// HashLimit bounds how many password hashes (argon2id: sign-in, the check
// of a current password, registration, a new password) run at once. Each
// holds its memory cost (19 MiB) for its whole run, so without a bound 200
// sign-ins at once for addresses nobody has (which the per-address lock
// does not slow down) take gigabytes and starve every other request. A
// hash beyond the bound waits for a slot a short while, then is refused
// with KindUnavailable, which tells the client when to try again.
type HashLimit struct {
	slots chan struct{}
	wait  time.Duration
}

// HashWait is how long a hash waits for a slot before it is refused: long
// enough to ride out a burst of ordinary sign-ins, short enough that
// waiting requests do not pile up.
const HashWait = 2 * time.Second

// NewHashLimit allows n hashes at once (at least one), each waiting at most
// wait for its turn.
func NewHashLimit(n int, wait time.Duration) *HashLimit {
	return &HashLimit{slots: make(chan struct{}, max(1, n)), wait: wait}
}

// Size is how many hashes may run at once.
func (l *HashLimit) Size() int { return cap(l.slots) }

// Acquire takes a slot, waiting until one is free, the limit's wait has
// passed or ctx ends. The caller must call release once its hash is done.
func (l *HashLimit) Acquire(ctx context.Context) (release func(), err error) {
	release = func() { <-l.slots }
	select {
	case l.slots <- struct{}{}:
		return release, nil
	default:
	}
	timer := time.NewTimer(l.wait)
	defer timer.Stop()
	select {
	case l.slots <- struct{}{}:
		return release, nil
	case <-timer.C:
		return nil, l.busy(nil)
	case <-ctx.Done(): // the client went away; nobody reads the answer
		return nil, l.busy(ctx.Err())
	}
}

// withHashSlot runs fn, which hashes a password, holding a slot of l.
func withHashSlot[T any](ctx context.Context, l *HashLimit, fn func() (T, error)) (T, error) {
	release, err := l.Acquire(ctx)
	if err != nil {
		var zero T
		return zero, err
	}
	defer release()
	return fn()
}

// HashLimit is the service's bound on password hashes at once.
func (s *Service) HashLimit() *HashLimit { return s.cfg.Hashes }

// hash hashes a new password within the service's bound.
func (s *Service) hash(ctx context.Context, password string) (string, error) {
	return withHashSlot(ctx, s.cfg.Hashes, func() (string, error) { return s.cfg.Hasher.Hash(password) })
}

func (l *HashLimit) busy(cause error) error {
	return &store.Error{Kind: store.KindUnavailable, RetryAfter: max(1, int(math.Ceil(l.wait.Seconds()))), Err: cause,
		Message: "the server is busy checking other passwords: try again in a few seconds"}
}

// HashSlots sizes the bound from the machine: one hash per CPU the process
// may use (argon2id with one lane keeps one CPU busy; more at once would
// only queue in the scheduler), and no more than a quarter of memory
// allows. Each slot is counted at twice the memory of one hash
// (perHash), because the garbage collector lets the heap grow to about
// twice what is live before it collects. memory is 0 when unknown; then
// the CPUs alone decide.
func HashSlots(cpus int, memory, perHash int64) int {
	n := max(1, cpus)
	if memory > 0 && perHash > 0 {
		n = min(n, int(memory/4/(2*perHash)))
	}
	return max(1, n)
}

// MachineHashLimit is the default bound for hashes of h: HashSlots of the
// CPUs the Go runtime uses (which follows a cgroup CPU limit) and of
// MemoryLimit.
func MachineHashLimit(h Hasher) *HashLimit {
	return NewHashLimit(HashSlots(runtime.GOMAXPROCS(0), MemoryLimit(), int64(h.MemoryKiB)<<10), HashWait)
}

// MemoryLimit is the memory the process may use, in bytes: the smallest of
// its cgroup's limit (v2 memory.max, or v1 memory.limit_in_bytes), a
// GOMEMLIMIT, and the machine's memory (/proc/meminfo MemTotal). 0 when
// none can be read (not Linux).
func MemoryLimit() int64 {
	var limit int64
	consider := func(n int64) {
		// "No limit" shows up as max, as a huge number, or as math.MaxInt64.
		if n > 0 && n < 1<<60 && (limit == 0 || n < limit) {
			limit = n
		}
	}
	consider(readBytes("/sys/fs/cgroup/memory.max"))
	consider(readBytes("/sys/fs/cgroup/memory/memory.limit_in_bytes"))
	consider(debug.SetMemoryLimit(-1))
	consider(memTotal("/proc/meminfo"))
	return limit
}

// readBytes reads a file holding one number of bytes; 0 if it cannot.
func readBytes(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// memTotal reads MemTotal (in kB) from /proc/meminfo; 0 if it cannot.
func memTotal(path string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}
