package server

import (
	"encoding/json"
	"sync"

	"github.com/dynamic-mcp/dynamic-mcp/server/shape"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// shapedLists are a view's tools/list results shaped by the config's
// clients: rules, each built by the first client a rule matches and kept
// for the view's life: the cost per request stays one lookup.
type shapedLists struct {
	mu    sync.Mutex
	lists map[int]json.RawMessage // by rule index
}

// toolsListFor is v's tools/list result as the client named name is
// shown it under cfg's clients: rules.
func (v *view) toolsListFor(cfg *config.Config, name string) json.RawMessage {
	i, rule := cfg.ClientRuleFor(name)
	if rule == nil {
		return v.toolsList
	}
	v.shaped.mu.Lock()
	defer v.shaped.mu.Unlock()
	if l, ok := v.shaped.lists[i]; ok {
		return l
	}
	l := shapeTools(v.toolsList, rule)
	if v.shaped.lists == nil {
		v.shaped.lists = map[int]json.RawMessage{}
	}
	v.shaped.lists[i] = l
	return l
}

// shapeTools applies rule to a tools/list result: Gemini schemas, then the
// cap. A tool whose definition does not decode is left as it is.
func shapeTools(list json.RawMessage, rule *config.ClientRule) json.RawMessage {
	var tools []json.RawMessage
	if err := json.Unmarshal(jsonrpc.Field(list, "tools"), &tools); err != nil {
		return list
	}
	if rule.Schemas == config.SchemasGemini {
		for i, t := range tools {
			for _, field := range []string{"inputSchema", "outputSchema"} {
				schema := jsonrpc.Field(t, field)
				if schema == nil {
					continue
				}
				if s, err := shape.GeminiSchema(schema); err == nil {
					if raw, err := setField(t, field, json.RawMessage(s)); err == nil {
						t = raw
					}
				}
			}
			tools[i] = t
		}
	}
	return listResult("tools", capTools(tools, rule.MaxTools), "")
}
