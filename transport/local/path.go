package local

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// maxSocketPath is the longest socket path every Unix takes: sun_path is
// 104 bytes on macOS and the BSDs, 108 on Linux, NUL included.
const maxSocketPath = 103

// Paths are where the hub of one config lives.
type Paths struct {
	// Dir holds Socket and Lock; only the user may open it (0700).
	Dir string
	// Socket is the hub's Unix domain socket.
	Socket string
	// Lock is held by the bridge that starts the hub, until it listens.
	Lock string
	// Log is the hub's log file, under the state dir.
	Log string
}

// PathsFor are the paths of the hub for the config at configPath (made
// absolute): the directory is stateDir/run, whatever the client's
// environment says (the TypeScript and Python SDKs start a server with
// HOME, PATH and little else: a directory taken from $XDG_RUNTIME_DIR
// would give a client without it a hub of its own); only where that path
// is too long for a socket is $XDG_RUNTIME_DIR/dynamic-mcp used. The
// names end in a hash of the config's absolute path and the user's id, so
// that each config has its own hub and two users never meet. The log goes
// to stateDir/logs.
func PathsFor(configPath, stateDir string) (Paths, error) {
	abs, err := filepath.Abs(configPath)
	if err != nil {
		return Paths{}, fmt.Errorf("config path %q: %w", configPath, err)
	}
	sum := sha256.Sum256([]byte(abs + "\x00" + strconv.Itoa(os.Getuid())))
	name := "hub-" + hex.EncodeToString(sum[:8])
	paths := func(dir string) Paths {
		if abs, err := filepath.Abs(dir); err == nil {
			dir = abs
		}
		return Paths{Dir: dir, Socket: filepath.Join(dir, name+".sock"), Lock: filepath.Join(dir, name+".lock"),
			Log: filepath.Join(stateDir, "logs", name+".log")}
	}
	p := paths(filepath.Join(stateDir, "run"))
	if x := os.Getenv("XDG_RUNTIME_DIR"); len(p.Socket) > maxSocketPath && x != "" && filepath.IsAbs(x) {
		p = paths(filepath.Join(x, "dynamic-mcp"))
	}
	if len(p.Socket) > maxSocketPath {
		return Paths{}, fmt.Errorf("socket path %s: %w", p.Socket, errPathTooLong)
	}
	return p, nil
}

var errPathTooLong = errors.New("is too long for a Unix socket: set a shorter state_dir (or XDG_RUNTIME_DIR)")

// privateDir makes dir (and its parents) and checks that only this user
// can open it: owned by us and mode 0700, tightened when it is ours and
// looser.
func privateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("socket directory: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("socket directory: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("socket directory %s: not a directory", dir)
	}
	if err := checkOwner(dir, fi, os.Getuid()); err != nil {
		return err
	}
	if fi.Mode().Perm() != 0o700 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("socket directory: %w", err)
		}
	}
	return nil
}
