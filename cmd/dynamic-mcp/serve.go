package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/server"
	"github.com/dynamic-mcp/dynamic-mcp/server/audit"
	"github.com/dynamic-mcp/dynamic-mcp/server/httpguard"
	"github.com/dynamic-mcp/dynamic-mcp/server/inspect"
	"github.com/dynamic-mcp/dynamic-mcp/server/mcphttp"
	"github.com/dynamic-mcp/dynamic-mcp/server/mcplocal"
	"github.com/dynamic-mcp/dynamic-mcp/server/resultcap"
	"github.com/dynamic-mcp/dynamic-mcp/server/telemetry"
	"github.com/dynamic-mcp/dynamic-mcp/transport/local"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/traffic"
	"github.com/dynamic-mcp/dynamic-mcp/types/vault"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// serveCmd serves MCP over stdio until the client closes stdin or a signal
// arrives, then stops every upstream by the ladder.
func serveCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) (err error) {
	noteMappings() // before anything can load a library: see releaseMemory
	var c common
	var httpAddr, uiAddr, profile string
	var noAuth, standalone, hubMode bool
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.BoolVar(&standalone, "standalone", false, "serve stdio in this process, not through the config's shared hub (as settings.shared: off)")
	fs.BoolVar(&hubMode, "hub", false, "run as the config's shared hub on its local socket (started by serve itself)")
	fs.StringVar(&profile, "profile", "", "show this client the config's profile `name` only (see profiles:): its session of the shared hub, or of this process with --standalone, lists only that profile's groups")
	c.registerLogging(fs, "info")
	fs.StringVar(&httpAddr, "http", "", "serve over HTTP on `addr` (\"8080\" or \":8080\" is loopback) instead of stdio")
	fs.BoolVar(&noAuth, "insecure-no-auth", false, "with --http on loopback: accept requests without a bearer token (for tests)")
	fs.StringVar(&uiAddr, "ui", "", "serve the inspector on loopback `addr` (for stdio use: the shared hub's, of every client), with a token of its own printed to stderr")
	// An error before stdio is served answers the client's first
	// request with it (refuse.go); not once stdin is the bridge's or the
	// hub's.
	refuse := true
	defer func() {
		if err != nil && refuse {
			err = refuseClient(ctx, stdin, stdout, err, httpAddr == "" && !hubMode)
		}
	}()
	if err := c.parse(fs, args); err != nil {
		return err
	}
	cfg, logger, closeLog, err := c.open(stderr)
	if err != nil {
		return err
	}
	logger, setLogSecrets := redactLogs(logger, cfg)
	if len(cfg.SecretUses) > 0 {
		// Say where the vault's key is, once, at start (the config read
		// the secrets without a logger).
		if _, err := vault.Open(ctx, vault.Options{Dir: cfg.StateDir, Logger: logger}); err != nil {
			logger.Warn("vault", "error", err)
		}
	}
	defer closeLog()
	if _, err := cfg.WithProfile(profile); err != nil {
		return usageError{err.Error()}
	}
	if uiAddr != "" {
		if uiAddr, err = uiListenAddr(uiAddr); err != nil {
			return err
		}
	}
	if !hubMode && httpAddr == "" && isTerminal(stdin) {
		// A person ran serve by hand: it speaks MCP on stdin and stdout
		// and prints nothing else, which looks like a hang.
		stops := "Ctrl-C stops it"
		if wantShared(cfg, standalone) {
			// Ctrl-C ends the bridge; the hub it started stays up
			// for its next client, which a person may not expect.
			stops = fmt.Sprintf("Ctrl-C stops it; the shared hub it uses stops %s after its last client, %s at once", cfg.Settings.SharedIdle, cfg.Command("stop"))
		}
		fmt.Fprintf(stderr, "dynamic-mcp: serving MCP on stdin and stdout, for an MCP client that starts this command; a terminal shows nothing but its log (%s). To see the tools a client gets: %s\n", stops, cfg.Command("tools"))
	}
	if !hubMode && httpAddr == "" && wantShared(cfg, standalone) {
		// The client's entry: a bridge to the one hub for this config,
		// which shows the client its profile (with --ui, the hub serves
		// its inspector there).
		refuse = false // the bridge answers, or hands stdin to the hub
		if err := bridge(ctx, cfg, profile, c.logLevel, uiAddr, logger, stdin, stdout, stderr); !errors.Is(err, errStandalone) {
			return err
		}
		refuse = true // standalone: stdin untouched

	}
	// In this process the profile narrows the config: the groups it
	// hides are not even started.
	cfg, _ = cfg.WithProfile(profile)
	if httpAddr == "" {
		lowerHeapGoal(os.Getenv) // a desktop's hub: see localGCPercent
	} else {
		heapHeadroom(os.Getenv, httpHeapHeadroom)
	}
	fewer := httpAddr == "" && fewerProcs(os.Getenv) // and localProcs
	var ln net.Listener
	if hubMode {
		// The socket is taken before any upstream starts: a hub that
		// finds another one listening leaves at once.
		if ln, err = listenShared(cfg); errors.Is(err, local.ErrRunning) {
			logger.Info("another hub already serves this config")
			return nil
		} else if err != nil {
			return err
		}
		defer ln.Close()
	}
	var httpLn net.Listener
	if httpAddr != "" {
		// As the socket: the port is taken before any upstream starts.
		if httpLn, err = listenHTTP(httpAddr, noAuth); err != nil {
			return err
		}
		defer httpLn.Close()
	}
	// The hub is built and reading the manager's events before any
	// upstream starts; it closes first, the upstreams after it.
	if httpAddr != "" && cfg.Store != "" && len(cfg.HTTP.SessionKeys) == 0 {
		// Replicas that share state but not sessions would need sticky
		// routing after all (issue 25).
		return errors.New("store: is for replicas, which resume each other's sessions only with http.session_keys: set them (the same keys on every replica)")
	}
	var uiToken string // the HTTP face's inspector's (uitoken.go)
	var uiFromEnv bool
	if httpAddr != "" && !noAuth {
		if uiToken, uiFromEnv, err = faceUIToken(cfg); err != nil {
			return err
		}
	}
	db, err := openStore(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer closeStore(db) // deferred first, so run last: after the upstreams and the hub
	mgr := upstream.NewWith(cfg, logger, upstream.Options{Store: db})
	defer mgr.Close()
	results := resultcap.New(resultcap.Options{Logger: logger}) // the hub's, read by /metrics
	audits := new(audit.Stats)                                  // records lost by every trail the hub opens, for /metrics
	hub, err := server.NewWith(cfg, mgr, logger, server.Options{Store: db, Results: results, Audits: audits})
	if err != nil {
		return err
	}
	// What watches the hub's traffic (the inspector, metrics, traces) is
	// attached before anything is served.
	var observers []traffic.Observer
	// Metrics are kept only where something can scrape them: /metrics of
	// the HTTP face or of the --ui address.
	var metrics *telemetry.Metrics
	if httpAddr != "" || uiAddr != "" {
		metrics = telemetry.NewMetrics(mgr, telemetry.MetricsOptions{Sessions: sessionCounts(hub), Callers: callerCounts(hub), Dropped: hub.Sessions().Dropped,
			Panics: hub.Panics().Count, AuditLost: audits.Lost, RateLimited: hub.RateLimited, RateBuckets: hub.RateBuckets,
			Results: results.Stats})
		observers = append(observers, metrics)
	}
	tracer, err := telemetry.NewTracerFromEnv(ctx, server.Version, logger)
	if err != nil {
		return err
	}
	if tracer != nil {
		defer tracer.Close() // deferred before hub.Close, so run after it: the last spans are sent
		observers = append(observers, tracer)
		logger.Info("exporting traces over OTLP/HTTP")
	}
	// The inspector records only where a page can show it: /ui of the
	// HTTP face, or the --ui address.
	var insp *inspect.Inspector
	if httpAddr != "" || uiAddr != "" {
		insp = newInspector(ctx, hub, mgr, logger)
		observers = append(observers, insp)
	}
	hub.Traffic().Observe(traffic.Tee(observers...))
	hub.Run()
	defer hub.Close()
	if httpAddr != "" {
		// Over HTTP a signal drains first (serveHTTP): the upstreams serve
		// the calls in flight until the drain is over, and close after.
		mgr.Start(context.WithoutCancel(ctx))
	} else {
		mgr.Start(ctx)
	}
	if uiAddr != "" {
		url, token, stopUI, err := serveUI(uiAddr, insp, mgr, hub.HealthComponents(), metrics.Handler(), logger)
		if err != nil {
			return err
		}
		defer stopUI()
		printUI(stderr, url, token)
		insp.SetTokenHint("The inspector's own token (not an MCP client's token) was printed with this page's URL on the stderr of `dynamic-mcp serve --ui`: on the terminal it runs in, or, when an MCP client started it, in that client's MCP server log.")
	}

	watchCtx, stopWatching := context.WithCancel(ctx)
	watched := make(chan struct{})
	storeAtStart, authAtStart := cfg.Store, cfg.HTTP.Auth
	secretsChanged := make(chan string, 1)
	reloads := &reloadLog{}
	go func() {
		defer close(watched)
		watchConfig(watchCtx, c.config, mgr.Pins().Dir(), filepath.Join(cfg.StateDir, vault.SecretsFile), reloads.note, func(cfg *config.Config) {
			setLogSecrets(cfg)
			if cfg.Store != storeAtStart {
				logger.Warn("config reload: store: changed; it is read at start, restart to use the new one")
			}
			if httpAddr != "" && httpAuthChanged(authAtStart, cfg.HTTP.Auth) {
				logger.Warn("config reload: http.auth changed; it is read at start, restart to use the new one")
			}
			cfg, err := cfg.WithProfile(profile)
			if err != nil {
				logger.Error("config reload: still serving the previous config", "err", err)
				return
			}
			mgr.Apply(cfg)
			hub.SetConfig(cfg)
		}, mgr.RecheckPins, secretsChanged, logger)
	}()
	// With store:, a pin accepted elsewhere arrives as a notification.
	pinsWatched := make(chan struct{})
	go func() {
		defer close(pinsWatched)
		mgr.WatchSharedPins(watchCtx)
	}()
	// With store:, a secret set or removed elsewhere reloads the config.
	secretsWatched, secretUses := make(chan struct{}), cfg.SecretUses
	go func() {
		defer close(secretsWatched)
		watchSharedSecrets(watchCtx, db, secretUses, secretsChanged)
	}()
	// Once every upstream has started (or failed to), what the start
	// touched (initialisers, the config's parse, the upstreams' first
	// lists) is given back: see releaseMemory. Then again each time the
	// hub falls quiet after work.
	released := make(chan struct{})
	go func() {
		defer close(released)
		mgr.WaitSettled(watchCtx)
		if watchCtx.Err() == nil {
			settledProcs(fewer)
			releaseMemory()
			releaseWhenQuiet(watchCtx, processCPU, processResident, releaseMemory)
		}
	}()
	defer func() { stopWatching(); <-watched; <-pinsWatched; <-secretsWatched; <-released }()

	if httpAddr != "" {
		announceUI := func(page, token string) string {
			return announceUIToken(stderr, logger, cfg.StateDir, cfg.Path, page, token, noAuth, uiFromEnv)
		}
		return serveHTTP(ctx, hub, mgr, db, cfg, httpLn, noAuth, logger, stderr, func(h *mcphttp.Server, url string, checks httpguard.GuardOptions) {
			// Metrics stay behind the MCP tokens (any credential): they
			// count calls by method, tool and server, and carry nothing a
			// client sent; a scraper is configured with a token once.
			h.Handle("/metrics", metrics.Handler())
			mountInspectorOnFace(h, insp, url, checks, uiToken, announceUI)
		})
	}
	if hubMode {
		logger.Info("serving as the shared hub", "config", cfg.Path, "socket", ln.Addr().String(), "pid", os.Getpid())
		ui := &hubUI{ctx: ctx, hub: hub, results: results, audits: audits, mgr: mgr, observers: observers, logger: logger, cli: cfg.CLI, cfgPath: cfg.Path}
		defer ui.close()
		return mcplocal.New(hub, mcplocal.Options{Version: version, Config: cfg.Path,
			Idle: func() time.Duration { return hub.Settings().SharedIdle }, UI: ui.serve,
			Describe: describeHub(mgr, reloads, ui), OwnPassed: fewer}, logger).Serve(ctx, ln)
	}
	logger.Info("serving on stdio", "config", cfg.Path, "profile", profile, "mode", cfg.Mode, "groups", len(cfg.Groups))
	refuse = false
	return hub.ServeStdio(ctx, stdioInput(stdin, fewer), stdioOutput(stdout, fewer))
}

// sessionCounts counts hub's open client sessions by transport, for the
// metrics.
func sessionCounts(hub *server.Hub) func() map[string]int {
	return func() map[string]int {
		n := map[string]int{}
		for _, s := range hub.Sessions().Info() {
			n[s.Transport]++
		}
		return n
	}
}

// callerCounts counts hub's sessions by how their caller signed in, and
// the distinct callers among them, for /metrics.
func callerCounts(hub *server.Hub) func() (map[string]int, int) {
	return func() (map[string]int, int) {
		n, users := map[string]int{}, map[string]struct{}{}
		for _, s := range hub.Sessions().Info() {
			kind, _, ok := strings.Cut(s.Subject, ":")
			if !ok {
				kind = "local"
			}
			n[kind]++
			if kind == "jwt" || kind == "token" {
				users[s.Subject] = struct{}{}
			}
		}
		return n, len(users)
	}
}

// listenShared listens on the local socket of cfg's shared hub.
func listenShared(cfg *config.Config) (net.Listener, error) {
	paths, err := local.PathsFor(cfg.Path, cfg.StateDir)
	if err != nil {
		return nil, err
	}
	return local.Listen(paths)
}
