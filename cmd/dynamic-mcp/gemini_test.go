package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/server/shape"
)

// geminiProblem is the first key of schema (walked through properties,
// items and anyOf) that a Gemini function declaration refuses, or a type
// that is not one Gemini names; "" when there is none.
func geminiProblem(s any, at string) string {
	m, ok := s.(map[string]any)
	if !ok {
		return at + ": not an object"
	}
	for k, v := range m {
		if !shape.GeminiKeywords[k] || strings.HasPrefix(k, "$") {
			return at + ": keyword " + k
		}
		switch k {
		case "type":
			if t, _ := v.(string); !strings.Contains(" string number integer boolean array object ", " "+t+" ") {
				return fmt.Sprintf("%s: type %v", at, v)
			}
		case "properties":
			for name, p := range v.(map[string]any) {
				if bad := geminiProblem(p, at+".properties."+name); bad != "" {
					return bad
				}
			}
		case "items":
			if bad := geminiProblem(v, at+".items"); bad != "" {
				return bad
			}
		case "anyOf":
			for i, a := range v.([]any) {
				if bad := geminiProblem(a, fmt.Sprintf("%s.anyOf[%d]", at, i)); bad != "" {
					return bad
				}
			}
		}
	}
	return ""
}

// Every input and output schema of the everything server's tools, shaped
// for Gemini, keeps to Gemini's keywords and has no reference left; at
// least one of them broke a rule before (so the test is not vacuous).
func TestGeminiSchemasOfEverythingServer(t *testing.T) {
	c := startHub(t, fmt.Sprintf("mode: flat\nsettings: {shared: \"off\"}\ngroups:\n  ev: {description: The reference server, command: node, args: %s}\n",
		yamlList(referenceServer(t, "server-everything", "stdio")[1:])))
	c.initialize("2025-11-25")
	var tools []map[string]json.RawMessage
	waitFor(t, 30*time.Second, "the everything server's tools", func() bool {
		var list struct {
			Tools []map[string]json.RawMessage `json:"tools"`
		}
		mustUnmarshal(t, c.call("tools/list", nil), &list)
		tools = list.Tools
		return len(tools) > 5
	})
	var schemas, changed int
	for _, tool := range tools {
		for _, field := range []string{"inputSchema", "outputSchema"} {
			raw := tool[field]
			if raw == nil {
				continue
			}
			schemas++
			out, err := shape.GeminiSchema(raw)
			if err != nil {
				t.Fatalf("%s %s: %v", tool["name"], field, err)
			}
			var v any
			mustUnmarshal(t, out, &v)
			if bad := geminiProblem(v, "$"); bad != "" {
				t.Errorf("%s %s: %s in %s", tool["name"], field, bad, out)
			}
			var before any
			mustUnmarshal(t, raw, &before)
			if geminiProblem(before, "$") != "" {
				changed++ // the server's own schema breaks a rule
			}
		}
	}
	t.Logf("%d schemas of %d tools, %d broke a rule before shaping", schemas, len(tools), changed)
	if changed == 0 {
		t.Fatal("no schema of the everything server broke a rule: the test proves nothing")
	}
}
