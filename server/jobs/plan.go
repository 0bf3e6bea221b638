package jobs

import (
	"context"
	"log/slog"
)

// Replanner is the part of the Runner that plans a recurring kind again
// (Runner.Replan).
type Replanner interface {
	Replan(ctx context.Context, kind string) error
}

// Plan is a recurring kind as the service that owns it keeps it in step:
// after a change of what the kind's schedule depends on (a source, a
// phrase, an autopilot, a due delivery), Now plans its next run again at
// once, so that the change takes effect now rather than at the runner's
// next sweep. A failure only delays the change to that sweep, so it is
// logged, not returned: the change itself stands.
type Plan struct {
	Jobs Replanner
	Kind string
	Log  *slog.Logger // nil: discarded
	What string       // what the log line says failed: "web sources: plan the next fetch"
}

// Now plans the kind's next run again; see Plan.
func (p Plan) Now(ctx context.Context) {
	if err := p.Jobs.Replan(ctx, p.Kind); err != nil && p.Log != nil {
		p.Log.Warn(p.What, "kind", p.Kind, "err", err)
	}
}
