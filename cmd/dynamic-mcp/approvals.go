package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/transport/local"
	"github.com/dynamic-mcp/dynamic-mcp/types/approval"
)

// approvalsCmd lists the calls waiting for approval in the running shared
// hub of a config, and the grants in force.
func approvalsCmd(ctx context.Context, args []string, stdout io.Writer) error {
	var c common
	fs := flag.NewFlagSet("approvals", flag.ContinueOnError)
	c.register(fs)
	asJSON := fs.Bool("json", false, "print the inbox as JSON")
	if err := c.parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usageError{"approvals takes no arguments"}
	}
	cfg, err := c.load()
	if err != nil {
		return err
	}
	reply, err := askInbox(ctx, cfg, local.Hello{Op: local.OpApprovals})
	if err != nil {
		return err
	}
	l := approval.List{}
	if reply.Approvals != nil {
		l = *reply.Approvals
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(l)
	}
	printApprovals(stdout, l, time.Now())
	return nil
}

// printApprovals prints the inbox as two tables.
func printApprovals(w io.Writer, l approval.List, now time.Time) {
	if len(l.Pending) == 0 {
		fmt.Fprintln(w, "no call waits for approval")
	} else {
		tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tWAITING\tLEFT\tCLIENT\tSESSION\tGROUP/SERVER\tTOOL\tRULE\tARGUMENTS")
		for _, p := range l.Pending {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s/%s\t%s\t%s\t%s\n", p.ID, now.Sub(p.Time).Round(time.Second),
				max(p.Deadline.Sub(now), 0).Round(time.Second), orDash(p.Client), sessionAt(p), p.Group, p.Server, p.Tool,
				orDash(p.Rule), pendingArgs(p, 80))
		}
		tw.Flush()
		fmt.Fprintln(w, "\nanswer with: dynamic-mcp approve ID [--session | --for 10m | --calls N] [--args key=glob], or dynamic-mcp deny ID")
	}
	fmt.Fprintln(w)
	if len(l.Grants) == 0 {
		fmt.Fprintln(w, "no grants")
		return
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "GRANT\tGROUP/SERVER\tTOOL\tSCOPE\tARGS\tAPPROVED BY\tUSED")
	for _, g := range l.Grants {
		fmt.Fprintf(tw, "%s\t%s/%s\t%s\t%s\t%s\t%s\t%d\n", g.ID, g.Group, g.Server, g.Tool, grantScope(g, now), orDash(grantArgs(g.Args)), g.ApprovedBy, g.Used)
	}
	tw.Flush()
}

// grantScope says whom and how long a grant covers.
func grantScope(g approval.Grant, now time.Time) string {
	var parts []string
	if g.Session != "" {
		parts = append(parts, "session "+g.Session)
	} else {
		parts = append(parts, "every session")
	}
	if !g.Expires.IsZero() {
		parts = append(parts, fmt.Sprintf("%s left", max(g.Expires.Sub(now), 0).Round(time.Second)))
	}
	if g.CallsLeft > 0 {
		parts = append(parts, fmt.Sprintf("%d calls left", g.CallsLeft))
	}
	return strings.Join(parts, ", ")
}

func grantArgs(args map[string]string) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(args)) {
		out = append(out, k+"="+args[k])
	}
	return strings.Join(out, " ")
}

// pendingArgs are p's arguments as the table shows them, cut at n bytes;
// a cut row (here or in the hub's inbox) says so and gives the whole
// arguments' size.
func pendingArgs(p approval.Pending, n int) string {
	args := string(p.Arguments)
	if !p.Clipped && len(args) <= n {
		return args
	}
	size := p.ArgumentsSize
	if size == 0 {
		size = len(args)
	}
	return fmt.Sprintf("%s (%d bytes, cut)", clipText(args, n), size)
}

// sessionAt is a pending call's session, with the replica it waits on
// when the hub shares a store.
func sessionAt(p approval.Pending) string {
	if p.Replica == "" {
		return p.Session
	}
	return p.Session + " @ " + p.Replica
}

func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
