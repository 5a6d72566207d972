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
// request stages (the era's checks, the result budget) see every one;
// the call stages those the view routed upstream. What every request to
// an upstream goes through, whoever sends it (per-user sign-in,
// redaction), is a HopStage, handed a Hop.
//
// The package does no I/O and imports only the pure policy package,
// upstream and types/*: a stage package imports it, upstream and
// types/*, never the hub (server), so that no concern can reach back
// into another.
//
// It imports upstream on purpose: the chain ends in
// upstream.Server.Request(ctx, owner, ...), so a Call's route holds the
// server itself (Route.Upstream), its owner is upstream's Owner and the
// connection it went on upstream's ConnID. A name in their place would
// be looked up again at the end of the chain and by every stage that
// keeps something per server (progress, tasks, the rounds), and could
// name a server a reload has replaced meanwhile. upstream imports
// neither call nor any stage, so the imports still point down.
package call
