package mcphttp

import (
	"bufio"
	"context"
	"strings"
	"testing"
	"time"
)

// A request of the hub's made during a tool call (an elicitation) goes
// down that call's POST stream, not the session's open GET stream, and
// the client's answer, POSTed apart, resolves it: the call's answer
// carries what the client answered, on the same POST.
func TestElicitationDuringCallGoesDownItsPOST(t *testing.T) {
	t.Parallel()
	face, _, base := isolationHub(t, "per-session")
	c := newElicitingClient(t, base)

	ctx, cancel := context.WithCancel(t.Context())
	get := c.stream(ctx)
	onGET := make(chan string, 1)
	go func() { // ends when the GET is cancelled below
		var seen strings.Builder
		sc := bufio.NewScanner(get.Body)
		for sc.Scan() {
			seen.WriteString(sc.Text() + "\n")
		}
		onGET <- seen.String()
	}()
	waitFor(t, 5*time.Second, "the GET stream", func() bool { return face.lookup(c.session).hasStandalone() })

	got := askAnswering(t, c, "carol")
	if !strings.Contains(got, `carol`) || !strings.HasPrefix(got, `{"jsonrpc":"2.0","id":"ask","result"`) {
		t.Errorf("the call's answer on its POST: %s", got)
	}
	cancel()
	if seen := <-onGET; strings.Contains(seen, "elicitation/create") {
		t.Errorf("the elicitation went down the GET stream:\n%s", seen)
	}
}
