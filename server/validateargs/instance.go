package validateargs

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/dynamic-mcp/dynamic-mcp/server/internal/jsonschema"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// instance decodes a call's arguments as the validator reads them, as
// jsonschema.UnmarshalJSON does (objects map[string]any, arrays []any,
// numbers json.Number, strings, bools and nil), without the
// json.Decoder it makes per call: plain JSON, whose strings hold no
// escape and only valid UTF-8, is decoded here; anything else (an
// escape, invalid UTF-8, bytes that are not JSON, nesting past
// encoding/json's limit) by UnmarshalJSON, so that every instance, and
// every error, is the one UnmarshalJSON would give.
func instance(b []byte) (any, error) {
	d := plain{b: b}
	if v, ok := d.value(0); ok {
		if d.space(); d.i == len(b) {
			return v, nil
		}
	}
	return jsonschema.UnmarshalJSON(bytes.NewReader(b))
}

// maxDepth is encoding/json's limit of nesting: past it the plain decoder
// leaves the bytes to UnmarshalJSON, which refuses them.
const maxDepth = 10000

// plain decodes plain JSON from b[i:]; each method reports false for
// anything else, and the caller falls back.
type plain struct {
	b []byte
	i int
}

func (d *plain) space() { d.i = jsonrpc.SkipSpace(d.b, d.i) }

func (d *plain) value(depth int) (any, bool) {
	d.space()
	if d.i >= len(d.b) {
		return nil, false
	}
	switch d.b[d.i] {
	case '{', '[':
		if depth++; depth > maxDepth { // depth: the containers this one is the last of
			return nil, false
		}
		if d.b[d.i] == '{' {
			return d.object(depth)
		}
		return d.array(depth)
	case '"':
		s, ok := d.str()
		return s, ok
	case 't':
		return true, d.literal("true")
	case 'f':
		return false, d.literal("false")
	case 'n':
		return nil, d.literal("null")
	}
	return d.number()
}

func (d *plain) object(depth int) (any, bool) {
	d.i++ // {
	m := map[string]any{}
	d.space()
	if d.i < len(d.b) && d.b[d.i] == '}' {
		d.i++
		return m, true
	}
	for {
		d.space()
		if d.i >= len(d.b) || d.b[d.i] != '"' {
			return nil, false
		}
		k, ok := d.str()
		if !ok {
			return nil, false
		}
		if d.space(); d.i >= len(d.b) || d.b[d.i] != ':' {
			return nil, false
		}
		d.i++
		v, ok := d.value(depth)
		if !ok {
			return nil, false
		}
		m[k] = v // a key given twice: the last, as encoding/json
		if d.space(); d.i >= len(d.b) {
			return nil, false
		}
		switch d.b[d.i] {
		case ',':
			d.i++
		case '}':
			d.i++
			return m, true
		default:
			return nil, false
		}
	}
}

func (d *plain) array(depth int) (any, bool) {
	d.i++ // [
	a := []any{}
	d.space()
	if d.i < len(d.b) && d.b[d.i] == ']' {
		d.i++
		return a, true
	}
	for {
		v, ok := d.value(depth)
		if !ok {
			return nil, false
		}
		a = append(a, v)
		if d.space(); d.i >= len(d.b) {
			return nil, false
		}
		switch d.b[d.i] {
		case ',':
			d.i++
		case ']':
			d.i++
			return a, true
		default:
			return nil, false
		}
	}
}

// str is a string without escapes or control characters, of valid UTF-8.
func (d *plain) str() (string, bool) {
	end, plain := jsonrpc.SkipString(d.b, d.i)
	if end < 0 || !plain {
		return "", false
	}
	s := d.b[d.i+1 : end-1]
	ascii := true
	for _, c := range s {
		if c < 0x20 {
			return "", false
		}
		ascii = ascii && c < utf8.RuneSelf
	}
	if !ascii && !utf8.Valid(s) {
		return "", false
	}
	d.i = end
	return string(s), true
}

func (d *plain) literal(word string) bool {
	if !bytes.HasPrefix(d.b[d.i:], []byte(word)) {
		return false
	}
	d.i += len(word)
	return true
}

// number is a JSON number (RFC 8259 section 6), as its text.
func (d *plain) number() (any, bool) {
	end, ok := jsonrpc.SkipNumber(d.b, d.i)
	if !ok {
		return nil, false
	}
	n := json.Number(d.b[d.i:end])
	d.i = end
	return n, true
}
