package server

import (
	"log/slog"

	"github.com/dynamic-mcp/dynamic-mcp/server/audit"
	"github.com/dynamic-mcp/dynamic-mcp/server/resultcap"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// New builds the hub for cfg's upstreams in mgr (NewWith) with its state
// in this process.
func New(cfg *config.Config, mgr *upstream.Manager, logger *slog.Logger) (*Hub, error) {
	return NewWith(cfg, mgr, logger, Options{})
}

// Options are what a Hub is given beyond its config and upstreams.
type Options struct {
	// Store is the state every replica shares (store: postgres://...):
	// grants, pending approvals and rate counters are kept there. nil:
	// here. The caller (cmd) opens it and closes it after Close.
	Store SharedState
	// Results keep the tool results cut to fit max_result for their
	// sessions to read back; cmd makes it to read its Stats for /metrics.
	// nil: the hub makes its own.
	Results *resultcap.Store
	// Audits count the records lost by every audit trail the hub opens
	// (for /metrics); nil: the hub's own.
	Audits *audit.Stats
}

// SharedState is the store every replica shares as the hub uses it:
// grants and pending approvals (values, changes under a lock, notices to
// the replicas) and rate buckets.
type SharedState interface {
	shared.Tx
	shared.Locker
	shared.Notifier
	shared.Limiter
}
