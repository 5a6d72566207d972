package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dynamic-mcp/dynamic-mcp/types/clients"
	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// place is where an install writes the dynamic-mcp entry: a server list
// (client) in a file, and for Claude Code's local scope of a project
// (local) the project's own settings besides.
type place struct {
	client *clients.Client
	file   string
	// scope names the server list within file when the file holds more
	// than one that install can write (~/.claude.json: the user's list and
	// each project's): the record's name then includes it.
	scope string
	local *localScope
}

// key is the name an install's record goes by.
func (p *place) key() string { return recordKey(p.file, p.scope) }

func recordKey(file, scope string) string {
	if scope == "" {
		return file
	}
	return file + "#" + scope
}

// localScope is a project that `install claude-code --project` serves from
// the user's local scope: its .mcp.json, likely committed for the team,
// stays as it is, with no absolute paths of this machine in it, and its
// servers are turned off for this user alone in the project's local
// settings (not committed), as the hub serves them now.
type localScope struct {
	dir      string
	mcpJSON  string
	settings string
}

// installPlace is where install and uninstall work for client and the
// project dir (none: the user's config). Claude Code's project is served
// from its local scope unless forceProject, which writes the project's
// .mcp.json as every other client's project file is written.
func installPlace(client *clients.Client, project string, forceProject bool) (*place, error) {
	env := clients.CurrentEnv()
	if project != "" && client.Name == "claude-code" && !forceProject {
		c, file, err := clients.ClaudeCodeLocal(env, project)
		if err != nil {
			return nil, err
		}
		abs, _ := filepath.Abs(project)
		mcpJSON, err := client.Path(env, abs)
		if err != nil {
			return nil, err
		}
		return &place{client: c, file: file, scope: "projects/" + abs,
			local: &localScope{dir: abs, mcpJSON: mcpJSON, settings: clients.ClaudeCodeLocalSettings(abs)}}, nil
	}
	file, err := client.Path(env, project)
	if err != nil {
		return nil, err
	}
	return &place{client: client, file: file}, nil
}

// refuseCommitted refuses to write a project's client config inside a git
// work tree: the entry holds this machine's absolute paths (the binary,
// the config), which are wrong on every other machine once committed.
func refuseCommitted(client *clients.Client, project, file string) error {
	repo := gitWorkTree(project)
	if repo == "" {
		return nil
	}
	return fmt.Errorf("%s is in the git work tree %s, and the entry install writes holds this machine's absolute paths (the binary, the config), wrong on every other machine once committed; nothing was written.\n"+
		"  install into your own config instead: dynamic-mcp install %s\n"+
		"  or write the project's file anyway (and keep it out of commits): dynamic-mcp install %s --project %s --force-project",
		file, repo, client.Name, client.Name, project)
}

// gitWorkTree returns the top of the git work tree dir is in ("" when
// none): the first directory up from dir that has a .git (a directory,
// or a file in a linked work tree or a submodule).
func gitWorkTree(dir string) string {
	d, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		up := filepath.Dir(d)
		if up == d {
			return ""
		}
		d = up
	}
}

// settingsRecord is what install changed in a project's local settings:
// the .mcp.json servers it turned off for the user.
type settingsRecord struct {
	Path     string   `json:"path"`
	Disabled []string `json:"disabled,omitempty"` // the names install added to disabledMcpjsonServers
	Existed  bool     `json:"existed"`
	Backup   string   `json:"backup,omitempty"` // the file before the first install, while good for a byte-exact undo
	Written  string   `json:"written_sha256"`
}

// settingsChange is what an install is about to do to the local settings.
type settingsChange struct {
	old, out []byte
	existed  bool
	servers  []string // the servers of the project's .mcp.json
	// first says the file is as it was before the first install into
	// this scope: a backup of it now is good for a byte-exact undo.
	first bool
	rec   *settingsRecord
}

// plan reads the project's .mcp.json and its local settings and works out
// the settings that turn off the .mcp.json servers, carrying over what an
// earlier install (prev) turned off.
func (l *localScope) plan(prev *installRecord) (*settingsChange, error) {
	var ch settingsChange
	if data, err := clients.ReadFile(l.mcpJSON); err == nil {
		claude, _ := clients.Find(clients.CurrentEnv(), "claude-code")
		servers, _, err := claude.Read(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w; nothing was written", l.mcpJSON, err)
		}
		for _, s := range servers {
			ch.servers = append(ch.servers, s.Name)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	old, err := clients.ReadFile(l.settings)
	ch.existed = err == nil
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	out, added, err := clients.DisableProjectServers(old, ch.servers)
	if err != nil {
		return nil, fmt.Errorf("%s: %w; nothing was written", l.settings, err)
	}
	if len(added) == 0 {
		out = old // nothing to write
	}
	ch.old, ch.out, ch.first = old, out, true
	ch.rec = &settingsRecord{Path: l.settings, Disabled: added, Existed: ch.existed, Written: sha(out)}
	if prev != nil && prev.Settings != nil {
		p := prev.Settings
		ch.rec.Disabled = append(slices.Clone(p.Disabled), added...)
		ch.first = sha(old) == p.Written
		if ch.first {
			ch.rec.Existed, ch.rec.Backup = p.Existed, p.Backup
		} else {
			ch.rec.Existed = true // changed since: undo takes the names out
		}
	}
	return &ch, nil
}

// backup copies the settings install is about to change.
func (ch *settingsChange) backup() error {
	if string(ch.out) == string(ch.old) {
		return nil
	}
	backup, err := backupFile(ch.rec.Path, ch.old)
	if ch.first && ch.rec.Existed && ch.rec.Backup == "" {
		ch.rec.Backup = backup
	}
	return err
}

// write writes the settings when they change.
func (ch *settingsChange) write() error {
	if string(ch.out) == string(ch.old) {
		return nil
	}
	return writeFile(ch.rec.Path, ch.out)
}

// undoSettings takes the servers install turned off out of the project's
// local settings: the file as it was when nothing else changed it since
// (removed when install made it), else the names taken out of the list.
func undoSettings(s *settingsRecord) error {
	if s == nil || len(s.Disabled) == 0 {
		return nil
	}
	cur, err := os.ReadFile(s.Path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if sha(cur) == s.Written {
		if !s.Existed {
			if err := os.Remove(s.Path); err != nil {
				return err
			}
			os.Remove(filepath.Dir(s.Path)) // .claude, when install made it and it is empty
			return nil
		}
		if s.Backup != "" {
			if b, err := os.ReadFile(s.Backup); err == nil {
				_, err := replaceFile(s.Path, cur, b)
				return err
			}
		}
	}
	out, err := clients.EnableProjectServers(cur, s.Disabled)
	if err != nil {
		return fmt.Errorf("%s: %w; take %s out of its disabledMcpjsonServers by hand", s.Path, err, strings.Join(s.Disabled, ", "))
	}
	if string(out) == string(cur) {
		return nil
	}
	_, err = replaceFile(s.Path, cur, out)
	return err
}

// reportLocal tells what an install into a project's local scope did and
// names the servers it replaced (the local scope's, replaced; the
// .mcp.json's, turned off) that the config does not serve: import brings
// them in.
func reportLocal(w io.Writer, l *localScope, ch *settingsChange, replaced []clients.Server, cfg *config.Config, cfgPath string) {
	fmt.Fprintf(w, "  %s is left as it is (it has no path of this machine in it)\n", l.mcpJSON)
	if len(ch.servers) > 0 {
		fmt.Fprintf(w, "  its servers (%s) are turned off for you alone in %s (disabledMcpjsonServers): the hub serves them\n",
			strings.Join(ch.servers, ", "), l.settings)
	}
	names := slices.Clone(ch.servers)
	for _, s := range replaced {
		if s.Name != installName {
			names = append(names, s.Name)
		}
	}
	var missing []string
	for _, s := range names {
		if !slices.ContainsFunc(cfg.Groups, func(g *config.Group) bool { return g.Name == groupKey(s) }) {
			missing = append(missing, s)
		}
	}
	if len(missing) > 0 {
		fmt.Fprintf(w, "  note: %s has no group for %s; bring them in with: dynamic-mcp import claude-code --project %s -o %s\n",
			cfgPath, strings.Join(missing, ", "), l.dir, cfgPath)
	}
}
