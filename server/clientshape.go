package server

import (
	"encoding/json"
	"sync"

	"github.com/dynamic-mcp/dynamic-mcp/server/shape"
	views "github.com/dynamic-mcp/dynamic-mcp/server/view"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// shapedLists are a view's tools/list results shaped by the config's
// clients: rules, each built by the first client a rule matches and kept
// for the view's life: the cost per request stays one lookup.
type shapedLists struct {
	mu    sync.Mutex
	lists map[int]json.RawMessage   // by rule index
	names map[int]map[string]string // by rule index: shaped tool name -> the view's, where they differ
}

// toolsListFor is v's tools/list result as the client named name is
// shown it under cfg's clients: rules.
func (v *view) toolsListFor(cfg *config.Config, name string) json.RawMessage {
	i, rule := cfg.ClientRuleFor(name)
	if rule == nil {
		return v.ToolsList
	}
	l, _ := v.shapedFor(i, rule)
	return l
}

// toolName is the view's name of the tool the client named client calls
// name: the name it was shown before shaping renamed it.
func (v *view) toolName(cfg *config.Config, client, name string) string {
	i, rule := cfg.ClientRuleFor(client)
	if rule == nil || rule.Schemas != config.SchemasGemini {
		return name
	}
	if _, names := v.shapedFor(i, rule); names[name] != "" {
		return names[name]
	}
	return name
}

// shapedFor is the list shaped by rule i, and its renamed tools, built on
// first use.
func (v *view) shapedFor(i int, rule *config.ClientRule) (json.RawMessage, map[string]string) {
	v.shaped.mu.Lock()
	defer v.shaped.mu.Unlock()
	if l, ok := v.shaped.lists[i]; ok {
		return l, v.shaped.names[i]
	}
	l, names := shapeTools(v.ToolsList, rule)
	if v.shaped.lists == nil {
		v.shaped.lists, v.shaped.names = map[int]json.RawMessage{}, map[int]map[string]string{}
	}
	v.shaped.lists[i], v.shaped.names[i] = l, names
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
					if raw, err := setField(t, "name", n); err == nil {
						t = raw
					}
				}
			}
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
			kept = append(kept, t)
		}
		tools = kept
	}
	return views.ListResult("tools", views.CapTools(tools, rule.MaxTools), ""), names
}
