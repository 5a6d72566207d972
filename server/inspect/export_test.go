package inspect

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
)

// fillHistory clears i's history and fills it with calls of params of
// about 64 KiB, n of them, each its own bytes.
func fillHistory(i *Inspector, gen, n int) {
	i.Clear()
	for k := range n {
		pad := strings.Repeat(string(rune('a'+(gen+k)%26)), 60<<10)
		call(i, k, []byte(fmt.Sprintf(`{"name":"echo","arguments":{"gen":%d,"text":"%s"}}`, gen, pad)))
	}
}

// startExport asks for an export on a connection of its own and reads
// only its status line: a client that then never reads its export.
func startExport(t *testing.T, addr string) (int, net.Conn) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetReadBuffer(4096)
	}
	fmt.Fprintf(c, "GET %sapi/export HTTP/1.1\r\nHost: x\r\n\r\n", Prefix)
	c.SetReadDeadline(time.Now().Add(10 * time.Second * await.Slow))
	line, err := bufio.NewReaderSize(c, 16).ReadString('\n')
	if err != nil {
		t.Fatalf("export: %v", err)
	}
	var status int
	fmt.Sscanf(line, "HTTP/1.1 %d", &status)
	return status, c
}

// serveInspector serves i's API with small socket buffers, so that a
// client that stops reading is felt after kilobytes; it ends with the
// test, its connections closed first (a stuck export ends with them).
func serveInspector(t *testing.T, i *Inspector) *httptest.Server {
	srv := httptest.NewUnstartedServer(i.API())
	srv.Config.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetWriteBuffer(4096)
		}
		return ctx
	}
	srv.Start()
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close() })
	return srv
}

// Exports that are never read do not pin history after history: of ten
// asked for, each of a history of its own (4 MiB), at most maxExports
// are written at once (the rest refused 503), so the heap holds about
// maxExports histories more, not ten (ten took RSS from 205 to 1,335 MB
// at the default 64 MiB).
func TestUnreadExportsBounded(t *testing.T) {
	const budget = 4 << 20
	i := New(Options{MaxBytes: budget})
	defer i.Close()
	i.writeTimeout = time.Minute // none of the stuck exports ends during the test, however slow
	srv := serveInspector(t, i)
	addr := srv.Listener.Addr().String()
	const rows = 40 // 3 bodies of 60 KiB each: past the budget, which keeps the newest 4 MiB
	fillHistory(i, 0, rows)
	before := heapAfterGC()
	served := 0
	for gen := 1; gen <= 10; gen++ {
		status, _ := startExport(t, addr)
		if status == http.StatusOK {
			served++
		} else if status != http.StatusServiceUnavailable {
			t.Fatalf("export %d: status %d", gen, status)
		}
		fillHistory(i, gen, rows)
	}
	held := int64(heapAfterGC()) - int64(before)
	t.Logf("10 unread exports: %d written at once, the heap grew %d KiB (history budget %d KiB)", served, held>>10, budget>>10)
	if served > maxExports {
		t.Errorf("%d unread exports written at once, want at most %d", served, maxExports)
	}
	if limit := int64(maxExports+1) * budget; held > limit {
		t.Errorf("unread exports hold %d KiB, want at most %d KiB", held>>10, limit>>10)
	}
}

// An export whose client stops reading ends at its write deadline, and
// makes room for the next.
func TestStuckExportEndsAtDeadline(t *testing.T) {
	i := New(Options{MaxBytes: 4 << 20})
	defer i.Close()
	i.writeTimeout = 200 * time.Millisecond
	srv := serveInspector(t, i)
	fillHistory(i, 0, 40)
	for range maxExports {
		if status, _ := startExport(t, srv.Listener.Addr().String()); status != http.StatusOK {
			t.Fatalf("export: %d", status)
		}
	}
	exported := func() int {
		resp, err := http.Get(srv.URL + Prefix + "api/export")
		if err != nil {
			t.Fatal(err)
		}
		// Its status is the answer: the export is not read (through the
		// server's small socket buffer it took seconds).
		resp.Body.Close()
		return resp.StatusCode
	}
	await.Costly(t, 10*time.Second, "an export served after the stuck ones' write deadline", func() bool { return exported() == http.StatusOK })
}
