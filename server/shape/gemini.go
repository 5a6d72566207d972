// Package shape rewrites tool definitions for clients that accept less
// than MCP allows: a Gemini model's function declarations.
package shape

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strings"
)

// GeminiKeywords are the schema keywords a Gemini function declaration's
// parameters accept: the Schema object of the Gemini API, a subset of
// OpenAPI 3.0 (https://ai.google.dev/api/caching#Schema). Everything else
// is dropped, because the API answers 400 to a declaration that has it:
// $ref, $defs and definitions (references are inlined instead), $schema,
// $id, $comment, additionalProperties, patternProperties, oneOf, allOf,
// not, const (kept as a one-value enum), exclusiveMinimum,
// exclusiveMaximum, examples, if/then/else, dependent*, unevaluated*,
// contentEncoding and contentMediaType. A type list (["string", "null"])
// becomes one type with nullable: true.
var GeminiKeywords = map[string]bool{
	"type": true, "format": true, "title": true, "description": true, "nullable": true,
	"enum": true, "maxItems": true, "minItems": true, "properties": true, "required": true,
	"minProperties": true, "maxProperties": true, "minLength": true, "maxLength": true,
	"pattern": true, "example": true, "anyOf": true, "propertyOrdering": true,
	"default": true, "items": true, "minimum": true, "maximum": true,
}

// maxRefDepth bounds how deep references are inlined: a recursive schema
// is cut there to a bare object.
const maxRefDepth = 8

// GeminiSchema is schema as a Gemini model accepts it: references to
// #/$defs/NAME or #/definitions/NAME inlined, keywords outside
// GeminiKeywords dropped, type lists made nullable types, enum values
// made strings.
func GeminiSchema(schema json.RawMessage) (json.RawMessage, error) {
	var root map[string]any
	if err := json.Unmarshal(schema, &root); err != nil {
		return nil, fmt.Errorf("shape: schema is not a JSON object: %w", err)
	}
	defs := map[string]any{}
	for _, k := range []string{"definitions", "$defs"} {
		if m, ok := root[k].(map[string]any); ok {
			for name, d := range m {
				defs["#/"+k+"/"+name] = d
			}
		}
	}
	out := gemini(root, defs, 0)
	if out["type"] == nil {
		out["type"] = "object"
	}
	return json.Marshal(out)
}

func gemini(s map[string]any, defs map[string]any, depth int) map[string]any {
	if ref, ok := s["$ref"].(string); ok {
		target, found := defs[ref].(map[string]any)
		if !found || depth >= maxRefDepth {
			return map[string]any{"type": "object", "description": describe(s, "(a "+ref+", not expanded further)")}
		}
		merged := map[string]any{}
		for k, v := range target {
			merged[k] = v
		}
		for k, v := range s { // siblings of $ref (description, ...) win
			if k != "$ref" {
				merged[k] = v
			}
		}
		return gemini(merged, defs, depth+1)
	}
	out := map[string]any{}
	for k, v := range s {
		switch k {
		case "properties":
			if m, ok := v.(map[string]any); ok {
				props := map[string]any{}
				for name, p := range m {
					if ps, ok := p.(map[string]any); ok {
						props[name] = gemini(ps, defs, depth)
					}
				}
				out[k] = props
			}
		case "items":
			if is, ok := v.(map[string]any); ok {
				out[k] = gemini(is, defs, depth)
			}
		case "anyOf", "oneOf":
			if list, ok := v.([]any); ok {
				var alts []any
				for _, a := range list {
					if as, ok := a.(map[string]any); ok {
						alts = append(alts, gemini(as, defs, depth))
					}
				}
				out["anyOf"] = alts // oneOf is read as anyOf: the nearest Gemini has
			}
		case "type":
			if list, ok := v.([]any); ok {
				for _, t := range list {
					if t == "null" {
						out["nullable"] = true
					} else if out["type"] == nil {
						out["type"] = t
					}
				}
			} else {
				out[k] = v
			}
		case "const":
			out["enum"] = []any{v}
		default:
			if GeminiKeywords[k] {
				out[k] = v
			}
		}
	}
	if list, ok := out["enum"].([]any); ok {
		geminiEnum(out, list)
	}
	if req, ok := out["required"].([]any); ok {
		props, _ := out["properties"].(map[string]any)
		var kept []any
		for _, r := range req {
			if name, ok := r.(string); ok && props[name] != nil {
				kept = append(kept, name)
			}
		}
		if len(kept) == 0 {
			delete(out, "required")
		} else {
			out["required"] = kept
		}
	}
	return out
}

// geminiEnum sets out's enum to list as Gemini takes it: strings only
// ("enum[] string" in Google's Schema, even for an INTEGER, with format
// enum): a number or boolean becomes its JSON text, a null makes out
// nullable, and a list holding an object or a list, which no string can
// stand for, is dropped with its enum.
func geminiEnum(out map[string]any, list []any) {
	var kept []any
	converted := false
	for _, v := range list {
		switch x := v.(type) {
		case string:
			kept = append(kept, x)
		case nil:
			out["nullable"] = true
		case float64, bool:
			b, _ := json.Marshal(x)
			kept = append(kept, string(b))
			converted = true
		default:
			delete(out, "enum")
			return
		}
	}
	if len(kept) == 0 {
		delete(out, "enum")
		return
	}
	out["enum"] = kept
	if converted && out["format"] == nil {
		out["format"] = "enum"
	}
}

func describe(s map[string]any, note string) string {
	d, _ := s["description"].(string)
	return strings.TrimSpace(d + " " + note)
}

// GeminiName is name as a Gemini function declaration allows it: only
// a-z A-Z 0-9 _ . - (others become _), starting with a letter or _ (else
// _ is put in front), at most 64 characters (a longer name keeps its
// first 55 and a hash of the whole, so two long names stay apart).
func GeminiName(name string) string {
	b := []byte(name)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			b[i] = '_'
		}
	}
	out := string(b)
	if out == "" || !(out[0] >= 'a' && out[0] <= 'z' || out[0] >= 'A' && out[0] <= 'Z' || out[0] == '_') {
		out = "_" + out
	}
	if len(out) > 64 {
		h := fnv.New32a()
		h.Write([]byte(name))
		out = fmt.Sprintf("%s_%08x", out[:55], h.Sum32())
	}
	return out
}
