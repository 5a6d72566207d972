package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgstore"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// pinCmd lists or accepts changed tool definitions. A running hub picks an
// accept up by itself.
func pinCmd(args []string, stdout io.Writer) error {
	if len(args) == 0 || (args[0] != "list" && args[0] != "accept") {
		return helpOrUsage(args, stdout, "usage: dynamic-mcp pin list -c FILE | dynamic-mcp pin accept -c FILE SERVER [TOOL...]")
	}
	var c common
	fs := flag.NewFlagSet("pin "+args[0], flag.ContinueOnError)
	c.register(fs)
	if err := c.parse(fs, args[1:]); err != nil {
		return err
	}
	cfg, err := c.load()
	if err != nil {
		return err
	}
	pins := upstream.NewPins(filepath.Join(cfg.StateDir, "pins"))
	if cfg.Store != "" {
		db, err := pgstore.Open(context.Background(), cfg.Store)
		if err != nil {
			return err
		}
		defer db.Close()
		pins.UseSharedStore(db)
	}
	if args[0] == "list" {
		return listPins(cfg, pins, stdout)
	}
	if fs.NArg() == 0 {
		return usageError{"pin accept needs a server: dynamic-mcp pin accept -c FILE SERVER [TOOL...]"}
	}
	server := fs.Arg(0)
	if !hasServer(cfg, server) {
		return fmt.Errorf("no server %q in %s (servers are named GROUP, or GROUP/SERVER in a group of several)", server, cfg.Path)
	}
	accepted, err := pins.Accept(server, fs.Args()[1:]...)
	if err != nil {
		return err
	}
	if len(accepted) == 0 {
		fmt.Fprintf(stdout, "%s: no changed tools to accept\n", server)
		return nil
	}
	fmt.Fprintf(stdout, "%s: accepted the new definitions of %s\n", server, strings.Join(accepted, ", "))
	return nil
}

func listPins(cfg *config.Config, pins *upstream.Pins, stdout io.Writer) error {
	w := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(w, "SERVER\tTOOL\tFIRST SEEN\tCHANGED")
	n := 0
	for _, g := range cfg.Groups {
		for _, s := range g.Servers {
			changes, err := pins.Changes(s.ID())
			if err != nil {
				return err
			}
			for _, ch := range changes {
				n++
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", s.ID(), ch.Tool, ch.FirstSeen.Format(time.RFC3339), ch.ChangedAt.Format(time.RFC3339))
			}
		}
	}
	w.Flush()
	if n == 0 {
		fmt.Fprintln(stdout, "no pinned tool has changed")
	}
	return nil
}

func hasServer(cfg *config.Config, id string) bool {
	for _, g := range cfg.Groups {
		for _, s := range g.Servers {
			if s.ID() == id {
				return true
			}
		}
	}
	return false
}
