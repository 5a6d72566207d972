package approve

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dynamic-mcp/dynamic-mcp/server/policy"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// A question quotes at most maxQuestionArgs of the arguments, cut on a
// character and saying their whole size, so that a harmless start does
// not pass for the whole.
func TestPromptMessageSaysArgumentsAreCut(t *testing.T) {
	args := `{"path":"` + strings.Repeat("é", 400) + `"}`
	msg := Message(&config.Config{}, "tools/call", "g/s", "write", json.RawMessage(args), policy.Decision{Description: "writes need a yes"})
	if want := fmt.Sprintf("... (cut: %d bytes in all)", len(args)); !strings.HasSuffix(msg, want) {
		t.Errorf("the question does not say the arguments are cut: %q", msg)
	}
	if !utf8.ValidString(msg) || !strings.Contains(msg, "writes need a yes") {
		t.Errorf("question %q", msg)
	}
	short := Message(&config.Config{}, "tools/call", "g/s", "write", json.RawMessage(`{"a":1}`), policy.Decision{})
	if !strings.HasSuffix(short, `Arguments: {"a":1}`) {
		t.Errorf("short arguments: %q", short)
	}
}
