package telemetry

import (
	"slices"

	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

const (
	upstreamStateHelp    = "1 for the state each upstream server is in, 0 for the others."
	upstreamRestartsHelp = "Times an upstream server was started or connected to again after its first try (after a crash, an exit or a failed try)."
	upstreamDroppedHelp  = "Notifications from upstream servers dropped because the hub was not keeping up."
	sessionsHelp         = "Open client sessions, by transport (stdio, streamable-http, sse)."
	clientDroppedHelp    = "Notifications dropped for clients that had no room for them."
)

var (
	upstreamStateLabels    = []string{"group", "server", "state"}
	upstreamRestartsLabels = []string{"group", "server"}
	sessionsLabels         = []string{"transport"}
)

// states are the values of the state label, every one reported for every
// server so that a series does not come and go with the state.
var states = []upstream.State{upstream.StateStarting, upstream.StateReady, upstream.StateFailed, upstream.StateDisabled, upstream.StateStopped}

// sessionTransports are reported even at 0, for the same reason.
var sessionTransports = []string{"stdio", "streamable-http", "sse"}

// gatherState reads, at each scrape, what is a state rather than an
// event: the upstreams' states and restarts, the sessions open, and the
// counters others keep.
func gatherState(g *gatherer, mgr *upstream.Manager, opts MetricsOptions) {
	for _, s := range mgr.Servers() {
		group, name := s.Config.Group, s.Config.Name
		state := s.Status().State
		for _, st := range states {
			v := 0.0
			if st == state {
				v = 1
			}
			g.gauge("dynamic_mcp_upstream_state", upstreamStateHelp, v, upstreamStateLabels, group, name, st.String())
		}
		g.counter("dynamic_mcp_upstream_restarts_total", upstreamRestartsHelp, float64(s.Restarts()), upstreamRestartsLabels, group, name)
	}
	g.counter("dynamic_mcp_upstream_notifications_dropped_total", upstreamDroppedHelp, float64(mgr.Dropped()), nil)
	if opts.Callers != nil {
		byKind, distinct := opts.Callers()
		gatherCallers(g, byKind, distinct)
	}
	if opts.Sessions != nil {
		counts := opts.Sessions()
		transports := slices.Clone(sessionTransports)
		for t := range counts {
			if !slices.Contains(transports, t) {
				transports = append(transports, t)
			}
		}
		for _, t := range transports {
			g.gauge("dynamic_mcp_sessions", sessionsHelp, float64(counts[t]), sessionsLabels, t)
		}
	}
	if opts.Dropped != nil {
		g.counter("dynamic_mcp_client_notifications_dropped_total", clientDroppedHelp, float64(opts.Dropped()), nil)
	}
}
