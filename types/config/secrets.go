package config

import (
	"context"
	"strings"

	"github.com/dynamic-mcp/dynamic-mcp/types/vault"
	"gopkg.in/yaml.v3"
)

// secret resolves ${secret:name} met at key from the vault of the state
// directory, opened on the first reference; a config without one never
// touches the vault or the keychain.
func (p *parser) secret(name, key string) (string, bool) {
	if p.secretUses == nil {
		p.secretUses = map[string][]string{}
	}
	p.secretUses[name] = append(p.secretUses[name], key)
	if p.secrets == nil && p.secretsErr == nil {
		p.secrets, p.secretsErr = ReadSecrets(p.stateDir)
		if p.secretsErr != nil {
			p.fail(nil, key, "reading the vault's secrets: %v", p.secretsErr)
		}
	}
	v, ok := p.secrets[name]
	return v, ok
}

// ReadSecrets returns the secrets of the vault of stateDir.
func ReadSecrets(stateDir string) (map[string]string, error) {
	v, err := vault.Open(context.Background(), vault.Options{Dir: stateDir})
	if err != nil {
		return nil, err
	}
	return vault.NewSecrets(stateDir, v).All()
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
