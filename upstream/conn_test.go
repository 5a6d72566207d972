package upstream

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/transport"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
)

// childConn is a conn over the pipes of sh -c script, with no handshake.
func childConn(t *testing.T, script string, opts jsonrpc.ConnOptions) *conn {
	t.Helper()
	// A child that does not read (sleep) is stopped by SIGTERM: the grace
	// after its stdin closes is waited out whole, and is not what is tested.
	proc, err := transport.StartProcess(transport.ProcessSpec{Command: "sh", Args: []string{"-c", script}, Grace: 50 * time.Millisecond}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	c := &conn{logger: testLogger(t), proc: proc, calls: map[string]trackedCall{}}
	c.stream = jsonrpc.NewLineStream(proc.Stdout(), proc.Stdin(), 1<<20)
	c.rpc = jsonrpc.NewConn(c.stream, opts)
	c.rpc.Start()
	t.Cleanup(c.close)
	return c
}

// A child that exits fails what is pending at once, with how it ended.
func TestChildExitFailsPendingRequests(t *testing.T) {
	t.Parallel()
	c := childConn(t, "read line; echo 'boom: no config' >&2; exit 7", jsonrpc.ConnOptions{})
	ctx := t.Context() // no deadline: the exit, not a timeout, must end the request
	if _, err := c.request(ctx, "tools/list", nil); err == nil || err.Error() != "exited (status 7): boom: no config" {
		t.Fatalf("err = %v", err)
	}
	if _, err := c.request(ctx, "ping", nil); err == nil || ctx.Err() != nil {
		t.Fatalf("a request after the exit: %v", err)
	}
	select {
	case <-c.exited():
	default:
		t.Error("exited is not closed")
	}
}

// A child that stops reading its stdin fails calls at their deadline and
// ends the session at the write timeout (a notification meanwhile: see
// TestNotifyDoesNotWaitOnTheChild).
func TestChildThatStopsReading(t *testing.T) {
	t.Parallel()
	c := childConn(t, "sleep 30", jsonrpc.ConnOptions{WriteTimeout: 500 * time.Millisecond})
	big := json.RawMessage(`{"text":"` + strings.Repeat("x", 100<<10) + `"}`)
	for i := range 20 {
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		start := time.Now()
		_, err := c.request(ctx, "tools/call", big)
		cancel()
		if err == nil || time.Since(start) > time.Second*await.Slow { // bounds a wait on the child, which never reads
			t.Fatalf("call %d: err %v after %v", i, err, time.Since(start))
		}
	}
	select {
	case <-c.exited():
		if err := c.err(); err == nil || !strings.Contains(err.Error(), "stopped reading its stdin") {
			t.Errorf("ended with %v", err)
		}
	case <-time.After(time.Minute): // bounds a hang, not a timing
		t.Fatal("the session is still open")
	}
}

// A notification to a child that stopped reading does not wait for it.
// The child never reads (it sleeps past the test) and the write timeout
// is a minute, so a notification that waited on the peer would take a
// minute: the bound, scaled for a busy machine, still tells the two
// apart.
func TestNotifyDoesNotWaitOnTheChild(t *testing.T) {
	t.Parallel()
	c := childConn(t, "sleep 600", jsonrpc.ConnOptions{WriteTimeout: time.Minute})
	// Runs before childConn's cleanup: the stuck write ends with the
	// child, not at the write timeout.
	t.Cleanup(func() { _ = c.proc.Close() })
	big := json.RawMessage(`{"text":"` + strings.Repeat("x", 200<<10) + `"}`) // more than a pipe holds
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if _, err := c.request(ctx, "tools/call", big); err == nil {
		t.Fatal("a call to a child that does not read succeeded")
	}
	start := time.Now()
	if err := c.notify("notifications/roots/list_changed", nil); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 10*time.Second*await.Slow {
		t.Errorf("a notification blocked for %v", d)
	}
}
