package astropost

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/copydesk/copydesk/store"
)

// folderLocks holds one mutex per content folder, by its real path. It is
// the process's, not a Service's: the lock guards the folder on disk, and
// two services of one process (tests open several apps) writing the same
// folder must still take turns.
var folderLocks sync.Map // string -> *sync.Mutex

// folder is an environment's content folder, locked for one use case and
// opened as an os.Root: every file name goes through the root, so neither
// a name nor a symbolic link inside the folder can reach outside it.
type folder struct {
	path string
	root *os.Root
	mu   *sync.Mutex
}

// noAstro is the answer for an environment without an Astro project.
func noAstro(env *store.Environment) error {
	return store.Conflict("environment %d (%s) has no Astro project: set configuration.astro.project_path (and content_dir, default src/content/blog) "+
		"with PUT /api/environments/%d/configuration", env.ID, env.Name, env.ID)
}

// openFolder opens an environment's content folder once its project is
// one the server allows, judged again at each use: a configuration saved
// before --astro-roots existed, or outside the roots now, is a 409.
func (s *Service) openFolder(env *store.Environment) (*folder, error) {
	if a := env.Configuration.Astro; a != nil && a.ProjectPath != "" {
		if err := s.envs.CheckAstro(a); err != nil {
			return nil, store.Conflict("the Astro project of environment %d is not allowed here: %s", env.ID, store.Message(err))
		}
	}
	return openFolder(env)
}

// openFolder locks and opens the content folder of env. A folder that is
// missing or not a folder is a conflict naming it: the request can succeed
// once it is there.
func openFolder(env *store.Environment) (*folder, error) {
	a := env.Configuration.Astro
	if a == nil || a.ProjectPath == "" {
		return nil, noAstro(env)
	}
	path := filepath.Join(a.ProjectPath, a.ContentDir)
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, store.Conflict("the Astro content folder %s of environment %d does not exist: create it (mkdir -p) or correct configuration.astro",
			path, env.ID)
	case err != nil:
		return nil, store.Conflict("the Astro content folder %s of environment %d cannot be read: %v", path, env.ID, unwrapPath(err))
	case !fi.IsDir():
		return nil, store.Conflict("the Astro content folder %s of environment %d is not a folder", path, env.ID)
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		real = path
	}
	m, _ := folderLocks.LoadOrStore(real, &sync.Mutex{})
	mu := m.(*sync.Mutex)
	mu.Lock()
	root, err := os.OpenRoot(path)
	if err != nil {
		mu.Unlock()
		return nil, store.Conflict("the Astro content folder %s of environment %d cannot be opened: %v", path, env.ID, unwrapPath(err))
	}
	return &folder{path: path, root: root, mu: mu}, nil
}

// close closes the root and lets the next writer in.
func (f *folder) close() {
	_ = f.root.Close()
	f.mu.Unlock()
}

// unwrapPath is the reason of a path error without the path, which the
// caller's detail already names.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}

// fail is the answer to a file operation that failed: a conflict naming
// the folder and the file (unwritable folder, full disk, a link leading
// out of the folder), never a bare 500, since the fix is on the server's
// disk, not in the request.
func (f *folder) fail(op, name string, err error) error {
	return store.Conflict("cannot %s %s in the Astro content folder %s: %v", op, name, f.path, unwrapPath(err))
}

// linked is the answer to a post file that is a symbolic link.
func (f *folder) linked(name string) error {
	return store.Conflict("%s in the Astro content folder %s is a symbolic link: copydesk reads and writes only regular files there; replace it with the file or remove it",
		name, f.path)
}

// exists reports whether name is in the folder (as anything: a file, a
// folder, a link).
func (f *folder) exists(name string) (bool, error) {
	_, err := f.root.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, f.fail("look at", name, err)
	}
	return true, nil
}

// read returns the text of name; ok is false when there is no such file.
// A symbolic link is refused, wherever it leads: a link planted in the
// folder must not make copydesk read, write or remove another file.
func (f *folder) read(name string) (text string, ok bool, err error) {
	if fi, err := f.root.Lstat(name); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return "", false, f.linked(name)
	}
	b, err := f.root.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, f.fail("read", name, err)
	}
	return string(b), true, nil
}

// write replaces name with data atomically: a temporary file in the same
// folder, written and synced, renamed over name, and the folder synced, so
// a reader (a running astro dev) or a crash sees the old file or the new
// one, never half of one. The temporary name starts with a dot and ends in
// .tmp, which Astro's glob of *.md and *.mdx never picks up.
func (f *folder) write(name string, data []byte) error {
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	tmp := "." + name + "." + hex.EncodeToString(rnd[:]) + ".tmp"
	fh, err := f.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return f.fail("write", name, err)
	}
	_, err = fh.Write(data)
	if err == nil {
		err = fh.Sync()
	}
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = f.root.Rename(tmp, name)
	}
	if err != nil {
		_ = f.root.Remove(tmp)
		return f.fail("write", name, err)
	}
	return f.syncDir()
}

// syncDir makes a rename or a removal in the folder durable.
func (f *folder) syncDir() error {
	d, err := f.root.Open(".")
	if err != nil {
		return f.fail("sync", ".", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return f.fail("sync", ".", err)
	}
	return nil
}

// undo puts a file back as it was before a change.
type undo func() error

// put writes name and returns how to put back what was there (the old
// text, or nothing).
func (f *folder) put(name, text string) (undo, error) {
	old, had, err := f.read(name)
	if err != nil {
		return nil, err
	}
	if err := f.write(name, []byte(text)); err != nil {
		return nil, err
	}
	return func() error {
		if had {
			return f.write(name, []byte(old))
		}
		return f.remove(name)
	}, nil
}

// take removes name and returns how to put it back; a missing file is
// already gone.
func (f *folder) take(name string) (undo, error) {
	old, had, err := f.read(name)
	if err != nil {
		return nil, err
	}
	if !had {
		return func() error { return nil }, nil
	}
	if err := f.remove(name); err != nil {
		return nil, err
	}
	return func() error { return f.write(name, []byte(old)) }, nil
}

func (f *folder) remove(name string) error {
	if err := f.root.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return f.fail("remove", name, err)
	}
	return f.syncDir()
}

// postFiles lists the Markdown and MDX files at the top of the folder
// (those a post can be: a slug has no slash), by name; links are the
// symbolic links with such names, which are never read.
func (f *folder) postFiles() (names, links []string, err error) {
	d, err := f.root.Open(".")
	if err != nil {
		return nil, nil, f.fail("list", ".", err)
	}
	defer d.Close()
	entries, err := d.ReadDir(-1)
	if err != nil {
		return nil, nil, f.fail("list", ".", err)
	}
	for _, e := range entries {
		name := e.Name()
		if ext := filepath.Ext(name); strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || (ext != ".md" && ext != ".mdx") {
			continue
		}
		switch {
		case e.Type().IsRegular():
			names = append(names, name)
		case e.Type()&fs.ModeSymlink != 0:
			links = append(links, name)
		}
	}
	slices.Sort(names)
	slices.Sort(links)
	return names, links, nil
}

// relImage checks a relative hero image path: it must name an image file
// inside the project, seen from the content folder. It returns the path as
// written ("./hero.jpg"), or an error saying what is wrong.
func relImage(env *store.Environment, rel string) (string, error) {
	a := env.Configuration.Astro
	root, err := os.OpenRoot(a.ProjectPath)
	if err != nil {
		return "", store.Conflict("the Astro project %s cannot be opened: %v", a.ProjectPath, unwrapPath(err))
	}
	defer func() { _ = root.Close() }() // read only
	clean := filepath.ToSlash(filepath.Clean(filepath.Join(a.ContentDir, rel)))
	fi, err := root.Stat(clean)
	if err != nil {
		return "", store.Invalid("hero_image: %s is not an image file in the Astro project (%v): put the image next to the post, or give an https URL",
			rel, unwrapPath(err))
	}
	if !fi.Mode().IsRegular() {
		return "", store.Invalid("hero_image: %s is not a file", rel)
	}
	if !strings.HasPrefix(rel, "./") && !strings.HasPrefix(rel, "../") {
		rel = "./" + rel
	}
	return rel, nil
}
