package telemetry

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// The Go runtime's metrics, named and described as client_golang's
// collectors.NewGoCollector() (v1.25, default options) has them: the
// go_memstats_* family computed from runtime/metrics as it computed
// them, the goroutines, threads, GC pauses and Go version, and the three
// runtime/metrics its default rules expose.

// memStat is one go_memstats_* metric: its name, help and how it is made
// of runtime/metrics samples (by index in memStatNames).
type memStat struct {
	name, help string
	counter    bool
	eval       func(v []uint64) uint64
}

// memStatNames are the runtime/metrics the go_memstats_* are made of.
var memStatNames = []string{
	"/gc/heap/tiny/allocs:objects",                // 0
	"/gc/heap/allocs:objects",                     // 1
	"/gc/heap/frees:objects",                      // 2
	"/gc/heap/allocs:bytes",                       // 3
	"/gc/heap/objects:objects",                    // 4
	"/gc/heap/goal:bytes",                         // 5
	"/memory/classes/total:bytes",                 // 6
	"/memory/classes/heap/objects:bytes",          // 7
	"/memory/classes/heap/unused:bytes",           // 8
	"/memory/classes/heap/released:bytes",         // 9
	"/memory/classes/heap/free:bytes",             // 10
	"/memory/classes/heap/stacks:bytes",           // 11
	"/memory/classes/os-stacks:bytes",             // 12
	"/memory/classes/metadata/mspan/inuse:bytes",  // 13
	"/memory/classes/metadata/mspan/free:bytes",   // 14
	"/memory/classes/metadata/mcache/inuse:bytes", // 15
	"/memory/classes/metadata/mcache/free:bytes",  // 16
	"/memory/classes/profiling/buckets:bytes",     // 17
	"/memory/classes/metadata/other:bytes",        // 18
	"/memory/classes/other:bytes",                 // 19
}

func one(i int) func([]uint64) uint64 { return func(v []uint64) uint64 { return v[i] } }
func sum(is ...int) func([]uint64) uint64 {
	return func(v []uint64) uint64 {
		var n uint64
		for _, i := range is {
			n += v[i]
		}
		return n
	}
}

var memStats = []memStat{
	{"alloc_bytes", "Number of bytes allocated in heap and currently in use. Equals to /memory/classes/heap/objects:bytes.", false, one(7)},
	{"alloc_bytes_total", "Total number of bytes allocated in heap until now, even if released already. Equals to /gc/heap/allocs:bytes.", true, one(3)},
	{"sys_bytes", "Number of bytes obtained from system. Equals to /memory/classes/total:byte.", false, one(6)},
	{"mallocs_total", "Total number of heap objects allocated, both live and gc-ed. Semantically a counter version for go_memstats_heap_objects gauge. Equals to /gc/heap/allocs:objects + /gc/heap/tiny/allocs:objects.", true, sum(1, 0)},
	{"frees_total", "Total number of heap objects frees. Equals to /gc/heap/frees:objects + /gc/heap/tiny/allocs:objects.", true, sum(2, 0)},
	{"heap_alloc_bytes", "Number of heap bytes allocated and currently in use, same as go_memstats_alloc_bytes. Equals to /memory/classes/heap/objects:bytes.", false, one(7)},
	{"heap_sys_bytes", "Number of heap bytes obtained from system. Equals to /memory/classes/heap/objects:bytes + /memory/classes/heap/unused:bytes + /memory/classes/heap/released:bytes + /memory/classes/heap/free:bytes.", false, sum(7, 8, 9, 10)},
	{"heap_idle_bytes", "Number of heap bytes waiting to be used. Equals to /memory/classes/heap/released:bytes + /memory/classes/heap/free:bytes.", false, sum(9, 10)},
	{"heap_inuse_bytes", "Number of heap bytes that are in use. Equals to /memory/classes/heap/objects:bytes + /memory/classes/heap/unused:bytes", false, sum(7, 8)},
	{"heap_released_bytes", "Number of heap bytes released to OS. Equals to /memory/classes/heap/released:bytes.", false, one(9)},
	{"heap_objects", "Number of currently allocated objects. Equals to /gc/heap/objects:objects.", false, one(4)},
	{"stack_inuse_bytes", "Number of bytes obtained from system for stack allocator in non-CGO environments. Equals to /memory/classes/heap/stacks:bytes.", false, one(11)},
	{"stack_sys_bytes", "Number of bytes obtained from system for stack allocator. Equals to /memory/classes/heap/stacks:bytes + /memory/classes/os-stacks:bytes.", false, sum(11, 12)},
	{"mspan_inuse_bytes", "Number of bytes in use by mspan structures. Equals to /memory/classes/metadata/mspan/inuse:bytes.", false, one(13)},
	{"mspan_sys_bytes", "Number of bytes used for mspan structures obtained from system. Equals to /memory/classes/metadata/mspan/inuse:bytes + /memory/classes/metadata/mspan/free:bytes.", false, sum(13, 14)},
	{"mcache_inuse_bytes", "Number of bytes in use by mcache structures. Equals to /memory/classes/metadata/mcache/inuse:bytes.", false, one(15)},
	{"mcache_sys_bytes", "Number of bytes used for mcache structures obtained from system. Equals to /memory/classes/metadata/mcache/inuse:bytes + /memory/classes/metadata/mcache/free:bytes.", false, sum(15, 16)},
	{"buck_hash_sys_bytes", "Number of bytes used by the profiling bucket hash table. Equals to /memory/classes/profiling/buckets:bytes.", false, one(17)},
	{"gc_sys_bytes", "Number of bytes used for garbage collection system metadata. Equals to /memory/classes/metadata/other:bytes.", false, one(18)},
	{"other_sys_bytes", "Number of bytes used for other system allocations. Equals to /memory/classes/other:bytes.", false, one(19)},
	{"next_gc_bytes", "Number of heap bytes when next garbage collection will take place. Equals to /gc/heap/goal:bytes.", false, one(5)},
}

// runtimeGauges are the runtime/metrics the collector's default rules
// expose, with the Prometheus name and unit it gave them; the help is the
// runtime's description with "Sourced from" the metric.
var runtimeGauges = []struct{ metric, name, unit string }{
	{"/gc/gogc:percent", "go_gc_gogc_percent", "percent"},
	{"/gc/gomemlimit:bytes", "go_gc_gomemlimit_bytes", "bytes"},
	{"/sched/gomaxprocs:threads", "go_sched_gomaxprocs_threads", "threads"},
}

// gatherGo adds the Go runtime's metrics.
func gatherGo(g *gatherer) {
	g.gauge("go_goroutines", "Number of goroutines that currently exist.", float64(runtime.NumGoroutine()), nil)
	threads, _ := runtime.ThreadCreateProfile(nil)
	g.gauge("go_threads", "Number of OS threads created.", float64(threads), nil)

	var stats debug.GCStats
	stats.PauseQuantiles = make([]time.Duration, 5)
	debug.ReadGCStats(&stats)
	q := sample{count: uint64(stats.NumGC), value: stats.PauseTotal.Seconds(), bounds: []float64{0, 0.25, 0.5, 0.75, 1}}
	for _, p := range stats.PauseQuantiles {
		q.quants = append(q.quants, p.Seconds())
	}
	g.add("go_gc_duration_seconds", "A summary of the wall-time pause (stop-the-world) duration in garbage collection cycles.", summaryType, q)
	g.gauge("go_memstats_last_gc_time_seconds", "Number of seconds since 1970 of last garbage collection.", float64(stats.LastGC.UnixNano())/1e9, nil)
	g.gauge("go_info", "Information about the Go environment.", 1, []string{"version"}, runtime.Version())

	samples := make([]metrics.Sample, len(memStatNames)+len(runtimeGauges))
	for i, n := range memStatNames {
		samples[i].Name = n
	}
	for i, r := range runtimeGauges {
		samples[len(memStatNames)+i].Name = r.metric
	}
	metrics.Read(samples)
	v := make([]uint64, len(memStatNames))
	for i := range memStatNames {
		if samples[i].Value.Kind() == metrics.KindUint64 {
			v[i] = samples[i].Value.Uint64()
		}
	}
	for _, m := range memStats {
		typ := gaugeType
		if m.counter {
			typ = counterType
		}
		g.add("go_memstats_"+m.name, m.help, typ, sample{value: float64(m.eval(v))})
	}
	descs := map[string]string{}
	for _, d := range metrics.All() {
		descs[d.Name] = d.Description
	}
	for i, r := range runtimeGauges {
		s := samples[len(memStatNames)+i]
		var x float64
		switch s.Value.Kind() {
		case metrics.KindUint64:
			x = float64(s.Value.Uint64())
		case metrics.KindFloat64:
			x = s.Value.Float64()
		default:
			continue // not in this Go
		}
		g.add(r.name, descs[r.metric]+" Sourced from "+r.metric+".", gaugeType, sample{value: x})
		g.fams[r.name].unit = r.unit
	}
}
