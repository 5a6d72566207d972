package mcphttp

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
)

// The body budget holds a body while it is read and decoded, not while
// its call runs: with four long calls whose bodies sum to the budget in
// flight, no bytes stay reserved, and another client's request is
// answered 200, not refused 503 for as long as the calls last.
func TestHTTPBodyBudgetReleasedOnceDecoded(t *testing.T) {
	t.Parallel()
	h := fakeHub(t)
	const budget = 1 << 20
	// The calls last until the gate opens, after the ping: a budget still
	// held makes the ping wait for room until the body timeout and get
	// 503. The timeout bounds that wait and the bodies' reads; a second
	// failed reads of the 256 KiB bodies at load 31.
	gate := filepath.Join(t.TempDir(), "gate")
	hs, ts := serveHTTPWith(t, h, Options{MaxBodyMemory: budget, BodyTimeout: 20 * time.Second})
	a, b := newHTTPClient(t, ts.URL), newHTTPClient(t, ts.URL)
	const calls = 4
	var wg sync.WaitGroup
	for i := range calls {
		head := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"f__sleep","arguments":{"gate":%q,"pad":"`, 10+i, gate)
		tail := `"}}}`
		body := head + strings.Repeat("a", budget/calls-len(head)-len(tail)) + tail
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodPost, ts.URL+"/mcp", strings.NewReader(body))
			req.Header.Set("Accept", "application/json")
			req.Header.Set(headerSessionID, a.session)
			resp, err := testClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(got), `"result"`) {
				t.Errorf("call %d: %d %.200s", i, resp.StatusCode, got)
			}
		})
	}
	// Before the fix the budget was given back only as each call was
	// answered, when it is no longer in flight: this never held.
	await.For(t, 5*time.Second, "the calls in flight with no body bytes reserved", func() bool {
		return hs.inflight.load() == calls && hs.bodies.used.Load() == 0
	})
	resp, got := b.post(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	t.Logf("while %d calls of %d KiB run: 0 bytes reserved; another client's ping: %d", calls, budget/calls>>10, resp.StatusCode)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("another client's ping while the calls run: %d %.200s, want 200", resp.StatusCode, got)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
}
