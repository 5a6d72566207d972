package config

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// With store:, the config's ${secret:NAME} are the store's secrets (every
// replica's), read on the first reference; store:'s own references are
// the state directory's (the store cannot hold the password that opens
// it).

// prescanStore reads the top-level store: before the rest, since a
// ${secret:NAME} anywhere is read from it: its URL with ${VAR} and
// ${secret:NAME} (the state directory's) substituted, or "" without one;
// broken when it has one that cannot be read (Parse reports why, at its
// line).
func prescanStore(data []byte, env func(string) (string, bool), fileSecret func(string) (string, bool)) (url string, broken bool) {
	var top struct {
		Store string `yaml:"store"`
	}
	if yaml.Unmarshal(data, &top) != nil || strings.TrimSpace(top.Store) == "" {
		return "", false
	}
	s, err := expand(top.Store, func(name string) (string, bool) {
		if n, ok := strings.CutPrefix(name, secretPrefix); ok {
			return fileSecret(n)
		}
		return env(name)
	})
	if err != nil || (!strings.HasPrefix(s, "postgres://") && !strings.HasPrefix(s, "postgresql://")) {
		return "", true
	}
	return s, false
}

// readStore returns the secrets of the store at url.
func (l Loader) readStore(ctx context.Context, url, stateDir string) (map[string]string, error) {
	if l.Secrets == nil {
		return nil, errNoSecrets
	}
	return l.Secrets.Store(ctx, url, stateDir)
}

// ScanStore reads the config at path without resolving anything but
// store: itself (its ${secret:NAME} from stateDir, the config's, which
// ScanSecrets returns): its store URL, "" when it has none.
func (l Loader) ScanStore(path, stateDir string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read config: %w", err)
	}
	dir := configDir(path)
	var file map[string]string
	var fileErr error
	url, broken := prescanStore(data, func(name string) (string, bool) { return configVar(dir, name) }, func(name string) (string, bool) {
		if file == nil {
			if file, fileErr = l.readFile(stateDir); fileErr != nil {
				file = map[string]string{}
			}
		}
		v, ok := file[name]
		return v, ok
	})
	if broken && fileErr != nil {
		return "", fmt.Errorf("%s: store: reading the vault's secrets: %w", path, fileErr)
	}
	if broken {
		return "", fmt.Errorf("%s: store: cannot be read (dynamic-mcp validate -c %s says why)", path, path)
	}
	return url, nil
}

// storeSecret is the secret name of the store, read on the first
// reference.
func (p *parser) storeSecret(name, key string) (string, bool) {
	if p.storeBroken {
		return "", true // store:'s own problem is reported at its line
	}
	if p.storeSecrets == nil && p.storeSecretsErr == nil {
		p.storeSecrets, p.storeSecretsErr = p.readStore(context.Background(), p.storeAt, p.stateDir)
		if p.storeSecretsErr != nil {
			p.fail(nil, key, "reading the store's secrets: %v", p.storeSecretsErr)
		}
	}
	if p.storeSecretsErr != nil {
		return "", true // reported once above, not again as "not set"
	}
	v, ok := p.storeSecrets[name]
	return v, ok
}

// allSecrets are the secrets read, from the state directory and the
// store, for RedactSecrets.
func (p *parser) allSecrets() map[string]string {
	if len(p.storeSecrets) == 0 {
		return p.secrets
	}
	out := maps.Clone(p.storeSecrets)
	for name, at := range p.secretUses {
		if v, ok := p.secrets[name]; ok && slices.Equal(at, []string{"store"}) {
			out[name] = v // store:'s own, from the state directory
		}
	}
	return out
}
