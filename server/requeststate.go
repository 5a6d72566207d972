package server

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// The requestState the hub hands a 2026-07-28 client in an input_required
// result is sealed: the specification makes it attacker-controlled input
// that a server must protect with an AEAD where it matters, and bind to
// the principal, the request and a short expiry ("Multi Round-Trip
// Requests", server requirements 4 and 5). The hub's says which call it
// holds (or carries the upstream's own state), so it matters.
//
// A state is AES-256-GCM under a key drawn at random when the hub starts:
// no state outlives the hub (the calls it names do not either), and none
// is valid at another hub.

// sealedState is what a requestState carries, encrypted and
// authenticated.
type sealedState struct {
	// Round names the call the hub holds for the client (see inputCall):
	// its answers resume it. Empty when the state is an upstream's.
	Round string `json:"r,omitempty"`
	// Server and Upstream are a 2026-07-28 upstream's own requestState
	// and the server that sent it: the retry goes there with it.
	Server   string `json:"s,omitempty"`
	Upstream string `json:"u,omitempty"`
	// Prompt is the policy rule whose question Round put to the user
	// (see askRound): the retry brings the answer. Empty for a call.
	Prompt string `json:"p,omitempty"`
	// Caller is the session (or, for requests without one, the holder of
	// the hub's token) it was issued to.
	Caller string `json:"b"`
	// Call digests the request it was issued for (see callDigest).
	Call string `json:"c"`
	// Expires is when it lapses, in Unix milliseconds.
	Expires int64 `json:"e"`
}

// stateAD is the associated data of every sealed state: a state is valid
// only as one, in this version of its format.
var stateAD = []byte("dynamic-mcp requestState v1")

// maxSealedState bounds the requestState the hub tries to open: a state
// of its own is small, but one wrapping an upstream's is that upstream's
// size; past this it is not one the hub issued.
const maxSealedState = 1 << 20

// stateSealer seals and opens the hub's request states.
type stateSealer struct {
	aead cipher.AEAD
	now  func() time.Time
}

func newStateSealer() (*stateSealer, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("request state key: %w", err)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("request state key: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("request state key: %w", err)
	}
	return &stateSealer{aead: aead, now: time.Now}, nil
}

// seal encrypts st: the requestState a client echoes.
func (s *stateSealer) seal(st sealedState) (string, error) {
	plain, err := json.Marshal(st)
	if err != nil {
		return "", err
	}
	nonce := make([]byte, s.aead.NonceSize(), s.aead.NonceSize()+len(plain)+s.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("request state nonce: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(s.aead.Seal(nonce, nonce, plain, stateAD)), nil
}

// Why a requestState is refused. Each is answered -32602 (invalid params:
// the state is a param the client sent), with the message saying which.
var (
	errStateForged  = errors.New("requestState was not issued by this hub, or was altered (states do not survive a restart of the hub)")
	errStateExpired = errors.New("requestState has expired: answer the input requests within the call timeout")
	errStateCaller  = errors.New("requestState was issued to another session or credential")
	errStateCall    = errors.New("requestState was issued for another request")
	errStateUsed    = errors.New("requestState names a call that has ended or whose state was used already")
)

// open checks token and returns what it carries: it must be one the hub
// sealed, unaltered, unexpired, issued to caller for the request that
// call digests.
func (s *stateSealer) open(token, caller, call string) (sealedState, error) {
	if len(token) > maxSealedState {
		return sealedState{}, errStateForged
	}
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil || len(raw) < s.aead.NonceSize() {
		return sealedState{}, errStateForged
	}
	n := s.aead.NonceSize()
	plain, err := s.aead.Open(nil, raw[:n], raw[n:], stateAD)
	if err != nil {
		return sealedState{}, errStateForged
	}
	var st sealedState
	if err := json.Unmarshal(plain, &st); err != nil {
		return sealedState{}, errStateForged
	}
	switch {
	case s.now().UnixMilli() > st.Expires:
		return sealedState{}, errStateExpired
	case subtle.ConstantTimeCompare([]byte(st.Caller), []byte(caller)) != 1:
		return sealedState{}, errStateCaller
	case st.Call != call:
		return sealedState{}, errStateCall
	}
	return st, nil
}

// callDigest identifies the request a state is issued for: its method,
// the server it goes to, the name there (tool, prompt or URI) and its
// arguments, re-encoded so that a client that encodes them again on the
// retry (keys in another order, other spacing) still matches.
func callDigest(c call) string {
	h := sha256.New()
	for _, part := range []string{c.method, c.server.Config.ID(), c.name} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	if len(c.args) > 0 {
		var v any
		if json.Unmarshal(c.args, &v) == nil {
			b, _ := json.Marshal(v)
			h.Write(b)
		} else {
			h.Write(c.args)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// caller is who a state is bound to: the client's session, or, for a
// request over HTTP that came without one (2026-07-28 needs none, and
// the face makes a session for that request alone), the caller the face
// knows it came from: its identity (the JWT's user, the static token's
// name; see OpenAs), else the credential it came with (where the face
// tells credentials apart: named tokens; else any holder of the hub's
// token). The identity first, as the credential is "" for every caller
// where the face gives clients no shares (http.client_share: 100%), and
// signed-in users would be one caller. The state names a call held for
// one round only, so it cannot be used twice either way.
func caller(sess *session) string {
	if sessionless(sess) {
		if key := sess.who.Key(); key != "" {
			return "identity " + key
		}
		return "credential " + sess.Client()
	}
	return "session " + sess.id
}

// sessionless reports whether sess is the session of one request over
// HTTP that came without Mcp-Session-Id: it ends with that request.
func sessionless(sess *session) bool {
	return sess.transport == "streamable-http" && !sess.Initialized()
}
