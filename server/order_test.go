package server

import (
	"fmt"
	"strings"
	"testing"
)

// What an upstream sends during a call, log messages and progress, reaches
// a stdio client before the call's answer, as it left the server, even
// when the server writes it all, the answer included, in one go.
func TestStdioUpstreamMessagesBeforeTheAnswer(t *testing.T) {
	t.Parallel()
	const rounds, n = 200, 5
	h := fakeHub(t, "-flood")
	c := servePipes(t, h, StdioOptions{})
	c.initialize()
	for round := range rounds {
		id := 100 + round
		c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"f__chatter","arguments":{"ms":%d},"_meta":{"progressToken":"p%d"}}}`, id, n, round))
		all := c.answerAll(fmt.Sprint(id))
		answer := all[strings.LastIndex(all[:len(all)-1], "\n")+1:]
		if !strings.Contains(answer, "chattered") {
			t.Fatalf("round %d: answer %s", round, answer)
		}
		before := all[:len(all)-len(answer)]
		for i := range n {
			if !strings.Contains(before, fmt.Sprintf(`"logger":"f/chatter","data":%d}`, i)) {
				t.Fatalf("round %d: log message %d not before the answer:\n%s", round, i, all)
			}
			if !strings.Contains(before, fmt.Sprintf(`"progressToken":"p%d","progress":%d,`, round, i+1)) {
				t.Fatalf("round %d: progress %d not before the answer:\n%s", round, i+1, all)
			}
		}
	}
}
