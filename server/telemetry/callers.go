package telemetry

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"
)

// The callers of the hub, bounded: never a series per user (a team's
// users would be as many series, and a user's name is the issuer's, not
// the operator's, to choose), but sessions by how their caller signed in,
// and how many distinct callers have sessions open.
var (
	callerSessionsDesc = prometheus.NewDesc("dynamic_mcp_caller_sessions",
		"Open client sessions, by how the caller signed in: jwt (http.auth), token (a static token), none (no token checked), local (stdio or the shared hub's socket).",
		[]string{"kind"}, nil)
	callersDesc = prometheus.NewDesc("dynamic_mcp_callers",
		"Distinct callers (JWT subjects, static tokens) with a session open.", nil, nil)
)

// callerKinds are reported even at 0; a kind not among them is reported
// as "other", so that the label stays bounded.
var callerKinds = []string{"jwt", "token", "none", "local"}

// collectCallers sends the callers' metrics of counts (sessions by kind)
// and distinct (callers).
func collectCallers(ch chan<- prometheus.Metric, counts map[string]int, distinct int) {
	other := 0
	for k, n := range counts {
		if !slices.Contains(callerKinds, k) {
			other += n
		}
	}
	for _, k := range callerKinds {
		ch <- prometheus.MustNewConstMetric(callerSessionsDesc, prometheus.GaugeValue, float64(counts[k]), k)
	}
	if other > 0 {
		ch <- prometheus.MustNewConstMetric(callerSessionsDesc, prometheus.GaugeValue, float64(other), "other")
	}
	ch <- prometheus.MustNewConstMetric(callersDesc, prometheus.GaugeValue, float64(distinct))
}
