// Package transport holds what the MCP library lacks for talking to
// upstream servers: supervision of stdio child processes (process groups,
// stderr into the logger, the close ladder) and the HTTP transports' setup.
// The JSON-RPC framing itself is mcp-go's.
package transport
