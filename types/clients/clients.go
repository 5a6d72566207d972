// Package clients knows where each MCP client (Claude Desktop, Claude
// Code, Cursor, VS Code, Windsurf, Cline, Codex, Gemini CLI, OpenCode, Zed)
// keeps its MCP servers, reads them into one shape, and rewrites a config
// so that its server list holds one entry, keeping every other byte the
// format allows: JSON with comments through hujson, TOML by editing only
// the [mcp_servers.*] tables and checking the result with go-toml.
package clients

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
)

// Server is one MCP server as a client's config describes it.
type Server struct {
	Name        string
	Command     string
	Args        []string
	Env         map[string]string
	Cwd         string
	URL         string
	Headers     map[string]string
	Transport   string // "", "sse" or "streamable-http"
	Disabled    bool
	Description string // where the format has one
	// Deny and Allow are the tools the client hides or alone shows
	// (Gemini CLI's excludeTools and includeTools, Windsurf's
	// disabledTools), as anchored patterns of their exact names: the
	// group's deny: and allow:.
	Deny, Allow []string
}

// Client is one MCP client's config format and where it keeps it.
type Client struct {
	Name  string
	Title string
	// user and project list candidate files; the first that exists is
	// used, else the first (to be created by install).
	user    func(home string) []string
	project func(dir string) []string
	format  format
}

// Env is what a client's paths depend on.
type Env struct {
	Home    string
	OS      string // runtime.GOOS
	AppData string // %APPDATA% on Windows
}

// CurrentEnv is the environment of this process.
func CurrentEnv() Env {
	home, _ := os.UserHomeDir()
	return Env{Home: home, OS: runtime.GOOS, AppData: os.Getenv("APPDATA")}
}

// appSupport is where desktop apps keep their settings on each OS.
func (e Env) appSupport() string {
	switch e.OS {
	case "darwin":
		return filepath.Join(e.Home, "Library", "Application Support")
	case "windows":
		if e.AppData != "" {
			return e.AppData
		}
		return filepath.Join(e.Home, "AppData", "Roaming")
	}
	return filepath.Join(e.Home, ".config")
}

// All lists the clients dynamic-mcp knows, for env.
func All(env Env) []*Client {
	app := env.appSupport()
	codexHome := filepath.Join(env.Home, ".codex")
	if h := os.Getenv("CODEX_HOME"); h != "" {
		codexHome = h
	}
	return []*Client{
		{Name: "claude-desktop", Title: "Claude Desktop", format: jsonFormat{path: []string{"mcpServers"}, entry: plainEntry},
			user: func(string) []string { return []string{filepath.Join(app, "Claude", "claude_desktop_config.json")} }},
		{Name: "claude-code", Title: "Claude Code", format: jsonFormat{path: []string{"mcpServers"}, entry: plainEntry},
			user:    func(h string) []string { return []string{filepath.Join(h, ".claude.json")} },
			project: func(d string) []string { return []string{filepath.Join(d, ".mcp.json")} }},
		{Name: "cursor", Title: "Cursor", format: jsonFormat{path: []string{"mcpServers"}, entry: plainEntry},
			user:    func(h string) []string { return []string{filepath.Join(h, ".cursor", "mcp.json")} },
			project: func(d string) []string { return []string{filepath.Join(d, ".cursor", "mcp.json")} }},
		{Name: "vscode", Title: "VS Code", format: jsonFormat{path: []string{"servers"}, entry: vscodeEntry},
			user: func(string) []string {
				return []string{filepath.Join(app, "Code", "User", "mcp.json")}
			},
			project: func(d string) []string { return []string{filepath.Join(d, ".vscode", "mcp.json")} }},
		{Name: "vscode-settings", Title: "VS Code user settings (mcp.servers)", format: jsonFormat{path: []string{"mcp", "servers"}, entry: vscodeEntry},
			user: func(string) []string { return []string{filepath.Join(app, "Code", "User", "settings.json")} }},
		{Name: "windsurf", Title: "Windsurf", format: jsonFormat{path: []string{"mcpServers"}, entry: plainEntry},
			user: func(h string) []string { return []string{filepath.Join(h, ".codeium", "windsurf", "mcp_config.json")} }},
		{Name: "cline", Title: "Cline", format: jsonFormat{path: []string{"mcpServers"}, entry: plainEntry},
			user: func(string) []string {
				return []string{filepath.Join(app, "Code", "User", "globalStorage", "saoudrizwan.claude-dev", "settings", "cline_mcp_settings.json")}
			}},
		{Name: "codex", Title: "Codex", format: tomlFormat{},
			user: func(string) []string { return []string{filepath.Join(codexHome, "config.toml")} }},
		{Name: "gemini", Title: "Gemini CLI", format: jsonFormat{path: []string{"mcpServers"}, entry: plainEntry, urlIsSSE: true},
			user:    func(h string) []string { return []string{filepath.Join(h, ".gemini", "settings.json")} },
			project: func(d string) []string { return []string{filepath.Join(d, ".gemini", "settings.json")} }},
		{Name: "opencode", Title: "OpenCode", format: jsonFormat{path: []string{"mcp"}, entry: opencodeEntry},
			user: func(h string) []string {
				return []string{filepath.Join(h, ".config", "opencode", "opencode.json"), filepath.Join(h, ".config", "opencode", "opencode.jsonc")}
			},
			project: func(d string) []string {
				return []string{filepath.Join(d, "opencode.json"), filepath.Join(d, "opencode.jsonc")}
			}},
		{Name: "zed", Title: "Zed", format: jsonFormat{path: []string{"context_servers"}, entry: plainEntry},
			user:    func(h string) []string { return []string{filepath.Join(h, ".config", "zed", "settings.json")} },
			project: func(d string) []string { return []string{filepath.Join(d, ".zed", "settings.json")} }},
		{Name: "dynamic-mcp-json", Title: "the original dynamic-mcp's JSON", format: jsonFormat{path: []string{"mcpServers"}, entry: plainEntry}},
	}
}

// Find returns the client named name.
func Find(env Env, name string) (*Client, error) {
	var names []string
	for _, c := range All(env) {
		if c.Name == name {
			return c, nil
		}
		names = append(names, c.Name)
	}
	sort.Strings(names)
	return nil, fmt.Errorf("unknown client %q; known: %s", name, strings.Join(names, ", "))
}

// Path is the client's config file: in project dir when given, else the
// user's. The first candidate that exists wins, else the first.
func (c *Client) Path(env Env, project string) (string, error) {
	var candidates []string
	switch {
	case project != "" && c.project != nil:
		candidates = c.project(project)
	case project != "":
		return "", fmt.Errorf("%s has no project config; leave out --project", c.Title)
	case c.user != nil:
		candidates = c.user(env.Home)
	default:
		return "", fmt.Errorf("%s has no usual place: give the file's path", c.Title)
	}
	for _, p := range candidates {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return candidates[0], nil
}

// ForFile picks the client format of a file given by path: TOML is
// Codex's; JSON is told apart by its top-level keys. Data over the limits
// of Read gets the default, and Read then refuses it.
func ForFile(env Env, path string, data []byte) *Client {
	all := All(env)
	byName := map[string]*Client{}
	for _, c := range all {
		byName[c.Name] = c
	}
	if strings.HasSuffix(path, ".toml") {
		return byName["codex"]
	}
	if checkLimits(data, false) != nil {
		return byName["dynamic-mcp-json"]
	}
	keys := topKeys(data)
	switch {
	case keys["mcpServers"]:
		return byName["dynamic-mcp-json"]
	case keys["servers"]:
		return byName["vscode"]
	case keys["context_servers"]:
		return byName["zed"]
	case keys["mcp"] && hasKey(data, "mcp", "servers"):
		return byName["vscode-settings"]
	case keys["mcp"]:
		return byName["opencode"]
	}
	return byName["dynamic-mcp-json"]
}
