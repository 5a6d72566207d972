package telemetry

import (
	"context"
	"net/http"

	"github.com/dynamic-mcp/dynamic-mcp/types/traffic"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// durationBuckets are the bucket bounds, in seconds, the conventions give
// the MCP duration histograms.
var durationBuckets = []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}

// MetricsOptions say where Metrics reads what the traffic does not tell:
// the hub's sessions. A nil func leaves its metric out.
type MetricsOptions struct {
	// Sessions counts the open client sessions by transport (stdio,
	// streamable-http, sse), at each scrape.
	Sessions func() map[string]int
	// Callers counts the open client sessions by how their caller signed
	// in (jwt, token, none, local), and the distinct callers among them
	// (see callers.go: never a series per user).
	Callers func() (byKind map[string]int, distinct int)
	// Dropped is how many notifications were dropped for clients that had
	// no room for them, ever (routes.Sessions.Dropped).
	Dropped func() uint64
	// Panics is how many panics the hub and its faces recovered from,
	// ever (panics.Counter.Count, server.Hub.Panics's).
	Panics func() uint64
	// AuditLost is how many audit records never reached the trail, ever
	// (audit.Stats.Lost, of every trail the hub opened).
	AuditLost func() uint64
	// RateLimited is how many calls each policy rule's rate limit found
	// over it, ever, by the rule's group ("" for a global rule) and name
	// (server.Hub.RateLimited); RateBuckets the loop guards' counters kept
	// now and those dropped to make room, ever (server.Hub.RateBuckets).
	RateLimited func() map[string]map[string]uint64
	RateBuckets func() (buckets int, evictions uint64)
	// Results are the tool results cut to fit max_result, ever, and of
	// those kept whole the number and bytes now and those evicted early,
	// ever (resultcap.Store.Stats).
	Results func() (cut uint64, kept, bytes int, evicted uint64)
}

// Metrics is a traffic.Observer that keeps the hub's Prometheus metrics,
// its own (never a process-wide registry, so that two hubs in one process,
// as in tests, do not collide). Handler serves them.
type Metrics struct {
	serverOp  histogramVec // mcp_server_operation_duration_seconds
	clientOp  histogramVec // mcp_client_operation_duration_seconds
	decisions counterVec
	received  counterVec // bytes, by peer
	sent      counterVec
	messages  counterVec
	inflight  value

	// The series every call touches, resolved once.
	fromClient, toClient, fromUpstream, toUpstream *value

	mgr     *upstream.Manager
	opts    MetricsOptions
	handler *exposition
}

// NewMetrics builds the metrics of the hub in front of mgr. Its upstream
// and session metrics are read at each scrape; the rest is counted as the
// traffic passes.
func NewMetrics(mgr *upstream.Manager, opts MetricsOptions) *Metrics {
	m := &Metrics{
		mgr:  mgr,
		opts: opts,
		serverOp: newHistogramVec("mcp_server_operation_duration_seconds",
			"MCP request duration as observed by the hub, from the client's request to its answer (mcp.server.operation.duration).",
			durationBuckets, "mcp_method_name", "gen_ai_tool_name", "gen_ai_prompt_name", "group", "status", "error_type", "network_transport"),
		clientOp: newHistogramVec("mcp_client_operation_duration_seconds",
			"MCP request duration as observed by the hub, from its request to an upstream server to the answer (mcp.client.operation.duration).",
			durationBuckets, "mcp_method_name", "gen_ai_tool_name", "group", "server", "error_type", "network_transport"),
		decisions: newCounterVec("dynamic_mcp_policy_decisions_total",
			"Policy decisions on client requests, by group, rule (empty for the default) and action.", "group", "rule", "action"),
		received: newCounterVec("dynamic_mcp_received_bytes_total",
			"Bytes of params and results the hub received, by peer (client or upstream); JSON-RPC envelopes are not counted.", "peer"),
		sent: newCounterVec("dynamic_mcp_sent_bytes_total",
			"Bytes of params and results the hub sent, by peer (client or upstream); JSON-RPC envelopes are not counted.", "peer"),
		messages: newCounterVec("dynamic_mcp_messages_total",
			"Notifications, and requests of upstreams to clients, that passed the hub, by direction and method.", "direction", "mcp_method_name"),
	}
	m.fromClient, m.toClient = m.received.with("client"), m.sent.with("client")
	m.fromUpstream, m.toUpstream = m.received.with("upstream"), m.sent.with("upstream")
	m.handler = &exposition{gather: m.gather}
	return m
}

// gather collects every metric for a scrape.
func (m *Metrics) gather(g *gatherer) {
	for _, v := range []histogramVec{m.serverOp, m.clientOp} {
		v.gather(g)
	}
	for _, v := range []counterVec{m.decisions, m.received, m.sent, m.messages} {
		v.gather(g)
	}
	g.gauge("dynamic_mcp_requests_in_flight", "Client requests being answered.", m.inflight.get(), nil)
	gatherState(g, m.mgr, m.opts)
	gatherHub(g, m.opts)
	gatherRate(g, m.opts)
	gatherResults(g, m.opts)
	gatherGo(g)
	gatherProcess(g)
}

// Handler serves the metrics in the Prometheus text format (or
// OpenMetrics, when the scraper asks for it).
func (m *Metrics) Handler() http.Handler { return m.handler }

// CallStarted counts the request in flight and its bytes.
func (m *Metrics) CallStarted(ctx context.Context, c *traffic.Call) context.Context {
	m.inflight.Inc()
	m.fromClient.Add(float64(len(c.Params)))
	return ctx
}

// CallEnded records the request's duration, outcome and policy decision.
func (m *Metrics) CallEnded(_ context.Context, c *traffic.Call) {
	m.inflight.Dec()
	m.toClient.Add(float64(len(c.Result)))
	tool, prompt := callTarget(c)
	group := c.Group
	if c.Status == traffic.StatusNotFound {
		group = "" // a group named in a call that matched nothing may be invented too
	}
	m.serverOp.with(methodName(c.Method), tool, prompt, group, string(c.Status), errorType(c.Status, c.Err),
		networkTransport(c.Transport)).Observe(c.Duration.Seconds())
	if c.Action != "" {
		m.decisions.with(c.Group, c.Rule, c.Action).Inc()
	}
}

// HopStarted counts the bytes sent upstream.
func (m *Metrics) HopStarted(ctx context.Context, h *traffic.Hop) context.Context {
	m.toUpstream.Add(float64(len(h.Params)))
	return ctx
}

// HopEnded records the hop's duration and outcome.
func (m *Metrics) HopEnded(_ context.Context, h *traffic.Hop) {
	m.fromUpstream.Add(float64(len(h.Result)))
	var tool string
	if h.Method == "tools/call" {
		// The call was routed here, so its target is on this server's list.
		if c := h.Call; c != nil && c.Group == h.Group {
			tool = c.Target
		}
	}
	m.clientOp.with(methodName(h.Method), tool, h.Group, h.Server, hopErrorType(h),
		networkTransport(h.Transport)).Observe(h.Duration.Seconds())
}

// Message counts a notification or an upstream's request, and its bytes.
func (m *Metrics) Message(_ context.Context, msg *traffic.Message) {
	m.messages.with(string(msg.Direction), methodName(msg.Method)).Inc()
	switch msg.Direction {
	case traffic.FromClient:
		m.fromClient.Add(float64(len(msg.Params)))
	case traffic.FromUpstream:
		m.fromUpstream.Add(float64(len(msg.Params)))
		if msg.Request { // passed to the client, whose answer went back up
			m.toClient.Add(float64(len(msg.Params)))
			m.fromClient.Add(float64(len(msg.Result)))
			m.toUpstream.Add(float64(len(msg.Result)))
		}
	}
}

const (
	panicsHelp    = "Panics the hub recovered from (the request that panicked was answered with an error; every other went on)."
	auditLostHelp = "Audit records that never reached the audit trail: its disk failed, or its queue stayed full."
)

// gatherHub reads, at each scrape, the counters the hub keeps of what
// went wrong: panics recovered and audit records lost.
func gatherHub(g *gatherer, opts MetricsOptions) {
	if opts.Panics != nil {
		g.counter("dynamic_mcp_panics_total", panicsHelp, float64(opts.Panics()), nil)
	}
	if opts.AuditLost != nil {
		g.counter("dynamic_mcp_audit_records_lost_total", auditLostHelp, float64(opts.AuditLost()), nil)
	}
}
