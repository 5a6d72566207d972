package main

import (
	"context"
	"log/slog"

	"github.com/dynamic-mcp/dynamic-mcp/auth"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgstore"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// newManager is upstream.New on cfg's shared store when it names one
// (store: postgres://...): the database must answer, or the command fails
// before anything starts. The manager closes the store.
func newManager(ctx context.Context, cfg *config.Config, logger *slog.Logger) (*upstream.Manager, error) {
	if cfg.Store == "" {
		return upstream.New(cfg, logger), nil
	}
	db, err := pgstore.Open(ctx, cfg.Store)
	if err != nil {
		return nil, err
	}
	mgr := upstream.New(cfg, logger)
	mgr.UseSharedStore(db)
	logger.Info("state shared through the store's database: sign-ins, tool pins, grants, rate counters", "store", db.Where())
	return mgr, nil
}

// tokenStore is where cfg's sign-ins are kept: the state directory, or
// the shared store; close lets go of the latter.
func tokenStore(ctx context.Context, cfg *config.Config) (store *auth.Store, close func(), err error) {
	if cfg.Store == "" {
		return auth.NewStore(cfg.TokenDir()), func() {}, nil
	}
	db, err := pgstore.Open(ctx, cfg.Store)
	if err != nil {
		return nil, nil, err
	}
	return auth.NewSharedStore(cfg.TokenDir(), db), db.Close, nil
}
