package main

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
)

// TestLowerHeapGoal holds that a desktop's hub runs at localGCPercent
// unless the user set GOGC, whose value then stands.
func TestLowerHeapGoal(t *testing.T) {
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)
	for _, tc := range []struct {
		gogc string
		want int
	}{{"", localGCPercent}, {"100", 100}, {"off", 100}} {
		debug.SetGCPercent(100)
		lowerHeapGoal(func(k string) string {
			if k == "GOGC" {
				return tc.gogc
			}
			return ""
		})
		if got := debug.SetGCPercent(100); got != tc.want {
			t.Errorf("GOGC=%q: the collector's percent is %d, want %d", tc.gogc, got, tc.want)
		}
	}
}

// TestHeapHeadroom holds that the HTTP face's goal is its live heap plus
// the headroom, within Go's minimum goal, never below Go's default, and
// that a user's GOGC stands.
func TestHeapHeadroom(t *testing.T) {
	const mb = 1 << 20
	for _, tc := range []struct {
		live uint64
		want int
	}{
		{3 * mb, 475},   // room/live is 533%, whose minimum goal (21 MB) is past 3+16 MB
		{8 * mb, 200},   // room/live
		{16 * mb, 100},  // Go's default from here on
		{100 * mb, 100}, // never below it
	} {
		if got := headroomPercent(tc.live, httpHeapHeadroom); got != tc.want {
			t.Errorf("live %d MB: GOGC %d, want %d", tc.live/mb, got, tc.want)
		}
	}
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)
	// After a collection: this process's live heap, and room enough that
	// the percent must rise.
	runtime.GC()
	h := &headroom{room: 1 << 40, percent: 100, live: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
	h.adjust()
	if got := debug.SetGCPercent(100); got <= 100 || got != h.percent {
		t.Errorf("after adjust the collector's percent is %d (adjust's %d), want it past 100", got, h.percent)
	}
	// A user's GOGC stands: nothing is armed.
	heapHeadroom(func(string) string { return "150" }, 1<<40)
	runtime.GC()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("with GOGC set by the user the collector's percent became %d", got)
	}
}
