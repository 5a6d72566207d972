package main

import (
	"context"
	"testing"
	"time"
)

// releaseWhenQuiet releases once each time the process falls quiet after
// work, and not again while it stays quiet or while it is busy.
func TestReleaseWhenQuietReleasesOnceAfterWork(t *testing.T) {
	every := quietEvery
	quietEvery = time.Millisecond
	t.Cleanup(func() { quietEvery = every })
	cpu := make(chan time.Duration)
	released := make(chan struct{}, 10)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		releaseWhenQuiet(ctx, func() time.Duration {
			select {
			case v := <-cpu:
				return v
			case <-ctx.Done():
				return 0
			}
		}, func() { released <- struct{}{} })
	}()
	var now time.Duration
	look := func(used time.Duration) {
		t.Helper()
		now += used
		select {
		case cpu <- now:
		case <-time.After(time.Minute):
			t.Fatal("releaseWhenQuiet did not look at the CPU time")
		}
	}
	releases := func() int { return len(released) }

	look(0)            // at its start
	look(quietCPU / 2) // quiet from the start: nothing to give back
	look(3 * quietCPU) // busy
	look(2 * quietCPU) // still busy
	if n := releases(); n != 0 {
		t.Fatalf("released %d times while busy", n)
	}
	look(quietCPU / 2) // quiet after work: released, then it reads the CPU time again
	look(0)
	if n := releases(); n != 1 {
		t.Fatalf("released %d times after falling quiet, want 1", n)
	}
	look(0) // still quiet
	look(quietCPU / 3)
	look(5 * quietCPU) // busy again
	look(0)            // quiet: released again
	look(0)
	look(0)
	cancel()
	<-done
	if n := releases(); n != 2 {
		t.Fatalf("released %d times after two runs of work, want 2", n)
	}
}
