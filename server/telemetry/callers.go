package telemetry

import (
	"slices"
)

// The callers of the hub, bounded: never a series per user (a team's
// users would be as many series, and a user's name is the issuer's, not
// the operator's, to choose), but sessions by how their caller signed in,
// and how many distinct callers have sessions open.
const (
	callerSessionsHelp = "Open client sessions, by how the caller signed in: jwt (http.auth), token (a static token), none (no token checked), local (stdio or the shared hub's socket)."
	callersHelp        = "Distinct callers (JWT subjects, static tokens) with a session open."
)

var callerSessionsLabels = []string{"kind"}

// callerKinds are reported even at 0; a kind not among them is reported
// as "other", so that the label stays bounded.
var callerKinds = []string{"jwt", "token", "none", "local"}

// gatherCallers adds the callers' metrics of counts (sessions by kind)
// and distinct (callers).
func gatherCallers(g *gatherer, counts map[string]int, distinct int) {
	other := 0
	for k, n := range counts {
		if !slices.Contains(callerKinds, k) {
			other += n
		}
	}
	for _, k := range callerKinds {
		g.gauge("dynamic_mcp_caller_sessions", callerSessionsHelp, float64(counts[k]), callerSessionsLabels, k)
	}
	if other > 0 {
		g.gauge("dynamic_mcp_caller_sessions", callerSessionsHelp, float64(other), callerSessionsLabels, "other")
	}
	g.gauge("dynamic_mcp_callers", callersHelp, float64(distinct), nil)
}
