package jsonrpc

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// StringValue decodes a raw JSON string; ok is false for any other value.
func StringValue(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	if bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		return string(raw[1 : len(raw)-1]), true
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}
