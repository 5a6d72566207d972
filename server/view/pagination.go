package view

import (
	"encoding/base64"
	"encoding/json"
	"strconv"

	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// Page returns one page of items as the result of a list method:
// {"<field>": [...], "nextCursor": "..."}. Cursors are opaque to the client:
// base64 of the offset.
func Page(field string, items []json.RawMessage, params json.RawMessage, size int) (json.RawMessage, error) {
	var p struct {
		Cursor string `json:"cursor"`
	}
	if len(params) > 0 {
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: "+err.Error())
		}
	}
	start := 0
	if p.Cursor != "" {
		raw, err := base64.RawURLEncoding.DecodeString(p.Cursor)
		n, err2 := strconv.Atoi(string(raw))
		if err != nil || err2 != nil || n < 0 || n > len(items) {
			return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid cursor")
		}
		start = n
	}
	end := min(start+size, len(items))
	next := ""
	if end < len(items) {
		next = base64.RawURLEncoding.EncodeToString([]byte(strconv.Itoa(end)))
	}
	return ListResult(field, items[start:end], next), nil
}

// ListResult frames a list result around raw items, spliced as they are:
// {"<field>":[...]}, with "nextCursor" when next is not empty.
func ListResult(field string, items []json.RawMessage, next string) json.RawMessage {
	n := len(field) + len(next) + 32
	for _, it := range items {
		n += len(it) + 1
	}
	b := make([]byte, 0, n)
	b = append(append(append(b, `{"`...), field...), `":[`...)
	for i, it := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, it...)
	}
	b = append(b, ']')
	if next != "" {
		b = append(append(append(b, `,"nextCursor":"`...), next...), '"')
	}
	return append(b, '}')
}
