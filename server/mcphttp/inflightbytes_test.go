package mcphttp

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// One session's many big slow calls hold at most its budget of bytes in
// flight (64 MiB; scaled down here by 16, so that the test runs under
// -race on a busy machine): of twelve 8 MiB calls that each wait seconds (at a
// policy prompt the client leaves unanswered, so that no upstream need
// read them), those past the budget are refused at once with a
// JSON-RPC error saying why, another session's call is answered
// meanwhile, and the heap stays within a few times the budget (104 slow
// calls took the hub to 2 GB, about 18 MB a call, when only requests
// were counted).
func TestManyBigCallsBoundedPerSession(t *testing.T) {
	h, _ := runHub(t, flatFakeYAML(t.TempDir(), "call_timeout: 5s, prompt_timeout: 30s", promptPolicy), nil)
	const scale = 16 // bodies of 512 KiB, a budget of 4 MiB
	_, ts := serveHTTPWith(t, h, Options{sessionBytes: jsonrpc.DefaultMaxInflightBytes / scale})
	a, b := elicitingClient(t, ts.URL, "2025-06-18"), newHTTPClient(t, ts.URL)
	const calls, bodySize = 12, 8 << 20 / scale
	before := heapAfterGC()
	var peak atomic.Uint64
	stop, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		var m runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
		}
	}()
	big := bytes.Repeat([]byte("a"), bodySize) // shared by every body: the client's side holds little
	var wg sync.WaitGroup
	var answered, refused atomic.Int32
	start := time.Now()
	for i := range calls {
		wg.Go(func() {
			head := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"f__echo","arguments":{"text":"`, 10+i)
			tail := `"}}}`
			req, _ := http.NewRequest(http.MethodPost, ts.URL+"/mcp", io.MultiReader(strings.NewReader(head), bytes.NewReader(big), strings.NewReader(tail)))
			req.ContentLength = int64(len(head) + len(big) + len(tail))
			req.Header.Set("Accept", "application/json, text/event-stream") // the prompt comes down it
			req.Header.Set(headerSessionID, a.session)
			resp, err := testClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			switch {
			case strings.Contains(string(got), `"code":-32000`) && strings.Contains(string(got), "bytes in flight"):
				refused.Add(1)
			case strings.Contains(string(got), "elicitation/create") || strings.Contains(string(got), `"code":-32001`):
				// Asked, and ended with the session.
				answered.Add(1)
			default:
				t.Errorf("call %d: %d %.300s", i, resp.StatusCode, got)
			}
		})
	}
	// Past the budget the calls are refused while those taken still wait
	// (the session reads its messages one by one: on a busy machine the
	// last is read seconds after the first), and another session's call
	// goes through meanwhile.
	head := len(`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"f__echo","arguments":{"text":"` + `"}}}`)
	held := int32((jsonrpc.DefaultMaxInflightBytes / scale) / (bodySize + head))
	await.For(t, 60*time.Second, "the calls past the budget refused", func() bool { return refused.Load() == calls-held })
	resp, got := b.post(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"f__sleep","arguments":{"ms":1}}}`)
	if resp.StatusCode != http.StatusOK || !strings.Contains(got, `"result"`) {
		t.Errorf("another session's call while the big ones run: %d %.200s", resp.StatusCode, got)
	}
	if answered.Load() != 0 {
		t.Errorf("%d calls taken ended before the last was refused", answered.Load())
	}
	a.delete() // the calls waiting end with their session
	during := time.Since(start)
	wg.Wait()
	close(stop)
	<-sampled
	t.Logf("%d calls of %d KiB: %d held at the prompt, %d refused; heap in use %d MiB before, peak %d MiB; other session answered after %v",
		calls, bodySize>>10, answered.Load(), refused.Load(), before>>20, peak.Load()>>20, during.Round(time.Millisecond))
	if answered.Load() != held {
		t.Errorf("%d calls held, want %d (the budget's worth)", answered.Load(), held)
	}
	if bound := before + 5*jsonrpc.DefaultMaxInflightBytes/scale + 32<<20; peak.Load() > bound {
		t.Errorf("peak heap in use %d MiB, over %d MiB", peak.Load()>>20, bound>>20)
	}
}

// delete ends c's session.
func (c *httpClient) delete() {
	c.t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, c.base+"/mcp", nil)
	req.Header.Set(headerSessionID, c.session)
	resp, err := testClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	resp.Body.Close()
}
