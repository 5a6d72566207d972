package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/dynamic-mcp/dynamic-mcp/transport/local"
)

// denyCmd denies a call waiting in the running shared hub's inbox: the
// client gets -32001, "denied by cli:USER".
func denyCmd(ctx context.Context, args []string, stdout io.Writer) error {
	var c common
	fs := flag.NewFlagSet("deny", flag.ContinueOnError)
	c.register(fs)
	if err := c.parse(fs, args); err != nil {
		return err
	}
	id, err := inboxArg(fs, "approval id (dynamic-mcp approvals lists them)")
	if err != nil {
		return err
	}
	cfg, err := c.load()
	if err != nil {
		return err
	}
	if _, err := askInbox(ctx, cfg, local.Hello{Op: local.OpDeny, ID: id}); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "denied %s\n", id)
	return nil
}
