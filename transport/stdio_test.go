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
// it must never panic, and a pending request gets exactly one answer or
// fails when the child's output ends.
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
	f.Fuzz(func(t *testing.T, lines string) {
		pr, pw := io.Pipe()
		tr := newStdio(pr, nopCloser{io.Discard}, 1<<20, slog.New(slog.NewTextHandler(io.Discard, nil)))
		tr.SetNotificationHandler(func(mcp.JSONRPCNotification) {})
		tr.Start(context.Background())
		defer tr.Close()
		answered := make(chan error, 1)
		go func() {
			_, err := tr.SendRequest(context.Background(), mcptransport.JSONRPCRequest{JSONRPC: "2.0", ID: mcp.NewRequestId(int64(1)), Method: "x"})
			answered <- err
		}()
		io.WriteString(pw, lines+"\n")
		pw.Close()
		select {
		case <-answered:
		case <-time.After(5 * time.Second):
			t.Fatal("the request was neither answered nor failed")
		}
	})
}

// A child that stops reading its stdin fails calls at their deadline and
// ends the session at the write timeout; a notification never blocks.
func TestStdioChildStopsReading(t *testing.T) {
	// sh ignores the end of its stdin: a short ladder stops it at the end.
	proc, err := StartProcess(ProcessSpec{Command: "sh", Args: []string{"-c", "sleep 30"}, Grace: 100 * time.Millisecond}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer proc.Close()
	tr := NewStdio(proc, 1<<20, slog.New(slog.NewTextHandler(io.Discard, nil)))
	tr.writeTimeout = 500 * time.Millisecond
	tr.Start(context.Background())
	big := map[string]any{"text": strings.Repeat("x", 100<<10)}
	for i := range 20 {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		start := time.Now()
		_, err := tr.SendRequest(ctx, mcptransport.JSONRPCRequest{JSONRPC: "2.0", ID: mcp.NewRequestId(int64(i)), Method: "tools/call", Params: big})
		cancel()
		if err == nil || time.Since(start) > time.Second {
			t.Fatalf("call %d: err %v after %v", i, err, time.Since(start))
		}
	}
	start := time.Now()
	_ = tr.SendNotification(context.Background(), mcp.JSONRPCNotification{JSONRPC: "2.0", Notification: mcp.Notification{Method: "notifications/roots/list_changed"}})
	if time.Since(start) > 100*time.Millisecond {
		t.Errorf("a notification blocked for %v", time.Since(start))
	}
	select {
	case <-tr.Done():
		if !strings.Contains(tr.Err().Error(), "stopped reading its stdin") {
			t.Errorf("ended with %v", tr.Err())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the session is still open")
	}
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
