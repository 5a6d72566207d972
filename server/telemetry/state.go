package telemetry

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

var (
	upstreamStateDesc = prometheus.NewDesc("dynamic_mcp_upstream_state",
		"1 for the state each upstream server is in, 0 for the others.", []string{"group", "server", "state"}, nil)
	upstreamRestartsDesc = prometheus.NewDesc("dynamic_mcp_upstream_restarts_total",
		"Times an upstream server was started or connected to again after its first try (after a crash, an exit or a failed try).",
		[]string{"group", "server"}, nil)
	upstreamDroppedDesc = prometheus.NewDesc("dynamic_mcp_upstream_notifications_dropped_total",
		"Notifications from upstream servers dropped because the hub was not keeping up.", nil, nil)
	sessionsDesc = prometheus.NewDesc("dynamic_mcp_sessions",
		"Open client sessions, by transport (stdio, streamable-http, sse).", []string{"transport"}, nil)
	clientDroppedDesc = prometheus.NewDesc("dynamic_mcp_client_notifications_dropped_total",
		"Notifications dropped for clients that had no room for them.", nil, nil)
)

// states are the values of the state label, every one reported for every
// server so that a series does not come and go with the state.
var states = []upstream.State{upstream.StateStarting, upstream.StateReady, upstream.StateFailed, upstream.StateDisabled, upstream.StateStopped}

// sessionTransports are reported even at 0, for the same reason.
var sessionTransports = []string{"stdio", "streamable-http", "sse"}

// stateCollector reads, at each scrape, what is a state rather than an
// event: the upstreams' states and restarts, the sessions open, and the
// counters others keep.
type stateCollector struct {
	mgr  *upstream.Manager
	opts MetricsOptions
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- upstreamStateDesc
	ch <- upstreamRestartsDesc
	ch <- upstreamDroppedDesc
	if c.opts.Callers != nil {
		ch <- callerSessionsDesc
		ch <- callersDesc
	}
	if c.opts.Sessions != nil {
		ch <- sessionsDesc
	}
	if c.opts.Dropped != nil {
		ch <- clientDroppedDesc
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c.mgr.Servers() {
		group, name := s.Config.Group, s.Config.Name
		state := s.Status().State
		for _, st := range states {
			v := 0.0
			if st == state {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(upstreamStateDesc, prometheus.GaugeValue, v, group, name, st.String())
		}
		ch <- prometheus.MustNewConstMetric(upstreamRestartsDesc, prometheus.CounterValue, float64(s.Restarts()), group, name)
	}
	ch <- prometheus.MustNewConstMetric(upstreamDroppedDesc, prometheus.CounterValue, float64(c.mgr.Dropped()))
	if c.opts.Callers != nil {
		byKind, distinct := c.opts.Callers()
		collectCallers(ch, byKind, distinct)
	}
	if c.opts.Sessions != nil {
		counts := c.opts.Sessions()
		transports := slices.Clone(sessionTransports)
		for t := range counts {
			if !slices.Contains(transports, t) {
				transports = append(transports, t)
			}
		}
		for _, t := range transports {
			ch <- prometheus.MustNewConstMetric(sessionsDesc, prometheus.GaugeValue, float64(counts[t]), t)
		}
	}
	if c.opts.Dropped != nil {
		ch <- prometheus.MustNewConstMetric(clientDroppedDesc, prometheus.CounterValue, float64(c.opts.Dropped()))
	}
}
