package server

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
)

// notUTF8 are messages whose id, or some other string, is not valid UTF-8:
// raw bytes 0xff and the like in a JSON string. badIDs of them have such
// an id.
var notUTF8 = []string{
	"{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"method\":\"ping\"}",
	"{\"jsonrpc\":\"2.0\",\"id\":\"a\xc3\",\"method\":\"tools/call\",\"params\":{\"name\":\"f__echo\",\"arguments\":{\"text\":\"x\"}}}",
	"{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"method\":\"a\",\"method\":\"b\"}",
	"{\"jsonrpc\":\"1.0\",\"id\":\"\xfe\",\"method\":\"ping\"}",
	"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"no/such\xfe\"}",
	"{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/call\",\"params\":{\"name\":\"\xff\xfe\"}}",
	"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"prompts/get\",\"params\":{\"name\":\"\xff\"}}",
	"{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"resources/read\",\"params\":{\"uri\":\"x://\xff\"}}",
}

const badIDs = 4

// Every byte the hub writes to a stdio client is valid JSON in UTF-8,
// whatever invalid UTF-8 the client sent: a request whose id is not valid
// UTF-8 is refused as -32600 with a null id (its id cannot be echoed
// faithfully), and an error that quotes another such string has it
// replaced.
func TestStdioWritesOnlyUTF8(t *testing.T) {
	t.Parallel()
	h, _ := runHub(t, flatFakeYAML(t.TempDir(), "", ""), true)
	await.For(t, 10*time.Second, "the view", func() bool { _, ok := h.snapshot().view.FlatRoutes["f__echo"]; return ok })
	c := servePipes(t, h, StdioOptions{})
	c.initialize()
	for _, m := range notUTF8 {
		c.send(m)
	}
	c.send(`{"jsonrpc":"2.0","id":99,"method":"ping"}`)
	all := c.answerAll("99")
	refused := 0
	for line := range strings.SplitSeq(strings.TrimSuffix(all, "\n"), "\n") {
		if !utf8.ValidString(line) || !json.Valid([]byte(line)) {
			t.Errorf("the hub wrote a line that is not valid JSON in UTF-8: %q", line)
		}
		if strings.HasPrefix(line, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,`) {
			refused++
		}
	}
	if refused != badIDs {
		t.Errorf("%d refusals of an id not in UTF-8, want %d:\n%s", refused, badIDs, all)
	}
}
