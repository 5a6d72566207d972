package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/server"
	"github.com/dynamic-mcp/dynamic-mcp/server/clients"
	"github.com/dynamic-mcp/dynamic-mcp/server/policy"
	"github.com/dynamic-mcp/dynamic-mcp/server/view"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
	"github.com/dynamic-mcp/dynamic-mcp/upstream"
)

// toolsCmd connects to every upstream and prints, per group, the tools the
// client would get, and what the initial tools/list costs in each mode.
func toolsCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var c common
	fs := flag.NewFlagSet("tools", flag.ContinueOnError)
	c.registerLogging(fs, "warn")
	client := fs.String("client", "", "show the tools as the client `NAME[@VERSION]` (its clientInfo) is shown them, and say which mode it gets and why")
	if err := c.parse(fs, args); err != nil {
		return err
	}
	only := fs.Arg(0)
	cfg, logger, closeLog, err := c.open(stderr)
	if err != nil {
		return err
	}
	defer closeLog()
	if only != "" && !hasGroup(cfg, only) {
		return noGroup(cfg, only)
	}
	if only != "" {
		onlyGroup(cfg, only)
	}
	mgr, db, err := connectAll(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer closeStore(db)
	defer mgr.Close()
	settle(ctx, cfg, mgr, stderr, func(s *upstream.Server) string { return s.Config.ID() })
	cfg.Audit.Path = "off" // listing tools is not something to audit
	hub, err := server.NewWith(cfg, mgr, logger, server.Options{Store: db})
	if err != nil {
		return err
	}
	defer hub.Close()
	mode, why := cfg.Mode, ""
	if *client != "" {
		name, version, _ := strings.Cut(*client, "@")
		// As on stdio without --profile: the clients: rule's profile.
		mode, why = clients.ModeFor(cfg, cfg.ProfileForClient(name), mcp.Implementation{Name: name, Version: version})
	}

	var w toolLines
	var shown []*upstream.Server
	for _, g := range mgr.Groups() {
		if only != "" && g.Config.Name != only {
			continue
		}
		w.row(g.Config.Name, g.Config.Description)
		for _, s := range g.Servers {
			shown = append(shown, s)
			st := s.Status()
			if st.State != upstream.StateReady {
				first, more := splitError(st.Err)
				if first != "" {
					first = ": " + first
				}
				w.note(fmt.Sprintf("  (%s %s%s)", s.Config.ID(), st.State, first))
				for _, line := range more {
					w.note("    " + line)
				}
				continue
			}
			hidden := 0
			for _, t := range s.Lists().Tools {
				if policy.Hidden(g.Config, policy.MethodToolsCall, t.Key) {
					hidden++ // the client never sees it: not listed as if it did
					continue
				}
				var def struct {
					Description string `json:"description"`
				}
				_ = json.Unmarshal(t.Raw, &def)
				name := t.Key
				if mode == config.ModeFlat {
					name = view.ExposedName(g.Config.Name, t.Key, g.Config.Prefix)
				}
				w.row("  "+name, firstLine(def.Description))
			}
			if hidden > 0 {
				w.note(fmt.Sprintf("  (%d more of %s hidden by the group's deny/allow lists)", hidden, s.Config.ID()))
			}
		}
	}
	w.print(stdout)
	for _, p := range hub.Problems() {
		fmt.Fprintln(stdout, "problem:", p)
	}
	for _, w := range hub.Warnings() {
		fmt.Fprintln(stdout, "warning:", w)
	}
	if only == "" { // the config's whole listing: every group's tools
		dyn, flat := len(hub.ToolsListFor(config.ModeDynamic)), len(hub.ToolsListFor(config.ModeFlat))
		fmt.Fprintf(stdout, "\ninitial tools/list: dynamic mode %d bytes, flat mode %d bytes (this config: %s)\n", dyn, flat, cfg.Mode)
	} else if len(cfg.Groups) > 1 {
		// The other groups were not started: what needs them all is
		// not checked.
		fmt.Fprintf(stdout, "\n%s alone: %s lists every group, with the size of the first tools/list and any clash of tool names between groups\n", only, cfg.Command("tools"))
	}
	if *client != "" {
		fmt.Fprintf(stdout, "client %s: %s mode (%s)\n", *client, mode, why)
	}
	return notReady(shown)
}

// toolLines are the lines tools prints: rows of a name and a
// description, or notes (a server not ready, the tools a deny-list hides)
// printed as they are. The descriptions of every row line up, across the
// notes between them: a tabwriter ends its columns at a line without a
// tab, which aligned each group's rows on their own.
type toolLines []toolLine

type toolLine struct {
	name, desc string
	note       bool // name is the whole line
}

func (l *toolLines) row(name, desc string) { *l = append(*l, toolLine{name: name, desc: desc}) }
func (l *toolLines) note(text string)      { *l = append(*l, toolLine{name: text, note: true}) }

// print writes the lines to w, each description two spaces past the
// longest name.
func (l toolLines) print(w io.Writer) {
	width := 0
	for _, r := range l {
		if !r.note {
			width = max(width, utf8.RuneCountInString(r.name))
		}
	}
	for _, r := range l {
		if r.note || r.desc == "" {
			fmt.Fprintln(w, r.name)
			continue
		}
		fmt.Fprintf(w, "%s%s  %s\n", r.name, strings.Repeat(" ", width-utf8.RuneCountInString(r.name)), r.desc)
	}
}

// noGroup is the error of a group name cfg has not: the one it most
// likely meant, else the groups it has, or that it has none.
func noGroup(cfg *config.Config, name string) error {
	var names []string
	for _, g := range cfg.Groups {
		names = append(names, g.Name)
	}
	if near := config.Nearest(name, names); near != "" {
		return fmt.Errorf("no group %q in %s: did you mean %s?", name, cfg.Path, near)
	}
	if len(names) == 0 {
		return fmt.Errorf("no group %q in %s: the config has no groups", name, cfg.Path)
	}
	return fmt.Errorf("no group %q in %s (its groups: %s)", name, cfg.Path, strings.Join(names, ", "))
}

// onlyGroup leaves the servers of every group but name unstarted: tools
// GROUP connects to GROUP's alone.
func onlyGroup(cfg *config.Config, name string) {
	for _, g := range cfg.Groups {
		for _, s := range g.Servers {
			s.Disabled = s.Disabled || g.Name != name
		}
	}
}

func hasGroup(cfg *config.Config, name string) bool {
	for _, g := range cfg.Groups {
		if g.Name == name {
			return true
		}
	}
	return false
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 100 {
		s = s[:97] + "..."
	}
	return s
}
