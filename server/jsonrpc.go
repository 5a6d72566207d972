package server

import (
	"bytes"
	"encoding/json"

	"github.com/dynamic-mcp/dynamic-mcp/server/call"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// JSON-RPC and MCP error codes the hub answers with.
const (
	codeInvalidRequest   = jsonrpc.CodeInvalidRequest
	codeMethodNotFound   = jsonrpc.CodeMethodNotFound
	codeInvalidParams    = jsonrpc.CodeInvalidParams
	codeInternalError    = jsonrpc.CodeInternalError
	codeResourceNotFound = jsonrpc.CodeResourceNotFound
	// codePolicyBlocked answers a call a policy rule blocked.
	codePolicyBlocked = call.CodeBlocked
)

// rpcError is an error answer; every error the hub sends a client becomes
// one in jsonrpc.ToError, at the boundary. An upstream's own JSON-RPC
// error is the same type and passes through with its code, message and
// data.
type rpcError = jsonrpc.Error

func errorf(code int, msg string) *rpcError { return jsonrpc.Errorf(code, msg) }

// toolError is a CallToolResult with isError set, for failures of the hub
// itself during a tool call (unknown group, upstream down): the LLM reads
// the reason and can correct itself.
var toolError = call.ToolError

// setField returns obj with key set to value, leaving every other field
// byte for byte as it was.
func setField(obj json.RawMessage, key string, value any) (json.RawMessage, error) {
	v, err := jsonrpc.Marshal(value)
	if err != nil {
		return nil, err
	}
	if string(bytes.TrimSpace(obj)) == "null" {
		obj = json.RawMessage(`{}`)
	}
	return jsonrpc.SetField(obj, key, v)
}
