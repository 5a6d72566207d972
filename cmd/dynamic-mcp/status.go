package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// errNotAllReady makes status exit 1 when a server is not ready, for use
// in scripts; the table says which.
var errNotAllReady = errors.New("not every upstream is ready")

// statusCmd connects to every upstream in parallel and prints a table of
// how each one is doing.
func statusCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var c common
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	c.registerLogging(fs, "error")
	if err := c.parse(fs, args); err != nil {
		return err
	}
	cfg, logger, closeLog, err := c.open(stderr)
	if err != nil {
		return err
	}
	defer closeLog()
	mgr := connectAll(ctx, cfg, logger)
	defer mgr.Close()
	// Each server settles on its first try: ready, or failed with a reason.
	wait, cancel := context.WithTimeout(ctx, cfg.Settings.ConnectTimeout+cfg.Settings.ListTimeout+5*time.Second)
	defer cancel()
	mgr.WaitSettled(wait)

	w := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(w, "GROUP\tSERVER\tTRANSPORT\tSTATE\tPROTOCOL\tTOOLS\tREADY IN\tLAST ERROR")
	allReady := true
	for _, g := range mgr.Groups() {
		for _, s := range g.Servers {
			st := s.Status()
			transport := string(s.Config.Transport)
			if transport == "" {
				transport = "http (auto)"
			}
			tools, ready, lastErr := "-", "-", ""
			if st.State == upstream.StateReady {
				tools = fmt.Sprint(len(s.Lists().Tools))
				ready = st.ReadyIn.Round(time.Millisecond).String()
			} else if st.State != upstream.StateDisabled {
				allReady = false
			}
			if st.Err != nil {
				lastErr = strings.ReplaceAll(st.Err.Error(), "\n", " ")
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", g.Config.Name, s.Config.Name, transport, st.State,
				orDash(st.ProtocolVersion), tools, ready, lastErr)
		}
	}
	w.Flush()
	for _, s := range mgr.Servers() {
		if changed := s.Status().PinChanged; len(changed) > 0 {
			what := "withheld"
			for _, g := range cfg.Groups {
				if g.Name == s.Config.Group && g.PinOnChange == config.PinWarn {
					what = "served anyway (pin_on_change: warn)"
				}
			}
			fmt.Fprintf(stdout, "%s: tools changed since first seen, %s: %s (accept: dynamic-mcp pin accept -c %s %s)\n",
				s.Config.ID(), what, strings.Join(changed, ", "), cfg.Path, s.Config.ID())
		}
	}
	if !allReady {
		return errNotAllReady
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
