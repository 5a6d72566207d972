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

	"github.com/dynamic-mcp/dynamic-mcp/server/policy"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// errNotAllReady makes status and tools exit 1 when a server is not
// ready, for use in scripts; what they print says why.
var errNotAllReady = errors.New("not every upstream is ready")

// notReady is errNotAllReady naming each enabled server of servers that is
// not ready, or nil when they all are.
func notReady(servers []*upstream.Server) error {
	var names []string
	reasons := false
	for _, s := range servers {
		if st := s.Status(); st.State != upstream.StateReady && st.State != upstream.StateDisabled {
			names = append(names, fmt.Sprintf("%s %s", s.Config.ID(), st.State))
			reasons = reasons || st.Err != nil
		}
	}
	return notAllReady(names, reasons)
}

// notAllReady is status's and tools' error for the servers named (each
// with its state) not ready; nil for none. Their reasons, when some
// have one, are printed above it.
func notAllReady(names []string, reasons bool) error {
	switch {
	case len(names) == 0:
		return nil
	case !reasons:
		return fmt.Errorf("%w: %s (no error yet: ask again in a moment)", errNotAllReady, strings.Join(names, ", "))
	}
	return fmt.Errorf("%w: %s (the reasons are above)", errNotAllReady, strings.Join(names, ", "))
}

// splitError is the first line of err, which says what happened, and the
// lines after it: the last stderr lines of a child that exited, say.
func splitError(err error) (string, []string) {
	if err == nil {
		return "", nil
	}
	first, rest, _ := strings.Cut(err.Error(), "\n")
	if rest == "" {
		return first, nil
	}
	// Tabs (in a Go stack trace, say) would shift a tabwriter's columns.
	return first, strings.Split(strings.ReplaceAll(rest, "\t", "    "), "\n")
}

// statusCmd prints how each upstream is doing: as the config's running
// shared hub sees them, with its clients, its last reload and its
// inspector; only when no hub runs (or one of another build) does it
// connect to every upstream itself, in parallel, and it says so.
func statusCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var c common
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	c.registerLogging(fs, "error")
	if err := c.parse(fs, args); err != nil {
		return err
	}
	cfg, logger, closeLog, err := c.open(stderr)
	if err != nil {
		// A hub that runs serves the config it read before: say how it
		// is doing, then why the file does not read now.
		if loose := looseConfig(c.config); loose != nil {
			if reply := askStatus(ctx, loose); reply != nil && reply.Status.Upstreams != nil {
				printHubLine(stdout, *reply)
				printHubStatus(stdout, reply.Status, loose.Path)
				return fmt.Errorf("the config does not read now (the hub serves the one it read before):\n%w", err)
			}
		}
		return err
	}
	defer closeLog()
	if st := printHub(ctx, cfg, stdout); st != nil && st.Upstreams != nil {
		return printHubStatus(stdout, st, cfg.Path)
	}
	mgr, db, err := connectAll(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer closeStore(db)
	defer mgr.Close()
	// Each server settles: ready, or failed with a reason (a slow one
	// after its longer try, as serve would).
	settle(ctx, cfg, mgr, stderr, func(s *upstream.Server) string { return s.Config.ID() })

	w := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(w, "GROUP\tSERVER\tTRANSPORT\tSTATE\tPROTOCOL\tTOOLS\tREADY IN\tLAST ERROR")
	var details []string // what a server's error says beyond its first line
	for _, g := range mgr.Groups() {
		for _, s := range g.Servers {
			st := s.Status()
			transport := transportName(s)
			tools, ready := "-", "-"
			if st.State == upstream.StateReady {
				tools = toolsColumn(toolCounts(g.Config, s))
				ready = st.ReadyIn.Round(time.Millisecond).String()
			}
			lastErr, more := splitError(st.Err)
			if len(more) > 0 {
				details = append(details, "\n"+s.Config.ID()+": "+lastErr)
				details = append(details, more...)
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", g.Config.Name, s.Config.Name, transport, st.State,
				orDash(st.ProtocolVersion), tools, ready, lastErr)
		}
	}
	w.Flush()
	for _, line := range details {
		fmt.Fprintln(stdout, line)
	}
	for _, s := range mgr.Servers() {
		if changed := s.Status().PinChanged; len(changed) > 0 {
			what := "withheld"
			for _, g := range cfg.Groups {
				if g.Name == s.Config.Group && g.PinOnChange == config.PinWarn {
					what = "served anyway (pin_on_change: warn)"
				}
			}
			fmt.Fprintf(stdout, "%s: tools changed since first seen, %s: %s (accept: %s)\n",
				s.Config.ID(), what, strings.Join(changed, ", "), cfg.Command("pin", "accept", s.Config.ID()))
		}
	}
	return notReady(mgr.Servers())
}

// toolCounts counts s's tools the client gets (after the group's deny
// and allow lists) and those the lists hide.
func toolCounts(g *config.Group, s *upstream.Server) (shown, hidden int) {
	for _, t := range s.Lists().Tools {
		if policy.Hidden(g, policy.MethodToolsCall, t.Key) {
			hidden++
		} else {
			shown++
		}
	}
	return shown, hidden
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
