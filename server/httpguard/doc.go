// Package httpguard is who may use the hub's HTTP endpoints and how much
// of them: the checks of Origin, Host and the bearer token (Guard), the
// caller they name (CredentialOf, IdentityOf: a static token's credential
// or, with http.auth, a JWT access token's identity), failed token
// attempts limited per client address, the client's address behind
// trusted balancers (WithClientAddr), and each client's share of the
// face's caps (Shares). It is one implementation for the HTTP face
// (server/mcphttp) and the inspector's own listener, so that both refuse
// alike; it knows nothing of sessions or of MCP.
package httpguard
