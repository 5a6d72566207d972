// Package server is the hub: the one MCP server the LLM client talks to. It
// answers the methods that aggregate upstreams (tools, prompts, resources,
// templates, completion) from raw JSON so that nothing an upstream sends is
// lost, and answers the rest of the protocol (initialize, version
// negotiation, ping, logging/setLevel) itself (server/clients); mcp-go
// supplies the protocol's types and constants.
//
// Clients reach it through faces, on the contract in face.go: a face opens
// a Session for each client with the Peer that reaches it, and hands it
// the client's requests and notifications. The stdio face is here
// (ServeStdio); the HTTP face is package server/mcphttp.
package server
