package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"

	"github.com/dynamic-mcp/dynamic-mcp/server/approve"
	"github.com/dynamic-mcp/dynamic-mcp/transport/local"
	"github.com/dynamic-mcp/dynamic-mcp/types/approval"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgstore"
)

// askInbox sends hello (one of the approval inbox's ops) to the shared hub
// of cfg and returns its reply. The inbox lives in the running hub: with
// none running there is nothing waiting, which the error says.
//
// With store: and no shared hub running here (the replicas serve --http
// elsewhere), the inbox on the store answers: every replica's waiting
// calls, answered where they wait (askStoreInbox).
func askInbox(ctx context.Context, cfg *config.Config, hello local.Hello) (local.Reply, error) {
	if !local.Supported {
		if cfg.Store != "" {
			return askStoreInbox(ctx, cfg, hello)
		}
		return local.Reply{}, errors.New("the approval commands reach a shared hub, which this system does not have: use the inspector (serve --ui)")
	}
	paths, err := local.PathsFor(cfg.Path, cfg.StateDir)
	if err != nil {
		return local.Reply{}, err
	}
	c, err := local.Dial(ctx, paths)
	if errors.Is(err, local.ErrNotRunning) && cfg.Store != "" {
		return askStoreInbox(ctx, cfg, hello)
	}
	if errors.Is(err, local.ErrNotRunning) {
		return local.Reply{}, fmt.Errorf("no shared hub is running for %s (a hub serving --http or --standalone answers approvals in its inspector, /ui)", cfg.Path)
	}
	if err != nil {
		return local.Reply{}, err
	}
	defer c.Close()
	reply, _, err := sayHello(c, hello)
	return reply, err
}

// inboxArg is the one argument of approve, deny or revoke: an id.
func inboxArg(fs *flag.FlagSet, what string) (string, error) {
	if fs.NArg() != 1 {
		return "", usageError{"give one " + what}
	}
	return fs.Arg(0), nil
}

// askStoreInbox answers hello from the approval inbox on cfg's store
// (approve.NewStoreInbox): the replicas' waiting calls and shared grants.
func askStoreInbox(ctx context.Context, cfg *config.Config, hello local.Hello) (local.Reply, error) {
	db, err := pgstore.Open(ctx, cfg.Store)
	if err != nil {
		return local.Reply{}, err
	}
	defer db.Close()
	inbox := approve.NewStoreInbox(db, slog.New(slog.DiscardHandler))
	by := local.Approver()
	var reply local.Reply
	switch hello.Op {
	case local.OpApprovals:
		l := inbox.Approvals()
		reply.Approvals = &l
	case local.OpApprove:
		var o approval.Options
		if hello.Grant != nil {
			o = *hello.Grant
		}
		reply.Grant, err = inbox.Approve(hello.ID, by, o)
	case local.OpDeny:
		err = inbox.Deny(hello.ID, by)
	case local.OpRevoke:
		err = inbox.Revoke(hello.ID, by)
	default:
		err = fmt.Errorf("unknown op %q", hello.Op)
	}
	return reply, err
}
