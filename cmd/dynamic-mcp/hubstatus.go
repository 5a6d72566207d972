package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/transport/local"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// reloadLog keeps the outcome of the hub's last config reload for status:
// a refused reload is otherwise only in the hub's log, which the user of
// a desktop client rarely reads.
type reloadLog struct {
	mu   sync.Mutex // guards last
	last *local.Reload
}

// note records a reload (err: why the new config was refused).
func (r *reloadLog) note(reason string, err error) {
	rl := &local.Reload{At: time.Now(), Reason: reason}
	if err != nil {
		rl.Error = err.Error()
	}
	r.mu.Lock()
	r.last = rl
	r.mu.Unlock()
}

func (r *reloadLog) get() *local.Reload {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

// describeHub is the shared hub's part of its status (mcplocal's
// Options.Describe): every upstream as the hub sees it, the last reload,
// and its inspector.
func describeHub(mgr *upstream.Manager, reloads *reloadLog, ui *hubUI) func(*local.Status) {
	return func(st *local.Status) {
		st.Upstreams = []local.Upstream{}
		for _, g := range mgr.Groups() {
			for _, s := range g.Servers {
				ss := s.Status()
				u := local.Upstream{Group: g.Config.Name, Server: s.Config.Name, Transport: transportName(s), State: ss.State.String(),
					Protocol: ss.ProtocolVersion, PinChanged: ss.PinChanged, Since: ss.Since}
				if ss.State == upstream.StateReady {
					u.Tools, u.Hidden = toolCounts(g.Config, s)
					u.ReadyIn = ss.ReadyIn
				}
				if ss.Err != nil {
					u.Error = ss.Err.Error()
				}
				st.Upstreams = append(st.Upstreams, u)
			}
		}
		st.Reload, st.UI = reloads.get(), ui.info()
	}
}

// transportName is how status names s's transport.
func transportName(s *upstream.Server) string {
	if s.Config.Transport == "" {
		return "http (auto)"
	}
	return string(s.Config.Transport)
}

// printHubStatus prints what the running hub says of its upstreams, its
// last reload and its inspector, and returns errNotAllReady as status
// does for its own check.
func printHubStatus(w io.Writer, st *local.Status, cfgPath string) error {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tSERVER\tTRANSPORT\tSTATE\tPROTOCOL\tTOOLS\tREADY IN\tLAST ERROR")
	var details, notReady, pins []string
	reasons := false
	for _, u := range st.Upstreams {
		id := u.Group + "/" + u.Server
		if u.Server == u.Group {
			id = u.Group // a group's inline server, as the config names it
		}
		tools, ready := "-", "-"
		if u.State == upstream.StateReady.String() {
			tools = toolsColumn(u.Tools, u.Hidden)
			ready = u.ReadyIn.Round(time.Millisecond).String()
		} else if u.State != upstream.StateDisabled.String() {
			notReady = append(notReady, id+" "+u.State)
			reasons = reasons || u.Error != ""
		}
		lastErr, more := splitError(errorOf(u.Error))
		if len(more) > 0 {
			details = append(details, "\n"+id+": "+lastErr)
			details = append(details, more...)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", u.Group, u.Server, u.Transport, u.State, orDash(u.Protocol), tools, ready, lastErr)
		if len(u.PinChanged) > 0 {
			pins = append(pins, fmt.Sprintf("%s: tools changed since first seen: %s (accept: dynamic-mcp pin accept -c %s %s)",
				id, strings.Join(u.PinChanged, ", "), cfgPath, id))
		}
	}
	tw.Flush()
	for _, line := range details {
		fmt.Fprintln(w, line)
	}
	for _, p := range pins {
		fmt.Fprintln(w, p)
	}
	fmt.Fprintln(w)
	switch r := st.Reload; {
	case r == nil:
		fmt.Fprintln(w, "config: as the hub read it at start (no reload since)")
	case r.Error != "":
		fmt.Fprintf(w, "config: the last reload (%s, %s ago) was REFUSED; the hub still serves the config before it:\n  %s\n",
			r.Reason, time.Since(r.At).Round(time.Second), strings.ReplaceAll(r.Error, "\n", "\n  "))
	default:
		fmt.Fprintf(w, "config: reloaded %s ago (%s)\n", time.Since(r.At).Round(time.Second), r.Reason)
	}
	if st.UI != nil {
		fmt.Fprintf(w, "inspector: %s (its token: dynamic-mcp ui%s)\n", st.UI.URL, configArg(cfgPath))
	} else {
		fmt.Fprintln(w, "inspector: not served (add --ui 127.0.0.1:7777 to a client's entry: serve -c ... --ui 7777)")
	}
	return notAllReady(notReady, reasons)
}

// configArg is " -c PATH" for a hint, "" for the default config.
func configArg(path string) string {
	c := config.CLIFor(path) // the rule every hint follows (see config.CLI)
	if c.Config == "" {
		return ""
	}
	return " -c " + config.ShellQuote(c.Config)
}

func errorOf(s string) error {
	if s == "" {
		return nil
	}
	return errors.New(s)
}

// toolsColumn is status's TOOLS: "12", or "9+3 hidden".
func toolsColumn(shown, hidden int) string {
	if hidden == 0 {
		return fmt.Sprint(shown)
	}
	return fmt.Sprintf("%d+%d hidden", shown, hidden)
}
