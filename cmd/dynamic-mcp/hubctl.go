package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/dynamic-mcp/dynamic-mcp/transport/local"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// askHub asks the shared hub for cfg op (OpStatus or OpStop) and returns
// its reply; the error is local.ErrNotRunning when no hub runs.
func askHub(ctx context.Context, cfg *config.Config, op string) (local.Reply, error) {
	if !local.Supported {
		return local.Reply{}, local.ErrNotRunning
	}
	paths, err := local.PathsFor(cfg.Path, cfg.StateDir)
	if err != nil {
		return local.Reply{}, err
	}
	c, err := local.Dial(ctx, paths)
	if err != nil {
		return local.Reply{}, err
	}
	defer c.Close()
	reply, _, err := sayHello(c, local.Hello{Op: op})
	reply.Peer, _ = local.PeerPID(c)
	return reply, err
}

// probing is what status says before it starts every server itself.
const probing = "starting each server to check it"

// printHub prints the line of status that names the running shared hub,
// or says that none runs, and returns what the hub said of itself (nil
// when no hub of this build answered: status then checks on its own).
func printHub(ctx context.Context, cfg *config.Config, w io.Writer) *local.Status {
	reply, err := askHub(ctx, cfg, local.OpStatus)
	switch {
	case errors.Is(err, local.ErrNotRunning):
		fmt.Fprintf(w, "no hub runs for this config: %s\n\n", probing)
		return nil
	case errors.Is(err, local.ErrVersion):
		fmt.Fprintf(w, "shared hub: pid %d, version %s (not this one's: %s; `dynamic-mcp stop%s` stops it): %s\n\n", reply.PID, reply.Version, version, configArg(cfg.Path), probing)
		return nil
	case silent(err, reply):
		fmt.Fprintf(w, "shared hub: pid %d, not answering (stopped or stuck, or the machine is very busy; `dynamic-mcp stop%s` stops it): %s\n\n", reply.Peer, configArg(cfg.Path), probing)
		return nil
	case err != nil || reply.Status == nil:
		fmt.Fprintf(w, "shared hub: not answering (%v): %s\n\n", err, probing)
		return nil
	}
	printHubLine(w, reply)
	return reply.Status
}

// askStatus is the running hub's reply to status, nil when none of this
// build answers.
func askStatus(ctx context.Context, cfg *config.Config) *local.Reply {
	reply, err := askHub(ctx, cfg, local.OpStatus)
	if err != nil || reply.Status == nil {
		return nil
	}
	return &reply
}

// hubAnswers reports whether a hub answers on cfg's socket, of this
// version or of another, or takes the connection and answers nothing (a
// process the system names).
func hubAnswers(ctx context.Context, cfg *config.Config) bool {
	reply, err := askHub(ctx, cfg, local.OpStatus)
	return err == nil || errors.Is(err, local.ErrVersion) || silent(err, reply)
}

// silent reports whether err is a hub that took the connection and did
// not answer, whose process the system names (reply.Peer).
func silent(err error, reply local.Reply) bool {
	return errors.Is(err, os.ErrDeadlineExceeded) && reply.Peer > 0
}

// looseConfig is as much of the config at path as finds its hub (the
// path and the state dir), for a file that does not read as a whole: a
// hub that runs serves the config it read before. A file that is not
// even YAML (an edit half done) names no state_dir that can be read: its
// hub is looked for in the default one, config.Home (where a config that
// set another keeps it, it is not found). nil when the file cannot be
// read.
func looseConfig(path string) *config.Config {
	stateDir, _, err := config.ScanSecrets(path)
	if err != nil {
		if _, statErr := os.Stat(path); statErr != nil {
			return nil
		}
		stateDir = config.Home()
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil
	}
	return &config.Config{Path: abs, StateDir: stateDir}
}

// printHubLine prints the line that names the hub: its pid, its uptime
// and its clients.
func printHubLine(w io.Writer, reply local.Reply) {
	st := reply.Status
	var clients []string
	for _, s := range st.Sessions {
		name := s.Name
		if name == "" {
			name = "(not initialized)"
		} else if s.Version != "" {
			name += " " + s.Version
		}
		clients = append(clients, name)
	}
	fmt.Fprintf(w, "shared hub: pid %d, up %s, %d session(s)", reply.PID, time.Since(st.Started).Round(time.Second), len(st.Sessions))
	if len(clients) > 0 {
		fmt.Fprintf(w, ": %s", strings.Join(clients, ", "))
	}
	fmt.Fprint(w, "\n\n")
}

// stopCmd stops the shared hub of a config and waits until it has gone.
func stopCmd(ctx context.Context, args []string, stdout io.Writer) error {
	var c common
	fs := flag.NewFlagSet("stop", flag.ContinueOnError)
	c.register(fs)
	if err := c.parse(fs, args); err != nil {
		return err
	}
	cfg, err := c.load()
	if err != nil {
		// The hub of a config broken since it started is stopped all
		// the same.
		if cfg = looseConfig(c.config); cfg == nil || !hubAnswers(ctx, cfg) {
			return err
		}
		cfg.Settings.StopGrace = config.DefaultStopGrace
	}
	// Its clients, asked first (one round trip): their servers go away
	// with it, and the one who stops it is told.
	clients, pid := -1, 0
	reply, err := askHub(ctx, cfg, local.OpStatus)
	if err == nil && reply.Status != nil {
		clients, pid = len(reply.Status.Sessions), reply.PID
	}
	if !silent(err, reply) { // a hub silent to the status is not asked again
		reply, err = askHub(ctx, cfg, local.OpStop)
	}
	if dropped(err) {
		// The hub closed the connection unanswered: it was stopping of
		// itself (its idle period ended, a signal, another stop) as it
		// was asked. It is gone once the process that answered the
		// status is; without that one, ask again (a hub that has closed
		// its socket is not running).
		if pid != 0 {
			reply, err = local.Reply{PID: pid}, nil
		} else {
			reply, err = askHub(ctx, cfg, local.OpStop)
		}
	}
	if silent(err, reply) {
		// A hub that takes the connection and answers nothing (a stopped
		// process, or a stuck one) is the process the OS says listens
		// on the socket.
		reply.PID, err = reply.Peer, terminate(reply.Peer)
	} else if errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("the shared hub took the connection and did not answer, and this system does not say which process it is: end its `dynamic-mcp serve --hub` process (%w)", err)
	}
	if errors.Is(err, local.ErrNotRunning) {
		fmt.Fprintln(stdout, "no shared hub is running for", cfg.Path)
		return nil
	}
	if errors.Is(err, local.ErrVersion) {
		// A hub of another build (the one before an upgrade) refuses to
		// be asked: it is sent SIGTERM, on which it stops as it would
		// have (its clients told, its servers stopped by the ladder),
		// when the OS says the pid it gave is the process that answered
		// (not one of another PID namespace, a container sharing the
		// home directory).
		if reply.PID <= 0 || reply.Peer != reply.PID {
			return fmt.Errorf("stop the shared hub: %w; the system does not confirm that pid %d is the hub, so it was not signalled: stop it with `dynamic-mcp stop` of its version (%s), or end that process", err, reply.PID, reply.Version)
		}
		err = terminate(reply.PID)
	}
	if err != nil {
		return fmt.Errorf("stop the shared hub: %w", err)
	}
	// The hub closes its socket when it stops taking clients, then stops
	// its upstreams by the ladder; it is gone when nothing answers.
	deadline := time.Now().Add(3*cfg.Settings.StopGrace + 5*time.Second)
	for time.Now().Before(deadline) {
		if !processAlive(reply.PID) {
			fmt.Fprintf(stdout, "stopped the shared hub (pid %d)", reply.PID)
			if clients > 0 {
				fmt.Fprintf(stdout, ", which served %s: reconnect them to start a new one", plural(clients, "client"))
			}
			fmt.Fprintln(stdout)
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("the shared hub (pid %d) was asked to stop and is still running", reply.PID)
}

// dropped reports whether err is the hub closing the connection before
// it answered (at the end of the reply, or resetting it under the hello).
func dropped(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}
