package astropost

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/copydesk/copydesk/server/slug"
	"github.com/copydesk/copydesk/store"
)

// ImportReport says what an import did with each file of the folder.
type ImportReport struct {
	EnvironmentID int64
	Folder        string
	Imported      []FileOutcome
	Skipped       []FileOutcome
}

// FileOutcome is one file of an import or a reconcile.
type FileOutcome struct {
	File   string
	PostID *int64
	Slug   string
	Kind   string // reconcile: missing_file, file_changed, row_changed, orphan_file, skipped_file (a link)
	Action string // what was done, or what apply would do
	Reason string // why a file was skipped
}

// Import makes a post of every Markdown and MDX file at the top of the
// environment's content folder that is no post yet. Files stay as they
// are: the row records the file's hash, so the file is rewritten only when
// the post changes. A file whose name is not a slug, or whose front matter
// the blog schema would refuse, is skipped with the reason.
func (s *Service) Import(ctx context.Context, sc store.Scope, envID int64) (*ImportReport, error) {
	env, f, posts, err := s.folderPosts(ctx, sc, envID)
	if err != nil {
		return nil, err
	}
	defer f.close()
	bySlug := map[string]*store.AstroPost{}
	for _, p := range posts {
		bySlug[p.Slug] = p
	}
	names, links, err := f.postFiles()
	if err != nil {
		return nil, err
	}
	rep := &ImportReport{EnvironmentID: env.ID, Folder: f.path, Imported: []FileOutcome{}, Skipped: []FileOutcome{}}
	for _, name := range links {
		rep.Skipped = append(rep.Skipped, FileOutcome{File: name, Reason: store.Message(f.linked(name))})
	}
	for _, name := range names {
		base := strings.TrimSuffix(name, filepath.Ext(name))
		if p := bySlug[base]; p != nil {
			if p.FileName() != name {
				rep.Skipped = append(rep.Skipped, FileOutcome{File: name, Reason: fmt.Sprintf("post %d already has the slug %s (file %s)", p.ID, base, p.FileName())})
			}
			continue
		}
		p, err := s.importFile(ctx, f, env, name)
		if err != nil {
			if store.KindOf(err) == store.KindInvalid {
				rep.Skipped = append(rep.Skipped, FileOutcome{File: name, Reason: store.Message(err)})
				continue
			}
			return nil, err
		}
		rep.Imported = append(rep.Imported, FileOutcome{File: name, PostID: &p.ID, Slug: p.Slug, Action: "imported"})
	}
	return rep, nil
}

// folderPosts opens (and locks) the content folder of an environment the
// scope sees (one it does not is not found: it is what the caller asked
// about) and reads its posts; the caller closes the folder.
func (s *Service) folderPosts(ctx context.Context, sc store.Scope, envID int64) (*store.Environment, *folder, []*store.AstroPost, error) {
	env, err := s.envs.Get(ctx, sc, envID)
	if err != nil {
		return nil, nil, nil, err
	}
	f, err := s.openFolder(env)
	if err != nil {
		return nil, nil, nil, err
	}
	posts, err := s.db.ListAstroPostsOfEnvironment(ctx, env.ID)
	if err != nil {
		f.close()
		return nil, nil, nil, err
	}
	return env, f, posts, nil
}

// importFile makes the post of one file, leaving the file as it is. A
// file that cannot be a post is invalid, with the reason.
func (s *Service) importFile(ctx context.Context, f *folder, env *store.Environment, name string) (*store.AstroPost, error) {
	ext := strings.TrimPrefix(filepath.Ext(name), ".")
	base := strings.TrimSuffix(name, "."+ext)
	if !slug.Valid(base, slug.Max) {
		return nil, store.Invalid("the file name is not a slug (lower-case a-z, 0-9 and single dashes, at most %d characters): rename the file to import it", slug.Max)
	}
	text, ok, err := f.read(name)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, store.Invalid("the file is gone")
	}
	pf, err := parseFile(text)
	if err != nil {
		return nil, store.Invalid("%v", err)
	}
	title, err := checkTitle(pf.Title)
	if err != nil {
		return nil, err
	}
	n := store.NewAstroPost{EnvironmentID: env.ID, AstroContent: store.AstroContent{Title: title, Description: pf.Description, Slug: base,
		Ext: ext, Body: pf.Body, PubDate: pf.PubDate, UpdatedDate: pf.UpdatedDate, HeroImage: pf.HeroImage, Draft: pf.Draft,
		ExtraFrontMatter: pf.Extra}, NamedCategories: named(pf.Categories, "category"), NamedTags: named(pf.Tags, "tag")}
	return s.db.CreateAstroPost(ctx, n, func(p *store.AstroPost) (store.AstroFile, error) {
		return store.AstroFile{FileSHA256: digest(text), RenderSHA256: digest(Render(p))}, nil
	})
}

// named are the terms a file names, by the CMS slug rule.
func named(names []string, kind string) []store.NamedTerm {
	var out []store.NamedTerm
	seen := map[string]bool{}
	for _, n := range names {
		n = strings.TrimSpace(n)
		if n == "" || seen[strings.ToLower(n)] || len(n) > 200 {
			continue
		}
		seen[strings.ToLower(n)] = true
		out = append(out, store.NamedTerm{Name: n, Slug: slug.Make(n, slug.Max), Tries: slug.Generated(n, kind, slug.Max)})
	}
	return out
}

// Orphans says what Reconcile does with a file that no post has.
type Orphans string

// What Reconcile may do with a file that no post has.
const (
	OrphansKeep   Orphans = "keep"   // report it (the default)
	OrphansImport Orphans = "import" // make a post of it
	OrphansDelete Orphans = "delete" // remove it
)

// ReconcileReport lists the differences between the rows and the files.
type ReconcileReport struct {
	EnvironmentID int64
	Folder        string
	Applied       bool
	InSync        int
	Differences   []FileOutcome
	// DeleteConfirmation names the orphan files of this report: a
	// reconcile that deletes them must be given it (confirm), so it
	// deletes only what a dry run listed. Empty without orphans.
	DeleteConfirmation string
}

// Reconcile compares an environment's posts with its content folder and,
// with apply, fixes what differs. A restore rolls the database back, not
// the files; a file may also be edited or removed by hand.
//
//   - missing_file: a post whose file is not there. Apply writes it.
//   - file_changed: the file is not what copydesk last wrote or read (an
//     edit outside copydesk, or a restore to before the last write). Apply
//     writes it from the post: the database is what a restore chose.
//   - row_changed: the post renders differently from its file (a category
//     or tag renamed or deleted). Apply writes it.
//   - orphan_file: a Markdown file no post has (a post made after the
//     snapshot that was restored, or a file never imported). orphans
//     says what apply does: keep it (default), import it, or delete it.
//     Deleting needs confirm, the DeleteConfirmation of a report listing
//     the same orphans (a dry run first): nothing is done otherwise.
func (s *Service) Reconcile(ctx context.Context, sc store.Scope, envID int64, apply bool, orphans Orphans, confirm string) (*ReconcileReport, error) {
	switch orphans {
	case "":
		orphans = OrphansKeep
	case OrphansKeep, OrphansImport, OrphansDelete:
	default:
		return nil, store.Invalid("orphans: must be keep, import or delete")
	}
	env, f, posts, err := s.folderPosts(ctx, sc, envID)
	if err != nil {
		return nil, err
	}
	defer f.close()
	names, links, err := f.postFiles()
	if err != nil {
		return nil, err
	}
	files := map[string]bool{}
	for _, n := range names {
		files[n] = true
	}
	linked := map[string]bool{}
	for _, n := range links {
		linked[n] = true
	}
	for _, p := range posts {
		delete(files, p.FileName())
		delete(linked, p.FileName())
	}
	var orphaned []string
	for _, n := range names {
		if files[n] {
			orphaned = append(orphaned, n)
		}
	}
	rep := &ReconcileReport{EnvironmentID: env.ID, Folder: f.path, Applied: apply, Differences: []FileOutcome{},
		DeleteConfirmation: deleteConfirmation(orphaned)}
	if apply && orphans == OrphansDelete && len(orphaned) > 0 && confirm != rep.DeleteConfirmation {
		return nil, store.Invalid("confirm: deleting orphan files needs the delete_confirmation of a reconcile without apply listing the same files (%s), which would delete %s",
			rep.DeleteConfirmation, strings.Join(orphaned, ", "))
	}
	for _, p := range posts {
		text, ok, err := f.read(p.FileName())
		if store.KindOf(err) == store.KindConflict {
			// One unreadable file (a planted link) is reported and
			// skipped; the rest of the folder reconciles.
			rep.Differences = append(rep.Differences, FileOutcome{File: p.FileName(), PostID: &p.ID, Slug: p.Slug, Kind: "skipped_file",
				Action: "skipped: " + store.Message(err)})
			continue
		}
		if err != nil {
			return nil, err
		}
		kind := ""
		switch {
		case !ok:
			kind = "missing_file"
		case digest(text) != p.FileSHA256:
			kind = "file_changed"
		case digest(Render(p)) != p.RenderSHA256:
			kind = "row_changed"
		default:
			rep.InSync++
			continue
		}
		d := FileOutcome{File: p.FileName(), PostID: &p.ID, Slug: p.Slug, Kind: kind, Action: "write the file from the post"}
		if apply {
			d.Action = "written"
			if _, back, err := s.rewrite(ctx, f, p, store.AstroPostUpdate{}); err != nil {
				if err := s.settle(err, back, "reconcile"); store.KindOf(err) != store.KindConflict {
					return nil, err
				}
				d.Action = "failed: " + store.Message(err)
			}
		}
		rep.Differences = append(rep.Differences, d)
	}
	for _, name := range names {
		if !files[name] {
			continue
		}
		d := FileOutcome{File: name, Kind: "orphan_file", Action: "keep (orphans=import makes a post of it, orphans=delete removes it)"}
		if apply {
			d.Action = s.fixOrphan(ctx, f, env, name, orphans, &d)
		}
		rep.Differences = append(rep.Differences, d)
	}
	for _, name := range links {
		if linked[name] {
			rep.Differences = append(rep.Differences, FileOutcome{File: name, Kind: "skipped_file", Action: "skipped: " + store.Message(f.linked(name))})
		}
	}
	return rep, nil
}

// deleteConfirmation is a short digest of the orphan files' names.
func deleteConfirmation(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return digest(strings.Join(names, "\n"))[:16]
}

// fixOrphan does what orphans says with a file no post has, and says what
// it did.
func (s *Service) fixOrphan(ctx context.Context, f *folder, env *store.Environment, name string, orphans Orphans, d *FileOutcome) string {
	switch orphans {
	case OrphansImport:
		p, err := s.importFile(ctx, f, env, name)
		if err != nil {
			return "not imported: " + store.Message(err)
		}
		d.PostID, d.Slug = &p.ID, p.Slug
		return "imported"
	case OrphansDelete:
		if err := f.remove(name); err != nil {
			return "not deleted: " + store.Message(err)
		}
		return "deleted"
	}
	return "kept"
}
