package local

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"sort"

	"github.com/dynamic-mcp/dynamic-mcp/types/clip"
)

// ErrEnv is a hub's refusal of a bridge whose values of the variables the
// config reads (${VAR}) are not the hub's: joining would give the bridge's
// client upstreams configured with another client's values.
var ErrEnv = errors.New("the running hub has other values of the config's environment variables")

// maxEnvNames bounds the variables a Hello may name.
const maxEnvNames = 256

// EnvDigests is, for each of names, a digest of its value as lookup has
// it ("" when unset): what a bridge says of its environment in its Hello,
// without the values themselves.
func EnvDigests(names []string, lookup func(string) (string, bool)) map[string]string {
	if len(names) == 0 {
		return nil
	}
	out := make(map[string]string, len(names))
	for i, name := range names {
		if i == maxEnvNames {
			break
		}
		out[name] = envDigest(lookup(name))
	}
	return out
}

func envDigest(v string, ok bool) string {
	if !ok {
		return ""
	}
	sum := sha256.Sum256([]byte("dynamic-mcp env\x00" + v))
	return hex.EncodeToString(sum[:16])
}

// EnvDiffers names the variables of digests (a bridge's EnvDigests) whose
// values lookup has otherwise, sorted, each name cut as an echo of what a
// client sent (clip.Echo: the hub logs them); nil when all agree.
func EnvDiffers(digests map[string]string, lookup func(string) (string, bool)) []string {
	if len(digests) > maxEnvNames {
		return []string{"(too many variables)"}
	}
	var out []string
	for name, d := range digests {
		if envDigest(lookup(name)) != d {
			out = append(out, clip.Echo(name))
		}
	}
	sort.Strings(out)
	return out
}
