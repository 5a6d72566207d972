package main

import (
	"context"
	"time"
)

// quietEvery is how often releaseWhenQuiet looks at the CPU time the
// process used, and quietCPU how much of it in one look still counts as
// quiet (1%: pings and timers, not a client's calls).
var (
	quietEvery = 5 * time.Second
	quietCPU   = quietEvery / 100
)

// releaseWhenQuiet calls release each time the process falls quiet after
// work: a look at its CPU time found it busy, the next one quiet. A hub
// serving calls faults in pages of the program file as it goes (64 KB at
// a time: the kernel maps a fault's neighbours too), about 6 MB for a
// run of calls with one upstream, and its heap grows to the collector's
// goal; what it needs again when the next call comes is mapped again
// from the page cache without I/O (a few hundred minor faults, well under
// a millisecond). So a hub waiting for its client, which is most of a
// desktop hub's life, shows what it holds, not what its last burst
// touched (docs/performance.md). It reads the clock and the CPU time
// only: nothing on the path of a call. It returns when ctx is done.
func releaseWhenQuiet(ctx context.Context, cpuTime func() time.Duration, release func()) {
	if cpuTime == nil {
		return
	}
	t := time.NewTicker(quietEvery)
	defer t.Stop()
	last, busy := cpuTime(), false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := cpuTime()
		used := now - last
		last = now
		switch {
		case used > quietCPU:
			busy = true
		case busy:
			busy = false
			release()
			last = cpuTime() // the release's own collection is not work
		}
	}
}
