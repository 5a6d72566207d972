//go:build unix

package upstream

import (
	"context"
	"encoding/json"
	"log/slog"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// lineLog is a logger that keeps every record's message and attributes, one
// line each, and tells waiting tests when a line holds what they wait for.
type lineLog struct {
	mu    sync.Mutex
	lines []string
	seen  map[string]chan struct{} // by the text waited for
}

func (l *lineLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *lineLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *lineLog) WithGroup(string) slog.Handler            { return l }
func (l *lineLog) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool { b.WriteString(" " + a.String()); return true })
	line := b.String()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, line)
	for text, ch := range l.seen {
		if strings.Contains(line, text) {
			close(ch)
			delete(l.seen, text)
		}
	}
	return nil
}

// logged is closed once a line holding text is logged.
func (l *lineLog) logged(text string) <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	ch := make(chan struct{})
	if l.seen == nil {
		l.seen = map[string]chan struct{}{}
	}
	l.seen[text] = ch
	return ch
}

func (l *lineLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

// quietHandlers answer nothing: the children of these tests never get that far.
func quietHandlers() serverHandlers {
	return serverHandlers{
		notify: func(string, json.RawMessage) {},
		request: func(context.Context, trackedCall, string, json.RawMessage) (json.RawMessage, error) {
			return nil, nil
		},
	}
}

// A server stopped while it starts (a Ctrl-C on the quick start) answers
// the initialize it read after the hub stopped listening, as Node.js
// servers do: the stop lets it write and exit, and logs no EPIPE stack
// trace of the child's (the hub's read end of its stdout stays open until
// the child is gone).
func TestStopDuringStartLogsNoEPIPE(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed")
	}
	// Like the SDK's stdio server: read a request, answer it when the
	// event loop gets to it, and exit when stdin ends with nothing left.
	const script = `
process.stdin.once('data', () => {
  console.error('read the request');
  process.stdin.on('end', () => {
    for (let i = 0; i < 100; i++) process.stdout.write(JSON.stringify({jsonrpc: '2.0', id: 0, result: {}}) + '\n');
  });
});
`
	log := &lineLog{}
	ready := log.logged("read the request")
	cfg := &config.Server{Transport: config.TransportStdio, Command: "node", Args: []string{"-e", script}}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		<-ready
		cancel() // the hub stops while the server is in its handshake
	}()
	settings := config.ServerSettings{StopGrace: time.Minute, MaxMessageSize: 1 << 20}
	if _, err := dial(ctx, cfg, settings, time.Minute, mcp.ClientCapabilities{}, nil, slog.New(log), quietHandlers()); err == nil {
		t.Fatal("dial succeeded")
	}
	for _, line := range log.all() {
		if strings.Contains(line, "EPIPE") || strings.Contains(line, "write after end") || strings.Contains(line, "SIGTERM") {
			t.Errorf("logged: %s", line)
		}
	}
}

// A child that ignores its stdin's end and SIGTERM, and writes on stdout
// without end, is still killed by the ladder: reading its stdout until it
// exits does not keep the stop waiting, and neither it nor a goroutine is
// left (TestMain checks goroutines).
func TestStopKillsAChildThatFloodsStdout(t *testing.T) {
	log := &lineLog{}
	ready := log.logged("flooding")
	// trap '' is inherited through exec: yes ignores SIGTERM too.
	cfg := &config.Server{Transport: config.TransportStdio, Command: "sh", Args: []string{"-c", `trap '' TERM; echo flooding >&2; exec yes`}}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		<-ready
		cancel()
	}()
	const grace = 100 * time.Millisecond
	settings := config.ServerSettings{StopGrace: grace, MaxMessageSize: 1 << 20}
	// The connect timeout stays beyond the bound below, both scaled.
	start := time.Now()
	if _, err := dial(ctx, cfg, settings, await.Slow*time.Minute, mcp.ClientCapabilities{}, nil, slog.New(log), quietHandlers()); err == nil {
		t.Fatal("dial succeeded")
	}
	took := time.Since(start)
	t.Logf("the stop took %s", took)
	// The ladder is 2 graces; the rest bounds a hang on a slow machine.
	if took > 2*grace+await.Slow*20*time.Second {
		t.Errorf("the stop took %s", took)
	}
	killed := false
	for _, line := range log.all() {
		killed = killed || strings.Contains(line, "sending SIGKILL")
	}
	if !killed { // the stop returns once the child is reaped
		t.Errorf("the child was not killed: %q", log.all())
	}
}
