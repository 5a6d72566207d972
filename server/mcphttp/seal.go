package mcphttp

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/server"
	"github.com/dynamic-mcp/dynamic-mcp/types/seal"
)

// A sealed session id (http.session_keys) is the session's small state,
// encrypted and authenticated with AES-256-GCM, so that any replica with
// the same keys can resume the session without a session table and
// without sticky routing, and no one without a key can read or forge one:
//
//	base64url( keyID(1) | nonce(12) | seal(json(sealedState)) )
//
// keyID is the first byte of the SHA-256 of the key that sealed it, so
// that opening tries that key first (and any other of the same id byte).
// The associated data is the credential the session belongs to
// (httpguard.CredentialOf): an id is opened only for the caller that made it, and
// for anyone else it is as unknown as an id never handed out.

// sealedLifetime is how long a sealed id opens after it was sealed. A
// session in use longer gets 404, and its client starts a new one (the
// MCP spec's answer to a session that is gone).
const sealedLifetime = 24 * time.Hour

// maxSealedID bounds a sealed id's length, well under the 8 KiB a header
// line may have at nginx and most proxies: a state larger than that is
// sealed without the parts a resumed session can do without (see shrink).
const maxSealedID = 4096

// sealedState is what a sealed id holds.
type sealedState struct {
	// Nonce is the session's random id on every replica (the hub's
	// session id): the replicas that resume a session agree on its name.
	Nonce string `json:"n"`
	// Expires is when the id stops opening, in Unix seconds.
	Expires int64 `json:"e"`
	// URLProfile is the profile of the URL it was opened at (/mcp/p/NAME),
	// "" for /mcp: the session is found there only.
	URLProfile string              `json:"u,omitempty"`
	State      server.SessionState `json:"s"`

	key int // the index of the key that opened it (open); not sealed
}

// errUnsealed is an id that is not one of ours, or no longer opens.
var errUnsealed = errors.New("session id does not open")

// idFormat is the layout of a sealed id (and of a sign-in row in the
// shared store, server/signin): the key id byte, the nonce, in base64url.
var idFormat = seal.Format{KeyID: true, Text: true}

// sealer seals and opens session ids under a list of keys.
type sealer struct {
	keys  *seal.Sealer
	names [][]byte // names[i] is the key, derived from the i-th, of stream names (streamName)
}

// newSealer is a sealer of keys, each 32 bytes (config.SessionKeyBytes):
// the first seals, every one opens. No keys: nil, ids are not sealed.
func newSealer(keys [][]byte) (*sealer, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	sl, err := seal.New(keys, idFormat)
	if err != nil {
		return nil, err
	}
	s := &sealer{keys: sl}
	for _, k := range keys {
		name := sha256.Sum256(append([]byte("dynamic-mcp stream name\x00"), k...))
		s.names = append(s.names, name[:])
	}
	return s, nil
}

// associated binds an id to the credential owner.
func associated(owner string) []byte { return []byte("dynamic-mcp session\x00" + owner) }

// seal is st as an id for owner's eyes only, under the first key.
func (s *sealer) seal(st sealedState, owner string) (string, error) {
	plain, err := json.Marshal(st)
	if err != nil {
		return "", err
	}
	return s.sealBytes(plain, associated(owner))
}

// sealBytes seals plain with the associated data ad under the first key:
// base64url( keyID(1) | nonce(12) | seal(plain) ).
func (s *sealer) sealBytes(plain, ad []byte) (string, error) {
	sealed, err := s.keys.Seal(plain, ad, time.Time{})
	return string(sealed), err
}

// openBytes is what sealBytes sealed with ad under one of the keys, and
// that key's index; errUnsealed when none opens it.
func (s *sealer) openBytes(sealed string, ad []byte) ([]byte, int, error) {
	plain, key, err := s.keys.Open([]byte(sealed), ad, time.Time{})
	if err != nil {
		return nil, 0, errUnsealed
	}
	return plain, key, nil
}

// open is the state id holds, when one of the keys sealed it for owner
// and it has not expired at now; errUnsealed else, for whatever reason
// (tampered, another caller's, expired, its key dropped, not sealed).
func (s *sealer) open(id, owner string, now time.Time) (sealedState, error) {
	var st sealedState
	if len(id) > 4*maxSealedID { // over the soft bound only when shrinking could not make it fit
		return st, errUnsealed
	}
	plain, key, err := s.openBytes(id, associated(owner))
	if err != nil {
		return st, err
	}
	if json.Unmarshal(plain, &st) != nil || st.Nonce == "" || now.Unix() >= st.Expires {
		return sealedState{}, errUnsealed
	}
	st.key = key
	return st, nil
}

// sealWithin seals st for owner, dropping what a resumed session can do
// without until the id fits in maxSealedID: the experimental and
// extension capabilities first, then the caller's groups and claims (the
// profile they chose is kept).
func (s *sealer) sealWithin(st sealedState, owner string) (string, error) {
	for step := 0; ; step++ {
		id, err := s.seal(st, owner)
		if err != nil || len(id) <= maxSealedID || step == 2 {
			return id, err
		}
		switch step {
		case 0:
			st.State.Capabilities.Experimental, st.State.Capabilities.Extensions = nil, nil
		case 1:
			if who := st.State.Identity; who != nil {
				slim := *who
				slim.Groups, slim.Claims = nil, nil
				st.State.Identity = &slim
			}
		}
	}
}

// streamName is the name of the session nonce's GET stream on every
// replica (server/relay): the "<stream>" of its event ids, and its name in
// the store. It is a keyed hash (HMAC-SHA-256 under a key derived from
// the session key key, the one that sealed the session's id: every
// replica that opens the id has it), so that it is the same everywhere
// and nobody without the key can tell it from a nonce, or guess it.
func (s *sealer) streamName(key int, nonce string) string {
	m := hmac.New(sha256.New, s.names[key])
	m.Write([]byte(nonce))
	return hex.EncodeToString(m.Sum(nil)[:12])
}
