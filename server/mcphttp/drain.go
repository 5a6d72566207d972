package mcphttp

import (
	"context"
	"errors"
	"fmt"
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
	s.drainOnce.Do(func() { close(s.draining) })
	t := time.NewTicker(drainPoll)
	defer t.Stop()
	for s.inflight.Load() > 0 {
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
	if s.isDraining() {
		return ErrDraining
	}
	return nil
}

func (s *Server) isDraining() bool {
	select {
	case <-s.draining:
		return true
	default:
		return false
	}
}

// drainingStream is closed when a stream of hs is to close because the
// Server drains: a Streamable HTTP session's GET stream, which its client
// opens again (at another replica, with sealed ids). A legacy SSE stream
// is its session and carries its answers: it stays until Close.
func (s *Server) drainingStream(hs *httpSession) <-chan struct{} {
	if hs.transport == "sse" {
		return nil
	}
	return s.draining
}
