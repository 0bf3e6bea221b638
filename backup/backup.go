// Package backup takes, checks, lists and restores snapshots of the copydesk
// database. The CLI (`copydesk backup`, `copydesk restore`) and the API
// (/api/backup) both call it.
//
// A snapshot is a consistent copy taken online with VACUUM INTO, checked with
// PRAGMA integrity_check before it counts, and described by a sidecar
// NAME.json (created-at, copydesk version, schema version, SHA-256). Only
// snapshots with a sidecar are listed. They live in DATA_DIR/backups with
// names that sort by time.
package backup

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"sync"
	"time"

	"github.com/copydesk/copydesk/store"
)

// DirName is the folder of snapshots inside the data directory.
const DirName = "backups"

// Kinds of snapshot, by what made it.
const (
	KindManual     = "manual"      // POST /api/backup
	KindScheduled  = "scheduled"   // the schedule; subject to retention
	KindPreRestore = "pre-restore" // the safety snapshot taken before a restore
	KindUploaded   = "uploaded"    // POST /api/backup/upload
	KindCLI        = "cli"         // `copydesk backup`
)

// namePattern is the only form of name copydesk makes; anything else is not
// a backup, which keeps names from ever being paths.
var namePattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(NamePattern) })

// NamePattern is namePattern's expression (the API document's pattern of a
// backup's name).
const NamePattern = `^copydesk-[0-9]{8}-[0-9]{6}-(manual|scheduled|pre-restore|uploaded|cli)(-[0-9]{1,4})?\.db$`

// ValidName reports whether name is one copydesk could have made.
func ValidName(name string) bool { return namePattern().MatchString(name) }

// Meta describes a snapshot; it is the sidecar's content.
type Meta struct {
	Name            string    `json:"name"`
	Kind            string    `json:"kind"`
	Size            int64     `json:"size"`
	SHA256          string    `json:"sha256"`
	CreatedAt       time.Time `json:"created_at"`
	SchemaVersion   int       `json:"schema_version"`
	CopydeskVersion string    `json:"copydesk_version"`
	// VerifiedAt and VerifiedOK are the last Verify of the file since it
	// was made (nil: none; it was checked when made). Verify writes them
	// into the sidecar, so they go with the file: every instance sharing
	// the folder sees them, a restore does not roll them back, and they go
	// when the file does.
	VerifiedAt *time.Time `json:"verified_at,omitempty"`
	VerifiedOK *bool      `json:"verified_ok,omitempty"`
}

// Manager keeps the snapshots of one data directory.
type Manager struct {
	db      *store.DB
	dir     string
	version string
	mu      sync.Mutex // one snapshot, admission of a checked file, or delete at a time

	// Log hears what the manager could not do but carried on without (a
	// verification's outcome not kept); nil: slog's default.
	Log *slog.Logger

	// OnScheduledRun, when set, hears of every scheduled run: the snapshot
	// taken, or the error. The server notifies the super_admins with it.
	OnScheduledRun func(ctx context.Context, meta *Meta, err error)
	// OnScheduleChange, when set, is called once SetSchedule has stored a
	// schedule. The server plans the next scheduled run with it: RunDue
	// runs as a recurring job whose Schedule is Next.
	OnScheduleChange func(ctx context.Context) error
}

// New returns the manager of DATA_DIR/backups for db.
func New(db *store.DB, dataDir, version string) *Manager {
	return &Manager{db: db, dir: filepath.Join(dataDir, DirName), version: version}
}

// Dir is the folder of snapshots.
func (m *Manager) Dir() string { return m.dir }

func (m *Manager) now() time.Time { return m.db.Now().UTC() }

func (m *Manager) ensureDir() error { return os.MkdirAll(m.dir, 0o700) }

// newName picks a free name for a snapshot of kind made at t.
func (m *Manager) newName(kind string, t time.Time) string {
	base := "copydesk-" + t.UTC().Format("20060102-150405") + "-" + kind
	name := base + ".db"
	for i := 2; exists(filepath.Join(m.dir, name)) || exists(filepath.Join(m.dir, name+".json")); i++ {
		name = fmt.Sprintf("%s-%d.db", base, i)
	}
	return name
}

func exists(p string) bool { _, err := os.Lstat(p); return err == nil }

// Create takes a snapshot of the live database now. The caller holds the
// database (store.DB.Hold) when the server runs.
func (m *Manager) Create(ctx context.Context, kind string) (*Meta, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.ensureDir(); err != nil {
		return nil, err
	}
	tmp := filepath.Join(m.dir, fmt.Sprintf(".tmp-%d.db", time.Now().UnixNano()))
	defer os.Remove(tmp)
	started := m.now()
	if err := m.db.SnapshotTo(ctx, tmp); err != nil {
		return nil, err
	}
	meta, err := inspect(ctx, tmp, kind, started, m.version)
	if err != nil {
		return nil, err
	}
	if err := m.admit(tmp, meta); err != nil {
		return nil, err
	}
	return meta, nil
}

// inspect checks a finished file and describes it (its Name is left to
// the caller); it does not need m.mu. A file that fails the check is
// refused with a KindInvalid error and left for the caller to remove.
func inspect(ctx context.Context, tmp, kind string, created time.Time, version string) (*Meta, error) {
	info, err := store.CheckFile(ctx, tmp)
	if err != nil {
		return nil, err
	}
	sum, size, err := hashFile(tmp)
	if err != nil {
		return nil, err
	}
	return &Meta{Kind: kind, Size: size, SHA256: sum, CreatedAt: created.Truncate(time.Millisecond),
		SchemaVersion: info.SchemaVersion, CopydeskVersion: version}, nil
}

// admit names an inspected file, moves it in and writes its sidecar: the
// moment it becomes listed. The caller holds m.mu, so that no two files
// get one name.
func (m *Manager) admit(tmp string, meta *Meta) error {
	meta.Name = m.newName(meta.Kind, meta.CreatedAt)
	final := filepath.Join(m.dir, meta.Name)
	if err := os.Rename(tmp, final); err != nil {
		return err
	}
	if err := writeSidecar(final, meta); err != nil {
		os.Remove(final)
		return err
	}
	return nil
}

// writeSidecar records meta beside the snapshot file at path. The file is
// written whole under a name of its own, synced, then renamed: a reader,
// here or in another instance sharing the folder, sees the old sidecar or
// the new one, also after a crash.
func writeSidecar(path string, meta *Meta) error {
	b, err := json.MarshalIndent(meta, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".json-*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync() // on disk before the rename makes it the sidecar
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path+".json")
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(filepath.Dir(path))
}

// syncDir makes a rename in dir durable (a power loss after it must not
// leave the old name, or none).
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// ReadSidecar reads NAME.json beside a snapshot file.
func ReadSidecar(path string) (*Meta, error) {
	b, err := os.ReadFile(path + ".json")
	if err != nil {
		return nil, err
	}
	var meta Meta
	if err := json.Unmarshal(b, &meta); err != nil {
		return nil, fmt.Errorf("backup: sidecar of %s: %w", filepath.Base(path), err)
	}
	return &meta, nil
}

func hashFile(path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// List returns every snapshot, newest first.
func (m *Manager) List() ([]*Meta, error) {
	entries, err := os.ReadDir(m.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return []*Meta{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := []*Meta{}
	for _, e := range entries {
		if !e.Type().IsRegular() || !ValidName(e.Name()) {
			continue
		}
		meta, err := ReadSidecar(filepath.Join(m.dir, e.Name()))
		if err != nil || meta.Name != e.Name() {
			continue // not admitted (or damaged): not a backup
		}
		out = append(out, meta)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.After(out[j].CreatedAt)
		}
		return out[i].Name > out[j].Name
	})
	return out, nil
}

// Get returns one snapshot's metadata. A name copydesk did not make, or one
// not in the folder, is not found: names never become paths.
func (m *Manager) Get(name string) (*Meta, error) {
	if !ValidName(name) {
		return nil, store.NotFound("no backup named %q", name)
	}
	path := filepath.Join(m.dir, name)
	st, err := os.Lstat(path)
	if err != nil || !st.Mode().IsRegular() {
		return nil, store.NotFound("no backup named %q", name)
	}
	meta, err := ReadSidecar(path)
	if err != nil || meta.Name != name {
		return nil, store.NotFound("no backup named %q", name)
	}
	return meta, nil
}

// Open opens a snapshot's file for download.
func (m *Manager) Open(name string) (*os.File, *Meta, error) {
	meta, err := m.Get(name)
	if err != nil {
		return nil, nil, err
	}
	f, err := os.Open(filepath.Join(m.dir, name))
	if err != nil {
		return nil, nil, err
	}
	return f, meta, nil
}

// Verification is the outcome of Verify (its JSON is the server's
// backupVerifyResponse).
type Verification struct {
	Name          string
	OK            bool
	SHA256Matches bool
	IntegrityOK   bool
	SchemaVersion int
	Problem       string
}

// Verify checks a snapshot again: its SHA-256 against the sidecar and its
// integrity. A damaged snapshot is a result with OK false, not an error.
// The outcome is kept in the sidecar (Meta.VerifiedAt, VerifiedOK).
func (m *Manager) Verify(ctx context.Context, name string) (*Verification, error) {
	meta, err := m.Get(name)
	if err != nil {
		return nil, err
	}
	v, err := m.check(ctx, meta)
	if err != nil {
		return nil, err
	}
	// The check is the answer; keeping its outcome is a courtesy that a
	// full disk or a read-only folder must not turn into a failure (nor
	// stop a restore).
	if err := m.recordVerification(name, v.OK); err != nil {
		m.logger().Warn("backup: the outcome of a verification was not kept", "backup", name, "err", err)
	}
	return v, nil
}

func (m *Manager) logger() *slog.Logger { return cmp.Or(m.Log, slog.Default()) }

// recordVerification writes the outcome of a Verify into the file's
// sidecar, unless the file went meanwhile (a delete, here or in another
// instance sharing the folder).
func (m *Manager) recordVerification(name string, ok bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	meta, err := m.Get(name)
	if store.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	at := m.now().Truncate(time.Millisecond)
	meta.VerifiedAt, meta.VerifiedOK = &at, &ok
	return writeSidecar(filepath.Join(m.dir, name), meta)
}

// check is Verify without keeping its outcome.
func (m *Manager) check(ctx context.Context, meta *Meta) (*Verification, error) {
	name := meta.Name
	path := filepath.Join(m.dir, name)
	v := &Verification{Name: name}
	sum, _, err := hashFile(path)
	if err != nil {
		return nil, err
	}
	v.SHA256Matches = sum == meta.SHA256
	info, err := store.CheckFile(ctx, path)
	if err != nil {
		if store.KindOf(err) != store.KindInvalid {
			return nil, err
		}
		v.Problem = store.Message(err)
	} else {
		v.IntegrityOK, v.SchemaVersion = true, info.SchemaVersion
	}
	if !v.SHA256Matches && v.Problem == "" {
		v.Problem = "the file's SHA-256 differs from the one recorded when it was made"
	}
	v.OK = v.SHA256Matches && v.IntegrityOK
	return v, nil
}

// uploadPrefix starts the names of uploads still being received.
const uploadPrefix = ".tmp-upload-"

// Import admits an uploaded file as a snapshot when it is a whole copydesk
// database this binary can open; otherwise it is refused (KindInvalid) and
// nothing is kept. At most limit bytes are read (KindTooLarge beyond).
//
// The header is checked before anything is written, so a file that is not
// a copydesk database is refused after its first 100 bytes. The rest goes
// to a temporary file without m.mu, which is taken only to name and move
// the checked file in: however slowly an upload arrives, snapshots, other
// uploads and deletes go on.
func (m *Manager) Import(ctx context.Context, r io.Reader, limit int64) (*Meta, error) {
	head := make([]byte, store.HeaderSize)
	n, err := io.ReadFull(r, head)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, err
	}
	if err := store.CheckHeader(head[:n]); err != nil {
		return nil, err
	}
	if err := m.ensureDir(); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(m.dir, uploadPrefix+"*.db")
	if err != nil {
		return nil, err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	_, err = f.Write(head)
	var rest int64
	if err == nil {
		rest, err = io.Copy(f, io.LimitReader(r, limit+1-int64(n)))
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	if int64(n)+rest > limit {
		return nil, store.E(store.KindTooLarge, "the upload is larger than the limit of %d bytes", limit)
	}
	meta, err := inspect(ctx, tmp, KindUploaded, m.now(), m.version)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.admit(tmp, meta); err != nil {
		return nil, err
	}
	return meta, nil
}

// RemoveLeftovers deletes the partial uploads, and the sidecars being
// written, that a killed server left behind.
// Only the process that holds the data directory may call it (the server,
// at start): another one's upload in progress would go with them.
func (m *Manager) RemoveLeftovers() ([]string, error) {
	leftovers, err := filepath.Glob(filepath.Join(m.dir, uploadPrefix+"*"))
	if err != nil {
		return nil, err
	}
	// And sidecars a killed process was writing (writeSidecar): only old
	// ones, since an instance sharing the folder may be writing one now.
	sidecars, err := filepath.Glob(filepath.Join(m.dir, ".*.json-*.tmp"))
	if err != nil {
		return nil, err
	}
	for _, p := range sidecars {
		if info, err := os.Stat(p); err == nil && time.Since(info.ModTime()) > 10*time.Minute {
			leftovers = append(leftovers, p)
		}
	}
	var removed []string
	var errs []error
	for _, p := range leftovers {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, filepath.Base(p))
	}
	return removed, errors.Join(errs...)
}

// Delete removes a snapshot and its sidecar.
func (m *Manager) Delete(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.Get(name); err != nil {
		return err
	}
	path := filepath.Join(m.dir, name)
	if err := os.Remove(path + ".json"); err != nil {
		return err
	}
	return os.Remove(path)
}

// The stages of a restore, told as each begins (RestoreStages): the check
// comes first and is told once it has passed (StageChecked), so a file
// that fails it is an error before any stage; then store.DB.ReplaceStages'
// (waiting for the requests in flight, the safety snapshot, the swap);
// then the safety snapshot is checked and listed (StageKeeping).
const (
	StageChecked        = "checked"
	StageWaiting        = store.StageWaiting
	StageSafetySnapshot = store.StageSafetySnapshot
	StageSwapping       = store.StageSwapping
	StageKeeping        = "keeping_safety_snapshot"
)

// Restore puts a snapshot in place of the live database while the server
// runs (store.DB.Replace): it checks the snapshot first (SHA-256 and
// integrity), and keeps a pre-restore safety snapshot, which it returns.
// The caller must not hold the database.
func (m *Manager) Restore(ctx context.Context, name string) (*Meta, error) {
	return m.RestoreStages(ctx, name, nil)
}

// RestoreStages is Restore telling stage (when not nil) of each stage as it
// begins, in the order of the Stage constants. A snapshot that fails the
// check is an error (KindInvalid) before the first stage is told.
func (m *Manager) RestoreStages(ctx context.Context, name string, stage func(string)) (*Meta, error) {
	if stage == nil {
		stage = func(string) {}
	}
	// Refused before the check (a whole file's hash) and before any stage:
	// on PostgreSQL a restore is done offline.
	if err := m.db.CanReplace(); err != nil {
		return nil, err
	}
	v, err := m.Verify(ctx, name)
	if err != nil {
		return nil, err
	}
	if !v.OK {
		return nil, store.Invalid("backup %s cannot be restored: %s", name, v.Problem)
	}
	stage(StageChecked)
	return m.replace(ctx, filepath.Join(m.dir, name), stage)
}

// RestoreFile is Restore for a file outside the backups folder (the CLI).
// A sidecar FILE.json beside it, when present, must match its SHA-256.
func (m *Manager) RestoreFile(ctx context.Context, path string) (*Meta, error) {
	if err := CheckRestorable(ctx, path); err != nil {
		return nil, err
	}
	return m.replace(ctx, path, func(string) {})
}

// CheckRestorable checks a snapshot file before a restore: its sidecar
// (CheckSidecar), and store.CheckFile. Failures are KindInvalid errors.
func CheckRestorable(ctx context.Context, path string) error {
	if err := CheckSidecar(path); err != nil {
		return err
	}
	_, err := store.CheckFile(ctx, path)
	return err
}

// CheckSidecar checks that a sidecar FILE.json beside path, when there is
// one, matches the file's SHA-256 (a KindInvalid error otherwise).
func CheckSidecar(path string) error {
	if meta, err := ReadSidecar(path); err == nil && meta.SHA256 != "" {
		sum, _, err := hashFile(path)
		if err != nil {
			return err
		}
		if sum != meta.SHA256 {
			return store.Invalid("%s does not match the SHA-256 in %s.json: the file changed since it was made", filepath.Base(path), filepath.Base(path))
		}
	}
	return nil
}

func (m *Manager) replace(ctx context.Context, src string, stage func(string)) (*Meta, error) {
	if err := m.ensureDir(); err != nil {
		return nil, err
	}
	tmp := filepath.Join(m.dir, fmt.Sprintf(".tmp-safety-%d.db", time.Now().UnixNano()))
	defer os.Remove(tmp)
	started := m.now()
	// m.mu is not held across Replace: Replace waits for every holder of
	// the database, and a holder may be waiting for m.mu (a snapshot).
	if err := m.db.ReplaceStages(ctx, src, tmp, stage); err != nil {
		return nil, err
	}
	stage(StageKeeping)
	safety, err := inspect(context.WithoutCancel(ctx), tmp, KindPreRestore, started, m.version)
	if err == nil {
		m.mu.Lock()
		err = m.admit(tmp, safety)
		m.mu.Unlock()
	}
	if err != nil {
		// Keep the only copy of the previous database under a name a
		// person will find, rather than delete it with the temp file.
		kept := filepath.Join(m.dir, "pre-restore-"+started.Format("20060102-150405")+".db.unchecked")
		if os.Rename(tmp, kept) == nil {
			return nil, fmt.Errorf("backup: the restore is done, but its safety snapshot could not be checked (kept as %s): %w", kept, err)
		}
		return nil, fmt.Errorf("backup: the restore is done but its safety snapshot could not be kept: %w", err)
	}
	return safety, nil
}

// Prune deletes the oldest snapshots of kind beyond the newest keep.
func (m *Manager) Prune(kind string, keep int) ([]string, error) {
	all, err := m.List()
	if err != nil {
		return nil, err
	}
	var deleted []string
	seen := 0
	for _, meta := range all { // newest first
		if meta.Kind != kind {
			continue
		}
		seen++
		if seen > keep {
			if err := m.Delete(meta.Name); err != nil {
				return deleted, err
			}
			deleted = append(deleted, meta.Name)
		}
	}
	return deleted, nil
}

// WriteStandalone snapshots the database to out (which must not exist),
// checks it and writes out.json: `copydesk backup --out FILE`.
func WriteStandalone(ctx context.Context, db *store.DB, out, version string) (*Meta, error) {
	if exists(out) {
		return nil, fmt.Errorf("%s exists: choose another name", out)
	}
	// Said in words before SQLite says "unable to open database (14)".
	switch fi, err := os.Stat(filepath.Dir(out)); {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("the folder %s does not exist: create it first, or choose another --out", filepath.Dir(out))
	case err != nil:
		return nil, fmt.Errorf("the folder %s cannot be read: %w", filepath.Dir(out), err)
	case !fi.IsDir():
		return nil, fmt.Errorf("%s is not a folder: choose another --out", filepath.Dir(out))
	}
	tmp := filepath.Join(filepath.Dir(out), "."+filepath.Base(out)+".tmp")
	os.Remove(tmp)
	defer os.Remove(tmp)
	started := db.Now().UTC()
	if err := db.SnapshotTo(ctx, tmp); err != nil {
		return nil, err
	}
	meta, err := inspect(ctx, tmp, KindCLI, started, version)
	if err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, out); err != nil {
		return nil, err
	}
	meta.Name = filepath.Base(out)
	return meta, writeSidecar(out, meta)
}
