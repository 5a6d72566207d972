package jsonrpc

import (
	"runtime/debug"
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
// so an idle hub keeps none. A func that panics is recovered: the worker
// goes on, and Panicked hears of it.
type Workers struct {
	// Panicked hears of a func that panicked, with its stack; nil: ignored.
	// Set it before the first Go.
	Panicked func(v any, stack []byte)

	jobs     chan func()
	stop     chan struct{}
	stopOnce sync.Once
	running  sync.WaitGroup // every worker goroutine
}

// NewWorkers is a pool with no goroutine yet.
func NewWorkers() *Workers { return &Workers{jobs: make(chan func()), stop: make(chan struct{})} }

// Stop ends the waiting workers; those running end after their func.
func (w *Workers) Stop() { w.stopOnce.Do(func() { close(w.stop) }) }

// Wait waits until every worker has ended; call it after Stop, once no
// more Go can come.
func (w *Workers) Wait() { w.running.Wait() }

// Go runs f on a waiting worker, or on a new one when none waits.
func (w *Workers) Go(f func()) {
	select {
	case w.jobs <- f:
	default:
		w.running.Add(1)
		go w.run(f)
	}
}

func (w *Workers) run(f func()) {
	defer w.running.Done()
	t := time.NewTimer(workerIdle)
	defer t.Stop()
	for {
		w.safely(f)
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

func (w *Workers) safely(f func()) {
	defer func() {
		if v := recover(); v != nil && w.Panicked != nil {
			w.Panicked(v, debug.Stack())
		}
	}()
	f()
}
