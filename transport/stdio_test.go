package transport

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// FuzzStdioReceive feeds arbitrary lines from an upstream to the transport:
// it must never panic, and a pending request gets at most one answer.
func FuzzStdioReceive(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`{"jsonrpc":"2.0","id":"1","error":{"code":-1,"message":"x"}}`,
		`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`,
		`{"jsonrpc":"2.0","id":9,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"result":{},"Result":{}}`,
		`[{"id":1}]`, `garbage`, `{"id":null}`, `{"id":1}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		tr := NewStdio(nil, 1<<20, slog.New(slog.NewTextHandler(io.Discard, nil)))
		tr.stdin = nopCloser{io.Discard}
		tr.SetNotificationHandler(func(mcp.JSONRPCNotification) {})
		ch := make(chan reply, 2)
		tr.pending[mcp.NewRequestId(int64(1)).String()] = ch
		for _, l := range strings.Split(line, "\n") {
			if l = strings.TrimSpace(l); l != "" {
				tr.receive([]byte(l))
			}
		}
		if len(ch) > 1 {
			t.Fatalf("one request got %d answers", len(ch))
		}
		tr.cancel()
		tr.wg.Wait()
	})
}

func TestStdioFailsPendingRequestsWhenTheChildExits(t *testing.T) {
	proc, err := StartProcess(ProcessSpec{Command: "sh", Args: []string{"-c", "read line; echo 'boom: no config' >&2; exit 7"}},
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer proc.Close()
	tr := NewStdio(proc, 1<<20, slog.New(slog.NewTextHandler(io.Discard, nil)))
	tr.Start(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = tr.SendRequest(ctx, mcptransport.JSONRPCRequest{JSONRPC: "2.0", ID: mcp.NewRequestId(int64(1)), Method: "tools/list"})
	if err == nil || err.Error() != "exited (status 7): boom: no config" {
		t.Fatalf("err = %v", err)
	}
	if _, err := tr.SendRequest(ctx, mcptransport.JSONRPCRequest{JSONRPC: "2.0", ID: mcp.NewRequestId(int64(2)), Method: "ping"}); err == nil {
		t.Fatal("a request after the exit did not fail")
	}
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }
