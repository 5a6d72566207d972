// Command dynamic-mcp is one MCP server in front of many: an LLM client
// starts it as its single mcpServers entry, and it serves the tools,
// prompts and resources of the upstream groups a YAML file lists.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"syscall"

	"github.com/dynamic-mcp/dynamic-mcp/transport"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

func main() {
	// A client that closes its end of our stdout must not kill the hub
	// with SIGPIPE on the next write, leaving the children to nobody: the
	// write fails with EPIPE instead, and the hub stops in order when its
	// stdin closes.
	signal.Ignore(syscall.SIGPIPE)
	ctx, stop := context.WithCancelCause(context.Background())
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	go func() {
		// The first signal starts an orderly stop (its cause says which,
		// see terminated); a second one stops at once, killing every
		// child's process group on the way out.
		stop(stopSignal{<-signals})
		<-signals
		fmt.Fprintln(os.Stderr, "dynamic-mcp: second signal, stopping at once")
		transport.KillAll()
		os.Exit(1)
	}()
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop(nil)
	os.Exit(exitStatus(err, os.Stderr))
}

// exitStatus is how the program ends after run returned err: nothing said
// and 0 when there is no error (or COMMAND -h printed the flags, which is
// all that was asked); else the error on stderr, and 2 for a usage error,
// 1 for any other.
func exitStatus(err error, stderr io.Writer) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return 0
	}
	fmt.Fprintln(stderr, "dynamic-mcp:", err)
	var ue usageError
	if errors.As(err, &ue) {
		return 2
	}
	return 1
}

// helpOrUsage answers a command given no subcommand it knows: its usage
// on stdout when help was asked for (exit 0), else a usage error (2).
func helpOrUsage(args []string, stdout io.Writer, usageText string) error {
	if len(args) > 0 && isHelp(args[0]) {
		fmt.Fprintln(stdout, usageText)
		return nil
	}
	return usageError{usageText}
}

func isHelp(arg string) bool {
	return arg == "-h" || arg == "-help" || arg == "--help" || arg == "help"
}

// usageError is a mistake on the command line (exit status 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

const usage = `dynamic-mcp: one MCP server in front of many.

Usage:
  dynamic-mcp serve -c FILE [--standalone] [--profile NAME] [--http ADDR [--insecure-no-auth]] [--ui ADDR] [--log-level L] [--log-format json|text|auto] [--log-file F]
                                  serve MCP over stdio through the config's shared hub
                                  (started if none runs; --standalone: in this process),
                                  or over HTTP with --http; the inspector at /ui of
                                  --http, or alone on --ui (also: dynamic-mcp FILE)
  dynamic-mcp validate -c FILE    check a config without serving
  dynamic-mcp tools -c FILE [--client NAME[@VERSION]] [GROUP]
                                  connect and print the tools the client would get
  dynamic-mcp status -c FILE      how each upstream is doing, as the running shared hub
                                  sees it (with no hub: connect to each and check)
  dynamic-mcp stop -c FILE        stop the config's shared hub
  dynamic-mcp ui -c FILE [--addr ADDR]
                                  print the inspector's URL and token (--addr: have the
                                  shared hub serve it there)
  dynamic-mcp policy test -c FILE --fixture F | --fixture-dir D [--expect allow|deny|log|prompt]
                                  evaluate policy fixtures without starting any upstream
  dynamic-mcp import <client|file> [--project DIR] [-o FILE] [--force] [--probe] [--vault] [--describe name="..."]
                                  move a client's MCP servers into the YAML config
  dynamic-mcp install <client> [--project DIR [--force-project]] [-c FILE] [--dry-run] [--force]
                                  leave one dynamic-mcp entry in a client's config
  dynamic-mcp uninstall <client> [--project DIR [--force-project]]
                                  give the client its servers back
  dynamic-mcp auth login <server> [-c FILE] [--no-browser] [--timeout 5m]
                                  sign in to an OAuth-protected server, once
  dynamic-mcp auth logout <server> | auth status [-c FILE]
  dynamic-mcp auth status|logout [<server>] --user SUBJECT [-c FILE]
                                  users' own sign-ins (auth: per-user)
  dynamic-mcp secret set NAME | secret list | secret rm NAME [-c FILE]
                                  keep secrets for ${secret:NAME} in the vault
                                  (with store:, in the store)
  dynamic-mcp store import -c FILE [--from STATE_DIR] [--dry-run] [--force]
                                  copy a state directory's sign-ins, secrets
                                  and pins into the config's store:
  dynamic-mcp pin list -c FILE    list pinned tools whose definition changed
  dynamic-mcp pin accept -c FILE SERVER [TOOL...]
                                  accept changed tool definitions
  dynamic-mcp approvals -c FILE [--json]
                                  list the calls waiting for approval in the running
                                  shared hub, and the grants in force
  dynamic-mcp approve ID [--session | --for 10m | --calls N] [--args key=glob] -c FILE
  dynamic-mcp deny ID -c FILE     answer a waiting call
  dynamic-mcp revoke GRANT -c FILE
                                  end a grant: its tool asks again
  dynamic-mcp version

With no -c, the config is $DYNAMIC_MCP_CONFIG, else ~/.dynamic-mcp/config.yaml
(where import writes it; $DYNAMIC_MCP_HOME moves that directory).
Run 'dynamic-mcp COMMAND -h' for a command's flags.
`

// run is the whole program, with its environment passed in.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		if os.Getenv("DYNAMIC_MCP_CONFIG") != "" {
			return serveCmd(ctx, nil, stdin, stdout, stderr)
		}
		fmt.Fprint(stderr, usage)
		return usageError{"no command given"}
	}
	switch args[0] {
	case "serve":
		return serveCmd(ctx, args[1:], stdin, stdout, stderr)
	case "validate":
		return validateCmd(args[1:], stdout, stderr)
	case "tools":
		return toolsCmd(ctx, args[1:], stdout, stderr)
	case "status":
		return statusCmd(ctx, args[1:], stdout, stderr)
	case "stop":
		return stopCmd(ctx, args[1:], stdout)
	case "ui":
		return uiCmd(ctx, args[1:], stdout)
	case "pin":
		return pinCmd(args[1:], stdout)
	case "approvals":
		return approvalsCmd(ctx, args[1:], stdout)
	case "approve":
		return approveCmd(ctx, args[1:], stdout)
	case "deny":
		return denyCmd(ctx, args[1:], stdout)
	case "revoke":
		return revokeCmd(ctx, args[1:], stdout)
	case "auth":
		return authCmd(ctx, args[1:], stdout, stderr)
	case "secret":
		return secretCmd(args[1:], stdin, stdout, stderr)
	case "store":
		return storeCmd(ctx, args[1:], stdout, stderr)
	case "import":
		return importCmd(ctx, args[1:], stdin, stdout, stderr)
	case "install":
		return installCmd(ctx, args[1:], stdout, stderr)
	case "uninstall":
		return uninstallCmd(ctx, args[1:], stdout)
	case "policy":
		return policyCmd(args[1:], stdout, stderr)
	case envDumpCommand: // hidden: the shared hub's login environment (hubenv.go)
		return envDump(os.Stdout)
	case "version", "--version":
		fmt.Fprintln(stdout, "dynamic-mcp", version)
		return nil
	case "help", "-h", "--help":
		if len(args) > 1 && slices.Contains(commands, args[1]) && args[1] != "help" {
			// help import: as import -h
			return run(ctx, []string{args[1], "-h"}, stdin, stdout, stderr)
		}
		fmt.Fprint(stdout, usage)
		return nil
	}
	if fi, err := os.Stat(args[0]); err == nil && !fi.IsDir() {
		// dynamic-mcp FILE [flags]
		return serveCmd(ctx, append([]string{"-c", args[0]}, args[1:]...), stdin, stdout, stderr)
	}
	if near := config.Nearest(args[0], commands); near != "" {
		return usageError{fmt.Sprintf("unknown command %q: did you mean %s? (dynamic-mcp help lists the commands)", args[0], near)}
	}
	fmt.Fprint(stderr, usage)
	return usageError{fmt.Sprintf("unknown command or config file %q", args[0])}
}

// commands are the commands run knows, for the suggestion of a mistyped one.
var commands = []string{"serve", "validate", "tools", "status", "stop", "ui", "pin", "approvals", "approve", "deny",
	"revoke", "auth", "secret", "store", "import", "install", "uninstall", "policy", "version", "help"}
