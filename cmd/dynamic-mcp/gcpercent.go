package main

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
)

// localGCPercent is the collector's GOGC for a hub that serves a desktop's
// clients (standalone over stdio, or the shared hub over its socket),
// where the user set none. With one or a few clients the live heap is
// about 1 MB, so the heap's size is the collector's minimum goal, 4 MB at
// Go's default of 100 and 4 MB x GOGC/100 below it: at 75 the hub holds
// about 1 MB less right after a run of calls (docs/performance.md, the
// seed's < 10 MB). The collections it adds (about 1.5 as many) are paid
// for by what a call no longer allocates (the policy's and the schema
// check's decodes, a fifth of its bytes): measured with main's build,
// three hubs of each interleaved call by call, CPU a call from /proc
// 0.99-1.02 of main's (0.98 of main's once main read arguments without
// decoding); GOGC=50 (another 1 MB) cost 14-16% more and is not used.
// BenchmarkHeapGoal measures 100, 75 and 50 on one build.
// The HTTP face, whose heap grows with its sessions and whose figure is
// calls a second, collects with a headroom instead (httpHeapHeadroom).
const localGCPercent = 75

// lowerHeapGoal sets GOGC to localGCPercent unless the environment sets
// GOGC (a user's GOGC is honoured as Go always does).
func lowerHeapGoal(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(localGCPercent)
	}
}

// httpHeapHeadroom is how far the HTTP face's heap may grow past what is
// live before the collector runs, where the user set no GOGC. At Go's
// default the goal is twice the live heap, at least 4 MB: with a few
// sessions (a live heap of 2-4 MB) it collected every few hundred calls,
// a tenth of the face's CPU a call. With the headroom the face's CPU a call
// at 32 in flight is about 0.78 of what it was, its RSS 27-29 MB against
// 14 (8 MB gained less, and scattered more). A fixed headroom, not a
// larger GOGC, so that a face whose heap grows with its sessions is not
// let grow by a multiple of it: past a live heap of httpHeapHeadroom, Go's
// default applies. Measured in docs/performance.md (its decisions,
// "Streamable HTTP").
const httpHeapHeadroom = 16 << 20

// heapHeadroom keeps the collector's goal at about the live heap plus room
// (GOGC set after each collection), never below Go's default, unless the
// environment sets GOGC.
func heapHeadroom(getenv func(string) string, room uint64) {
	if getenv("GOGC") != "" || !headroomArmed.CompareAndSwap(false, true) {
		return
	}
	h := &headroom{room: room, percent: 100, live: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
	h.arm()
}

// headroomArmed is set once heapHeadroom has armed: one process's serves
// (a test's, in process) share one.
var headroomArmed atomic.Bool

// headroom is heapHeadroom's state, read and set once a collection.
type headroom struct {
	room    uint64
	percent int
	live    []metrics.Sample
}

// gcSentinel is an object nothing keeps: its cleanup runs once a
// collection has found it unreachable. (It holds a pointer so that it is
// not one of the tiny objects allocated together, freed together.)
type gcSentinel struct{ _ *byte }

// arm runs adjust after the next collection, and arms again then.
func (h *headroom) arm() {
	runtime.AddCleanup(&gcSentinel{}, func(h *headroom) { h.adjust(); h.arm() }, h)
}

// adjust sets GOGC for the live heap the last collection left.
func (h *headroom) adjust() {
	metrics.Read(h.live)
	if live := h.live[0].Value.Uint64(); live > 0 {
		if p := headroomPercent(live, h.room); p != h.percent {
			h.percent = p
			debug.SetGCPercent(p)
		}
	}
}

// headroomPercent is the GOGC whose goal is live plus room bytes: room/live
// as a percent, but no more than keeps Go's minimum goal (4 MB x GOGC/100)
// within live plus room, and never below Go's default of 100.
func headroomPercent(live, room uint64) int {
	return max(100, int(min(room*100/live, (live+room)*100/(4<<20))))
}
