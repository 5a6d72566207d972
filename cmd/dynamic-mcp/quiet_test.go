package main

import (
	"context"
	"testing"
	"time"
)

// releaseWhenQuiet releases once each time the process falls quiet after
// work, and not again while it stays quiet or while it is busy.
func TestReleaseWhenQuietReleasesOnceAfterWork(t *testing.T) {
	look, _, releases, stop := watchQuiet(t)
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
	stop()
	if n := releases(); n != 2 {
		t.Fatalf("released %d times after two runs of work, want 2", n)
	}
}

// A process that stays quiet but whose resident memory grew by more
// than quietGrowth since the last release (work that cost little CPU
// mapped pages in) is given back too, once; less growth is left alone.
func TestReleaseWhenQuietReleasesWhatGrewWhileQuiet(t *testing.T) {
	look, grow, releases, stop := watchQuiet(t)
	grow(8 << 20)
	look(0) // at its start: 8 MB resident
	grow(quietGrowth / 2)
	look(0) // quiet, grew by less than quietGrowth
	if n := releases(); n != 0 {
		t.Fatalf("released %d times after a small growth", n)
	}
	grow(quietGrowth)
	look(0) // quiet, grew by more: released, then it reads the CPU time again
	look(0)
	if n := releases(); n != 1 {
		t.Fatalf("released %d times after growing while quiet, want 1", n)
	}
	look(0) // the release's size is the new base: nothing grew since
	grow(quietGrowth / 2)
	look(0)
	stop()
	if n := releases(); n != 1 {
		t.Fatalf("released %d times, want 1", n)
	}
}

// watchQuiet runs releaseWhenQuiet on a CPU time and a resident size the
// test gives at each look: look(used) lets one look happen, used more CPU
// time than the last, the resident size grown by what grow added since;
// releases counts the releases so far; stop ends it.
func watchQuiet(t *testing.T) (look func(used time.Duration), grow func(bytes uint64), releases func() int, stop func()) {
	t.Helper()
	every := quietEvery
	quietEvery = time.Millisecond
	t.Cleanup(func() { quietEvery = every })
	type usage struct {
		cpu time.Duration
		rss uint64
	}
	cpu := make(chan usage)
	var rss uint64 // what the look last gave: read on releaseWhenQuiet's goroutine only
	released := make(chan struct{}, 10)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		releaseWhenQuiet(ctx, func() time.Duration {
			select {
			case v := <-cpu:
				rss = v.rss
				return v.cpu
			case <-ctx.Done():
				return 0
			}
		}, func() uint64 { return rss }, func() { released <- struct{}{} })
	}()
	var now usage
	look = func(used time.Duration) {
		t.Helper()
		now.cpu += used
		select {
		case cpu <- now:
		case <-time.After(time.Minute):
			t.Fatal("releaseWhenQuiet did not look at the CPU time")
		}
	}
	grow = func(bytes uint64) { now.rss += bytes }
	return look, grow, func() int { return len(released) }, func() { cancel(); <-done }
}
