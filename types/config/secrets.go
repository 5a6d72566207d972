package config

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"

	"github.com/dynamic-mcp/dynamic-mcp/types/redact"
	"gopkg.in/yaml.v3"
)

// Secrets reads the secrets ${secret:NAME} refer to. Parsing opens
// nothing itself: cmd hands a Loader the vault and the store
// (types/secrets), which it asks on the first reference only, so that a
// config without one never touches the vault, the keychain or a database.
type Secrets interface {
	// File returns the secrets of the vault of the state directory
	// stateDir.
	File(stateDir string) (map[string]string, error)
	// Store returns the secrets of the store at url (store:
	// postgres://...), sealed under the vault key stateDir's vault uses.
	Store(ctx context.Context, url, stateDir string) (map[string]string, error)
}

// errNoSecrets is a reference met by a Loader given no Secrets.
var errNoSecrets = errors.New("this reader of the config has no secrets")

// secret resolves ${secret:name} met at key from the vault of the state
// directory, or with store: from the store (storesecrets.go), read on
// the first reference.
func (p *parser) secret(name, key string) (string, bool) {
	if p.secretUses == nil {
		p.secretUses = map[string][]string{}
	}
	p.secretUses[name] = append(p.secretUses[name], key)
	if key != "store" && (p.storeAt != "" || p.storeBroken) {
		return p.storeSecret(name, key)
	}
	return p.fileSecret(name, key)
}

// fileSecret is the secret name of the state directory's vault, opened
// on the first reference.
func (p *parser) fileSecret(name, key string) (string, bool) {
	if p.secrets == nil && p.secretsErr == nil {
		p.secrets, p.secretsErr = p.readFile(p.stateDir)
		if p.secretsErr != nil {
			p.fail(nil, key, "reading the vault's secrets: %v", p.secretsErr)
		}
	}
	if p.secretsErr != nil {
		return "", true // reported once above, not again as "not set"
	}
	v, ok := p.secrets[name]
	return v, ok
}

// readFile returns the secrets of the vault of stateDir.
func (l Loader) readFile(stateDir string) (map[string]string, error) {
	if l.Secrets == nil {
		return nil, errNoSecrets
	}
	return l.Secrets.File(stateDir)
}

// prescanStateDir reads the top-level state_dir before the rest, since a
// ${secret:NAME} anywhere needs it; its problems are Parse's to report.
func prescanStateDir(data []byte, env func(string) (string, bool)) string {
	var top struct {
		StateDir string `yaml:"state_dir"`
	}
	if yaml.Unmarshal(data, &top) != nil || strings.TrimSpace(top.StateDir) == "" {
		return Home()
	}
	s, err := expand(top.StateDir, env)
	if err != nil {
		return Home()
	}
	return expandHome(s)
}

// secretRef finds ${secret:NAME} references in raw config text.
// Compiled at first use, not at every start.
var secretRef = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\$\{secret:([A-Za-z_][A-Za-z0-9_]*)(:-[^}]*)?\}`) })

// ScanSecrets reads the config at path without resolving anything (so a
// config naming a secret not yet set still reads): its state directory
// and where it uses each ${secret:NAME} (name -> dotted keys).
func ScanSecrets(path string) (stateDir string, uses map[string][]string, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", nil, fmt.Errorf("read config: %w", err)
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return "", nil, fmt.Errorf("%s: %w", path, err)
	}
	uses = map[string][]string{}
	var walk func(n *yaml.Node, key string)
	walk = func(n *yaml.Node, key string) {
		switch n.Kind {
		case yaml.DocumentNode, yaml.SequenceNode:
			for i, c := range n.Content {
				k := key
				if n.Kind == yaml.SequenceNode {
					k = fmt.Sprintf("%s[%d]", key, i)
				}
				walk(c, k)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i].Value
				if key != "" {
					k = key + "." + k
				}
				walk(n.Content[i+1], k)
			}
		case yaml.ScalarNode:
			for _, m := range secretRef().FindAllStringSubmatch(n.Value, -1) {
				uses[m[1]] = append(uses[m[1]], key)
			}
		}
	}
	walk(&root, "")
	dir := configDir(path)
	return prescanStateDir(data, func(name string) (string, bool) { return configVar(dir, name) }), uses, nil
}

// RedactSecrets replaces, in text, the value of every ${secret:NAME} the
// config uses with [secret:NAME] (see redact.Secrets): a server that
// echoes its key does not hand it on, however deep in JSON it quotes it.
//
// It is the hub's one redactor of secrets: its log (cmd's redactlog), what
// upstreams answer and send (server), and why a server failed (upstream)
// all go through it.
func (c *Config) RedactSecrets(text []byte) []byte { return c.Secrets().Bytes(text) }

// RedactText is RedactSecrets of a string (a log line, an error).
func (c *Config) RedactText(s string) string { return c.Secrets().Text(s) }

// Secrets is the redactor of the values of the secrets c uses; nil (which
// redacts nothing) for a nil config or one that uses none.
func (c *Config) Secrets() *redact.Secrets {
	if c == nil {
		return nil
	}
	return c.secretValues
}

// setSecretValues keeps what RedactSecrets looks for: the values of the
// secrets the config uses.
func (c *Config) setSecretValues(values map[string]string, uses map[string][]string) {
	used := make(map[string]string, len(uses))
	for name := range uses {
		if v, ok := values[name]; ok {
			used[name] = v
		}
	}
	c.secretValues = redact.NewSecrets(used)
}
