package main

import (
	"os"
	"path/filepath"
	"strings"
)

// runsHub reports whether a client's server entry (command and args) runs
// dynamic-mcp itself: a command named dynamic-mcp, any path to this very
// executable serving (serve, or a config file: install's entry), or a
// runner (npx, go run ...) whose arguments name it. Imported as a group,
// such an entry makes the hub its own client: it never idles out, and its
// own meta-tools come back as a group's tools.
func runsHub(command string, args []string) bool {
	if isHubName(command) {
		return true
	}
	if len(args) > 0 && sameFile(command, executable()) {
		switch strings.ToLower(filepath.Ext(args[0])) {
		case ".yaml", ".yml", ".json":
			return true
		}
		if args[0] == "serve" {
			return true
		}
	}
	for _, a := range args {
		if isHubName(a) || strings.HasSuffix(filepath.ToSlash(a), "/cmd/dynamic-mcp") {
			return true
		}
	}
	return false
}

// servesConfig reports whether a server entry runs dynamic-mcp on the
// config at path (args naming that file, by any spelling of its path).
func servesConfig(command string, args []string, path string) bool {
	if !runsHub(command, args) || path == "" {
		return false
	}
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--config="); ok {
			a = v
		} else if v, ok := strings.CutPrefix(a, "-c="); ok {
			a = v
		}
		if sameFile(a, path) {
			return true
		}
	}
	return false
}

// isHubName: dynamic-mcp, dynamic-mcp.exe, or a path ending in either.
func isHubName(s string) bool {
	base := strings.TrimSuffix(filepath.Base(filepath.ToSlash(s)), ".exe")
	return base == installName
}

func executable() string {
	p, err := os.Executable()
	if err != nil {
		return ""
	}
	return p
}

// sameFile reports whether a and b are paths of one existing file.
func sameFile(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}
