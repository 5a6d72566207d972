package server

import (
	"log/slog"

	"github.com/dynamic-mcp/dynamic-mcp/types/approval"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared"
)

// StoreInbox is the approval inbox of the replicas on a shared store
// (store: postgres://...), reached without a hub: what the approval
// commands use where no hub of the config runs, as on an operator's
// machine while the replicas serve --http elsewhere. It lists every
// replica's waiting calls and the grants for every session, and answers
// a call as the inspector of a replica where it does not wait does: the
// answer is written into the call's row and announced, and the replica
// where it waits applies it. Grants for one session are kept by the
// replica that made them, so it neither lists nor revokes those.
type StoreInbox struct{ h *Hub }

// NewStoreInbox is the inbox of the replicas on store. It keeps nothing
// of its own; closing the store is the caller's.
func NewStoreInbox(store shared.Store, logger *slog.Logger) *StoreInbox {
	a := newApprovals()
	a.shared = store
	return &StoreInbox{h: &Hub{approvals: a, logger: logger}}
}

// List lists every replica's waiting calls and the shared grants.
func (s *StoreInbox) List() approval.List { return s.h.Approvals() }

// Approve approves the call id where it waits (see Hub.Approve).
func (s *StoreInbox) Approve(id, by string, o approval.Options) (*approval.Grant, error) {
	return s.h.Approve(id, by, o)
}

// Deny denies the call id where it waits (see Hub.Deny).
func (s *StoreInbox) Deny(id, by string) error { return s.h.Deny(id, by) }

// Revoke ends the shared grant id (see Hub.Revoke).
func (s *StoreInbox) Revoke(id, by string) error { return s.h.Revoke(id, by) }
