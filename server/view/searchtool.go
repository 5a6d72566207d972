package view

import (
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/dynamic-mcp/dynamic-mcp/server/call"
	"github.com/dynamic-mcp/dynamic-mcp/server/search"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// search_dynamic_tools: the third meta-tool, offered by settings.search.
// Its description says what is behind it (the groups, as
// get_dynamic_tools' does) and what it is for, since models pass over a
// search tool whose description could be anyone's.
const (
	SearchToolName  = "search_dynamic_tools"
	searchToolIntro = "Find the right tool for a task across every group at once. Describe what you want done in a few words (for example \"take a screenshot of the page\" or \"open a pull request\"); the answer lists the best matching tools, best first, each with its group, name, description and inputSchema, ready to run with call_dynamic_tool. Use it instead of guessing the group or reading a whole group with get_dynamic_tools.\n\nGroups searched:\n"
	SearchLimit     = 5  // results when the call gives no limit
	SearchLimitMax  = 20 // the most one call returns
)

// searchTool is search_dynamic_tools' definition: enum and listed are the
// groups, as groupList gives them.
func searchTool(enum []string, listed string) json.RawMessage {
	def := map[string]any{
		"name":        SearchToolName,
		"description": strings.TrimRight(searchToolIntro+listed, "\n"),
		"inputSchema": map[string]any{
			"type": "object",
			"properties": map[string]any{
				"query": map[string]any{"type": "string", "description": "What you want done, in a few words"},
				"group": map[string]any{"type": "string", "description": "Only search this group (optional)", "enum": enum},
				"limit": map[string]any{"type": "integer", "description": "How many tools to return, best first (default 5, at most 20)", "minimum": 1, "maximum": SearchLimitMax, "default": SearchLimit},
			},
			"required": []string{"query"},
		},
		"outputSchema": answerSchema("query", "The query searched for", nil),
	}
	b, _ := jsonrpc.Marshal(def)
	return b
}

// ToolIndex is what search_dynamic_tools searches: every tool of every
// ready group, exactly those get_dynamic_tools lists (deny- and
// allow-lists, pins and name collisions applied by buildView already).
//
// The index itself is built by the first search of the view, not with
// the view: building costs about 70 ms for 1,000 tools and 300 ms for
// 5,000 (most of it reading their definitions), and the view is built on
// the hub's event loop, which also passes upstream notifications on, for
// every change of any upstream (a list_changed storm builds it again and
// again). A view no one searches costs nothing; searches that come
// together wait for the one build.
type ToolIndex struct {
	docs    []search.Doc
	entries []search.Entry // by the index's doc number
	once    sync.Once
	index   atomic.Pointer[search.Index]
}

// get is the index, built on the first call.
func (t *ToolIndex) get() *search.Index {
	t.once.Do(func() {
		t.index.Store(search.New(t.docs))
		t.docs = nil
	})
	return t.index.Load()
}

// Built reports whether the index has been built.
func (t *ToolIndex) Built() bool { return t.index.Load() != nil }

// buildToolIndex gathers the ready groups' tools when mode offers
// search_dynamic_tools for them, and returns nil when it does not: off, or
// auto with no more than config.SearchAutoTools tools ("" is auto).
func buildToolIndex(groups []*GroupView, mode config.SearchMode) *ToolIndex {
	n := 0
	for _, g := range groups {
		if g.State == upstream.StateReady {
			n += len(g.Tools)
		}
	}
	if mode == config.SearchOff || mode != config.SearchOn && n <= config.SearchAutoTools {
		return nil
	}
	t := &ToolIndex{docs: make([]search.Doc, 0, n), entries: make([]search.Entry, 0, n)}
	for _, g := range groups {
		if g.State != upstream.StateReady {
			continue
		}
		for _, raw := range g.Tools {
			t.docs = append(t.docs, search.Doc{Group: g.Name, GroupDescription: g.Description, Tool: raw})
			t.entries = append(t.entries, search.Entry{Group: g.Name, Tool: raw})
		}
	}
	return t
}

// SearchDynamicTools answers search_dynamic_tools: an object with the
// query and its best matches, best first, each in the shape
// get_dynamic_tools lists its tools in, with its group.
func (v *View) SearchDynamicTools(args DynamicArgs) json.RawMessage {
	var query string
	if len(args.Query) > 0 && string(args.Query) != "null" && json.Unmarshal(args.Query, &query) != nil {
		return call.ToolError("query must be a string")
	}
	if strings.TrimSpace(query) == "" {
		return call.ToolError("Missing required argument: query")
	}
	if args.Group != "" {
		if g, problem := v.LookupGroup(args.Group); g == nil {
			return call.ToolError(problem)
		}
	}
	limit, ok := searchLimitOf(args.Limit)
	if !ok {
		return call.ToolError("limit must be a number")
	}
	hits := v.Search.get().Search(query, args.Group, limit)
	entries := make([]search.Entry, len(hits))
	for i, h := range hits {
		entries[i] = v.Search.entries[h.Doc]
	}
	q, _ := jsonrpc.Marshal(query)
	obj, err := search.AppendEntries(append(append([]byte(`{"query":`), q...), `,"tools":`...), entries)
	if err != nil {
		return call.ToolError("dynamic-mcp: cannot answer the search: " + err.Error())
	}
	return objectResult(append(obj, '}'))
}

// searchLimitOf reads search_dynamic_tools' limit: a number, or a string
// holding one (as models write "5"), cut to a whole number from 1 to
// SearchLimitMax; SearchLimit when it is missing, null or below 1. ok is
// false for anything else.
func searchLimitOf(raw json.RawMessage) (limit int, ok bool) {
	var f float64
	if len(raw) == 0 || string(raw) == "null" {
		return SearchLimit, true
	}
	if json.Unmarshal(raw, &f) != nil {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return 0, false
		}
		var err error
		if f, err = strconv.ParseFloat(strings.TrimSpace(s), 64); err != nil {
			return 0, false
		}
	}
	switch {
	case !(f >= 1): // NaN too
		return SearchLimit, true
	case f > SearchLimitMax: // before converting: int(1e300) is any number
		return SearchLimitMax, true
	}
	return int(f), true
}
