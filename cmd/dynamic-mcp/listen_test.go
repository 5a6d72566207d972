package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	mcptransport "github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/internal/await"
)

// goSDKServerEnv makes the test binary, started as a child, a 2026-07-28
// server of go-sdk's (goSDKServer).
const goSDKServerEnv = "LISTEN_TEST_GOSDK_SERVER"

func init() {
	if os.Getenv(goSDKServerEnv) == "1" {
		goSDKServer()
		os.Exit(0)
	}
}

// goSDKServer serves, over stdio, go-sdk's server with a tool grow, which
// adds a tool, grown, and a tool touch, which updates the resource
// mem://a: the server tells of either only on a listen.
func goSDKServer() {
	accept := func(context.Context, any) error { return nil }
	s := gosdk.NewServer(&gosdk.Implementation{Name: "grower", Version: "1"}, &gosdk.ServerOptions{
		SubscribeHandler:   func(ctx context.Context, r *gosdk.SubscribeRequest) error { return accept(ctx, r) },
		UnsubscribeHandler: func(ctx context.Context, r *gosdk.UnsubscribeRequest) error { return accept(ctx, r) },
	})
	s.AddResource(&gosdk.Resource{URI: "mem://a", Name: "a"}, func(context.Context, *gosdk.ReadResourceRequest) (*gosdk.ReadResourceResult, error) {
		return &gosdk.ReadResourceResult{Contents: []*gosdk.ResourceContents{{URI: "mem://a", Text: "a"}}}, nil
	})
	schema := json.RawMessage(`{"type":"object"}`)
	s.AddTool(&gosdk.Tool{Name: "touch", InputSchema: schema}, func(ctx context.Context, _ *gosdk.CallToolRequest) (*gosdk.CallToolResult, error) {
		err := s.ResourceUpdated(ctx, &gosdk.ResourceUpdatedNotificationParams{URI: "mem://a"})
		return &gosdk.CallToolResult{}, err
	})
	s.AddTool(&gosdk.Tool{Name: "grow", InputSchema: schema}, func(context.Context, *gosdk.CallToolRequest) (*gosdk.CallToolResult, error) {
		s.AddTool(&gosdk.Tool{Name: "grown", InputSchema: schema}, func(context.Context, *gosdk.CallToolRequest) (*gosdk.CallToolResult, error) {
			return &gosdk.CallToolResult{}, nil
		})
		return &gosdk.CallToolResult{Content: []gosdk.Content{&gosdk.TextContent{Text: "grown"}}}, nil
	})
	_ = s.Run(context.Background(), &gosdk.StdioTransport{})
}

// listenConfig is a flat hub in front of the fake upstream as group
// "keep", and as group "added" too when added.
func listenConfig(added bool) string {
	cfg := fmt.Sprintf("mode: flat\nsettings: { stop_grace: 1s }\ngroups:\n  keep: { description: kept, command: %q }\n", fakeBin)
	if added {
		cfg += fmt.Sprintf("  added: { description: added, command: %q }\n", fakeBin)
	}
	return cfg
}

// rewrite replaces the config at path, as an editor does (beside, then
// renamed), for the hub to reload.
func rewrite(t *testing.T, path, cfg string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// TestGoSDKListen connects go-sdk's client (2026-07-28 by default: no
// initialize, a subscriptions/listen opened by Connect when a list-changed
// handler is set) to the hub over stdio and Streamable HTTP: Connect
// returns, and its tools handler fires once the config adds a group, with
// the added tools listed by then.
func TestGoSDKListen(t *testing.T) {
	t.Parallel()
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "config.yaml")
			rewrite(t, path, listenConfig(false))
			var tr gosdk.Transport
			switch transport {
			case "stdio":
				cmd := exec.Command(hubBin, "serve", "-c", path, "--log-level", "debug")
				cmd.Env = append(os.Environ(), "DYNAMIC_MCP_HOME="+t.TempDir())
				stderr := &lockedBuffer{}
				cmd.Stderr = stderr
				t.Cleanup(func() {
					if t.Failed() {
						t.Logf("stderr of the hub:\n%s", stderr.String())
					}
				})
				tr = &gosdk.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second}
			case "http":
				base := startHTTPHubAt(t, path)
				tr = &gosdk.StreamableClientTransport{Endpoint: base + "/mcp", MaxRetries: -1}
			}

			changed := make(chan struct{}, 100)
			client := gosdk.NewClient(&gosdk.Implementation{Name: "listen-test", Version: "1"}, &gosdk.ClientOptions{
				ToolListChangedHandler: func(context.Context, *gosdk.ToolListChangedRequest) { changed <- struct{}{} },
			})
			// Connect waits for the listen's response headers with no
			// deadline of its own: a hub that never answers holds it.
			type connected struct {
				cs  *gosdk.ClientSession
				err error
			}
			got := make(chan connected, 1)
			go func() {
				cs, err := client.Connect(t.Context(), tr, nil)
				got <- connected{cs, err}
			}()
			var c connected
			select {
			case c = <-got:
			case <-time.After(time.Minute): // bounds a hang, not a timing
				t.Fatal("Connect did not return")
			}
			if c.err != nil {
				t.Fatalf("Connect: %v", c.err)
			}
			cs := c.cs
			defer cs.Close()
			if v := cs.InitializeResult().ProtocolVersion; v < "2026-07-28" {
				t.Fatalf("the client speaks %s, not 2026-07-28", v)
			}
			listed := func(name string) bool {
				res, err := cs.ListTools(t.Context(), nil)
				if err != nil {
					t.Fatalf("tools/list: %v", err)
				}
				for _, tool := range res.Tools {
					if tool.Name == name {
						return true
					}
				}
				return false
			}
			await.Costly(t, 10*time.Second, "keep's tools", func() bool { return listed("keep__echo") })

			rewrite(t, path, listenConfig(true))
			deadline := time.After(await.Slow * 20 * time.Second) // bounds a hang: the reload starts a process
			for {
				select {
				case <-changed:
				case <-deadline:
					t.Fatal("no tools/list_changed that lists added's tools after the config change")
				}
				if listed("added__echo") {
					return // told of the change the reload made
				}
			}
		})
	}
}

// startHTTPHubAt serves the config at path over HTTP on a free loopback
// port without a token (loopback, as the conformance suite is served)
// until the test ends, and returns the base URL.
func startHTTPHubAt(t *testing.T, path string) string {
	t.Helper()
	stderr := &lockedBuffer{}
	cmd := exec.Command(hubBin, "serve", "-c", path, "--http", "127.0.0.1:0", "--insecure-no-auth", "--log-level", "debug")
	cmd.Env = append(os.Environ(), "DYNAMIC_MCP_HOME="+t.TempDir())
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second * await.Slow):
			cmd.Process.Kill()
			<-done
			t.Error("the HTTP hub did not stop on SIGINT")
		}
		if t.Failed() {
			t.Logf("stderr of the hub:\n%s", stderr.String())
		}
	})
	addr := regexp.MustCompile(`serving over HTTP" addr=(\S+)`)
	var base string
	await.Costly(t, 10*time.Second, "the hub to listen", func() bool {
		if m := addr.FindStringSubmatch(stderr.String()); m != nil {
			base = "http://" + strings.TrimSpace(m[1])
			return true
		}
		return false
	})
	return base
}

// TestGoSDKListenThroughModernUpstream puts go-sdk's server, which speaks
// 2026-07-28 and tells of a change only on a listen, behind the hub, and
// go-sdk's client in front of it: the client's tools handler fires when
// the server adds a tool, which the hub hears on its own listen upstream.
func TestGoSDKListenThroughModernUpstream(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "config.yaml")
	rewrite(t, path, fmt.Sprintf("mode: flat\nsettings: { stop_grace: 1s }\ngroups:\n  up: { description: grows, command: %q, env: { %s: \"1\" } }\n", testBin, goSDKServerEnv))
	cmd := exec.Command(hubBin, "serve", "-c", path, "--log-level", "debug")
	cmd.Env = append(os.Environ(), "DYNAMIC_MCP_HOME="+t.TempDir())
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("stderr of the hub:\n%s", stderr.String())
		}
	})
	changed := make(chan struct{}, 100)
	updated := make(chan string, 100)
	client := gosdk.NewClient(&gosdk.Implementation{Name: "listen-test", Version: "1"}, &gosdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *gosdk.ToolListChangedRequest) { changed <- struct{}{} },
		ResourceUpdatedHandler: func(_ context.Context, r *gosdk.ResourceUpdatedNotificationRequest) { updated <- r.Params.URI },
	})
	ctx, cancel := untilHung(t) // the race-built hub's start: a loaded machine is slow
	defer cancel()
	cs, err := client.Connect(ctx, &gosdk.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second}, nil)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	defer cs.Close()
	listed := func(name string) bool {
		res, err := cs.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		for _, tool := range res.Tools {
			if tool.Name == name {
				return true
			}
		}
		return false
	}
	await.Costly(t, 10*time.Second, "the upstream's tools", func() bool { return listed("up__grow") })
	if _, err := cs.CallTool(t.Context(), &gosdk.CallToolParams{Name: "up__grow", Arguments: map[string]any{}}); err != nil {
		t.Fatalf("up__grow: %v", err)
	}
	deadline := time.After(await.Slow * 20 * time.Second) // bounds a hang, not a timing
	for !listed("up__grown") {
		select {
		case <-changed:
		case <-deadline:
			t.Fatal("no tools/list_changed that lists up__grown after the upstream's change")
		}
	}

	// A resource the client subscribes to (on a listen of its own) is
	// subscribed to upstream on the hub's listen there: an update reaches
	// the client. The client's Subscribe does not wait for either listen:
	// the update is made until one arrives.
	if err := cs.Subscribe(t.Context(), &gosdk.SubscribeParams{URI: "mem://a"}); err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := cs.CallTool(t.Context(), &gosdk.CallToolParams{Name: "up__touch", Arguments: map[string]any{}}); err != nil {
			t.Fatalf("up__touch: %v", err)
		}
		select {
		case uri := <-updated:
			if uri != "mem://a" {
				t.Errorf("updated %q, want mem://a", uri)
			}
			return
		case <-tick.C:
		case <-deadline:
			t.Fatal("no resources/updated of mem://a")
		}
	}
}

// TestMCPGoListen is TestGoSDKListen for mcp-go's client in its default
// era (2026-07-28: server/discover, no initialize), whose listen is opened
// by ListenAsync: over stdio and Streamable HTTP, its notification handler
// hears tools/list_changed once the config adds a group, with the added
// tools listed by then.
func TestMCPGoListen(t *testing.T) {
	t.Parallel()
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "config.yaml")
			rewrite(t, path, listenConfig(false))
			var tr mcptransport.Interface
			switch transport {
			case "stdio":
				tr = mcptransport.NewStdio(hubBin, []string{"DYNAMIC_MCP_HOME=" + t.TempDir()}, "serve", "-c", path)
			case "http":
				h, err := mcptransport.NewStreamableHTTP(startHTTPHubAt(t, path) + "/mcp")
				if err != nil {
					t.Fatal(err)
				}
				tr = h
			}
			c := mcpclient.NewClient(tr)
			changed := make(chan struct{}, 100)
			c.OnNotification(func(n mcpgo.JSONRPCNotification) {
				if n.Method == "notifications/tools/list_changed" {
					changed <- struct{}{}
				}
			})
			ctx, cancel := untilHung(t) // every request of the client: a loaded machine is slow
			defer cancel()
			if err := c.Start(ctx); err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			res, err := c.Initialize(ctx, mcpgo.InitializeRequest{})
			if err != nil {
				t.Fatalf("initialize: %v", err)
			}
			if res.ProtocolVersion < "2026-07-28" {
				t.Fatalf("the client speaks %s, not 2026-07-28", res.ProtocolVersion)
			}
			listenErr := make(chan error, 1)
			stop, err := c.ListenAsync(ctx, mcpgo.SubscriptionFilter{ToolsListChanged: true}, func(err error) { listenErr <- err })
			if err != nil {
				t.Fatalf("listen: %v", err)
			}
			defer stop()
			listed := func(name string) bool {
				res, err := c.ListTools(ctx, mcpgo.ListToolsRequest{})
				if err != nil {
					t.Fatalf("tools/list: %v", err)
				}
				for _, tool := range res.Tools {
					if tool.Name == name {
						return true
					}
				}
				return false
			}
			await.Costly(t, 10*time.Second, "keep's tools", func() bool { return listed("keep__echo") })

			rewrite(t, path, listenConfig(true))
			deadline := time.After(await.Slow * 20 * time.Second) // bounds a hang: the reload starts a process
			for {
				select {
				case <-changed:
				case err := <-listenErr:
					t.Fatalf("the listen ended: %v", err)
				case <-deadline:
					t.Fatal("no tools/list_changed that lists added's tools after the config change")
				}
				if listed("added__echo") {
					return
				}
			}
		})
	}
}
