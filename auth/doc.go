// Package auth signs dynamic-mcp in to OAuth-protected upstream servers and
// keeps it signed in: discovery (RFC 9728, RFC 8414, OpenID) and dynamic
// client registration (RFC 7591) with the hub's own code (discover.go), the
// authorization code flow with PKCE S256 and the resource parameter (RFC
// 8707) through golang.org/x/oauth2, a loopback redirect with state and
// issuer (RFC 9207) checks, a token store of one file per server, and
// refresh before expiry. Every URL learned from a server must be https (or
// loopback), and no request is dialed to link-local or cloud metadata
// addresses.
package auth
