package server

import (
	"encoding/json"
	"strings"

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
	searchToolName  = "search_dynamic_tools"
	searchToolIntro = "Find the right tool for a task across every group at once. Describe what you want done in a few words (for example \"take a screenshot of the page\" or \"open a pull request\"); the answer lists the best matching tools, best first, each with its group, name, description and inputSchema, ready to run with call_dynamic_tool. Use it instead of guessing the group or reading a whole group with get_dynamic_tools.\n\nGroups searched:\n"
	searchLimit     = 5  // results when the call gives no limit
	searchLimitMax  = 20 // the most one call returns
)

// searchTool is search_dynamic_tools' definition: enum and listed are the
// groups, as groupList gives them.
func searchTool(enum []string, listed string) json.RawMessage {
	def := map[string]any{
		"name":        searchToolName,
		"description": strings.TrimRight(searchToolIntro+listed, "\n"),
		"inputSchema": map[string]any{
			"type": "object",
			"properties": map[string]any{
				"query": map[string]any{"type": "string", "description": "What you want done, in a few words"},
				"group": map[string]any{"type": "string", "description": "Only search this group (optional)", "enum": enum},
				"limit": map[string]any{"type": "integer", "description": "How many tools to return, best first (default 5, at most 20)", "minimum": 1, "maximum": searchLimitMax, "default": searchLimit},
			},
			"required": []string{"query"},
		},
	}
	b, _ := jsonrpc.Marshal(def)
	return b
}

// toolIndex is what search_dynamic_tools searches: every tool of every
// ready group, exactly those get_dynamic_tools lists (deny- and
// allow-lists, pins and name collisions applied by buildView already).
type toolIndex struct {
	index   *search.Index
	entries []search.Entry // by the index's doc number
}

// buildToolIndex indexes the ready groups' tools when mode offers
// search_dynamic_tools for them, and returns nil when it does not: off, or
// auto with no more than config.SearchAutoTools tools ("" is auto).
func buildToolIndex(groups []*groupView, mode config.SearchMode) *toolIndex {
	var docs []search.Doc
	var entries []search.Entry
	for _, g := range groups {
		if g.state != upstream.StateReady {
			continue
		}
		for _, raw := range g.tools {
			docs = append(docs, search.Doc{Group: g.name, GroupDescription: g.description, Tool: raw})
			entries = append(entries, search.Entry{Group: g.name, Tool: raw})
		}
	}
	if mode == config.SearchOff || mode != config.SearchOn && len(docs) <= config.SearchAutoTools {
		return nil
	}
	return &toolIndex{index: search.New(docs), entries: entries}
}

// searchDynamicTools answers search_dynamic_tools: the best matches for the
// query, in the shape get_dynamic_tools answers with, each with its group.
func (v *view) searchDynamicTools(args dynamicArgs) json.RawMessage {
	if strings.TrimSpace(args.Query) == "" {
		return toolError("Missing required argument: query")
	}
	if args.Group != "" {
		if g, problem := v.lookupGroup(args.Group); g == nil {
			return toolError(problem)
		}
	}
	limit := int(args.Limit)
	switch {
	case limit <= 0:
		limit = searchLimit
	case limit > searchLimitMax:
		limit = searchLimitMax
	}
	hits := v.search.index.Search(args.Query, args.Group, limit)
	if len(hits) == 0 {
		return textResult("[]")
	}
	entries := make([]search.Entry, len(hits))
	for i, h := range hits {
		entries[i] = v.search.entries[h.Doc]
	}
	text, err := search.AppendEntries(nil, entries)
	if err != nil {
		return toolError("dynamic-mcp: cannot answer the search: " + err.Error())
	}
	return textResult(string(text))
}
