package approve

import (
	"log/slog"
)

// NewStoreInbox is the approval inbox of the replicas on a shared store
// (store: postgres://...), reached without a hub: what the approval
// commands use where no hub of the config runs, as on an operator's
// machine while the replicas serve --http elsewhere. It lists every
// replica's waiting calls and the grants for every session, and answers
// a call as the inspector of a replica where it does not wait does: the
// answer is written into the call's row and announced, and the replica
// where it waits applies it. Grants for one session are kept by the
// replica that made them, so it neither lists nor revokes those. It keeps
// nothing of its own; closing the store is the caller's.
func NewStoreInbox(store DB, logger *slog.Logger) *Inbox {
	return New(Options{Store: store, Logger: logger})
}
