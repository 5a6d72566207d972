package shape

import (
	"encoding/json"
	"testing"
)

// schemaFields are the fields of Google's Schema object
// (https://ai.google.dev/api/caching#Schema), written out here rather than
// taken from GeminiKeywords, so that the test does not check the shaper
// against its own list (cmd/dynamic-mcp/gemini_test.go holds the hub's
// output to the same, with the sources).
var schemaFields = map[string]bool{
	"anyOf": true, "default": true, "description": true, "enum": true, "example": true,
	"format": true, "items": true, "maximum": true, "maxItems": true, "maxLength": true,
	"maxProperties": true, "minimum": true, "minItems": true, "minLength": true,
	"minProperties": true, "nullable": true, "pattern": true, "properties": true,
	"propertyOrdering": true, "required": true, "title": true, "type": true,
}

// ValidGemini reports the first place where schema breaks the rules
// GeminiSchema promises, "" when it keeps them all.
func validGemini(s any, at string) string {
	m, ok := s.(map[string]any)
	if !ok {
		return at + ": not an object"
	}
	for k, v := range m {
		if !schemaFields[k] {
			return at + ": keyword " + k
		}
		switch k {
		case "type":
			switch v {
			case "string", "number", "integer", "boolean", "array", "object":
			default:
				return at + ": type " + jsonString(v)
			}
		case "properties":
			props, ok := v.(map[string]any)
			if !ok {
				return at + ": properties not a map"
			}
			for name, p := range props {
				if bad := validGemini(p, at+".properties."+name); bad != "" {
					return bad
				}
			}
		case "items":
			if bad := validGemini(v, at+".items"); bad != "" {
				return bad
			}
		case "anyOf":
			for _, a := range v.([]any) {
				if bad := validGemini(a, at+".anyOf"); bad != "" {
					return bad
				}
			}
		}
	}
	return ""
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// A schema with $defs, a recursive reference, a type list, const, oneOf
// and keywords Gemini refuses comes out inlined and within the rules.
func TestGeminiSchema(t *testing.T) {
	in := `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","additionalProperties":false,
	"$defs":{"point":{"type":"object","properties":{"x":{"type":"number","exclusiveMinimum":0},"next":{"$ref":"#/$defs/point"}},"required":["x"]}},
	"properties":{"at":{"$ref":"#/$defs/point","description":"where"},"name":{"type":["string","null"]},"kind":{"const":"a"},
	"shape":{"oneOf":[{"type":"string"},{"type":"integer"}]},"ghost":{"$ref":"#/$defs/missing"}},"required":["at","gone"]}`
	out, err := GeminiSchema(json.RawMessage(in))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if bad := validGemini(got, "$"); bad != "" {
		t.Fatalf("%s in %s", bad, out)
	}
	props := got["properties"].(map[string]any)
	at := props["at"].(map[string]any)
	if at["description"] != "where" || at["properties"].(map[string]any)["x"].(map[string]any)["type"] != "number" {
		t.Errorf("reference not inlined: %s", out)
	}
	if n := props["name"].(map[string]any); n["type"] != "string" || n["nullable"] != true {
		t.Errorf("type list: %v", n)
	}
	if k := props["kind"].(map[string]any); jsonString(k["enum"]) != `["a"]` {
		t.Errorf("const: %v", k)
	}
	if jsonString(got["required"]) != `["at"]` {
		t.Errorf("required keeps a property that does not exist: %v", got["required"])
	}
}

func TestGeminiName(t *testing.T) {
	long := "g__a_very_long_tool_name_that_goes_on_and_on_past_sixty_four_characters_x"
	for in, want := range map[string]string{
		"files__read_file": "files__read_file",
		"web__fetch/url":   "web__fetch_url",
		"9lives":           "_9lives",
		"ünïcode":          "__n__code",
	} {
		if got := GeminiName(in); got != want {
			t.Errorf("GeminiName(%q) = %q, want %q", in, got, want)
		}
	}
	a, b := GeminiName(long+"1"), GeminiName(long+"2")
	if len(a) != 64 || len(b) != 64 || a == b {
		t.Errorf("long names: %q and %q", a, b)
	}
}

// Gemini's Schema takes enum values as strings only ("enum[] string",
// even for an INTEGER: {type:INTEGER, format:enum, enum:["101","201"]}):
// numbers and booleans become their JSON text, a null makes the schema
// nullable, and an enum of objects or lists, which no string list can
// say, is dropped.
func TestGeminiSchemaEnumsAreStrings(t *testing.T) {
	for in, want := range map[string]string{
		`{"type":"integer","enum":[1,2,30]}`:          `{"enum":["1","2","30"],"format":"enum","type":"integer"}`,
		`{"type":"string","enum":["a",null]}`:         `{"enum":["a"],"nullable":true,"type":"string"}`,
		`{"type":"boolean","const":true}`:             `{"enum":["true"],"format":"enum","type":"boolean"}`,
		`{"type":"object","enum":[{"a":1}]}`:          `{"type":"object"}`,
		`{"type":"string","enum":["x","y"]}`:          `{"enum":["x","y"],"type":"string"}`,
		`{"type":"number","enum":[1.5],"format":"x"}`: `{"enum":["1.5"],"format":"x","type":"number"}`,
	} {
		out, err := GeminiSchema(json.RawMessage(in))
		if err != nil {
			t.Fatal(err)
		}
		if string(out) != want {
			t.Errorf("GeminiSchema(%s) = %s, want %s", in, out, want)
		}
	}
}
