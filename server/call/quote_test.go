package call

import (
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// quote writes a name as jsonrpc.Marshal does, whatever it holds.
func TestQuote(t *testing.T) {
	for _, s := range []string{"", "echo", "g__t.x-1", "<b>&", `a"b`, `c:\d`, "tab\there", "naïve", "\x7f", "\xff"} {
		want, _ := jsonrpc.Marshal(s)
		if got := quote(s); string(got) != string(want) {
			t.Errorf("quote(%q) = %s, want %s", s, got, want)
		}
	}
}
