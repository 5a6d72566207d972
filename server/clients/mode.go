package clients

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/dynamic-mcp/dynamic-mcp/types/config"
)

// mode: auto shows a client that searches tools itself the flat list, and
// every other client the meta-tools. Measured with the real clients
// against a model server that records every request: dynamic mode cuts the
// tool definitions a client without tool search sends the model on every
// request by 81-88% (Gemini CLI 28.8 KB -> 3.4 KB, Codex 19.3 -> 3.7,
// opencode 21.2 -> 3.3, Claude Code with its tool search off 21.6 -> 3.8).
// A client that defers MCP tools behind a tool search of its own sends the
// model only their names: there dynamic mode saves those names (Claude
// Code: 1.2 KB) and costs a turn and get_dynamic_tools' answer in the
// history, so that by the end of a short task the dynamic conversation
// was the larger (57.8 KB against 53.3 KB flat). See docs/modes.md.

// selfSearcher is a client known to defer MCP tools behind a tool search
// of its own, by the clientInfo it sends.
type selfSearcher struct {
	match string // glob of clientInfo.name, lower case
	since []int  // the first version that searches by default; nil: any
	why   string
}

// selfSearchers are the clients mode: auto shows flat. The evidence for
// each is in docs/modes.md ("mode: auto").
var selfSearchers = []selfSearcher{
	// Claude Code names itself claude-code with its own version; 2.1
	// defers MCP tools behind its ToolSearch tool unless
	// ENABLE_TOOL_SEARCH=false (which the hub cannot see: a clients:
	// rule with mode: dynamic is the answer).
	{match: "claude-code", since: []int{2, 1}, why: "Claude Code 2.1 or later searches MCP tools itself"},
	// qwen-code names itself qwen-cli-mcp-client-<server> and sends
	// version 0.0.1 whatever its release, so its version cannot be told:
	// 0.24 and later defer MCP tools behind their tool search.
	{match: "qwen-cli-mcp-client-*", why: "qwen-code searches MCP tools itself (0.24 or later; its clientInfo carries no release)"},
}

// selfSearching is the entry of the client named name at version, nil
// when it is not known to search tools itself.
func selfSearching(name, version string) *selfSearcher {
	name = strings.ToLower(name)
	for i := range selfSearchers {
		e := &selfSearchers[i]
		if ok, _ := path.Match(e.match, name); ok && versionAtLeast(version, e.since) {
			return e
		}
	}
	return nil
}

// versionAtLeast reports whether the dotted version v is at least since
// (a version that does not parse is not).
func versionAtLeast(v string, since []int) bool {
	parts := strings.Split(strings.TrimPrefix(v, "v"), ".")
	for i, want := range since {
		if i >= len(parts) {
			return false
		}
		digits := parts[i]
		if j := strings.IndexFunc(digits, func(r rune) bool { return r < '0' || r > '9' }); j >= 0 {
			digits = digits[:j] // 2.1.0-beta: the 0 counts
		}
		n, err := strconv.Atoi(digits)
		if err != nil {
			return false
		}
		if n != want {
			return n > want
		}
	}
	return true
}

// ownMode is the mode cfg names for the view of profile ("" the whole
// config): the profile's, else the config's.
func ownMode(cfg *config.Config, profile string) config.Mode {
	if pr := cfg.Profiles[profile]; profile != "" && pr != nil && pr.Mode != "" {
		return pr.Mode
	}
	return cfg.Mode
}

// BaseMode is the mode a view named by its profile alone is built in:
// auto's is dynamic, what a client mode: auto does not know is shown.
func BaseMode(m config.Mode) config.Mode {
	if m == config.ModeAuto {
		return config.ModeDynamic
	}
	return m
}

// ModeFor is the mode the client info is shown under cfg in the view of
// profile, and why: a clients: rule's mode, else the one the profile or
// the config names, else (auto) by the client. The tools command asks it
// for a client named on its command line.
func ModeFor(cfg *config.Config, profile string, info mcp.Implementation) (config.Mode, string) {
	if _, r := cfg.ClientRuleFor(info.Name); r != nil && r.Mode != "" {
		return r.Mode, fmt.Sprintf("clients: rule %q (line %d)", r.Match, r.Line)
	}
	m, where := ownMode(cfg, profile), "the config"
	if profile != "" && cfg.Profiles[profile] != nil && cfg.Profiles[profile].Mode != "" {
		where = "profile " + profile
	}
	if m != config.ModeAuto {
		return m, "mode: " + string(m) + " in " + where
	}
	if e := selfSearching(info.Name, info.Version); e != nil {
		return config.ModeFlat, "auto: " + e.why
	}
	if info.Name == "" {
		return config.ModeDynamic, "auto: the client has not named itself yet"
	}
	return config.ModeDynamic, "auto: " + info.Name + " is not known to search tools itself"
}

// ModesVary reports whether a session of cfg may be shown a mode other
// than its view's own: mode: auto somewhere, or a clients: rule's mode.
func ModesVary(cfg *config.Config) bool {
	if cfg.Mode == config.ModeAuto {
		return true
	}
	for _, pr := range cfg.Profiles {
		if pr.Mode == config.ModeAuto {
			return true
		}
	}
	for _, r := range cfg.Clients {
		if r.Mode != "" {
			return true
		}
	}
	return false
}

// modeKey names the view of profile in mode m where that is not the
// view's own mode: "#flat" for the whole config, "coding#dynamic" for a
// profile (a profile's name has no #). The snapshot keeps these views
// beside the profiles' (see Views), so that its viewOf finds them by the
// key alone.
func modeKey(profile string, m config.Mode) string { return profile + "#" + string(m) }

// ViewKey is the key of the view a session of the client info sees under
// cfg when it sees profile: profile itself, or profile's view in another
// mode. The caller asks it only where ModesVary: else it is profile.
func ViewKey(cfg *config.Config, profile string, info mcp.Implementation) string {
	m, _ := ModeFor(cfg, profile, info)
	if m == BaseMode(ownMode(cfg, profile)) {
		return profile
	}
	return modeKey(profile, m)
}
