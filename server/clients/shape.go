package clients

import (
	"bytes"
	"encoding/json"
	"slices"
	"sync"

	"github.com/dynamic-mcp/dynamic-mcp/server/shape"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// Shaped are a view's tools/list results shaped by the config's clients:
// rules, each built by the first client a rule matches and kept for the
// view's life: the cost per request stays one lookup. A view holds one
// Shaped and hands it its own tools/list result, the same every time.
type Shaped struct {
	mu    sync.Mutex
	lists map[int]json.RawMessage   // by rule index
	names map[int]map[string]string // by rule index: shaped tool name -> the view's, where they differ
}

// ToolsList is list, the view's tools/list result, as the client named
// name is shown it under cfg's clients: rules.
func (s *Shaped) ToolsList(cfg *config.Config, name string, list json.RawMessage) json.RawMessage {
	i, rule := cfg.ClientRuleFor(name)
	if rule == nil {
		return list
	}
	l, _ := s.shapedFor(i, rule, list)
	return l
}

// ToolName is the view's name of the tool the client named client calls
// name: the name it was shown before shaping renamed it. list is the
// view's tools/list result.
func (s *Shaped) ToolName(cfg *config.Config, client, name string, list json.RawMessage) string {
	i, rule := cfg.ClientRuleFor(client)
	if rule == nil || rule.Schemas != config.SchemasGemini {
		return name
	}
	if _, names := s.shapedFor(i, rule, list); names[name] != "" {
		return names[name]
	}
	return name
}

// Renames reports whether cfg's clients: rules rename the tools the
// client named client is shown (Gemini schemas): only then does ToolName
// map a name it calls back to the view's.
func Renames(cfg *config.Config, client string) bool {
	_, rule := cfg.ClientRuleFor(client)
	return rule != nil && rule.Schemas == config.SchemasGemini
}

// shapedFor is the list shaped by rule i, and its renamed tools, built on
// first use.
func (s *Shaped) shapedFor(i int, rule *config.ClientRule, list json.RawMessage) (json.RawMessage, map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l, ok := s.lists[i]; ok {
		return l, s.names[i]
	}
	l, names := shapeTools(list, rule)
	if s.lists == nil {
		s.lists, s.names = map[int]json.RawMessage{}, map[int]map[string]string{}
	}
	s.lists[i], s.names[i] = l, names
	return l, names
}

// shapeTools applies rule to a tools/list result: Gemini schemas and
// names, then the cap; names maps a renamed tool's new name to its own. A
// tool whose definition does not decode is left as it is; one whose new
// name another tool has already is left out.
func shapeTools(list json.RawMessage, rule *config.ClientRule) (shaped json.RawMessage, names map[string]string) {
	var tools []json.RawMessage
	if err := json.Unmarshal(jsonrpc.Field(list, "tools"), &tools); err != nil {
		return list, nil
	}
	if rule.Schemas == config.SchemasGemini {
		names = map[string]string{}
		taken := map[string]bool{}
		kept := tools[:0:0]
		for _, t := range tools {
			var own string
			if json.Unmarshal(jsonrpc.Field(t, "name"), &own) == nil {
				taken[own] = true
			}
		}
		for _, t := range tools {
			var own string
			if json.Unmarshal(jsonrpc.Field(t, "name"), &own) == nil {
				if n := shape.GeminiName(own); n != own {
					if taken[n] {
						continue // another tool is shown by that name
					}
					taken[n] = true
					names[n] = own
					t = withField(t, "name", n)
				}
			}
			for _, field := range []string{"inputSchema", "outputSchema"} {
				schema := jsonrpc.Field(t, field)
				if schema == nil {
					continue
				}
				if s, err := shape.GeminiSchema(schema); err == nil {
					t = withField(t, field, json.RawMessage(s))
				}
			}
			kept = append(kept, t)
		}
		tools = kept
	}
	if rule.MaxTools > 0 && len(tools) > rule.MaxTools {
		tools = tools[:rule.MaxTools] // the view's order: the first ones stay
	}
	return toolsResult(tools), names
}

// withField is the tool definition t with key set to value, or t as it is
// where that fails. t is an object: one of its members was read.
func withField(t json.RawMessage, key string, value any) json.RawMessage {
	v, err := jsonrpc.Marshal(value)
	if err != nil {
		return t
	}
	if raw, err := jsonrpc.SetField(t, key, v); err == nil {
		return raw
	}
	return t
}

// toolsResult frames tools as a tools/list result without a cursor,
// spliced as they are: {"tools":[...]}.
func toolsResult(tools []json.RawMessage) json.RawMessage {
	parts := make([][]byte, len(tools))
	for i, t := range tools {
		parts[i] = t
	}
	return slices.Concat([]byte(`{"tools":[`), bytes.Join(parts, []byte{','}), []byte(`]}`))
}
