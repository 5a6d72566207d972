package mcphttp

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/traffic"
)

// lingering is an observer under which a call whose params hold "linger"
// goes on for a while after it is cancelled, as a handler that is slow to
// notice does; done is set when it returns.
type lingering struct {
	started chan struct{}
	done    atomic.Bool
}

func (l *lingering) CallStarted(ctx context.Context, c *traffic.Call) context.Context {
	if bytes.Contains(c.Params, []byte("linger")) {
		close(l.started)
		<-ctx.Done()
		<-time.After(300 * time.Millisecond)
		l.done.Store(true)
	}
	return ctx
}
func (*lingering) CallEnded(context.Context, *traffic.Call)                       {}
func (*lingering) HopStarted(ctx context.Context, _ *traffic.Hop) context.Context { return ctx }
func (*lingering) HopEnded(context.Context, *traffic.Hop)                         {}
func (*lingering) Message(context.Context, *traffic.Message)                      {}

// Close returns only once every request goroutine the face started has
// returned, a handler slow to notice its cancellation included. (Before,
// Close ended the sessions and returned with their requests still
// running.)
func TestHTTPCloseWaitsForRequests(t *testing.T) {
	t.Parallel()
	obs := &lingering{started: make(chan struct{})}
	h := observedHub(t, obs)
	face, ts := serveHTTP(t, h)
	c := newHTTPClient(t, ts.URL)
	posted := make(chan struct{})
	go func() {
		defer close(posted)
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"f__echo","arguments":{"text":"linger"}}}`))
		req.Header.Set("Accept", "application/json")
		req.Header.Set(headerSessionID, c.session)
		if resp, err := testClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	<-obs.started
	face.Close()
	if !obs.done.Load() {
		t.Error("Close returned while a request goroutine was still running")
	}
	<-posted
}
