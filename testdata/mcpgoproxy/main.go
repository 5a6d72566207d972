// Command mcpgoproxy is the plain mcp-go proxy that BenchmarkToolCallLatency
// compares the hub with over HTTP: one stdio upstream, reached with mcp-go's
// client, whose tools are listed once at start and re-served by an mcp-go
// MCPServer over Streamable HTTP, each call forwarded with the client's
// CallTool. It is what TBXark/mcp-proxy does (client.go, addToolsToServer),
// without its config, auth and other lists.
//
//	mcpgoproxy -listen 127.0.0.1:0 -- COMMAND [ARG...]
//
// It prints "listening on ADDR" on stdout once it serves /mcp, and exits when
// stdin closes.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "serve Streamable HTTP at /mcp on `addr`")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: mcpgoproxy [-listen addr] -- command [arg...]")
		os.Exit(2)
	}
	if err := run(*listen, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "mcpgoproxy:", err)
		os.Exit(1)
	}
}

func run(listen string, argv []string) error {
	ctx := context.Background()
	upstream, err := client.NewStdioMCPClient(argv[0], nil, argv[1:]...)
	if err != nil {
		return fmt.Errorf("start upstream: %w", err)
	}
	defer upstream.Close()
	var init mcp.InitializeRequest
	init.Params.ProtocolVersion = "2025-06-18"
	init.Params.ClientInfo = mcp.Implementation{Name: "mcpgoproxy", Version: "1"}
	if _, err := upstream.Initialize(ctx, init); err != nil {
		return fmt.Errorf("initialize upstream: %w", err)
	}
	tools, err := upstream.ListTools(ctx, mcp.ListToolsRequest{}) // follows every page
	if err != nil {
		return fmt.Errorf("list upstream tools: %w", err)
	}

	s := server.NewMCPServer("mcpgoproxy", "1", server.WithToolCapabilities(true), server.WithRecovery())
	for _, tool := range tools.Tools {
		s.AddTool(tool, upstream.CallTool)
	}
	// Stateless, as TBXark/mcp-proxy serves Streamable HTTP.
	h := server.NewStreamableHTTPServer(s, server.WithStateLess(true))
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)

	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	fmt.Printf("listening on %s\n", ln.Addr())
	srv := &http.Server{Handler: mux}
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		srv.Close()
	}()
	if err := srv.Serve(ln); err != http.ErrServerClosed {
		return err
	}
	return nil
}
