package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// JSON-RPC and MCP error codes the hub answers with.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
	codeMethodNotFound = -32601
	codeInvalidParams  = -32602
	codeInternalError  = -32603
	// codeResourceNotFound is MCP's code for resources/read of an unknown URI.
	codeResourceNotFound = -32002
)

// envelope is the part of a JSON-RPC message the hub routes by. ID stays
// raw so the reply carries exactly the id the client sent.
type envelope struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
}

func (e *envelope) isRequest() bool      { return e.Method != "" && hasID(e.ID) }
func (e *envelope) isNotification() bool { return e.Method != "" && !hasID(e.ID) }

func hasID(id json.RawMessage) bool { return len(id) > 0 && string(id) != "null" }

// rpcError is an error answer; every error the hub sends to the client is
// converted to one here, at the boundary.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

func (e *rpcError) Error() string { return e.Message }

func errorf(code int, msg string) *rpcError { return &rpcError{Code: code, Message: msg} }

// toRPCError converts any error to the answer the client gets. An upstream's
// own JSON-RPC error passes through with its code, message and data.
func toRPCError(err error) *rpcError {
	var re *rpcError
	if errors.As(err, &re) {
		return re
	}
	var ue *upstream.RPCError
	if errors.As(err, &ue) {
		return &rpcError{Code: ue.Code, Message: ue.Message, Data: ue.Data}
	}
	return &rpcError{Code: codeInternalError, Message: err.Error()}
}

var nullID = json.RawMessage("null")

// resultResponse frames a raw result for id without re-encoding it.
func resultResponse(id, result json.RawMessage) []byte {
	var b bytes.Buffer
	b.Grow(len(id) + len(result) + 40)
	b.WriteString(`{"jsonrpc":"2.0","id":`)
	b.Write(id)
	b.WriteString(`,"result":`)
	b.Write(result)
	b.WriteByte('}')
	return b.Bytes()
}

func errorResponse(id json.RawMessage, err *rpcError) []byte {
	if len(id) == 0 {
		id = nullID
	}
	body, mErr := json.Marshal(err)
	if mErr != nil {
		body = []byte(`{"code":-32603,"message":` + strconv.Quote(err.Message) + `}`)
	}
	var b bytes.Buffer
	b.WriteString(`{"jsonrpc":"2.0","id":`)
	b.Write(id)
	b.WriteString(`,"error":`)
	b.Write(body)
	b.WriteByte('}')
	return b.Bytes()
}

// toolError is a CallToolResult with isError set, for failures of the hub
// itself during a tool call (unknown group, upstream down): the LLM reads
// the reason and can correct itself.
func toolError(msg string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{
		"content": []map[string]string{{"type": "text", "text": msg}},
		"isError": true,
	})
	return b
}

// setField returns obj with key set to value, leaving every other field
// byte for byte as it was.
func setField(obj json.RawMessage, key string, value any) (json.RawMessage, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(obj, &fields); err != nil {
		return nil, err
	}
	if fields == nil {
		fields = map[string]json.RawMessage{}
	}
	v, err := json.Marshal(value)
	if err != nil {
		return nil, err
	}
	fields[key] = v
	return json.Marshal(fields)
}
