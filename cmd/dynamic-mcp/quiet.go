package main

import (
	"context"
	"time"
)

// quietEvery is how often releaseWhenQuiet looks at the CPU time the
// process used, and quietCPU how much of it in one look still counts as
// quiet (1%: pings and timers, not a client's calls). quietGrowth is how
// much the resident memory may grow, while the process stays quiet,
// before it is given back anyway: work that costs little CPU can still
// map in megabytes (the config watcher's first look after start re-reads
// the pins the start wrote: 3.7 MB of the program file's pages, in 5 ms
// of CPU), while what the looks themselves and the idle timers touch
// again after a release is well under 1 MB (measured: 0.7 MB in 15 s).
var (
	quietEvery  = 5 * time.Second
	quietCPU    = quietEvery / 100
	quietGrowth = uint64(2 << 20)
)

// releaseWhenQuiet calls release each time the process falls quiet after
// work: a look at its CPU time found it busy, the next one quiet; or, at
// a quiet look, when its resident memory (resident, nil: not looked at)
// grew by more than quietGrowth since the last release. A hub
// serving calls faults in pages of the program file as it goes (64 KB at
// a time: the kernel maps a fault's neighbours too), about 6 MB for a
// run of calls with one upstream, and its heap grows to the collector's
// goal; what it needs again when the next call comes is mapped again
// from the page cache without I/O (a few hundred minor faults, well under
// a millisecond). So a hub waiting for its client, which is most of a
// desktop hub's life, shows what it holds, not what its last burst
// touched (docs/performance.md). It reads the clock, the CPU time and
// the resident size only: nothing on the path of a call. It returns when
// ctx is done.
func releaseWhenQuiet(ctx context.Context, cpuTime func() time.Duration, resident func() uint64, release func()) {
	if cpuTime == nil {
		return
	}
	if resident == nil {
		resident = func() uint64 { return 0 }
	}
	t := time.NewTicker(quietEvery)
	defer t.Stop()
	last, busy, base := cpuTime(), false, resident()
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
		case busy || resident() > base+quietGrowth:
			busy = false
			release()
			last = cpuTime() // the release's own collection is not work
			base = resident()
		}
	}
}
