package config

import (
	"encoding/base64"
	"encoding/hex"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// SessionKeyBytes is the size of each of http.session_keys: an AES-256 key.
const SessionKeyBytes = 32

// DefaultDrainTimeout is how long a replica that is told to stop lets
// the calls in flight finish (http.drain_timeout).
const DefaultDrainTimeout = 30 * time.Second

// sessionKeys reads http.session_keys: a list of 32-byte keys, each
// written in base64 (standard or URL alphabet, padded or not) or hex,
// usually as a ${VAR} or ${secret:NAME} reference. The first seals new
// session ids; every one opens them, so that a key is rotated by putting
// the new one first and dropping the old one once the ids it sealed have
// expired. No key may appear twice. Like the tokens, no stdio server sees
// a key in its environment.
func (p *parser) sessionKeys(n *yaml.Node, key string) [][]byte {
	if n.Kind != yaml.SequenceNode {
		p.fail(n, key, "must be a list of keys (32 bytes each, base64 or hex)")
		return nil
	}
	if len(n.Content) == 0 {
		p.fail(n, key, "must list at least one key, or be left out")
		return nil
	}
	out := make([][]byte, 0, len(n.Content))
	seen := map[string]int{}
	for i, v := range n.Content {
		k := key + "[" + strconv.Itoa(i) + "]"
		s, ok := p.strOK(v, k)
		if !ok {
			continue
		}
		b, ok := decodeSessionKey(strings.TrimSpace(s))
		if !ok {
			p.fail(v, k, "must be %d bytes, written in base64 or hex (for example the output of openssl rand -base64 32)", SessionKeyBytes)
			continue
		}
		if j, dup := seen[string(b)]; dup {
			p.fail(v, k, "is the same key as %s[%d]", key, j)
			continue
		}
		seen[string(b)] = i
		out = append(out, b)
		p.sessionKeyTexts = append(p.sessionKeyTexts, s)
	}
	return out
}

// decodeSessionKey is s as SessionKeyBytes bytes, from hex or any of the
// base64 encodings.
func decodeSessionKey(s string) ([]byte, bool) {
	if len(s) == 2*SessionKeyBytes {
		if b, err := hex.DecodeString(s); err == nil {
			return b, true
		}
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil && len(b) == SessionKeyBytes {
			return b, true
		}
	}
	return nil, false
}
