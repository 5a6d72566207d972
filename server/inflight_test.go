package server

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
)

// settings.session_inflight caps one session's requests in flight: the
// request beyond it is refused at once, and the others are answered.
func TestSessionInflightSetting(t *testing.T) {
	t.Parallel() // its own hub and upstreams
	h, _ := runHub(t, flatFakeYAML(t.TempDir(), "call_timeout: 2m, session_inflight: 2", ""), true)
	await.For(t, 10*time.Second, "the view", func() bool { _, ok := h.snapshot().view.FlatRoutes["f__sleep"]; return ok })
	c := servePipes(t, h, StdioOptions{})
	c.send(initializeMsg)
	c.answer("0")
	// initialize counts as in flight until its answer is written, a
	// moment after the client has read it: on a busy machine the first
	// call found it still counted and the cap refused two calls of three.
	await.For(t, 10*time.Second, "initialize no longer in flight", func() bool {
		s := h.Sessions().Info()
		return len(s) == 1 && s[0].Inflight == 0
	})
	// The calls are answered once the test opens the gate, after the
	// refusal: the two the cap admits are in flight while the third comes.
	gate := filepath.Join(t.TempDir(), "gate")
	for i := 1; i <= 3; i++ {
		c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"f__sleep","arguments":{"gate":%q}}}`, i, gate))
	}
	all := c.readUntil(func(line string) bool { return !strings.Contains(line, `"method"`) })
	first := all[strings.LastIndex(all[:len(all)-1], "\n")+1:]
	if !strings.Contains(first, `"code":-32000`) {
		t.Errorf("the first answer is not the refusal: %s", first)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var rest []string
	for _, id := range []string{"1", "2", "3"} {
		if !strings.Contains(first, `"id":`+id+`,`) {
			rest = append(rest, id)
		}
	}
	got, _ := c.answersAt(time.Now(), rest...)
	got["first"] = first
	refused := 0
	for id, line := range got {
		switch {
		case strings.Contains(line, `"code":-32000`):
			refused++
		case !strings.Contains(line, "slept 0"):
			t.Errorf("%s: %s", id, line)
		}
	}
	if refused != 1 {
		t.Errorf("%d of 3 refused with a cap of 2: %v", refused, got)
	}
}
