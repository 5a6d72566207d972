package main

import (
	"runtime/debug"
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
