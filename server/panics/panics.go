// Package panics counts and logs the panics the hub and its faces recover
// from.
package panics

import (
	"log/slog"
	"sync/atomic"
)

// Counter is the hub's count of recovered panics, and where they are
// logged.
type Counter struct {
	logger *slog.Logger
	n      atomic.Uint64 // recovered panics, ever
}

// New is a counter that logs to logger.
func New(logger *slog.Logger) *Counter { return &Counter{logger: logger} }

// Recovered reports a panic that the hub or one of its faces recovered
// from while serving method (or doing what it names): it is logged once,
// at Error with its stack, and counted (see Count). Whoever recovered it
// answers the request it broke (-32603) and goes on.
func (c *Counter) Recovered(method string, value any, stack []byte) {
	c.n.Add(1)
	c.logger.Error("recovered from a panic", "method", method, "panic", value, "stack", string(stack))
}

// Count is how many panics the hub and its faces recovered from since
// New: a counter that never goes down, for /metrics.
func (c *Counter) Count() uint64 { return c.n.Load() }
