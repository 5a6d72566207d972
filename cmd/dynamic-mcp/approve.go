package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/transport/local"
	"github.com/dynamic-mcp/dynamic-mcp/types/approval"
)

// argGlobs collects --args key=glob, repeatable.
type argGlobs map[string]string

func (a argGlobs) String() string { return grantArgs(a) }
func (a argGlobs) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" || v == "" {
		return fmt.Errorf("want key=glob, such as path=/tmp/**")
	}
	a[k] = v
	return nil
}

// approveCmd approves a call waiting in the running shared hub's inbox,
// with a grant for more calls when a flag asks.
func approveCmd(ctx context.Context, args []string, stdout io.Writer) error {
	var c common
	fs := flag.NewFlagSet("approve", flag.ContinueOnError)
	c.register(fs)
	session := fs.Bool("session", false, "also let this tool through for the rest of the call's client session")
	forTime := fs.Duration("for", 0, "also let this tool through, in every session, for this `duration` (10m)")
	calls := fs.Int("calls", 0, "also let this tool through, in every session, for `N` more calls")
	globs := argGlobs{}
	fs.Var(globs, "args", "narrow the grant to calls whose argument matches: `key=glob` (path=/tmp/**); repeatable")
	if err := c.parse(fs, args); err != nil {
		return err
	}
	id, err := inboxArg(fs, "approval id (dynamic-mcp approvals lists them)")
	if err != nil {
		return err
	}
	if *forTime < 0 || *calls < 0 {
		return usageError{"--for and --calls are positive"}
	}
	o := approval.Options{Session: *session, For: approval.Duration(*forTime), Calls: *calls}
	if len(globs) > 0 {
		if o.Once() {
			return usageError{"--args narrows a grant: give --session, --for or --calls with it"}
		}
		o.Args = globs
	}
	cfg, err := c.load()
	if err != nil {
		return err
	}
	reply, err := askInbox(ctx, cfg, local.Hello{Op: local.OpApprove, ID: id, Grant: &o})
	if err != nil {
		return err
	}
	if g := reply.Grant; g != nil {
		fmt.Fprintf(stdout, "approved %s, and granted %s/%s %s (%s) as %s; %s ends it\n",
			id, g.Group, g.Server, g.Tool, grantScope(*g, time.Now()), g.ID, cfg.Command("revoke", g.ID))
		return nil
	}
	fmt.Fprintf(stdout, "approved %s\n", id)
	return nil
}
