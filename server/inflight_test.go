package server

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// settings.session_inflight caps one session's requests in flight: the
// request beyond it is refused at once, and the others are answered.
func TestSessionInflightSetting(t *testing.T) {
	t.Parallel() // its own hub and upstreams
	h, _ := runHub(t, flatFakeYAML(t.TempDir(), "call_timeout: 2m, session_inflight: 2", ""), true)
	waitFor(t, 10*time.Second, "the view", func() bool { _, ok := h.snapshot().view.FlatRoutes["f__sleep"]; return ok })
	c := servePipes(t, h, StdioOptions{})
	c.send(initializeMsg)
	c.answer("0")
	for i := 1; i <= 3; i++ {
		c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"f__sleep","arguments":{"ms":15000}}}`, i))
	}
	got, _ := c.answersAt(time.Now(), "1", "2", "3")
	refused := 0
	for id, line := range got {
		switch {
		case strings.Contains(line, `"code":-32000`):
			refused++
		case !strings.Contains(line, "slept 15000"):
			t.Errorf("%s: %s", id, line)
		}
	}
	if refused != 1 {
		t.Errorf("%d of 3 refused with a cap of 2: %v", refused, got)
	}
}
