package main

import "runtime/debug"

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
// calls a second, keeps Go's default.
const localGCPercent = 75

// lowerHeapGoal sets GOGC to localGCPercent unless the environment sets
// GOGC (a user's GOGC is honoured as Go always does).
func lowerHeapGoal(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(localGCPercent)
	}
}
