package jsonrpc

import (
	"bytes"
	"encoding/json"
)

// IDOf finds the top-level "id" of a message, which may be cut short or
// broken further on, so that a peer can still be answered about it. It
// returns nil when no id comes before the message ends or breaks, when
// a number id is the last of what was read (its digits may go on), or
// when the id cannot be echoed (see echoable).
func IDOf(msg []byte) json.RawMessage {
	d := json.NewDecoder(bytes.NewReader(msg))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return nil
		}
		key, _ := t.(string)
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			return nil
		}
		if key == "id" {
			// A number the message ends on may be cut short itself
			// ("id":12 read as far as "id":1): it would name another
			// request. A string ends at its closing quote.
			if !echoable(v) || v[0] != '"' && d.InputOffset() == int64(len(msg)) {
				return nil
			}
			return v
		}
	}
	return nil
}

// IDOfTail finds the id of a message from its last bytes, for a message
// too large to read whole whose id comes last (`...,"id":7}`). It accepts
// only a number or a string without escapes followed by the closing brace
// of the outermost object, so a nested "id" is never taken for it; nil
// when the end has no such id, or one that cannot be echoed.
func IDOfTail(tail []byte) json.RawMessage {
	b := bytes.TrimRight(tail, " \t\r\n")
	if len(b) == 0 || b[len(b)-1] != '}' {
		return nil
	}
	b = bytes.TrimRight(b[:len(b)-1], " \t\r\n")
	end := len(b)
	i := end - 1
	switch {
	case i >= 0 && b[i] == '"':
		i--
		for i >= 0 && b[i] != '"' && b[i] != '\\' {
			i--
		}
		if i < 0 || b[i] != '"' {
			return nil
		}
	default:
		for i >= 0 && (b[i] >= '0' && b[i] <= '9' || b[i] == '-') {
			i--
		}
		i++
		if i == end {
			return nil
		}
	}
	id := b[i:end]
	if !echoable(id) {
		return nil
	}
	rest := bytes.TrimRight(b[:i], " \t\r\n")
	rest, ok := bytes.CutSuffix(rest, []byte(":"))
	if !ok {
		return nil
	}
	rest, ok = bytes.CutSuffix(bytes.TrimRight(rest, " \t\r\n"), []byte(`"id"`))
	if !ok {
		return nil
	}
	if rest = bytes.TrimRight(rest, " \t\r\n"); len(rest) == 0 || rest[len(rest)-1] != ',' && rest[len(rest)-1] != '{' {
		return nil
	}
	return json.RawMessage(bytes.Clone(id))
}
