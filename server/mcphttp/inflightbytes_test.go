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
)

// One session's many big slow calls hold at most its budget of bytes in
// flight (64 MiB): of twelve 8 MiB calls that each take seconds, those
// past the budget are refused at once with a JSON-RPC error saying why,
// another session's call is answered meanwhile, and the heap stays
// within a few times the budget (104 such calls took the hub to 2 GB,
// about 18 MB a call, when only requests were counted).
func TestManyBigCallsBoundedPerSession(t *testing.T) {
	h := fakeHub(t)
	_, ts := serveHTTPWith(t, h, Options{})
	a, b := newHTTPClient(t, ts.URL), newHTTPClient(t, ts.URL)
	const calls, bodySize = 12, 8 << 20
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
	refusedAt := make(chan time.Duration, calls)
	for i := range calls {
		wg.Go(func() {
			head := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"f__sleep","arguments":{"ms":4000,"pad":"`, 10+i)
			tail := `"}}}`
			req, _ := http.NewRequest(http.MethodPost, ts.URL+"/mcp", io.MultiReader(strings.NewReader(head), bytes.NewReader(big), strings.NewReader(tail)))
			req.ContentLength = int64(len(head) + len(big) + len(tail))
			req.Header.Set("Accept", "application/json")
			req.Header.Set(headerSessionID, a.session)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			switch {
			case strings.Contains(string(got), `"result"`):
				answered.Add(1)
			case strings.Contains(string(got), `"code":-32000`) && strings.Contains(string(got), "bytes in flight"):
				refused.Add(1)
				refusedAt <- time.Since(start)
			default:
				t.Errorf("call %d: %d %.300s", i, resp.StatusCode, got)
			}
		})
	}
	// Another session's call goes through while the big ones run.
	waitFor(t, 30*time.Second, "a big call refused", func() bool { return refused.Load() > 0 })
	resp, got := b.post(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"f__echo","arguments":{"text":"hi"}}}`)
	if resp.StatusCode != http.StatusOK || !strings.Contains(got, `"result"`) {
		t.Errorf("another session's call while the big ones run: %d %.200s", resp.StatusCode, got)
	}
	during := time.Since(start)
	wg.Wait()
	close(stop)
	<-sampled
	close(refusedAt)
	t.Logf("%d calls of 8 MiB: %d answered, %d refused; heap in use %d MiB before, peak %d MiB; other session answered after %v",
		calls, answered.Load(), refused.Load(), before>>20, peak.Load()>>20, during.Round(time.Millisecond))
	if refused.Load() == 0 || answered.Load() == 0 || answered.Load()*bodySize > 64<<20 {
		t.Errorf("%d answered, %d refused: want at most 64 MiB of calls taken, the rest refused", answered.Load(), refused.Load())
	}
	for d := range refusedAt {
		if d > 3*time.Second {
			t.Errorf("a call was refused after %v, not at once", d)
		}
	}
	if bound := before + 4*64<<20 + 32<<20; peak.Load() > bound {
		t.Errorf("peak heap in use %d MiB, over %d MiB", peak.Load()>>20, bound>>20)
	}
}
