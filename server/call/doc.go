// Package call is the contract of the call chain: a tools/call,
// prompts/get or resources/read on its way to an upstream server is one
// Call value, handed through an ordered list of stages (audit, argument
// checks, policy, rate limits, approvals, ...), each a concern in a
// package of its own, to the Handler at the end that sends it upstream.
//
// It is the shape of go-sdk's Middleware (mcp/shared.go: a MethodHandler
// wrapped by functions from MethodHandler to MethodHandler) and of caddy's
// MiddlewareHandler (ServeHTTP(w, r, next)): a Stage is handed the Call
// and the next Handler, and may answer itself (a block, a rate limit, an
// invalid argument) or call next and look at what comes back.
//
// Every request of a client is a Call from where the hub reads it: the
// request stages (the audit trail's writer, the result budget, the era's
// checks: server/chain.go, newRequestChain) see every one; the call
// stages those the view routed upstream. What every request to
// an upstream goes through, whoever sends it (per-user sign-in,
// redaction), is a HopStage, handed a Hop.
//
// The package does no I/O but the log line of ToolFailures (to the
// logger it is given), and imports only the pure policy package, the
// audit record (server/audit/record), types/* and mcp-go's mcp (the
// client's capabilities, Session.Capabilities): a stage package
// imports it, upstream, types/* and the concern packages it builds on
// (rounds asks through approve, resultcap reads era), never the hub
// (server), so that no concern can reach back into the hub and, through
// it, into every other.
//
// It imports no upstream (a test says so): the chain ends in
// upstream.Server.RequestOn(ctx, owner, ...), and a Call's route holds
// the server itself as an Upstream, the interface of exactly what the
// stages and the observers use of it (its config, the protocol version it
// agreed, which observers are told of a hop, and that request), which
// *upstream.Server satisfies; its owner and the connection it went on are the types both
// share (types/owner). The server itself, not a name: a name would be
// looked up again at the end of the chain and by every stage that keeps
// something per server (progress, tasks, the rounds), and could name a
// server a reload has replaced meanwhile.
package call
