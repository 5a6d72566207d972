//go:build unix

package mcplocal

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/dynamic-mcp/dynamic-mcp/server"
	"github.com/dynamic-mcp/dynamic-mcp/testdata/fakeupstream"
	"github.com/dynamic-mcp/dynamic-mcp/transport/local"
	"github.com/dynamic-mcp/dynamic-mcp/types/approval"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

var fakeBin string

func TestMain(m *testing.M) {
	fakeupstream.Run()
	fakeBin = fakeupstream.Build()
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goroutines left after the tests: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// harness runs a hub in front of one fake upstream and the face on a
// local socket until the test ends; served yields Serve's end.
type harness struct {
	paths  local.Paths
	srv    *Server
	served chan error
}

func start(t *testing.T, idle time.Duration) *harness {
	t.Helper()
	return startWith(t, Options{Idle: func() time.Duration { return idle }})
}

// startWith is start with opts (their Version and Config set here).
func startWith(t *testing.T, opts Options) *harness { return startGroup(t, opts, "") }

// startGroup is startWith of a group f with more keys (a flow mapping's
// inside: "policy: [...]").
func startGroup(t *testing.T, opts Options, more string) *harness {
	t.Helper()
	return startLogged(t, opts, "", more, slog.New(slog.DiscardHandler))
}

// startLogged is startGroup with more settings (a flow mapping's inside:
// "session_inflight: 64"), logging to logger.
func startLogged(t *testing.T, opts Options, settings, more string, logger *slog.Logger) *harness {
	t.Helper()
	state := t.TempDir()
	if settings != "" {
		settings = ", " + settings
	}
	if more != "" {
		more = ", " + more
	}
	yaml := fmt.Sprintf("mode: flat\nstate_dir: %q\naudit: {path: \"off\"}\nsettings: {prompt_timeout: 30s%s}\ngroups:\n  f: { description: fake, command: %q%s }\n", state, settings, fakeBin, more)
	cfg, err := config.Parse(filepath.Join(state, "c.yaml"), strings.NewReader(yaml))
	if err != nil {
		t.Fatal(err)
	}
	mgr := upstream.New(cfg, logger)
	hub, err := server.New(cfg, mgr, logger)
	if err != nil {
		t.Fatal(err)
	}
	hub.Run()
	mgr.Start(context.Background())
	t.Setenv("XDG_RUNTIME_DIR", "")
	paths, err := local.PathsFor(cfg.Path, state)
	if err != nil {
		t.Fatal(err)
	}
	opts.Version, opts.Config = "v1", cfg.Path
	ln, err := local.Listen(paths)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{paths: paths, served: make(chan error, 1),
		srv: New(hub, opts, logger)}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { h.served <- h.srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		<-h.served
		hub.Close()
		mgr.Close()
	})
	return h
}

// dial says hello and returns the connection and its reader.
func (h *harness) dial(t *testing.T, hello local.Hello) (*net.UnixConn, *bufio.Reader, local.Reply) {
	t.Helper()
	c, err := local.Dial(context.Background(), h.paths)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := local.WriteLine(c, hello); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	var reply local.Reply
	if err := local.ReadLine(br, &reply); err != nil {
		t.Fatal(err)
	}
	return c, br, reply
}

func initialize(name string) string {
	return `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"` + name + `","version":"1"}}}` + "\n"
}

// Each connection is a session of its own, named in status by its
// client's initialize; a bridge of another version is refused; the face
// stops when its idle period passes with no connection.
func TestSessionsStatusVersionIdle(t *testing.T) {
	h := start(t, 300*time.Millisecond)
	for _, name := range []string{"alpha", "beta"} {
		c, br, reply := h.dial(t, local.Hello{Version: "v1", Op: local.OpSession})
		if reply.Error != "" || reply.PID != os.Getpid() {
			t.Fatalf("reply %+v", reply)
		}
		io.WriteString(c, initialize(name))
		line, err := br.ReadString('\n')
		if err != nil || !strings.Contains(line, `"protocolVersion":"2025-06-18"`) {
			t.Fatalf("initialize %s: %q %v", name, line, err)
		}
	}
	_, _, reply := h.dial(t, local.Hello{Version: "v1", Op: local.OpStatus})
	if reply.Status == nil || len(reply.Status.Sessions) != 2 || reply.Status.Sessions[0].Name != "alpha" || reply.Status.Sessions[1].Name != "beta" {
		t.Fatalf("status %+v", reply.Status)
	}
	_, _, reply = h.dial(t, local.Hello{Version: "v2", Op: local.OpSession})
	if !strings.Contains(reply.Error, "another version") || reply.Version != "v1" {
		t.Fatalf("a bridge of another version: %+v", reply)
	}
	select {
	case err := <-h.served:
		t.Fatalf("Serve returned while clients were connected: %v", err)
	default:
	}
	h.srv.mu.Lock()
	for c := range h.srv.conns {
		c.Close() // every client leaves
	}
	h.srv.mu.Unlock()
	select {
	case err := <-h.served:
		h.served <- err // for the cleanup
	case <-time.After(time.Minute): // bounds a hang, not a timing
		t.Fatal("the face did not stop after its idle period")
	}
}

// A bridge that passed its stdin and stdout is out of the path: the hub
// answers on the passed stdout, says Done when the client closes stdin,
// and ends the session when the bridge goes even though the client's
// pipes stay open; whether the hub reads and writes the passed files or
// open files of its own (OwnPassed), which it then holds alone.
func TestPassedFiles(t *testing.T) {
	for _, own := range []bool{false, true} {
		t.Run(fmt.Sprintf("OwnPassed=%v", own), func(t *testing.T) {
			testPassedFiles(t, startWith(t, Options{Idle: func() time.Duration { return 0 }, OwnPassed: own}), own)
		})
	}
}

// testPassedFiles is TestPassedFiles on h.
func testPassedFiles(t *testing.T, h *harness, own bool) {
	for _, bridgeDies := range []bool{false, true} {
		inR, inW, _ := os.Pipe()
		outR, outW, _ := os.Pipe()
		c, br, reply := h.dial(t, local.Hello{Version: "v1", Op: local.OpSession, Pass: true})
		if reply.Error != "" {
			t.Fatal(reply.Error)
		}
		setBlocking(t, inR) // as a client's os/exec makes its child's stdin
		if err := local.SendFiles(c, inR, outW); err != nil {
			t.Fatal(err)
		}
		outW.Close()
		io.WriteString(inW, initialize("passed"))
		out := bufio.NewReader(outR)
		if line, err := out.ReadString('\n'); err != nil || !strings.Contains(line, `"protocolVersion"`) {
			t.Fatalf("initialize: %q %v", line, err)
		}
		checkPassedReopened(t, inR, own) // the bridge's stdin, kept open as a bridge does
		inR.Close()
		if bridgeDies {
			c.Close()
		} else {
			inW.Close()
			var done local.Done
			if err := local.ReadLine(br, &done); err != nil || !done.Done {
				t.Fatalf("done: %+v %v", done, err)
			}
		}
		// The hub closed its end of the client's stdout.
		if _, err := io.Copy(io.Discard, out); err != nil {
			t.Fatal(err)
		}
		inW.Close()
		outR.Close()
	}
}

// setBlocking makes f's open file blocking, without f.Fd.
func setBlocking(t *testing.T, f *os.File) {
	t.Helper()
	rc, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	if cerr := rc.Control(func(fd uintptr) { err = syscall.SetNonblock(int(fd), false) }); cerr != nil || err != nil {
		t.Fatal(cerr, err)
	}
}

// The ask to serve the inspector (serve --ui) reaches Options.UI with
// its address, and the bridge gets its answer or its refusal; a face
// without UI refuses.
func TestUIAsk(t *testing.T) {
	h := start(t, 0)
	if _, _, reply := h.dial(t, local.Hello{Version: "v1", Op: local.OpUI, Addr: "8081"}); reply.UI != nil || !strings.Contains(reply.Error, "no inspector") {
		t.Errorf("without UI: %+v", reply)
	}
	asked := make(chan string, 2)
	h = startWith(t, Options{UI: func(addr string) (*local.UI, error) {
		asked <- addr
		if addr == "busy" {
			return nil, errors.New("served elsewhere")
		}
		return &local.UI{URL: "http://127.0.0.1:8081/ui/", Token: "tok"}, nil
	}})
	_, _, reply := h.dial(t, local.Hello{Version: "v1", Op: local.OpUI, Addr: "8081"})
	if reply.Error != "" || reply.UI == nil || *reply.UI != (local.UI{URL: "http://127.0.0.1:8081/ui/", Token: "tok"}) || <-asked != "8081" {
		t.Errorf("with UI: %+v", reply)
	}
	if _, _, reply := h.dial(t, local.Hello{Version: "v1", Op: local.OpUI, Addr: "busy"}); reply.UI != nil || reply.Error != "served elsewhere" {
		t.Errorf("refused: %+v", reply)
	}
}

// Asking the hub's status (or to stop, or for its inspector) is no client:
// a loop of `dynamic-mcp status` neither keeps nor restarts the idle
// period, which runs from the last session's end.
func TestControlsAreNoActivity(t *testing.T) {
	// The proof is an ask begun less than the idle period before Serve
	// returned: had it counted, Serve could not have returned yet. A
	// loaded machine can stall the asks longer than the period; then the
	// run shows nothing and the period doubles, not a guessed count.
	for idle := 600 * time.Millisecond; idle <= 8*600*time.Millisecond; idle *= 2 {
		if controlsDuringIdle(t, idle) {
			return
		}
	}
	t.Fatal("no status ask landed within the idle period before Serve returned, even at 4.8 s: the test shows nothing")
}

// controlsDuringIdle asks the status every 50 ms after the only session
// left until Serve returns, and says whether an ask began less than idle
// before that.
func controlsDuringIdle(t *testing.T, idle time.Duration) (shown bool) {
	h := start(t, idle)
	c, br, reply := h.dial(t, local.Hello{Version: "v1", Op: local.OpSession})
	if reply.Error != "" {
		t.Fatal(reply.Error)
	}
	io.WriteString(c, initialize("only"))
	if line, err := br.ReadString('\n'); err != nil || !strings.Contains(line, `"protocolVersion"`) {
		t.Fatalf("initialize: %q %v", line, err)
	}
	c.Close()
	left := time.Now()
	asks := 0
	var lastAsk time.Time // when the last answered ask began
	for {
		select {
		case err := <-h.served:
			h.served <- err // for the cleanup
			returned := time.Now()
			took := returned.Sub(left)
			// Not before the idle period; after it, by how much is the
			// machine's: status asks that kept the hub would keep it for
			// ever (below).
			if took < idle {
				t.Fatalf("Serve returned %s after the last session left, %d status asks in between; want the idle period, %s", took, asks, idle)
			}
			shown = asks > 0 && returned.Sub(lastAsk) < idle
			if !shown {
				t.Logf("idle %s: %d status asks, the last begun %s before Serve returned (%s after the session left): shows nothing", idle, asks, returned.Sub(lastAsk), took)
			}
			return shown
		case <-time.After(50 * time.Millisecond):
		}
		if time.Since(left) > time.Minute {
			t.Fatalf("the face still serves a minute after its last session left, with status asked every 50 ms (idle %s)", idle)
		}
		began := time.Now()
		conn, err := local.Dial(context.Background(), h.paths)
		if err != nil {
			continue // closing
		}
		if local.WriteLine(conn, local.Hello{Version: "v1", Op: local.OpStatus}) == nil {
			var r local.Reply
			if local.ReadLine(bufio.NewReader(conn), &r) == nil && r.Status != nil {
				asks++
				lastAsk = began
			}
		}
		conn.Close()
	}
}

// A connection that has not said Hello when the idle period ends holds
// the hub until it has: a bridge that joins then is served.
func TestIdleWaitsForHello(t *testing.T) {
	rechecked := make(chan struct{}, 1)
	h := startWith(t, Options{Idle: func() time.Duration { return 300 * time.Millisecond }, rechecked: func() {
		select {
		case rechecked <- struct{}{}:
		default:
		}
	}})
	c, err := local.Dial(context.Background(), h.paths)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The idle timer fires at least once while the connection is counted,
	// Hello unsaid: it looks again later (a timer of its own) rather than
	// stop the face.
	select {
	case <-rechecked:
	case err := <-h.served:
		h.served <- err // for the cleanup
		t.Fatalf("the face stopped while a connection was still to say Hello: %v", err)
	case <-time.After(time.Minute): // a deadline, not a guess: it fires at 300 ms
		t.Fatal("the idle timer did not fire while the connection was still to say Hello")
	}
	select {
	case err := <-h.served:
		h.served <- err // for the cleanup
		t.Fatalf("Serve returned while a connection was still to say Hello: %v", err)
	default:
	}
	if err := local.WriteLine(c, local.Hello{Version: "v1", Op: local.OpSession}); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	var reply local.Reply
	if err := local.ReadLine(br, &reply); err != nil || reply.Error != "" {
		t.Fatalf("hello: %+v %v", reply, err)
	}
	io.WriteString(c, initialize("late"))
	if line, err := br.ReadString('\n'); err != nil || !strings.Contains(line, `"protocolVersion"`) {
		t.Fatalf("initialize: %q %v", line, err)
	}
}

// logBuffer is a log's text, written by any goroutine.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// What a bridge's Hello says (its version, op, profile, the names of the
// variables it has otherwise; the address an inspector is asked for, a
// grant's argument globs, which the errors of their refusals quote) is
// quoted in the hub's log and its reply cut, as what any client sends
// (clip.Echo, clip.EchoText): 64 KiB were quoted whole, and a bridge
// could make every line of the hub's log a mebibyte.
func TestHelloQuotedLittle(t *testing.T) {
	logs := &logBuffer{}
	// The inspector's refusal quotes the address asked for, as the
	// command's (uiListenAddr, hubUI.serve) does.
	ui := func(addr string) (*local.UI, error) { return nil, fmt.Errorf("bad --ui %q: not served here", addr) }
	h := startLogged(t, Options{Idle: func() time.Duration { return 0 }, UI: ui}, "", "", slog.New(slog.NewTextHandler(logs, nil)))
	long := strings.Repeat("z", 64<<10)
	many := map[string]string{} // as many names as a Hello may give, each long (the line is at most 1 MiB)
	for i := range 256 {
		many[fmt.Sprintf("V%d_%s", i, long[:2<<10])] = "no such digest"
	}
	for _, hello := range []local.Hello{
		{Version: "v" + long, Op: local.OpSession},
		{Version: "v1", Op: "op" + long},
		{Version: "v1", Op: local.OpSession, Profile: "p" + long},
		{Version: "v1", Op: local.OpSession, Env: map[string]string{"A" + long: "no such digest", "B" + long: "nor this"}},
		{Version: "v1", Op: local.OpSession, Env: many},
		{Version: "v1", Op: local.OpUI, Addr: "127.0.0.1:" + long},
		{Version: "v1", Op: local.OpApprove, ID: "call", Grant: &approval.Options{Args: map[string]string{"path": "[" + long}}},
	} {
		if _, _, reply := h.dial(t, hello); reply.Error == "" || len(reply.Error) > 1<<10 {
			t.Errorf("a Hello of 64 KiB fields: a reply error of %d bytes: %.200s", len(reply.Error), reply.Error)
		}
	}
	// Each logged before its reply was written.
	if s := logs.String(); !strings.Contains(s, "refused a bridge of another version") || !strings.Contains(s, "refused a bridge whose environment differs") {
		t.Fatalf("the refusals are not logged:\n%.2000s", s)
	}
	for line := range strings.Lines(logs.String()) {
		if len(line) > 2<<10 {
			t.Errorf("a log line of %d bytes: %.200s", len(line), line)
		}
	}
}

// A bridge that passes its own connection to the hub as the client's
// stdin and stdout is refused: the hub would read what it writes to
// itself, and, holding the bridge's end, never see the bridge go; the
// session, and the three descriptors, were held for the hub's life (and
// kept it from its idle stop).
func TestPassedOwnConnectionRefused(t *testing.T) {
	h := start(t, 0)
	c, br, reply := h.dial(t, local.Hello{Version: "v1", Op: local.OpSession, Pass: true})
	if reply.Error != "" {
		t.Fatal(reply.Error)
	}
	f, err := c.File()
	if err != nil {
		t.Fatal(err)
	}
	if err := local.SendFiles(c, f, f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	c.SetReadDeadline(time.Now().Add(time.Minute)) // bounds a hang, not a timing
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("the hub did not close the connection it was passed as stdio: %v", err)
	}
}

// A Hello that does not decode is logged with an error that may quote
// what the bridge sent (a grant's duration: time.ParseDuration quotes it
// whole), cut as any echo: a 1 MiB Hello made a 1 MiB log line.
func TestHelloNotDecodedQuotedLittle(t *testing.T) {
	logs := &logBuffer{}
	h := startLogged(t, Options{Idle: func() time.Duration { return 0 }}, "", "", slog.New(slog.NewTextHandler(logs, nil)))
	long := strings.Repeat("9", 512<<10)
	for _, line := range []string{
		`{"dynamic-mcp":"v1","op":"approve","id":"x","grant":{"for":"` + long + `h"}}`,
		`{"dynamic-mcp":"v1","op":"approve","id":"x","grant":{"for":[` + long + `]}}`,
	} {
		c, err := local.Dial(t.Context(), h.paths)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write([]byte(line + "\n")); err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(time.Minute)) // bounds a hang, not a timing
		if _, err := io.Copy(io.Discard, c); err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	if s := logs.String(); strings.Count(s, "a local connection said no hello") != 2 {
		t.Fatalf("the Hellos' refusals are not logged:\n%.2000s", s)
	}
	for line := range strings.Lines(logs.String()) {
		if len(line) > 2<<10 {
			t.Errorf("a log line of %d bytes: %.200s", len(line), line)
		}
	}
}
