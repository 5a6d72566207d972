package config

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/dynamic-mcp/dynamic-mcp/types/vault"
	"gopkg.in/yaml.v3"
)

// secret resolves ${secret:name} met at key from the vault of the state
// directory, or with store: from the store (storesecrets.go), opened on
// the first reference; a config without one never touches the vault or
// the keychain.
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
		p.secrets, p.secretsErr = ReadSecrets(p.stateDir)
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

// secretRef finds ${secret:NAME} references in raw config text.
var secretRef = regexp.MustCompile(`\$\{secret:([A-Za-z_][A-Za-z0-9_]*)(:-[^}]*)?\}`)

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
			for _, m := range secretRef.FindAllStringSubmatch(n.Value, -1) {
				uses[m[1]] = append(uses[m[1]], key)
			}
		}
	}
	walk(&root, "")
	dir := configDir(path)
	return prescanStateDir(data, func(name string) (string, bool) {
		if name == "CONFIG_DIR" {
			return dir, true
		}
		return lookupEnv(name)
	}), uses, nil
}

// minRedacted is the shortest secret value redacted: a shorter one (a PIN,
// "1") would be found in unrelated text and wreck it.
const minRedacted = 6

// RedactSecrets replaces, in text, the value of every ${secret:NAME} the
// config uses with [secret:NAME]: a server that echoes its key does not
// hand it on. text may be JSON, with JSON inside it: a value is also found
// as JSON escapes it, at any depth up to maxEscapeDepth, and as a URL's
// query escapes it; the replacement needs no escaping at any depth.
//
// It is the hub's one redactor of secrets: its log (cmd's redactlog), what
// upstreams answer and send (server), and why a server failed (upstream)
// all go through it.
func (c *Config) RedactSecrets(text []byte) []byte {
	if c == nil || len(c.secretValues) == 0 {
		return text
	}
	for _, sv := range c.secretValues {
		for _, form := range sv.forms {
			if bytes.Contains(text, form) {
				text = bytes.ReplaceAll(text, form, sv.mark)
			}
		}
	}
	return text
}

// secretValue is one resolved secret as RedactSecrets looks for it.
type secretValue struct {
	raw   int      // the value's length, which orders secrets
	forms [][]byte // the value as it may appear (secretForms), longest first
	mark  []byte   // [secret:NAME]
}

// setSecretValues keeps what RedactSecrets looks for: the used secrets'
// values, longest first, so a secret inside another is not cut apart.
func (c *Config) setSecretValues(values map[string]string, uses map[string][]string) {
	c.secretValues = nil
	for name := range uses {
		v, ok := values[name]
		if !ok || len(v) < minRedacted {
			continue
		}
		sv := secretValue{raw: len(v), forms: secretForms(v), mark: []byte("[secret:" + name + "]")}
		c.secretValues = append(c.secretValues, sv)
	}
	slices.SortFunc(c.secretValues, func(a, b secretValue) int { return b.raw - a.raw })
}

// maxEscapeDepth is how many times over a value is looked for as JSON
// escapes it. Once is a server's answer quoting it; twice a tool's
// JSON-in-text result (the tool encodes it, then the server its text);
// three and four times such text quoted again (a tool passing on another
// tool's result, a log of it). Each depth doubles the backslashes, so a
// form deeper than this is longer than any text that holds it by chance.
const maxEscapeDepth = 4

// maxForms bounds the forms of one value, each looked for in every text:
// a value with both kinds of character that encoders escape their own way
// (one of <>&, and /) has up to four ways at each depth, 129 forms over
// four depths for `tok/"a&b"\+9Zq==`; a base64 value (with / alone) has
// 16, a value with neither one a depth. The shallower are kept first.
const maxForms = 160

// secretForms is v as it appears in text: raw; as the JSON encoders
// servers use escape it, once and again at each depth until escaping
// changes nothing more or maxEscapeDepth; and as a URL's query or path
// escapes it (a url: with the key in its query, quoted by an error).
// Longest first, so a deeper form is replaced whole rather than a
// shallower one inside it.
func secretForms(v string) [][]byte {
	seen := map[string]bool{v: true}
	forms := []string{v}
	add := func(f string) bool {
		if seen[f] || len(forms) >= maxForms {
			return false
		}
		seen[f] = true
		forms = append(forms, f)
		return true
	}
	add(url.QueryEscape(v))
	add(url.PathEscape(v))
	level := []string{v}
	for depth := 0; depth < maxEscapeDepth && len(level) > 0; depth++ {
		var next []string
		for _, f := range level {
			for _, e := range jsonEscapes(f) {
				if add(e) {
					next = append(next, e)
				}
			}
		}
		level = next
	}
	slices.SortStableFunc(forms, func(a, b string) int { return len(b) - len(a) })
	out := make([][]byte, len(forms))
	for i, f := range forms {
		out[i] = []byte(f)
	}
	return out
}

// jsonEscapes are v as the JSON encoders servers use write it inside a
// string, without the quotes: "\"" and "\\" always; "<>&" as \u003c (Go's)
// or not (JavaScript's, Python's); "/" as "\/" (PHP's) or not.
func jsonEscapes(v string) []string {
	var out []string
	for _, html := range []bool{false, true} {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(html)
		if enc.Encode(v) != nil {
			continue
		}
		q := strings.TrimSuffix(b.String(), "\n")
		q = q[1 : len(q)-1]
		out = append(out, q, strings.ReplaceAll(q, "/", `\/`))
	}
	return out
}

// RedactText is RedactSecrets of a string (a log line, an error).
func (c *Config) RedactText(s string) string {
	if c == nil || len(c.secretValues) == 0 {
		return s
	}
	return string(c.RedactSecrets([]byte(s)))
}
