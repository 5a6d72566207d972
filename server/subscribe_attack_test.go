package server

import (
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/server/routes"
)

// A client that subscribes to ever new URIs (the only upstream that
// supports subscriptions takes any) holds at most
// routes.MaxSessionSubscriptions of them, and none of a URI longer than
// routes.MaxSubscriptionURI: what it keeps in the hub is bounded.
// Unsubscribing makes room again.
func TestAttackSubscriptionsBoundedPerSession(t *testing.T) {
	t.Parallel()
	h := fakeHub(t)
	c := servePipes(t, h, StdioOptions{})
	c.initialize()
	n := routes.MaxSessionSubscriptions + 10
	// Sent 100 at a time, within the session's in-flight cap, so that
	// every refusal is the subscriptions' own.
	refused := 0
	for start := 0; start < n; start += 100 {
		var ids []string
		for i := start; i < min(start+100, n); i++ {
			if _, err := io.WriteString(c.w, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"resources/subscribe","params":{"uri":"x://%d"}}`+"\n", i+1, i)); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, fmt.Sprint(i+1))
		}
		got, _ := c.answersAt(time.Now(), ids...)
		for _, line := range got {
			switch {
			case strings.Contains(line, "subscriptions: unsubscribe from one first"):
				refused++
			case strings.Contains(line, `"error"`):
				t.Errorf("refused otherwise: %.200s", line)
			}
		}
	}
	if refused != n-routes.MaxSessionSubscriptions {
		t.Errorf("%d of %d subscriptions refused, want %d", refused, n, n-routes.MaxSessionSubscriptions)
	}
	held := h.routes.Subscriptions()
	if held > routes.MaxSessionSubscriptions {
		t.Errorf("the hub holds %d subscriptions of one session", held)
	}
	c.send(`{"jsonrpc":"2.0","id":"un","method":"resources/unsubscribe","params":{"uri":"x://0"}}`)
	c.answer(`"un"`)
	c.send(`{"jsonrpc":"2.0","id":"again","method":"resources/subscribe","params":{"uri":"x://new"}}`)
	if a := c.answer(`"again"`); !strings.Contains(a, `"result"`) {
		t.Errorf("a subscription after an unsubscribe: %s", a)
	}
	c.send(`{"jsonrpc":"2.0","id":"long","method":"resources/unsubscribe","params":{"uri":"x://1"}}`)
	c.answer(`"long"`)
	c.send(`{"jsonrpc":"2.0","id":"long2","method":"resources/subscribe","params":{"uri":"x://` + strings.Repeat("a", routes.MaxSubscriptionURI) + `"}}`)
	if a := c.answer(`"long2"`); !strings.Contains(a, `"error"`) {
		t.Errorf("a subscription to a URI of %d bytes: %.200s", routes.MaxSubscriptionURI, a)
	}
}
