// Package seal encrypts and authenticates small values the hub hands out
// or keeps (sealed session ids, sign-in rows, the 2026-07-28
// requestState, the vault's records) with AES-256-GCM under a list of
// keys: the first seals, any opens, so that a key is rotated by putting
// the new one first and dropping the old one once what it sealed has
// lapsed. A value is bound to associated data (whose it is, what it is),
// may carry an expiry, and is laid out as its Format says, so that every
// value sealed before this package was written still opens.
package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// KeySize is the size of every key: AES-256.
const KeySize = 32

// Format is how a sealed value is laid out:
//
//	Magic | keyID(1, with KeyID) | nonce(12) | GCM( expiry(8, with Expiry) | plain )
//
// in base64url without padding with Text. The associated data is
// authenticated, never written.
type Format struct {
	// Magic starts every value: a version tag (the vault's "dmv1"), and a
	// way to tell a sealed value from a plain one. Empty: none.
	Magic string
	// KeyID writes, before the nonce, the first byte of the SHA-256 of the
	// key that sealed the value, so that Open tries that key (and any
	// other of the same byte) rather than every one.
	KeyID bool
	// Expiry seals, before the plaintext, when the value stops opening
	// (Unix milliseconds, big-endian; 0 for never).
	Expiry bool
	// Text writes values in base64url without padding: for a header, a
	// URL or a JSON string.
	Text bool
}

// Sealer seals and opens values in one Format under a list of keys. It
// is safe for concurrent use.
type Sealer struct {
	format Format
	aeads  []cipher.AEAD
	ids    []byte // ids[i] is the key id byte of aeads[i]
}

// New is a Sealer of keys, each KeySize bytes: the first seals, every
// one opens. It needs at least one key.
func New(keys [][]byte, f Format) (*Sealer, error) {
	if len(keys) == 0 {
		return nil, errors.New("seal: no key")
	}
	s := &Sealer{format: f}
	for i, k := range keys {
		if len(k) != KeySize {
			return nil, fmt.Errorf("seal: key %d is %d bytes, want %d", i+1, len(k), KeySize)
		}
		block, err := aes.NewCipher(k)
		if err != nil {
			return nil, fmt.Errorf("seal: key %d: %w", i+1, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("seal: key %d: %w", i+1, err)
		}
		sum := sha256.Sum256(k)
		s.aeads, s.ids = append(s.aeads, aead), append(s.ids, sum[0])
	}
	return s, nil
}

// Error is why a value does not open: one of ErrMalformed, ErrForged and
// ErrExpired, which callers compare with errors.Is. A value that does not
// open says no more than which of these, so that it tells a forger
// nothing.
type Error struct{ reason string }

func (e *Error) Error() string { return "seal: " + e.reason }

// Why a value does not open.
var (
	// ErrMalformed is a value not in the sealer's format: not base64url,
	// without the magic, too short. A plain (never sealed) value, say.
	ErrMalformed = &Error{"not a sealed value"}
	// ErrForged is a value that no key opens with the associated data
	// given: altered, sealed under a key no longer in the list, or bound
	// to other associated data (another owner's, another kind's).
	ErrForged = &Error{"does not open: altered, sealed under another key, or for another use"}
	// ErrExpired is a value that opens but whose expiry has passed.
	ErrExpired = &Error{"expired"}
)

// Seal seals plain, bound to ad, under the first key. expires is when it
// stops opening; the zero time is never, and the only time a Format
// without Expiry takes.
func (s *Sealer) Seal(plain, ad []byte, expires time.Time) ([]byte, error) {
	if !expires.IsZero() && !s.format.Expiry {
		return nil, errors.New("seal: an expiry in a format without one")
	}
	aead := s.aeads[0]
	head := len(s.format.Magic) + aead.NonceSize()
	if s.format.KeyID {
		head++
	}
	out := make([]byte, head, head+8+len(plain)+aead.Overhead())
	copy(out, s.format.Magic)
	if s.format.KeyID {
		out[len(s.format.Magic)] = s.ids[0]
	}
	nonce := out[head-aead.NonceSize():]
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("seal: nonce: %w", err)
	}
	if s.format.Expiry {
		var ms int64
		if !expires.IsZero() {
			ms = expires.UnixMilli()
		}
		withExpiry := binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(plain)), uint64(ms))
		plain = append(withExpiry, plain...)
	}
	out = aead.Seal(out, nonce, plain, ad)
	if !s.format.Text {
		return out, nil
	}
	return base64.RawURLEncoding.AppendEncode(nil, out), nil
}

// Open is what Seal sealed bound to ad under one of the keys, and that
// key's index in the list (0 is the sealing key: another index says the
// value wants sealing again before that key is dropped). now is the time
// an expiry is read against (ignored without Expiry). Its error is an
// *Error.
func (s *Sealer) Open(sealed, ad []byte, now time.Time) (plain []byte, key int, err error) {
	raw := sealed
	if s.format.Text {
		if raw, err = base64.RawURLEncoding.AppendDecode(nil, sealed); err != nil {
			return nil, 0, ErrMalformed
		}
	}
	if len(raw) < len(s.format.Magic) || string(raw[:len(s.format.Magic)]) != s.format.Magic {
		return nil, 0, ErrMalformed
	}
	raw = raw[len(s.format.Magic):]
	id := -1
	if s.format.KeyID {
		if len(raw) == 0 {
			return nil, 0, ErrMalformed
		}
		id, raw = int(raw[0]), raw[1:]
	}
	n := s.aeads[0].NonceSize()
	least := n + s.aeads[0].Overhead()
	if s.format.Expiry {
		least += 8
	}
	if len(raw) < least {
		return nil, 0, ErrMalformed
	}
	for i, aead := range s.aeads {
		if id >= 0 && int(s.ids[i]) != id {
			continue
		}
		if plain, err = aead.Open(nil, raw[:n], raw[n:], ad); err == nil {
			return s.unexpired(plain, now, i)
		}
	}
	return nil, 0, ErrForged
}

// unexpired is plain without its expiry, ErrExpired when that has passed
// at now.
func (s *Sealer) unexpired(plain []byte, now time.Time, key int) ([]byte, int, error) {
	if !s.format.Expiry {
		return plain, key, nil
	}
	ms := int64(binary.BigEndian.Uint64(plain))
	if ms != 0 && now.UnixMilli() >= ms {
		return nil, 0, ErrExpired
	}
	return plain[8:], key, nil
}
