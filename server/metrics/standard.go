package metrics

// The Go runtime and process metrics are the library's standard ones
// (vm.WriteProcessMetrics, vm.WriteFDMetrics), with three changes that
// `promtool check metrics` asks for (TestStandardMetricsPassPromtool).

// dropped are the library's families whose names break the conventions
// and that say nothing useful here: cgo calls (copydesk is built without
// cgo, so it is always 0), forced collections, and the host's CPU count,
// which go_gomaxprocs gives as the Go runtime uses it.
var dropped = map[string]bool{
	"go_cgo_calls_count": true,
	"go_gc_forced_count": true,
	"go_cpu_count":       true,
}

// retyped are counters the library types as gauges.
var retyped = map[string]string{
	"process_io_read_bytes_total":            "counter",
	"process_io_written_bytes_total":         "counter",
	"process_io_read_syscalls_total":         "counter",
	"process_io_write_syscalls_total":        "counter",
	"process_io_storage_read_bytes_total":    "counter",
	"process_io_storage_written_bytes_total": "counter",
}

// standardHelp are the HELP texts of the standard families dashboards use
// most; the others get a generic one (helpOf).
var standardHelp = map[string]string{
	"go_goroutines":                 "Number of goroutines that currently exist.",
	"go_threads":                    "Number of OS threads created.",
	"go_gomaxprocs":                 "The value of GOMAXPROCS: how many CPUs the Go runtime uses.",
	"go_info":                       "The Go version copydesk was built with.",
	"go_gc_duration_seconds":        "Summary of the pause durations of garbage collection cycles.",
	"go_memlimit_bytes":             "The Go runtime's soft memory limit (GOMEMLIMIT).",
	"go_memstats_alloc_bytes":       "Bytes of heap objects allocated and still in use.",
	"go_memstats_alloc_bytes_total": "Bytes allocated for heap objects, in total.",
	"go_memstats_heap_alloc_bytes":  "Bytes of heap objects allocated and still in use.",
	"go_memstats_heap_inuse_bytes":  "Bytes in in-use heap spans.",
	"go_memstats_sys_bytes":         "Bytes of memory obtained from the OS.",
	"go_memstats_next_gc_bytes":     "Heap size at which the next garbage collection starts.",
	"process_cpu_seconds_total":     "User and system CPU time spent, in seconds.",
	"process_resident_memory_bytes": "Resident memory size in bytes.",
	"process_virtual_memory_bytes":  "Virtual memory size in bytes.",
	"process_start_time_seconds":    "Start time of the process since the Unix epoch, in seconds.",
	"process_open_fds":              "Number of open file descriptors.",
	"process_max_fds":               "Maximum number of open file descriptors.",
	"process_num_threads":           "Number of OS threads of the process.",
}
