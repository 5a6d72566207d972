package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
)

// testSessionKey is the replicas' http.session_keys entry, as the
// environment gives it.
var testSessionKey = base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))

// replicaConfig is the config every replica of a test serves: the fake
// upstream in flat mode, session ids sealed under $DYNAMIC_MCP_SESSION_KEY,
// and extra lines of the http block.
func replicaConfig(t testing.TB, httpExtra string) string {
	t.Helper()
	cfg := fmt.Sprintf("mode: flat\nhttp:\n  session_keys: [\"${DYNAMIC_MCP_SESSION_KEY}\"]\n%sgroups:\n  f: { description: fake, command: %q }\n", httpExtra, fakeBin)
	return writeConfig(t, cfg)
}

// hubReplica is one serve --http process of a test.
type hubReplica struct {
	addr   string // host:port it listens on
	cmd    *exec.Cmd
	stderr *lockedBuffer
	exited chan struct{}
}

// startReplica starts serve --http of the config at path on a free
// loopback port, with the tests' token and session key, until the test
// ends, and returns once it listens.
func startReplica(t testing.TB, path string) *hubReplica {
	t.Helper()
	return startReplicaAt(t, path, "info")
}

// startReplicaAt is startReplica at the given --log-level.
func startReplicaAt(t testing.TB, path, level string) *hubReplica {
	t.Helper()
	r := &hubReplica{stderr: &lockedBuffer{}, exited: make(chan struct{})}
	r.cmd = exec.Command(raceHubBin, "serve", "-c", path, "--http", "127.0.0.1:0", "--log-level", level)
	r.cmd.Env = append(os.Environ(), "DYNAMIC_MCP_TOKEN="+testToken, "DYNAMIC_MCP_HOME="+t.TempDir(), "DYNAMIC_MCP_SESSION_KEY="+testSessionKey)
	r.cmd.Stderr = r.stderr
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.cmd.Wait(); close(r.exited) }()
	t.Cleanup(func() {
		r.cmd.Process.Signal(os.Interrupt)
		select {
		case <-r.exited:
		case <-time.After(45 * time.Second):
			r.cmd.Process.Kill()
			<-r.exited
			t.Error("a replica did not stop on SIGINT")
		}
		if strings.Contains(r.stderr.String(), "WARNING: DATA RACE") {
			t.Error("the race detector found a data race in a replica")
		}
		if t.Failed() {
			t.Logf("stderr of the replica at %s:\n%s", r.addr, r.stderr.String())
		}
	})
	r.addr = servingAddr(t, "a replica", r.stderr)
	if !strings.Contains(r.stderr.String(), "session_keys=1") {
		t.Fatalf("the serving line does not say that ids are sealed:\n%s", r.stderr)
	}
	return r
}

// ready reports whether the replica's /readyz answers 200.
func (r *hubReplica) ready() bool {
	resp, err := testClient.Get("http://" + r.addr + "/readyz")
	if err != nil {
		return false
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// startReadyReplicas starts n replicas with start on the config at path
// and returns them, and their addresses, once every /readyz answers 200.
func startReadyReplicas(t testing.TB, n int, start func() *hubReplica) ([]*hubReplica, []string) {
	t.Helper()
	replicas := make([]*hubReplica, n)
	for i := range replicas {
		replicas[i] = start()
	}
	addrs := make([]string, n)
	for i, r := range replicas {
		addrs[i] = r.addr
		await.Costly(t, 20*time.Second, "replica "+r.addr+" to be ready", r.ready)
	}
	return replicas, addrs
}

// nodeScript is a testdata/sdkclient script a test drives: lines to its
// stdin, the lines of its stdout on lines.
type nodeScript struct {
	name   string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string
	stderr *lockedBuffer
	wg     sync.WaitGroup
}

// startNodeScript starts node on testdata/sdkclient/script with args,
// trusting caFile's certificates if it is not empty, until ctx ends; the
// test defers stop.
func startNodeScript(t testing.TB, ctx context.Context, caFile, script string, args ...string) *nodeScript {
	t.Helper()
	s := &nodeScript{name: script, lines: make(chan string, 8), stderr: &lockedBuffer{}}
	s.cmd = exec.CommandContext(ctx, "node", append([]string{filepath.Join(repoDir, "testdata", "sdkclient", script)}, args...)...)
	s.cmd.Env = append(os.Environ(), clientTimeoutEnv())
	if caFile != "" {
		s.cmd.Env = append(s.cmd.Env, "NODE_EXTRA_CA_CERTS="+caFile)
	}
	stdin, err := s.cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	s.stdin = stdin
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	s.cmd.Stderr = s.stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.wg.Go(func() { // ends when node exits and its stdout closes
		defer close(s.lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
	})
	return s
}

// stop closes the script's stdin and waits for it, and logs its stderr
// if the test failed.
func (s *nodeScript) stop(t testing.TB) {
	s.stdin.Close()
	s.cmd.Wait()
	s.wg.Wait()
	if t.Failed() {
		t.Logf("stderr of %s:\n%s", s.name, s.stderr)
	}
}

// next reads the script's next line, a check that must be want and ok.
func (s *nodeScript) next(t testing.TB, want string) sdkReplicaCheck {
	t.Helper()
	line, ok := <-s.lines
	var c sdkReplicaCheck
	if !ok || json.Unmarshal([]byte(line), &c) != nil || c.Check != want || !c.OK {
		t.Fatalf("want %q ok, got %q", want, line)
	}
	t.Log(line)
	return c
}

// Three replicas of the hub with the same session_keys behind Debian's
// nginx: the official TypeScript SDK client initializes once and makes
// calls; then a replica that served its session is killed (SIGKILL), and
// the client's next call succeeds at another, without a new initialize.
// Two layouts: round-robin, where each request goes to the next replica
// (each resumes the session from its id at its first request), and one
// primary with two backups, where every request goes to the primary until
// it dies and the backups, which have never seen the session, resume it
// then. BenchmarkReplicaResume times it (docs/performance.md's figure).
func TestReplicasResumeASessionWhoseReplicaDied(t *testing.T) {
	t.Parallel()
	nginxBinary(t)
	npmTestTool(t, "@modelcontextprotocol", "sdk", "package.json")
	t.Run("round-robin", func(t *testing.T) { replicaDies(t, false) })
	t.Run("primary and backups", func(t *testing.T) { replicaDies(t, true) })
}

// replicaDies runs TestReplicasResumeASessionWhoseReplicaDied's client
// through three replicas (round-robin, or with backups the first replica
// the primary and the other two its backups), kills the one that served
// its session, and returns the client's "after kill" check: the time
// from its word of the kill to its first successful call, and the calls
// that took.
func replicaDies(t testing.TB, backups bool) sdkReplicaCheck {
	t.Helper()
	path := replicaConfig(t, "")
	replicas, addrs := startReadyReplicas(t, 3, func() *hubReplica { return startReplica(t, path) })
	if backups {
		for i := range addrs[1:] {
			addrs[i+1] += " backup"
		}
	}
	n := startNginxReplicas(t, addrs, true)

	ctx, cancel := untilHung(t)
	defer cancel()
	node := startNodeScript(t, ctx, n.caFile, "replicas.mjs", "--url", n.https+"/mcp", "--token", testToken, "--group", "f")
	defer node.stop(t)
	node.next(t, "before kill")

	// Round-robin: the replica that initialized the session is the one
	// that did not resume it; each other one has. With backups: the
	// primary, and no backup has seen the session yet.
	victim := replicas[0]
	resumed := 0
	for _, r := range replicas {
		if strings.Contains(r.stderr.String(), "resumed an HTTP session from its id") {
			resumed++
		} else if !backups {
			victim = r
		}
	}
	if want := map[bool]int{false: 2, true: 0}[backups]; resumed != want {
		t.Fatalf("%d replicas resumed the session before the kill, want %d", resumed, want)
	}
	if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-victim.exited
	io.WriteString(node.stdin, "killed\n")
	after := node.next(t, "after kill")
	node.next(t, "calls after kill")
	if backups {
		for _, r := range replicas[1:] {
			if !strings.Contains(r.stderr.String(), "resumed an HTTP session from its id") {
				t.Errorf("backup %s did not resume the session", r.addr)
			}
		}
	}
	return after
}

// sdkReplicaCheck is a line replicas.mjs (relay.mjs, resume.mjs) prints.
type sdkReplicaCheck struct {
	Check    string `json:"check"`
	OK       bool   `json:"ok"`
	ResumeMS int    `json:"resumeMs"`
	Attempts int    `json:"attempts"`
	Line     string `json:"-"`
}

// A replica told to stop (SIGTERM) drains: /readyz turns 503 at once,
// a new session is refused 503, its GET stream closes (so that the client
// reconnects, through the balancer, elsewhere), and the call in flight
// finishes and is answered; then the process exits 0.
func TestReplicaDrainsOnSIGTERM(t *testing.T) {
	t.Parallel()
	r := startReplica(t, replicaConfig(t, "  drain_timeout: 5m\n")) // bounds a hang: the call ends when the test opens its gate
	await.Costly(t, 20*time.Second, "the replica to be ready", r.ready)
	hc := &http.Client{Transport: authorized{testClient.Transport}}
	s := &httpSession{url: "http://" + r.addr + "/mcp", hc: hc}
	initialize := func() (http.Header, error) {
		_, header, err := s.post("initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"}})
		return header, err
	}
	header, err := initialize()
	if err != nil {
		t.Fatal(err)
	}
	s.id = header.Get("Mcp-Session-Id")
	if _, _, err := s.post("notifications/initialized", nil); err != nil {
		t.Fatal(err)
	}
	await.Costly(t, 20*time.Second, "f__echo", func() bool { return s.caller("f__echo")() == nil })

	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, s.url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", s.id)
	stream, err := hc.Do(req)
	if err != nil || stream.StatusCode != http.StatusOK {
		t.Fatalf("GET stream: %v %v", err, stream)
	}
	defer stream.Body.Close()
	streamEnded := make(chan struct{})
	go func() { io.Copy(io.Discard, stream.Body); close(streamEnded) }()

	type answer struct {
		res json.RawMessage
		err error
	}
	slow := make(chan answer, 1)
	// The call lasts until the test opens its gate, once /readyz has been
	// read while draining: a call of a fixed time ended first on a loaded
	// machine (1.5 s over the metrics wait and the signal, later more than
	// 6 s), and the hub, drained at once, was gone.
	gate := filepath.Join(t.TempDir(), "gate")
	go func() {
		res, _, err := s.post("tools/call", map[string]any{"name": "f__sleep", "arguments": map[string]any{"ms": 0, "gate": gate}})
		slow <- answer{res, err}
	}()
	inFlight := regexp.MustCompile(`(?m)^dynamic_mcp_requests_in_flight(\{[^}]*\})? [1-9]`)
	await.Costly(t, 10*time.Second, "the call in flight", func() bool {
		resp, err := hc.Get("http://" + r.addr + "/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return inFlight.Match(b)
	})
	if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	signalled := time.Now()
	await.Costly(t, 2*time.Second, "/readyz to turn 503", func() bool {
		resp, err := testClient.Get("http://" + r.addr + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusServiceUnavailable
	})
	fresh := &httpSession{url: s.url, hc: hc}
	if _, _, err := fresh.post("initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"}}); err == nil || !strings.Contains(err.Error(), "503") {
		t.Errorf("a new session while draining: %v, want 503", err)
	}
	select {
	case <-streamEnded:
	case <-time.After(time.Minute): // bounds a hang, not a timing
		t.Error("the GET stream stayed open while draining")
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	a := <-slow
	if a.err != nil || !strings.Contains(string(a.res), "slept 0") {
		t.Errorf("the call in flight: %s %v", a.res, a.err)
	}
	select {
	case <-r.exited:
	case <-time.After(time.Minute): // bounds a hang, not a timing
		t.Fatal("the replica did not exit after draining")
	}
	if code := r.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit status %d", code)
	}
	if !strings.Contains(r.stderr.String(), "drained") {
		t.Errorf("no drained line in the log")
	}
	t.Logf("exited %s after SIGTERM", time.Since(signalled).Round(time.Millisecond))
}
