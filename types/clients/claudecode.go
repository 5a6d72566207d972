package clients

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tailscale/hujson"
)

// ClaudeCodeLocal is Claude Code's local scope of the project in dir (what
// `claude mcp add --scope local` writes): the servers ~/.claude.json keeps
// under projects[<dir>].mcpServers, private to this user and this
// project. It returns the client whose server list that is and the file.
// Claude Code keys a project by its absolute path, as import reads it.
func ClaudeCodeLocal(env Env, dir string) (*Client, string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, "", err
	}
	c := &Client{Name: "claude-code", Title: "Claude Code (local scope of " + abs + ")",
		format: jsonFormat{path: []string{"projects", abs, "mcpServers"}, entry: plainEntry}}
	return c, filepath.Join(env.Home, ".claude.json"), nil
}

// ClaudeCodeLocalSettings is the project's own settings file in dir that
// is not committed (.claude/settings.local.json, which Claude Code keeps
// out of git), where disabledMcpjsonServers turns off servers of the
// project's .mcp.json for this user alone.
func ClaudeCodeLocalSettings(dir string) string {
	return filepath.Join(dir, ".claude", "settings.local.json")
}

// disabledKey is Claude Code's setting that lists the servers of a
// project's .mcp.json it must not start (the settings reference:
// "disabledMcpjsonServers: list of specific MCP servers from .mcp.json
// files to reject").
const disabledKey = "disabledMcpjsonServers"

// disabledServers reads disabledKey of a settings file's data.
func disabledServers(data []byte) ([]string, error) {
	if err := checkLimits(data, false); err != nil {
		return nil, err
	}
	std, err := standard(data)
	if err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	raw, ok, err := lookup(std, []string{disabledKey})
	if err != nil || !ok {
		return nil, err
	}
	var names []string
	if err := json.Unmarshal(raw, &names); err != nil {
		return nil, fmt.Errorf("%s is not a list of names: %w", disabledKey, err)
	}
	return names, nil
}

// DisableProjectServers adds names to the disabledMcpjsonServers of a
// Claude Code settings file's data (empty for a new file), keeping every
// other byte, and returns the new file and the names it added (those not
// listed already).
func DisableProjectServers(data []byte, names []string) ([]byte, []string, error) {
	if len(strings.TrimSpace(string(data))) == 0 {
		// A new file: only the list, written as Claude Code writes it.
		out, err := json.MarshalIndent(map[string][]string{disabledKey: names}, "", "  ")
		return append(out, '\n'), slices.Clone(names), err
	}
	list, err := disabledServers(data)
	if err != nil {
		return nil, nil, err
	}
	var added []string
	for _, n := range names {
		if !slices.Contains(list, n) {
			list, added = append(list, n), append(added, n)
		}
	}
	if len(added) == 0 {
		return data, nil, nil
	}
	out, _, err := setAt(data, []string{disabledKey}, list)
	return out, added, err
}

// EnableProjectServers takes names out of the disabledMcpjsonServers of a
// Claude Code settings file's data, and the key out when that empties it.
// It returns data itself when none of the names is there.
func EnableProjectServers(data []byte, names []string) ([]byte, error) {
	list, err := disabledServers(data)
	if err != nil {
		return nil, err
	}
	kept := slices.DeleteFunc(slices.Clone(list), func(n string) bool { return slices.Contains(names, n) })
	switch {
	case len(kept) == len(list):
		return data, nil
	case len(kept) > 0:
		out, _, err := setAt(data, []string{disabledKey}, kept)
		return out, err
	}
	v, err := hujson.Parse(slices.Clone(data))
	if err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	if err := v.Patch([]byte(`[{"op":"remove","path":"/` + disabledKey + `"}]`)); err != nil {
		return nil, err
	}
	return v.Pack(), nil
}
