package view

import (
	"slices"
	"strings"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/types/clip"
)

func TestToolNotFoundText(t *testing.T) {
	tools := []string{"read_file", "read_graph", "read_files", "read_first", "write_file"}
	long := strings.Repeat("x", 200)
	for _, tc := range []struct{ name, otherwise, want string }{
		{"read_grap", "", "Tool not found: read_grap (did you mean read_graph?)"},
		{"read_fil", "", "Tool not found: read_fil (did you mean read_file or read_files?)"},
		{"read", "", "Tool not found: read (did you mean read_file, read_files or read_first?)"}, // three at most
		{"delete", "", "Tool not found: delete"},
		{"delete", "see the list", "Tool not found: delete (see the list)"},
		{long, "x", "Tool not found: " + clip.Echo(long) + " (x)"},
	} {
		if got := ToolNotFound(tc.name, slices.Values(tools), tc.otherwise); got != tc.want {
			t.Errorf("ToolNotFound(%.20q)\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
	// A suggested name is quoted as the hub quotes what it did not write.
	longTool := "read_" + strings.Repeat("y", 300)
	if got, want := ToolNotFound("read_y", slices.Values([]string{longTool}), ""), "Tool not found: read_y (did you mean "+clip.Echo(longTool)+"?)"; got != want {
		t.Errorf("a long tool's name: %q", got)
	}
}
