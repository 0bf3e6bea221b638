package server

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/copydesk/copydesk/server/jobs"
	"github.com/copydesk/copydesk/server/metrics"
	"github.com/copydesk/copydesk/store"
)

// Prometheus metrics (docs/metrics.md). With `serve --metrics
// --metrics-token`, GET /metrics on the API's listener answers to the
// bearer token alone; with --metrics-http, App.Run serves the same on a
// listener of its own, without a token. Without --metrics the route does
// not exist (404), and nothing is measured.
//
// The route is not in the OpenAPI document, like /docs and the console:
// the document describes /api, and /metrics is Prometheus's format for
// Prometheus, not an API a client is generated for.

// MetricsPath is where the metrics are served.
const MetricsPath = "/metrics"

// measure counts every request by route template (the router's, never the
// path: ids stay out of the labels), method and status, and times it. It
// runs first, so a panic's 500 is counted as one.
func (s *Server) measure(c *gin.Context) {
	start := time.Now()
	c.Next()
	b := boundOf(c.Writer)
	s.metrics.Request(c.FullPath(), c.Request.Method, c.Writer.Status(), time.Since(start), b != nil && b.stream)
}

// registerMetricsRoute serves the metrics on the API's listener when a
// token is set.
func (s *Server) registerMetricsRoute() {
	if s.metrics == nil || s.opts.MetricsToken == "" {
		return
	}
	want := sha256.Sum256([]byte(s.opts.MetricsToken))
	serve := s.metrics.Handler()
	h := func(c *gin.Context) {
		scheme, token, _ := strings.Cut(c.GetHeader("Authorization"), " ")
		// Both sides hashed: the comparison takes the same time whatever
		// the length of what was sent.
		got := sha256.Sum256([]byte(strings.TrimSpace(token)))
		if !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			c.Header("WWW-Authenticate", `Bearer realm="copydesk metrics"`)
			abort(c, http.StatusUnauthorized, "the metrics need the header Authorization: Bearer <the --metrics-token of copydesk serve>")
			return
		}
		serve.ServeHTTP(c.Writer, c.Request)
	}
	s.router.GET(MetricsPath, h)
	s.router.HEAD(MetricsPath, h)
}

// MetricsHandler serves the metrics without a token, for the private
// listener of --metrics-http: /metrics, and 404 for anything else.
func MetricsHandler(reg *metrics.Registry) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET "+MetricsPath, reg.Handler())
	return mux
}

// collectMetrics adds the gauges read at each scrape: the job queue (from
// the store, holding the database for one indexed query) and the
// database's pools (without holding it).
func collectMetrics(reg *metrics.Registry, db *store.DB, runner *jobs.Runner) {
	reg.Collect("jobs", func(ctx context.Context, w *metrics.Writer) error {
		ctx, release := db.Hold(ctx)
		defer release()
		stats, err := db.JobQueue(ctx)
		if err != nil {
			return err
		}
		now := db.Now()
		byKind := map[string]store.JobQueueStat{}
		for _, st := range stats {
			byKind[st.Kind] = st
		}
		// Every registered kind has its series, 0 when idle, so that an
		// alert on one does not see it vanish; a kind in the table that
		// no service registers shows too.
		kinds := runner.Kinds()
		for _, st := range stats {
			if !slices.Contains(kinds, st.Kind) {
				kinds = append(kinds, st.Kind)
			}
		}
		families := []struct {
			name, help string
			value      func(store.JobQueueStat) float64
		}{
			{metrics.JobsQueued, "Jobs queued and due, waiting for a worker, by kind.",
				func(st store.JobQueueStat) float64 { return float64(st.Due) }},
			{metrics.JobsScheduled, "Jobs queued for a later moment (retries after their backoff, recurring kinds' next run), by kind.",
				func(st store.JobQueueStat) float64 { return float64(st.Later) }},
			{metrics.JobsRunning, "Jobs running now, by kind.",
				func(st store.JobQueueStat) float64 { return float64(st.Running) }},
			{metrics.JobsOldestAge, "Seconds the longest-waiting due job has waited for a worker, by kind; 0 when none waits.",
				func(st store.JobQueueStat) float64 {
					if st.OldestDue.IsZero() {
						return 0
					}
					return max(0, now.Sub(st.OldestDue).Seconds())
				}},
		}
		for _, f := range families {
			w.Family(f.name, "gauge", f.help)
			for _, k := range kinds {
				w.Sample(f.name, f.value(byKind[k]), "kind", k)
			}
		}
		return nil
	})
	reg.Collect("db", func(_ context.Context, w *metrics.Writer) error {
		readers, writer := db.Pools()
		pools := []struct {
			name string
			st   store.PoolStats
		}{{"reader", readers}, {"writer", writer}}
		for _, f := range []struct {
			name, help string
			value      func(store.PoolStats) int
		}{
			{metrics.DBConnectionsMax, "Connections a pool may open: the read pool's size, and 1 for the single writer.",
				func(st store.PoolStats) int { return st.Max }},
			{metrics.DBConnectionsOpen, "Connections of a pool open now.", func(st store.PoolStats) int { return st.Open }},
			{metrics.DBConnectionsInUse, "Connections of a pool in use now.", func(st store.PoolStats) int { return st.InUse }},
		} {
			w.Family(f.name, "gauge", f.help)
			for _, p := range pools {
				w.Sample(f.name, float64(f.value(p.st)), "pool", p.name)
			}
		}
		w.Family(metrics.DBWriteLockWaits, "counter", "Times a write waited for the single writer connection (SQLite's one write lock) held by another write.")
		w.Sample(metrics.DBWriteLockWaits, float64(writer.Waits))
		w.Family(metrics.DBWriteLockWaitTime, "counter", "Seconds writes spent waiting for the single writer connection, in total.")
		w.Sample(metrics.DBWriteLockWaitTime, writer.WaitTime.Seconds())
		return nil
	})
}
