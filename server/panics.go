package server

// Recovered reports a panic that the hub or one of its faces recovered
// from while serving method (or doing what it names): it is logged once,
// at Error with its stack, and counted (see Panics). Whoever recovered it
// answers the request it broke (-32603) and goes on.
func (h *Hub) Recovered(method string, value any, stack []byte) {
	h.panics.Add(1)
	h.logger.Error("recovered from a panic", "method", method, "panic", value, "stack", string(stack))
}

// Panics is how many panics the hub and its faces recovered from since
// New: a counter that never goes down, for /metrics.
func (h *Hub) Panics() uint64 { return h.panics.Load() }
