package config

import (
	"cmp"
	"path/filepath"
	"strings"
	"time"
)

// DefaultRunnerConnectTimeout bounds the start of a server run by a
// package runner (see PackageRunner) when settings.connect_timeout is not
// in the file: its first start downloads the package (npx -y with an empty
// npm cache took 81 s for the GitHub server), which the 10 s of
// DefaultConnectTimeout cuts off every time.
const DefaultRunnerConnectTimeout = 120 * time.Second

// PackageRunner names the package runner that starts s ("npx", "uvx",
// "bunx", "pnpm dlx", "pipx run", "docker run" ...), whose first start may
// download what it runs; "" for any other command.
func (s *Server) PackageRunner() string {
	if s.Command == "" {
		return ""
	}
	name := strings.ToLower(strings.TrimSuffix(strings.TrimSuffix(filepath.Base(s.Command), ".exe"), ".cmd"))
	switch name {
	case "npx", "uvx", "bunx":
		return name
	}
	sub := map[string]string{"pnpm": "dlx", "yarn": "dlx", "pipx": "run", "bun": "x", "docker": "run", "podman": "run"}[name]
	if sub != "" && len(s.Args) > 0 && s.Args[0] == sub {
		return name + " " + sub
	}
	return ""
}

// runnerConnectTimeout is the connect bound of a package runner's server
// while settings.connect_timeout is not in the file: the longer of
// DefaultRunnerConnectTimeout and the server's timeout:.
func (s *Server) runnerConnectTimeout() time.Duration {
	return max(DefaultRunnerConnectTimeout, s.Timeout)
}

// ConnectTimeoutFor bounds starting and initializing s: its own
// ConnectTimeout, else settings.connect_timeout.
func (c *Config) ConnectTimeoutFor(s *Server) time.Duration {
	return cmp.Or(s.ConnectTimeout, c.Settings.ConnectTimeout)
}

// LongestConnect is the longest connect bound of the config's servers:
// how long a command that starts them all waits for each to settle.
func (c *Config) LongestConnect() time.Duration {
	longest := c.Settings.ConnectTimeout
	for _, g := range c.Groups {
		for _, s := range g.Servers {
			longest = max(longest, c.ConnectTimeoutFor(s))
		}
	}
	return longest
}
