package main

import (
	"context"
	"errors"
	"os"
	"syscall"
)

// stopSignal is why run's context ended when a signal ended it: its
// cause (context.Cause), so that a stop can tell SIGTERM (drain first)
// from Ctrl-C (stop now).
type stopSignal struct{ os.Signal }

func (s stopSignal) Error() string { return s.Signal.String() + " signal received" }

// Is makes a stop by signal a cancellation, as signal.NotifyContext's is.
func (s stopSignal) Is(target error) bool { return target == context.Canceled }

// terminated reports whether ctx ended by SIGTERM: an orchestrator's (a
// balancer's, systemd's, docker stop's) request to drain.
func terminated(ctx context.Context) bool {
	var s stopSignal
	return errors.As(context.Cause(ctx), &s) && s.Signal == syscall.SIGTERM
}
