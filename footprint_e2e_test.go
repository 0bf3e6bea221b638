package main

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// initLine is one line of GODEBUG=inittrace=1: a package's init, its
// clock time and what it allocated.
var initLine = regexp.MustCompile(`^init (\S+) @\S+ ms, \S+ ms clock, (\d+) bytes, \d+ allocs$`)

// TestStartupInitBudget holds the work every start of the binary does
// before main (package init; every command but `copydesk version` pays
// it, see TestVersionFastPath) to a budget of allocated bytes. On the machines copydesk runs on, start-up
// time is mostly first touches of memory pages, and init's allocations are
// the part that grows unnoticed: a package-level regular expression or
// map costs every invocation. Bytes, not time, so the test cannot flake;
// DECISIONS ("Footprint and releases") has the measurements behind it.
//
// copydesk's own packages build what they need on first use
// (sync.OnceValue): their init may allocate almost nothing. The whole
// binary's init has a budget a new dependency must fit in, or be argued
// for in DECISIONS and the budget raised. goldmark's extension package is
// not linked at all (server/markdown says why).
func TestStartupInitBudget(t *testing.T) {
	t.Parallel()
	// totalBudget was 640 KB until web sources brought the feed and page
	// readers (about 450 KB: go-readability's regular expressions,
	// x/net/html's entity table; DECISIONS, Footprint and releases).
	// ownBudget was 16 KB until the lists of the generation and SEO issues
	// brought their sort tables (small maps, built at init: about 9 KB).
	const ownBudget, totalBudget = 32 << 10, 1024 << 10
	_, stderr, code := runEnv(t, []string{"GODEBUG=inittrace=1"}, "", "help")
	if code != 0 {
		t.Fatalf("copydesk help: exit %d\n%s", code, stderr)
	}
	type pkg struct {
		name  string
		bytes int
	}
	var pkgs []pkg
	own, total := 0, 0
	for _, line := range strings.Split(stderr, "\n") {
		m := initLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[2])
		pkgs = append(pkgs, pkg{m[1], n})
		total += n
		if strings.HasPrefix(m[1], "github.com/copydesk/copydesk") {
			own += n
		}
		if m[1] == "github.com/yuin/goldmark/extension" {
			t.Errorf("goldmark's extension package is linked again (its init alone allocates %d bytes): use server/markdown", n)
		}
	}
	if len(pkgs) < 50 {
		t.Fatalf("read %d init lines from GODEBUG=inittrace=1; the format changed?\n%s", len(pkgs), stderr)
	}
	sort.Slice(pkgs, func(i, j int) bool { return pkgs[i].bytes > pkgs[j].bytes })
	top := func(prefix string) string {
		var b strings.Builder
		for i, n := 0, 0; i < len(pkgs) && n < 10; i++ {
			if strings.HasPrefix(pkgs[i].name, prefix) {
				fmt.Fprintf(&b, "\n  %8d %s", pkgs[i].bytes, pkgs[i].name)
				n++
			}
		}
		return b.String()
	}
	if own > ownBudget {
		t.Errorf("copydesk's own packages allocate %d bytes at init, over the budget of %d: build package-level "+
			"regular expressions, maps and tables on first use (sync.OnceValue). The largest:%s",
			own, ownBudget, top("github.com/copydesk/copydesk"))
	}
	if total > totalBudget {
		t.Errorf("package init allocates %d bytes in all, over the budget of %d. The largest:%s", total, totalBudget, top(""))
	}
	t.Logf("init allocates %d bytes, %d of them in copydesk's packages:%s", total, own, top(""))
}

// TestVersionFastPath proves that `copydesk version` is answered before the
// program initialises (internal/buildinfo says why): with
// GODEBUG=inittrace=1, the packages that initialise before the answer are
// the standard library's basics and a few small leaves, not SQLite's C
// runtime, the regular expression engine, Gin or copydesk's store. A new
// import of internal/buildinfo or store/migrations that sorts late in Go's
// initialisation order fails here.
func TestVersionFastPath(t *testing.T) {
	t.Parallel()
	const budget = 128 << 10
	out, stderr, code := runEnv(t, []string{"GODEBUG=inittrace=1"}, "", "version")
	if code != 0 || !strings.HasPrefix(out, "copydesk ") {
		t.Fatalf("copydesk version: exit %d\n%s\n%s", code, out, stderr)
	}
	total, n := 0, 0
	for _, line := range strings.Split(stderr, "\n") {
		m := initLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		n++
		b, _ := strconv.Atoi(m[2])
		total += b
		switch m[1] {
		case "regexp", "modernc.org/libc", "modernc.org/sqlite/lib", "github.com/gin-gonic/gin",
			"github.com/copydesk/copydesk/store", "github.com/copydesk/copydesk/server":
			t.Errorf("%s initialised before `copydesk version` answered", m[1])
		}
	}
	if n == 0 {
		t.Fatalf("no init lines from GODEBUG=inittrace=1; the format changed?\n%s", stderr)
	}
	if total > budget {
		t.Errorf("%d packages allocated %d bytes before `copydesk version` answered, over the budget of %d", n, total, budget)
	}
	t.Logf("%d packages initialised, %d bytes, before `copydesk version` answered", n, total)
}
