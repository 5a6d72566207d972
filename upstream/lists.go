package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// Item is one entry of an upstream list, kept as the raw JSON the server
// sent, with the key the hub routes by: a tool's or prompt's name, a
// resource's uri, a template's uriTemplate.
type Item struct {
	Key  string
	Name string // the entry's "name", for resources and templates ("" if none)
	Raw  json.RawMessage
	// InputSchema is a tool's inputSchema, within Raw (nil if none, or
	// not a tool): found once when the list is read, not by each call,
	// which checks its arguments against it (server/validateargs).
	InputSchema json.RawMessage
}

// Lists are everything a server offers, each list with all its pages.
type Lists struct {
	Tools     []Item
	Prompts   []Item
	Resources []Item
	Templates []Item
	// Skills are the entries of skills/list, keyed by their SKILL.md
	// URI, of a server that declares the Skills extension (SEP-2640).
	Skills []Item
}

// SkillsExtension is the Skills extension's key in a server's
// capabilities.extensions (SEP-2640): a server that declares it is asked
// for skills/list.
const SkillsExtension = "io.modelcontextprotocol/skills"

// listKinds are the lists, in the order they are fetched.
var listKinds = []struct {
	method, field, key string
	dst                func(*Lists) *[]Item
}{
	{"tools/list", "tools", "name", func(l *Lists) *[]Item { return &l.Tools }},
	{"prompts/list", "prompts", "name", func(l *Lists) *[]Item { return &l.Prompts }},
	{"resources/list", "resources", "uri", func(l *Lists) *[]Item { return &l.Resources }},
	{"resources/templates/list", "resourceTemplates", "uriTemplate", func(l *Lists) *[]Item { return &l.Templates }},
	{"skills/list", "skills", "uri", func(l *Lists) *[]Item { return &l.Skills }},
}

// listSet is a set of listKinds, by their index there.
type listSet uint8

// allLists are all the listKinds.
const allLists listSet = 1<<5 - 1

func (l listSet) has(i int) bool { return l&(1<<i) != 0 }

// listChanged reports which lists a notification says changed, and whether
// it is a list_changed at all. One the hub does not know, such as a
// future kind of list, fetches them all.
func listChanged(method string) (listSet, bool) {
	switch method {
	case "notifications/tools/list_changed":
		return 1 << 0, true
	case "notifications/prompts/list_changed":
		return 1 << 1, true
	case "notifications/resources/list_changed":
		// Resources, their templates and the skills, whose files are
		// resources: a skills server tells of a change to its skills so.
		return 1<<2 | 1<<3 | 1<<4, true
	}
	if strings.HasPrefix(method, "notifications/") && strings.HasSuffix(method, "/list_changed") {
		return allLists, true
	}
	return 0, false
}

// maxPages stops a server whose cursors never end.
const maxPages = 1000

// maxListBytes stops a server whose pages, each within max_message_size,
// add up to more than the hub will hold of one list (every client is sent
// it; no real server comes near). A variable for the tests.
var maxListBytes = 64 << 20

// fetchAll reads every page of one list. request sends one raw request.
func fetchAll(ctx context.Context, method, field, key string, request func(ctx context.Context, method string, params any) (json.RawMessage, error)) ([]Item, error) {
	var items []Item
	cursor := ""
	seen := map[string]bool{}
	size := 0
	for page := 0; ; page++ {
		if page == maxPages {
			return nil, fmt.Errorf("%s: more than %d pages", method, maxPages)
		}
		var params any
		if cursor != "" {
			params = map[string]string{"cursor": cursor}
		}
		raw, err := request(ctx, method, params)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", method, err)
		}
		if size += len(raw); size > maxListBytes {
			return nil, fmt.Errorf("%s: more than %d bytes in %d pages", method, maxListBytes, page+1)
		}
		var result map[string]json.RawMessage
		if err := json.Unmarshal(raw, &result); err != nil {
			return nil, fmt.Errorf("%s: result is not an object: %w", method, err)
		}
		var entries []json.RawMessage
		if r, ok := result[field]; ok && string(r) != "null" {
			if err := json.Unmarshal(r, &entries); err != nil {
				return nil, fmt.Errorf("%s: %s is not a list: %w", method, field, err)
			}
		}
		for _, e := range entries {
			k, name, err := keyOf(e, key)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", method, err)
			}
			it := Item{Key: k, Name: name, Raw: e}
			if method == "tools/list" {
				it.InputSchema = jsonrpc.Field(e, "inputSchema")
			}
			items = append(items, it)
		}
		cursor = ""
		if r, ok := result["nextCursor"]; ok && string(r) != "null" {
			if err := json.Unmarshal(r, &cursor); err != nil {
				return nil, fmt.Errorf("%s: nextCursor is not a string", method)
			}
		}
		if cursor == "" {
			return items, nil
		}
		if seen[cursor] {
			return nil, fmt.Errorf("%s: server repeated cursor %q", method, cursor)
		}
		seen[cursor] = true
	}
}

func keyOf(raw json.RawMessage, key string) (k, name string, err error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return "", "", fmt.Errorf("entry is not an object: %s", truncate(raw))
	}
	if err := json.Unmarshal(obj[key], &k); err != nil || k == "" {
		return "", "", fmt.Errorf("entry without %s: %s", key, truncate(raw))
	}
	_ = json.Unmarshal(obj["name"], &name)
	return k, name, nil
}

func truncate(b []byte) string {
	if len(b) > 120 {
		return string(b[:120]) + "..."
	}
	return string(b)
}
