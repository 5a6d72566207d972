package main

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
)

// The rules a Gemini function declaration is held to here are written out
// from Google's reference, not taken from server/shape, so that the shaper
// is checked against the documented rules and not against its own list:
//
//   - the fields of the Schema object, with their types: the Gemini API's
//     google.ai.generativelanguage.v1beta.Schema (anyOf, default,
//     description, enum, example, format, items, maximum, maxItems,
//     maxLength, maxProperties, minimum, minItems, minLength, minProperties,
//     nullable, pattern, properties, propertyOrdering, required, title,
//     type), https://ai.google.dev/api/caching#Schema and
//     https://docs.cloud.google.com/nodejs/docs/reference/generativelanguage/latest/generativelanguage/protos.google.ai.generativelanguage.v1beta.ischema;
//     Vertex AI's Schema names the same ("enum[] string": enum values are
//     strings, even for an INTEGER), https://cloud.google.com/vertex-ai/docs/reference/rest/v1/Schema.
//     Anything else ($ref, $defs, $schema, additionalProperties, oneOf,
//     allOf, not, const, exclusiveMinimum, examples, ...) is an unknown
//     field of the Gemini API's Schema, which it answers with 400.
//   - Type: TYPE_UNSPECIFIED, STRING, NUMBER, INTEGER, BOOLEAN, ARRAY,
//     OBJECT, NULL (https://ai.google.dev/api/caching#Type); the API takes
//     the OpenAPI spellings in lower case too, which is what the shaper
//     writes.
//   - a function's name: "Must start with a letter or an underscore. Must
//     be a-z, A-Z, 0-9, or contain underscores, dots and dashes, with a
//     maximum length of 64" (Vertex AI's FunctionDeclaration,
//     https://cloud.google.com/vertex-ai/docs/reference/rest/v1beta1/FunctionDeclaration;
//     the Gemini API allows colons too).
//
// Not checked: Vertex AI's rule that parameter (property) names be
// [A-Za-z_][A-Za-z0-9_]{0,63}, which the shaper does not enforce (the hub
// would have to rename a call's arguments back).
var geminiSchemaFields = map[string]string{
	"type": "type", "format": "string", "title": "string", "description": "string",
	"nullable": "bool", "enum": "strings", "maxItems": "int64", "minItems": "int64",
	"properties": "schema map", "required": "property names", "minProperties": "int64",
	"maxProperties": "int64", "minLength": "int64", "maxLength": "int64", "pattern": "string",
	"example": "value", "anyOf": "schema list", "propertyOrdering": "strings",
	"default": "value", "items": "schema", "minimum": "number", "maximum": "number",
}

var geminiTypes = []string{"STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT", "NULL"}

var geminiFunctionName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.:-]{0,63}$`)

// geminiSchemaProblems lists what in schema (at path at) a Gemini
// function declaration refuses under the rules above.
func geminiSchemaProblems(s any, at string) []string {
	m, ok := s.(map[string]any)
	if !ok {
		return []string{at + ": not an object"}
	}
	var bad []string
	add := func(format string, args ...any) { bad = append(bad, at+"."+fmt.Sprintf(format, args...)) }
	for k, v := range m {
		kind, known := geminiSchemaFields[k]
		if !known {
			add("%s: no field of Gemini's Schema", k)
			continue
		}
		switch kind {
		case "type":
			if t, ok := v.(string); !ok || !slices.Contains(geminiTypes, strings.ToUpper(t)) {
				add("type: %v is not one of %v", v, geminiTypes)
			}
		case "string":
			if _, ok := v.(string); !ok {
				add("%s: %v is not a string", k, v)
			}
		case "bool":
			if _, ok := v.(bool); !ok {
				add("%s: %v is not a boolean", k, v)
			}
		case "number":
			if _, ok := v.(float64); !ok {
				add("%s: %v is not a number", k, v)
			}
		case "int64": // a number, or the decimal string of one
			switch n := v.(type) {
			case float64:
				if n != float64(int64(n)) || n < 0 {
					add("%s: %v is not a count", k, v)
				}
			case string:
				if _, err := fmt.Sscan(n, new(int64)); err != nil {
					add("%s: %q is not an int64", k, n)
				}
			default:
				add("%s: %v is not an int64", k, v)
			}
		case "strings":
			list, ok := v.([]any)
			if !ok {
				add("%s: %v is not a list", k, v)
				break
			}
			for i, e := range list {
				if _, ok := e.(string); !ok {
					add("%s[%d]: %v (%T) is not a string", k, i, e, e)
				}
			}
		case "property names":
			list, ok := v.([]any)
			if !ok {
				add("%s: %v is not a list", k, v)
				break
			}
			props, _ := m["properties"].(map[string]any)
			for i, e := range list {
				if name, ok := e.(string); !ok || props[name] == nil {
					add("%s[%d]: %v is not a key of properties", k, i, e)
				}
			}
		case "schema":
			bad = append(bad, geminiSchemaProblems(v, at+"."+k)...)
		case "schema map":
			props, ok := v.(map[string]any)
			if !ok {
				add("%s: %v is not an object", k, v)
				break
			}
			for name, p := range props {
				bad = append(bad, geminiSchemaProblems(p, at+"."+k+"."+name)...)
			}
		case "schema list":
			list, ok := v.([]any)
			if !ok {
				add("%s: %v is not a list", k, v)
				break
			}
			for i, a := range list {
				bad = append(bad, geminiSchemaProblems(a, fmt.Sprintf("%s.%s[%d]", at, k, i))...)
			}
		}
	}
	return bad
}

// geminiDeclarationProblems lists what a Gemini function declaration made
// of tool (an entry of tools/list) would be refused for: its name, its
// parameters (inputSchema, an object) and its response (outputSchema).
func geminiDeclarationProblems(tool map[string]any) []string {
	name, _ := tool["name"].(string)
	var bad []string
	if !geminiFunctionName.MatchString(name) {
		bad = append(bad, fmt.Sprintf("name %q", name))
	}
	for _, field := range []string{"inputSchema", "outputSchema"} {
		schema, ok := tool[field]
		if !ok {
			continue
		}
		if m, _ := schema.(map[string]any); m == nil || !strings.EqualFold(fmt.Sprint(m["type"]), "object") {
			bad = append(bad, field+": not a schema of type object")
		}
		bad = append(bad, geminiSchemaProblems(schema, field)...)
	}
	return bad
}

// The validator refuses what the documents refuse: a test of a test, so
// that a validator that passes everything cannot pass here.
func TestGeminiValidatorRefuses(t *testing.T) {
	for _, tc := range []struct {
		tool string
		want string // in the problem found; "" for none
	}{
		{`{"name":"ok_name.v1-x","inputSchema":{"type":"object","properties":{"a":{"type":"STRING","enum":["x"]}},"required":["a"]}}`, ""},
		{`{"name":"1bad","inputSchema":{"type":"object"}}`, `name "1bad"`},
		{`{"name":"a/b","inputSchema":{"type":"object"}}`, `name "a/b"`},
		{`{"name":"` + strings.Repeat("a", 65) + `","inputSchema":{"type":"object"}}`, "name"},
		{`{"name":"t","inputSchema":{"type":"object","$schema":"x"}}`, "$schema: no field"},
		{`{"name":"t","inputSchema":{"type":"object","additionalProperties":false}}`, "additionalProperties: no field"},
		{`{"name":"t","inputSchema":{"type":"object","properties":{"a":{"$ref":"#/$defs/A"}}}}`, "$ref: no field"},
		{`{"name":"t","inputSchema":{"type":"object","properties":{"a":{"oneOf":[]}}}}`, "oneOf: no field"},
		{`{"name":"t","inputSchema":{"type":"object","properties":{"a":{"type":"integer","enum":[1,2]}}}}`, "is not a string"},
		{`{"name":"t","inputSchema":{"type":"object","properties":{"a":{"type":"string"}},"required":["b"]}}`, "not a key of properties"},
		{`{"name":"t","inputSchema":{"type":["string","null"]}}`, "type"},
		{`{"name":"t","inputSchema":{"type":"object","properties":{"a":{"type":"array","items":[{"type":"string"}]}}}}`, "not an object"},
		{`{"name":"t","inputSchema":{"type":"object"},"outputSchema":{"type":"object","properties":{"n":{"type":"number","exclusiveMinimum":0}}}}`, "outputSchema.properties.n.exclusiveMinimum"},
	} {
		var tool map[string]any
		mustUnmarshal(t, []byte(tc.tool), &tool)
		got := strings.Join(geminiDeclarationProblems(tool), "; ")
		if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("%s: problems %q, want %q", tc.tool, got, tc.want)
		}
	}
}

// Every tool of the everything server, listed by the hub to a client a
// clients: rule gives schemas: gemini, is a function declaration Gemini
// takes: its name, its inputSchema and its outputSchema under the rules
// above. A hub of the same config lists another client the server's own definitions,
// of which some break those rules, so the test is not vacuous.
func TestGeminiSchemasOfEverythingServer(t *testing.T) {
	t.Parallel() // its hubs are its own
	cfg := fmt.Sprintf("mode: flat\nsettings: {shared: \"off\", "+nodeWaits+"}\nclients:\n  - {match: 'gemini*', schemas: gemini}\ngroups:\n  ev: {description: The reference server, url: %s}\n",
		sharedEverythingURL(t))
	// A hub of each client's own, the two at once.
	lists := map[string][]map[string]any{}
	var mu sync.Mutex
	concurrently(t, []string{"gemini-cli-mcp-client", "claude-code"}, func(t *testing.T, name string) {
		c := startHub(t, cfg)
		c.initializeAs(name)
		var list struct {
			Tools []map[string]any `json:"tools"`
		}
		await.Costly(t, 30*time.Second, "the everything server's tools", func() bool {
			mustUnmarshal(t, c.call("tools/list", nil), &list)
			return len(list.Tools) > 5
		})
		mu.Lock()
		lists[name] = list.Tools
		mu.Unlock()
	})
	if t.Failed() {
		return
	}
	var schemas, outputs int
	for _, tool := range lists["gemini-cli-mcp-client"] {
		for _, bad := range geminiDeclarationProblems(tool) {
			t.Errorf("%s: %s", tool["name"], bad)
		}
		schemas++
		if tool["outputSchema"] != nil {
			outputs++
		}
	}
	broken := 0
	for _, tool := range lists["claude-code"] {
		if bad := geminiDeclarationProblems(tool); len(bad) > 0 {
			broken++
			if broken == 1 {
				t.Logf("e.g. %s as the server wrote it: %s", tool["name"], bad[0])
			}
		}
	}
	t.Logf("%d tools shaped for Gemini (%d with an outputSchema); %d of %d as the server wrote them break a rule", schemas, outputs, broken, len(lists["claude-code"]))
	if broken == 0 || outputs == 0 {
		t.Fatal("no definition of the everything server broke a rule, or none has an outputSchema: the test proves nothing")
	}
	if len(lists["gemini-cli-mcp-client"]) != len(lists["claude-code"]) {
		t.Errorf("Gemini is shown %d tools, another client %d", len(lists["gemini-cli-mcp-client"]), len(lists["claude-code"]))
	}
}
