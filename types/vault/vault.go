// Package vault seals what the hub keeps at rest (sign-in records,
// secrets) with AES-256-GCM under a 32-byte data key. The key lives in the
// OS keychain (Keychain on macOS, Credential Manager on Windows, the
// Secret Service on Linux), so the keychain holds 32 bytes whatever the
// size of what is sealed; where no keychain answers it lives in a 0600
// file beside the sealed files, and DYNAMIC_MCP_VAULT_KEY (base64) can
// supply it (containers). See key.go for the order.
package vault

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/types/seal"
)

// magic starts every sealed blob: a version, so the format can change.
var magic = []byte("dmv1")

// format is a sealed blob: magic | nonce(12) | AES-256-GCM(plain), the
// label as associated data.
var format = seal.Format{Magic: string(magic)}

// Vault seals and opens blobs under one data key.
type Vault struct {
	sealer *seal.Sealer
	// Source says where the key came from: "env", "keychain" or "file".
	Source string
}

// New returns a vault under key, which must be 32 bytes.
func New(key []byte, source string) (*Vault, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("vault key is %d bytes, want %d", len(key), KeySize)
	}
	sealer, err := seal.New([][]byte{key}, format)
	if err != nil {
		return nil, err
	}
	return &Vault{sealer: sealer, Source: source}, nil
}

// Seal encrypts plain; label (a record's name, say) is authenticated with
// it, so a sealed blob moved to another name does not open.
func (v *Vault) Seal(plain []byte, label string) []byte {
	sealed, err := v.sealer.Seal(plain, []byte(label), time.Time{})
	if err != nil {
		panic(err) // only crypto/rand fails here, and not on supported platforms
	}
	return sealed
}

// nonceSize is GCM's: a blob shorter than the magic and a nonce is not
// one Seal made; a longer one that does not open is damaged or under
// another key.
const nonceSize = 12

// ErrNotSealed says a blob is not one Seal made (a plaintext file, say).
var ErrNotSealed = errors.New("not a sealed blob")

// Sealed reports whether b looks like a blob Seal made.
func Sealed(b []byte) bool { return bytes.HasPrefix(b, magic) }

// KeySource names where the key came from, for messages.
func (v *Vault) KeySource() string {
	switch v.Source {
	case "env":
		return "the " + EnvKey + " environment variable"
	case "keychain":
		return "the OS keychain"
	case "file":
		return "the " + KeyFile + " file"
	}
	return v.Source
}

// Open decrypts a blob Seal made under the same key and label.
func (v *Vault) Open(sealed []byte, label string) ([]byte, error) {
	if !Sealed(sealed) {
		return nil, ErrNotSealed
	}
	if len(sealed) < len(magic)+nonceSize {
		return nil, ErrNotSealed
	}
	plain, _, err := v.sealer.Open(sealed, []byte(label), time.Time{})
	if err != nil {
		return nil, fmt.Errorf("cannot open %s: wrong vault key (the key from %s) or damaged data: %w", label, v.KeySource(), err)
	}
	return plain, nil
}
