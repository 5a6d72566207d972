package config

import (
	"os"
	"path/filepath"
	"strings"
)

// ConfigEnvVar names the config every command reads without -c.
const ConfigEnvVar = "DYNAMIC_MCP_CONFIG"

// DefaultPath is the config every command reads without -c:
// $DYNAMIC_MCP_CONFIG, else config.yaml in Home().
func DefaultPath() string {
	if p := os.Getenv(ConfigEnvVar); p != "" {
		return p
	}
	return homeConfig()
}

// homeConfig is config.yaml in Home(), the config found with neither -c
// nor $DYNAMIC_MCP_CONFIG.
func homeConfig() string { return filepath.Join(Home(), "config.yaml") }

// CLI writes the dynamic-mcp commands that hints (of the hub, of a
// command, of a config error) tell the user to run, so that each works
// when pasted: every hint is written by Command, the one place that
// knows whether the command needs -c.
type CLI struct {
	// Config is the config's absolute path, or "" when a command finds
	// it without -c, or it was read without a file name.
	Config string
}

// CLIFor is the CLI of the config read from path. -c is left out only
// for ~/.dynamic-mcp/config.yaml (Home()'s) while $DYNAMIC_MCP_CONFIG
// names no other file: the hub's environment (a client's entry) may set
// that variable when the shell the hint is pasted into does not, so a
// config found through it is still named.
func CLIFor(path string) CLI {
	if path == "" {
		return CLI{}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	home := homeConfig()
	env := os.Getenv(ConfigEnvVar)
	if samePath(abs, home) && (env == "" || samePath(env, home)) {
		return CLI{}
	}
	return CLI{Config: abs}
}

func samePath(a, b string) bool {
	a, errA := filepath.Abs(a)
	b, errB := filepath.Abs(b)
	return errA == nil && errB == nil && a == b
}

// Command is "dynamic-mcp ARGS...", with -c and the config's path after
// them when the config is not the one found without -c (every command
// takes flags after its arguments). Words a shell would split or expand
// are quoted.
func (c CLI) Command(args ...string) string {
	words := append([]string{"dynamic-mcp"}, args...)
	if c.Config != "" {
		words = append(words, "-c", c.Config)
	}
	for i, w := range words {
		words[i] = ShellQuote(w)
	}
	return strings.Join(words, " ")
}

// Command is the dynamic-mcp command line of args for this config (see
// CLI.Command).
func (c *Config) Command(args ...string) string { return c.CLI.Command(args...) }

// ShellQuote writes s as one word of a POSIX shell: as it is when it
// holds only characters no shell treats specially, else in single
// quotes.
func ShellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./:@%+=,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
