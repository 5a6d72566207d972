package clients

import (
	"bytes"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/pelletier/go-toml/v2"
)

// tomlFormat is Codex's config.toml, servers in [mcp_servers.<name>]
// tables. It is edited as text, table by table, so every other line and
// comment stays as it was; go-toml checks the result. Install also puts
// CodexStartupGrace at the top, which restore takes out (codexgrace.go).
// The lines they add end as the file's do, after its byte order mark if
// it has one (lineend.go).
type tomlFormat struct{}

// The patterns are compiled at first use, not at every start.
var (
	tableHeader = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?m)^[ \t]*\[\[?[ \t]*([^\]]+?)[ \t]*\]\]?[ \t]*(#[^\r\n]*)?\r?$`)
	})
	serverTableName = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^mcp_servers\.("(?:[^"\\]|\\.)*"|'[^']*'|[A-Za-z0-9_-]+)`)
	})
	inlineMCPServers = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^[ \t]*mcp_servers[ \t]*(=|\.)`) })
)

type codexServer struct {
	Command string            `toml:"command"`
	Args    []string          `toml:"args"`
	Env     map[string]string `toml:"env"`
	Cwd     string            `toml:"cwd"`
	URL     string            `toml:"url"`
	Headers map[string]string `toml:"http_headers"`
	// EnvHeaders and BearerVar name variables of the environment: a
	// header's value, and the token of Authorization: Bearer.
	EnvHeaders map[string]string `toml:"env_http_headers"`
	BearerVar  string            `toml:"bearer_token_env_var"`
	Enabled    *bool             `toml:"enabled"`
	Include    []string          `toml:"enabled_tools"`
	Exclude    []string          `toml:"disabled_tools"`
}

// codexCarried are the keys of a Codex server table import carries over
// (and, of a url server, codexHeaderKeys).
var codexCarried = map[string]bool{"command": true, "args": true, "env": true, "cwd": true, "url": true,
	"enabled": true, "enabled_tools": true, "disabled_tools": true}

func (tomlFormat) read(data []byte) ([]Server, []string, error) {
	_, data = cutBOM(data)
	var doc struct {
		MCPServers map[string]codexServer `toml:"mcp_servers"`
	}
	if err := toml.Unmarshal(data, &doc); err != nil {
		return nil, nil, fmt.Errorf("not valid TOML: %w", err)
	}
	var keys struct {
		MCPServers map[string]map[string]any `toml:"mcp_servers"`
	}
	_ = toml.Unmarshal(data, &keys)
	var servers []Server
	var notes []string
	seen := map[string]bool{}
	add := func(name string) {
		c, ok := doc.MCPServers[name]
		if !ok || seen[name] {
			return
		}
		seen[name] = true
		var litNotes []string
		c, litNotes = literalCodex(name, c)
		notes = append(notes, litNotes...)
		s := Server{Name: name, Command: c.Command, Args: c.Args, Env: c.Env, Cwd: c.Cwd, URL: c.URL,
			Disabled: c.Enabled != nil && !*c.Enabled, Deny: exactNames(c.Exclude), Allow: exactNames(c.Include)}
		carried := codexCarried
		var headerNotes []string
		if c.URL != "" && c.Command == "" { // what import writes as a url server
			s.Headers, headerNotes = codexHeaders(name, c)
			carried = maps.Clone(codexCarried)
			maps.Copy(carried, codexHeaderKeys)
		}
		servers = append(servers, s)
		notes = append(notes, droppedKeys(name, sortedKeys(keys.MCPServers[name]), carried)...)
		notes = append(notes, headerNotes...)
	}
	for _, m := range tableHeader().FindAllSubmatch(data, -1) {
		if n := serverTableName().FindStringSubmatch(string(m[1])); n != nil {
			add(unquoteKey(n[1]))
		}
	}
	for _, name := range sortedKeys(doc.MCPServers) {
		add(name)
	}
	for _, s := range servers {
		if s.Command == "" && s.URL == "" {
			return nil, nil, fmt.Errorf("server %q has neither a command nor a url", s.Name)
		}
	}
	return servers, notes, nil
}

// literalCodex is c with every $ of its values written as the hub's
// literal $$. Codex expands no variable in any of them: it starts the
// command with its args and env, and sends http_headers, byte for byte as
// written (env_http_headers and bearer_token_env_var name variables
// instead, which codexHeaders makes ${VAR}). So a ${VAR} in a Codex value
// is text, and stays text in the hub, where every other client's is a
// variable (normalize, which Read does not apply to Codex's). A value
// holding one gets a note (where, below): its author may have meant the
// variable, which Codex never read.
func literalCodex(name string, c codexServer) (codexServer, []string) {
	var where []string
	lit := func(what, v string) string {
		if strings.Contains(v, "${") {
			where = append(where, what)
		}
		return strings.ReplaceAll(v, "$", "$$")
	}
	each := func(what string, m map[string]string) map[string]string {
		if m == nil {
			return nil
		}
		out := make(map[string]string, len(m))
		for _, k := range sortedKeys(m) {
			out[k] = lit(what+" "+k, m[k])
		}
		return out
	}
	c.Command, c.Cwd, c.URL = lit("command", c.Command), lit("cwd", c.Cwd), lit("url", c.URL)
	var args []string
	for _, a := range c.Args {
		args = append(args, lit("args", a))
	}
	c.Args, c.Env, c.Headers = args, each("env", c.Env), each("http_headers", c.Headers)
	if len(where) == 0 {
		return c, nil
	}
	return c, []string{fmt.Sprintf("server %s: imported as the text Codex sends, which expands no ${VAR}: %s; where the variable was meant, write ${NAME} for $${NAME} in the config",
		name, strings.Join(slices.Compact(where), ", "))}
}

func unquoteKey(k string) string {
	if strings.HasPrefix(k, `"`) {
		if u, err := strconv.Unquote(k); err == nil {
			return u
		}
	}
	return strings.Trim(k, "'")
}

// serverTables finds the [mcp_servers...] tables of data as byte ranges,
// each from its header to the next header.
func serverTables(data []byte) [][2]int {
	headers := tableHeader().FindAllSubmatchIndex(data, -1)
	var out [][2]int
	for i, h := range headers {
		name := string(data[h[2]:h[3]])
		if name != "mcp_servers" && !strings.HasPrefix(name, "mcp_servers.") {
			continue
		}
		end := len(data)
		if i+1 < len(headers) {
			end = headers[i+1][0]
		}
		out = append(out, [2]int{h[0], end})
	}
	return out
}

func (f tomlFormat) install(data []byte, e Entry) ([]byte, []byte, error) {
	bom, data := cutBOM(data)
	eol := lineEnd(data)
	if inlineMCPServers().Match(data) {
		return nil, nil, fmt.Errorf("mcp_servers is written as inline keys, which install does not edit; move the servers into [mcp_servers.<name>] tables")
	}
	if _, _, err := f.read(data); err != nil {
		return nil, nil, err
	}
	var out, orig []byte
	last := 0
	for _, r := range serverTables(data) {
		out = append(out, data[last:r[0]]...)
		orig = append(orig, data[r[0]:r[1]]...)
		last = r[1]
	}
	out = append(out, data[last:]...)
	if len(out) > 0 && !bytes.HasSuffix(out, []byte("\n")) {
		out = append(out, eol...)
	}
	if len(bytes.TrimSpace(out)) > 0 && !bytes.HasSuffix(out, []byte(eol+eol)) {
		out = append(out, eol...)
	}
	out = withGrace(append(out, inLineEnd(renderCodex(e), eol)...), eol)
	servers, _, err := f.read(out)
	if err != nil {
		return nil, nil, fmt.Errorf("the rewritten config does not parse: %w", err)
	}
	if len(servers) != 1 || servers[0].Name != e.Name {
		return nil, nil, fmt.Errorf("the rewritten config reads back as %d servers, not %s alone: install did not find each [mcp_servers] table", len(servers), e.Name)
	}
	return append(bom, out...), orig, nil
}

func renderCodex(e Entry) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "[mcp_servers.%s]\ncommand = %s\nargs = [", e.Name, strconv.Quote(e.Command))
	for i, a := range e.Args {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(a))
	}
	b.WriteString("]\n")
	return []byte(b.String())
}

func (f tomlFormat) restore(data []byte, orig []byte, entry string) ([]byte, error) {
	bom, data := cutBOM(data)
	eol := lineEnd(data)
	data = withoutGrace(data)
	// The tables of the servers data holds now, but entry's.
	var kept []byte
	keptNames := map[string]bool{}
	var out []byte
	last := 0
	for _, r := range serverTables(data) {
		out = append(out, data[last:r[0]]...)
		last = r[1]
		if name := tableServer(data[r[0]:r[1]]); name != "" && name != entry {
			kept = append(kept, data[r[0]:r[1]]...)
			keptNames[name] = true
		}
	}
	out = append(out, data[last:]...)
	if len(out) > 0 && !bytes.HasSuffix(out, []byte("\n")) {
		out = append(out, eol...)
	}
	// The recorded tables, but those of servers data now defines, with
	// the line endings of data now.
	for _, r := range serverTables(orig) {
		if !keptNames[tableServer(orig[r[0]:r[1]])] {
			out = appendTable(out, inLineEnd(orig[r[0]:r[1]], eol), eol)
		}
	}
	out = appendTable(out, kept, eol)
	if _, _, err := f.read(out); err != nil {
		return nil, fmt.Errorf("the restored config does not parse: %w", err)
	}
	return append(bom, out...), nil
}

// tableServer is the server a [mcp_servers.<name>...] table belongs to.
func tableServer(table []byte) string {
	h := tableHeader().FindSubmatch(table)
	if h == nil {
		return ""
	}
	if n := serverTableName().FindStringSubmatch(string(h[1])); n != nil {
		return unquoteKey(n[1])
	}
	return ""
}

// appendTable appends a table's text, on a line of its own; eol ends a
// line it adds.
func appendTable(out, table []byte, eol string) []byte {
	if len(table) == 0 {
		return out
	}
	if len(out) > 0 && !bytes.HasSuffix(out, []byte("\n")) {
		out = append(out, eol...)
	}
	out = append(out, table...)
	if !bytes.HasSuffix(out, []byte("\n")) {
		out = append(out, eol...)
	}
	return out
}
