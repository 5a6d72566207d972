package validateargs

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/dynamic-mcp/dynamic-mcp/server/internal/jsonschema"
)

// decodeArgs is a call's arguments as the schema check reads them: what
// jsonschema.UnmarshalJSON makes of them (objects as map[string]any,
// numbers as json.Number, one value and nothing after it), without a
// json.Decoder, whose struct and read buffer were most of what a checked
// call allocated (issue 33: a call's garbage brings the next collection
// nearer, and the heap's size right after a run of calls is that of the
// collector's goal). Arguments that are not one JSON value are left to
// jsonschema.UnmarshalJSON, for its error.
func decodeArgs(raw []byte) (any, error) {
	if !json.Valid(raw) {
		return jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	}
	d := argsDecoder{b: raw}
	return d.value(), nil
}

// argsDecoder reads a value of a document json.Valid has accepted, so
// it need not check its syntax again.
type argsDecoder struct {
	b []byte
	i int
}

func (d *argsDecoder) space() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *argsDecoder) value() any {
	d.space()
	switch c := d.b[d.i]; c {
	case '{':
		m := map[string]any{}
		d.i++
		for {
			d.space()
			if d.b[d.i] == '}' {
				d.i++
				return m
			}
			if d.b[d.i] == ',' {
				d.i++
				d.space()
			}
			k := d.str()
			d.space()
			d.i++ // ':'
			m[k] = d.value()
		}
	case '[':
		a := []any{}
		d.i++
		for {
			d.space()
			if d.b[d.i] == ']' {
				d.i++
				return a
			}
			if d.b[d.i] == ',' {
				d.i++
			}
			a = append(a, d.value())
		}
	case '"':
		return d.str()
	case 't':
		d.i += 4
		return true
	case 'f':
		d.i += 5
		return false
	case 'n':
		d.i += 4
		return nil
	}
	start := d.i
	for d.i < len(d.b) && isNumberByte(d.b[d.i]) {
		d.i++
	}
	return json.Number(d.b[start:d.i])
}

// str reads a string at d.i: its bytes when it has no escape and is valid
// UTF-8, else as encoding/json unquotes it (escapes, and U+FFFD for
// invalid UTF-8 and lone surrogates).
func (d *argsDecoder) str() string {
	start := d.i
	d.i++
	plain := true
	for d.b[d.i] != '"' {
		if d.b[d.i] == '\\' {
			plain = false
			d.i++
		}
		d.i++
	}
	d.i++
	tok := d.b[start:d.i]
	if body := tok[1 : len(tok)-1]; plain && utf8.Valid(body) {
		return string(body)
	}
	var s string
	_ = json.Unmarshal(tok, &s) // a string token json.Valid accepted
	return s
}

func isNumberByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}
