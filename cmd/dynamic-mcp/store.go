package main

import (
	"context"
	"log/slog"
	"strings"

	"github.com/dynamic-mcp/dynamic-mcp/auth"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared/pgstore"
)

// openStore opens the store cfg names (store: postgres://...), for the
// command to hand to each part that keeps state there (the manager, the
// hub, the HTTP face) and to close after them (closeStore); nil without
// one: the state directory's files. The database must answer, or the
// command fails before anything starts.
func openStore(ctx context.Context, cfg *config.Config, logger *slog.Logger) (shared.Store, error) {
	if cfg.Store == "" {
		return nil, nil
	}
	db, err := pgstore.Open(ctx, cfg.Store)
	if err != nil {
		return nil, err
	}
	logger.Info("state shared through the store's database: sign-ins, tool pins, grants, rate counters", "store", db.Where())
	if ignored := db.Ignored(); ignored != nil {
		// pgxpool honoured them; the store's own pool takes only pool_max_conns.
		logger.Warn("store: connection parameters ignored: only pool_max_conns bounds the pool", "params", strings.Join(ignored, ","))
	}
	return db, nil
}

// closeStore lets go of db, if there is one.
func closeStore(db shared.Store) {
	if db != nil {
		db.Close()
	}
}

// tokenStore is where cfg's sign-ins are kept: the state directory, or
// the shared store; close lets go of the latter.
func tokenStore(ctx context.Context, cfg *config.Config) (store *auth.Store, close func(), err error) {
	db, err := openStore(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil || db == nil {
		return auth.NewStore(cfg.TokenDir()), func() {}, err
	}
	return auth.NewSharedStore(cfg.TokenDir(), db), db.Close, nil
}
