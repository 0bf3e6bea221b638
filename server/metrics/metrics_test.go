package metrics

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

func TestSeriesEscapesValues(t *testing.T) {
	got := Series("m", "a", `x"y`, "b", `back\slash`, "c", "two\nlines")
	want := `m{a="x\"y",b="back\\slash",c="two\nlines"}`
	if got != want {
		t.Errorf("Series: %s, want %s", got, want)
	}
	if Series("m") != "m" {
		t.Errorf("no labels: %s", Series("m"))
	}
}

// Off is a nil registry: every call does nothing and panics not.
func TestNilRegistry(t *testing.T) {
	var r *Registry
	r.Request("/x", "GET", 200, time.Millisecond, false)
	r.JobAttempt("k", "succeeded", time.Second)
	r.ModelCall("openai", "m", "chat", "ok", 1, 2, nil)
	r.StreamOpened("/s")()
	r.Collect("c", nil)
}

// A model name the provider made up is one bounded, escaped label value.
func TestModelLabelBounded(t *testing.T) {
	r := New(nil)
	cost := 0.5
	r.ModelCall("openai", strings.Repeat("m", 500)+`"`, "chat", "ok", 10, 0, &cost)
	var buf bytes.Buffer
	if err := r.Write(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if !strings.Contains(out, Series(ModelCalls, "provider", "openai", "model", strings.Repeat("m", 100), "source", "chat", "status", "ok")+" 1\n") {
		t.Errorf("model label not cut at 100 characters:\n%s", out)
	}
	if strings.Contains(out, `type="output"`) {
		t.Error("no output tokens, yet a series for them")
	}
}

func TestAnnotateMendsTheLibrary(t *testing.T) {
	in := "# HELP go_cpu_count\n# TYPE go_cpu_count gauge\ngo_cpu_count 2\n" +
		"# HELP process_io_read_bytes_total\n# TYPE process_io_read_bytes_total gauge\nprocess_io_read_bytes_total 5\n" +
		"# HELP go_goroutines\n# TYPE go_goroutines gauge\ngo_goroutines 7\n" +
		"# HELP own Already said.\n# TYPE own gauge\nown 1\n"
	var out bytes.Buffer
	if err := annotate(bytes.NewBufferString(in), &out); err != nil {
		t.Fatal(err)
	}
	want := "# HELP process_io_read_bytes_total Process metric process_io_read_bytes_total as github.com/VictoriaMetrics/metrics reports it.\n" +
		"# TYPE process_io_read_bytes_total counter\nprocess_io_read_bytes_total 5\n" +
		"# HELP go_goroutines Number of goroutines that currently exist.\n# TYPE go_goroutines gauge\ngo_goroutines 7\n" +
		"# HELP own Already said.\n# TYPE own gauge\nown 1\n"
	if out.String() != want {
		t.Errorf("annotate:\n%s\nwant:\n%s", out.String(), want)
	}
}
