// Package metrics is copydesk's Prometheus metrics (`serve --metrics`,
// docs/metrics.md): the counters and histograms the HTTP layer, the job
// runner and the engine add to as things happen, the gauges read from the
// store when Prometheus scrapes, and the Go runtime and process metrics,
// written in the Prometheus text format.
//
// It is built on github.com/VictoriaMetrics/metrics rather than the
// official client library, for the footprint (docs/DECISIONS.md, Metrics).
// That library writes a HELP line without text and names a few of its
// runtime metrics against Prometheus's conventions; Write fills in the
// texts and leaves those out (see standard.go), so that `promtool check
// metrics` passes on the whole answer.
//
// A nil *Registry is metrics turned off: every method does nothing.
package metrics

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	vm "github.com/VictoriaMetrics/metrics"
)

// Names of copydesk's own metric families.
const (
	HTTPRequests        = "copydesk_http_requests_total"
	HTTPRequestDuration = "copydesk_http_request_duration_seconds"
	JobAttempts         = "copydesk_job_attempts_total"
	JobAttemptDuration  = "copydesk_job_attempt_duration_seconds"
	JobsQueued          = "copydesk_jobs_queued"
	JobsScheduled       = "copydesk_jobs_scheduled"
	JobsRunning         = "copydesk_jobs_running"
	JobsOldestAge       = "copydesk_jobs_oldest_queued_age_seconds"
	ModelCalls          = "copydesk_model_calls_total"
	ModelTokens         = "copydesk_model_tokens_total"
	ModelCost           = "copydesk_model_cost_usd_total"
	EventStreams        = "copydesk_event_streams_open"
	DBConnectionsMax    = "copydesk_db_connections_max"
	DBConnectionsOpen   = "copydesk_db_connections_open"
	DBConnectionsInUse  = "copydesk_db_connections_in_use"
	DBWriteLockWaits    = "copydesk_db_write_lock_waits_total"
	DBWriteLockWaitTime = "copydesk_db_write_lock_wait_seconds_total"
)

// help is the HELP text of copydesk's own families that the library
// writes (the collectors write theirs), "" for another. A switch, not a
// map: nothing is built at every start of the binary.
func help(name string) string {
	switch name {
	case HTTPRequests:
		return "HTTP requests answered, by route template, method and status."
	case HTTPRequestDuration:
		return "Time from a request's arrival to its answer's end, by route template and method; event streams are left out."
	case JobAttempts:
		return "Attempts of background jobs whose outcome was recorded, by kind and outcome."
	case JobAttemptDuration:
		return "How long one attempt of a background job ran, by kind."
	case ModelCalls:
		return "Model calls, by provider, model, source and status (ok or error)."
	case ModelTokens:
		return "Tokens of model calls, by provider, model, source and type (input or output)."
	case ModelCost:
		return "Cost of model calls in US dollars at copydesk's prices, by provider, model and source; calls of an unknown price add nothing."
	case EventStreams:
		return "Event streams (Server-Sent Events) open now, by route template."
	}
	return ""
}

// Bucket bounds of the histograms, in seconds.
var (
	requestBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}
	jobBuckets     = []float64{.1, .5, 1, 5, 15, 30, 60, 120, 300, 600, 1800}
)

// Collector writes gauges read at scrape time. An error is logged and the
// collector's families are left out of that scrape.
type Collector func(ctx context.Context, w *Writer) error

// Registry holds the metrics of one server.
type Registry struct {
	set *vm.Set
	log *slog.Logger

	requests  sync.Map // requestKey -> *vm.Counter
	durations sync.Map // durationKey -> *vm.PrometheusHistogram

	mu         sync.Mutex
	collectors []namedCollector
}

type namedCollector struct {
	name string
	c    Collector
}

type requestKey struct {
	route, method string
	status        int
}

type durationKey struct{ route, method string }

// New returns an empty registry.
func New(log *slog.Logger) *Registry {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// HELP and TYPE lines are what promtool and Prometheus's metadata
	// need; the setting is the library's, global to the process.
	vm.ExposeMetadata(true)
	return &Registry{set: vm.NewSet(), log: log}
}

// Collect adds a collector, run at each scrape in the order added.
func (r *Registry) Collect(name string, c Collector) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.collectors = append(r.collectors, namedCollector{name, c})
}

// Request counts one answered request. route is the router's template
// ("" for no route: "unmatched"); an event stream (stream) is counted but
// left out of the duration histogram, which its minutes would swamp.
func (r *Registry) Request(route, method string, status int, took time.Duration, stream bool) {
	if r == nil {
		return
	}
	if route == "" {
		route = "unmatched"
	}
	method = knownMethod(method)
	k := requestKey{route, method, status}
	c, ok := r.requests.Load(k)
	if !ok {
		c, _ = r.requests.LoadOrStore(k, r.set.GetOrCreateCounter(Series(HTTPRequests, "route", route, "method", method, "status", strconv.Itoa(status))))
	}
	c.(*vm.Counter).Inc()
	if stream {
		return
	}
	dk := durationKey{route, method}
	h, ok := r.durations.Load(dk)
	if !ok {
		h, _ = r.durations.LoadOrStore(dk, r.set.GetOrCreatePrometheusHistogramExt(Series(HTTPRequestDuration, "route", route, "method", method), requestBuckets))
	}
	h.(*vm.PrometheusHistogram).Update(took.Seconds())
}

// knownMethod keeps the method label bounded: a client may send any word.
func knownMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions:
		return m
	}
	return "other"
}

// JobAttempt counts one recorded attempt of a job.
func (r *Registry) JobAttempt(kind, outcome string, took time.Duration) {
	if r == nil {
		return
	}
	r.set.GetOrCreateCounter(Series(JobAttempts, "kind", kind, "outcome", outcome)).Inc()
	r.set.GetOrCreatePrometheusHistogramExt(Series(JobAttemptDuration, "kind", kind), jobBuckets).Update(took.Seconds())
}

// ModelCall counts one model call and what it used. cost is nil when the
// model's price is unknown.
func (r *Registry) ModelCall(provider, model, source, status string, input, output int64, cost *float64) {
	if r == nil {
		return
	}
	model = boundedValue(model)
	r.set.GetOrCreateCounter(Series(ModelCalls, "provider", provider, "model", model, "source", source, "status", status)).Inc()
	tokens := func(typ string, n int64) {
		if n > 0 {
			r.set.GetOrCreateCounter(Series(ModelTokens, "provider", provider, "model", model, "source", source, "type", typ)).AddInt64(n)
		}
	}
	tokens("input", input)
	tokens("output", output)
	c := r.set.GetOrCreateFloatCounter(Series(ModelCost, "provider", provider, "model", model, "source", source))
	if cost != nil && *cost > 0 && !math.IsInf(*cost, 0) {
		c.Add(*cost)
	}
}

// boundedValue cuts a label value that is not copydesk's own (a model
// name a provider answered with) to a sane length.
func boundedValue(s string) string {
	const limit = 100
	if len(s) > limit {
		return s[:limit]
	}
	return s
}

// StreamOpened counts an event stream open on route until done is called.
func (r *Registry) StreamOpened(route string) (done func()) {
	if r == nil {
		return func() {}
	}
	if route == "" {
		route = "unmatched"
	}
	g := r.set.GetOrCreateGauge(Series(EventStreams, "route", route), nil)
	g.Inc()
	return g.Dec
}

// Write writes every metric in the Prometheus text format (version 0.0.4).
func (r *Registry) Write(ctx context.Context, w io.Writer) error {
	var buf bytes.Buffer
	r.set.WritePrometheus(&buf)
	r.mu.Lock()
	collectors := append([]namedCollector(nil), r.collectors...)
	r.mu.Unlock()
	for _, nc := range collectors {
		var part bytes.Buffer
		if err := nc.c(ctx, &Writer{w: &part}); err != nil {
			r.log.Error("metrics: a collector failed; its metrics are left out of this scrape", "collector", nc.name, "err", err)
			continue
		}
		buf.Write(part.Bytes())
	}
	vm.WriteProcessMetrics(&buf)
	vm.WriteFDMetrics(&buf)
	return annotate(&buf, w)
}

// ContentType is the content type of Write's output.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// Handler serves Write's output.
func (r *Registry) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var buf bytes.Buffer
		if err := r.Write(req.Context(), &buf); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", ContentType)
		w.Header().Set("Cache-Control", "no-store")
		if req.Method != http.MethodHead {
			_, _ = w.Write(buf.Bytes())
		}
	})
}

// Writer writes the families of a collector.
type Writer struct{ w io.Writer }

// Family starts a family: its HELP and TYPE lines. typ is gauge or counter.
func (w *Writer) Family(name, typ, help string) {
	fmt.Fprintf(w.w, "# HELP %s %s\n# TYPE %s %s\n", name, escapeHelp(help), name, typ)
}

// Sample writes one sample of the family started last; labels are pairs
// of name and value.
func (w *Writer) Sample(name string, value float64, labels ...string) {
	fmt.Fprintf(w.w, "%s %s\n", Series(name, labels...), strconv.FormatFloat(value, 'g', -1, 64))
}

// Series is a series' name with its labels, pairs of name and value:
// name{a="x",b="y"}, the values escaped as the text format says.
func Series(name string, labels ...string) string {
	if len(labels) == 0 {
		return name
	}
	var b strings.Builder
	b.WriteString(name)
	b.WriteByte('{')
	for i := 0; i+1 < len(labels); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(labels[i])
		b.WriteString(`="`)
		b.WriteString(labelEscaper.Replace(labels[i+1]))
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}

var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

func escapeHelp(s string) string { return strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(s) }

// annotate copies the text format from src to dst, giving each HELP line
// without text its text (help, then standardHelp) and leaving out the
// families of the library that break Prometheus's conventions (dropped),
// or giving them their right type (retyped).
func annotate(src *bytes.Buffer, dst io.Writer) error {
	out := bufio.NewWriter(dst)
	skip := false
	for line := range strings.Lines(src.String()) {
		switch {
		case strings.HasPrefix(line, "# HELP "):
			rest := strings.TrimSuffix(line[len("# HELP "):], "\n")
			name, text, _ := strings.Cut(rest, " ")
			skip = dropped[name]
			if skip {
				continue
			}
			if text == "" {
				text = helpOf(name)
			}
			fmt.Fprintf(out, "# HELP %s %s\n", name, escapeHelp(text))
			continue
		case strings.HasPrefix(line, "# TYPE "):
			f := strings.Fields(line)
			if len(f) == 4 {
				skip = dropped[f[2]]
				if t, ok := retyped[f[2]]; ok && !skip {
					fmt.Fprintf(out, "# TYPE %s %s\n", f[2], t)
					continue
				}
			}
		}
		if !skip {
			_, _ = out.WriteString(line) // a write error sticks: Flush returns it
		}
	}
	return out.Flush()
}

func helpOf(name string) string {
	if h := help(name); h != "" {
		return h
	}
	if h, ok := standardHelp[name]; ok {
		return h
	}
	what := "Go runtime"
	if strings.HasPrefix(name, "process_") {
		what = "Process"
	}
	return what + " metric " + name + " as github.com/VictoriaMetrics/metrics reports it."
}
