package upstream

import (
	"bytes"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// paramHeaders names the Mcp-Param-* headers of a tools/call with params
// (SEP-2243): the arguments the tool's definition, as the server listed
// it, marks x-mcp-header, which a 2026-07-28 server over HTTP checks
// against the body. The hub renames tools but never their arguments, and
// the params it sends carry the server's own name for the tool, so the
// server's definition and the client's arguments give the headers the
// server expects whatever the client called the tool.
func (s *Server) paramHeaders(params json.RawMessage) map[string]string {
	var name string
	if json.Unmarshal(jsonrpc.Field(params, "name"), &name) != nil {
		return nil
	}
	var raw json.RawMessage
	s.mu.Lock()
	for _, t := range s.raw.Tools {
		if t.Key == name {
			raw = t.Raw
			break
		}
	}
	s.mu.Unlock()
	if !bytes.Contains(raw, []byte(`"x-mcp-header"`)) {
		return nil
	}
	var tool mcp.Tool
	if json.Unmarshal(raw, &tool) != nil {
		return nil
	}
	return mcp.GenerateParamHeaders(&tool, params)
}
