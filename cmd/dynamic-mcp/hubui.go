package main

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/dynamic-mcp/dynamic-mcp/server"
	"github.com/dynamic-mcp/dynamic-mcp/server/audit"
	"github.com/dynamic-mcp/dynamic-mcp/server/resultcap"
	"github.com/dynamic-mcp/dynamic-mcp/server/telemetry"
	"github.com/dynamic-mcp/dynamic-mcp/transport/local"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/traffic"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// hubUI is the shared hub's inspector: served on the loopback address
// the first bridge with --ui asks for, for the rest of the hub's life. It
// lists every session of the hub and records every client's traffic from
// that moment on; the hub records nothing until it is asked.
type hubUI struct {
	ctx       context.Context // the inspector's streams end with it
	hub       *server.Hub
	results   *resultcap.Store // the hub's kept results, for /metrics
	audits    *audit.Stats     // the hub's audit trails' lost records
	mgr       *upstream.Manager
	observers []traffic.Observer // what watched the hub before (traces)
	logger    *slog.Logger
	cli       config.CLI // the commands its hints name
	cfgPath   string

	mu   sync.Mutex // guards what follows
	addr string     // as asked, completed by uiListenAddr
	ui   *local.UI
	stop func()
}

// serve serves the inspector on addr, or says where it is served when
// it already is on addr; another address is refused: one inspector shows
// every client already.
func (u *hubUI) serve(addr string) (*local.UI, error) {
	full, err := uiListenAddr(addr)
	if err != nil {
		return nil, err
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.ui != nil {
		if full == u.addr {
			return u.ui, nil
		}
		return nil, fmt.Errorf("the shared hub serves its inspector at %s already, for every client (asked for %s): use that one, or stop the hub (%s) to move it", u.ui.URL, full, u.cli.Command("stop"))
	}
	hub := u.hub
	metrics := telemetry.NewMetrics(u.mgr, telemetry.MetricsOptions{Sessions: sessionCounts(hub), Dropped: hub.Sessions().Dropped,
		Panics: hub.Panics().Count, AuditLost: u.audits.Lost, RateLimited: hub.RateLimited, RateBuckets: hub.RateBuckets,
		Results: u.results.Stats})
	insp := newInspector(u.ctx, hub, u.mgr, u.logger)
	url, token, stop, err := serveUI(full, insp, u.mgr, hub.HealthComponents(), metrics.Handler(), u.logger)
	if err != nil {
		insp.Close()
		return nil, err
	}
	insp.SetTokenHint(sharedTokenHint(u.cfgPath))
	hub.Traffic().Observe(traffic.Tee(append(append([]traffic.Observer{}, u.observers...), metrics, insp)...))
	u.addr, u.ui, u.stop = full, &local.UI{URL: url, Token: token}, stop
	return u.ui, nil
}

// info is where the inspector is served, with its token; nil when it
// is not.
func (u *hubUI) info() *local.UI {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.ui
}

// close stops serving the inspector, if it was.
func (u *hubUI) close() {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.stop != nil {
		u.stop()
		u.stop = nil
	}
}

// sharedTokenHint is what the shared hub's login dialog says of where the
// token is: the bridge that asked for the inspector printed it on its
// stderr, which its client keeps in its MCP server log, and `dynamic-mcp
// ui` asks the hub for it on its socket (the user's alone).
func sharedTokenHint(cfgPath string) string {
	return "The inspector's own token (not an MCP client's token): run `dynamic-mcp ui" + configArg(cfgPath) +
		"` in a terminal, which prints it. It was also printed in the MCP server log of the client whose entry has --ui."
}
