package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/server"
	"github.com/dynamic-mcp/dynamic-mcp/server/health"
	"github.com/dynamic-mcp/dynamic-mcp/server/httpguard"
	"github.com/dynamic-mcp/dynamic-mcp/server/inspect"
	"github.com/dynamic-mcp/dynamic-mcp/server/mcphttp"
	"github.com/dynamic-mcp/dynamic-mcp/server/routes"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// newInspector builds the inspector of hub's traffic, wired to its
// upstreams and sessions. It closes when ctx ends, which ends the streams
// of the pages watching, so that shutting the HTTP server down does not
// wait on them.
func newInspector(ctx context.Context, hub *server.Hub, mgr *upstream.Manager, logger *slog.Logger) *inspect.Inspector {
	insp := inspect.New(inspect.Options{Upstreams: mgr, ToolsList: hub.ToolsListFor, Logger: logger, Approvals: hub.Inbox(),
		Clients: func() []inspect.Client { return inspectorClients(hub.Sessions().Info()) }})
	context.AfterFunc(ctx, func() { insp.Close() })
	return insp
}

// inspectorClients are the hub's sessions as the inspector shows them.
func inspectorClients(sessions []routes.SessionInfo) []inspect.Client {
	out := make([]inspect.Client, 0, len(sessions))
	for _, s := range sessions {
		caps, _ := json.Marshal(s.Capabilities)
		out = append(out, inspect.Client{ID: s.ID, Transport: s.Transport, User: s.User, Subject: s.Subject, Profile: s.Profile, Name: s.ClientName, Version: s.ClientVersion,
			ProtocolVersion: s.ProtocolVersion, Capabilities: caps, Mode: s.Mode, ModeWhy: s.ModeWhy, Inflight: s.Inflight, Dropped: s.Dropped})
	}
	return out
}

// mounter is where the inspector is mounted: the HTTP face, or the --ui
// listener's own mux.
type mounter interface {
	Handle(pattern string, h http.Handler)     // behind every check, the token included
	HandlePage(pattern string, h http.Handler) // behind the Origin and Host checks
}

// mountInspector serves insp at /ui/: the page needs no token (a browser
// navigating to it cannot send one), what it fetches does.
func mountInspector(m mounter, insp *inspect.Inspector) {
	m.HandlePage(inspect.Prefix, insp.Page())
	m.Handle(inspect.Prefix+"api/", insp.API())
}

// uiListenAddr completes --ui like --http (a bare port or ":port" is
// loopback) and refuses an address that is not loopback: the inspector
// shows every message that passes, and it is for the user at this
// machine.
func uiListenAddr(addr string) (string, error) {
	full := listenAddr(addr)
	host, _, err := net.SplitHostPort(full)
	if err != nil {
		return "", usageError{fmt.Sprintf("bad --ui %q: %v", addr, err)}
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return "", usageError{fmt.Sprintf("--ui %s: the inspector serves on a loopback address only (PORT, 127.0.0.1:PORT, [::1]:PORT or localhost:PORT)", addr)}
	}
	return full, nil
}

// guarded mounts handlers behind a guard of its own: the --ui listener's
// mux, or the inspector's part of the HTTP face, with a token other than
// the MCP clients'.
type guarded struct {
	mount func(pattern string, h http.Handler)
	guard *httpguard.Guard
}

func (u guarded) Handle(pattern string, h http.Handler) { u.mount(pattern, u.guard.Check(h)) }
func (u guarded) HandlePage(pattern string, h http.Handler) {
	u.mount(pattern, u.guard.CheckPage(h))
}

// newUIToken is a token for the inspector alone, new each run.
func newUIToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// mountInspectorOnFace serves insp at /ui/ of the HTTP face (url is the
// face's, "http://host:port") behind a token of its own, not any MCP
// client's: token (see faceUIToken), announced by announceUIToken. Every
// MCP client holds an MCP token; with it, it could read every other
// client's traffic (issue 20, finding 1). With noAuth (loopback only) the
// inspector needs no token, as /mcp does not.
func mountInspectorOnFace(h *mcphttp.Server, insp *inspect.Inspector, url string, opts httpguard.GuardOptions, token string, announce func(page, token string) (hint string)) {
	if !opts.NoAuth {
		opts.Token = token
	}
	mountInspector(guarded{mount: h.HandlePublic, guard: httpguard.NewGuard(opts)}, insp)
	insp.SetTokenHint(announce(inspectorPage(url), opts.Token))
}

// printUI prints where the inspector is, and its token, to stderr: the
// lines serve --ui prints, whether it serves the inspector itself or the
// shared hub does.
func printUI(stderr io.Writer, url, token string) {
	fmt.Fprintf(stderr, "dynamic-mcp: the inspector is at %s\n  token for this run: %s\n", url, token)
}

// serveUI serves the inspector alone on addr (see uiListenAddr), for a
// hub serving stdio, with a new token (returned with the page's URL, for
// the caller to print); /healthz and /readyz as on the HTTP face; and
// metrics at /metrics behind the same token. It returns once listening;
// stop closes the inspector's streams and shuts the listener down.
func serveUI(addr string, insp *inspect.Inspector, mgr *upstream.Manager, probes []health.Component, metrics http.Handler, logger *slog.Logger) (url, token string, stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", "", nil, fmt.Errorf("listen for the inspector: %w", err)
	}
	token = newUIToken()
	mux := http.NewServeMux()
	m := guarded{mount: mux.Handle, guard: httpguard.NewGuard(httpguard.GuardOptions{Token: token, Loopback: true})}
	mountInspector(m, insp)
	// /healthz and /readyz need no token, as on the HTTP face, but here
	// no load balancer calls them: they are behind the Origin and Host
	// checks, so that no web page can read them by DNS rebinding.
	probeMux := http.NewServeMux()
	health.Mount(probeMux, mgr, m.guard.Check, probes...)
	m.HandlePage("/healthz", probeMux)
	m.HandlePage("/readyz", probeMux)
	m.Handle("/metrics", metrics)
	m.HandlePage("/{$}", http.RedirectHandler(inspect.Prefix, http.StatusFound))
	// No route here waits for a body (httpguard.UnreadBody), its 404s
	// and 405s neither.
	srv := &http.Server{Handler: httpguard.UnreadBody(mux), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10}
	url = "http://" + ln.Addr().String() + inspect.Prefix
	logger.Info("serving the inspector", "url", url)
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			logger.Error("the inspector stopped serving", "err", err)
		}
	}()
	return url, token, func() {
		insp.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			srv.Close()
		}
		<-served
	}, nil
}
