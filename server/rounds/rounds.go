// Package rounds is the 2026-07-28 era's multi round-trip requests
// ("Multi Round-Trip Requests", SEP-2322) on the hub's side: the
// input_required rounds of calls held between a client's retries, the
// rounds relayed to and from 2026-07-28 servers, the prompt rules'
// questions put in rounds (an Asker), and the sealed requestState that
// names each round. The checks and decoration of every 2026-07-28 request
// and its answer are a stage of their own (server/era).
package rounds

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/server/call"
	"github.com/dynamic-mcp/dynamic-mcp/server/routes"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// Rounds are the hub's rounds: the states it seals, the calls it holds
// between rounds and the questions it put in rounds.
type Rounds struct {
	hub    Hub
	states *stateSealer // seals the requestState of input_required results
	inputs *inputCalls  // 2026-07-28 clients' calls held between rounds
	// prompts are the prompt rules' questions put to 2026-07-28 clients
	// in input_required answers and not answered yet (promptround.go).
	prompts *promptRounds
	heldSeq atomic.Uint64 // numbers the held calls (Held.id)
}

// Hub is what the rounds need of the hub, given at construction.
type Hub struct {
	// Context ends when the hub closes: the calls held end with it.
	Context context.Context
	// Spawn runs f on a goroutine the hub waits for when it closes; false
	// (f not run) once it is closing.
	Spawn func(f func()) bool
	// Send sends a hop upstream, as the hub sends every call (observed,
	// redacted, per-user sign-in). Its Call is the client's request the
	// call is made for; nil for a held call's, which outlives the request
	// and names itself as the hop's Part.
	Send call.HopHandler
	// AskClient passes a server's request to the client of the call it
	// came during (e.Owner), where the client can answer, and returns the
	// client's answer.
	AskClient func(ctx context.Context, e routes.ServerRequest) (json.RawMessage, error)
	// Release tells the upstreams that owner, a held call that owned its
	// connections, is gone.
	Release func(owner upstream.Owner)
	// HoldProgress keeps a held call's progress token (the hub's, that it
	// went upstream with) known across its rounds (routes.Table's
	// HoldProgress); nil: its progress ends with its first round.
	HoldProgress func(tok string) (carry func(to string) (end func()), release func())
}

// New makes the rounds of a hub, with a key of their own for the states
// they seal.
func New(hub Hub) (*Rounds, error) {
	states, err := newStateSealer()
	if err != nil {
		return nil, err
	}
	return &Rounds{hub: hub, states: states, inputs: newInputCalls(), prompts: newPromptRounds()}, nil
}

// SetClock makes now the clock the states are sealed and opened by (for
// tests of their expiry).
func (r *Rounds) SetClock(now func() time.Time) { r.states.now = now }
