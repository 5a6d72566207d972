package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/dynamic-mcp/dynamic-mcp/server/inspect"
	"github.com/dynamic-mcp/dynamic-mcp/types/atomicfile"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// The inspector's token of serve --http. Printed on stderr, it would land
// in a container's collected logs (readable by whoever reads the logs,
// not JSON under --log-format json), so it is printed only where a person
// reads stderr, a terminal; elsewhere it is written to a file only its
// owner reads, whose path is logged, or set from the environment, the
// same on every replica behind a balancer.

// uiTokenEnvVar, when set, is the inspector's token of serve --http:
// neither printed nor written anywhere.
const uiTokenEnvVar = "DYNAMIC_MCP_UI_TOKEN"

// uiTokenFile is the file under the state dir the inspector's token of
// serve --http is written to when stderr is not a terminal.
const uiTokenFile = "inspector-token"

// minUITokenLen is the least length of $DYNAMIC_MCP_UI_TOKEN: a token a
// person types from memory is one someone else guesses.
const minUITokenLen = 16

// faceUIToken is the inspector's token of serve --http: from
// $DYNAMIC_MCP_UI_TOKEN (fromEnv), else a new one. A token from the
// environment that is too short is an error, before anything serves.
func faceUIToken(cfg *config.Config) (token string, fromEnv bool, err error) {
	if t := os.Getenv(uiTokenEnvVar); t != "" {
		if len(t) < minUITokenLen {
			return "", false, fmt.Errorf("$%s: the inspector's token must be at least %d characters (openssl rand -base64 32)", uiTokenEnvVar, minUITokenLen)
		}
		mcp := append([]string{cfg.HTTP.Token, os.Getenv("DYNAMIC_MCP_TOKEN")}, slices.Collect(maps.Values(cfg.HTTP.Tokens))...)
		if slices.Contains(mcp, t) {
			return "", false, fmt.Errorf("$%s is an MCP token: the inspector needs a token of its own (an MCP client with it could read every client's traffic)", uiTokenEnvVar)
		}
		return t, true, nil
	}
	return newUIToken(), false, nil
}

// announceUIToken says where the inspector of the HTTP face is (page, its
// URL) and how to get its token: nothing but the URL for a token from the
// environment (or none needed, with noAuth); on a terminal, the token itself, as serve --ui prints it;
// elsewhere (a container's log, a journal, a file) the path of the file
// under stateDir it is written to, 0600, in a log record, so that the
// token never reaches the logs. A file that cannot be written is logged
// as such, with the way out: the token is then nowhere to be read. It
// returns what the page's login dialog says of where the token is (no
// path of the machine: the page may be reached from elsewhere).
func announceUIToken(stderr io.Writer, logger *slog.Logger, stateDir, cfgPath, page, token string, noAuth, fromEnv bool) (hint string) {
	switch {
	case noAuth:
		fmt.Fprintf(stderr, "dynamic-mcp: the inspector is at %s (no token: --insecure-no-auth)\n", page)
		return ""
	case fromEnv:
		logger.Info("serving the inspector; its token is $"+uiTokenEnvVar, "url", page)
		return "The inspector's own token is the value of $" + uiTokenEnvVar + " the hub was started with (not an MCP client's token)."
	case isTerminal(stderr):
		printUI(stderr, page, token)
		return "The inspector's own token (not an MCP client's token) was printed with this page's URL on the terminal where `dynamic-mcp serve --http` started."
	default:
		path := filepath.Join(stateDir, uiTokenFile)
		if err := writeSecretFile(path, []byte(token+"\n")); err != nil {
			logger.Error("serving the inspector, but its token could not be written to a file; set $"+uiTokenEnvVar+" to reach it",
				"url", page, "file", path, "err", err)
			return "The hub could not write this run's token to its file (its log says why): restart it with $" + uiTokenEnvVar + " set."
		}
		if err := writeUIOwner(path, cfgPath); err != nil {
			logger.Warn("the inspector's token file: which config and process it is of could not be written beside it", "err", err)
		}
		logger.Info("serving the inspector; its token for this run is in the file", "url", page, "file", path)
		return "The inspector's own token for this run (not an MCP client's token) is in the file " + uiTokenFile +
			" in the hub's state directory: on the hub's machine, `dynamic-mcp ui" + configArg(cfgPath) + "` prints it."
	}
}

// uiOwner is what is written beside the inspector's token file (as
// FILE.owner): the config and the process of the serve --http that wrote
// it, so that dynamic-mcp ui prints the token only for that config while
// that process runs (the state dir, and so the file, is shared by every
// config that does not set state_dir).
type uiOwner struct {
	Config string `json:"config"`
	PID    int    `json:"pid"`
}

// uiOwnerSuffix names the owner's file beside the token's.
const uiOwnerSuffix = ".owner"

// writeUIOwner records this process and the config at cfgPath as the
// owner of the token file at path.
func writeUIOwner(path, cfgPath string) error {
	b, err := json.Marshal(uiOwner{Config: resolvedPath(cfgPath), PID: os.Getpid()})
	if err != nil {
		return err
	}
	return writeSecretFile(path+uiOwnerSuffix, append(b, '\n'))
}

// resolvedPath is path absolute with its symlinks followed, as far as
// that goes: the name the shared hub is found by (local.PathsFor).
func resolvedPath(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	return path
}

// httpTokenFile is the file under the state dir a generated MCP bearer
// token of serve --http is written to when stderr is not a terminal.
const httpTokenFile = "http-token"

// announceGeneratedToken tells the clients' token serve --http made up
// for this run (none configured) as announceUIToken tells the
// inspector's: printed on a terminal, else written to a 0600 file under
// stateDir whose path is logged.
func announceGeneratedToken(stderr io.Writer, logger *slog.Logger, stateDir, token string) {
	if isTerminal(stderr) {
		fmt.Fprintf(stderr, "dynamic-mcp: no token configured; clients must send this one for this run:\n  Authorization: Bearer %s\n", token)
		return
	}
	path := filepath.Join(stateDir, httpTokenFile)
	if err := writeSecretFile(path, []byte(token+"\n")); err != nil {
		logger.Error("no token configured, and the one made for this run could not be written to a file: no client can connect; set http.token or $DYNAMIC_MCP_TOKEN",
			"file", path, "err", err)
		return
	}
	logger.Warn("no token configured: clients must send the one in the file for this run (set http.token or $DYNAMIC_MCP_TOKEN)", "file", path)
}

// writeSecretFile writes b to path, readable by its owner alone, whole or
// not at all (atomicfile.Write), making its directory if need be.
func writeSecretFile(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return atomicfile.Write(path, b, 0o600)
}

// inspectorPage is the inspector's URL on the face at url.
func inspectorPage(url string) string { return url + inspect.Prefix }
