package server

import "github.com/dynamic-mcp/dynamic-mcp/types/shared"

// SharedStore is the store every replica shares (store:), nil without
// one: the HTTP face keeps its pending per-user sign-ins there.
func (h *Hub) SharedStore() shared.Store { return h.mgr.SharedStore() }
