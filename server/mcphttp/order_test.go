package mcphttp

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
)

// chatterRounds and chatterN: what the order tests ask of the fake
// upstream's chatter tool, n log messages and n progress notifications
// written with the answer in one go, rounds times.
const chatterRounds, chatterN = 200, 5

// What an upstream sends during a call reaches the client on the call's
// own response stream, before the answer, as it does from the server
// directly: its progress, and its log messages too, which the server sends
// relating to no request. Without a GET stream (a log message the hub
// cannot tie to a call is lost then), and with one (it goes there then).
func TestHTTPUpstreamMessagesBeforeTheAnswer(t *testing.T) {
	t.Parallel()
	h := fakeHub(t, "-flood")
	face, ts := serveHTTP(t, h)
	c := newHTTPClient(t, ts.URL)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for round := range chatterRounds {
		if round == chatterRounds/2 {
			c.stream(ctx)
			await.For(t, 5*time.Second, "the GET stream", func() bool {
				hs := face.sessions.lookup(c.session)
				return hs != nil && hs.hasStandalone()
			})
		}
		id := 100 + round
		_, body := c.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"f__chatter","arguments":{"ms":%d},"_meta":{"progressToken":"p%d"}}}`, id, chatterN, round))
		answer := strings.Index(body, fmt.Sprintf(`"id":%d,"result"`, id))
		if answer < 0 || !strings.Contains(body[answer:], "chattered") {
			t.Fatalf("round %d: no answer: %s", round, body)
		}
		before := body[:answer]
		if logs, progress := strings.Count(before, `"notifications/message"`), strings.Count(before, `"notifications/progress"`); logs != chatterN || progress != chatterN {
			t.Fatalf("round %d: %d log messages and %d progress notifications before the answer on its stream, want %d of each:\n%s", round, logs, progress, chatterN, body)
		}
		for i := range chatterN {
			if !strings.Contains(before, fmt.Sprintf(`"logger":"f/chatter","data":%d}`, i)) {
				t.Fatalf("round %d: log message %d not before the answer:\n%s", round, i, body)
			}
		}
	}
}
