package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

func lookupEnv(name string) (string, bool) { return os.LookupEnv(name) }

// configVar is what ${name} reads in the config in directory dir:
// ${CONFIG_DIR} is dir and ${DYNAMIC_MCP_HOME} the hub's directory (Home,
// set or not), each whatever the environment says; any other name is
// the environment's.
func configVar(dir, name string) (string, bool) {
	switch name {
	case "CONFIG_DIR":
		return dir, true
	case "DYNAMIC_MCP_HOME":
		return Home(), true
	}
	return lookupEnv(name)
}

// varsRead are the environment variables configVar(dir, name) reads,
// for the bridges of a shared hub to agree on (Config.EnvUses): name,
// none for CONFIG_DIR, and for DYNAMIC_MCP_HOME unset the variable the
// user's home directory is, which Home then reads (two clients with
// other homes expand it otherwise).
func varsRead(name string) []string {
	switch {
	case name == "CONFIG_DIR":
		return nil
	case name == "DYNAMIC_MCP_HOME" && os.Getenv(name) == "":
		return []string{name, homeVar()}
	}
	return []string{name}
}

// homeVar is the variable os.UserHomeDir reads.
func homeVar() string {
	switch runtime.GOOS {
	case "windows":
		return "USERPROFILE"
	case "plan9":
		return "home"
	}
	return "HOME"
}

// ExpandHome turns a leading ~/ of a path into the user's home directory
// (the -c of a client's entry, which no shell expanded).
func ExpandHome(path string) string { return expandHome(path) }

// expandHome turns a leading ~/ of a path into the user's home directory.
func expandHome(path string) string {
	if rest, ok := strings.CutPrefix(path, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, rest)
		}
	}
	return path
}

// expand substitutes ${VAR} and ${VAR:-default} in s. $$ is a literal $.
// A ${VAR} whose variable is unset is an error rather than an empty string,
// so that a missing secret is found at load time, not as a 401 later.
func expand(s string, env func(string) (string, bool)) (string, error) {
	if !strings.Contains(s, "$") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '$' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
			continue
		case '{':
		default:
			b.WriteByte(c)
			continue
		}
		name, def, hasDef, end, err := reference(s[i:])
		if err != nil {
			return "", fmt.Errorf("%w in %q", err, s)
		}
		v, ok := env(name)
		switch {
		case ok && (v != "" || !hasDef):
			b.WriteString(v)
		case hasDef:
			b.WriteString(def)
		case strings.HasPrefix(name, secretPrefix):
			return "", &UnsetError{Name: strings.TrimPrefix(name, secretPrefix), Secret: true}
		default:
			return "", &UnsetError{Name: name}
		}
		i += end - 1
	}
	return b.String(), nil
}

// UnsetError is a ${VAR} whose variable is not set, or a ${secret:NAME}
// whose secret is not in the vault.
type UnsetError struct {
	Name   string
	Secret bool // ${secret:NAME}
	// CLI writes the command of the fix; the zero CLI names no -c.
	CLI CLI
}

func (e *UnsetError) Error() string {
	if e.Secret {
		return fmt.Sprintf("secret %s is not set (run: %s)", e.Name, e.CLI.Command("secret", "set", e.Name))
	}
	return fmt.Sprintf("environment variable %s is not set (write ${%s:-} for an empty default)", e.Name, e.Name)
}

// Fix says how to set what e names, for a server that stays unavailable
// until it is: a command to run, or an export in the hub's environment.
func (e *UnsetError) Fix() string {
	set := e.CLI.Command("secret", "set", e.Name)
	if e.Secret {
		return "run: " + set
	}
	return fmt.Sprintf("export %s=... where the hub starts, or run: %s and write ${secret:%s}", e.Name, set, e.Name)
}

// secretPrefix starts a reference to a secret of the vault:
// ${secret:NAME}.
const secretPrefix = "secret:"

// reference reads the ${NAME} or ${NAME:-default} that s starts with: the
// name, the default and whether there is one, and the reference's length.
func reference(s string) (name, def string, hasDef bool, n int, err error) {
	end := strings.IndexByte(s, '}')
	if !strings.HasPrefix(s, "${") || end < 0 {
		return "", "", false, 0, errors.New("unclosed ${")
	}
	name, def, hasDef = strings.Cut(s[2:end], ":-")
	if !validEnvName(strings.TrimPrefix(name, secretPrefix)) {
		return "", "", false, 0, fmt.Errorf("invalid variable name %q", name)
	}
	return name, def, hasDef, end + 1, nil
}

// Escape writes v for the substitution Parse applies: its ${NAME} and
// ${NAME:-default} references stay references, and every other $ is
// doubled, the escape of a literal $, so that pa$$word reads as pa$$word.
func Escape(v string) string {
	if !strings.Contains(v, "$") {
		return v
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] != '$' {
			b.WriteByte(v[i])
			continue
		}
		if _, _, _, n, err := reference(v[i:]); err == nil {
			b.WriteString(v[i : i+n])
			i += n - 1
			continue
		}
		b.WriteString("$$")
	}
	return b.String()
}

func validEnvName(name string) bool {
	if name == "" {
		return false
	}
	for i, r := range name {
		if r == '_' || (r >= 'A' && r <= 'Z') || (r >= 'a' && r <= 'z') || (i > 0 && r >= '0' && r <= '9') {
			continue
		}
		return false
	}
	return true
}
