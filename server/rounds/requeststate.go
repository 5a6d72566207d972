package rounds

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/server/call"
	"github.com/dynamic-mcp/dynamic-mcp/types/seal"
)

// The requestState the hub hands a 2026-07-28 client in an input_required
// result is sealed: the specification makes it attacker-controlled input
// that a server must protect with an AEAD where it matters, and bind to
// the principal, the request and a short expiry ("Multi Round-Trip
// Requests", server requirements 4 and 5). The hub's says which call it
// holds (or carries the upstream's own state), so it matters.
//
// A state is AES-256-GCM (types/seal) under a key drawn at random when
// the hub starts: no state outlives the hub (the calls it names do not
// either), and none is valid at another hub. So its layout is free to
// change from one version to the next.

// sealedState is what a requestState carries, encrypted and
// authenticated.
type sealedState struct {
	// Round names the call the hub holds for the client (see Held):
	// its answers resume it. Empty when the state is an upstream's.
	Round string `json:"r,omitempty"`
	// Server and Upstream are a 2026-07-28 upstream's own requestState
	// and the server that sent it: the retry goes there with it.
	Server   string `json:"s,omitempty"`
	Upstream string `json:"u,omitempty"`
	// Prompt is the policy rule whose question Round put to the user
	// (see Round): the retry brings the answer. Empty for a call.
	Prompt string `json:"p,omitempty"`
	// Caller is the session (or, for requests without one, the holder of
	// the hub's token) it was issued to.
	Caller string `json:"b"`
	// Call digests the request it was issued for (see callDigest).
	Call string `json:"c"`
	// Expires is when it lapses, in Unix milliseconds: sealed as the
	// value's expiry (seal.Format.Expiry), not in its JSON, so it is 0 in
	// a state open returns.
	Expires int64 `json:"-"`
}

// stateAD is the associated data of every sealed state: a state is valid
// only as one, in this version of its format.
var stateAD = []byte("dynamic-mcp requestState v1")

// maxSealedState bounds the requestState the hub tries to open: a state
// of its own is small, but one wrapping an upstream's is that upstream's
// size; past this it is not one the hub issued.
const maxSealedState = 1 << 20

// stateFormat is a requestState: base64url( nonce(12) | seal(expiry(8) | json(sealedState)) ).
var stateFormat = seal.Format{Expiry: true, Text: true}

// stateSealer seals and opens the hub's request states.
type stateSealer struct {
	key *seal.Sealer
	now func() time.Time
}

func newStateSealer() (*stateSealer, error) {
	key := make([]byte, seal.KeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("request state key: %w", err)
	}
	sl, err := seal.New([][]byte{key}, stateFormat)
	if err != nil {
		return nil, fmt.Errorf("request state key: %w", err)
	}
	return &stateSealer{key: sl, now: time.Now}, nil
}

// seal encrypts st: the requestState a client echoes.
func (s *stateSealer) seal(st sealedState) (string, error) {
	if st.Expires <= 0 {
		return "", errors.New("request state without an expiry")
	}
	plain, err := json.Marshal(st)
	if err != nil {
		return "", err
	}
	sealed, err := s.key.Seal(plain, stateAD, time.UnixMilli(st.Expires))
	if err != nil {
		return "", fmt.Errorf("request state: %w", err)
	}
	return string(sealed), nil
}

// Why a requestState is refused. Each is answered -32602 (invalid params:
// the state is a param the client sent), with the message saying which.
var (
	ErrStateForged  = errors.New("requestState was not issued by this hub, or was altered (states do not survive a restart of the hub)")
	ErrStateExpired = errors.New("requestState has expired: answer the input requests within the call timeout")
	ErrStateCaller  = errors.New("requestState was issued to another session or credential")
	ErrStateCall    = errors.New("requestState was issued for another request")
	ErrStateUsed    = errors.New("requestState names a call that has ended or whose state was used already")
)

// open checks token and returns what it carries: it must be one the hub
// sealed, unaltered, unexpired, issued to caller for the request that
// call digests.
func (s *stateSealer) open(token, caller, call string) (sealedState, error) {
	if len(token) > maxSealedState {
		return sealedState{}, ErrStateForged
	}
	plain, _, err := s.key.Open([]byte(token), stateAD, s.now())
	if errors.Is(err, seal.ErrExpired) {
		return sealedState{}, ErrStateExpired
	}
	if err != nil {
		return sealedState{}, ErrStateForged
	}
	var st sealedState
	if err := json.Unmarshal(plain, &st); err != nil {
		return sealedState{}, ErrStateForged
	}
	switch {
	case subtle.ConstantTimeCompare([]byte(st.Caller), []byte(caller)) != 1:
		return sealedState{}, ErrStateCaller
	case st.Call != call:
		return sealedState{}, ErrStateCall
	}
	return st, nil
}

// callDigest identifies the request a state is issued for: its method,
// the server it goes to, the name there (tool, prompt or URI) and its
// arguments, re-encoded so that a client that encodes them again on the
// retry (keys in another order, other spacing) still matches.
func callDigest(c *call.Call) string {
	h := sha256.New()
	for _, part := range []string{c.Method, c.Server.ID(), c.Name} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	if len(c.Args) > 0 {
		var v any
		if json.Unmarshal(c.Args, &v) == nil {
			b, _ := json.Marshal(v)
			h.Write(b)
		} else {
			h.Write(c.Args)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}
