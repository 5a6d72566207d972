package mcphttp

import (
	"runtime"
	"strings"
	"testing"
)

// heapAfterGC is the heap in use after two collections.
func heapAfterGC() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// A session keeps nothing of a request once it is answered: after a
// 4 MiB ping, or a 4 MiB initialize, with the session still open and
// idle, the heap is back within 2 MiB of where it was. (The last answer's
// routing info kept the request's id, a slice of the whole body, until
// the session sent another message: the whole body a session. Twice the
// bound shows it; 8 MiB bodies cost 20 s under -race.)
func TestRequestBodyNotKeptPastItsAnswer(t *testing.T) {
	h := fakeHub(t)
	_, ts := serveHTTPWith(t, h, Options{})
	pad := strings.Repeat("p", 4<<20)
	for _, c := range []struct{ name, msg string }{
		{"ping", `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + pad + `"}}`},
		{"initialize", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"},"pad":"` + pad + `"}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl := &httpClient{t: t, base: ts.URL}
			if c.name == "ping" {
				cl = newHTTPClient(t, ts.URL)
			}
			before := heapAfterGC()
			resp, got := cl.post(c.msg)
			if resp.StatusCode != 200 || !strings.Contains(got, `"result"`) {
				t.Fatalf("answer: %d %.200s", resp.StatusCode, got)
			}
			if cl.session == "" {
				t.Fatal("no session")
			}
			after := heapAfterGC() // the session is open, and sends nothing more
			t.Logf("heap in use: %d KiB before, %d KiB after the 4 MiB %s", before>>10, after>>10, c.name)
			if growth := int64(after) - int64(before); growth > 2<<20 {
				t.Errorf("the heap grew by %.1f MiB and stays so: the request's body is kept", float64(growth)/(1<<20))
			}
			runtime.KeepAlive(pad)
		})
	}

}
