package clients

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/tailscale/hujson"
)

// format reads a client's servers and rewrites its server list.
type format interface {
	read(data []byte) ([]Server, []string, error)
	// install returns data with the server list set to exactly entry,
	// every other byte kept; orig is how the list was before.
	install(data []byte, entry Entry) (out []byte, orig []byte, err error)
	// restore puts the list install saved back, keeping the servers of
	// data other than entry (see Client.Restore).
	restore(data []byte, orig []byte, entry string) ([]byte, error)
}

// Entry is the one server install leaves in a client's config.
type Entry struct {
	Name    string // "dynamic-mcp"
	Command string // absolute path of the binary
	Args    []string
}

// entryShape renders an Entry as one format's server object.
type entryShape func(Entry) map[string]any

func plainEntry(e Entry) map[string]any {
	return map[string]any{"command": e.Command, "args": e.Args}
}

func vscodeEntry(e Entry) map[string]any {
	return map[string]any{"type": "stdio", "command": e.Command, "args": e.Args}
}

func opencodeEntry(e Entry) map[string]any {
	return map[string]any{"type": "local", "command": append([]string{e.Command}, e.Args...), "enabled": true}
}

// jsonFormat is a JSON (with comments) file whose servers are an object
// at path.
type jsonFormat struct {
	path     []string
	entry    entryShape
	urlIsSSE bool // Gemini CLI: url is SSE, httpUrl Streamable HTTP
}

// standard turns JSON with comments and trailing commas into JSON. Its
// callers have refused data over the limits (checkLimits) before hujson's
// recursive parser sees it: Client's methods and ForFile.
func standard(data []byte) ([]byte, error) {
	v, err := hujson.Parse(bytes.Clone(data))
	if err != nil {
		return nil, err
	}
	v.Standardize()
	return v.Pack(), nil
}

// Standard is data, JSON with comments and trailing commas within the
// limits of Read, as standard JSON of the same bytes but for those: each
// byte of a comment or trailing comma a space (a line break kept), so
// that an offset or a line in one is the same in the other.
func Standard(data []byte) ([]byte, error) {
	if err := checkLimits(data, false); err != nil {
		return nil, err
	}
	return standard(data)
}

func topKeys(data []byte) map[string]bool {
	out := map[string]bool{}
	std, err := standard(data)
	if err != nil {
		return out
	}
	var m map[string]json.RawMessage
	_ = json.Unmarshal(std, &m)
	for k := range m {
		out[k] = true
	}
	return out
}

func hasKey(data []byte, path ...string) bool {
	std, err := standard(data)
	if err != nil {
		return false
	}
	_, ok, _ := lookup(std, path)
	return ok
}

// lookup finds the raw JSON at path in std.
func lookup(std []byte, path []string) (json.RawMessage, bool, error) {
	cur := json.RawMessage(std)
	for _, k := range path {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(cur, &m); err != nil {
			return nil, false, fmt.Errorf("%s is not an object", strings.Join(path, "."))
		}
		next, ok := m[k]
		if !ok {
			return nil, false, nil
		}
		cur = next
	}
	return cur, true, nil
}

func (f jsonFormat) read(data []byte) ([]Server, []string, error) {
	std, err := standard(data)
	if err != nil {
		return nil, nil, fmt.Errorf("not valid JSON: %w", err)
	}
	raw, ok, err := lookup(std, f.path)
	if err != nil || !ok {
		return nil, nil, err
	}
	names, entries, err := orderedObject(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", strings.Join(f.path, "."), err)
	}
	var servers []Server
	var notes []string
	for i, name := range names {
		s, n, err := parseEntry(name, entries[i])
		if err != nil {
			return nil, nil, fmt.Errorf("server %q: %w", name, err)
		}
		if f.urlIsSSE && s.URL != "" && s.Transport == "" {
			s.Transport = "sse"
		}
		servers = append(servers, s)
		notes = append(notes, n...)
	}
	return servers, notes, nil
}

// orderedObject splits a JSON object into its keys and values, in order.
func orderedObject(raw json.RawMessage) ([]string, []json.RawMessage, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return nil, nil, fmt.Errorf("is not an object")
	}
	var names []string
	var values []json.RawMessage
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return nil, nil, err
		}
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			return nil, nil, err
		}
		names = append(names, t.(string))
		values = append(values, v)
	}
	return names, values, nil
}

// parseEntry reads one server, whatever the client calls its fields.
func parseEntry(name string, raw json.RawMessage) (Server, []string, error) {
	var e struct {
		Type        string            `json:"type"`
		Command     json.RawMessage   `json:"command"`
		Args        []string          `json:"args"`
		Env         map[string]string `json:"env"`
		Environment map[string]string `json:"environment"`
		Cwd         string            `json:"cwd"`
		URL         string            `json:"url"`
		HTTPURL     string            `json:"httpUrl"`
		ServerURL   string            `json:"serverUrl"`
		Headers     map[string]string `json:"headers"`
		Disabled    bool              `json:"disabled"`
		Enabled     *bool             `json:"enabled"`
		Description string            `json:"description"`
		Exclude     []string          `json:"excludeTools"`
		Include     []string          `json:"includeTools"`
		Disabled2   []string          `json:"disabledTools"`
	}
	if err := json.Unmarshal(raw, &e); err != nil {
		return Server{}, nil, err
	}
	exclude, builtin := withoutBuiltinPatterns(e.Exclude)
	s := Server{Name: name, Args: e.Args, Cwd: e.Cwd, Headers: e.Headers, Description: e.Description,
		Disabled: e.Disabled || (e.Enabled != nil && !*e.Enabled),
		Deny:     exactNames(append(exclude, e.Disabled2...)), Allow: exactNames(e.Include)}
	s.Env = e.Env
	if s.Env == nil {
		s.Env = e.Environment
	}
	// command: a string, an array (OpenCode), or {path, args, env} (Zed).
	if len(e.Command) > 0 {
		var str string
		var arr []string
		var obj struct {
			Path string            `json:"path"`
			Args []string          `json:"args"`
			Env  map[string]string `json:"env"`
		}
		switch {
		case json.Unmarshal(e.Command, &str) == nil:
			s.Command = str
		case json.Unmarshal(e.Command, &arr) == nil && len(arr) > 0:
			s.Command, s.Args = arr[0], append(arr[1:], s.Args...)
		case json.Unmarshal(e.Command, &obj) == nil:
			s.Command, s.Args = obj.Path, obj.Args
			if s.Env == nil {
				s.Env = obj.Env
			}
		default:
			return Server{}, nil, fmt.Errorf("command is neither a string, a list nor {path, args}")
		}
	}
	switch {
	case e.HTTPURL != "":
		s.URL, s.Transport = e.HTTPURL, "streamable-http"
	case e.ServerURL != "":
		s.URL = e.ServerURL
	case e.URL != "":
		s.URL = e.URL
	}
	switch strings.ToLower(e.Type) {
	case "sse":
		s.Transport = "sse"
	case "http", "streamable-http", "streamablehttp", "remote":
		if s.Transport == "" {
			s.Transport = ""
		}
	}
	if s.Command == "" && s.URL == "" {
		return Server{}, nil, fmt.Errorf("has neither a command nor a URL")
	}
	carried := jsonCarried
	if s.Command != "" && len(e.Headers) > 0 {
		// Imported as a command server, which has no headers: they are
		// neither written nor offered to the vault.
		s.Headers = nil
		carried = maps.Clone(jsonCarried)
		delete(carried, "headers")
	}
	var keys map[string]json.RawMessage
	_ = json.Unmarshal(raw, &keys)
	notes := droppedKeys(name, sortedKeys(keys), carried)
	if len(builtin) > 0 {
		notes = append(notes, fmt.Sprintf("server %s: excludeTools %s not imported: Gemini CLI's own tools with an argument pattern, not this MCP server's (they stay in Gemini's settings)", name, strings.Join(builtin, ", ")))
	}
	return s, notes, nil
}

// builtinPattern is an excludeTools entry of Gemini CLI's own tool with
// an argument pattern, run_shell_command(rm): no MCP tool's name has
// parentheses. Compiled at first use, not at every start.
var builtinPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*\(.*\)$`) })

// withoutBuiltinPatterns splits names into the tool names of the server
// and the entries that are Gemini CLI's tools with an argument pattern,
// which would match no MCP tool.
func withoutBuiltinPatterns(names []string) (tools, builtin []string) {
	for _, n := range names {
		if builtinPattern().MatchString(n) {
			builtin = append(builtin, n)
		} else {
			tools = append(tools, n)
		}
	}
	return tools, builtin
}

// exactNames makes tool names anchored patterns matching only themselves.
func exactNames(names []string) []string {
	var out []string
	for _, n := range names {
		out = append(out, "^"+regexp.QuoteMeta(n)+"$")
	}
	return out
}

// jsonCarried are the keys of a server entry import carries over (or that
// only say what the entry is: Zed's source).
var jsonCarried = map[string]bool{
	"type": true, "command": true, "args": true, "env": true, "environment": true, "cwd": true,
	"url": true, "httpUrl": true, "serverUrl": true, "headers": true, "disabled": true, "enabled": true,
	"description": true, "excludeTools": true, "includeTools": true, "disabledTools": true, "source": true,
}

// keyAdvice says what to do about a key import does not carry over.
var keyAdvice = map[string]string{
	"envFile":     "dynamic-mcp reads no env file; copy its variables into env:",
	"timeout":     "set the group's timeout: (its call timeout, a duration such as 60s) by hand",
	"alwaysAllow": "the client ran these tools without asking; the hub asks no one unless a policy rule says prompt",
	"autoApprove": "the client ran these tools without asking; the hub asks no one unless a policy rule says prompt",
	"trust":       "the client ran this server's tools without asking; the hub asks no one unless a policy rule says prompt",
	"oauth":       "set the group's oauth: by hand (see docs/auth.md)",
	"headers":     "a command (stdio) server is sent no headers; pass what it needs in env: by hand",
	// Codex
	"startup_timeout_sec":  "the hub gives a server 10s to start (2m for npx, uvx, docker run ...); settings.connect_timeout, set by hand, is the time for every server, those too",
	"tool_timeout_sec":     "set the group's timeout: (its call timeout, a duration such as 60s) by hand",
	"bearer_token_env_var": "Codex sends it only to a url server",
	"env_http_headers":     "Codex sends them only to a url server",
	"http_headers":         "Codex sends them only to a url server",
}

// droppedKeys notes each of a server entry's keys (in order) that import
// leaves out, those not carried, with what to do.
func droppedKeys(name string, keys []string, carried map[string]bool) []string {
	var notes []string
	for _, k := range keys {
		if carried[k] {
			continue
		}
		advice, ok := keyAdvice[k]
		if !ok {
			advice = "dynamic-mcp has no such setting; carry it over by hand if it matters"
		}
		notes = append(notes, fmt.Sprintf("server %s: %s not imported: %s", name, k, advice))
	}
	return notes
}

// indentOf guesses the indent unit of a file and the indent of the line
// holding key.
func indentOf(data []byte, key string) (line, unit string) {
	unit = "  "
	if m := regexp.MustCompile(`(?m)^([ \t]+)"`).FindSubmatch(data); m != nil {
		unit = string(m[1])
	}
	if m := regexp.MustCompile(`(?m)^([ \t]*)"` + regexp.QuoteMeta(key) + `"\s*:`).FindSubmatch(data); m != nil {
		return string(m[1]), unit
	}
	return unit, unit
}

// pointer is a JSON pointer (RFC 6901) to path.
func pointer(path []string) string {
	var b strings.Builder
	for _, k := range path {
		b.WriteByte('/')
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(k))
	}
	return b.String()
}

// setAt replaces (or adds) the value at path with value, written indented
// to match its place and in the file's line endings, and returns the new
// file and the old value's text.
// Like standard, it leaves checkLimits to its callers.
func setAt(data []byte, path []string, value any) ([]byte, []byte, error) {
	// A CRLF file is edited with LF line endings and given back its own:
	// hujson, moving the line break before a closing brace when it adds
	// a member, keeps only the LF of a CRLF.
	eol := lineEnd(data)
	if eol != "\n" {
		data = inLineEnd(data, "\n")
	}
	v, err := hujson.Parse(bytes.Clone(data))
	if err != nil {
		return nil, nil, fmt.Errorf("not valid JSON: %w", err)
	}
	std := v.Clone()
	std.Standardize()
	old, exists, err := lookup(std.Pack(), path)
	if err != nil {
		return nil, nil, err
	}
	// Create missing parents, as add needs them.
	for i := 1; i < len(path); i++ {
		if _, ok, _ := lookup(std.Pack(), path[:i]); !ok {
			if err := v.Patch([]byte(fmt.Sprintf(`[{"op":"add","path":%q,"value":{}}]`, pointer(path[:i])))); err != nil {
				return nil, nil, err
			}
			std = v.Clone()
			std.Standardize()
		}
	}
	line, unit := indentOf(data, path[len(path)-1])
	text, err := json.MarshalIndent(value, line, unit)
	if err != nil {
		return nil, nil, err
	}
	op := "add"
	if exists {
		op = "replace"
	}
	patch, _ := json.Marshal([]map[string]any{{"op": op, "path": pointer(path), "value": json.RawMessage(text)}})
	// json.Marshal compacts the RawMessage: put the indented text back.
	patch = bytes.Replace(patch, compact(text), text, 1)
	if err := v.Patch(patch); err != nil {
		return nil, nil, err
	}
	out := v.Pack()
	if eol != "\n" {
		out = inLineEnd(out, eol)
	}
	return out, old, nil
}

func compact(b []byte) []byte {
	var out bytes.Buffer
	_ = json.Compact(&out, b)
	return out.Bytes()
}

func (f jsonFormat) install(data []byte, e Entry) ([]byte, []byte, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		data = []byte("{}\n")
	}
	out, old, err := setAt(data, f.path, map[string]any{e.Name: f.entry(e)})
	if err != nil {
		return nil, nil, err
	}
	if _, err := standard(out); err != nil {
		return nil, nil, fmt.Errorf("the rewritten config does not parse: %w", err)
	}
	return out, old, nil
}

func (f jsonFormat) restore(data []byte, orig []byte, entry string) ([]byte, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		data = []byte("{}\n")
	}
	var names []string
	var values []json.RawMessage
	if t := bytes.TrimSpace(orig); len(t) > 0 && string(t) != "null" {
		var err error
		if names, values, err = orderedObject(orig); err != nil {
			return nil, fmt.Errorf("the recorded servers: %w", err)
		}
	}
	std, err := standard(data)
	if err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	cur, ok, err := lookup(std, f.path)
	if err != nil {
		return nil, err
	}
	if ok && string(bytes.TrimSpace(cur)) != "null" {
		curNames, curValues, err := orderedObject(cur)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", strings.Join(f.path, "."), err)
		}
		for i, n := range curNames {
			if n == entry {
				continue
			}
			if j := slices.Index(names, n); j >= 0 {
				values[j] = curValues[i]
			} else {
				names, values = append(names, n), append(values, curValues[i])
			}
		}
	}
	// An object in this order: a map would sort the servers by name.
	var obj bytes.Buffer
	obj.WriteByte('{')
	for i, n := range names {
		if i > 0 {
			obj.WriteByte(',')
		}
		k, _ := json.Marshal(n)
		obj.Write(k)
		obj.WriteByte(':')
		obj.Write(values[i])
	}
	obj.WriteByte('}')
	out, _, err := setAt(data, f.path, json.RawMessage(obj.Bytes()))
	return out, err
}

// sortedKeys is for stable output of maps.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
