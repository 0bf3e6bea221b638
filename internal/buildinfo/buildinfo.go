// Package buildinfo is what `copydesk version` prints: the version and
// commit stamped at build time, the Go toolchain, the platform and the
// newest database schema the binary knows.
//
// It also answers `copydesk version` itself, from its init, before the rest
// of the program initialises. Go initialises every linked package before
// main runs, and for copydesk that is most of a process's start: the SQLite
// driver's C runtime, the Markdown, feed and page readers' regular
// expressions and entity tables, about 25 ms on a VM where a page fault
// costs tens of microseconds (docs/DECISIONS.md, Footprint and releases),
// all of it work `version` never uses. Go initialises packages in import
// path order as soon as their imports are (the specification, Package
// initialization), so a package that imports little runs early: this one
// imports the standard library's basics and store/migrations, another
// small leaf, and not runtime/debug, whose place in that order comes after
// most of the program. TestVersionFastPath proves the early answer on the
// built binary.
package buildinfo

import (
	"fmt"
	"io"
	"os"
	"runtime"

	"github.com/copydesk/copydesk/store/migrations"
)

// Set by `make` (Makefile, LDFLAGS) with -ldflags -X.
var (
	version = "dev"
	commit  = ""
)

func init() {
	// Exactly `copydesk version`, from a binary `make` stamped. Anything
	// else (flags, --help, a plain go build or go install, whose version
	// only runtime/debug knows) goes through the command line parser,
	// which prints the same (main.go, versionCmd).
	v, c, ok := Stamped()
	if ok && len(os.Args) == 2 && os.Args[1] == "version" {
		if err := Write(os.Stdout, v, c); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
}

// Stamped returns the version and commit `make` stamped; ok is false for a
// build that was not stamped with both.
func Stamped() (v, c string, ok bool) {
	return version, commit, version != "dev" && commit != ""
}

// Write prints what `copydesk version` prints, for version v and commit c.
func Write(w io.Writer, v, c string) error {
	_, err := fmt.Fprintf(w, "copydesk %s\ncommit %s\n%s %s/%s\nschema %d\n",
		v, c, runtime.Version(), runtime.GOOS, runtime.GOARCH, migrations.Latest())
	return err
}
