package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
)

// baseEnvVar names another build of the hub (say main's, built with go
// build ./cmd/dynamic-mcp) for the http line to measure beside this one,
// as "base": a change's figures against its base's in one run.
const baseEnvVar = "DYNAMIC_MCP_BENCH_BASE"

// benchHTTP compares the hub's Streamable HTTP face with a plain mcp-go
// proxy of the same upstream, both separate processes driven by the same
// client loop (see BenchmarkToolCallLatency), and with TBXark/mcp-proxy
// too when tbxarkEnvVar names its binary, and another build of the hub
// when baseEnvVar does.
func benchHTTP(b *testing.B) {
	proxyURL, proxyMeter := startMCPGoProxy(b)
	hubURL, hubMeter := startHTTPHubForBench(b, flatConfig())
	proxy := openHTTPSession(b, proxyURL)
	hub := openHTTPSession(b, hubURL)
	proxyCall, hubCall := proxy.caller("echo"), hub.caller("f__echo")
	// The hub answers before its upstream is ready; wait for f__echo.
	await.Costly(b, 30*time.Second, "f__echo through the hub over HTTP", func() bool { return hubCall() == nil })
	calls := []func() error{proxyCall, hubCall}
	meters := []procMeter{proxyMeter, hubMeter}
	var tbxark *httpSession
	if bin := os.Getenv(tbxarkEnvVar); bin != "" {
		tbxarkURL, tbxarkMeter := startTBXark(b, bin)
		tbxark = openHTTPSession(b, tbxarkURL)
		calls = append(calls, tbxark.caller("echo"))
		meters = append(meters, tbxarkMeter)
	}
	base := -1 // the index of the base's calls
	if bin := os.Getenv(baseEnvVar); bin != "" {
		baseURL, baseMeter := startHTTPHubBinForBench(b, bin, flatConfig())
		baseCall := openHTTPSession(b, baseURL).caller("f__echo")
		await.Costly(b, 30*time.Second, "f__echo through the base hub over HTTP", func() bool { return baseCall() == nil })
		base = len(calls)
		calls = append(calls, baseCall)
		meters = append(meters, baseMeter)
	}
	warmUp(b, calls...)
	// Whether a server answers with JSON or with a stream costs it
	// differently: say which, since the two may differ.
	b.Logf("tools/call answered as: hub %q, proxy %q", *hub.answeredAs.Load(), *proxy.answeredAs.Load())
	if tbxark != nil {
		b.Logf("tools/call answered by TBXark/mcp-proxy as %q", *tbxark.answeredAs.Load())
	}
	for _, inflight := range benchInflight {
		b.Run(fmt.Sprintf("inflight=%d", inflight), func(b *testing.B) {
			s, err := measureRoundsMetered(b.N, inflight, calls, meters, nil)
			if err != nil {
				b.Fatal(err)
			}
			p, h := s[0], s[1]
			p.report(b, "proxy")
			h.report(b, "hub")
			p.reportUse(b, "proxy")
			h.reportUse(b, "hub")
			reportRSS(b, hubMeter, "hub")
			if inflight == 1 {
				b.ReportMetric(float64(h.quantile(0.5))/float64(p.quantile(0.5)), "http-p50-ratio")
			} else {
				b.ReportMetric(h.perSecond()/p.perSecond(), "http-tput-ratio")
			}
			if tbxark != nil {
				t := s[2]
				t.report(b, "tbxark")
				t.reportUse(b, "tbxark")
				reportRSS(b, meters[2], "tbxark")
				if hc, _, _ := h.perCall(); hc > 0 {
					tc, _, _ := t.perCall()
					b.ReportMetric(hc/tc, "hub/tbxark-cpu-ratio")
				}
				if inflight == 1 {
					b.ReportMetric(float64(h.quantile(0.5))/float64(t.quantile(0.5)), "hub/tbxark-p50-ratio")
					b.ReportMetric(float64(p.quantile(0.5))/float64(t.quantile(0.5)), "proxy/tbxark-p50-ratio")
				} else {
					b.ReportMetric(h.perSecond()/t.perSecond(), "hub/tbxark-tput-ratio")
					b.ReportMetric(p.perSecond()/t.perSecond(), "proxy/tbxark-tput-ratio")
				}
			}
			if base >= 0 {
				reportAgainst(b, inflight, h, s[base], "base")
				reportRSS(b, meters[base], "base")
			}
			b.ReportMetric(0, "ns/op")
		})
	}
}

// reportAgainst reports the hub's figures against another server's, named
// other, measured in the same rounds.
func reportAgainst(b *testing.B, inflight int, h, o sample, other string) {
	o.report(b, other)
	o.reportUse(b, other)
	if hc, _, _ := h.perCall(); hc > 0 {
		oc, _, _ := o.perCall()
		b.ReportMetric(hc/oc, "hub/"+other+"-cpu-ratio")
	}
	if inflight == 1 {
		b.ReportMetric(float64(h.quantile(0.5))/float64(o.quantile(0.5)), "hub/"+other+"-p50-ratio")
	} else {
		b.ReportMetric(h.perSecond()/o.perSecond(), "hub/"+other+"-tput-ratio")
	}
}

// reportRSS reports the resident memory of m's process right after the
// calls, in MiB, as name-rss-MB (the hub here is the test binary, which
// carries the tests: about 2 MiB more than a built hub).
func reportRSS(b *testing.B, m procMeter, name string) {
	if status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", m.pid)); err == nil {
		b.ReportMetric(statusMiB(b, status, "VmRSS:"), name+"-rss-MB")
	}
}

// startHTTPHubForBench starts the hub binary serving cfg over HTTP on a
// loopback port of its choosing without auth, and returns the URL of its
// /mcp once it listens, and its meter. Its log is at level info for the
// line that says where it listens: the hub logs nothing per call at info.
func startHTTPHubForBench(b *testing.B, cfg string) (string, procMeter) {
	b.Helper()
	return startHTTPHubBinForBench(b, hubBin, cfg)
}

// startHTTPHubBinForBench is startHTTPHubForBench with the hub binary bin.
func startHTTPHubBinForBench(b *testing.B, bin, cfg string) (string, procMeter) {
	b.Helper()
	path := filepath.Join(b.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", "-c", path, "--http", "127.0.0.1:0", "--insecure-no-auth", "--log-level", "info")
	cmd.Env = append(os.Environ(), "DYNAMIC_MCP_HOME="+b.TempDir())
	stderr := startBenchProcess(b, cmd, "the hub")
	return "http://" + servingAddr(b, "the hub", stderr) + "/mcp", procMeter{cmd.Process.Pid}
}

// buildForBench builds the command in dir, relative to this package,
// into a temporary directory, and returns the binary's path.
func buildForBench(b *testing.B, dir string) string {
	b.Helper()
	bin := filepath.Join(b.TempDir(), filepath.Base(filepath.Join(repoDir, "cmd", "dynamic-mcp", dir)))
	args := append(append([]string{"build"}, buildFlags...), "-o", bin, dir)
	if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		b.Fatalf("build %s: %v\n%s", dir, err, out)
	}
	return bin
}

// startMCPGoProxy builds testdata/mcpgoproxy, starts it on the fake and
// returns the URL of its /mcp and its meter.
func startMCPGoProxy(b *testing.B) (string, procMeter) {
	b.Helper()
	bin := buildForBench(b, "../../testdata/mcpgoproxy")
	cmd := exec.Command(bin, "-listen", "127.0.0.1:0", "--", fakeBin)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	stderr := startBenchProcess(b, cmd, "mcpgoproxy")
	addr := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		addr <- strings.TrimPrefix(strings.TrimSpace(line), "listening on ")
		io.Copy(io.Discard, stdout)
	}()
	select {
	case a := <-addr:
		if a == "" {
			b.Fatalf("mcpgoproxy did not start:\n%s", stderr)
		}
		return "http://" + a + "/mcp", procMeter{cmd.Process.Pid}
	case <-time.After(30 * time.Second):
		b.Fatalf("mcpgoproxy did not say where it listens:\n%s", stderr)
		return "", procMeter{}
	}
}

// startBenchProcess starts cmd with its stderr kept and stops it when the
// benchmark ends: stdin closed and SIGINT, then SIGKILL after 10 s.
func startBenchProcess(b *testing.B, cmd *exec.Cmd, what string) *lockedBuffer {
	b.Helper()
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		stdin.Close()
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if b.Failed() {
			b.Logf("stderr of %s:\n%s", what, stderr)
		}
	})
	return stderr
}

// httpSession is a Streamable HTTP client reduced to what the benchmark
// times: one POST per request, its answer read as application/json or as a
// text/event-stream that carries the response, the body read to its end so
// that the connection goes back to the pool. It takes no part in anything
// else of the protocol.
type httpSession struct {
	url    string
	hc     *http.Client
	id     string // Mcp-Session-Id from initialize; none from a stateless server
	nextID atomic.Int64
	// answeredAs is the Content-Type of the last answer to a request.
	answeredAs atomic.Pointer[string]
}

// openHTTPSession initializes a session with the server at url.
func openHTTPSession(b *testing.B, url string) *httpSession {
	b.Helper()
	hc := &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			MaxIdleConns: 128, MaxIdleConnsPerHost: 64, IdleConnTimeout: 90 * time.Second,
			DisableCompression: true,
		},
	}
	b.Cleanup(hc.CloseIdleConnections)
	return openHTTPSessionWith(b, url, hc)
}

// caller returns a call of tool's echo in the session.
func (s *httpSession) caller(tool string) func() error {
	params := map[string]any{"name": tool, "arguments": map[string]any{"text": "x"}}
	return func() error {
		res, _, err := s.post("tools/call", params)
		if err != nil {
			return fmt.Errorf("tools/call %s: %w", tool, err)
		}
		return checkEcho(tool, res)
	}
}

// rpcResponse is a JSON-RPC response, or another message on a stream.
type rpcResponse struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// post sends a request, or a notification when method starts with
// "notifications/", and returns the response's result and the answer's
// header.
func (s *httpSession) post(method string, params any) (json.RawMessage, http.Header, error) {
	msg := map[string]any{"jsonrpc": "2.0", "method": method}
	if params != nil {
		msg["params"] = params
	}
	var id string
	notification := strings.HasPrefix(method, "notifications/")
	if !notification {
		id = strconv.FormatInt(s.nextID.Add(1), 10)
		msg["id"] = json.Number(id)
	}
	body, err := json.Marshal(msg)
	if err != nil {
		return nil, nil, err
	}
	req, err := http.NewRequest(http.MethodPost, s.url, bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if method != "initialize" {
		req.Header.Set("MCP-Protocol-Version", "2025-06-18")
	}
	if s.id != "" {
		req.Header.Set("Mcp-Session-Id", s.id)
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	// Read to the end whatever happens, so that the connection is reused.
	defer io.Copy(io.Discard, resp.Body)
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
		return nil, resp.Header, fmt.Errorf("HTTP %s: %s", resp.Status, bytes.TrimSpace(b))
	}
	if notification {
		return nil, resp.Header, nil
	}
	ct := resp.Header.Get("Content-Type")
	s.answeredAs.Store(&ct)
	var r *rpcResponse
	if strings.HasPrefix(ct, "text/event-stream") {
		r, err = readSSEResponse(resp.Body, id)
	} else {
		r = &rpcResponse{}
		err = json.NewDecoder(resp.Body).Decode(r)
	}
	if err != nil {
		return nil, resp.Header, err
	}
	if string(r.ID) != id {
		return nil, resp.Header, fmt.Errorf("response to id %s, want %s", r.ID, id)
	}
	if r.Error != nil {
		return nil, resp.Header, fmt.Errorf("error %d %s", r.Error.Code, r.Error.Message)
	}
	return r.Result, resp.Header, nil
}

// readSSEResponse reads events until one holds the response with id,
// passing over notifications and requests sent on the stream before it.
func readSSEResponse(body io.Reader, id string) (*rpcResponse, error) {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	var data []byte
	// dispatch reports whether the event read so far is the response.
	dispatch := func() (*rpcResponse, error) {
		defer func() { data = data[:0] }()
		if len(data) == 0 {
			return nil, nil
		}
		var r rpcResponse
		if err := json.Unmarshal(data, &r); err != nil {
			return nil, fmt.Errorf("event data %q: %w", data, err)
		}
		if r.Method == "" && string(r.ID) == id {
			return &r, nil
		}
		return nil, nil
	}
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 { // the end of an event
			if r, err := dispatch(); r != nil || err != nil {
				return r, err
			}
			continue
		}
		if v, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, bytes.TrimPrefix(v, []byte(" "))...)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if r, err := dispatch(); r != nil || err != nil { // a last event without its blank line
		return r, err
	}
	return nil, errNoResponse
}

// errNoResponse is returned when an answer ends without the response to the
// request it answers.
var errNoResponse = errors.New("the answer holds no response to the request")
