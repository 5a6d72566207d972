// Package mcphttp is the hub's HTTP face: Streamable HTTP at /mcp and the
// legacy HTTP+SSE transport of protocol 2024-11-05 at /sse and /message
// (MCP spec, basic/transports), for many clients at once, each in a
// session the hub opens through its face contract (server.Host.OpenSession). It
// holds the checks of who may connect (Origin, Host, bearer token: Guard,
// which names the caller's credential: httpguard.CredentialOf) and the limits that keep the hub's memory bounded whatever clients do
// (sessions, bodies, requests in flight, failed token attempts).
//
// Each session runs on one jsonrpc.Conn, over a stream of its own
// (sessionStream): the messages POSTed in, and each message the Conn
// writes routed to the POST of the request it relates to, else the GET
// (or legacy SSE) stream. Admission, answer-once, cancellation and the
// client's answers are the Conn's; this package keeps what must be an
// HTTP status (limits, headers, unknown sessions).
//
// A session belongs to the credential that made it: to any other, its id
// is unknown (404), whatever the method.
//
// With http.auth it is an OAuth 2.1 resource server (MCP spec,
// basic/authorization; server/httpguard): JWT access tokens of the configured
// issuer are let in beside the static tokens, each caller's identity
// (httpguard.IdentityOf) goes with its session to the hub, and the profile its
// claims choose is the one it sees.
//
// Every goroutine it starts is its own: Close ends the sessions and waits
// for them. A request whose handling panics is answered -32603 and logged
// with its stack; every other request and session goes on.
package mcphttp
