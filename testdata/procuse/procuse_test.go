package procuse

import (
	"testing"
	"time"
)

// A thread's schedstat line gives its CPU time, its wait on a run queue
// (the machine's load) and the times it was put on a CPU, in that order.
func TestSchedstatReadsCPUWaitAndSlices(t *testing.T) {
	got := schedstat([]byte("1500000 2500000 7\n"))
	want := Use{CPU: 1500 * time.Microsecond, Wait: 2500 * time.Microsecond, Slices: 7}
	if got != want {
		t.Fatalf("schedstat = %+v, want %+v", got, want)
	}
	if got := schedstat([]byte("1 2\n")); got != (Use{}) {
		t.Fatalf("a line of two fields = %+v, want none", got)
	}
	if d := want.Sub(Use{CPU: time.Millisecond, Wait: time.Millisecond, Slices: 2}); d != (Use{CPU: 500 * time.Microsecond, Wait: 1500 * time.Microsecond, Slices: 5}) {
		t.Fatalf("Sub = %+v", d)
	}
}
