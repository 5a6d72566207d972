package transport

import (
	"encoding/json"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// SetParamHeaders gives the stream f, which names the Mcp-Param-* headers
// of a tools/call by its params: a 2026-07-28 server has the arguments
// its tool's schema marks x-mcp-header sent as headers too (SEP-2243), and
// only the upstream package knows the server's tool definitions.
func (s *httpStream) SetParamHeaders(f func(params json.RawMessage) map[string]string) {
	s.mu.Lock()
	s.paramHeaders = f
	s.mu.Unlock()
}

// standardHeaders sets on h what a request of 2026-07-28 or later carries
// in headers beside its body (SEP-2243, "Standard Headers"): Mcp-Method,
// Mcp-Name where the method names something (a tool, a prompt, a
// resource), and a tools/call's Mcp-Param-* headers. A server checks them
// against the body; sessions of an older version send none.
func standardHeaders(h http.Header, version string, body []byte, paramHeaders func(json.RawMessage) map[string]string) {
	if !mcp.RequiresStandardHeaders(version) {
		return
	}
	var method string
	if json.Unmarshal(jsonrpc.Field(body, "method"), &method) != nil || method == "" {
		return // an answer: no method to name
	}
	params := jsonrpc.Field(body, "params")
	for k, v := range mcp.StandardHeaders(version, mcp.MCPMethod(method), params) {
		h.Set(k, v)
	}
	if method == string(mcp.MethodToolsCall) && paramHeaders != nil {
		for k, v := range paramHeaders(params) {
			h.Set(k, v)
		}
	}
}
