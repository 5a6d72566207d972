package jsonrpc

import (
	"sync"
	"time"
)

// workerIdle is how long a worker waits for more work before it ends.
const workerIdle = 10 * time.Second

// Workers runs funcs each on a goroutine of its own, reusing goroutines
// that have finished one: a goroutine whose stack has grown to a request
// handler's depth serves the next request, instead of a new goroutine
// growing its stack again (a tenth of the hub's CPU per call when every
// request had a new goroutine). Workers that wait workerIdle for work end,
// so an idle hub keeps none.
type Workers struct {
	jobs     chan func()
	stop     chan struct{}
	stopOnce sync.Once
}

// NewWorkers is a pool with no goroutine yet.
func NewWorkers() *Workers { return &Workers{jobs: make(chan func()), stop: make(chan struct{})} }

// Stop ends the waiting workers; those running end after their func.
func (w *Workers) Stop() { w.stopOnce.Do(func() { close(w.stop) }) }

// Go runs f on a waiting worker, or on a new one when none waits.
func (w *Workers) Go(f func()) {
	select {
	case w.jobs <- f:
	default:
		go w.run(f)
	}
}

func (w *Workers) run(f func()) {
	t := time.NewTimer(workerIdle)
	defer t.Stop()
	for {
		f()
		t.Reset(workerIdle)
		select {
		case f = <-w.jobs:
		case <-t.C:
			return
		case <-w.stop:
			return
		}
	}
}
