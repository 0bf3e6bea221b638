//go:build !unix

package server

import "errors"

// LockFile is the file in the data directory that `copydesk serve` holds
// locked while it runs. Without flock (non-Unix builds) the lock is
// advisory only and always granted.
const LockFile = "copydesk.lock"

// DataDirLock is a held lock on a data directory.
type DataDirLock struct{}

// ErrLocked is returned when another process holds the data directory.
var ErrLocked = errors.New("the data directory is in use")

// LockDataDir always succeeds on platforms without flock.
func LockDataDir(dataDir, owner string) (*DataDirLock, error) { return &DataDirLock{}, nil }

// Unlock releases the lock.
func (l *DataDirLock) Unlock() error { return nil }
