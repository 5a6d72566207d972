// Package transport holds what the MCP library lacks for talking to
// upstream servers: supervision of stdio child processes (process groups,
// stderr into the logger, the close ladder) and the HTTP transports' setup
// (bounds on what a server sends, the GET stream of protocol versions
// before 2026-07-28). The JSON-RPC framing is package jsonrpc's on stdio
// and mcp-go's over HTTP.
package transport
