package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// The shared hub's environment, and so every upstream's (issue 22, item
// 4), is not that of whichever client's bridge happened to start it (Claude
// Desktop starts its servers with a PATH of /usr/bin:/bin; a terminal's
// Claude Code with the user's): it is the user's login environment, what
// `$SHELL -l -i -c` sees, as VS Code and Electron's fix-path resolve the
// environment of an app started from a desktop. Over it the bridge lays
// what is the config's and the hub's own, which every bridge of the hub
// must agree on or not join (see local.EnvDiffers): the variables the
// config reads (${VAR}), DYNAMIC_MCP_* and OTEL_* (the hub's settings),
// HOME and XDG_RUNTIME_DIR (where the state and the socket are), and
// GORACE (read only by a race-enabled build: the tests'), each present or
// absent as the bridge has it. Where the login shell cannot be read within
// loginEnvTimeout, the hub gets who the user is (loginBase) and the
// bridge's PATH, with that overlay, and the bridge logs why.

// loginEnvTimeout bounds reading the login shell's environment (a shell
// profile that loads nvm, pyenv and the like takes a second or two).
const loginEnvTimeout = 5 * time.Second

// envDumpCommand is the hidden subcommand the login shell runs to print
// its environment: this program, so that no env(1) flavour's quoting of
// newlines in values matters.
const envDumpCommand = "__env"

// envMarker starts the dump, after anything a shell profile prints, and
// envEndMarker ends it, before anything the shell prints as it exits.
const (
	envMarker    = "\x00dynamic-mcp-env\x00"
	envEndMarker = "\x00dynamic-mcp-env-end\x00"
)

// loginBase is what the login shell starts from: who and where the user
// is, their session's buses and agents, and a PATH the profile extends.
var loginBase = []string{"HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TMPDIR",
	"DISPLAY", "WAYLAND_DISPLAY", "DBUS_SESSION_BUS_ADDRESS", "SSH_AUTH_SOCK"}

// loginBasePrefixes are kept too, as DYNAMIC_MCP_* must be for this
// program to run as itself in the shell.
var loginBasePrefixes = []string{"LC_", "XDG_", "DYNAMIC_MCP_"}

// basePATH is the PATH the login shell starts with.
const basePATH = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"

// fromBridge reports whether the bridge's value of name is laid over the
// login environment.
func fromBridge(name string, uses map[string]bool) bool {
	switch name {
	case "HOME", "XDG_RUNTIME_DIR", "GORACE":
		return true
	}
	return uses[name] || strings.HasPrefix(name, "DYNAMIC_MCP_") || strings.HasPrefix(name, "OTEL_")
}

// hubEnv is the environment the shared hub is started with, from the
// bridge's environ and the variables the config reads.
func hubEnv(ctx context.Context, exe string, environ, configVars []string, logger *slog.Logger) []string {
	bridge := envMap(environ)
	base := map[string]string{}
	for name, v := range bridge {
		if inBase(name) {
			base[name] = v
		}
	}
	shell := bridge["SHELL"]
	if shell == "" {
		shell = "/bin/sh"
	}
	ctx, cancel := context.WithTimeout(ctx, loginEnvTimeout)
	defer cancel()
	login, err := loginEnv(ctx, shell, exe, envList(base, "PATH="+basePATH))
	if err != nil {
		// Not the client's whole environment: who the user is, and its
		// PATH, which is better than none to find commands by.
		logger.Warn("the shared hub gets this client's PATH: the login shell's environment could not be read", "shell", shell, "err", err)
		login = base
		if path, ok := bridge["PATH"]; ok {
			login["PATH"] = path
		}
	}
	uses := map[string]bool{}
	for _, name := range configVars {
		uses[name] = true
	}
	// What is the bridge's is the bridge's, present or absent: a profile
	// that sets DYNAMIC_MCP_HOME or a variable the config reads where the
	// client has none would give the hub another state dir, or other
	// values than the bridges that join it.
	for name := range login {
		if fromBridge(name, uses) {
			delete(login, name)
		}
	}
	for name, v := range bridge {
		if fromBridge(name, uses) {
			login[name] = v
		}
	}
	return envList(login)
}

// envList is env as KEY=value lines, with more after them.
func envList(env map[string]string, more ...string) []string {
	out := make([]string, 0, len(env)+len(more))
	for name, v := range env {
		out = append(out, name+"="+v)
	}
	return append(out, more...)
}

func inBase(name string) bool {
	if slices.Contains(loginBase, name) {
		return true
	}
	for _, p := range loginBasePrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// loginEnv runs the user's shell as a login, interactive shell (the
// profile and rc files a terminal reads) in a session of its own, so that
// it can take no terminal, and returns the environment it ends up with.
// A dump read whole counts, whatever the shell did after it (an exit
// status of its own, a background job holding its stdout, an EXIT trap
// that prints).
func loginEnv(ctx context.Context, shell, exe string, base []string) (map[string]string, error) {
	flags := []string{"-l", "-i", "-c"}
	switch filepath.Base(shell) {
	case "csh", "tcsh":
		flags = []string{"-i", "-c"} // -l must be their only flag
	}
	cmd := exec.CommandContext(ctx, shell, append(flags, `"$DYNAMIC_MCP_SELF" `+envDumpCommand)...)
	cmd.Env = append(base, "DYNAMIC_MCP_SELF="+exe)
	cmd.Dir = os.TempDir()
	ownSession(cmd)
	cmd.WaitDelay = time.Second // a background job of the profile may hold stdout
	var stdout bytes.Buffer
	cmd.Stdout = &limitedWriter{w: &stdout, n: 4 << 20}
	runErr := cmd.Run()
	killGroup(cmd) // the profile's background jobs: none outlives the read
	_, rest, ok := bytes.Cut(stdout.Bytes(), []byte(envMarker))
	dump, _, closed := bytes.Cut(rest, []byte(envEndMarker))
	if !ok || !closed {
		if runErr != nil {
			return nil, runErr
		}
		return nil, errors.New("the shell did not run " + envDumpCommand)
	}
	var environ []string
	if err := json.Unmarshal(dump, &environ); err != nil {
		return nil, fmt.Errorf("read the dump: %w", err)
	}
	env := envMap(environ)
	delete(env, "DYNAMIC_MCP_SELF")
	return env, nil
}

// envDump prints this process's environment for loginEnv.
func envDump(w *os.File) error {
	b, err := json.Marshal(os.Environ())
	if err != nil {
		return err
	}
	_, err = w.Write(append(append([]byte(envMarker), b...), envEndMarker...))
	return err
}

func envMap(environ []string) map[string]string {
	m := make(map[string]string, len(environ))
	for _, kv := range environ {
		if name, v, ok := strings.Cut(kv, "="); ok && name != "" {
			m[name] = v
		}
	}
	return m
}

// limitedWriter keeps the first n bytes written to it and drops the rest.
type limitedWriter struct {
	w *bytes.Buffer
	n int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if room := l.n - l.w.Len(); room > 0 {
		l.w.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
