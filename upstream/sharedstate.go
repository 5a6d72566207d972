package upstream

import (
	"github.com/dynamic-mcp/dynamic-mcp/auth"
	"github.com/dynamic-mcp/dynamic-mcp/types/shared"
)

// UseSharedStore keeps the upstream sign-ins in db, the state every
// replica shares (store: postgres://...), in place of the state
// directory's files; the manager owns db from then on and closes it last
// in Close. Call it before Start.
func (m *Manager) UseSharedStore(db shared.Store) {
	m.shared = db
	m.tokens = auth.NewSharedStore(m.tokens.Dir(), db)
	m.tokens.SetLogger(m.logger)
}
