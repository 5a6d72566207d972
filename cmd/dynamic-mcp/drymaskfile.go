package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"io"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"

	"github.com/dynamic-mcp/dynamic-mcp/types/clients"
)

// maskedLines is data, a client's file, split in lines (splitLines) with
// each secret written literally masked (maskSecrets' test) by where it is
// in the file, not by the line it is on: the string value of a key named
// like a secret on the line after its key (JSON written so), or a TOML
// """ string running over several lines, each of its lines masked. The
// file is parsed as JSON (with comments and trailing commas, which
// clients.Standard makes spaces, so that offsets stay), else as TOML;
// one that is neither (a file cut short) is masked line by line alone.
// maskSecrets runs on every line besides, for what the parse could not
// tell (a token in a comment). Each of texts (secretTexts), a secret as
// written where it was found, is masked wherever else it is written: under
// a name that says nothing, in a comment, in the other file of a diff.
func maskedLines(data []byte, texts []string) []string {
	var b strings.Builder
	last := 0
	for _, r := range secretRanges(data) {
		if r[0] < last || r[1] > len(data) { // never, but a mask is no place to panic
			continue
		}
		b.Write(data[last:r[0]])
		for i, part := range strings.Split(string(data[r[0]:r[1]]), "\n") {
			if i > 0 {
				b.WriteByte('\n')
			}
			if strings.TrimSpace(part) != "" {
				b.WriteString(masked)
				if strings.HasSuffix(part, "\r") { // a CRLF line stays one
					b.WriteByte('\r')
				}
			}
		}
		last = r[1]
	}
	b.Write(data[last:])
	var pairs []string // one pass over each line for all texts, not one a text
	for _, t := range texts {
		pairs = append(pairs, t, masked)
	}
	elsewhere := strings.NewReplacer(pairs...)
	lines := splitLines([]byte(b.String()))
	for i, l := range lines {
		lines[i] = maskSecrets(elsewhere.Replace(l))
	}
	return lines
}

// minSecretText is the length below which a secret's text is not looked
// for elsewhere: "abc" would mask every word that holds it.
const minSecretText = 4

// secretTexts are the secrets written literally in files (each parsed as
// maskedLines does) as they are written there, one line of each, longest
// first, so that one holding another is masked whole (a Replacer takes
// the first of its texts that matches).
func secretTexts(files ...[]byte) []string {
	var texts []string
	for _, data := range files {
		for _, r := range secretRanges(data) {
			for _, part := range strings.Split(string(data[r[0]:r[1]]), "\n") {
				part = strings.TrimSpace(part)
				if len(part) >= minSecretText && !strings.Contains(masked, part) {
					texts = append(texts, part)
				}
			}
		}
	}
	slices.SortFunc(texts, func(a, b string) int { return cmp.Or(len(b)-len(a), strings.Compare(a, b)) })
	return slices.Compact(texts)
}

// secretRanges are the byte ranges of data inside the quotes of each
// secret written literally: data parsed as JSON (jsonSecrets), else as
// TOML (tomlSecrets); none when it is neither.
func secretRanges(data []byte) [][2]int {
	if ranges, ok := jsonSecrets(data); ok {
		return ranges
	}
	return tomlSecrets(data)
}

// jsonSecrets are the byte ranges of data, a JSON document (comments and
// trailing commas allowed), inside the quotes of each string that is a
// secret written literally: the value of a key (clients.LiteralSecret
// with that key), or an element of an array (with none). ok is false when
// data is not JSON.
func jsonSecrets(data []byte) (ranges [][2]int, ok bool) {
	if std, err := clients.Standard(data); err == nil && len(std) == len(data) {
		data = std // the same offsets
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	type level struct {
		object bool
		key    string
		isKey  bool // the next string of an object is a key
	}
	var stack []level
	for {
		start := int(dec.InputOffset())
		tok, err := dec.Token()
		if err == io.EOF {
			return ranges, len(stack) == 0
		}
		if err != nil {
			return nil, false
		}
		end := int(dec.InputOffset())
		switch t := tok.(type) {
		case json.Delim:
			if t == '{' || t == '[' {
				stack = append(stack, level{object: t == '{', isKey: t == '{'})
				continue
			}
			stack = stack[:len(stack)-1]
		case string:
			if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].isKey {
				stack[n-1].key, stack[n-1].isKey = t, false
				continue
			}
			key := ""
			if n := len(stack); n > 0 && stack[n-1].object {
				key = stack[n-1].key
			}
			if clients.LiteralSecret(key, t) {
				// The token starts after the space, comma or colon
				// before it; it ends at its closing quote.
				open := start + bytes.IndexByte(data[start:end], '"')
				ranges = append(ranges, [2]int{open + 1, end - 1})
			}
		}
		if n := len(stack); n > 0 && stack[n-1].object {
			stack[n-1].isKey = true // a value done: a key next
		}
	}
}

// tomlSecrets are the byte ranges of data, Codex's TOML, inside the
// quotes of each string that is a secret written literally (as
// jsonSecrets), a multi-line one's over all its lines; none when data is
// not TOML.
func tomlSecrets(data []byte) [][2]int {
	var p unstable.Parser
	p.Reset(data)
	var ranges [][2]int
	var value func(key string, n *unstable.Node)
	value = func(key string, n *unstable.Node) {
		switch n.Kind {
		case unstable.String:
			if clients.LiteralSecret(key, string(n.Data)) {
				raw := p.Raw(n.Raw)
				q := 1
				if bytes.HasPrefix(raw, []byte(`"""`)) || bytes.HasPrefix(raw, []byte(`'''`)) {
					q = 3
				}
				if off := int(n.Raw.Offset); len(raw) >= 2*q {
					ranges = append(ranges, [2]int{off + q, off + len(raw) - q})
				}
			}
		case unstable.Array:
			for it := n.Children(); it.Next(); {
				value("", it.Node())
			}
		case unstable.InlineTable:
			for it := n.Children(); it.Next(); {
				keyValue(it.Node(), value)
			}
		}
	}
	for p.NextExpression() {
		if e := p.Expression(); e.Kind == unstable.KeyValue {
			keyValue(e, value)
		}
	}
	if p.Error() != nil {
		return nil
	}
	return ranges
}

// keyValue calls value with the last part of the key of kv, a TOML
// key = value, and its value.
func keyValue(kv *unstable.Node, value func(string, *unstable.Node)) {
	if kv.Kind != unstable.KeyValue {
		return
	}
	var key string
	for it := kv.Key(); it.Next(); {
		key = string(it.Node().Data)
	}
	value(key, kv.Value())
}
