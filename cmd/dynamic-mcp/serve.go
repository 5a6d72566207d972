package main

import (
	"context"
	"flag"
	"io"

	"github.com/dynamic-mcp/dynamic-mcp/server"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/traffic"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// serveCmd serves MCP over stdio until the client closes stdin or a signal
// arrives, then stops every upstream by the ladder.
func serveCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	var c common
	var httpAddr string
	var noAuth bool
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	c.registerLogging(fs, "info")
	fs.StringVar(&httpAddr, "http", "", "serve over HTTP on `addr` (\"8080\" or \":8080\" is loopback) instead of stdio")
	fs.BoolVar(&noAuth, "insecure-no-auth", false, "with --http on loopback: accept requests without a bearer token (for tests)")
	if err := c.parse(fs, args); err != nil {
		return err
	}
	cfg, logger, closeLog, err := c.open(stderr)
	if err != nil {
		return err
	}
	defer closeLog()
	// The hub is built and reading the manager's events before any
	// upstream starts; it closes first, the upstreams after it.
	mgr := upstream.New(cfg, logger)
	defer mgr.Close()
	hub, err := server.New(cfg, mgr, logger)
	if err != nil {
		return err
	}
	// What watches the hub's traffic (the inspector, metrics, traces) is
	// attached before anything is served.
	var observers []traffic.Observer
	hub.Observe(traffic.Tee(observers...))
	hub.Run()
	defer hub.Close()
	mgr.Start(ctx)

	watchCtx, stopWatching := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		watchConfig(watchCtx, c.config, mgr.Pins().Dir(), func(cfg *config.Config) {
			mgr.Apply(cfg)
			hub.SetConfig(cfg)
		}, mgr.RecheckPins, logger)
	}()
	defer func() { stopWatching(); <-watched }()

	if httpAddr != "" {
		return serveHTTP(ctx, hub, cfg, httpAddr, noAuth, logger, stderr)
	}
	logger.Info("serving on stdio", "config", cfg.Path, "mode", cfg.Mode, "groups", len(cfg.Groups))
	return hub.ServeStdio(ctx, stdin, stdout)
}
