package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/dynamic-mcp/dynamic-mcp/transport/local"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// uiCmd prints where the config's inspector is and its token, so that
// the user need not find the MCP log of the client that started it: the
// running shared hub's, asked on its socket (the user's alone, as the
// token is); with --addr, the hub serves it there first if it serves
// none. With no hub, the token serve --http wrote to its file for its
// run.
func uiCmd(ctx context.Context, args []string, stdout io.Writer) error {
	var c common
	var addr string
	fs := flag.NewFlagSet("ui", flag.ContinueOnError)
	c.register(fs)
	fs.StringVar(&addr, "addr", "", "have the running shared hub serve its inspector on loopback `addr` (7777, 127.0.0.1:7777) when it serves none")
	if err := c.parse(fs, args); err != nil {
		return err
	}
	cfg, err := c.load()
	if err != nil {
		if cfg = looseConfig(c.config); cfg == nil {
			return err
		}
	}
	if reply := askStatus(ctx, cfg); reply != nil {
		ui := reply.Status.UI
		if ui == nil && addr != "" {
			full, err := uiListenAddr(addr)
			if err != nil {
				return err
			}
			paths, err := local.PathsFor(cfg.Path, cfg.StateDir)
			if err != nil {
				return err
			}
			if ui, err = askUI(ctx, paths, full); err != nil {
				return fmt.Errorf("the shared hub (pid %d) did not serve its inspector: %w", reply.PID, err)
			}
		}
		if ui == nil {
			return fmt.Errorf("the shared hub (pid %d) serves no inspector: have it serve one with dynamic-mcp ui%s --addr 7777 (or add --ui 7777 to a client's entry)",
				reply.PID, configArg(cfg.Path))
		}
		printUI(stdout, ui.URL, ui.Token)
		return nil
	}
	return httpUIToken(cfg, stdout)
}

// httpUIToken prints the inspector's token serve --http wrote for its
// run (uitoken.go), when that run is of this config and still running
// (a file written before its owner was recorded beside it is printed as
// it is), or says how to have an inspector.
func httpUIToken(cfg *config.Config, w io.Writer) error {
	file := filepath.Join(cfg.StateDir, uiTokenFile)
	b, err := os.ReadFile(file)
	if err == nil {
		var owner uiOwner
		if ob, oerr := os.ReadFile(file + uiOwnerSuffix); oerr == nil && json.Unmarshal(ob, &owner) == nil &&
			(owner.Config != resolvedPath(cfg.Path) || !processAlive(owner.PID)) {
			err = errors.New("another run's")
		}
	}
	if err != nil {
		return fmt.Errorf("no shared hub runs for %s, and no serve --http of it left its inspector's token in %s: start a client whose entry has --ui 7777, or dynamic-mcp serve%s --http 8080 (its inspector is at /ui/)",
			cfg.Path, file, configArg(cfg.Path))
	}
	fmt.Fprintf(w, "dynamic-mcp: no shared hub runs for this config; serve --http's inspector (at /ui/ of its address)\n  token for its last run: %s\n  (from %s; with $%s set, the token is that instead)\n",
		strings.TrimSpace(string(b)), file, uiTokenEnvVar)
	return nil
}
