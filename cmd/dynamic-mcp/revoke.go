package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/dynamic-mcp/dynamic-mcp/transport/local"
)

// revokeCmd ends a grant in the running shared hub: the calls it covered
// ask again.
func revokeCmd(ctx context.Context, args []string, stdout io.Writer) error {
	var c common
	fs := flag.NewFlagSet("revoke", flag.ContinueOnError)
	c.register(fs)
	if err := c.parse(fs, args); err != nil {
		return err
	}
	id, err := inboxArg(fs, "grant id (dynamic-mcp approvals lists them)")
	if err != nil {
		return err
	}
	cfg, err := c.load()
	if err != nil {
		return err
	}
	if _, err := askInbox(ctx, cfg, local.Hello{Op: local.OpRevoke, ID: id}); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "revoked %s\n", id)
	return nil
}
