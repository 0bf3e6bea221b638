package jobs_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/copydesk/copydesk/server/jobs"
)

// Plan.Now moves a recurring kind's queued job to the time its schedule
// now gives; a kind that cannot be planned is logged with what failed,
// and nothing else happens.
func TestPlanNow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHarness(t, jobs.Options{SweepInterval: time.Hour})
	onClock(h)
	s := &schedule{at: t0.Add(time.Hour), on: true}
	h.registerKind("fetch", jobs.Kind{Handle: succeed, Next: s.next})
	h.register("plain", succeed)
	h.start(t)
	first := pendingAt(t, h.db, "fetch", t0.Add(time.Hour))

	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	s.set(t0.Add(3*time.Hour), true)
	jobs.Plan{Jobs: h.r, Kind: "fetch", Log: log, What: "sources: plan the next fetch"}.Now(ctx)
	if j := pendingAt(t, h.db, "fetch", t0.Add(3*time.Hour)); j.ID != first.ID {
		t.Fatalf("Now made job %d, want %d moved", j.ID, first.ID)
	}
	if buf.Len() != 0 {
		t.Fatalf("a plan that worked logged: %s", buf.String())
	}

	jobs.Plan{Jobs: h.r, Kind: "plain", Log: log, What: "plain: plan"}.Now(ctx)
	if got := buf.String(); !strings.Contains(got, "level=WARN") || !strings.Contains(got, `msg="plain: plan"`) ||
		!strings.Contains(got, "kind=plain") {
		t.Fatalf("the failed plan logged %q", got)
	}
	jobs.Plan{Jobs: h.r, Kind: "plain", What: "no log"}.Now(ctx) // a nil Log is no log
}
