package server

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strconv"
)

// page returns one page of items as the result of a list method:
// {"<field>": [...], "nextCursor": "..."}. Cursors are opaque to the client:
// base64 of the offset.
func page(field string, items []json.RawMessage, params json.RawMessage, size int) (json.RawMessage, error) {
	var p struct {
		Cursor string `json:"cursor"`
	}
	if len(params) > 0 {
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, errorf(codeInvalidParams, "invalid params: "+err.Error())
		}
	}
	start := 0
	if p.Cursor != "" {
		raw, err := base64.RawURLEncoding.DecodeString(p.Cursor)
		n, err2 := strconv.Atoi(string(raw))
		if err != nil || err2 != nil || n < 0 || n > len(items) {
			return nil, errorf(codeInvalidParams, "invalid cursor")
		}
		start = n
	}
	end := min(start+size, len(items))
	var b bytes.Buffer
	b.WriteString(`{"`)
	b.WriteString(field)
	b.WriteString(`":[`)
	for i, it := range items[start:end] {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(it)
	}
	b.WriteByte(']')
	if end < len(items) {
		b.WriteString(`,"nextCursor":"`)
		b.WriteString(base64.RawURLEncoding.EncodeToString([]byte(strconv.Itoa(end))))
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
