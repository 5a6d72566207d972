package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

// commandHelp is what `dynamic-mcp COMMAND -h` prints above and below the
// command's flags: its synopsis, what it does, and one example. Keyed by
// the name of the command's FlagSet.
var commandHelp = map[string]struct{ synopsis, about, example string }{
	"serve": {"dynamic-mcp serve [-c FILE] [--standalone] [--profile NAME] [--http ADDR [--insecure-no-auth]] [--ui ADDR]",
		"Serve the config's groups as one MCP server: on stdio a bridge to the config's shared hub\n(started if none runs), or over HTTP with --http.",
		"dynamic-mcp serve -c ~/.dynamic-mcp/config.yaml"},
	"validate": {"dynamic-mcp validate [-c FILE]",
		"Check a config without starting anything: every mistake with its file, line and key.",
		"dynamic-mcp validate -c config.yaml"},
	"tools": {"dynamic-mcp tools [-c FILE] [--client NAME[@VERSION]] [GROUP]",
		"Connect to every upstream (or GROUP's alone) and print the tools the client gets, group by\ngroup, why a server failed, and what the first tools/list costs in each mode (without GROUP). --client names a\nclient as its clientInfo does (claude-code@2.1.332) and says which mode it gets and why.",
		"dynamic-mcp tools -c config.yaml files"},
	"status": {"dynamic-mcp status [-c FILE]",
		"How each upstream is doing, as the config's running shared hub sees it: its clients, the\ntools each server gives (after deny lists), the last reload and the inspector. With no hub\nrunning, connect to every upstream to check it.",
		"dynamic-mcp status"},
	"ui": {"dynamic-mcp ui [-c FILE] [--addr ADDR]",
		"Print the inspector's URL and its token: the running shared hub's (--addr has it serve one\nthere when it serves none), else the token serve --http wrote for its run.",
		"dynamic-mcp ui --addr 7777"},
	"stop": {"dynamic-mcp stop [-c FILE]",
		"Stop the config's shared hub and wait until it has gone.",
		"dynamic-mcp stop"},
	"import": {"dynamic-mcp import CLIENT|FILE [--project DIR] [-o FILE] [--force] [--probe] [--vault] [--describe NAME=\"...\"]",
		"Move a client's MCP servers into the YAML config, one group per server, in the client's order.\nCLIENT: claude-desktop, claude-code, cursor, vscode, windsurf, cline, codex, gemini, opencode, zed.",
		"dynamic-mcp import claude-desktop --describe github=\"Issues and pull requests\""},
	"install": {"dynamic-mcp install CLIENT [--project DIR [--force-project]] [-c FILE] [--dry-run] [--force]",
		"Replace the client's MCP servers with the one dynamic-mcp entry (the file is backed up first,\nunder ~/.dynamic-mcp/backups). --project: Claude Code serves the project from your local scope\nand leaves its .mcp.json as it is; other clients' project files inside a git work tree need\n--force-project, as the entry holds this machine's paths.",
		"dynamic-mcp install claude-desktop --dry-run"},
	"uninstall": {"dynamic-mcp uninstall CLIENT [--project DIR [--force-project]]",
		"Put back the client's MCP servers as they were before install.",
		"dynamic-mcp uninstall claude-desktop"},
	"auth login": {"dynamic-mcp auth login SERVER [-c FILE] [--no-browser] [--timeout 5m]",
		"Sign in to an OAuth-protected server (GROUP or GROUP/SERVER), once: the hub renews the token.",
		"dynamic-mcp auth login tracker"},
	"auth logout": {"dynamic-mcp auth logout SERVER [-c FILE] | auth logout [SERVER] --user SUBJECT [-c FILE]",
		"Forget a sign-in: the hub's own, or (--user) a user's own sign-ins (auth: per-user).",
		"dynamic-mcp auth logout tracker"},
	"auth status": {"dynamic-mcp auth status [--user SUBJECT] [-c FILE]",
		"List the sign-ins: server, issuer, client, scopes, expiry, and whether the hub can renew it.",
		"dynamic-mcp auth status"},
	"secret set": {"dynamic-mcp secret set NAME [-c FILE]",
		"Keep a secret for ${secret:NAME} in the vault (with store:, in the store); the value is read\nfrom a prompt, or from stdin when it is not a terminal.",
		"printf %s \"$GITHUB_TOKEN\" | dynamic-mcp secret set GITHUB_TOKEN"},
	"secret list": {"dynamic-mcp secret list [-c FILE]", "List the names of the secrets kept (never their values).", "dynamic-mcp secret list"},
	"secret rm":   {"dynamic-mcp secret rm NAME [-c FILE]", "Forget a secret.", "dynamic-mcp secret rm GITHUB_TOKEN"},
	"store import": {"dynamic-mcp store import [-c FILE] [--from STATE_DIR] [--dry-run] [--force]",
		"Copy a state directory's sign-ins, secrets and pins into the config's store: database.",
		"dynamic-mcp store import -c team.yaml --from ~/.dynamic-mcp --dry-run"},
	"pin list":   {"dynamic-mcp pin list [-c FILE]", "List the pinned tools whose definition changed since first seen.", "dynamic-mcp pin list"},
	"pin accept": {"dynamic-mcp pin accept [-c FILE] SERVER [TOOL...]", "Accept the changed definitions of SERVER's tools (all, or the TOOLs named).", "dynamic-mcp pin accept files/fs read_file"},
	"policy test": {"dynamic-mcp policy test [-c FILE] --fixture FILE | --fixture-dir DIR [--expect allow|deny|log|prompt]",
		"Run policy fixtures (a tools/call each) through the config's policy and print each decision.",
		"dynamic-mcp policy test -c config.yaml --fixture-dir testdata/policy --expect deny"},
	"approvals": {"dynamic-mcp approvals [-c FILE] [--json]", "List the calls waiting for approval in the running shared hub, and the grants in force.", "dynamic-mcp approvals"},
	"approve": {"dynamic-mcp approve ID [--session | --for 10m | --calls N] [--args KEY=GLOB] [-c FILE]",
		"Allow a waiting call, once or with a grant (for the session, a time, or a number of calls).",
		"dynamic-mcp approve 7f3a --for 10m"},
	"deny":   {"dynamic-mcp deny ID [-c FILE]", "Refuse a waiting call.", "dynamic-mcp deny 7f3a"},
	"revoke": {"dynamic-mcp revoke GRANT [-c FILE]", "End a grant: its tool asks again.", "dynamic-mcp revoke g-12"},
}

// internalFlags are flags dynamic-mcp passes to itself, which -h leaves
// out: a user never types them. Keyed "COMMAND --FLAG".
var internalFlags = map[string]bool{
	"serve --hub": true, // the shared hub that serve starts (bridge.go)
}

// printHelp writes a command's help: its synopsis, what it does, its
// flags as they are typed (two dashes; -c and --config as one), and an
// example.
func printHelp(fs *flag.FlagSet, w io.Writer) {
	h, ok := commandHelp[fs.Name()]
	if ok {
		fmt.Fprintf(w, "usage: %s\n\n%s\n\n", h.synopsis, h.about)
	} else {
		fmt.Fprintf(w, "usage: dynamic-mcp %s [flags]\n\n", fs.Name())
	}
	fmt.Fprintln(w, "flags:")
	fs.VisitAll(func(f *flag.Flag) {
		if f.Name == "config" {
			return // printed with -c
		}
		if internalFlags[fs.Name()+" --"+f.Name] {
			return
		}
		arg, usage := flag.UnquoteUsage(f)
		name := "--" + f.Name
		switch {
		case f.Name == "c" && fs.Lookup("config") != nil:
			name = "-c, --config"
		case len(f.Name) == 1:
			name = "-" + f.Name
		}
		if arg != "" {
			name += " " + strings.ToUpper(arg)
		}
		fmt.Fprintf(w, "  %s\n        %s", name, strings.ReplaceAll(usage, "\n", "\n        "))
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" && f.DefValue != "0s" {
			fmt.Fprintf(w, " (default %q)", f.DefValue)
		}
		fmt.Fprintln(w)
	})
	if ok {
		fmt.Fprintf(w, "\nexample:\n  %s\n", h.example)
	}
}
