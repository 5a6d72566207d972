// Package server is the downstream face of dynamic-mcp: the one MCP server
// the LLM client talks to. It answers the methods that aggregate upstreams
// (tools, prompts, resources, templates, completion) from raw JSON so that
// nothing an upstream sends is lost, and leaves the rest of the protocol
// (initialize, version negotiation, ping, logging/setLevel) to mcp-go's
// MCPServer.
package server
