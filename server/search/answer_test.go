package search

import (
	"encoding/json"
	"testing"
)

// Entries are spliced from the definitions' own bytes: keys in the
// server's order, escapes and <, > and & as the server wrote them, only
// whitespace, $schema and an empty description dropped.
func TestAppendEntries(t *testing.T) {
	for _, tc := range []struct {
		name    string
		entries []Entry
		want    string
	}{
		{"get_dynamic_tools' shape", []Entry{{Tool: json.RawMessage(`{"description":"a <b> & \u003cc\u003e","name":"t","inputSchema":{"type":"object","$schema":"x", "properties" : {}}}`)}},
			`[{"name":"t","description":"a <b> & \u003cc\u003e","inputSchema":{"type":"object","properties":{}}}]`},
		{"with the group", []Entry{{Group: "g", Tool: json.RawMessage(`{"name":"t","description":""}`)}, {Group: "h<", Tool: json.RawMessage(`{"name":"u","inputSchema":{}}`)}},
			`[{"group":"g","name":"t","inputSchema":null},{"group":"h<","name":"u","inputSchema":{}}]`},
		{"no name", []Entry{{Tool: json.RawMessage(`{"description":"x"}`)}, {Tool: json.RawMessage(`{"name":7}`)}}, `[]`},
		{"none", nil, `[]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := AppendEntries([]byte("prefix:"), tc.entries)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != "prefix:"+tc.want {
				t.Errorf("got  %s\nwant prefix:%s", got, tc.want)
			}
		})
	}
}
