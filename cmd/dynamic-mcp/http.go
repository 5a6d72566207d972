package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"syscall"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/server"
	"github.com/dynamic-mcp/dynamic-mcp/server/health"
	"github.com/dynamic-mcp/dynamic-mcp/server/httpguard"
	"github.com/dynamic-mcp/dynamic-mcp/server/mcphttp"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// listenAddr completes --http: a bare port or ":port" binds to loopback;
// any other interface must be named.
func listenAddr(addr string) string {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return net.JoinHostPort("127.0.0.1", addr)
	}
	if host, port, _ := net.SplitHostPort(addr); host == "" {
		return net.JoinHostPort("127.0.0.1", port)
	}
	return addr
}

// bearerToken is the token of the credential named "default": the
// config's http.token, else $DYNAMIC_MCP_TOKEN, else, when neither
// http.tokens nor http.auth names a client, a new one, printed to stderr
// when it is a terminal and else written to a file (announceGeneratedToken).
func bearerToken(cfg *config.Config, stderr io.Writer, logger *slog.Logger) string {
	if cfg.HTTP.Token != "" {
		return cfg.HTTP.Token
	}
	if t := os.Getenv("DYNAMIC_MCP_TOKEN"); t != "" {
		return t
	}
	if len(cfg.HTTP.Tokens) > 0 || cfg.HTTP.Auth.Enabled() {
		return "" // the callers have credentials of their own
	}
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	t := base64.RawURLEncoding.EncodeToString(b)
	announceGeneratedToken(stderr, logger, cfg.StateDir, t)
	return t
}

// listenHTTP listens on the --http address addr, before any upstream
// starts: a port taken (by another serve --http, most likely) is said at
// once, not after every server was started and stopped again.
// --insecure-no-auth is refused off loopback.
func listenHTTP(addr string, noAuth bool) (net.Listener, error) {
	full := listenAddr(addr)
	ln, err := net.Listen("tcp", full)
	if errors.Is(err, syscall.EADDRINUSE) {
		_, port, _ := net.SplitHostPort(full)
		return nil, fmt.Errorf("port %s is in use (another dynamic-mcp serve --http? see dynamic-mcp status, or pick another --http address)", port)
	}
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	if tcp, _ := ln.Addr().(*net.TCPAddr); noAuth && (tcp == nil || !tcp.IP.IsLoopback()) {
		ln.Close()
		return nil, usageError{"--insecure-no-auth is only allowed on a loopback address"}
	}
	return ln, nil
}

// serveHTTP serves hub over HTTP on ln (listenHTTP's) until ctx ends, then shuts down
// within a few seconds: /mcp and the legacy SSE endpoints, /healthz and
// /readyz of mgr's upstreams; db is the store every replica shares (nil:
// none), for the face's relay and pending sign-ins. mount, if set, adds
// handlers (/metrics ...) to the HTTP face before it serves; it is given
// the face's URL ("http://host:port") and the checks of its guard without
// the token, for handlers behind a token of their own.
func serveHTTP(ctx context.Context, hub *server.Hub, mgr *upstream.Manager, db shared.Store, cfg *config.Config, ln net.Listener, noAuth bool, logger *slog.Logger, stderr io.Writer,
	mount func(h *mcphttp.Server, url string, checks httpguard.GuardOptions)) error {
	tcp, _ := ln.Addr().(*net.TCPAddr)
	loopback := tcp != nil && tcp.IP.IsLoopback()
	opts := mcphttp.Options{NoAuth: noAuth, AllowedOrigins: cfg.HTTP.AllowedOrigins, Loopback: loopback,
		MaxSessions: cfg.HTTP.MaxSessions, BodyTimeout: cfg.HTTP.BodyTimeout, MaxInflight: cfg.HTTP.MaxInflight,
		MaxBodyMemory: cfg.HTTP.MaxBodyMemory, MaxAuthFailures: cfg.HTTP.MaxAuthFailures, ClientShare: cfg.HTTP.ClientShare, Auth: cfg.HTTP.Auth,
		SessionKeys: cfg.HTTP.SessionKeys, Store: db, SignIns: mgr, TrustedProxies: cfg.HTTP.TrustedProxies}
	if !noAuth {
		opts.Token = bearerToken(cfg, stderr, logger)
		opts.Tokens = cfg.HTTP.Tokens
		if _, ok := opts.Tokens[httpguard.DefaultCredential]; ok && opts.Token != "" {
			ln.Close()
			return usageError{"$DYNAMIC_MCP_TOKEN is the credential \"default\", which http.tokens names too: rename that one, or unset the variable"}
		}
		for name, t := range opts.Tokens {
			if t == opts.Token {
				ln.Close()
				return usageError{fmt.Sprintf("$DYNAMIC_MCP_TOKEN is the token of http.tokens.%s: each credential needs its own", name)}
			}
		}
	}
	h := mcphttp.New(hub, opts, logger)
	defer h.Close()
	// /healthz and /readyz need no token, for load balancers; why a group
	// is down (which can name internal hosts) only to a request with the
	// token. On a loopback listener no balancer calls them, and they are
	// behind the Origin and Host checks, as the inspector's are, so that no
	// web page can read them by DNS rebinding.
	probes := http.NewServeMux()
	// A replica that drains is not ready: the balancer stops sending it
	// new clients.
	components := append(slices.Clip(hub.HealthComponents()), health.Component{Name: "http", Check: h.Ready})
	health.Mount(probes, mgr, h.Guard().CheckOperator, components...)
	mountProbe := h.HandlePublic
	if loopback {
		mountProbe = h.HandlePage
	}
	mountProbe("/healthz", probes)
	mountProbe("/readyz", probes)
	if mount != nil {
		mount(h, "http://"+ln.Addr().String(), httpguard.GuardOptions{NoAuth: noAuth, AllowedOrigins: opts.AllowedOrigins,
			Loopback: loopback, MaxAuthFailures: opts.MaxAuthFailures})
	}
	// No ReadTimeout: it would cut GET streams; each body read has its own
	// deadline (http.body_timeout). IdleTimeout closes kept-alive
	// connections that send nothing more; MaxHeaderBytes bounds headers.
	// ReadHeaderTimeout runs from a request's first byte, the first
	// request's too (httpguard.FirstByteListener); before it a new
	// connection may stay silent httpguard.FirstByteWait.
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10}
	logger.Info("serving over HTTP", append([]any{"addr", ln.Addr().String(), "mcp", "http://" + ln.Addr().String() + "/mcp",
		"sse", "http://" + ln.Addr().String() + "/sse", "auth", !noAuth}, append(authAttrs(cfg), sealAttrs(cfg)...)...)...)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(httpguard.FirstByteListener(ln, httpguard.FirstByteWait, logger)) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	// SIGTERM (a balancer's orchestrator, systemd, docker stop) drains
	// first; SIGINT (Ctrl-C) stops at once, as does any other end of ctx.
	if terminated(ctx) {
		drainHTTP(h, cfg.HTTP.DrainTimeout, logger)
	}
	h.Close() // ends the sessions, and with them their open streams
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := srv.Shutdown(shutdown)
	<-errc // Serve returned as Shutdown closed the listener
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

// drainHTTP drains h (see mcphttp.Server.Drain) for at most timeout:
// /readyz turns 503, new sessions are refused, GET streams close so that
// their clients reconnect elsewhere, and the calls in flight finish.
func drainHTTP(h *mcphttp.Server, timeout time.Duration, logger *slog.Logger) {
	if timeout <= 0 {
		timeout = config.DefaultDrainTimeout
	}
	logger.Info("draining: finishing the calls in flight", "drain_timeout", timeout)
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := h.Drain(ctx); err != nil {
		logger.Warn("drain timed out: ending the calls still in flight", "drain_timeout", timeout)
		return
	}
	logger.Info("drained", "took", time.Since(start).Round(time.Millisecond))
}

// sealAttrs are the log attributes of http.session_keys: how many keys
// open session ids (never the keys), none when ids are not sealed.
func sealAttrs(cfg *config.Config) []any {
	if len(cfg.HTTP.SessionKeys) == 0 {
		return nil
	}
	return []any{"session_keys", len(cfg.HTTP.SessionKeys)}
}

// authAttrs are the log attributes of http.auth: its issuer and
// audience, none when callers cannot sign in.
func authAttrs(cfg *config.Config) []any {
	if !cfg.HTTP.Auth.Enabled() {
		return nil
	}
	return []any{"issuer", cfg.HTTP.Auth.Issuer, "audience", cfg.HTTP.Auth.Audience}
}
