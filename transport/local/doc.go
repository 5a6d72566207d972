// Package local is the machine-local transport of the shared hub: the one
// hub running for a config and user listens on a Unix domain socket in a
// directory only that user can open, and each `serve -c FILE` that a
// client starts is a thin bridge to it. It holds the socket's path (a
// hash of the config's absolute path and the uid), the listener that
// admits only peers of the same uid where the OS tells it, the lock that
// makes bridges started at the same instant start one hub, and the one
// line each side says first (Hello and Reply) before the connection
// carries the client's MCP lines unchanged.
//
// Windows has no such socket here yet: Supported is false there and the
// hub runs in the client's process, as with settings.shared: off.
package local
