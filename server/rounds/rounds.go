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

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/server/call"
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
	heldSeq atomic.Uint64 // numbers the held calls (see heldKey)
}

// Hub is what the rounds need of the hub, given at construction.
type Hub struct {
	// Context ends when the hub closes: the calls held end with it.
	Context context.Context
	// Spawn runs f on a goroutine the hub waits for when it closes; false
	// (f not run) once it is closing.
	Spawn func(f func()) bool
	// Send sends method with params to s for owner (see upstream's
	// Request) within timeout, as the hub sends every call (observed,
	// redacted, per-user sign-in). c is the client's request the call
	// is made for; nil for a held call's, which outlives the request.
	Send func(ctx context.Context, c *call.Call, owner any, s *upstream.Server, method string, params any, timeout time.Duration) (json.RawMessage, error)
	// AskClient passes a server's request to the client of the call it
	// came during (e.Owner), where the client can answer, and returns the
	// client's answer.
	AskClient func(ctx context.Context, e upstream.Event) (json.RawMessage, error)
	// Release tells the upstreams that owner, a held call that owned its
	// connections, is gone.
	Release func(owner any)
}

// Request is the client's request a round serves, as the rounds see it.
type Request interface {
	// Call is the call the request was forwarded as: its session, and
	// what the state of a round is bound to; the request's hops upstream
	// are observed as its own.
	Call() *call.Call
	// Param is the member key of the params the client sent, nil when
	// absent (call_dynamic_tool's call params have no round's members).
	Param(key string) json.RawMessage
	// Capabilities are those the client states in the request's _meta
	// (2026-07-28), else those its session stated.
	Capabilities() mcp.ClientCapabilities
	// Credential is the HTTP credential the session came with, "" for
	// none.
	Credential() string
	// SignIn is the request's caller's key among all callers, "" for
	// none, and its face, which sends it to sign in (nil: it cannot): a
	// held call that owns its connections is its caller's.
	SignIn() (user string, linker Linker)
	// FirstCall makes the request go upstream as a first call, without
	// the requestState and inputResponses of a round: it is the retry
	// that answered the hub's question accept.
	FirstCall()
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
