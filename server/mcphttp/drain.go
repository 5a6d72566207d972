package mcphttp

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// errDraining refuses a new session on a Server that drains.
var errDraining = fmt.Errorf("%w: draining", errClosed)

// ErrDraining is what Ready reports while the Server drains.
var ErrDraining = errors.New("draining: this replica is stopping")

// drainPoll is how often Drain looks whether the calls in flight are done.
const drainPoll = 20 * time.Millisecond

// Drain prepares a replica's stop: from now on Ready fails (so that
// /readyz turns 503 and the balancer sends no more), new sessions are
// refused 503, and the GET streams close, so that their clients open
// them again, elsewhere; requests already in flight go on. It returns
// once none is in flight, or with ctx's error when ctx ends first. Close
// ends what is left. Calling it again drains again.
func (s *Server) Drain(ctx context.Context) error {
	s.draining.start()
	t := time.NewTicker(drainPoll)
	defer t.Stop()
	for s.inflight.load() > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

// Ready is nil until Drain is called, ErrDraining after: a health
// component for /readyz.
func (s *Server) Ready() error {
	if s.draining.on() {
		return ErrDraining
	}
	return nil
}

// drain is the Server's draining, started by Drain: no new sessions,
// GET streams close.
type drain struct {
	ch   chan struct{}
	once sync.Once
}

func newDrain() *drain { return &drain{ch: make(chan struct{})} }

func (d *drain) start() { d.once.Do(func() { close(d.ch) }) }

// done is closed once the Server drains.
func (d *drain) done() <-chan struct{} { return d.ch }

func (d *drain) on() bool {
	select {
	case <-d.ch:
		return true
	default:
		return false
	}
}

// stream is closed when a stream of hs is to close because the
// Server drains: a Streamable HTTP session's GET stream, which its client
// opens again (at another replica, with sealed ids). A legacy SSE stream
// is its session and carries its answers: it stays until Close.
func (d *drain) stream(hs *httpSession) <-chan struct{} {
	if hs.transport == "sse" {
		return nil
	}
	return d.ch
}
