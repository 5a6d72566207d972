package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/dynamic-mcp/dynamic-mcp/server"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/jsonrpc"
	"github.com/dynamic-mcp/dynamic-mcp/types/secrets"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// version is what `dynamic-mcp version` prints: stamped by a release build
// (.goreleaser.yaml: -ldflags "-X main.version=1.2.3"), else the module's
// version from the build info (`go install ...@v1.2.3`), else "dev".
var version string

func buildVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return info.Main.Version
	}
	return "dev"
}

func init() {
	if version == "" {
		version = buildVersion()
	}
	server.Version = version
	upstream.ClientInfo.Version = version
}

// common are the flags every command that reads a config shares, and the
// logging flags of those that connect to upstreams.
type common struct {
	config    string
	logLevel  string
	logFile   string
	logFormat string
}

// register adds -c and --config.
func (c *common) register(fs *flag.FlagSet) {
	fs.StringVar(&c.config, "c", "", "config `file` (default $DYNAMIC_MCP_CONFIG, else ~/.dynamic-mcp/config.yaml)")
	fs.StringVar(&c.config, "config", "", "config `file` (same as -c)")
}

// registerLogging adds -c and --config, and --log-level (default level)
// and --log-file, for a command that builds its logger with open.
func (c *common) registerLogging(fs *flag.FlagSet, level string) {
	c.register(fs)
	fs.StringVar(&c.logLevel, "log-level", level, "log `level`: debug, info, warn or error")
	fs.StringVar(&c.logFile, "log-file", "", "append logs to `file` as JSON instead of stderr")
	fs.StringVar(&c.logFormat, "log-format", defaultLogFormat(), "`format` of logs on stderr: json, text, or auto (tint on a terminal, JSON otherwise); $"+logFormatEnvVar+" sets the default")
}

// parseArgs parses args, flags and arguments in any order, and returns
// the arguments.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	fs.SetOutput(io.Discard)
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				printHelp(fs, os.Stdout)
				return nil, err
			}
			// The flag package names the flag alone: say where the
			// command's flags are listed.
			return nil, usageError{fmt.Sprintf("%v (dynamic-mcp %s -h lists its flags)", err, fs.Name())}
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
	// Leave the arguments where fs.Arg finds them.
	_ = fs.Parse(append([]string{"--"}, positional...))
	return positional, nil
}

// parse parses args and fills in the config path from the environment.
func (c *common) parse(fs *flag.FlagSet, args []string) error {
	positional, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if c.config == "" {
		// validate config.yaml: the config without its -c would be
		// ignored for the default one, or for "no config".
		for _, a := range positional {
			if ext := strings.ToLower(filepath.Ext(a)); ext == ".yaml" || ext == ".yml" {
				return usageError{fmt.Sprintf("the config goes after -c: dynamic-mcp %s -c %s", fs.Name(), a)}
			}
		}
	}
	if c.config != "" {
		// A client's entry is run by no shell: -c '~/pol.yaml' is
		// expanded here, once, for every use of the path.
		c.config = config.ExpandHome(c.config)
		return nil
	}
	// As import and install: -c, then $DYNAMIC_MCP_CONFIG, then the
	// default path, so that what import wrote is found without -c.
	c.config = config.ExpandHome(defaultConfigPath())
	if os.Getenv("DYNAMIC_MCP_CONFIG") == "" && !fileExists(c.config) {
		return usageError{fmt.Sprintf("no config: pass -c FILE, set DYNAMIC_MCP_CONFIG, or write %s (dynamic-mcp import CLIENT does)", c.config)}
	}
	return nil
}

// configs reads configs with their secrets: the vault of the state
// directory, or the store (types/config opens neither itself).
var configs = config.Loader{Secrets: secrets.Source{}}

// load reads the config, and refuses one with a group that runs
// dynamic-mcp on this same config (the hub would start itself as its
// own upstream, again and again, or be its own client).
func (c *common) load() (*config.Config, error) {
	cfg, err := configs.Load(c.config)
	if err != nil {
		return nil, err
	}
	for _, g := range cfg.Groups {
		for _, srv := range g.Servers {
			if servesConfig(srv.Command, srv.Args, cfg.Path) {
				return nil, fmt.Errorf("%s: group %s runs dynamic-mcp on this same config, so the hub would be its own client: remove the group", cfg.Path, g.Name)
			}
		}
	}
	return cfg, nil
}

// open builds the logger and loads the config; the returned func closes
// the log file.
func (c *common) open(stderr io.Writer) (*config.Config, *slog.Logger, func(), error) {
	logger, closeLog, err := c.logger(stderr)
	if err != nil {
		return nil, nil, nil, err
	}
	cfg, err := c.load()
	if err != nil {
		closeLog()
		return nil, nil, nil, err
	}
	return cfg, logger, closeLog, nil
}

// connectAll starts every upstream of cfg for a command that has no client
// of its own. It declares what the hub declares to shared connections
// (upstream.DeclaredCapabilities), so that a server offers it the tools it
// offers the hub's clients (the everything server's sampling, elicitation
// and roots tools); what such a server asks is refused at once
// (answerWithoutClient). The caller closes db (closeStore) after the
// manager. Its caller prints why a server failed, so each failed try is
// not logged too (withoutRetryErrors).
func connectAll(ctx context.Context, cfg *config.Config, logger *slog.Logger) (_ *upstream.Manager, db shared.Store, _ error) {
	// A command that only connects has asked the servers nothing that
	// needs time to wind down: each wait of the stop ladder is a second
	// at most, where a server that ignores the end of its stdin (the
	// reference everything server) held every tools and status 5 s.
	cfg.Settings.StopGrace = min(cfg.Settings.StopGrace, oneShotGrace)
	db, err := openStore(ctx, cfg, logger)
	if err != nil {
		return nil, nil, err
	}
	mgr := upstream.NewWith(cfg, withoutRetryErrors(ctx, logger), upstream.Options{Store: db})
	go answerWithoutClient(ctx, mgr)
	mgr.Start(ctx)
	return mgr, db, nil
}

// oneShotGrace bounds the stop ladder's waits of a command that only
// connects (connectAll).
const oneShotGrace = time.Second

// answerWithoutClient takes what upstreams send while no client is there
// (a command that only connects): their requests are refused at once, so
// that a server waiting for roots or sampling before it lists its tools
// is not held up until its timeout.
func answerWithoutClient(ctx context.Context, mgr *upstream.Manager) {
	for {
		select {
		case e := <-mgr.Events():
			if e.Kind == upstream.EventRequest {
				e.Reply(nil, &upstream.RPCError{Code: jsonrpc.CodeMethodNotFound, Message: "dynamic-mcp: no client to pass " + e.Method + " to"})
			}
			e.Routed()
		case <-ctx.Done():
			return
		}
	}
}

// logger builds the logger: on stderr as --log-format says (auto: tint
// on a terminal, JSON otherwise, for a log collector), JSON into
// --log-file. Logs never go to stdout, the protocol channel.
func (c *common) logger(stderr io.Writer) (*slog.Logger, func(), error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.logLevel)); err != nil {
		return nil, nil, usageError{fmt.Sprintf("bad --log-level %q: use debug, info, warn or error", c.logLevel)}
	}
	format := c.logFormat
	switch format {
	case "":
		format = logFormatAuto
	case logFormatAuto, logFormatJSON, logFormatText:
	default:
		return nil, nil, usageError{fmt.Sprintf("bad --log-format %q: use json, text or auto (its default is $%s, when set)", c.logFormat, logFormatEnvVar)}
	}
	opts := &slog.HandlerOptions{Level: level}
	if c.logFile != "" {
		f, err := os.OpenFile(c.logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return nil, nil, fmt.Errorf("open log file: %w", err)
		}
		return slog.New(slog.NewJSONHandler(f, opts)), func() { f.Close() }, nil
	}
	return slog.New(logHandler(format, stderr, opts)), func() {}, nil
}

// isTerminal reports whether v (a reader or writer) is a terminal: not
// merely a character device, which /dev/null is too.
func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
