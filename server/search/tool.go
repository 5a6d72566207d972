package search

import (
	"encoding/json"
	"sort"
	"strings"
)

// toolText is the text of a tool definition that is searched.
type toolText struct {
	name, title, description string
	// args are the names, titles and descriptions of the top-level
	// properties of its input schema, in the order of their names.
	args string
}

// toolDef is what is searched of a tool definition. Decoding into it
// reads each definition once and copies only these strings: input
// schemas run to tens of kilobytes (a whole OpenAPI operation), and the
// index is built again whenever a tool list changes.
type toolDef struct {
	Name        string `json:"name"`
	Title       string `json:"title"`
	Description string `json:"description"`
	Annotations struct {
		Title string `json:"title"`
	} `json:"annotations"`
	InputSchema struct {
		Properties map[string]struct {
			Title       string `json:"title"`
			Description string `json:"description"`
		} `json:"properties"`
	} `json:"inputSchema"`
}

// parseTool reads the searched text of a tool definition; ok is false for
// one that is no object with a name.
func parseTool(raw json.RawMessage) (t toolText, ok bool) {
	var def toolDef
	if json.Unmarshal(raw, &def) != nil {
		// An argument of an odd shape (a property that is no object, a
		// description that is no string) leaves the rest to search.
		def = toolDef{}
		var bare struct {
			Name        string `json:"name"`
			Title       string `json:"title"`
			Description string `json:"description"`
		}
		if json.Unmarshal(raw, &bare) != nil {
			return toolText{}, false
		}
		def.Name, def.Title, def.Description = bare.Name, bare.Title, bare.Description
	}
	if def.Name == "" {
		return toolText{}, false
	}
	t = toolText{name: def.Name, title: def.Title, description: def.Description}
	if t.title == "" {
		t.title = def.Annotations.Title
	}
	names := make([]string, 0, len(def.InputSchema.Properties))
	for name := range def.InputSchema.Properties {
		names = append(names, name)
	}
	sort.Strings(names)
	var args strings.Builder
	for _, name := range names {
		p := def.InputSchema.Properties[name]
		args.WriteString(name)
		args.WriteByte(' ')
		args.WriteString(p.Title)
		args.WriteByte(' ')
		args.WriteString(p.Description)
		args.WriteByte('\n')
	}
	t.args = args.String()
	return t, true
}
