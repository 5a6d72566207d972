package call

import (
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/types/redact"
)

// Hop is one request to an upstream server: the one the end of the chain
// sends for a Call, or another the hub sends for a client's request (a
// completion, a task's status, a 2026-07-28 round) or for no one's (an
// unsubscribe, a call held between rounds). What every request upstream
// goes through, whoever sends it (per-user sign-in, redaction), is a
// HopStage; a concern of a client's call alone is a Stage.
type Hop struct {
	Call    *Call    // the client's request it is sent for, nil for none
	Owner   Owner    // whose request it is (see upstream's Request), nil for no one's
	Server  Upstream // where it goes
	On      ConnID   // the connection it must go on, zero for any (upstream's RequestOn)
	Method  string
	Params  any
	Timeout time.Duration
	Config  *config.Config  // the config it is sent under
	Secrets *redact.Secrets // its secrets' redactor (Config.Secrets), nil when it resolves none
	// Part is the hub's number for the work of the owner's the hop is one
	// part of (a 2026-07-28 call held between rounds, rounds.Held), zero
	// for none: a server's request during it comes back with it
	// (upstream.Event.Part), never in a context value.
	Part uint64
}
