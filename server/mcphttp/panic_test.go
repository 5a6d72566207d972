package mcphttp

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/dynamic-mcp/dynamic-mcp/types/traffic"
)

// panicky is an observer that panics when a call's params hold "boom":
// a bug anywhere in the handling of one request.
type panicky struct{}

func (panicky) CallStarted(ctx context.Context, c *traffic.Call) context.Context {
	if bytes.Contains(c.Params, []byte("boom")) {
		panic("injected: " + c.Method)
	}
	return ctx
}
func (panicky) CallEnded(context.Context, *traffic.Call)                       {}
func (panicky) HopStarted(ctx context.Context, _ *traffic.Hop) context.Context { return ctx }
func (panicky) HopEnded(context.Context, *traffic.Hop)                         {}
func (panicky) Message(context.Context, *traffic.Message)                      {}

// A request whose handling panics is answered -32603 on its own POST, and
// nothing else is disturbed: the same session and a second one, calling
// all the while, are answered as before. (Before, the panic on the
// request's goroutine ended the whole process, every session with it.)
func TestHTTPPanicAnsweredOthersGoOn(t *testing.T) {
	t.Parallel()
	h := observedHub(t, panicky{})
	_, ts := serveHTTP(t, h)
	a, b := newHTTPClient(t, ts.URL), newHTTPClient(t, ts.URL)
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range 20 {
			_, body := b.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"f__echo","arguments":{"text":"b%d"}}}`, 100+i, i))
			if !strings.Contains(body, fmt.Sprintf(`"text":"b%d"`, i)) {
				t.Errorf("b's call %d: %.300s", i, body)
			}
		}
	})
	for i := range 5 {
		_, body := a.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":"boom%d","method":"tools/call","params":{"name":"f__echo","arguments":{"text":"boom"}}}`, i))
		if !strings.Contains(body, fmt.Sprintf(`"id":"boom%d","error":{"code":-32603`, i)) {
			t.Errorf("the panicking call %d: %.300s", i, body)
		}
	}
	wg.Wait()
	if _, body := a.post(`{"jsonrpc":"2.0","id":"after","method":"tools/call","params":{"name":"f__echo","arguments":{"text":"fine"}}}`); !strings.Contains(body, `"text":"fine"`) {
		t.Errorf("a's call after the panics: %.300s", body)
	}
	if n := h.Panics().Count(); n != 5 {
		t.Errorf("panics counted: %d, want 5 (one per panicking call, for /metrics)", n)
	}
}
