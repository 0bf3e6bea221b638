//go:build unix

package server

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// LockFile is the file in the data directory that `copydesk serve` holds
// locked (flock) while it runs; its content says who holds it.
const LockFile = "copydesk.lock"

// DataDirLock is a held lock on a data directory.
type DataDirLock struct{ f *os.File }

// ErrLocked is returned when another process holds the data directory.
var ErrLocked = errors.New("the data directory is in use")

// LockDataDir takes the data directory's lock without waiting and records
// owner in it. When another process holds it, the error wraps ErrLocked
// and says who that is.
func LockDataDir(dataDir, owner string) (*DataDirLock, error) {
	path := filepath.Join(dataDir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: held by %s", ErrLocked, strings.TrimSpace(string(holder)))
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	// Who holds the lock is only a hint for the message a second process
	// prints: failing to write it must not stop the server.
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(owner+"\n"), 0)
	}
	return &DataDirLock{f: f}, nil
}

// Unlock releases the lock.
func (l *DataDirLock) Unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := errors.Join(l.f.Truncate(0), syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN), l.f.Close())
	l.f = nil
	return err
}
