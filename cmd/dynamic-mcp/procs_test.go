package main

import (
	"runtime"
	"testing"
)

// TestFewerProcs holds that a desktop's hub goes down to localProcs
// processors once started unless the user set GOMAXPROCS, whose value
// then stands.
func TestFewerProcs(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(before)
	for _, tc := range []struct {
		env  string
		want int
	}{{"", localProcs}, {"3", 3}} {
		runtime.GOMAXPROCS(3)
		settledProcs(fewerProcs(func(k string) string {
			if k == "GOMAXPROCS" {
				return tc.env
			}
			return ""
		}))
		if got := runtime.GOMAXPROCS(0); got != tc.want {
			t.Errorf("GOMAXPROCS=%q: %d processors, want %d", tc.env, got, tc.want)
		}
	}
}
