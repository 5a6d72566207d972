package config

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"slices"
	"strings"
	"testing"
	"time"
)

// http.session_keys reads 32-byte keys in base64 or hex, from ${VAR}
// references, in order; a key of another size, not a list, or a key
// listed twice is an error naming its line. Stdio servers do not see the
// keys in their environment.
func TestSessionKeys(t *testing.T) {
	const groups = "groups:\n  g: { description: d, command: echo }\n"
	k1, k2 := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	t.Setenv("SEAL_NEW", base64.StdEncoding.EncodeToString(k1))
	cfg, err := Parse("c.yaml", strings.NewReader("http:\n  session_keys: [\"${SEAL_NEW}\", "+hex.EncodeToString(k2)+"]\n  drain_timeout: 5s\n"+groups))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.HTTP.SessionKeys; len(got) != 2 || !bytes.Equal(got[0], k1) || !bytes.Equal(got[1], k2) {
		t.Errorf("keys %x", got)
	}
	if cfg.HTTP.DrainTimeout != 5*time.Second {
		t.Errorf("drain_timeout %v", cfg.HTTP.DrainTimeout)
	}
	if hide := cfg.Groups[0].Servers[0].Hide; !slices.Contains(hide, base64.StdEncoding.EncodeToString(k1)) || !slices.Contains(hide, hex.EncodeToString(k2)) {
		t.Errorf("keys not hidden from stdio servers: %q", hide)
	}
	cfg, err = Parse("c.yaml", strings.NewReader(groups))
	if err != nil || cfg.HTTP.SessionKeys != nil || cfg.HTTP.DrainTimeout != DefaultDrainTimeout {
		t.Errorf("defaults: %v %v %v", err, cfg.HTTP.SessionKeys, cfg.HTTP.DrainTimeout)
	}
	short := base64.StdEncoding.EncodeToString(k1[:16])
	for _, tc := range []struct{ yaml, want string }{
		{"http:\n  session_keys: [" + short + "]\n", "c.yaml:2: http.session_keys[0]: must be 32 bytes"},
		{"http:\n  session_keys:\n    - " + hex.EncodeToString(k1) + "\n    - " + base64.RawURLEncoding.EncodeToString(k1) + "\n", "c.yaml:4: http.session_keys[1]: is the same key as http.session_keys[0]"},
		{"http:\n  session_keys: abc\n", "c.yaml:2: http.session_keys: must be a list"},
		{"http:\n  session_keys: []\n", "c.yaml:2: http.session_keys: must list at least one key"},
		{"http:\n  session_keys: [\"${SEAL_UNSET_VAR}\"]\n", "c.yaml:2: http.session_keys[0]"},
		{"http:\n  drain_timeout: 0s\n", "c.yaml:2: http.drain_timeout"},
	} {
		_, err := Parse("c.yaml", strings.NewReader(tc.yaml+groups))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.yaml, err, tc.want)
		}
	}
}
